/* buf.c -- a growable byte buffer, and JSON string escaping (buf.h). */
#include "base/buf.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

bool buf_grow(struct buf *b, size_t more)
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

int int64_text(int64_t v, char out[INT64_TEXT_BYTES])
{
    /* The magnitude as unsigned: -INT64_MIN does not fit an int64_t. */
    uint64_t m = v < 0 ? 0 - (uint64_t)v : (uint64_t)v;
    char digits[INT64_TEXT_BYTES];
    int n = 0;
    do {
        digits[n++] = (char)('0' + m % 10);
        m /= 10;
    } while (m);
    int len = 0;
    if (v < 0)
        out[len++] = '-';
    while (n)
        out[len++] = digits[--n];
    return len;
}

void buf_put_int64(struct buf *b, int64_t v)
{
    char text[INT64_TEXT_BYTES];
    buf_put(b, text, (size_t)int64_text(v, text));
}

void buf_printf(struct buf *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0 || !buf_grow(b, (size_t)n))
        return;
    va_start(ap, fmt);
    vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    b->len += (size_t)n;
}

/* The second byte's range for each lead byte of a well-formed UTF-8
 * sequence, Unicode 15 Table 3-7; the third and fourth bytes are always
 * 80..BF. The narrowed rows are what make overlongs (C0, C1, E0 80..9F,
 * F0 80..8F), surrogates (ED A0..BF) and code points past U+10FFFF (F4
 * 90..BF, F5..FF) ill-formed. A lead byte outside these rows begins no
 * sequence. */
static int utf8_sequence_at(const unsigned char *p, const unsigned char *end)
{
    unsigned char c = p[0], lo = 0x80, hi = 0xBF;
    int n;
    if (c >= 0xC2 && c <= 0xDF)
        n = 2;
    else if (c >= 0xE0 && c <= 0xEF) {
        n = 3;
        if (c == 0xE0)
            lo = 0xA0;
        else if (c == 0xED)
            hi = 0x9F;
    } else if (c >= 0xF0 && c <= 0xF4) {
        n = 4;
        if (c == 0xF0)
            lo = 0x90;
        else if (c == 0xF4)
            hi = 0x8F;
    } else
        return 0;
    if (end - p < n || p[1] < lo || p[1] > hi)
        return 0;
    for (int i = 2; i < n; i++)
        if (p[i] < 0x80 || p[i] > 0xBF)
            return 0;
    return n;
}

void buf_json_string(struct buf *b, const char *s, size_t len)
{
    static const char hex[] = "0123456789abcdef";
    if (!buf_grow(b, len + 2))
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
        } else {
            int n = utf8_sequence_at(p, end);
            if (n) {
                buf_put(b, p, (size_t)n);
                p += n;
            } else { /* each byte that begins no sequence */
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
