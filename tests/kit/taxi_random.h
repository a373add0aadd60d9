/* taxi_random.h -- generated asks over the benchmark's two views (trips and
 * dropoffs, bench/taxi_views.sql), each with the PostgreSQL SQL over the raw
 * tables that means the same: the oracle the tests compare every answer
 * with, and the SQL `taxi random` times PostgreSQL and DuckDB on.
 *
 * Ask number i of a seed is the same ask on every machine and every run
 * (it depends on the seed and i only), so a test can check asks 0..N-1 and
 * the benchmark time the same ones, and a reported ask can be rebuilt by
 * its number. What the sequence covers, each part drawn per ask:
 *   - every measure each view declares (count, sum, avg, percentile_disc
 *     0.5 and 0.99 on trips; count, sums and avg on dropoffs), at least one;
 *   - grouping by nothing, or by one, two or three of the keys and the dim
 *     column (zone id, payment type; borough), with or without time: the
 *     view's bucket, date_bin at each declared width (1 hour, 1 day,
 *     7 days), and the calendar's date_trunc day, week and month;
 *   - conditions on keys and the dim column: =, <>, IN, NOT IN, ranges,
 *     BETWEEN, IS [NOT] NULL, and sometimes an OR/NOT tree of them;
 *   - the range: one hour to the whole six months, on hour edges, or off
 *     them (any second: BETWEEN, > and <=), or all time;
 *   - sometimes HAVING on a measure, and ORDER BY a measure (ties broken by
 *     every selected key, so the rows LIMIT keeps are one set) with LIMIT
 *     and OFFSET.
 *
 * The SQL reads yellow_trips t LEFT JOIN taxi_zones z as the views do, the
 * range as the view buckets the rows (date_bin('1 hour', pickup_at) against
 * the range's instants, pickup_at itself where the instants are hour
 * edges), text compared in C collation as Straum compares it. Both are
 * meant under the session (and ask) time zone TAXI_RANDOM_TZ; every instant
 * in them carries its offset. */
#ifndef STRAUM_KIT_TAXI_RANDOM_H
#define STRAUM_KIT_TAXI_RANDOM_H

#include <stdbool.h>
#include <stdint.h>

#define TAXI_RANDOM_TZ "America/New_York"
/* The benchmark's sequence: `taxi random` and the test read this seed. */
#define TAXI_RANDOM_SEED 25u
#define TAXI_RANDOM_MAX_PARAMS 8

struct taxi_random_ask {
    int number;                /* i */
    const char *view;          /* "trips" or "dropoffs" */
    char ask[2048];            /* the ask, values as $n or literals */
    char sql[6144];            /* PostgreSQL over the raw tables */
    /* The number of groups the ask rolls up to before HAVING, OFFSET and
     * LIMIT: one row of one column over PostgreSQL. Straum refuses an ask
     * with more than its max_groups (422 too_many_groups), so this is what
     * says whether a refusal was the expected one. */
    char groups_sql[6144];
    const char *params[TAXI_RANDOM_MAX_PARAMS + 1]; /* NULL-terminated */
    int nparams;
    char param_buf[TAXI_RANDOM_MAX_PARAMS][48];
    /* What kind of ask it is, for reports: "pct" when it reads a
     * percentile, the time grouping ("", "bucket", "1 day", "month", ...),
     * the number of keys grouped, the range's hours (0: all time). */
    bool percentile;
    char time_group[16];
    int nkeys;
    int range_hours;
    bool off_edge, having, limited;
};

/* Fills *out with ask i of seed's sequence. Never fails. */
void taxi_random_ask(uint32_t seed, int i, struct taxi_random_ask *out);

/* A short description of an ask's shape ("trips pct 1 day x2 keys, 168 h"),
 * into buf. Returns buf. */
const char *taxi_random_shape(const struct taxi_random_ask *a, char *buf, int len);

#endif
