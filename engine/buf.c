/* buf.c -- a growable byte buffer, and JSON string escaping.
 *
 * Answers are written straight into one buffer: no printf on the hot paths
 * that matter (strings, integers), no intermediate tree. A failed allocation
 * marks the buffer failed instead of aborting; the caller answers 500. */
#include "engine/engine.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static bool reserve(struct buf *b, size_t more)
{
    if (b->failed)
        return false;
    if (b->len + more + 1 <= b->cap)
        return true;
    size_t cap = b->cap ? b->cap : 256;
    while (cap < b->len + more + 1)
        cap *= 2;
    char *d = realloc(b->data, cap);
    if (!d) {
        b->failed = true;
        return false;
    }
    b->data = d;
    b->cap = cap;
    return true;
}

void buf_put(struct buf *b, const void *data, size_t len)
{
    if (!reserve(b, len))
        return;
    memcpy(b->data + b->len, data, len);
    b->len += len;
    b->data[b->len] = '\0';
}

void buf_puts(struct buf *b, const char *s) { buf_put(b, s, strlen(s)); }

void buf_printf(struct buf *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0 || !reserve(b, (size_t)n))
        return;
    va_start(ap, fmt);
    vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    b->len += (size_t)n;
}

/* Escapes quotes, backslashes and control bytes; invalid UTF-8 bytes become
 * U+FFFD so that the answer is always valid JSON. */
void buf_json_string(struct buf *b, const char *s, size_t len)
{
    static const char hex[] = "0123456789abcdef";
    if (!reserve(b, len + 2))
        return;
    buf_put(b, "\"", 1);
    const unsigned char *p = (const unsigned char *)s, *end = p + len;
    while (p < end) {
        const unsigned char *run = p;
        while (p < end && *p >= 0x20 && *p < 0x80 && *p != '"' && *p != '\\')
            p++;
        if (p > run)
            buf_put(b, run, (size_t)(p - run));
        if (p == end)
            break;
        unsigned char c = *p;
        if (c == '"' || c == '\\') {
            char esc[2] = {'\\', (char)c};
            buf_put(b, esc, 2);
            p++;
        } else if (c < 0x20) {
            char esc[6] = {'\\', 'u', '0', '0', hex[c >> 4], hex[c & 15]};
            buf_put(b, esc, 6);
            p++;
        } else { /* a UTF-8 sequence: copy it if well formed */
            int n = c >= 0xF0 && c < 0xF5 ? 4 : c >= 0xE0 ? 3 : c >= 0xC2 && c < 0xE0 ? 2 : 0;
            bool ok = n > 0 && p + n <= end;
            for (int i = 1; ok && i < n; i++)
                ok = (p[i] & 0xC0) == 0x80;
            if (ok && n == 3)
                ok = !(c == 0xE0 && p[1] < 0xA0) && !(c == 0xED && p[1] >= 0xA0);
            if (ok && n == 4)
                ok = !(c == 0xF0 && p[1] < 0x90) && !(c == 0xF4 && p[1] >= 0x90);
            if (ok) {
                buf_put(b, p, (size_t)n);
                p += n;
            } else {
                buf_put(b, "\xEF\xBF\xBD", 3);
                p++;
            }
        }
    }
    buf_put(b, "\"", 1);
}

void buf_free(struct buf *b)
{
    free(b->data);
    memset(b, 0, sizeof *b);
}
