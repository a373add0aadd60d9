/* test_store_model.c -- the writer against an in-memory model.
 *
 * Random batches of inserts, deletes, updates and truncates go to both the
 * store and a plain list of the rows present. After every commit, every cell
 * of every width read back from the store must equal the cells the model
 * aggregates from scratch: counts, exact and float sums, value counts. */
#include "tests/unit/store_fixture.h"

#include <inttypes.h>
#include <lmdb.h>
#include <sys/stat.h>

/* A cell as compared: bucket start, keys, accumulators, value-count runs. */
struct flat_cell {
    int64_t bucket;
    int64_t keys[4];
    int64_t counts[8];
    __int128 exact[4];
    double real[4];
    int64_t vc_codes[2][128];
    int64_t vc_rows[2][128];
    int vc_n[2];
};

static int flat_cmp(const void *a, const void *b, void *nkeys)
{
    const struct flat_cell *x = a, *y = b;
    if (x->bucket != y->bucket)
        return x->bucket < y->bucket ? -1 : 1;
    for (int i = 0; i < *(int *)nkeys; i++)
        if (x->keys[i] != y->keys[i])
            return x->keys[i] < y->keys[i] ? -1 : 1;
    return 0;
}

static int64_t floor_to(int64_t t, int64_t w) { return t >= 0 ? t / w * w : -((-t + w - 1) / w) * w; }

static void vc_add(struct flat_cell *c, int vc, int64_t code, int64_t rows)
{
    int i = 0;
    while (i < c->vc_n[vc] && c->vc_codes[vc][i] < code)
        i++;
    if (i < c->vc_n[vc] && c->vc_codes[vc][i] == code) {
        c->vc_rows[vc][i] += rows;
        return;
    }
    cr_assert_lt(c->vc_n[vc], 128);
    memmove(&c->vc_codes[vc][i + 1], &c->vc_codes[vc][i], 8 * (size_t)(c->vc_n[vc] - i));
    memmove(&c->vc_rows[vc][i + 1], &c->vc_rows[vc][i], 8 * (size_t)(c->vc_n[vc] - i));
    c->vc_codes[vc][i] = code;
    c->vc_rows[vc][i] = rows;
    c->vc_n[vc]++;
}

/* What the model says the cells of (view, width) are, sorted. */
static struct flat_cell *model_cells(struct store *s, int view, int width, const struct ride *rides,
                                     int nrides, int *ncells)
{
    const struct sql_view *v = &store_views(s)->views[view];
    struct flat_cell *cells = calloc((size_t)nrides + 1, sizeof *cells);
    int n = 0, nkeys = v->ncell_keys;
    for (int i = 0; i < nrides; i++) {
        struct fixture_delta fd;
        fixture_delta(s, view, &rides[i], 1, &fd);
        struct flat_cell key = {.bucket = floor_to(rides[i].at, v->widths[width])};
        memcpy(key.keys, fd.keys, sizeof key.keys);
        struct flat_cell *c = NULL;
        for (int k = 0; k < n && !c; k++)
            if (flat_cmp(&cells[k], &key, &nkeys) == 0)
                c = &cells[k];
        if (!c) {
            c = &cells[n++];
            *c = key;
        }
        for (int k = 0; k < v->ncounts; k++)
            c->counts[k] += fd.counts[k];
        for (int k = 0; k < v->nsums; k++) {
            c->exact[k] += fd.sums[k].exact;
            c->real[k] += fd.sums[k].real;
        }
        for (int k = 0; k < fd.d.nvcs; k++)
            vc_add(c, fd.vcs[k].vc, fd.vcs[k].code, fd.vcs[k].delta);
    }
    qsort_r(cells, (size_t)n, sizeof *cells, flat_cmp, &nkeys);
    *ncells = n;
    return cells;
}

static int64_t *decode_i64(const struct format_block *b, int role, int index, uint32_t n)
{
    int col = format_block_find(b, (uint16_t)role, (uint16_t)index);
    cr_assert_geq(col, 0, "role %d index %d missing", role, index);
    int64_t *a = malloc(8 * ((size_t)n + 1));
    struct format_error ferr;
    cr_assert_eq(format_block_decode(b, col, a, &ferr), 0, "%s", ferr.message);
    return a;
}

/* What the store holds for (view, width), in segment order. */
static struct flat_cell *store_cells(struct store *s, struct store_read *r, int view, int width,
                                     int *ncells)
{
    const struct sql_view *v = &store_views(s)->views[view];
    const struct store_column_type *types = store_fact_types(s, view);
    struct store_segment_iter it;
    struct store_segment seg;
    struct store_error err;
    int cap = 16, n = 0;
    struct flat_cell *cells = calloc((size_t)cap, sizeof *cells);
    cr_assert_eq(store_segments_begin(r, view, width, INT64_MIN, INT64_MAX, &it, &err), 0);
    it.merged = true; /* whole cells */
    int rc;
    while ((rc = store_segments_next(&it, &seg, &err)) == 1) {
        cr_assert_eq(store_verify_segment(r, &seg, &err), 0, "%s", err.message);
        uint32_t m = seg.block.info.ncells;
        if (n + (int)m > cap) {
            cap = (n + (int)m) * 2;
            cells = realloc(cells, sizeof *cells * (size_t)cap);
        }
        memset(cells + n, 0, sizeof *cells * m);
        int64_t *bucket = decode_i64(&seg.block, STORE_ROLE_BUCKET, 0, m);
        for (uint32_t i = 0; i < m; i++)
            cells[n + (int)i].bucket = seg.span_start + bucket[i] * v->widths[width];
        free(bucket);
        for (int k = 0; k < v->ncell_keys; k++) {
            int64_t *a = decode_i64(&seg.block, STORE_ROLE_KEY, k, m);
            for (uint32_t i = 0; i < m; i++)
                cells[n + (int)i].keys[k] = a[i];
            free(a);
        }
        for (int k = 0; k < v->ncounts; k++) {
            int64_t *a = decode_i64(&seg.block, STORE_ROLE_COUNT, k, m);
            for (uint32_t i = 0; i < m; i++)
                cells[n + (int)i].counts[k] = a[i];
            free(a);
        }
        for (int k = 0; k < v->nsums; k++) {
            int col = format_block_find(&seg.block, STORE_ROLE_SUM, (uint16_t)k);
            bool real = types[v->sums[k].fact_column].type == STORE_TYPE_FLOAT;
            char *a = malloc(16 * (size_t)m + 16);
            struct format_error ferr;
            cr_assert_eq(format_block_decode(&seg.block, col, a, &ferr), 0, "%s", ferr.message);
            for (uint32_t i = 0; i < m; i++) {
                if (real)
                    memcpy(&cells[n + (int)i].real[k], a + 8 * i, 8);
                else
                    memcpy(&cells[n + (int)i].exact[k], a + 16 * i, 16);
            }
            free(a);
        }
        for (int k = 0; k < v->nvalue_counts; k++) {
            int64_t *off = decode_i64(&seg.block, STORE_ROLE_VC_OFFSETS, k, m + 1);
            int64_t *codes = decode_i64(&seg.block, STORE_ROLE_VC_VALUES, k, (uint32_t)off[m]);
            int64_t *rows = decode_i64(&seg.block, STORE_ROLE_VC_COUNTS, k, (uint32_t)off[m]);
            for (uint32_t i = 0; i < m; i++)
                for (int64_t j = off[i]; j < off[i + 1]; j++)
                    vc_add(&cells[n + (int)i], k, codes[j], rows[j]);
            free(off);
            free(codes);
            free(rows);
        }
        n += (int)m;
    }
    cr_assert_eq(rc, 0, "%s", err.message);
    store_segments_end(&it);
    *ncells = n;
    return cells;
}

static void compare(struct store *s, const struct ride *rides, int nrides, const char *when)
{
    struct store_read *r;
    struct store_error err;
    cr_assert_eq(store_read_begin(s, &r, &err), 0, "%s", err.message);
    for (int v = 0; v < store_views(s)->nviews; v++) {
        const struct sql_view *view = &store_views(s)->views[v];
        for (int w = 0; w < view->nwidths; w++) {
            int ne, ng;
            struct flat_cell *want = model_cells(s, v, w, rides, nrides, &ne);
            struct flat_cell *got = store_cells(s, r, v, w, &ng);
            cr_assert_eq(ng, ne, "%s: view %s width %d: %d cells, model %d", when, view->name, w,
                         ng, ne);
            for (int i = 0; i < ne; i++) {
                cr_assert_eq(got[i].bucket, want[i].bucket, "%s: cell %d bucket", when, i);
                cr_assert_arr_eq(got[i].keys, want[i].keys, sizeof got[i].keys);
                cr_assert_arr_eq(got[i].counts, want[i].counts, sizeof got[i].counts,
                                 "%s: view %s width %d cell %d counts", when, view->name, w, i);
                cr_assert(memcmp(got[i].exact, want[i].exact, sizeof got[i].exact) == 0,
                          "%s: exact sums differ", when);
                for (int k = 0; k < 4; k++)
                    cr_assert_float_eq(got[i].real[k], want[i].real[k], 1e-6,
                                       "float sums: exact for these binary fractions up to order");
                for (int k = 0; k < 2; k++) {
                    cr_assert_eq(got[i].vc_n[k], want[i].vc_n[k], "%s: value count runs", when);
                    cr_assert_arr_eq(got[i].vc_codes[k], want[i].vc_codes[k], 8 * (size_t)want[i].vc_n[k]);
                    cr_assert_arr_eq(got[i].vc_rows[k], want[i].vc_rows[k], 8 * (size_t)want[i].vc_n[k]);
                }
            }
            free(want);
            free(got);
        }
    }
    store_read_end(r);
}

/* Random batches, each compared with the model after its commit. Rows are
 * staged and summed per finest cell (store/staging.c), drained every few
 * rows by the small cache budget and at each commit; deletes, updates and
 * a truncate go through the same staging, in bulk mode and out of it. */
static void random_batches(bool bulk){
    char dir[64];
    struct store *s = fixture_create(dir);
    struct store_error err;
    enum { MAX_RIDES = 1500 };
    struct ride *rides = calloc(MAX_RIDES, sizeof *rides);
    int n = 0;
    uint64_t rng = 42;
    int deltas_seen = 0;
    store_set_cache_bytes(s, 64 << 10); /* small: segments are evicted and reloaded */
    store_set_bulk(s, bulk, &err);
    for (int batch = 1; batch <= 40; batch++) {
        int ops = 1 + (int)(fixture_rand(&rng) % 60);
        for (int op = 0; op < ops; op++) {
            int kind = (int)(fixture_rand(&rng) % 10);
            if (kind < 6 && n < MAX_RIDES) { /* insert */
                rides[n] = fixture_ride(&rng);
                fixture_apply(s, &rides[n++], +1);
            } else if (kind < 8 && n > 0) { /* delete */
                int i = (int)(fixture_rand(&rng) % n);
                fixture_apply(s, &rides[i], -1);
                rides[i] = rides[--n];
            } else if (n > 0) { /* update: every column may move */
                int i = (int)(fixture_rand(&rng) % n);
                fixture_apply(s, &rides[i], -1);
                struct ride moved = fixture_ride(&rng);
                if (fixture_rand(&rng) % 2)
                    moved.at = rides[i].at; /* same bucket, other keys or values */
                rides[i] = moved;
                fixture_apply(s, &rides[i], +1);
            }
        }
        if (batch == 25) { /* TRUNCATE of the fact table, then more rows */
            for (int v = 0; v < store_views(s)->nviews; v++)
                cr_assert_eq(store_truncate_view(s, v, &err), 0, "%s", err.message);
            n = 0;
            for (int k = 0; k < 20; k++) {
                rides[n] = fixture_ride(&rng);
                fixture_apply(s, &rides[n++], +1);
            }
        }
        struct store_position pos = {.lsn = (uint64_t)batch * 100, .commit_time = batch};
        cr_assert_eq(store_commit(s, &pos, &err), 0, "batch %d: %s", batch, err.message);
        char when[32];
        snprintf(when, sizeof when, "after batch %d", batch);
        compare(s, rides, n, when);
        deltas_seen += fixture_delta_blocks(s);
        if (batch % 10 == 0) { /* folding the deltas changes no cell */
            int left;
            cr_assert_eq(store_compact(s, INT64_MAX, true, &left, &err), 0, "%s", err.message);
            cr_assert_eq(left, 0);
            cr_assert_eq(fixture_delta_blocks(s), 0);
            snprintf(when, sizeof when, "compacted after batch %d", batch);
            compare(s, rides, n, when);
        }
    }
    /* In bulk mode too: a load that comes back to a segment it wrote adds
     * a delta rather than encoding the segment whole again. */
    cr_assert_gt(deltas_seen, 0, "small batches over stored segments wrote delta blocks");
    store_close(s);

    /* What was committed is what a fresh reader sees. */
    cr_assert_eq(store_open(dir, STORE_READ_ONLY, &s, &err), 0, "%s", err.message);
    compare(s, rides, n, "after reopen");
    struct store_read *r;
    struct store_catalog cat;
    cr_assert_eq(store_read_begin(s, &r, &err), 0);
    cr_assert_eq(store_read_catalog(r, &cat, &err), 0, "%s", err.message);
    cr_assert_eq(cat.position.lsn, 4000);
    cr_assert_eq(cat.format_version, STORE_FORMAT_VERSION);
    cr_assert_eq(cat.views_len, strlen(FIXTURE_VIEWS));
    store_read_end(r);
    store_close(s);
    free(rides);
    fixture_remove(dir);
}

Test(store_model, random_batches_equal_the_model) { random_batches(false); }

Test(store_model, random_bulk_batches_equal_the_model) { random_batches(true); }

/* A load in time order: after each partition a hand-off
 * (store_hand_off_cold) drains it, and encodes the segments the partition
 * before did not touch, on other threads while the next partition is
 * staged, and a commit (store_commit_cold) now and then drains on the
 * caller's thread; the next hand-off or commit writes what was encoded. Rows four
 * days late go back to such segments before that, starting overlays; a
 * small cache (cache_kib) also spills meanwhile. Had the overlays been
 * merged with the store before the encode job was written (load_settle),
 * every variant would lose cells (tried). The last commit leaves the
 * model's cells, also when bulk mode is left with a job in flight. */
static void load_with_late_rows(size_t cache_kib, bool leave_bulk_in_flight)
{
    char dir[64];
    struct store *s = fixture_create(dir);
    struct store_error err;
    enum { DAYS = 60, PER_DAY = 150, LATE = 12 };
    struct ride *rides = calloc(DAYS * (PER_DAY + LATE), sizeof *rides);
    int n = 0;
    uint64_t rng = 23;
    if (cache_kib)
        store_set_cache_bytes(s, cache_kib << 10);
    store_set_bulk(s, true, &err);
    for (int day = 0; day < DAYS; day++) {
        for (int i = 0; day >= 4 && i < LATE; i++) { /* first, so their overlay is spilled first */
            rides[n] = fixture_ride(&rng);
            rides[n].at = (1704067200LL + (day - 4) * 86400LL + fixture_rand(&rng) % 86400) * 1000000LL;
            fixture_apply(s, &rides[n++], +1);
        }
        for (int i = 0; i < PER_DAY; i++) {
            rides[n] = fixture_ride(&rng);
            rides[n].at = (1704067200LL + day * 86400LL + fixture_rand(&rng) % 86400) * 1000000LL;
            fixture_apply(s, &rides[n++], +1);
        }
        if (day % 3 == 2) { /* and some go again, from a partition handed off */
            int gone = n - PER_DAY - 1;
            fixture_apply(s, &rides[gone], -1);
            rides[gone] = rides[--n];
        }
        /* A hand-off after each partition, a commit now and then (as
         * straum-ingest's load does when the writer holds enough). */
        int rc = day % 4 == 3 ? store_commit_cold(s, &(struct store_position){0}, &err)
                              : store_hand_off_cold(s, &err);
        cr_assert_eq(rc, 0, "day %d: %s", day, err.message);
    }
    if (leave_bulk_in_flight) {
        cr_assert_eq(store_set_bulk(s, false, &err), 0, "%s", err.message);
        cr_assert_eq(store_commit(s, &(struct store_position){.lsn = 7}, &err), 0, "%s", err.message);
    } else {
        cr_assert_eq(store_commit(s, &(struct store_position){.lsn = 7}, &err), 0, "%s", err.message);
        cr_assert_eq(store_set_bulk(s, false, &err), 0, "%s", err.message);
    }
    compare(s, rides, n, "after the last commit");
    /* Late rows went back to segments written already: deltas, which a
     * fold (as straum-ingest's after its load) makes bases again. */
    cr_assert_gt(fixture_delta_blocks(s), 0, "late rows to written segments are delta blocks");
    int left;
    cr_assert_eq(store_compact(s, INT64_MAX, true, &left, &err), 0, "%s", err.message);
    cr_assert_eq(fixture_delta_blocks(s), 0);
    compare(s, rides, n, "after folding");
    store_close(s);
    cr_assert_eq(store_open(dir, STORE_READ_ONLY, &s, &err), 0, "%s", err.message);
    compare(s, rides, n, "after reopen");
    store_close(s);
    free(rides);
    fixture_remove(dir);
}

Test(store_model, a_load_encodes_beside_its_rows_and_late_rows_find_its_segments)
{
    load_with_late_rows(0, false);
}

Test(store_model, late_rows_spilled_while_their_segment_is_encoded_are_kept)
{
    load_with_late_rows(96, false);
}

Test(store_model, leaving_bulk_mode_writes_a_job_in_flight) { load_with_late_rows(0, true); }

/* Commits round (at position 1 + round) and compares the store with the
 * model of the n rides. */
static void commit_round(struct store *s, const struct ride *rides, int n, int round)
{
    struct store_error err;
    cr_assert_eq(store_commit(s, &(struct store_position){.lsn = 1 + (uint64_t)round}, &err), 0,
                 "%s", err.message);
    char when[32];
    snprintf(when, sizeof when, "after round %d", round);
    compare(s, rides, n, when);
}

/* Thousands of rows in a few cells: many rows per finest cell, so cells
 * take their value counts as long sorted run lists (the merge in
 * store/cellmap.c) rather than one run at a time, and deletes make runs
 * cancel to nothing; in bulk mode and out of it. */
static void crowded_cells(bool bulk)
{
    char dir[64];
    struct store *s = fixture_create(dir);
    struct store_error err;
    enum { FIRST = 3000, MORE = 1000 };
    struct ride *rides = calloc(FIRST + MORE, sizeof *rides);
    uint64_t rng = 7;
    store_set_bulk(s, bulk, &err);
    int n = 0;
    for (int round = 0; round < 3; round++) {
        if (round == 1) /* every other ride goes */
            for (int i = n - 1; i >= 0; i -= 2) {
                fixture_apply(s, &rides[i], -1);
                rides[i] = rides[--n];
            }
        if (round == 2) /* all but ten go */
            while (n > 10)
                fixture_apply(s, &rides[--n], -1);
        for (int i = 0; round < 2 && i < (round ? MORE : FIRST); i++) {
            rides[n] = fixture_ride(&rng);
            rides[n].at = (1704067200LL + fixture_rand(&rng) % (3 * 3600)) * 1000000LL;
            rides[n].zone %= 2;
            rides[n].fare %= 60;
            fixture_apply(s, &rides[n++], +1);
        }
        commit_round(s, rides, n, round);
    }
    store_close(s);
    free(rides);
    fixture_remove(dir);
}

Test(store_model, crowded_cells_equal_the_model) { crowded_cells(false); }

Test(store_model, crowded_bulk_cells_equal_the_model) { crowded_cells(true); }

/* A ride added with each value-count change written as five changes of
 * +sign and four of -sign: more than a staged row holds (twice the view's
 * value counts), so the store stages it as several rows of one cell, and a
 * lost one would leave a value's rows off by one. */
static void apply_in_many_changes(struct store *s, const struct ride *r, int sign)
{
    struct store_error err;
    for (int v = 0; v < store_views(s)->nviews; v++) {
        struct fixture_delta fd;
        fixture_delta(s, v, r, sign, &fd);
        struct store_vc_delta many[4 * 9];
        int n = 0;
        for (int i = 0; i < fd.d.nvcs; i++)
            for (int k = 0; k < 9; k++)
                many[n++] = (struct store_vc_delta){fd.vcs[i].vc, fd.vcs[i].code, k < 5 ? sign : -sign};
        fd.d.vcs = many;
        fd.d.nvcs = n;
        cr_assert_eq(store_apply(s, &fd.d, &err), 0, "%s", err.message);
    }
}

/* A ride whose fare is one of 119 (what the model's cells hold). */
static struct ride ride_of_few_fares(uint64_t *rng)
{
    struct ride r = fixture_ride(rng);
    r.fare %= 60;
    return r;
}

/* Batches of thousands of finest cells, which the store drains into the
 * cells of every width in time order (store/staging.c, a radix sort of
 * their buckets): rows of two weeks (one pass of the sort) and rows spread
 * over fifty years (past 65,536 hours: two passes), then half of them
 * taken away and a quarter moved, each batch equal to the model. */
Test(store_model, large_batches_drain_in_time_order)
{
    char dir[64];
    struct store *s = fixture_create(dir);
    enum { RIDES = 12000, FAR = 300 };
    struct ride *rides = calloc(2 * RIDES + FAR, sizeof *rides);
    uint64_t rng = 11;
    int n = 0;
    for (int i = 0; i < RIDES; i++) {
        rides[n] = ride_of_few_fares(&rng);
        if (i % 7 == 0)
            apply_in_many_changes(s, &rides[n++], +1);
        else
            fixture_apply(s, &rides[n++], +1);
    }
    commit_round(s, rides, n, 0);
    for (int i = 0; i < FAR; i++) { /* 1990 to 2040 */
        rides[n] = ride_of_few_fares(&rng);
        rides[n].at = (631152000LL + fixture_rand(&rng) % (50LL * 365 * 86400)) * 1000000LL;
        fixture_apply(s, &rides[n++], +1);
    }
    for (int i = 0; i < RIDES; i++) { /* the two weeks again: the batch holds thousands of cells */
        rides[n] = ride_of_few_fares(&rng);
        fixture_apply(s, &rides[n++], +1);
    }
    commit_round(s, rides, n, 1);
    for (int i = n - 1; i >= 0; i -= 2) { /* half of them go */
        if (i % 3 == 0)
            apply_in_many_changes(s, &rides[i], -1);
        else
            fixture_apply(s, &rides[i], -1);
        rides[i] = rides[--n];
    }
    for (int i = 0; i < n; i += 4) { /* a quarter move */
        fixture_apply(s, &rides[i], -1);
        rides[i] = ride_of_few_fares(&rng);
        fixture_apply(s, &rides[i], +1);
    }
    commit_round(s, rides, n, 2);
    store_close(s);
    free(rides);
    fixture_remove(dir);
}

/* Weeks of rows in few cells with many distinct fares: a cell of the
 * widest width takes a finest cell's runs from every hour of its span,
 * small adds to a long list, which store/cellmap.c appends and merges in
 * later (settle_runs). A second bulk batch adds to stored segments through
 * overlays whose cells hold appended runs when they are merged; a third,
 * outside bulk mode, takes single rows away from settled lists. */
Test(store_model, wide_cells_take_many_small_adds)
{
    char dir[64];
    struct store *s = fixture_create(dir);
    struct store_error err;
    enum { FIRST = 6000, MORE = 3000 };
    struct ride *rides = calloc(FIRST + MORE, sizeof *rides);
    uint64_t rng = 11;
    int n = 0;
    for (int round = 0; round < 3; round++) {
        cr_assert_eq(store_set_bulk(s, round < 2, &err), 0, "%s", err.message);
        for (int i = 0; round < 2 && i < (round ? MORE : FIRST); i++) {
            rides[n] = fixture_ride(&rng);
            rides[n].zone %= 2;
            rides[n].fare = (rides[n].fare % 100 + 100) % 100; /* (the model keeps 128 codes a cell) */
            fixture_apply(s, &rides[n++], +1);
        }
        if (round == 2) /* every third ride goes */
            for (int i = n - 1; i >= 0; i -= 3) {
                fixture_apply(s, &rides[i], -1);
                rides[i] = rides[--n];
            }
        commit_round(s, rides, n, round);
    }
    store_close(s);
    free(rides);
    fixture_remove(dir);
}

/* A batch bigger than the cache budget spills segments into its write
 * transaction (store/writer.c): readers see none of it before the commit,
 * a rollback forgets all of it, and the commit lands all of it. */
Test(store_model, a_spilled_batch_is_whole_or_nothing)
{
    char dir[64];
    struct store *s = fixture_create(dir);
    struct store_error err;
    enum { BEFORE = 300, BATCH = 1200 };
    struct ride *rides = calloc(BEFORE + BATCH, sizeof *rides);
    uint64_t rng = 99;
    for (int i = 0; i < BEFORE; i++) {
        rides[i] = fixture_ride(&rng);
        fixture_apply(s, &rides[i], +1);
    }
    cr_assert_eq(store_commit(s, &(struct store_position){.lsn = 1}, &err), 0, "%s", err.message);
    store_set_cache_bytes(s, 16 << 10); /* every few rows spill */
    for (int round = 0; round < 2; round++) {
        /* Delete a third of the committed rows, insert a new batch over
         * the same two weeks (every segment), truncate nothing. */
        for (int i = 0; i < BEFORE; i += 3)
            fixture_apply(s, &rides[i], -1);
        for (int i = BEFORE; i < BEFORE + BATCH; i++) {
            rides[i] = fixture_ride(&rng);
            fixture_apply(s, &rides[i], +1);
        }
        cr_assert_gt(store_cached_bytes(s), 0);
        compare(s, rides, BEFORE, "a spilled batch before its commit");
        if (round == 0) {
            store_rollback(s);
            compare(s, rides, BEFORE, "after a spilled batch rolled back");
            continue;
        }
        cr_assert_eq(store_commit(s, &(struct store_position){.lsn = 2}, &err), 0, "%s",
                     err.message);
    }
    int n = 0;
    for (int i = 0; i < BEFORE + BATCH; i++)
        if (i >= BEFORE || i % 3 != 0)
            rides[n++] = rides[i];
    compare(s, rides, n, "after the spilled batch committed");
    /* A truncate inside a batch that already spilled. */
    for (int i = 0; i < 400; i++)
        fixture_apply(s, &rides[i], -1);
    for (int v = 0; v < store_views(s)->nviews; v++)
        cr_assert_eq(store_truncate_view(s, v, &err), 0, "%s", err.message);
    for (int i = 0; i < 500; i++) {
        rides[i] = fixture_ride(&rng);
        fixture_apply(s, &rides[i], +1);
    }
    cr_assert_eq(store_commit(s, &(struct store_position){.lsn = 3}, &err), 0, "%s", err.message);
    compare(s, rides, 500, "after a truncate in a spilled batch");
    store_close(s);
    free(rides);
    fixture_remove(dir);
}

struct walk {
    int64_t codes[16384], rows[16384];
    int n;
};

static int collect(void *ctx, int64_t code, int64_t rows)
{
    struct walk *w = ctx;
    if (w->n == 16384)
        return -1;
    w->codes[w->n] = code;
    w->rows[w->n++] = rows;
    return 0;
}

Test(store_model, value_dictionary_is_sorted_and_exact)
{
    char dir[64];
    struct store *s = fixture_create(dir);
    struct store_error err;
    struct ride rides[300];
    uint64_t rng = 7;
    for (int i = 0; i < 300; i++) {
        rides[i] = fixture_ride(&rng);
        rides[i].fare = rides[i].fare % 40; /* few distinct values, some negative */
        fixture_apply(s, &rides[i], +1);
    }
    for (int i = 0; i < 100; i++) /* take a third away again */
        fixture_apply(s, &rides[i], -1);
    cr_assert_eq(store_commit(s, &(struct store_position){.lsn = 1}, &err), 0, "%s", err.message);

    static struct walk got, want;
    struct store_read *r;
    cr_assert_eq(store_read_begin(s, &r, &err), 0);
    cr_assert_eq(store_values_walk(r, 0, 0, collect, &got, &err), 0, "%s", err.message);
    store_read_end(r);
    for (int64_t code = -40; code < 40; code++) {
        int64_t rows = 0;
        for (int i = 100; i < 300; i++)
            rows += !rides[i].fare_null && rides[i].fare == code;
        if (rows) {
            want.codes[want.n] = code;
            want.rows[want.n++] = rows;
        }
    }
    cr_assert_eq(got.n, want.n);
    cr_assert_arr_eq(got.codes, want.codes, 8 * (size_t)want.n, "ascending codes");
    cr_assert_arr_eq(got.rows, want.rows, 8 * (size_t)want.n);
    store_close(s);
    fixture_remove(dir);
}

/* The value table's leaf pages, read with LMDB itself (the store closed:
 * a process must not open one environment twice). */
static size_t value_leaf_pages(const char *dir, size_t *entries)
{
    MDB_env *env;
    MDB_txn *txn;
    MDB_dbi dbi;
    MDB_stat st;
    cr_assert_eq(mdb_env_create(&env), 0);
    mdb_env_set_maxdbs(env, 16);
    cr_assert_eq(mdb_env_open(env, dir, MDB_RDONLY, 0644), 0);
    cr_assert_eq(mdb_txn_begin(env, NULL, MDB_RDONLY, &txn), 0);
    cr_assert_eq(mdb_dbi_open(txn, "values", 0, &dbi), 0);
    cr_assert_eq(mdb_stat(txn, dbi, &st), 0);
    mdb_txn_abort(txn);
    mdb_env_close(env);
    *entries = st.ms_entries;
    return st.ms_leaf_pages;
}

/* A commit writes its value changes in key order, so that LMDB fills each
 * page rather than splitting pages about in half as keys in hash order
 * did (a store file a third of a MiB smaller for the benchmark); a later
 * commit's changes land among the values held. Both stay exact. */
Test(store_model, a_first_commit_packs_the_value_table)
{
    char dir[64];
    struct store *s = fixture_create(dir);
    struct store_error err;
    enum { N = 6000 };
    struct ride *rides = calloc(N, sizeof *rides);
    uint64_t rng = 11;
    for (int i = 0; i < N; i++) {
        rides[i] = fixture_ride(&rng);
        rides[i].fare_null = false;
        rides[i].fare = 2 * (int64_t)i - 3000; /* distinct, even, some negative */
        fixture_apply(s, &rides[i], +1);
    }
    cr_assert_eq(store_commit(s, &(struct store_position){.lsn = 1}, &err), 0, "%s", err.message);
    store_close(s);
    size_t entries, leaves = value_leaf_pages(dir, &entries);
    /* A (view, value count, code) key and its rows take 30 bytes of a 4 KiB
     * page: about 136 to a page when full, 68 when each split halves. */
    cr_assert_geq(entries, N, "every fare, and the distinct kinds");
    cr_assert_leq(leaves, entries / 120 + 2, "%zu leaf pages for %zu values", leaves, entries);

    cr_assert_eq(store_open(dir, STORE_READ_WRITE, &s, &err), 0, "%s", err.message);
    for (int i = 0; i < N; i += 3) { /* odd fares among them, some taken away again */
        struct ride r = rides[i];
        r.fare += 1;
        fixture_apply(s, &r, +1);
        if (i % 2 == 0)
            fixture_apply(s, &rides[i], -1);
    }
    cr_assert_eq(store_commit(s, &(struct store_position){.lsn = 2}, &err), 0, "%s", err.message);
    struct walk *got = calloc(1, sizeof *got);
    struct store_read *r;
    cr_assert_eq(store_read_begin(s, &r, &err), 0);
    cr_assert_eq(store_values_walk(r, 0, 0, collect, got, &err), 0, "%s", err.message);
    store_read_end(r);
    int want = 0;
    for (int i = 0; i < N; i++) {
        bool kept = !(i % 3 == 0 && i % 2 == 0), odd = i % 3 == 0;
        int64_t fares[2] = {rides[i].fare, rides[i].fare + 1};
        for (int k = 0; k < 1 + odd; k++) {
            if (k == 0 && !kept)
                continue;
            cr_assert_lt(want, got->n);
            cr_assert_eq(got->codes[want], fares[k], "value %d", want);
            cr_assert_eq(got->rows[want], 1, "value %d", want);
            want++;
        }
    }
    cr_assert_eq(got->n, want, "nothing more");
    free(got);
    free(rides);
    store_close(s);
    fixture_remove(dir);
}

Test(store_model, dictionaries_and_projections)
{
    char dir[64];
    struct store *s = fixture_create(dir);
    struct store_error err;
    int64_t a, b, a2, longid, longid2;
    char big[1000];
    memset(big, 'x', sizeof big);
    cr_assert_eq(store_dict_intern(s, 0, 1, "alpha", 5, &a, &err), 0, "%s", err.message);
    cr_assert_eq(store_dict_intern(s, 0, 1, "beta", 4, &b, &err), 0);
    cr_assert_eq(store_dict_intern(s, 0, 1, "alpha", 5, &a2, &err), 0);
    cr_assert_eq(store_dict_intern(s, 0, 1, big, sizeof big, &longid, &err), 0, "%s", err.message);
    cr_assert_eq(a, a2, "same text, same id before commit");
    cr_assert_neq(a, b);
    struct store_dim_value manhattan[1] = {{false, "Manhattan", 9}}, nul[1] = {{true, NULL, 0}};
    cr_assert_eq(store_projection_put(s, 1, 0, 4, manhattan, &err), 0, "%s", err.message);
    cr_assert_eq(store_projection_put(s, 1, 0, 5, nul, &err), 0);
    cr_assert_eq(store_projection_put(s, 1, 0, 6, manhattan, &err), 0);
    cr_assert_eq(store_projection_delete(s, 1, 0, 6, &err), 0);
    cr_assert_neq(store_projection_put(s, 1, 3, 6, manhattan, &err), 0, "join 3 does not exist");
    cr_assert_eq(store_commit(s, &(struct store_position){.lsn = 9}, &err), 0, "%s", err.message);

    int64_t c;
    cr_assert_eq(store_dict_intern(s, 0, 1, "gamma", 5, &c, &err), 0);
    cr_assert_eq(store_dict_intern(s, 0, 1, big, sizeof big, &longid2, &err), 0);
    cr_assert_eq(longid, longid2, "long texts are found through their hash key");
    cr_assert(c != a && c != b && c != longid, "ids are never reused");
    cr_assert_eq(store_commit(s, &(struct store_position){.lsn = 10}, &err), 0);
    store_close(s);

    cr_assert_eq(store_open(dir, STORE_READ_ONLY, &s, &err), 0, "%s", err.message);
    struct store_read *r;
    cr_assert_eq(store_read_begin(s, &r, &err), 0);
    const char *text;
    size_t len;
    cr_assert_eq(store_dict_lookup(r, 0, 1, a, &text, &len), 0);
    cr_assert(len == 5 && memcmp(text, "alpha", 5) == 0);
    cr_assert_eq(store_dict_lookup(r, 0, 1, longid, &text, &len), 0);
    cr_assert_eq(len, sizeof big);
    cr_assert_eq(store_dict_lookup(r, 0, 1, 12345, &text, &len), -1);
    struct store_dim_value got[1];
    cr_assert_eq(store_projection_get(r, 1, 0, 4, got, 1, &err), 1);
    cr_assert(!got[0].is_null && got[0].len == 9 && memcmp(got[0].text, "Manhattan", 9) == 0);
    cr_assert_eq(store_projection_get(r, 1, 0, 5, got, 1, &err), 1);
    cr_assert(got[0].is_null);
    cr_assert_eq(store_projection_get(r, 1, 0, 6, got, 1, &err), 0, "deleted");
    store_read_end(r);
    cr_assert_neq(store_apply(s, &(struct store_delta){0}, &err), 0, "read-only store refuses writes");
    cr_assert(strstr(err.message, "is open read-only") != NULL, "%s", err.message);
    store_close(s);
    fixture_remove(dir);
}

Test(store_model, bad_deltas_are_refused_at_commit)
{
    char dir[64];
    struct store *s = fixture_create(dir);
    struct store_error err;
    uint64_t rng = 3;
    struct ride r = fixture_ride(&rng);
    fixture_apply(s, &r, -1); /* taking away a row that was never added */
    cr_assert_neq(store_commit(s, &(struct store_position){.lsn = 1}, &err), 0);
    cr_assert(strstr(err.message, "went negative") != NULL, "%s", err.message);
    /* nothing was written, and the writer carries on */
    fixture_apply(s, &r, +1);
    cr_assert_eq(store_commit(s, &(struct store_position){.lsn = 2}, &err), 0, "%s", err.message);
    struct store_read *rd;
    cr_assert_eq(store_read_begin(s, &rd, &err), 0);
    cr_assert_eq(fixture_total_rows(rd, 0, 0), 1);
    store_read_end(rd);
    store_close(s);
    fixture_remove(dir);
}

/* fuzz_view: with an origin before 1970, a row near the top of int64 time
 * (year 294247, which ingest decodes from PostgreSQL) overflowed bucket and
 * span arithmetic. The store keeps STORE_MIN_TIME..STORE_MAX_TIME, where it
 * fits (UBSan checks it here), and refuses the rest with a message. */
Test(store_model, times_at_the_edges_of_what_a_store_keeps)
{
    static const char views[] =
        "CREATE VIEW old WITH (buckets = '1 hour, 1 day, 36525 days') AS\n"
        "SELECT date_bin('1 hour', r.at, timestamptz '1000-01-01 00:00:00+00') AS bucket,\n"
        "  count(*) AS n FROM rides r GROUP BY 1;\n";
    char dir[64] = "/tmp/straum-store-XXXXXX";
    cr_assert_not_null(mkdtemp(dir));
    struct store_column_type types[1] = {{STORE_TYPE_TIMESTAMP, 0, 1184}};
    struct store_view_types vt = {types};
    struct store *s;
    struct store_error err;
    cr_assert_eq(store_create(dir, views, &vt, &s, &err), 0, "%s", err.message);
    int64_t counts[1] = {1}, keys[1] = {0}; /* the view has no keys */
    const int64_t kept[] = {STORE_MIN_TIME, -1, 0, STORE_MAX_TIME - 1};
    for (size_t i = 0; i < sizeof kept / sizeof kept[0]; i++) {
        struct store_delta d = {.view = 0, .time = kept[i], .keys = keys, .counts = counts};
        cr_assert_eq(store_apply(s, &d, &err), 0, "%lld: %s", (long long)kept[i], err.message);
    }
    const int64_t refused[] = {STORE_MAX_TIME, INT64_MAX, STORE_MIN_TIME - 1, INT64_MIN + 1};
    for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++) {
        struct store_delta d = {.view = 0, .time = refused[i], .keys = keys, .counts = counts};
        cr_assert_neq(store_apply(s, &d, &err), 0, "%lld", (long long)refused[i]);
        cr_assert(strstr(err.message, "outside the times a store keeps") != NULL, "%s",
                  err.message);
    }
    cr_assert_eq(store_commit(s, &(struct store_position){.lsn = 1}, &err), 0, "%s", err.message);
    struct store_read *rd;
    cr_assert_eq(store_read_begin(s, &rd, &err), 0, "%s", err.message);
    for (int w = 0; w < 3; w++)
        cr_assert_eq(fixture_total_rows(rd, 0, w), 4, "width %d", w);
    store_read_end(rd);
    store_close(s);
    fixture_remove(dir);
}

/* Deltas of one segment: each small commit adds one, up to STORE_MAX_DELTAS;
 * the next merges them into one; a commit that would give the deltas more
 * cells than the base folds them into a new base. Bulk mode writes them
 * by the same rule for a segment it wrote already, and a delta that takes
 * away rows never added is refused when folded. */
Test(store_model, deltas_are_numbered_folded_and_checked)
{
    char dir[64];
    struct store *s = fixture_create(dir);
    struct store_error err;
    uint64_t rng = 11;
    enum { BASE = 400 };
    struct ride rides[BASE];
    store_set_bulk(s, true, &err);
    for (int i = 0; i < BASE; i++) {
        rides[i] = fixture_ride(&rng);
        fixture_apply(s, &rides[i], +1);
    }
    cr_assert_eq(store_commit(s, &(struct store_position){.lsn = 1}, &err), 0, "%s", err.message);
    fixture_apply(s, &rides[0], -1);
    cr_assert_eq(store_commit(s, &(struct store_position){.lsn = 2}, &err), 0, "%s", err.message);
    int load_deltas = fixture_delta_blocks(s);
    cr_assert_gt(load_deltas, 0, "a load's second commit adds deltas, not the bases again");
    int left;
    cr_assert_eq(store_compact(s, INT64_MAX, true, &left, &err), 0, "%s", err.message);
    cr_assert_eq(fixture_delta_blocks(s), 0);
    cr_assert_eq(store_set_bulk(s, false, &err), 0, "%s", err.message);
    fixture_apply(s, &rides[0], +1);
    cr_assert_eq(store_commit(s, &(struct store_position){.lsn = 3}, &err), 0, "%s", err.message);
    int per_commit = fixture_delta_blocks(s);
    cr_assert_gt(per_commit, 0);
    for (int c = 2; c <= STORE_MAX_DELTAS + 1; c++) {
        fixture_apply(s, &rides[0], c % 2 ? +1 : -1);
        cr_assert_eq(store_commit(s, &(struct store_position){.lsn = 2 + (uint64_t)c}, &err), 0,
                     "%s", err.message);
        int want = c <= STORE_MAX_DELTAS ? c * per_commit : per_commit;
        cr_assert_eq(fixture_delta_blocks(s), want, "after %d small commits", c);
    }
    /* One light delta per segment: an idle writer leaves it, `all` folds it. */
    cr_assert_eq(store_compact(s, INT64_MAX, false, &left, &err), 0, "%s", err.message);
    cr_assert_eq(fixture_delta_blocks(s), per_commit);
    cr_assert_eq(store_compact(s, INT64_MAX, true, &left, &err), 0, "%s", err.message);
    cr_assert_eq(fixture_delta_blocks(s), 0);
    struct ride more[BASE * 2];
    for (int i = 0; i < BASE * 2; i++) {
        more[i] = fixture_ride(&rng);
        fixture_apply(s, &more[i], +1);
    }
    cr_assert_eq(store_commit(s, &(struct store_position){.lsn = 19}, &err), 0, "%s", err.message);
    cr_assert_lt(fixture_delta_blocks(s), per_commit, "twice the base again is folded in");
    /* A delta taking away a ride that was never there lands (nothing reads
     * the base to check it) and is refused when folded. */
    struct ride ghost = rides[1];
    ghost.zone = 99;
    fixture_apply(s, &ghost, -1);
    cr_assert_eq(store_commit(s, &(struct store_position){.lsn = 20}, &err), 0, "%s", err.message);
    cr_assert_neq(store_compact(s, INT64_MAX, true, &left, &err), 0);
    cr_assert(strstr(err.message, "went negative") != NULL, "%s", err.message);
    store_close(s);
    fixture_remove(dir);
}

/* A store of BASE rides loaded, then `commits` small commits of one ride
 * each, so that every segment the ride lies in holds `commits` light
 * deltas. Returns the deltas' blocks per commit. */
static int light_deltas(struct store *s, int commits)
{
    struct store_error err;
    uint64_t rng = 5;
    enum { BASE = 400 };
    struct ride rides[BASE];
    for (int i = 0; i < BASE; i++) {
        rides[i] = fixture_ride(&rng);
        fixture_apply(s, &rides[i], +1);
    }
    cr_assert_eq(store_commit(s, &(struct store_position){.lsn = 1}, &err), 0, "%s", err.message);
    for (int c = 0; c < commits; c++) {
        fixture_apply(s, &rides[0], c % 2 ? +1 : -1);
        cr_assert_eq(store_commit(s, &(struct store_position){.lsn = 2 + (uint64_t)c}, &err), 0,
                     "%s", err.message);
    }
    int blocks = fixture_delta_blocks(s);
    cr_assert_eq(blocks % commits, 0);
    cr_assert_gt(blocks, commits, "the ride lies in more than one segment");
    return blocks / commits;
}

/* An idle writer folds deltas that hold an eighth of their base's cells,
 * however few their numbers; light ones stay however many numbers they
 * took (a fold holds a transaction that arrives meanwhile, and light
 * deltas cost an ask little). */
Test(store_model, idle_compaction_folds_deltas_heavy_in_cells_only)
{
    char dir[64];
    struct store *s = fixture_create(dir);
    struct store_error err;
    enum { COMMITS = STORE_MAX_DELTAS / 2 + 1 };
    int per_commit = light_deltas(s, COMMITS);
    int left;
    cr_assert_eq(store_compact(s, INT64_MAX, false, &left, &err), 0, "%s", err.message);
    cr_assert_eq(fixture_delta_blocks(s), COMMITS * per_commit,
                 "light deltas stay, more than half the numbers taken");
    cr_assert_eq(left, 0);
    uint64_t rng = 77;
    for (int i = 0; i < 200; i++) { /* half the base's rides again, in one commit */
        struct ride r = fixture_ride(&rng);
        fixture_apply(s, &r, +1);
    }
    cr_assert_eq(store_commit(s, &(struct store_position){.lsn = 100}, &err), 0, "%s",
                 err.message);
    cr_assert_gt(fixture_delta_blocks(s), 0);
    cr_assert_eq(store_compact(s, INT64_MAX, false, &left, &err), 0, "%s", err.message);
    cr_assert_eq(fixture_delta_blocks(s), 0, "deltas of an eighth of the base's cells: folded");
    store_close(s);
    fixture_remove(dir);
}

static bool stop_after_one(void *calls)
{
    return ++*(int *)calls > 1;
}

/* store_compact_until asks before each segment and stops when told: the
 * rest is left, counted, for the next call. */
Test(store_model, compaction_stops_before_the_next_segment_when_asked)
{
    char dir[64];
    struct store *s = fixture_create(dir);
    struct store_error err;
    enum { COMMITS = STORE_MAX_DELTAS / 2 + 1 };
    int per_commit = light_deltas(s, COMMITS), calls = 0, left;
    cr_assert_eq(store_compact_until(s, INT64_MAX, true, stop_after_one, &calls, &left, &err), 0,
                 "%s", err.message);
    cr_assert_eq(fixture_delta_blocks(s), COMMITS * (per_commit - 1), "one segment folded");
    cr_assert_eq(left, per_commit - 1);
    cr_assert_eq(calls, 2);
    cr_assert_eq(store_compact(s, INT64_MAX, true, &left, &err), 0, "%s", err.message);
    cr_assert_eq(fixture_delta_blocks(s), 0);
    store_close(s);
    fixture_remove(dir);
}

/* The delta cells of the rides view's hour segment, in number order. */
struct delta_sizes {
    int n;
    uint64_t cells[STORE_MAX_DELTAS];
};

static void hour_deltas(const struct store_segment *seg, void *arg)
{
    struct delta_sizes *d = arg;
    if (seg->view != 0 || seg->width != 0)
        return;
    d->n = seg->ndeltas;
    for (int i = 0; i < seg->ndeltas; i++)
        d->cells[i] = seg->deltas[i].block.info.ncells;
}

/* When the delta numbers run out, the newest deltas are merged, back to
 * the first that outweighs the rest more than twice (merged_delta_from):
 * a big delta 1 followed by seven one-cell deltas keeps its block, and
 * the small ones and the overlay become delta 2. Merging every delta into
 * delta 1 (as before) rewrote the big one at every eighth small commit. */
Test(store_model, a_full_delta_run_merges_the_small_newest_deltas_only)
{
    char dir[64];
    struct store *s = fixture_create(dir);
    struct store_error err;
    enum { BASE = 50, BIG = 40 };
    struct ride rides[BASE + BIG + STORE_MAX_DELTAS + 1];
    int n = 0;
    uint64_t rng = 5, lsn = 1;
    const int64_t hour = 1704067200LL * 1000000LL + 3 * 3600000000LL;
    for (int round = 0; round < 2 + STORE_MAX_DELTAS; round++) {
        /* the base, the big delta 1, then one new cell a commit */
        int add = round == 0 ? BASE : round == 1 ? BIG : 1;
        for (int i = 0; i < add; i++) {
            rides[n] = fixture_ride(&rng);
            rides[n].at = hour + i; /* one hour: one segment a width */
            rides[n].zone = 1000 + n; /* a cell of its own */
            fixture_apply(s, &rides[n++], +1);
        }
        cr_assert_eq(store_commit(s, &(struct store_position){.lsn = lsn++}, &err), 0, "%s",
                     err.message);
        struct delta_sizes d = {0};
        fixture_each_raw_segment(s, hour_deltas, &d);
        if (round < 1 + STORE_MAX_DELTAS) {
            cr_assert_eq(d.n, round, "after commit %d", round + 1);
            continue;
        }
        cr_assert_eq(d.n, 2, "the small deltas and the overlay merged into delta 2");
        cr_assert_eq(d.cells[0], BIG, "delta 1 kept as it was");
        cr_assert_eq(d.cells[1], STORE_MAX_DELTAS, "seven one-cell deltas and the overlay");
    }
    compare(s, rides, n, "after the merge");
    int left;
    cr_assert_eq(store_compact(s, INT64_MAX, true, &left, &err), 0, "%s", err.message);
    cr_assert_eq(fixture_delta_blocks(s), 0);
    compare(s, rides, n, "folded");
    store_close(s);
    fixture_remove(dir);
}

struct delta_census {
    int with;   /* segments with deltas */
    int over;   /* those whose deltas hold more cells than their base */
};

static void census_segment(const struct store_segment *seg, void *arg)
{
    struct delta_census *c = arg;
    uint64_t cells = 0;
    for (int d = 0; d < seg->ndeltas; d++)
        cells += seg->deltas[d].block.info.ncells;
    c->with += seg->ndeltas > 0;
    c->over += cells > seg->block.info.ncells;
    cr_assert_leq(cells, 2 * (uint64_t)seg->block.info.ncells,
                  "deltas past twice the base are folded by the commit");
}

static struct delta_census delta_census(struct store *s)
{
    struct delta_census c = {0};
    fixture_each_raw_segment(s, census_segment, &c);
    return c;
}

/* Rows of the rides view at its finest width, in one snapshot. */
static int64_t rides_rows(struct store *s)
{
    struct store_read *r;
    struct store_error err;
    cr_assert_eq(store_read_begin(s, &r, &err), 0, "%s", err.message);
    int64_t n = fixture_total_rows(r, 0, 0);
    store_read_end(r);
    return n;
}

/* A base block bigger than the inline-fold size keeps deltas of up to twice
 * its cells for the idle compaction, where a small one is folded by the
 * commit as soon as its deltas outgrow it; past twice, both fold. Answers
 * are the same either way. */
Test(store_model, large_bases_leave_their_folds_to_the_idle_compaction)
{
    enum { BASE = 400, MORE = 600, MUCH_MORE = 4000 };
    char dir[2][64];
    struct store *s[2] = {fixture_create(dir[0]), fixture_create(dir[1])};
    store_set_inline_fold_bytes(s[1], 0); /* every base counts as large */
    struct store_error err;
    struct delta_census c[2];
    int left;
    for (int k = 0; k < 2; k++) {
        uint64_t rng = 5;
        store_set_bulk(s[k], true, &err);
        fixture_commit_rides(s[k], &rng, BASE, 1);
        cr_assert_eq(store_set_bulk(s[k], false, &err), 0, "%s", err.message);
        fixture_commit_rides(s[k], &rng, MORE, 2);
        c[k] = delta_census(s[k]);
        cr_assert_eq(rides_rows(s[k]), BASE + MORE);
    }
    cr_assert_eq(c[0].over, 0, "small bases are folded once their deltas outgrow them");
    cr_assert_gt(c[1].over, 0, "large ones wait: %d of %d", c[1].over, c[1].with);
    cr_assert_gt(c[1].with, c[0].with);
    cr_assert_eq(store_compact(s[1], INT64_MAX, false, &left, &err), 0, "%s", err.message);
    cr_assert_eq(left, 0);
    cr_assert_eq(fixture_delta_blocks(s[1]), 0, "heavy deltas go at the idle compaction");
    cr_assert_eq(rides_rows(s[1]), BASE + MORE);
    /* Past twice the base the commit folds whatever the base's size
     * (census_segment checks it of every segment). */
    uint64_t rng = 77;
    fixture_commit_rides(s[1], &rng, MUCH_MORE, 3);
    delta_census(s[1]);
    cr_assert_eq(rides_rows(s[1]), BASE + MORE + MUCH_MORE);
    for (int k = 0; k < 2; k++) {
        store_close(s[k]);
        fixture_remove(dir[k]);
    }
}

/* A commit folds a quarter of the segments waiting for a fold, then more
 * for its time budget: at a budget of nothing the rest wait for the next
 * commits, each taking a quarter of those left; the idle compaction may
 * take them sooner, and the commits after it pass over what it folded.
 * The answers are the same at every step. */
Test(store_model, a_commit_folds_within_its_budget_and_the_rest_wait)
{
    enum { BASE = 400, MORE = 600 };
    char dir[64];
    struct store *s = fixture_create(dir);
    struct store_error err;
    uint64_t rng = 5, lsn = 1;
    store_set_bulk(s, true, &err);
    fixture_commit_rides(s, &rng, BASE, lsn++);
    cr_assert_eq(store_set_bulk(s, false, &err), 0, "%s", err.message);
    store_set_fold_budget_us(s, 0);
    fixture_commit_rides(s, &rng, MORE, lsn++);
    int over = delta_census(s).over;
    cr_assert_gt(over, 1, "the segments past their fold wait for the next commits");
    while (over > 1) {
        cr_assert_eq(rides_rows(s), BASE + MORE);
        cr_assert_eq(store_commit(s, &(struct store_position){.lsn = lsn++}, &err), 0, "%s",
                     err.message);
        int left = over - (over + 3) / 4;
        cr_assert_eq(delta_census(s).over, left, "a quarter of %d folded at a budget of nothing",
                     over);
        over = left;
    }
    /* Those waiting are folded by the idle compaction first. */
    fixture_commit_rides(s, &rng, 3 * MORE, lsn++);
    cr_assert_gt(delta_census(s).over, 0);
    int left;
    cr_assert_eq(store_compact(s, INT64_MAX, true, &left, &err), 0, "%s", err.message);
    cr_assert_eq(fixture_delta_blocks(s), 0);
    for (int c = 0; c < 3; c++)
        cr_assert_eq(store_commit(s, &(struct store_position){.lsn = lsn++}, &err), 0, "%s",
                     err.message);
    cr_assert_eq(fixture_delta_blocks(s), 0, "the commits after it find nothing left to fold");
    cr_assert_eq(rides_rows(s), BASE + 4 * MORE);
    store_close(s);
    fixture_remove(dir);
}

/* KiB of this process's RSS in the mapping of the file at path. */
static long mapped_rss_kib(const char *path)
{
    FILE *f = fopen("/proc/self/smaps", "r");
    cr_assert_not_null(f);
    char line[4096];
    bool in = false;
    long kib = 0, rss;
    unsigned long from, to;
    while (fgets(line, sizeof line, f)) {
        if (sscanf(line, "%lx-%lx ", &from, &to) == 2) { /* a mapping's first line */
            char *name = strchr(line, '/');
            in = name && strncmp(name, path, strlen(path)) == 0;
        } else if (in && sscanf(line, "Rss: %ld kB", &rss) == 1) {
            kib += rss;
        }
    }
    fclose(f);
    return kib;
}

/* The writer reads stored segments through the map only to decode them; a
 * commit leaves none of the file mapped in its RSS (the page cache keeps
 * it), and what it wrote reads back the same. */
Test(store_model, a_commit_gives_back_the_pages_it_read)
{
    enum { BASE = 30000, MORE = 40000 };
    char dir[64], path[96];
    struct store *s = fixture_create(dir);
    snprintf(path, sizeof path, "%s/data.mdb", dir);
    uint64_t rng = 9;
    struct store_error err;
    store_set_bulk(s, true, &err);
    fixture_commit_rides(s, &rng, BASE, 1);
    cr_assert_eq(store_set_bulk(s, false, &err), 0, "%s", err.message);
    struct stat st;
    cr_assert_eq(stat(path, &st), 0);
    /* The finer widths' deltas outgrow their bases: the commit reads and
     * folds their stored blocks, hundreds of KiB of them (unreleased, all of
     * the file stays mapped). */
    fixture_commit_rides(s, &rng, MORE, 2);
    long kib = mapped_rss_kib(path);
    cr_assert_lt(kib, 64, "%ld KiB of data.mdb (%lld KiB before) stay mapped", kib,
                 (long long)st.st_size / 1024);
    cr_assert_gt(st.st_size, 256 << 10, "%lld", (long long)st.st_size);
    cr_assert_eq(rides_rows(s), BASE + MORE);
    store_close(s);
    fixture_remove(dir);
}

/* The codecs of a segment's deltas (quick: only RAW, BITPACK, DELTA, GFOR)
 * and of its base. */
struct block_codecs {
    int deltas, delta_columns, slow_in_deltas, slow_in_bases;
};

static bool one_pass_codec(enum format_codec c)
{
    return c == FORMAT_RAW || c == FORMAT_BITPACK || c == FORMAT_DELTA || c == FORMAT_GFOR;
}

static void count_codecs(const struct store_segment *seg, void *arg)
{
    struct block_codecs *c = arg;
    for (int i = 0; i < seg->block.ncolumns; i++) {
        struct format_column_info ci;
        format_block_column(&seg->block, i, &ci);
        c->slow_in_bases += !one_pass_codec(ci.codec);
    }
    for (int d = 0; d < seg->ndeltas; d++) {
        c->deltas++;
        for (int i = 0; i < seg->deltas[d].block.ncolumns; i++) {
            struct format_column_info ci;
            format_block_column(&seg->deltas[d].block, i, &ci);
            c->delta_columns++;
            c->slow_in_deltas += !one_pass_codec(ci.codec);
        }
    }
}

/* Delta blocks are encoded by the QUICK policy (a fold soon rewrites
 * them), bases by the SMALLEST: the same rides give the bases codecs whose
 * plans take more than a pass, and the deltas none. */
Test(store_model, deltas_are_encoded_quickly_and_bases_smallest)
{
    char dir[64];
    struct store *s = fixture_create(dir);
    struct store_error err;
    uint64_t rng = 11;
    fixture_commit_rides(s, &rng, 4000, 1);
    fixture_commit_rides(s, &rng, 600, 2);
    struct block_codecs c = {0};
    fixture_each_raw_segment(s, count_codecs, &c);
    cr_assert_gt(c.deltas, 0, "the second commit wrote deltas");
    cr_assert_gt(c.delta_columns, 0);
    cr_assert_eq(c.slow_in_deltas, 0, "%d of the deltas' %d columns by a slow codec",
                 c.slow_in_deltas, c.delta_columns);
    int left;
    cr_assert_eq(store_compact(s, INT64_MAX, true, &left, &err), 0, "%s", err.message);
    cr_assert_eq(fixture_delta_blocks(s), 0);
    struct block_codecs folded = {0};
    fixture_each_raw_segment(s, count_codecs, &folded);
    cr_assert_gt(folded.slow_in_bases, 0, "folded bases take the smallest codecs");
    store_close(s);
    fixture_remove(dir);
}
