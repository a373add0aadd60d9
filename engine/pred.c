/* pred.c -- three-valued conditions, LIKE, and exact decimal comparison
 * (pred.h). */
#include "engine/pred.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

int pred_eval(const struct sql_pred *p, pred_leaf_fn leaf, void *ctx)
{
    if (!p)
        return T_TRUE;
    int l, r;
    switch (p->kind) {
    case SQL_PRED_COND: return leaf(ctx, p->cond);
    case SQL_PRED_NOT:
        l = pred_eval(p->left, leaf, ctx);
        return l < 0 ? -1 : l == T_UNKNOWN ? T_UNKNOWN : !l;
    case SQL_PRED_AND:
        if ((l = pred_eval(p->left, leaf, ctx)) <= T_FALSE)
            return l;
        if ((r = pred_eval(p->right, leaf, ctx)) <= T_FALSE)
            return r;
        return l == T_TRUE && r == T_TRUE ? T_TRUE : T_UNKNOWN;
    case SQL_PRED_OR:
        if ((l = pred_eval(p->left, leaf, ctx)) < 0 || l == T_TRUE)
            return l;
        if ((r = pred_eval(p->right, leaf, ctx)) < 0 || r == T_TRUE)
            return r;
        return l == T_FALSE && r == T_FALSE ? T_FALSE : T_UNKNOWN;
    }
    return -1;
}

bool pred_all_and(const struct sql_pred *p)
{
    return !p || p->kind == SQL_PRED_COND ||
           (p->kind == SQL_PRED_AND && pred_all_and(p->left) && pred_all_and(p->right));
}

/* The length of the UTF-8 character at s (1 for a stray byte). */
static size_t char_len(const unsigned char *s, size_t n)
{
    size_t k = *s < 0x80 ? 1 : *s >= 0xF0 ? 4 : *s >= 0xE0 ? 3 : *s >= 0xC0 ? 2 : 1;
    return k <= n ? k : 1;
}

static unsigned char fold(unsigned char c, bool icase)
{
    return icase && c >= 'A' && c <= 'Z' ? (unsigned char)(c - 'A' + 'a') : c;
}

/* Iterative wildcard match with backtracking to the last %: linear in
 * practice, and at worst text length times pattern length, never
 * exponential (a hostile pattern of many %s costs no more). */
bool pred_like(const char *text, size_t len, const char *pattern, size_t plen, bool icase)
{
    const unsigned char *t = (const unsigned char *)text, *p = (const unsigned char *)pattern;
    size_t ti = 0, pi = 0, star_p = (size_t)-1, star_t = 0;
    while (ti < len) {
        if (pi < plen && p[pi] == '%') {
            star_p = ++pi;
            star_t = ti;
            continue;
        }
        if (pi < plen && p[pi] == '_') {
            ti += char_len(t + ti, len - ti);
            pi++;
            continue;
        }
        if (pi < plen) {
            size_t q = pi;
            if (p[q] == '\\' && q + 1 < plen)
                q++;
            size_t k = char_len(p + q, plen - q);
            bool same = ti + k <= len;
            for (size_t j = 0; same && j < k; j++)
                same = fold(t[ti + j], icase) == fold(p[q + j], icase);
            if (same) {
                ti += k;
                pi = q + k;
                continue;
            }
        }
        if (star_p == (size_t)-1)
            return false;
        star_t += char_len(t + star_t, len - star_t); /* % takes one more character */
        ti = star_t;
        pi = star_p;
    }
    while (pi < plen && p[pi] == '%')
        pi++;
    return pi == plen;
}

int pred_text_cmp(const char *a, size_t alen, const char *b, size_t blen)
{
    int c = memcmp(a, b, alen < blen ? alen : blen);
    return c ? c : (alen > blen) - (alen < blen);
}

/* A decimal's parts: sign, integer digits without leading zeros, fraction
 * digits without trailing zeros. False when the text is not one. */
struct decimal_text {
    bool negative;
    const char *ip, *fp;
    size_t ni, nf;
};

static bool split_decimal(const char *s, size_t n, struct decimal_text *d)
{
    size_t i = 0;
    while (i < n && isspace((unsigned char)s[i]))
        i++;
    while (n > i && isspace((unsigned char)s[n - 1]))
        n--;
    d->negative = false;
    if (i < n && (s[i] == '-' || s[i] == '+'))
        d->negative = s[i++] == '-';
    size_t start = i;
    while (i < n && isdigit((unsigned char)s[i]))
        i++;
    d->ip = s + start;
    d->ni = i - start;
    d->fp = s + i;
    d->nf = 0;
    if (i < n && s[i] == '.') {
        d->fp = s + ++i;
        while (i < n && isdigit((unsigned char)s[i]))
            i++;
        d->nf = (size_t)(s + i - d->fp);
    }
    if (i != n || d->ni + d->nf == 0)
        return false;
    while (d->ni && *d->ip == '0') {
        d->ip++;
        d->ni--;
    }
    while (d->nf && d->fp[d->nf - 1] == '0')
        d->nf--;
    if (d->ni == 0 && d->nf == 0)
        d->negative = false; /* -0 is 0 */
    return true;
}

/* |a| against |b|. */
static int magnitude_cmp(const struct decimal_text *a, const struct decimal_text *b)
{
    if (a->ni != b->ni)
        return a->ni < b->ni ? -1 : 1;
    int c = memcmp(a->ip, b->ip, a->ni);
    if (c)
        return c < 0 ? -1 : 1;
    size_t n = a->nf < b->nf ? a->nf : b->nf;
    c = memcmp(a->fp, b->fp, n);
    if (c)
        return c < 0 ? -1 : 1;
    return (a->nf > b->nf) - (a->nf < b->nf);
}

int pred_decimal_cmp(const char *a, size_t alen, const char *b, size_t blen, bool *ok)
{
    struct decimal_text x, y;
    *ok = true;
    if (split_decimal(a, alen, &x) && split_decimal(b, blen, &y)) {
        if (x.negative != y.negative)
            return x.negative ? -1 : 1;
        int c = magnitude_cmp(&x, &y);
        return x.negative ? -c : c;
    }
    /* An exponent ("1e3"): through doubles, which hold such a literal. */
    char bufa[64], bufb[64], *ea, *eb;
    if (alen >= sizeof bufa || blen >= sizeof bufb) {
        *ok = false;
        return -2;
    }
    memcpy(bufa, a, alen);
    bufa[alen] = '\0';
    memcpy(bufb, b, blen);
    bufb[blen] = '\0';
    double da = strtod(bufa, &ea), db = strtod(bufb, &eb);
    if (ea == bufa || *ea || eb == bufb || *eb) {
        *ok = false;
        return -2;
    }
    return (da > db) - (da < db);
}
