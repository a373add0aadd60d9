/* runs.c -- the store's run lists merged (base/runs.h), failures as store
 * errors.
 *
 * Rollups merge the runs of many cells into a family row's (rollup.c), and
 * the staging turns a cell's staged rows into runs (staging.c). */
#include "store/internal.h"

int64_t store_runs_merge(struct code_run *runs, size_t n, struct store_error *err)
{
    int64_t kept = code_runs_merge(runs, n);
    if (kept == -2)
        return store_fail(err, "a value count overflowed");
    if (kept < 0)
        return store_fail(err, "out of memory");
    return kept;
}
