/* codes.c -- int64 codes of typed values, and their text.
 *
 * Codes are what cells, value counts and projections hold. They keep the
 * value's order (except text, whose codes are dictionary ids in arrival
 * order), so a block's sorted runs are sorted values and a value dictionary
 * walked in key order is walked in value order. */
#include "store/store.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

/* Doubles sort like their bit patterns once negative numbers have every bit
 * flipped and positive ones only the sign bit: the usual total order trick.
 * -0.0 and 0.0 get distinct codes; NaN sorts above infinity, as in
 * PostgreSQL. */
int64_t store_float_code(double v)
{
    uint64_t bits;
    memcpy(&bits, &v, 8);
    bits = (bits & (1ULL << 63)) ? ~bits : bits | (1ULL << 63);
    return (int64_t)(bits ^ (1ULL << 63)); /* so that signed order matches */
}

double store_code_float(int64_t code)
{
    uint64_t bits = (uint64_t)code ^ (1ULL << 63);
    bits = (bits & (1ULL << 63)) ? bits & ~(1ULL << 63) : ~bits;
    double v;
    memcpy(&v, &bits, 8);
    return v;
}

static size_t format_numeric(int64_t code, int scale, char *buf, size_t len)
{
    if (scale <= 0)
        return (size_t)snprintf(buf, len, "%" PRId64, code);
    uint64_t mag = code < 0 ? (uint64_t)0 - (uint64_t)code : (uint64_t)code;
    uint64_t pow = 1;
    for (int i = 0; i < scale && i < 19; i++)
        pow *= 10;
    return (size_t)snprintf(buf, len, "%s%" PRIu64 ".%0*" PRIu64, code < 0 ? "-" : "",
                            mag / pow, scale, mag % pow);
}

static size_t format_date(int64_t days, char *buf, size_t len)
{
    int64_t y;
    unsigned m, d;
    sql_civil_from_days(days, &y, &m, &d);
    return (size_t)snprintf(buf, len, "%04" PRId64 "-%02u-%02u", y, m, d);
}

static int64_t floor_div(int64_t a, int64_t b)
{
    int64_t q = a / b;
    return (a % b != 0 && (a < 0) != (b < 0)) ? q - 1 : q;
}

size_t store_code_format(const struct store_column_type *t, int64_t code, char *buf, size_t len)
{
    if (code == STORE_NULL)
        return (size_t)snprintf(buf, len, "NULL");
    switch (t->type) {
    case STORE_TYPE_INT:
        return (size_t)snprintf(buf, len, "%" PRId64, code);
    case STORE_TYPE_NUMERIC:
        return format_numeric(code, t->scale, buf, len);
    case STORE_TYPE_FLOAT:
        return (size_t)snprintf(buf, len, "%.17g", store_code_float(code));
    case STORE_TYPE_TEXT:
        return (size_t)snprintf(buf, len, "#%" PRId64, code);
    case STORE_TYPE_BOOL:
        return (size_t)snprintf(buf, len, "%s", code ? "true" : "false");
    case STORE_TYPE_DATE:
        return format_date(code, buf, len);
    case STORE_TYPE_TIMESTAMP: {
        /* rest from the remainder, not code - days * day: within a day of
         * INT64_MIN that product overflows (found formatting the time of a
         * row store_apply refuses). */
        int64_t days = floor_div(code, 86400000000LL);
        int64_t rest = code % 86400000000LL;
        if (rest < 0)
            rest += 86400000000LL;
        char date[32];
        format_date(days, date, sizeof date);
        int64_t s = rest / 1000000, us = rest % 1000000;
        if (us)
            return (size_t)snprintf(buf, len, "%s %02" PRId64 ":%02" PRId64 ":%02" PRId64 ".%06" PRId64 "+00",
                                    date, s / 3600, s / 60 % 60, s % 60, us);
        return (size_t)snprintf(buf, len, "%s %02" PRId64 ":%02" PRId64 ":%02" PRId64 "+00", date,
                                s / 3600, s / 60 % 60, s % 60);
    }
    }
    return (size_t)snprintf(buf, len, "?%" PRId64, code);
}
