/* scan.c -- the little of the ask language's lexer the shell needs (SPEC
 * §3): where a statement ends (a ';' outside strings, quoted names and
 * comments), whether a text holds anything, and the highest $n an ask
 * uses. Lexical rules as PostgreSQL's: '...' with '', E'...' with backslash
 * escapes, "..." with "", $tag$...$tag$, -- and nested block comments. */
#include "tools/shell/shell.h"

#include <ctype.h>
#include <string.h>

static bool ident_char(char c)
{
    return isalnum((unsigned char)c) || c == '_' || (unsigned char)c >= 0x80;
}

/* Length of a dollar-quote opener ($$ or $tag$) at text[i], or 0. */
static size_t dollar_tag(const char *text, size_t len, size_t i)
{
    size_t j = i + 1;
    if (j < len && text[j] == '$')
        return 2;
    if (j >= len || !(isalpha((unsigned char)text[j]) || text[j] == '_' ||
                      (unsigned char)text[j] >= 0x80))
        return 0;
    while (j < len && ident_char(text[j]))
        j++;
    return j < len && text[j] == '$' ? j + 1 - i : 0;
}

struct lexer {
    const char *text;
    size_t len, i;
    bool token;   /* something other than whitespace, comments and ';' was seen */
    bool quoted;  /* the text ended inside a string, quoted name or comment */
};

/* Steps over one lexical element at l->i: a string, quoted name, comment or
 * single character. Returns the character when it is a plain one (outside
 * every quote), else 0. */
static char step(struct lexer *l)
{
    const char *t = l->text;
    size_t n = l->len, i = l->i;
    char c = t[i];
    if (c == '-' && i + 1 < n && t[i + 1] == '-') {
        while (i < n && t[i] != '\n')
            i++;
        l->i = i;
        return 0;
    }
    if (c == '/' && i + 1 < n && t[i + 1] == '*') {
        int depth = 1;
        i += 2;
        while (i < n && depth > 0) {
            if (t[i] == '/' && i + 1 < n && t[i + 1] == '*') {
                depth++;
                i += 2;
            } else if (t[i] == '*' && i + 1 < n && t[i + 1] == '/') {
                depth--;
                i += 2;
            } else {
                i++;
            }
        }
        l->quoted |= depth > 0;
        l->i = i;
        return 0;
    }
    if (c == '\'' || c == '"') {
        bool escapes = c == '\'' && i > 0 && (t[i - 1] == 'E' || t[i - 1] == 'e') &&
                       (i < 2 || !ident_char(t[i - 2]));
        l->token = true;
        i++;
        for (;;) {
            if (i >= n) {
                l->quoted = true;
                break;
            }
            if (escapes && t[i] == '\\') {
                i += 2;
                continue;
            }
            if (t[i] == c) {
                if (i + 1 < n && t[i + 1] == c) { /* '' or "" */
                    i += 2;
                    continue;
                }
                i++;
                break;
            }
            i++;
        }
        l->i = i > n ? n : i;
        return 0;
    }
    if (c == '$' && (i == 0 || !ident_char(t[i - 1]))) {
        size_t tag = dollar_tag(t, n, i);
        if (tag) {
            l->token = true;
            i += tag;
            for (;;) {
                if (i + tag > n) {
                    l->quoted = true;
                    i = n;
                    break;
                }
                if (memcmp(t + i, t + l->i, tag) == 0) {
                    i += tag;
                    break;
                }
                i++;
            }
            l->i = i;
            return 0;
        }
    }
    l->i = i + 1;
    if (!isspace((unsigned char)c) && c != ';')
        l->token = true;
    return c ? c : ' ';
}

size_t scan_statement(const char *text, size_t len, bool *in_quote)
{
    struct lexer l = {text, len, 0, false, false};
    while (l.i < len) {
        if (step(&l) == ';') {
            if (in_quote)
                *in_quote = false;
            return l.i;
        }
    }
    if (in_quote)
        *in_quote = l.quoted;
    return 0;
}

bool scan_blank(const char *text, size_t len)
{
    struct lexer l = {text, len, 0, false, false};
    while (l.i < len && !l.token)
        step(&l);
    return !l.token;
}

int scan_max_param(const char *text, size_t len)
{
    struct lexer l = {text, len, 0, false, false};
    int max = 0;
    while (l.i < len) {
        size_t at = l.i;
        if (step(&l) != '$' || (at > 0 && ident_char(text[at - 1])))
            continue;
        long n = 0;
        size_t j = at + 1;
        while (j < len && isdigit((unsigned char)text[j]) && n <= 100000)
            n = n * 10 + (text[j++] - '0');
        if (j > at + 1 && n > max)
            max = n > 100000 ? 100000 : (int)n;
        l.i = j;
    }
    return max;
}
