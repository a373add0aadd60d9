/* test_store_cursor.c -- the segment cursor's sliced decodes equal its whole
 * ones: for every block of a store with deltas (base and deltas), every
 * family (the cells and each rollup family the block holds) and every
 * bucket range of its span, store_rows_load of the range gives exactly the
 * whole family's rows whose bucket lies in it; the runs of the rows a filter
 * passes, packed or not, are theirs; lazy codes and rows decode to the
 * same values. The engine's answers rest on this (test_serve_asks checks
 * them against PostgreSQL); here each decode is checked on its own. */
#include "tests/unit/store_fixture.h"

struct family_of {
    uint16_t base;
    bool span;
};

/* Every family a block of the fixture's views may hold. */
static int families(const struct sql_view *v, struct family_of *out)
{
    int n = 0;
    out[n++] = (struct family_of){0, false};
    for (int span = 0; span <= 1; span++)
        for (int k = -1; k < v->ncell_keys; k++)
            out[n++] = (struct family_of){store_rollup_base(span, k), span};
    return n;
}

static bool all[16] = {true, true, true, true, true, true, true, true,
                       true, true, true, true, true, true, true, true};

/* Row i's runs as loaded are row wi's of the whole family. */
static void assert_runs_equal(const struct store_rows *got, const struct store_rows *whole,
                              int k, uint32_t i, uint32_t wi, const int64_t *codes)
{
    int64_t g0 = got->vc_off[k][i], g1 = got->vc_off[k][i + 1];
    int64_t w0 = whole->vc_off[k][wi], w1 = whole->vc_off[k][wi + 1];
    cr_assert_eq(g1 - g0, w1 - w0, "row %u: %lld runs, not %lld", i, (long long)(g1 - g0),
                 (long long)(w1 - w0));
    for (int64_t j = 0; j < g1 - g0; j++) {
        cr_assert_eq(codes[g0 + j], whole->vc_codes[k][w0 + j]);
        cr_assert_eq(got->vc_rows[k][g0 + j], whole->vc_rows[k][w0 + j]);
    }
}

static void check_range(const struct store_block *b, const struct family_of *f,
                        const struct store_rows *whole, int a, int z, bool filter)
{
    const struct sql_view *v = b->v;
    bool keys[8], vcs[8];
    for (int k = 0; k < v->ncell_keys; k++)
        keys[k] = whole->keys[k] != NULL;
    for (int k = 0; k < v->nvalue_counts; k++)
        vcs[k] = whole->vc_off[k] != NULL;
    struct store_want want = {
        .family = f->base, .from = b->span_start + a * b->width,
        .to = b->span_start + z * b->width, .keys = keys, .counts = all, .sums = all,
        .vcs = vcs, .defer_runs = filter,
    };
    struct store_rows got;
    struct store_error err;
    cr_assert_eq(store_rows_load(b, &want, &got, &err), 0, "%s", err.message);
    uint32_t first = 0;
    while (first < whole->n && whole->bucket[first] < a)
        first++;
    uint32_t end = first;
    while (end < whole->n && whole->bucket[end] < z)
        end++;
    cr_assert_eq(got.first, first, "span %lld family %u [%d, %d): first row %u, not %u",
                 (long long)b->span_start, f->base, a, z, got.first, first);
    cr_assert_eq(got.n, end - first, "span %lld family %u [%d, %d): %u rows, not %u",
                 (long long)b->span_start, f->base, a, z, got.n, end - first);
    cr_assert_eq(got.nfamily, whole->n);
    bool *pass = calloc(got.n + 1, 1);
    for (uint32_t i = 0; i < got.n; i++)
        pass[i] = filter && i % 7 == 0; /* few pass: the packed load */
    if (filter)
        cr_assert_eq(store_rows_load_runs(b, &want, &got, pass, &err), 0, "%s", err.message);
    for (uint32_t i = 0; i < got.n; i++) {
        uint32_t wi = first + i;
        cr_assert_eq(got.bucket[i], whole->bucket[wi]);
        for (int k = 0; k < v->ncell_keys; k++)
            if (keys[k])
                cr_assert_eq(got.keys[k][i], whole->keys[k][wi]);
        for (int k = 0; k < v->ncounts; k++)
            cr_assert_eq(got.counts[k][i], whole->counts[k][wi]);
        for (int k = 0; k < v->nsums; k++) {
            size_t size = whole->sum_real[k] ? 8 : 16;
            cr_assert_eq(memcmp((char *)got.sums[k] + size * i,
                                (char *)whole->sums[k] + size * wi, size), 0);
        }
        for (int k = 0; k < v->nvalue_counts; k++)
            if (whole->vc_off[k] && (!filter || pass[i])) /* the rest: loaded or not */
                assert_runs_equal(&got, whole, k, i, wi, got.vc_codes[k]);
    }
    free(pass);
    store_rows_free(v, &got);
}

/* The runs left encoded decode to the whole family's. */
static void check_lazy(const struct store_block *b, const struct family_of *f,
                       const struct store_rows *whole)
{
    const struct sql_view *v = b->v;
    bool vcs[8];
    for (int k = 0; k < v->nvalue_counts; k++)
        vcs[k] = whole->vc_off[k] != NULL;
    struct store_want want = {
        .family = f->base, .span_rows = f->span, .from = INT64_MIN, .to = INT64_MAX,
        .vcs = vcs, .lazy_codes = true, .lazy_rows = all,
    };
    struct store_rows got;
    struct store_error err;
    cr_assert_eq(store_rows_load(b, &want, &got, &err), 0, "%s", err.message);
    for (int k = 0; k < v->nvalue_counts; k++) {
        if (!whole->vc_off[k])
            continue;
        int64_t *codes, *rows;
        uint32_t n;
        struct store_lazy_runs *lazy;
        store_rows_take_runs(&got, k, &codes, &rows, &n, &lazy);
        cr_assert_not_null(lazy, "an unpacked load with lazy_codes leaves its codes encoded");
        cr_assert_eq((int64_t)n, whole->vc_off[k][whole->n]);
        if (lazy->rows_pending)
            cr_assert_eq(store_lazy_rows(lazy, 0, n, rows, &err), 0, "%s", err.message);
        cr_assert_eq(store_lazy_codes(lazy, 0, n, codes, &err), 0, "%s", err.message);
        for (uint32_t j = 0; j < n; j++) {
            cr_assert_eq(codes[j], whole->vc_codes[k][j]);
            cr_assert_eq(rows[j], whole->vc_rows[k][j]);
            int64_t one;
            if (store_lazy_codes_seek(lazy)) {
                cr_assert_eq(store_lazy_codes(lazy, j, 1, &one, &err), 0, "%s", err.message);
                cr_assert_eq(one, codes[j]);
            }
        }
        free(codes);
        free(rows);
        free(lazy);
    }
    store_rows_free(v, &got);
}

Test(store_cursor, slices_equal_the_whole_block)
{
    char dir[64];
    struct store *s = fixture_create(dir);
    struct store_error err;
    uint64_t state = 7;
    struct ride first[100];
    for (int i = 0; i < 3000; i++) {
        struct ride r = fixture_ride(&state);
        fixture_apply(s, &r, 1);
        if (i < 100)
            first[i] = r;
    }
    cr_assert_eq(store_commit(s, &(struct store_position){.lsn = 1}, &err), 0, "%s", err.message);
    for (int i = 0; i < 200; i++) { /* a later commit: delta blocks, rows added and taken */
        struct ride r = fixture_ride(&state);
        if (i % 2)
            fixture_apply(s, &first[i / 2], -1);
        else
            fixture_apply(s, &r, 1);
    }
    cr_assert_eq(store_commit(s, &(struct store_position){.lsn = 2}, &err), 0, "%s", err.message);
    cr_assert_gt(fixture_delta_blocks(s), 0);

    struct store_read *r;
    cr_assert_eq(store_read_begin(s, &r, &err), 0, "%s", err.message);
    int blocks = 0, rollups = 0;
    for (int vi = 0; vi < store_views(s)->nviews; vi++) {
        const struct sql_view *v = &store_views(s)->views[vi];
        struct family_of fams[2 + 2 * 8];
        int nfams = families(v, fams);
        for (int w = 0; w < v->nwidths; w++) {
            struct store_segment_iter it;
            struct store_segment seg;
            cr_assert_eq(store_segments_begin(r, vi, w, INT64_MIN, INT64_MAX, &it, &err), 0);
            int rc;
            while ((rc = store_segments_next(&it, &seg, &err)) == 1)
                for (int bi = 0; bi <= seg.ndeltas; bi++) {
                    struct store_block b;
                    store_segment_block(r, &seg, bi, &b);
                    blocks++;
                    for (int fi = 0; fi < nfams; fi++) {
                        uint32_t n;
                        if (!store_block_family(&b, fams[fi].base, NULL, &n))
                            continue;
                        rollups += fams[fi].base != 0;
                        struct store_want every = {.family = fams[fi].base, .whole = true,
                                                   .every = true};
                        struct store_rows whole;
                        cr_assert_eq(store_rows_load(&b, &every, &whole, &err), 0, "%s",
                                     err.message);
                        cr_assert_eq(whole.n, n);
                        if (!fams[fi].span)
                            for (int a = 0; a < b.span; a += 3)
                                for (int z = a + 1; z <= b.span; z += 5) {
                                    check_range(&b, &fams[fi], &whole, a, z, false);
                                    check_range(&b, &fams[fi], &whole, a, z, true);
                                }
                        check_lazy(&b, &fams[fi], &whole);
                        store_rows_free(v, &whole);
                    }
                }
            cr_assert_eq(rc, 0, "%s", err.message);
            store_segments_end(&it);
        }
    }
    cr_assert_gt(blocks, 0);
    cr_assert_gt(rollups, 0, "the fixture's blocks hold rollup families");
    store_read_end(r);
    store_close(s);
    fixture_remove(dir);
}

/* A block whose value-count offsets descend is an error naming its span,
 * never a read out of bounds. */
Test(store_cursor, descending_offsets_are_refused)
{
    char dir[64];
    struct store *s = fixture_create(dir);
    struct store_error err;
    uint64_t state = 11;
    for (int i = 0; i < 500; i++) {
        struct ride r = fixture_ride(&state);
        fixture_apply(s, &r, 1);
    }
    cr_assert_eq(store_commit(s, &(struct store_position){.lsn = 1}, &err), 0, "%s", err.message);
    struct store_read *r;
    cr_assert_eq(store_read_begin(s, &r, &err), 0, "%s", err.message);
    struct store_segment_iter it;
    struct store_segment seg;
    cr_assert_eq(store_segments_begin(r, 0, 0, INT64_MIN, INT64_MAX, &it, &err), 0);
    cr_assert_eq(store_segments_next(&it, &seg, &err), 1, "%s", err.message);
    const struct sql_view *v = &store_views(s)->views[0];
    struct store_block b;
    store_segment_block(r, &seg, 0, &b);
    /* The same cells with the value-count offsets reversed, re-encoded. */
    struct format_column cols[64];
    void *arrays[64];
    int ncols = b.block.ncolumns;
    cr_assert_leq(ncols, 64);
    for (int i = 0; i < ncols; i++) {
        struct format_column_info ci;
        format_block_column(&b.block, i, &ci);
        arrays[i] = malloc(((size_t)ci.n + 1) * format_type_size(ci.type));
        cr_assert_eq(store_block_decode(&b, i, 0, ci.n, arrays[i], &err), 0, "%s", err.message);
        if (ci.role == STORE_ROLE_VC_OFFSETS && ci.n > 2) {
            int64_t *off = arrays[i], t = off[1];
            off[1] = off[ci.n - 1];
            off[ci.n - 1] = t;
        }
        cols[i] = (struct format_column){ci.role, ci.index, ci.type, ci.n, arrays[i], false, false};
    }
    size_t cap = format_block_bound(cols, ncols), len;
    void *bad = malloc(cap);
    struct format_error ferr;
    cr_assert_eq(format_block_encode(&b.block.info, cols, ncols, FORMAT_POLICY_RAW, bad, cap, &len,
                                     &ferr), 0, "%s", ferr.message);
    struct store_block hb;
    cr_assert_eq(store_block_open(&hb, v, b.types, 0, b.span_start, bad, len, true, &err), 0,
                 "%s", err.message);
    struct store_want every = {.whole = true, .every = true};
    struct store_rows rows;
    cr_assert_eq(store_rows_load(&hb, &every, &rows, &err), -1);
    cr_assert_neq(strstr(err.message, "value-count offsets"), NULL, "%s", err.message);
    char span[32];
    snprintf(span, sizeof span, "%lld", (long long)b.span_start);
    cr_assert_neq(strstr(err.message, span), NULL, "%s", err.message);
    store_rows_free(v, &rows);
    struct store_want range = {.from = b.span_start, .to = b.span_start + b.width * b.span,
                               .vcs = all};
    cr_assert_eq(store_rows_load(&hb, &range, &rows, &err), -1);
    store_rows_free(v, &rows);
    for (int i = 0; i < ncols; i++)
        free(arrays[i]);
    free(bad);
    store_segments_end(&it);
    store_read_end(r);
    store_close(s);
    fixture_remove(dir);
}
