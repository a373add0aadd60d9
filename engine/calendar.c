/* calendar.c -- date_trunc in a time zone, and the calendar buckets of a
 * range (calendar.h). */
#include "engine/calendar.h"

#include "base/scratch.h"

#include <stdlib.h>

static int64_t floor_div(int64_t a, int64_t b) { return a / b - (a % b != 0 && (a < 0) != (b < 0)); }
static int64_t floor_mod(int64_t a, int64_t b) { return a - floor_div(a, b) * b; }

/* Units below a day keep t's offset: their length in µs. 0 for the others. */
static int64_t fixed_unit(enum sql_time_unit unit)
{
    switch (unit) {
    case SQL_UNIT_SECOND: return SQL_USEC_PER_SEC;
    case SQL_UNIT_MINUTE: return SQL_USEC_PER_MINUTE;
    case SQL_UNIT_HOUR: return SQL_USEC_PER_HOUR;
    default: return 0;
    }
}

/* The first day (days since 1970) of the unit holding day d. */
static int64_t unit_first_day(enum sql_time_unit unit, int64_t d)
{
    int64_t y;
    unsigned m, day;
    switch (unit) {
    case SQL_UNIT_WEEK: return d - floor_mod(d + 3, 7); /* 1970-01-05 was a Monday */
    case SQL_UNIT_MONTH:
        sql_civil_from_days(d, &y, &m, &day);
        return sql_days_from_civil(y, m, 1);
    case SQL_UNIT_QUARTER:
        sql_civil_from_days(d, &y, &m, &day);
        return sql_days_from_civil(y, (m - 1) / 3 * 3 + 1, 1);
    case SQL_UNIT_YEAR:
        sql_civil_from_days(d, &y, &m, &day);
        return sql_days_from_civil(y, 1, 1);
    default: return d;
    }
}

/* The first day of the unit after the one holding day d. */
static int64_t unit_next_day(enum sql_time_unit unit, int64_t d)
{
    int64_t first = unit_first_day(unit, d), y;
    unsigned m, day;
    switch (unit) {
    case SQL_UNIT_WEEK: return first + 7;
    case SQL_UNIT_MONTH:
    case SQL_UNIT_QUARTER:
        sql_civil_from_days(first, &y, &m, &day);
        m += unit == SQL_UNIT_MONTH ? 1 : 3;
        return m > 12 ? sql_days_from_civil(y + 1, m - 12, 1) : sql_days_from_civil(y, m, 1);
    case SQL_UNIT_YEAR:
        sql_civil_from_days(first, &y, &m, &day);
        return sql_days_from_civil(y + 1, 1, 1);
    default: return d + 1;
    }
}

int64_t calendar_trunc(const struct tz *tz, enum sql_time_unit unit, int64_t t)
{
    int64_t local = t + (int64_t)tz_offset_at(tz, t) * SQL_USEC_PER_SEC;
    int64_t fixed = fixed_unit(unit);
    if (fixed)
        return t - floor_mod(local, fixed);
    int64_t day = unit_first_day(unit, floor_div(local, SQL_USEC_PER_DAY));
    return tz_local_to_utc(tz, day * SQL_USEC_PER_DAY);
}

/* The next instant after t at which date_trunc may change: where the wall
 * clock reaches the next unit's start at t's offset, or the zone's next
 * change of offset, whichever comes first. Between t and it the offset and
 * the truncated wall-clock fields are constant, so date_trunc is. */
static int64_t next_candidate(const struct tz *tz, enum sql_time_unit unit, int64_t t)
{
    int64_t off = (int64_t)tz_offset_at(tz, t) * SQL_USEC_PER_SEC, local = t + off;
    int64_t fixed = fixed_unit(unit), edge;
    if (fixed)
        edge = t - floor_mod(local, fixed) + fixed;
    else
        edge = unit_next_day(unit, floor_div(local, SQL_USEC_PER_DAY)) * SQL_USEC_PER_DAY - off;
    int64_t change = tz_next_transition(tz, t);
    return change < edge ? change : edge;
}

int calendar_groups(const struct tz *tz, enum sql_time_unit unit, int64_t from, int64_t to,
                    uint32_t max_groups, int64_t **edges, int64_t **keys, uint32_t *n)
{
    uint32_t cap = 16, k = 0;
    int64_t *e = scratch_malloc(sizeof *e * (cap + 1)), *key = scratch_malloc(sizeof *key * cap);
    *edges = *keys = NULL;
    *n = 0;
    if (!e || !key)
        goto fail;
    if (from < to) {
        e[0] = from;
        key[0] = calendar_trunc(tz, unit, from);
        k = 1;
    }
    for (int64_t t = from; k > 0;) {
        int64_t c = next_candidate(tz, unit, t);
        if (c >= to)
            break;
        int64_t kc = calendar_trunc(tz, unit, c);
        if (kc != key[k - 1]) {
            if (k == max_groups) {
                *n = max_groups + 1;
                goto fail;
            }
            if (k == cap) {
                cap *= 2;
                int64_t *e2 = scratch_realloc(e, sizeof *e * (cap + 1));
                if (e2)
                    e = e2;
                int64_t *k2 = scratch_realloc(key, sizeof *key * cap);
                if (k2)
                    key = k2;
                if (!e2 || !k2)
                    goto fail;
            }
            e[k] = c;
            key[k++] = kc;
        }
        t = c;
    }
    e[k] = to;
    *edges = e;
    *keys = key;
    *n = k;
    return 0;
fail:
    scratch_free(e);
    scratch_free(key);
    return -1;
}
