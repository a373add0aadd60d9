/* test_engine_sources.c -- long cells (VC_SOURCE_MIN_RUNS runs or more)
 * that groups keep as sources of a percentile (SPEC.md §6.1 "Value
 * counts"): where they are most of a block's decoded list, groups hold
 * the list itself rather than copies of their cells (exec.c hold_whole).
 * Over the store fixture's rides view with enough rides that a week's cell
 * holds more than a thousand distinct fares, each ask must answer as the
 * cells-only reference engine does (which holds no sources), and the
 * lists must have been held whole where the asks read week cells. */
#include "tests/unit/engine_fixture.h"

#include <criterion/criterion.h>

Test(engine_sources, long_cells_held_in_their_block_answer_as_the_cells_do)
{
    char dir[64];
    struct engine *e = fixture_rides_engine(dir, 17, 120000);
    struct engine *ref = fixture_cells_engine(dir);
    static const struct {
        const char *ask;
        bool whole; /* reads week cells whose long cells are most of their list
                       (else the list may or may not be held whole) */
    } asks[] = {
        {"SELECT zone, kind, median FROM rides WHERE bucket >= '2024-01-01 00:00:00+00' AND "
         "bucket < '2024-01-15 00:00:00+00' GROUP BY zone, kind", true},
        {"SELECT zone, median FROM rides WHERE bucket >= '2024-01-01 00:00:00+00' AND "
         "bucket < '2024-01-15 00:00:00+00' AND kind <> 'k1' GROUP BY zone", true},
        {"SELECT kind, n, median FROM rides WHERE bucket >= '2024-01-01 05:00:00+00' AND "
         "bucket < '2024-01-14 19:00:00+00' GROUP BY kind ORDER BY median DESC, kind", false},
        /* two zones of seven: their long cells are under three quarters
         * of the list decoded, so they are copied out of it */
        {"SELECT date_bin('7 days', bucket) AS w, zone, kind, median FROM rides "
         "WHERE zone IN (1, 3) GROUP BY w, zone, kind", false},
        {"SELECT date_trunc('week', bucket) AS w, zone, median FROM rides "
         "WHERE zone IN (1, 3) GROUP BY w, zone", false},
    };
    uint32_t held = 0;
    for (size_t i = 0; i < sizeof asks / sizeof asks[0]; i++) {
        struct ask_stats st = fixture_ask_same(e, ref, asks[i].ask);
        if (asks[i].whole)
            cr_assert_gt(st.lists_held_whole, 0, "%s", asks[i].ask);
        held += st.lists_held_whole;
    }
    cr_assert_gt(held, 0);
    engine_close(ref);
    engine_close(e);
    fixture_remove(dir);
}
