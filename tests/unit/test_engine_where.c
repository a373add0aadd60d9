/* test_engine_where.c -- conditions under OR and NOT whose leaves all read
 * one cell key are walked once per code of that key, not once per cell
 * (exec.where_key): the answers equal those of the same condition written
 * with IN, the stats say how many codes the tree was walked for, and a
 * tree over two keys is still walked per cell. Conditions that most rows
 * pass, in an ask grouped by no key, read the totals less the rows that
 * fail (exec.c subtract_failing): a key's marginal rows, or the cells
 * where the conditions read two keys. The answers equal the cells-only
 * engine's, after delta blocks too. Over the store fixture's
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

/* Each ask against the cells-only engine over dir; *subtracted adds up
 * the blocks read as totals less failing rows, which only the asks marked
 * may count. */
static void check_less_failing(struct engine *e, const char *dir, uint32_t *subtracted)
{
    struct engine *ref = fixture_cells_engine(dir);
    static const struct {
        const char *ask;
        int may; /* counts, exact sums and percentiles only, grouped by no key;
                    2: must, in some block (its failing cells are few) */
    } asks[] = {
        {"SELECT n, fare, median FROM rides WHERE zone <> 3", true},
        {"SELECT n, big, fare FROM rides WHERE zone NOT IN (1) AND "
         "bucket >= '2024-01-02 05:00:00+00' AND bucket < '2024-01-12 19:00:00+00'", true},
        {"SELECT date_trunc('day', bucket) AS d, n, fare, median FROM rides "
         "WHERE zone IS NOT NULL GROUP BY d", true},
        {"SELECT bucket, n, median FROM rides WHERE zone BETWEEN 1 AND 6 AND "
         "bucket >= '2024-01-03 00:00:00+00' AND bucket < '2024-01-05 00:00:00+00' "
         "GROUP BY bucket HAVING n > 2", true},
        {"SELECT date_bin('7 days', bucket) AS w, n, fare FROM rides WHERE kind <> 'k2' "
         "GROUP BY w ORDER BY fare DESC LIMIT 1", true},
        {"SELECT n FROM rides WHERE zone = 3", true}, /* most fail: the passing are folded */
        {"SELECT dist, n FROM rides WHERE zone <> 3", false},     /* a float sum */
        {"SELECT kinds, n FROM rides WHERE zone <> 3", false},    /* a distinct count */
        {"SELECT zone, n FROM rides WHERE zone <> 3 GROUP BY zone", false},
        /* Two keys: no rollup keeps both, the cells less the failing. */
        {"SELECT n, fare, median FROM rides WHERE zone <> 3 AND kind <> 'k9'", 2},
        {"SELECT date_trunc('day', bucket) AS d, n, median FROM rides "
         "WHERE zone <> 3 AND kind <> 'k1' GROUP BY d", true},
        {"SELECT n FROM rides WHERE zone <> 3 AND kind <> 'k1' GROUP BY kind", false},
    };
    for (size_t i = 0; i < sizeof asks / sizeof asks[0]; i++) {
        struct ask_stats st = fixture_ask_same(e, ref, asks[i].ask);
        if (!asks[i].may)
            cr_assert_eq(st.blocks_subtracted, 0, "%s", asks[i].ask);
        if (asks[i].may == 2)
            cr_assert_gt(st.blocks_subtracted, 0, "%s", asks[i].ask);
        *subtracted += st.blocks_subtracted;
    }
    engine_close(ref);
}

Test(engine_where, keys_most_rows_pass_read_as_the_totals_less_the_failing)
{
    char dir[64];
    struct engine *e = fixture_rides_engine(dir, 23, 20000);
    uint32_t subtracted = 0;
    check_less_failing(e, dir, &subtracted);
    cr_assert_gt(subtracted, 0);

    /* A third of the rides deleted and as many added: delta blocks, whose
     * rows subtract as their bases' add. */
    struct store *s;
    struct store_error err;
    cr_assert_eq(store_open(dir, STORE_READ_WRITE, &s, &err), 0, "%s", err.message);
    store_set_fold_budget_us(s, 0); /* leave the deltas be, as far as a commit may */
    uint64_t seed = 23, fresh = 99;
    for (int i = 0; i < 20000; i++) {
        struct ride r = fixture_ride(&seed);
        if (i % 3 == 0) {
            fixture_apply(s, &r, -1);
            struct ride n = fixture_ride(&fresh);
            fixture_apply(s, &n, +1);
        }
    }
    cr_assert_eq(store_commit(s, &(struct store_position){.lsn = 2}, &err), 0, "%s", err.message);
    cr_assert_gt(fixture_delta_blocks(s), 0);
    store_close(s);
    subtracted = 0;
    check_less_failing(e, dir, &subtracted);
    cr_assert_gt(subtracted, 0);
    engine_close(e);
    fixture_remove(dir);
}
