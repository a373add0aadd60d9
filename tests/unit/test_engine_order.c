/* test_engine_order.c -- an answer without ORDER BY comes in group-key
 * order (SPEC.md §6.1 "Answers"): the bucket, then each key in GROUP BY's
 * order, text keys by their text in C collation. The rows are sorted by
 * their keys' ranks laid out once (answer.c sort_by_rank_tuples); the same
 * ask with that order written out is sorted by the general compare
 * (cmp_rows), and the two answers must be one. Over the store fixture's
 * rides view (zones 0 to 6, kinds "k0" to "k4", rides over two weeks),
 * inserted so that groups are made out of key order. */
#include "tests/unit/engine_fixture.h"

#include <criterion/criterion.h>

Test(engine_order, without_order_by_rows_come_in_key_order)
{
    char dir[64];
    struct engine *e = fixture_rides_engine(dir, 11, 4000);
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
        fixture_ask(e, pairs[i].plain, &a, NULL);
        fixture_ask(e, pairs[i].ordered, &b, NULL);
        cr_assert_str_eq(a.data, b.data, "%s", pairs[i].plain);
        buf_free(&a);
        buf_free(&b);
    }
    /* and that order is the keys': kind by its text first, then zone */
    struct buf a;
    fixture_ask(e, "SELECT kind, zone, n FROM rides GROUP BY kind, zone", &a, NULL);
    const char *k0z0 = strstr(a.data, "[\"k0\",0,"), *k0z6 = strstr(a.data, "[\"k0\",6,"),
               *k1z0 = strstr(a.data, "[\"k1\",0,"), *k4z6 = strstr(a.data, "[\"k4\",6,");
    cr_assert(k0z0 && k0z6 && k1z0 && k4z6, "%s", a.data);
    cr_assert(k0z0 < k0z6 && k0z6 < k1z0 && k1z0 < k4z6, "%s", a.data);
    buf_free(&a);
    engine_close(e);
    fixture_remove(dir);
}
