/* time.c -- interval and timestamp literals, to microseconds.
 *
 * Straum's time arithmetic is integer microseconds since the Unix epoch, as in
 * PostgreSQL (which counts from 2000-01-01, a fixed shift). Only fixed-length
 * intervals exist here: a bucket width must be the same length everywhere for
 * date_bin, so months and years are refused with a message saying so. */
#include "base/error.h"
#include "sql/sql.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

static bool fail(char *why, size_t len, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static bool fail(char *why, size_t len, const char *fmt, ...)
{
    if (why && len) {
        va_list ap;
        va_start(ap, fmt);
        error_vfmt(why, len, fmt, ap);
        va_end(ap);
    }
    return false;
}

static const char *skip_spaces(const char *s)
{
    while (*s == ' ' || *s == '\t')
        s++;
    return s;
}

static int64_t unit_usec(const char *unit, size_t n, bool *variable)
{
    static const struct {
        const char *name;
        int64_t usec;
    } units[] = {
        {"microsecond", 1}, {"microseconds", 1}, {"us", 1},
        {"millisecond", 1000}, {"milliseconds", 1000}, {"ms", 1000},
        {"second", SQL_USEC_PER_SEC}, {"seconds", SQL_USEC_PER_SEC},
        {"sec", SQL_USEC_PER_SEC}, {"secs", SQL_USEC_PER_SEC}, {"s", SQL_USEC_PER_SEC},
        {"minute", SQL_USEC_PER_MINUTE}, {"minutes", SQL_USEC_PER_MINUTE},
        {"min", SQL_USEC_PER_MINUTE}, {"mins", SQL_USEC_PER_MINUTE},
        {"m", SQL_USEC_PER_MINUTE},
        {"hour", SQL_USEC_PER_HOUR}, {"hours", SQL_USEC_PER_HOUR},
        {"hr", SQL_USEC_PER_HOUR}, {"hrs", SQL_USEC_PER_HOUR}, {"h", SQL_USEC_PER_HOUR},
        {"day", SQL_USEC_PER_DAY}, {"days", SQL_USEC_PER_DAY}, {"d", SQL_USEC_PER_DAY},
        {"week", 7 * SQL_USEC_PER_DAY}, {"weeks", 7 * SQL_USEC_PER_DAY},
        {"w", 7 * SQL_USEC_PER_DAY},
    };
    static const char *const variable_units[] = {
        "mon", "mons", "month", "months", "y", "year", "years",
        "decade", "decades", "century", "centuries", "millennium", "millennia",
    };
    for (size_t i = 0; i < sizeof units / sizeof units[0]; i++)
        if (strlen(units[i].name) == n && strncasecmp(unit, units[i].name, n) == 0)
            return units[i].usec;
    for (size_t i = 0; i < sizeof variable_units / sizeof variable_units[0]; i++)
        if (strlen(variable_units[i]) == n && strncasecmp(unit, variable_units[i], n) == 0)
            *variable = true;
    return 0;
}

bool sql_parse_interval(const char *text, int64_t *usec, char *why, size_t whylen)
{
    const char *s = skip_spaces(text);
    int64_t total = 0;
    if (*s == '\0')
        return fail(why, whylen, "empty interval");
    while (*s) {
        if (*s == '-')
            return fail(why, whylen, "interval \"%s\" is not positive", text);
        if (!isdigit((unsigned char)*s))
            return fail(why, whylen, "invalid interval \"%s\": expected a number", text);
        int64_t n = 0;
        while (isdigit((unsigned char)*s)) {
            if (n > (INT64_MAX - 9) / 10)
                return fail(why, whylen, "interval \"%s\" is out of range", text);
            n = n * 10 + (*s++ - '0');
        }
        s = skip_spaces(s);
        const char *unit = s;
        while (isalpha((unsigned char)*s))
            s++;
        if (s == unit)
            return fail(why, whylen, "invalid interval \"%s\": a number needs a unit "
                                     "(minutes, hours, days, weeks)", text);
        bool variable = false;
        int64_t per = unit_usec(unit, (size_t)(s - unit), &variable);
        if (variable)
            return fail(why, whylen, "interval \"%s\" has no fixed length: use minutes, "
                                     "hours, days or weeks", text);
        if (per == 0)
            return fail(why, whylen, "invalid interval \"%s\": unknown unit \"%.*s\"", text,
                        (int)(s - unit), unit);
        if (n > (INT64_MAX - total) / per)
            return fail(why, whylen, "interval \"%s\" is out of range", text);
        total += n * per;
        s = skip_spaces(s);
        if (*s == ',')
            return fail(why, whylen, "invalid interval \"%s\": unexpected \",\"", text);
    }
    if (total <= 0)
        return fail(why, whylen, "interval \"%s\" is not positive", text);
    *usec = total;
    return true;
}

/* Days from 1970-01-01 to y-m-d in the proleptic Gregorian calendar
 * (Howard Hinnant's days_from_civil). */
int64_t sql_days_from_civil(int64_t y, unsigned m, unsigned d)
{
    y -= m <= 2;
    const int64_t era = (y >= 0 ? y : y - 399) / 400;
    const unsigned yoe = (unsigned)(y - era * 400);
    const unsigned doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
    const unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + (int64_t)doe - 719468;
}

void sql_civil_from_days(int64_t days, int64_t *y, unsigned *m, unsigned *d)
{
    /* Howard Hinnant's civil_from_days. */
    const int64_t z = days + 719468;
    const int64_t era = (z >= 0 ? z : z - 146096) / 146097;
    const uint64_t doe = (uint64_t)(z - era * 146097);
    const uint64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    const uint64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    const uint64_t mp = (5 * doy + 2) / 153;
    *d = (unsigned)(doy - (153 * mp + 2) / 5 + 1);
    *m = (unsigned)(mp < 10 ? mp + 3 : mp - 9);
    *y = (int64_t)yoe + era * 400 + (*m <= 2);
}

static int days_in_month(int y, int m)
{
    static const int days[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    bool leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
    return m == 2 && leap ? 29 : days[m - 1];
}

/* Reads exactly n digits. */
static bool digits(const char **s, int n, int *out)
{
    int v = 0;
    for (int i = 0; i < n; i++) {
        if (!isdigit((unsigned char)(*s)[i]))
            return false;
        v = v * 10 + ((*s)[i] - '0');
    }
    *s += n;
    *out = v;
    return true;
}

static bool parse_offset(const char *s, int64_t *offset, bool *has, char *why, size_t len,
                         const char *text)
{
    s = skip_spaces(s);
    *has = false;
    *offset = 0;
    if (*s == '\0')
        return true;
    if ((s[0] == 'Z' || s[0] == 'z') && s[1] == '\0') {
        *has = true;
        return true;
    }
    if (strcasecmp(s, "utc") == 0 || strcasecmp(s, "gmt") == 0) {
        *has = true;
        return true;
    }
    if (*s != '+' && *s != '-')
        return fail(why, len, "invalid timestamp \"%s\": unexpected \"%s\"", text, s);
    int sign = *s++ == '-' ? -1 : 1, hh, mm = 0;
    if (!digits(&s, 2, &hh))
        return fail(why, len, "invalid time zone offset in \"%s\"", text);
    if (*s == ':')
        s++;
    if (*s && !digits(&s, 2, &mm))
        return fail(why, len, "invalid time zone offset in \"%s\"", text);
    if (*s || hh > 15 || mm > 59)
        return fail(why, len, "invalid time zone offset in \"%s\"", text);
    *offset = sign * (hh * SQL_USEC_PER_HOUR + mm * SQL_USEC_PER_MINUTE);
    *has = true;
    return true;
}

static bool parse_time_of_day(const char **sp, int64_t *usec, char *why, size_t len,
                              const char *text)
{
    const char *s = *sp;
    int hh, mi, ss = 0;
    int64_t frac = 0;
    if (!digits(&s, 2, &hh) || *s++ != ':' || !digits(&s, 2, &mi))
        return fail(why, len, "invalid timestamp \"%s\": expected HH:MM", text);
    if (*s == ':') {
        s++;
        if (!digits(&s, 2, &ss))
            return fail(why, len, "invalid timestamp \"%s\": expected seconds", text);
        if (*s == '.') {
            s++;
            int n = 0;
            int64_t scale = 100000;
            while (isdigit((unsigned char)*s)) {
                if (n < 6)
                    frac += (*s - '0') * scale;
                else if (n == 6 && *s >= '5')
                    frac++; /* round to the microsecond, as PostgreSQL does */
                scale /= 10;
                n++;
                s++;
            }
            if (n == 0)
                return fail(why, len, "invalid timestamp \"%s\": expected fraction", text);
        }
    }
    if (hh > 23 || mi > 59 || ss > 59)
        return fail(why, len, "timestamp \"%s\" has a time out of range", text);
    *usec = hh * SQL_USEC_PER_HOUR + mi * SQL_USEC_PER_MINUTE + ss * SQL_USEC_PER_SEC + frac;
    *sp = s;
    return true;
}

bool sql_parse_timestamp(const char *text, int64_t *usec, bool *has_offset, char *why,
                         size_t whylen)
{
    const char *s = skip_spaces(text);
    if (strcasecmp(s, "epoch") == 0) {
        *usec = 0;
        *has_offset = true;
        return true;
    }
    int y, m, d;
    if (!digits(&s, 4, &y) || *s++ != '-' || !digits(&s, 2, &m) || *s++ != '-' ||
        !digits(&s, 2, &d))
        return fail(why, whylen, "invalid timestamp \"%s\": expected YYYY-MM-DD", text);
    if (y < 1 || m < 1 || m > 12 || d < 1 || d > days_in_month(y, m))
        return fail(why, whylen, "timestamp \"%s\" has a date out of range", text);
    int64_t tod = 0;
    if (*s == 'T' || *s == 't' || (*s == ' ' && isdigit((unsigned char)s[1])))
        s++;
    if (isdigit((unsigned char)*s) && !parse_time_of_day(&s, &tod, why, whylen, text))
        return false;
    int64_t offset;
    if (!parse_offset(s, &offset, has_offset, why, whylen, text))
        return false;
    *usec = sql_days_from_civil(y, (unsigned)m, (unsigned)d) * SQL_USEC_PER_DAY + tod - offset;
    return true;
}

int sql_format_interval(int64_t usec, char *buf, size_t len)
{
    static const struct {
        int64_t usec;
        const char *unit;
    } units[] = {{7 * SQL_USEC_PER_DAY, "week"}, {SQL_USEC_PER_DAY, "day"},
                 {SQL_USEC_PER_HOUR, "hour"},    {SQL_USEC_PER_MINUTE, "minute"},
                 {SQL_USEC_PER_SEC, "second"}};
    for (size_t i = 0; usec > 0 && i < sizeof units / sizeof units[0]; i++)
        if (usec % units[i].usec == 0) {
            long long n = usec / units[i].usec;
            return snprintf(buf, len, "%lld %s%s", n, units[i].unit, n == 1 ? "" : "s");
        }
    return snprintf(buf, len, "%lld microseconds", (long long)usec);
}
