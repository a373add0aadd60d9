/* test_engine_format.c -- the text serve writes for times and exact decimals
 * (engine/tz.c tz_format and engine_format_pg_time, base/decimal.c
 * decimal_format), written without
 * printf. Times are checked against the C library's own local time
 * (localtime_r with TZ set: an independent reading of the same tz
 * database) for random instants in four zones, one with an offset in
 * seconds; years outside 0 to 9999 and short buffers against fixed
 * expectations. */
#include "engine/internal.h"
#include "engine/tz.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static uint64_t rng_state = 1;

static uint64_t rnd(uint64_t n)
{
    rng_state = rng_state * 6364136223846793005ULL + 1442695040888963407ULL;
    return (rng_state >> 11) % n;
}

/* What PostgreSQL writes for utc_us in the zone, from libc. */
static void expected(const char *zone, int64_t utc_us, char *out, size_t len)
{
    setenv("TZ", zone, 1);
    tzset();
    int64_t secs = utc_us / 1000000 - (utc_us % 1000000 < 0), frac = utc_us - secs * 1000000;
    time_t t = (time_t)secs;
    struct tm tm;
    cr_assert_not_null(localtime_r(&t, &tm));
    long off = tm.tm_gmtoff, a = off < 0 ? -off : off;
    int n = snprintf(out, len, "%04d-%02d-%02dT%02d:%02d:%02d", tm.tm_year + 1900, tm.tm_mon + 1,
                     tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec);
    if (frac)
        n += snprintf(out + n, len - (size_t)n, ".%06lld", (long long)frac);
    n += snprintf(out + n, len - (size_t)n, "%c%02ld:%02ld", off < 0 ? '-' : '+', a / 3600,
                  a / 60 % 60);
    if (a % 60)
        snprintf(out + n, len - (size_t)n, ":%02ld", a % 60);
}

Test(format, times_equal_the_c_librarys_in_four_zones)
{
    const char *zones[] = {"UTC", "America/New_York", "Asia/Kolkata", "Europe/Amsterdam"};
    for (int z = 0; z < 4; z++) {
        char err[200];
        const struct tz *tz = tz_get(zones[z], err, sizeof err);
        cr_assert_not_null(tz, "%s", err);
        for (int i = 0; i < 5000; i++) {
            /* 1970 to 2037, whole seconds half the time; Amsterdam also
             * 1920 to 1940, when its offset was +00:19:32. */
            int64_t lo = 0, span = 2100000000LL;
            if (z == 3 && i % 2)
                lo = -1577923200LL, span = 631152000LL;
            int64_t us = (lo + (int64_t)rnd((uint64_t)span)) * 1000000 +
                         (rnd(2) ? (int64_t)rnd(1000000) : 0);
            char got[64], want[64];
            size_t n = tz_format(tz, us, got, sizeof got);
            expected(zones[z], us, want, sizeof want);
            cr_assert_str_eq(got, want, "%s at %lld µs: %s, want %s", zones[z], (long long)us, got, want);
            cr_assert_eq(n, strlen(want));
        }
    }
}

Test(format, far_years_and_short_buffers)
{
    char err[200], got[64];
    const struct tz *utc = tz_get("UTC", err, sizeof err);
    cr_assert_not_null(utc, "%s", err);
    /* 10000-01-01 and 0001-01-01 BC (year 0 in ISO). */
    cr_assert_eq(tz_format(utc, 253402300800000000LL, got, sizeof got), 26);
    cr_assert_str_eq(got, "10000-01-01T00:00:00+00:00");
    tz_format(utc, -62167219200000000LL, got, sizeof got);
    cr_assert_str_eq(got, "0000-01-01T00:00:00+00:00");
    /* 2 BC, year -1: printf's "%04" counts the sign in the four. */
    tz_format(utc, -62198755200000000LL, got, sizeof got);
    cr_assert_str_eq(got, "-001-01-01T00:00:00+00:00");
    /* As snprintf: the full length back, what fits written and ended. */
    char small[8];
    cr_assert_eq(tz_format(utc, 1705449600000001LL, small, sizeof small), 32);
    cr_assert_str_eq(small, "2024-01");
    cr_assert_eq(tz_format(utc, 0, NULL, 0), 25);
}

/* PostgreSQL's own text for timestamptz and timestamp (DateStyle ISO), as
 * the PostgreSQL protocol writes them: a space, the fraction's trailing
 * zeros dropped, offset minutes and seconds only when not zero. */
Test(format, postgresql_text)
{
    char got[64];
    int64_t t = 1705449600000000LL; /* 2024-01-17 00:00:00 UTC */
    cr_assert_eq(engine_format_pg_time(t - 5 * 3600000000LL, -5 * 3600, got, sizeof got), 22);
    cr_assert_str_eq(got, "2024-01-16 19:00:00-05");
    engine_format_pg_time(t + 19800000000LL, 19800, got, sizeof got);
    cr_assert_str_eq(got, "2024-01-17 05:30:00+05:30");
    engine_format_pg_time(t + 1172000000LL, 1172, got, sizeof got);
    cr_assert_str_eq(got, "2024-01-17 00:19:32+00:19:32");
    engine_format_pg_time(t + 120000, INT32_MIN, got, sizeof got);
    cr_assert_str_eq(got, "2024-01-17 00:00:00.12");
    engine_format_pg_time(t + 1, 0, got, sizeof got);
    cr_assert_str_eq(got, "2024-01-17 00:00:00.000001+00");
    char small[8];
    cr_assert_eq(engine_format_pg_time(t, 0, small, sizeof small), 22);
    cr_assert_str_eq(small, "2024-01");
}

Test(format, decimals)
{
    char got[64];
    struct {
        __int128 v;
        int scale;
        const char *want;
    } cases[] = {
        {12345, 2, "123.45"}, {-5, 3, "-0.005"}, {0, 0, "0"}, {0, 2, "0.00"},
        {-1200, 2, "-12.00"}, {7, 0, "7"},
        {(__int128)INT64_MAX * 1000, 3, "9223372036854775807.000"},
        {-((__int128)1 << 120), 0, "-1329227995784915872903807060280344576"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        size_t n = decimal_format(cases[i].v, cases[i].scale, got, sizeof got);
        cr_assert_str_eq(got, cases[i].want);
        cr_assert_eq(n, strlen(cases[i].want));
    }
    char small[4];
    cr_assert_eq(decimal_format(12345, 2, small, sizeof small), 6);
    cr_assert_str_eq(small, "123");
}
