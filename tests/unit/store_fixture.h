/* store_fixture.h -- a test view, its types and deterministic rows, shared
 * by the store tests; and a reader that totals what a snapshot holds. */
#ifndef STRAUM_TESTS_STORE_FIXTURE_H
#define STRAUM_TESTS_STORE_FIXTURE_H

#include "store/store.h"

#include <criterion/criterion.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Two views over one fact table: "rides" keeps a text key, a numeric sum, a
 * float sum, a filtered count and value counts (percentile and distinct);
 * "zones" is keyed by nothing but a dim through a bound cell. */
#define FIXTURE_VIEWS                                                                   \
    "CREATE VIEW rides WITH (buckets = '1 hour, 1 day, 7 days') AS\n"                   \
    "SELECT date_bin('1 hour', r.at, timestamptz 'epoch') AS bucket, r.zone, r.kind,\n" \
    "  count(*) AS n, count(*) FILTER (WHERE r.fare > 10) AS big,\n"                    \
    "  sum(r.fare) AS fare, avg(r.dist) AS dist,\n"                                     \
    "  percentile_disc(0.5) WITHIN GROUP (ORDER BY r.fare) AS median,\n"                \
    "  count(DISTINCT r.kind) AS kinds\n"                                               \
    "FROM rides r GROUP BY 1, 2, 3;\n"                                                  \
    "CREATE VIEW by_borough WITH (buckets = '1 hour, 1 day') AS\n"                      \
    "SELECT date_bin('1 hour', r.at, timestamptz 'epoch') AS bucket, z.borough,\n"      \
    "  count(*) AS n FROM rides r JOIN zones z ON z.id = r.zone GROUP BY 1, 2;\n"

/* A generated ride. fare is in cents; NULL fares are fare_null. */
struct ride {
    int64_t at;     /* usec */
    int64_t zone;
    int kind;       /* 0..4, interned as "k0".."k4" */
    int64_t fare;
    bool fare_null;
    double dist;
};

static inline int64_t fixture_rand(uint64_t *state)
{
    *state = *state * 6364136223846793005ULL + 1442695040888963407ULL;
    return (int64_t)(*state >> 17);
}

/* Rides over two weeks in January 2024, a handful of zones and kinds. */
static inline struct ride fixture_ride(uint64_t *state)
{
    struct ride r;
    r.at = (1704067200LL + fixture_rand(state) % (14 * 86400)) * 1000000LL;
    r.zone = fixture_rand(state) % 7;
    r.kind = (int)(fixture_rand(state) % 5);
    r.fare = fixture_rand(state) % 6000 - 500;
    r.fare_null = fixture_rand(state) % 10 == 0;
    r.dist = (double)(fixture_rand(state) % 1000) / 8.0; /* exact in binary */
    return r;
}

static inline int fixture_fact_index(const struct sql_view *v, const char *name)
{
    for (int i = 0; i < v->nfact_columns; i++)
        if (strcmp(v->fact_columns[i].name, name) == 0)
            return i;
    return -1;
}

static inline struct store_column_type fixture_type_of(const char *name)
{
    if (strcmp(name, "at") == 0)
        return (struct store_column_type){STORE_TYPE_TIMESTAMP, 0, 1184};
    if (strcmp(name, "kind") == 0)
        return (struct store_column_type){STORE_TYPE_TEXT, 0, 25};
    if (strcmp(name, "fare") == 0)
        return (struct store_column_type){STORE_TYPE_NUMERIC, 2, 1700};
    if (strcmp(name, "dist") == 0)
        return (struct store_column_type){STORE_TYPE_FLOAT, 0, 701};
    return (struct store_column_type){STORE_TYPE_INT, 0, 23};
}

/* Dictionary ids of "k0".."k4" per view, interned when the store is made so
 * that the model can compute deltas without a writer (after a reopen). */
static int64_t fixture_kind_ids[2][5];

/* Creates a store for FIXTURE_VIEWS in a fresh temp dir (path into dir). */
static inline struct store *fixture_create(char dir[64])
{
    strcpy(dir, "/tmp/straum-store-XXXXXX");
    cr_assert_not_null(mkdtemp(dir));
    struct sql_error serr;
    struct sql_view_list *views = sql_parse_views(FIXTURE_VIEWS, &serr);
    cr_assert_not_null(views, "%s", serr.message);
    struct store_column_type types[2][8];
    struct store_view_types vt[2];
    for (int v = 0; v < views->nviews; v++) {
        for (int c = 0; c < views->views[v].nfact_columns; c++)
            types[v][c] = fixture_type_of(views->views[v].fact_columns[c].name);
        vt[v].fact = types[v];
    }
    struct store *s;
    struct store_error err;
    cr_assert_eq(store_create(dir, FIXTURE_VIEWS, vt, &s, &err), 0, "%s", err.message);
    for (int v = 0; v < views->nviews; v++) {
        int col = fixture_fact_index(&views->views[v], "kind");
        for (int k = 0; col >= 0 && k < 5; k++) {
            char kind[8];
            snprintf(kind, sizeof kind, "k%d", k);
            cr_assert_eq(store_dict_intern(s, v, col, kind, strlen(kind), &fixture_kind_ids[v][k],
                                           &err), 0, "%s", err.message);
        }
    }
    sql_view_list_free(views);
    /* Every fold a commit notes is done by that commit, whatever the
     * machine's load: tests that count delta blocks after a commit must
     * not depend on how fast it folds (the budget has its own test). */
    store_set_fold_budget_us(s, INT64_MAX);
    return s;
}

static inline int fixture_rm(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)flag;
    (void)ftw;
    return remove(path);
}

static inline void fixture_remove(const char *dir) { nftw(dir, fixture_rm, 8, FTW_DEPTH | FTW_PHYS); }

/* The delta of one ride for one view, sign +1 to add and -1 to take away.
 * Buffers are the caller's, large enough for the fixture views. */
struct fixture_delta {
    struct store_delta d;
    int64_t keys[4], counts[8];
    struct store_sum sums[4];
    struct store_vc_delta vcs[4];
};

static inline void fixture_delta(struct store *s, int view, const struct ride *r, int sign,
                                 struct fixture_delta *out)
{
    const struct sql_view *v = &store_views(s)->views[view];
    memset(out, 0, sizeof *out);
    int64_t kind_id = fixture_kind_ids[view][r->kind];
    for (int k = 0; k < v->ncell_keys; k++) {
        const char *name = v->fact_columns[v->cell_keys[k]].name;
        out->keys[k] = strcmp(name, "zone") == 0 ? r->zone : kind_id;
    }
    int fare_col = fixture_fact_index(v, "fare");
    for (int c = 0; c < v->ncounts; c++) {
        const struct sql_count_spec *cs = &v->counts[c];
        bool rows = cs->fact_column < 0 || cs->fact_column != fare_col || !r->fare_null;
        if (cs->filter >= 0) /* the fixture's only filter: fare > 10 (fare in units) */
            rows = !r->fare_null && r->fare > 1000;
        out->counts[c] = rows ? sign : 0;
    }
    for (int c = 0; c < v->nsums; c++) {
        if (v->sums[c].fact_column == fare_col)
            out->sums[c].exact = r->fare_null ? 0 : (__int128)r->fare * sign;
        else
            out->sums[c].real = r->dist * sign;
    }
    for (int c = 0; c < v->nvalue_counts; c++) {
        bool fare = v->value_counts[c].fact_column == fare_col;
        if (fare && r->fare_null)
            continue;
        out->vcs[out->d.nvcs++] = (struct store_vc_delta){c, fare ? r->fare : kind_id, sign};
    }
    out->d.view = view;
    out->d.time = r->at;
    out->d.keys = out->keys;
    out->d.counts = out->counts;
    out->d.sums = out->sums;
    out->d.vcs = out->vcs;
}

static inline void fixture_apply(struct store *s, const struct ride *r, int sign)
{
    struct store_error err;
    for (int v = 0; v < store_views(s)->nviews; v++) {
        struct fixture_delta fd;
        fixture_delta(s, v, r, sign, &fd);
        cr_assert_eq(store_apply(s, &fd.d, &err), 0, "%s", err.message);
    }
}

/* Applies n rides from the generator and commits them at lsn. */
static inline void fixture_commit_rides(struct store *s, uint64_t *rng, int n, uint64_t lsn)
{
    struct store_error err;
    for (int i = 0; i < n; i++) {
        struct ride r = fixture_ride(rng);
        fixture_apply(s, &r, +1);
    }
    cr_assert_eq(store_commit(s, &(struct store_position){.lsn = lsn}, &err), 0, "%s",
                 err.message);
}

/* Total rows (count 0) over every segment of a view and width. */
/* Calls fn on every segment of every view and width, raw (base and deltas
 * apart), in one snapshot. */
static inline void fixture_each_raw_segment(struct store *s,
                                            void (*fn)(const struct store_segment *, void *),
                                            void *arg)
{
    struct store_read *r;
    struct store_error err;
    cr_assert_eq(store_read_begin(s, &r, &err), 0, "%s", err.message);
    for (int v = 0; v < store_views(s)->nviews; v++)
        for (int w = 0; w < store_views(s)->views[v].nwidths; w++) {
            struct store_segment_iter it;
            struct store_segment seg;
            cr_assert_eq(store_segments_begin(r, v, w, INT64_MIN, INT64_MAX, &it, &err), 0);
            int rc;
            while ((rc = store_segments_next(&it, &seg, &err)) == 1) {
                cr_assert_leq(seg.ndeltas, STORE_MAX_DELTAS);
                cr_assert_eq(store_verify_segment(r, &seg, &err), 0, "%s", err.message);
                fn(&seg, arg);
            }
            cr_assert_eq(rc, 0, "%s", err.message);
            store_segments_end(&it);
        }
    store_read_end(r);
}

static inline void fixture_count_deltas(const struct store_segment *seg, void *n)
{
    *(int *)n += seg->ndeltas;
}

/* Delta blocks of every view and width (store.h). */
static inline int fixture_delta_blocks(struct store *s)
{
    int n = 0;
    fixture_each_raw_segment(s, fixture_count_deltas, &n);
    return n;
}

static inline int64_t fixture_total_rows(struct store_read *r, int view, int width)
{
    struct store_segment_iter it;
    struct store_segment seg;
    struct store_error err;
    int64_t total = 0;
    cr_assert_eq(store_segments_begin(r, view, width, INT64_MIN, INT64_MAX, &it, &err), 0);
    it.merged = true; /* whole cells */
    int rc;
    while ((rc = store_segments_next(&it, &seg, &err)) == 1) {
        int col = format_block_find(&seg.block, STORE_ROLE_COUNT, 0);
        cr_assert_geq(col, 0);
        uint32_t n = seg.block.info.ncells;
        int64_t *rows = malloc(8 * (n + 1));
        struct format_error ferr;
        cr_assert_eq(format_block_decode(&seg.block, col, rows, &ferr), 0, "%s", ferr.message);
        for (uint32_t i = 0; i < n; i++)
            total += rows[i];
        free(rows);
    }
    cr_assert_eq(rc, 0, "%s", err.message);
    store_segments_end(&it);
    return total;
}

#endif
