/* duration.c -- duration options to microseconds (duration.h). */
#include "base/duration.h"

#include <string.h>

/* Fraction digits kept: an hour is 3.6e9 us, so a tenth-digit of an hour is
 * 0.36 us and no later digit can reach a whole microsecond. The rest must
 * still be digits. */
enum { FRACTION_DIGITS = 10 };

int duration_parse(const char *text, int64_t *usec)
{
    const char *p = text;
    if (*p < '0' || *p > '9')
        return -1;
    uint64_t whole = 0;
    for (; *p >= '0' && *p <= '9'; p++) {
        if (whole > (UINT64_MAX - 9) / 10)
            return -1;
        whole = whole * 10 + (uint64_t)(*p - '0');
    }
    uint64_t frac = 0, frac_scale = 1;
    if (*p == '.') {
        p++;
        if (*p < '0' || *p > '9')
            return -1;
        for (int n = 0; *p >= '0' && *p <= '9'; p++, n++)
            if (n < FRACTION_DIGITS) {
                frac = frac * 10 + (uint64_t)(*p - '0');
                frac_scale *= 10;
            }
    }
    uint64_t mul = !strcmp(p, "us")                ? 1
                   : !strcmp(p, "ms") || !*p       ? 1000
                   : !strcmp(p, "s")               ? 1000000
                   : !strcmp(p, "m")               ? 60000000
                   : !strcmp(p, "h")               ? 3600000000u
                                                   : 0;
    if (!mul || whole > (uint64_t)INT64_MAX / mul)
        return -1;
    /* frac < 10^10 and mul <= 3.6e9: the product fits 128 bits, and the
     * quotient is below mul. */
    uint64_t part = (uint64_t)((unsigned __int128)frac * mul / frac_scale);
    uint64_t total = whole * mul;
    if (part > (uint64_t)INT64_MAX - total)
        return -1;
    *usec = (int64_t)(total + part);
    return 0;
}
