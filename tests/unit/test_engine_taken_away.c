/* test_engine_taken_away.c -- a range read as wider buckets less their
 * edges (pieces taken away, SPEC.md §6.1), under a percentile. The cells
 * taken away are folded with their rows negated; a cell whose values are
 * all NULL holds no value-count runs, and when such a cell was the first
 * one taken away the ask failed with a 500 that said nothing (the negated
 * rows' buffer, never allocated for zero runs, read as a failure). Over
 * the store fixture's rides view: one zone, a ride a day at 10:00 with a
 * fare, and rides with a NULL fare in the hours the range leaves out at
 * both ends of its days. */
#include "engine/engine.h"
#include "tests/unit/store_fixture.h"

#include <criterion/criterion.h>

#define DAY_US (86400LL * 1000000LL)
#define HOUR_US (3600LL * 1000000LL)
#define JAN1 (1704067200LL * 1000000LL)

static struct ride ride_at(int64_t at, int64_t fare, bool fare_null)
{
    return (struct ride){.at = at, .zone = 1, .kind = 0, .fare = fare, .fare_null = fare_null,
                         .dist = 1.0};
}

Test(engine_taken_away, a_cell_taken_away_with_no_values_answers)
{
    char dir[64];
    struct store *s = fixture_create(dir);
    struct store_error err;
    for (int day = 0; day < 14; day++) {
        struct ride r = ride_at(JAN1 + day * DAY_US + 10 * HOUR_US, 100 * (day + 1), false);
        fixture_apply(s, &r, +1);
        /* NULL fares only, in the first and last hours of every day: the
         * range below leaves them out at its ends. */
        r = ride_at(JAN1 + day * DAY_US + HOUR_US / 2, 0, true);
        fixture_apply(s, &r, +1);
        r = ride_at(JAN1 + day * DAY_US + 23 * HOUR_US + HOUR_US / 2, 0, true);
        fixture_apply(s, &r, +1);
    }
    cr_assert_eq(store_commit(s, &(struct store_position){.lsn = 1}, &err), 0, "%s",
                 err.message);
    store_close(s);

    struct engine *e = engine_open(dir, NULL, &err);
    cr_assert_not_null(e, "%s", err.message);
    /* Jan 2 01:00 to Jan 9 23:00: 22 rides, the fares of Jan 2 to Jan 9
     * (2.00 to 9.00; the lower median of eight is the fourth, 5.00) and
     * fourteen NULL fares, at 00:30 of Jan 3 to 9 and 23:30 of Jan 2 to 8. */
    struct ask_stats stats = {0};
    struct ask_request req = {
        .ask = "SELECT n, median FROM rides WHERE bucket >= '2024-01-02 01:00:00+00' AND "
               "bucket < '2024-01-09 23:00:00+00' AND zone = 1",
        .stats = &stats,
    };
    struct buf out = {0};
    struct ask_error aerr = {0};
    int rc = engine_ask(e, &req, &out, &aerr);
    cr_assert_eq(rc, 0, "%s %s (status %d)", aerr.code, aerr.message, aerr.status);
    cr_assert_gt(stats.pieces_taken_away, 0, "the range was read with pieces taken away");
    cr_assert(strstr(out.data, "\"rows\":[[22,\"5.00\"]]") != NULL, "%.*s", (int)out.len,
              out.data);
    buf_free(&out);
    engine_close(e);
    fixture_remove(dir);
}
