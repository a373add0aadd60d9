/* test_engine_taken_away.c -- a range read as wider buckets less their
 * edges (pieces taken away, SPEC.md §6.1), under a percentile. The cells
 * taken away are folded with their rows negated; a cell whose values are
 * all NULL holds no value-count runs, and when such a cell was the first
 * one taken away the ask failed with a 500 that said nothing (the negated
 * rows' buffer, never allocated for zero runs, read as a failure). Over
 * the store fixture's rides view: one zone, a ride a day at 10:00 with a
 * fare, and rides with a NULL fare in the hours the range leaves out at
 * both ends of its days. */
#include "base/decimal.h"
#include "engine/engine.h"
#include "tests/unit/store_fixture.h"

#include <criterion/criterion.h>
#include <stdlib.h>
#include <time.h>

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

/* New York days (EST in January: UTC - 5 h) by zone, a count and the lower
 * median fare, over rides at random hours: each day read as a UTC day less
 * its first five hours plus the next day's first five, stretches that are
 * one day's plus and the next day's minus, read once for both
 * (scan_piece.twin). Checked against the rides themselves after a load and
 * after a second commit that deletes some and adds others (delta blocks). */
enum { TWIN_DAYS = 14, TWIN_RIDES = 900, TWIN_ZONES = 3 };

struct twin_model {
    struct ride rides[2 * TWIN_RIDES];
    bool live[2 * TWIN_RIDES];
    int n;
};

static int cmp_fare(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

/* Every (New York day, zone) of live rides must be a row of the answer,
 * and the answer has no other rows. */
static void twin_check(struct engine *e, const struct twin_model *m)
{
    struct ask_stats stats = {0};
    struct ask_request req = {
        .ask = "SELECT date_trunc('day', bucket) AS d, zone, n, median FROM rides "
               "GROUP BY d, zone",
        .time_zone = "America/New_York",
        .stats = &stats,
    };
    struct buf out = {0};
    struct ask_error aerr = {0};
    cr_assert_eq(engine_ask(e, &req, &out, &aerr), 0, "%s %s", aerr.code, aerr.message);
    cr_assert_gt(stats.pieces_taken_away, 0, "days were read less their first hours");
    /* A day, its first hours taken away and the next day's added: three
     * pieces a day unpaired, two once each stretch serves two days (the
     * pieces read; those taken away are counted as planned). */
    cr_assert_leq(stats.pieces, 2 * stats.pieces_taken_away + 2, "%u pieces read, %u taken away",
                  stats.pieces, stats.pieces_taken_away);
    int rows = 0;
    for (int day = -1; day < TWIN_DAYS; day++)
        for (int zone = 0; zone < TWIN_ZONES; zone++) {
            int64_t fares[2 * TWIN_RIDES];
            int n = 0, nf = 0;
            for (int i = 0; i < m->n; i++) {
                const struct ride *r = &m->rides[i];
                int64_t local = r->at - 5 * HOUR_US - JAN1;
                int64_t d = local / DAY_US - (local < 0 && local % DAY_US != 0);
                if (!m->live[i] || r->zone != zone || d != day)
                    continue;
                n++;
                if (!r->fare_null)
                    fares[nf++] = r->fare;
            }
            if (n == 0)
                continue;
            rows++;
            char want[160], median[48] = "null";
            if (nf) {
                qsort(fares, (size_t)nf, sizeof *fares, cmp_fare);
                char text[44];
                decimal_format(fares[(nf + 1) / 2 - 1], 2, text, sizeof text);
                snprintf(median, sizeof median, "\"%s\"", text);
            }
            int64_t t = JAN1 + (int64_t)day * DAY_US;
            time_t secs = (time_t)(t / 1000000);
            struct tm tm;
            gmtime_r(&secs, &tm);
            snprintf(want, sizeof want, "[\"%04d-%02d-%02dT00:00:00-05:00\",%d,%d,%s]",
                     tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, zone, n, median);
            cr_assert(strstr(out.data, want) != NULL, "%s missing from %.*s", want,
                      (int)out.len, out.data);
        }
    int got = 0;
    for (const char *p = strstr(out.data, "\"rows\":["); p && (p = strstr(p + 1, "[\"2")); got++)
        ;
    cr_assert_eq(got, rows, "%.*s", (int)out.len, out.data);
    buf_free(&out);
}

/* Adds a ride to the store and the model. */
static void twin_add(struct store *s, struct twin_model *m, const struct ride *r)
{
    m->rides[m->n] = *r;
    m->live[m->n++] = true;
    fixture_apply(s, r, +1);
}

/* Commits at lsn, closes the store and checks the answer against m. */
static void twin_commit_and_check(struct store *s, const char *dir, const struct twin_model *m,
                                  uint64_t lsn)
{
    struct store_error err;
    cr_assert_eq(store_commit(s, &(struct store_position){.lsn = lsn}, &err), 0, "%s",
                 err.message);
    store_close(s);
    struct engine *e = engine_open(dir, NULL, &err);
    cr_assert_not_null(e, "%s", err.message);
    twin_check(e, m);
    engine_close(e);
}

Test(engine_taken_away, a_stretch_added_to_one_day_and_taken_from_the_next_is_read_once)
{
    char dir[64];
    struct store *s = fixture_create(dir);
    struct store_error err;
    static struct twin_model m;
    uint64_t rng = 7;
    for (int i = 0; i < TWIN_RIDES; i++) {
        struct ride r = {.at = JAN1 + fixture_rand(&rng) % (TWIN_DAYS * DAY_US),
                         .zone = fixture_rand(&rng) % TWIN_ZONES,
                         .kind = (int)(fixture_rand(&rng) % 5),
                         .fare = fixture_rand(&rng) % 6000 - 500,
                         .fare_null = fixture_rand(&rng) % 10 == 0,
                         .dist = 1.0};
        twin_add(s, &m, &r);
    }
    twin_commit_and_check(s, dir, &m, 1);

    /* A third deleted, as many added: delta blocks over the same days. */
    cr_assert_eq(store_open(dir, STORE_READ_WRITE, &s, &err), 0, "%s", err.message);
    store_set_fold_budget_us(s, 0); /* leave the deltas be, as far as a commit may */
    for (int i = 0; i < TWIN_RIDES; i += 3) {
        fixture_apply(s, &m.rides[i], -1);
        m.live[i] = false;
        struct ride r = m.rides[i];
        r.at = JAN1 + fixture_rand(&rng) % (TWIN_DAYS * DAY_US);
        r.fare = fixture_rand(&rng) % 6000 - 500;
        twin_add(s, &m, &r);
    }
    twin_commit_and_check(s, dir, &m, 2);
    fixture_remove(dir);
}
