/* text.c -- straum-dump's text formatters (see text.h). */
#include "base/decimal.h"
#include "tools/dump/text.h"

#include "tools/dump/dump.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define USEC_PER_SEC 1000000LL
#define USEC_PER_DAY (86400LL * USEC_PER_SEC)

static int64_t floor_div(int64_t a, int64_t b)
{
    int64_t q = a / b;
    return (a % b != 0 && (a < 0) != (b < 0)) ? q - 1 : q;
}

/* civil_from_days (Howard Hinnant): proleptic Gregorian, any int64 day. */
static void civil_from_days(int64_t days, int64_t *y, unsigned *m, unsigned *d)
{
    int64_t z = days + 719468;
    int64_t era = (z >= 0 ? z : z - 146096) / 146097;
    uint64_t doe = (uint64_t)(z - era * 146097);
    uint64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    uint64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    uint64_t mp = (5 * doy + 2) / 153;
    *d = (unsigned)(doy - (153 * mp + 2) / 5 + 1);
    *m = (unsigned)(mp < 10 ? mp + 3 : mp - 9);
    *y = (int64_t)yoe + era * 400 + (*m <= 2);
}

void text_time(char buf[TEXT_SMALL], int64_t usec, enum text_time_style style)
{
    int64_t days = floor_div(usec, USEC_PER_DAY);
    int64_t rest = usec - days * USEC_PER_DAY; /* 0 <= rest < one day */
    int64_t y;
    unsigned mo, d;
    civil_from_days(days, &y, &mo, &d);
    int64_t s = rest / USEC_PER_SEC, us = rest % USEC_PER_SEC;
    int n = snprintf(buf, TEXT_SMALL, "%04" PRId64 "-%02u-%02u%c%02d:%02d:%02d", y, mo, d,
                     style == TIME_PG ? ' ' : 'T', (int)(s / 3600), (int)(s / 60 % 60),
                     (int)(s % 60));
    if (us)
        n += snprintf(buf + n, TEXT_SMALL - (size_t)n, ".%06d", (int)us);
    snprintf(buf + n, TEXT_SMALL - (size_t)n, "%s", style == TIME_PG ? "+00" : "Z");
}

void text_width(char buf[TEXT_SMALL], int64_t usec)
{
    /* Weeks are left out on purpose: "7 days" is how widths are usually
     * written, and date_bin strides read that way in PostgreSQL too. */
    static const struct {
        int64_t usec;
        const char *one, *many;
    } units[] = {
        {USEC_PER_DAY, "day", "days"},
        {3600 * USEC_PER_SEC, "hour", "hours"},
        {60 * USEC_PER_SEC, "minute", "minutes"},
        {USEC_PER_SEC, "second", "seconds"},
        {1000, "millisecond", "milliseconds"},
        {1, "microsecond", "microseconds"},
    };
    if (usec <= 0) {
        snprintf(buf, TEXT_SMALL, "%" PRId64 " microseconds", usec);
        return;
    }
    for (size_t i = 0; i < sizeof units / sizeof units[0]; i++)
        if (usec % units[i].usec == 0) {
            int64_t n = usec / units[i].usec;
            snprintf(buf, TEXT_SMALL, "%" PRId64 " %s", n, n == 1 ? units[i].one : units[i].many);
            return;
        }
}

void text_duration(char buf[TEXT_SMALL], int64_t usec)
{
    const char *sign = usec < 0 ? "-" : "";
    uint64_t u = usec < 0 ? (uint64_t)0 - (uint64_t)usec : (uint64_t)usec;
    if (u < 60 * (uint64_t)USEC_PER_SEC) {
        snprintf(buf, TEXT_SMALL, "%s%" PRIu64 ".%03" PRIu64 " s", sign, u / (uint64_t)USEC_PER_SEC,
                 u % (uint64_t)USEC_PER_SEC / 1000);
        return;
    }
    uint64_t s = u / (uint64_t)USEC_PER_SEC;
    uint64_t days = s / 86400;
    s %= 86400;
    if (days)
        snprintf(buf, TEXT_SMALL, "%s%" PRIu64 " day%s %02u:%02u:%02u", sign, days,
                 days == 1 ? "" : "s", (unsigned)(s / 3600), (unsigned)(s / 60 % 60),
                 (unsigned)(s % 60));
    else
        snprintf(buf, TEXT_SMALL, "%s%02u:%02u:%02u", sign, (unsigned)(s / 3600),
                 (unsigned)(s / 60 % 60), (unsigned)(s % 60));
}

void sbuf_scaled_i128(struct sbuf *b, __int128 v, int scale)
{
    char small[64];
    size_t n = decimal_format(v, scale, small, sizeof small);
    if (n < sizeof small) {
        sbuf_add(b, small, n);
        return;
    }
    char *big = xmalloc(n + 1);
    decimal_format(v, scale, big, n + 1);
    sbuf_add(b, big, n);
    free(big);
}

/* ---- sbuf ----------------------------------------------------------------- */

static void sbuf_reserve(struct sbuf *b, size_t more)
{
    if (b->len + more + 1 <= b->cap)
        return;
    size_t cap = b->cap ? b->cap : 64;
    while (cap < b->len + more + 1)
        cap *= 2;
    b->p = xrealloc(b->p, cap);
    b->cap = cap;
}

void sbuf_reset(struct sbuf *b)
{
    b->len = 0;
    if (b->p)
        b->p[0] = '\0';
}

void sbuf_free(struct sbuf *b)
{
    free(b->p);
    *b = (struct sbuf){0};
}

void sbuf_add(struct sbuf *b, const char *s, size_t n)
{
    sbuf_reserve(b, n);
    memcpy(b->p + b->len, s, n);
    b->len += n;
    b->p[b->len] = '\0';
}

void sbuf_puts(struct sbuf *b, const char *s)
{
    sbuf_add(b, s, strlen(s));
}

void sbuf_printf(struct sbuf *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    sbuf_reserve(b, (size_t)n);
    va_start(ap, fmt);
    vsnprintf(b->p + b->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    b->len += (size_t)n;
}

void sbuf_add_display(struct sbuf *b, const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == '\n')
            sbuf_puts(b, "\\n");
        else if (c == '\t')
            sbuf_puts(b, "\\t");
        else if (c == '\r')
            sbuf_puts(b, "\\r");
        else if (c < 0x20 || c == 0x7f)
            sbuf_printf(b, "\\x%02x", c);
        else
            sbuf_add(b, (const char *)&s[i], 1);
    }
}

size_t text_columns(const char *s)
{
    size_t n = 0;
    for (; *s; s++)
        n += ((unsigned char)*s & 0xc0) != 0x80;
    return n;
}

bool text_parse_count(const char *s, int64_t *out)
{
    if (!s || *s < '0' || *s > '9')
        return false;
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno || *end != '\0' || v < 0)
        return false;
    *out = v;
    return true;
}
