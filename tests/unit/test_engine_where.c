/* test_engine_where.c -- conditions under OR and NOT whose leaves all read
 * one cell key are walked once per code of that key, not once per cell
 * (exec.where_key): the answers equal those of the same condition written
 * with IN, the stats say how many codes the tree was walked for, and a
 * tree over two keys is still walked per cell. Over the store fixture's
 * rides view (zones 0 to 6, kinds "k0" to "k4"). */
#include "tests/unit/engine_fixture.h"

#include <criterion/criterion.h>

enum { NRIDES = 3000 };

Test(engine_where, one_key_trees_are_walked_once_per_code)
{
    char dir[64];
    struct engine *e = fixture_rides_engine(dir, 7, NRIDES);
    static const struct {
        const char *tree, *in;
    } pairs[] = {
        {"SELECT zone, n, fare, median FROM rides WHERE bucket >= '2024-01-01 03:00:00+00' AND "
         "bucket < '2024-01-14 21:00:00+00' AND (NOT (zone <> 1 AND zone <> 3) OR zone = 5) "
         "GROUP BY zone",
         "SELECT zone, n, fare, median FROM rides WHERE bucket >= '2024-01-01 03:00:00+00' AND "
         "bucket < '2024-01-14 21:00:00+00' AND zone IN (1, 3, 5) GROUP BY zone"},
        {"SELECT bucket, kind, n FROM rides WHERE kind = 'k1' OR NOT (kind <> 'k4') GROUP BY "
         "bucket, kind",
         "SELECT bucket, kind, n FROM rides WHERE kind IN ('k1', 'k4') GROUP BY bucket, kind"},
        {"SELECT bucket, n FROM rides WHERE zone = 2 AND NOT (zone = 2 OR zone IS NULL) "
         "GROUP BY bucket",
         "SELECT bucket, n FROM rides WHERE zone IN (-1) GROUP BY bucket"},
    };
    for (size_t i = 0; i < sizeof pairs / sizeof pairs[0]; i++) {
        struct buf a, b;
        struct ask_stats sa = {0}, sb = {0};
        fixture_ask(e, pairs[i].tree, &a, &sa);
        fixture_ask(e, pairs[i].in, &b, &sb);
        cr_assert_str_eq(a.data, b.data, "%s", pairs[i].tree);
        /* every cell in range read, the tree walked for each distinct code */
        cr_assert_gt(sa.cells, 4 * (uint64_t)sa.where_codes, "%s: %llu cells", pairs[i].tree, (unsigned long long)sa.cells);
        cr_assert(sa.where_codes > 0 && sa.where_codes <= 7, "%s: walked for %u codes",
                  pairs[i].tree, sa.where_codes);
        cr_assert_eq(sb.where_codes, 0, "IN is a leaf under AND");
        buf_free(&a);
        buf_free(&b);
    }
    /* Two keys: the verdict is not one key's, the tree is walked per cell. */
    struct buf a;
    struct ask_stats sa = {0};
    fixture_ask(e, "SELECT zone, n FROM rides WHERE zone = 1 OR kind = 'k2' GROUP BY zone", &a, &sa);
    cr_assert_eq(sa.where_codes, 0);
    cr_assert_gt(sa.cells, 7);
    buf_free(&a);
    engine_close(e);
    fixture_remove(dir);
}
