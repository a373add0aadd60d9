/* test_engine_order.c -- an answer without ORDER BY comes in group-key
 * order (SPEC.md §6.1 "Answers"): the bucket, then each key in GROUP BY's
 * order, text keys by their text in C collation. The rows are sorted by
 * their keys' ranks laid out once (answer.c sort_by_rank_tuples); the same
 * ask with that order written out is sorted by the general compare
 * (cmp_rows), and the two answers must be one. Over the store fixture's
 * rides view (zones 0 to 6, kinds "k0" to "k4", rides over two weeks),
 * inserted so that groups are made out of key order. */
#include "engine/engine.h"
#include "tests/unit/store_fixture.h"

#include <criterion/criterion.h>

static struct engine *rides_engine(char dir[64])
{
    struct store *s = fixture_create(dir);
    struct store_error err;
    uint64_t state = 11;
    for (int i = 0; i < 4000; i++) {
        struct ride r = fixture_ride(&state);
        fixture_apply(s, &r, +1);
    }
    cr_assert_eq(store_commit(s, &(struct store_position){.lsn = 1}, &err), 0, "%s",
                 err.message);
    store_close(s);
    struct engine *e = engine_open(dir, &(struct engine_limits){0}, &err);
    cr_assert_not_null(e, "%s", err.message);
    return e;
}

static void ask(struct engine *e, const char *text, struct buf *out)
{
    struct ask_request req = {.ask = text};
    struct ask_error err = {0};
    *out = (struct buf){0};
    cr_assert_eq(engine_ask(e, &req, out, &err), 0, "%s: %s %s", text, err.code, err.message);
}

Test(engine_order, without_order_by_rows_come_in_key_order)
{
    char dir[64];
    struct engine *e = rides_engine(dir);
    static const struct {
        const char *plain, *ordered;
    } pairs[] = {
        {"SELECT zone, kind, n FROM rides GROUP BY zone, kind",
         "SELECT zone, kind, n FROM rides GROUP BY zone, kind ORDER BY zone, kind"},
        {"SELECT kind, zone, n, fare FROM rides GROUP BY kind, zone",
         "SELECT kind, zone, n, fare FROM rides GROUP BY kind, zone ORDER BY kind, zone"},
        {"SELECT bucket, kind, zone, n FROM rides WHERE bucket >= '2024-01-03 00:00:00+00' AND "
         "bucket < '2024-01-05 00:00:00+00' GROUP BY bucket, kind, zone",
         "SELECT bucket, kind, zone, n FROM rides WHERE bucket >= '2024-01-03 00:00:00+00' AND "
         "bucket < '2024-01-05 00:00:00+00' GROUP BY bucket, kind, zone "
         "ORDER BY bucket, kind, zone"},
        {"SELECT date_trunc('day', bucket) AS d, kind, n FROM rides GROUP BY d, kind",
         "SELECT date_trunc('day', bucket) AS d, kind, n FROM rides GROUP BY d, kind "
         "ORDER BY d, kind"},
    };
    for (size_t i = 0; i < sizeof pairs / sizeof pairs[0]; i++) {
        struct buf a, b;
        ask(e, pairs[i].plain, &a);
        ask(e, pairs[i].ordered, &b);
        cr_assert_str_eq(a.data, b.data, "%s", pairs[i].plain);
        buf_free(&a);
        buf_free(&b);
    }
    /* and that order is the keys': kind by its text first, then zone */
    struct buf a;
    ask(e, "SELECT kind, zone, n FROM rides GROUP BY kind, zone", &a);
    const char *k0z0 = strstr(a.data, "[\"k0\",0,"), *k0z6 = strstr(a.data, "[\"k0\",6,"),
               *k1z0 = strstr(a.data, "[\"k1\",0,"), *k4z6 = strstr(a.data, "[\"k4\",6,");
    cr_assert(k0z0 && k0z6 && k1z0 && k4z6, "%s", a.data);
    cr_assert(k0z0 < k0z6 && k0z6 < k1z0 && k1z0 < k4z6, "%s", a.data);
    buf_free(&a);
    engine_close(e);
    fixture_remove(dir);
}
