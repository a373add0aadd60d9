/* numeric.c -- exact decimals as PostgreSQL writes them.
 *
 * Sums are scaled 128-bit integers and print exactly. Averages follow
 * numeric_div: the quotient is rounded (half away from zero) to the scale
 * select_div_scale picks — enough digits for 16 significant ones, never fewer
 * than the sum's scale — so "avg" reads the same here and in psql
 * (13.0000000000000000). Conversions to double go through the decimal text,
 * as numeric_float8 does, so they round the same way. */
#include "base/decimal.h"
#include "engine/internal.h"
#include "engine/pred.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { MIN_SIG_DIGITS = 16, DEC_DIGITS = 4, MAX_DISPLAY_SCALE = 1000 };

static unsigned __int128 abs128(__int128 v)
{
    return v < 0 ? (unsigned __int128)0 - (unsigned __int128)v : (unsigned __int128)v;
}

/* Weight and first digit of |v| / 10^scale in base 10000, as PostgreSQL's
 * NumericVar sees them (weight 0: the units group). Zero has weight 0 and
 * first digit 0. */
static void base10000(unsigned __int128 mag, int scale, int *weight, int *first)
{
    *weight = 0;
    *first = 0;
    if (mag == 0)
        return;
    /* Align the fraction to whole groups of four digits. */
    int pad = (DEC_DIGITS - scale % DEC_DIGITS) % DEC_DIGITS;
    for (int i = 0; i < pad; i++)
        mag *= 10;
    int frac_groups = (scale + pad) / DEC_DIGITS;
    int groups = 0;
    unsigned __int128 top = mag;
    while (top > UINT64_MAX) { /* a 128-bit division is a call: few of them */
        top /= 10000;
        groups++;
    }
    uint64_t low = (uint64_t)top;
    while (low >= 10000) {
        low /= 10000;
        groups++;
    }
    *first = (int)low;
    *weight = groups - frac_groups;
}

size_t dec_avg(__int128 sum, int scale, int64_t count, char *buf, size_t len)
{
    unsigned __int128 mag = abs128(sum);
    int w1, f1, w2, f2;
    base10000(mag, scale, &w1, &f1);
    base10000((unsigned __int128)count, 0, &w2, &f2);
    int qweight = w1 - w2;
    if (f1 <= f2)
        qweight--;
    int rscale = MIN_SIG_DIGITS - qweight * DEC_DIGITS;
    if (rscale < scale)
        rscale = scale;
    if (rscale < 0)
        rscale = 0;
    if (rscale > MAX_DISPLAY_SCALE)
        rscale = MAX_DISPLAY_SCALE;
    /* mag / (count * 10^scale), long division, rscale digits, then round. */
    unsigned __int128 den = (unsigned __int128)count;
    for (int i = 0; i < scale; i++)
        den *= 10;
    unsigned __int128 q, rem;
    if (mag <= UINT64_MAX && den <= UINT64_MAX) {
        q = (uint64_t)mag / (uint64_t)den;
        rem = (uint64_t)mag % (uint64_t)den;
    } else {
        q = mag / den;
        rem = mag % den;
    }
    char frac[MAX_DISPLAY_SCALE + 1];
    int at = 0;
    if (den <= UINT64_MAX / 10) {
        /* The remainder is below the divisor: as many digits as one 64-bit
         * division gives at once (up to 18), where a digit each in 128 bits
         * was a fifth of an ask's time for a few hundred groups with an
         * average (the division in 128 bits is a call). */
        uint64_t d = (uint64_t)den, r = (uint64_t)rem, chunk = 10;
        int k = 1;
        while (k < 18 && chunk <= UINT64_MAX / d / 10) {
            chunk *= 10;
            k++;
        }
        while (at < rscale) {
            int take = rscale - at < k ? rscale - at : k;
            uint64_t step = 1;
            for (int j = 0; j < take; j++)
                step *= 10;
            uint64_t v = r * step, digits = v / d; /* r * step < d * chunk */
            r = v % d;
            for (int j = take - 1; j >= 0; j--, digits /= 10)
                frac[at + j] = (char)('0' + (int)(digits % 10));
            at += take;
        }
        rem = r;
    }
    for (; at < rscale; at++) {
        rem *= 10;
        frac[at] = (char)('0' + (int)(rem / den));
        rem %= den;
    }
    frac[rscale] = '\0';
    if (rem * 2 >= den) { /* half away from zero: carry through the digits */
        int i = rscale - 1;
        while (i >= 0 && frac[i] == '9')
            frac[i--] = '0';
        if (i >= 0)
            frac[i]++;
        else
            q++;
    }
    char ip[DECIMAL_DIGITS_BYTES];
    int nip = decimal_digits(q, ip);
    bool negative = sum < 0 && (q != 0 || strspn(frac, "0") < (size_t)rscale);
    /* written as snprintf would: the full length returned, what fits copied */
    size_t n = (size_t)negative + (size_t)nip + (rscale ? 1 + (size_t)rscale : 0);
    if (len == 0)
        return n;
    char *o = buf, *end = buf + len - 1;
    if (negative && o < end)
        *o++ = '-';
    for (int i = 0; i < nip && o < end; i++)
        *o++ = ip[i];
    if (rscale && o < end)
        *o++ = '.';
    for (int i = 0; i < rscale && o < end; i++)
        *o++ = frac[i];
    *o = '\0';
    return n;
}

double dec_avg_approx(__int128 sum, int scale, int64_t count)
{
    return (double)sum / (double)count / pow(10.0, scale);
}

/* How far apart two averages' dec_avg_approx must be, relative to the
 * larger, for their order to be the order of PostgreSQL's numeric
 * averages: each double is within some 1e-15 of its exact quotient, and
 * the numeric rounds the quotient to 16 significant digits or more, so
 * doubles this far apart can neither swap nor meet. Closer ones compare
 * by their digits. Why: writing the digits of every row of an ask ordered
 * by an average (then reading them back as a double) was 45% of an ask of
 * 1,591 groups. */
#define DEC_AVG_CLOSE 1e-12

int dec_avg_cmp(__int128 sa, int64_t na, double da, __int128 sb, int64_t nb, double db, int scale)
{
    double gap = fabs(da - db), big = fmax(fabs(da), fabs(db));
    if (gap > DEC_AVG_CLOSE * big)
        return da < db ? -1 : 1;
    /* One quotient of two counts may still round to two numerics (the
     * result's scale follows the count's digits): only the same sum and
     * count are known equal without digits. */
    if (sa == sb && na == nb)
        return 0;
    char a[DEC_AVG_TEXT_CAP], b[DEC_AVG_TEXT_CAP];
    size_t an = dec_avg(sa, scale, na, a, sizeof a), bn = dec_avg(sb, scale, nb, b, sizeof b);
    bool ok = true;
    return pred_decimal_cmp(a, an, b, bn, &ok);
}

double dec_to_double(__int128 v, int scale)
{
    char text[96];
    decimal_format(v, scale, text, sizeof text);
    return strtod(text, NULL);
}

size_t double_format(double d, char *buf, size_t len)
{
    if (d != d)
        return (size_t)snprintf(buf, len, "\"NaN\"");
    if (d == 1.0 / 0.0 || d == -1.0 / 0.0)
        return (size_t)snprintf(buf, len, d > 0 ? "\"Infinity\"" : "\"-Infinity\"");
    for (int p = 1; p <= 17; p++) {
        char tmp[40];
        snprintf(tmp, sizeof tmp, "%.*g", p, d);
        if (strtod(tmp, NULL) == d)
            return (size_t)snprintf(buf, len, "%s", tmp);
    }
    return (size_t)snprintf(buf, len, "%.17g", d);
}
