/* decimal.c -- scaled integers as decimal text (decimal.h). */
#include "base/decimal.h"

#include <stdint.h>
#include <string.h>

__extension__ typedef unsigned __int128 u128;

int decimal_digits(u128 m, char out[DECIMAL_DIGITS_BYTES])
{
    char rev[DECIMAL_DIGITS_BYTES];
    int n = 0;
    /* A 128-bit division is a library call per digit, a 64-bit one by 10 a
     * multiply: only the digits above 2^64 take the first (a sum's text
     * was a tenth of a series ask's time in serve). */
    while (m > UINT64_MAX) {
        rev[n++] = (char)('0' + (int)(m % 10));
        m /= 10;
    }
    uint64_t low = (uint64_t)m;
    do {
        rev[n++] = (char)('0' + (int)(low % 10));
        low /= 10;
    } while (low);
    for (int i = 0; i < n; i++)
        out[i] = rev[n - 1 - i];
    out[n] = '\0';
    return n;
}

/* Appends n copies of c (or n bytes of s) at *k, as much as fits in
 * buf[0..len-1); *k counts every byte, fitting or not. */
static void put(char *buf, size_t len, size_t *k, const char *s, char c, size_t n)
{
    for (size_t i = 0; i < n; i++, (*k)++)
        if (*k + 1 < len)
            buf[*k] = s ? s[i] : c;
}

__extension__ size_t decimal_format(__int128 v, int scale, char *buf, size_t len)
{
    char d[DECIMAL_DIGITS_BYTES];
    /* Negate in unsigned arithmetic, so that the smallest __int128 works. */
    int n = decimal_digits(v < 0 ? (u128)0 - (u128)v : (u128)v, d);
    size_t k = 0;
    if (v < 0)
        put(buf, len, &k, "-", 0, 1);
    if (scale <= 0) {
        put(buf, len, &k, d, 0, (size_t)n);
        if (v != 0)
            put(buf, len, &k, NULL, '0', (size_t)-scale);
    } else if (n <= scale) { /* 0.0012 */
        put(buf, len, &k, "0.", 0, 2);
        put(buf, len, &k, NULL, '0', (size_t)(scale - n));
        put(buf, len, &k, d, 0, (size_t)n);
    } else {
        put(buf, len, &k, d, 0, (size_t)(n - scale));
        put(buf, len, &k, ".", 0, 1);
        put(buf, len, &k, d + n - scale, 0, (size_t)scale);
    }
    if (len)
        buf[k < len ? k : len - 1] = '\0';
    return k;
}
