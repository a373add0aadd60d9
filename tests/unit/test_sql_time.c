/* test_sql_time.c -- interval and timestamp literals to microseconds. */
#include "sql/sql.h"

#include <criterion/criterion.h>

static int64_t interval(const char *text)
{
    int64_t v = -1;
    char why[160];
    cr_assert(sql_parse_interval(text, &v, why, sizeof why), "%s: %s", text, why);
    return v;
}

static const char *interval_error(const char *text)
{
    static char why[160];
    int64_t v;
    cr_assert_not(sql_parse_interval(text, &v, why, sizeof why), "accepted %s", text);
    return why;
}

Test(sql_time, intervals)
{
    cr_assert_eq(interval("1 hour"), SQL_USEC_PER_HOUR);
    cr_assert_eq(interval("15 minutes"), 15 * SQL_USEC_PER_MINUTE);
    cr_assert_eq(interval("  7 days "), 7 * SQL_USEC_PER_DAY);
    cr_assert_eq(interval("1 week 2 days"), 9 * SQL_USEC_PER_DAY);
    cr_assert_eq(interval("1h"), SQL_USEC_PER_HOUR);
    cr_assert_eq(interval("2 HOURS"), 2 * SQL_USEC_PER_HOUR);
    cr_assert_eq(interval("90 s"), 90 * SQL_USEC_PER_SEC);
    cr_assert_eq(interval("1 min"), SQL_USEC_PER_MINUTE);
    cr_assert_str_eq(interval_error("1 month"),
                     "interval \"1 month\" has no fixed length: use minutes, hours, days or weeks");
    cr_assert_str_eq(interval_error(""), "empty interval");
    cr_assert_str_eq(interval_error("-1 hour"), "interval \"-1 hour\" is not positive");
    cr_assert_str_eq(interval_error("0 hours"), "interval \"0 hours\" is not positive");
    cr_assert_str_eq(interval_error("1"),
                     "invalid interval \"1\": a number needs a unit (minutes, hours, days, weeks)");
    cr_assert_str_eq(interval_error("1 parsec"), "invalid interval \"1 parsec\": unknown unit \"parsec\"");
    cr_assert_str_eq(interval_error("99999999999999999999 hours"),
                     "interval \"99999999999999999999 hours\" is out of range");
    cr_assert_str_eq(interval_error("9999999999 weeks"), "interval \"9999999999 weeks\" is out of range");
}

static int64_t ts(const char *text, bool *has_offset)
{
    int64_t v;
    char why[160];
    cr_assert(sql_parse_timestamp(text, &v, has_offset, why, sizeof why), "%s: %s", text, why);
    return v;
}

static const char *ts_error(const char *text)
{
    static char why[160];
    int64_t v;
    bool off;
    cr_assert_not(sql_parse_timestamp(text, &v, &off, why, sizeof why), "accepted %s", text);
    return why;
}

Test(sql_time, timestamps)
{
    bool off;
    cr_assert_eq(ts("epoch", &off), 0);
    cr_assert(off);
    cr_assert_eq(ts("2024-01-17", &off), 1705449600LL * SQL_USEC_PER_SEC);
    cr_assert_not(off, "no offset written: the caller applies the time zone");
    cr_assert_eq(ts("2024-01-17 05:30:00.123456+05:30", &off),
                 1705449600LL * SQL_USEC_PER_SEC + 123456);
    cr_assert(off);
    cr_assert_eq(ts("2024-01-17T10:00Z", &off), (1705449600LL + 36000) * SQL_USEC_PER_SEC);
    cr_assert_eq(ts("2024-01-17 10:00-04", &off), (1705449600LL + 14 * 3600) * SQL_USEC_PER_SEC);
    cr_assert_eq(ts("2024-02-29 00:00:00.0000005", &off), 1709164800LL * SQL_USEC_PER_SEC + 1,
                 "rounded to the microsecond");
    cr_assert_eq(ts("1969-12-31 23:59:59", &off), -SQL_USEC_PER_SEC);
    cr_assert_eq(ts("2000-01-01 00:00:00 UTC", &off), 946684800LL * SQL_USEC_PER_SEC);
    cr_assert_str_eq(ts_error("2023-02-29"), "timestamp \"2023-02-29\" has a date out of range");
    cr_assert_str_eq(ts_error("2024-01-17 24:00"),
                     "timestamp \"2024-01-17 24:00\" has a time out of range");
    cr_assert_str_eq(ts_error("yesterday"), "invalid timestamp \"yesterday\": expected YYYY-MM-DD");
    cr_assert_str_eq(ts_error("2024-01-17 10:00 +5x"),
                     "invalid time zone offset in \"2024-01-17 10:00 +5x\"");
    cr_assert_str_eq(ts_error("2024-01-17 10"),
                     "invalid timestamp \"2024-01-17 10\": expected HH:MM");
    cr_assert_str_eq(ts_error("2024-01-17 10:00:00."),
                     "invalid timestamp \"2024-01-17 10:00:00.\": expected fraction");
}

Test(sql_time, civil_from_days_inverts_days_from_civil)
{
    /* Every day from 4000 BC to AD 6000, and a few fixed dates. */
    for (int64_t days = -2180000; days <= 1470000; days++) {
        int64_t y;
        unsigned m, d;
        sql_civil_from_days(days, &y, &m, &d);
        cr_assert(m >= 1 && m <= 12 && d >= 1 && d <= 31, "day %lld", (long long)days);
        cr_assert_eq(sql_days_from_civil(y, m, d), days, "day %lld: %lld-%u-%u", (long long)days,
                     (long long)y, m, d);
    }
    int64_t y;
    unsigned m, d;
    sql_civil_from_days(0, &y, &m, &d);
    cr_assert(y == 1970 && m == 1 && d == 1);
    sql_civil_from_days(19737, &y, &m, &d); /* 2024-01-15 */
    cr_assert(y == 2024 && m == 1 && d == 15);
    sql_civil_from_days(-719469, &y, &m, &d); /* 0000-02-29: year 0 is a leap year */
    cr_assert(y == 0 && m == 2 && d == 29, "%lld-%u-%u", (long long)y, m, d);
}
