/* test_base_duration.c -- the one duration parser: a table of accepted and
 * refused inputs, and the overflow edges. */
#include "base/duration.h"

#include <criterion/criterion.h>
#include <stdio.h>

Test(base_duration, accepted)
{
    static const struct {
        const char *text;
        int64_t usec;
    } ok[] = {
        {"0", 0},
        {"5", 5000}, /* a bare number is milliseconds */
        {"250us", 250},
        {"5ms", 5000},
        {"2s", 2000000},
        {"1m", 60000000},
        {"1h", 3600000000LL},
        {"1.5s", 1500000},
        {"0.5ms", 500},
        {"1.9us", 1},             /* finer than a microsecond: cut off */
        {"0.0000001h", 360},
        {"0.00000000019h", 0},    /* digits past the tenth of an hour count for nothing */
        {"2.75", 2750},
        {"007s", 7000000},
        {"1.000000000000000000000001s", 1000000},
        {"9223372036854775807us", INT64_MAX},
        {"9223372036854775.807ms", INT64_MAX},
        {"9223372036854.775807s", INT64_MAX},
        {"2562047788h", 9223372036800000000LL},
        {"2562047788.015215h", 9223372036854774000LL}, /* 1807 us below the edge */
        {"153722867280m", 9223372036800000000LL},
    };
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
        int64_t v = -1;
        cr_assert_eq(duration_parse(ok[i].text, &v), 0, "refused %s", ok[i].text);
        cr_assert_eq(v, ok[i].usec, "%s: %lld, not %lld", ok[i].text, (long long)v,
                     (long long)ok[i].usec);
    }
}

Test(base_duration, refused)
{
    static const char *const bad[] = {
        "", "s", "ms", ".5s", "5.", "5.s", "-1s", "+1s", " 1s", "1s ", "1 s", "1e3", "1e12h",
        "1E3ms", "0x10", "1sec", "1S", "1M", "1hh", "1.2.3s", "inf", "nan", "1d", "1ns",
        "9223372036854775808us",        /* INT64_MAX + 1 */
        "9223372036854775.808ms",       /* INT64_MAX + 1 by the fraction */
        "2562047789h",                  /* past INT64_MAX us */
        "2562047788.0152156h",          /* INT64_MAX us and 353 more */
        "153722867281m",                /* past INT64_MAX us */
        "18446744073709551616",         /* 2^64 digits overflow */
        "99999999999999999999999999s",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        int64_t v = 42;
        cr_assert_eq(duration_parse(bad[i], &v), -1, "accepted \"%s\" as %lld", bad[i],
                     (long long)v);
        cr_assert_eq(v, 42, "\"%s\" changed the output on refusal", bad[i]);
    }
}
