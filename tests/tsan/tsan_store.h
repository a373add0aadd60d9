/* tsan_store.h -- what the ThreadSanitizer programs share (they run without
 * Criterion, which does not run under TSan): a failure that exits, and a
 * small store of one view loaded in bulk mode, so that the load's drain and
 * encode jobs run on their threads while rows are staged.
 *
 * The view: hourly buckets kept at 1 hour and 1 day, a fact key k joined to
 * a dim z, a count, a sum and a median. Row i has k = i % 17, v = i % 1000,
 * and a time i * 37 s past 2024-01-01 00:00 UTC. */
#ifndef STRAUM_TESTS_TSAN_STORE_H
#define STRAUM_TESTS_TSAN_STORE_H

#include "store/store.h"
#include "tests/tsan/tsan_fail.h"

#include <ftw.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TSAN_T0 1704067200000000LL
#define TSAN_STEP_US 37000000LL

static const char tsan_views[] =
    "CREATE VIEW t WITH (buckets = '1 hour, 1 day') AS\n"
    "SELECT date_bin('1 hour', f.t, timestamptz 'epoch') AS bucket, f.k AS k, z.name AS name,\n"
    "       count(*) AS n, sum(f.v) AS v,\n"
    "       percentile_disc(0.5) WITHIN GROUP (ORDER BY f.v) AS med\n"
    "FROM public.f AS f LEFT OUTER JOIN public.z AS z ON z.id = f.k\n"
    "GROUP BY 1, 2, 3;\n";

/* Makes the store in a fresh temp dir (into dir) with nrows rows, staged
 * a day at a time with a hand-off between days (bulk mode), and 17 dim
 * rows. */
static void tsan_make_store(char dir[64], int nrows)
{
    strcpy(dir, "/tmp/straum-tsan-XXXXXX");
    if (!mkdtemp(dir))
        tsan_fail("mkdtemp");
    struct sql_error serr;
    struct sql_view_list *views = sql_parse_views(tsan_views, &serr);
    if (!views)
        tsan_fail("%s", serr.message);
    const struct sql_view *v = &views->views[0];
    struct store_column_type types[8];
    for (int c = 0; c < v->nfact_columns; c++)
        types[c] = strcmp(v->fact_columns[c].name, "t") == 0
                       ? (struct store_column_type){STORE_TYPE_TIMESTAMP, 0, 1184}
                       : (struct store_column_type){STORE_TYPE_INT, 0, 23};
    sql_view_list_free(views);
    struct store_view_types vt = {types};
    struct store *s;
    struct store_error err;
    if (store_create(dir, tsan_views, &vt, &s, &err) || store_set_bulk(s, true, &err))
        tsan_fail("%s", err.message);
    v = &store_views(s)->views[0];
    int64_t day = -1;
    for (int i = 0; i < nrows; i++) {
        int64_t t = TSAN_T0 + i * TSAN_STEP_US;
        if (t / 86400000000LL != day) {
            if (day >= 0 && store_hand_off_cold(s, &err))
                tsan_fail("hand-off: %s", err.message);
            day = t / 86400000000LL;
        }
        int64_t keys[4], counts[4], value = i % 1000;
        struct store_sum sums[4];
        struct store_vc_delta vcs[4];
        memset(sums, 0, sizeof sums);
        for (int k = 0; k < v->ncell_keys; k++)
            keys[k] = i % 17;
        for (int c = 0; c < v->ncounts; c++)
            counts[c] = 1;
        for (int c = 0; c < v->nsums; c++)
            sums[c].exact = value;
        for (int c = 0; c < v->nvalue_counts; c++)
            vcs[c] = (struct store_vc_delta){c, value, 1};
        struct store_delta d = {.view = 0, .time = t, .keys = keys, .counts = counts,
                                .sums = sums, .vcs = vcs, .nvcs = v->nvalue_counts};
        if (store_apply(s, &d, &err))
            tsan_fail("apply: %s", err.message);
    }
    for (int64_t k = 0; k < 17; k++) {
        char name[16];
        snprintf(name, sizeof name, "zone-%lld", (long long)k);
        struct store_dim_value val = {false, name, strlen(name)};
        if (store_projection_put(s, 0, 0, k, &val, &err))
            tsan_fail("%s", err.message);
    }
    struct store_position pos = {.lsn = 1};
    if (store_commit_cold(s, &pos, &err) || store_set_bulk(s, false, &err) ||
        store_commit(s, &pos, &err))
        tsan_fail("commit: %s", err.message);
    store_close(s);
}

static int tsan_rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st, (void)flag, (void)ftw;
    return remove(path);
}

static void tsan_remove_store(const char *dir) { nftw(dir, tsan_rm_entry, 8, FTW_DEPTH | FTW_PHYS); }

#endif
