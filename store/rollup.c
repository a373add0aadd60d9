/* rollup.c -- the pre-merged rows of a segment block (the star tree's upper
 * levels), built at encode from the block's cells.
 *
 * A rollup family sums the cells over every cell key but at most one, either
 * per bucket or over the whole span (SPEC.md "Rollups"):
 *
 *   bucket totals       one row per bucket                  (key -1, per bucket)
 *   bucket marginal k   one row per (bucket, key k value)   (key  k, per bucket)
 *   span total          one row                             (key -1, span)
 *   span marginal k     one row per key k value             (key  k, span)
 *   span cells          one row per distinct key            (every key, span)
 *
 * so that an ask which reads at most one key, over whole buckets or whole
 * spans, folds a few rows instead of every cell, and one that reads more
 * keys over whole spans folds a span's distinct keys rather than every
 * bucket's cells (a six-month percentile by zone and payment type reads
 * 1,600 rows, not 26 weeks of them). Each family's columns are
 * the cell columns' roles plus store_rollup_base(). A marginal that would
 * not have at most half the rows of the cells is left out (it would save
 * little and cost as much again on disk: serve reads the cells instead). At
 * the finest width and over a span, one whose value counts would not have at
 * most half the cells' runs keeps its counts and sums only; a bucket
 * marginal above the finest width keeps them whatever their size, since its
 * rows are bisected by position where the cells' runs would all be merged (a
 * median by zone over a week: 31 ms from the day cells, 0.6 ms from the day
 * marginals). A family whose exact sum would overflow 128 bits is left out.
 *
 * Span families exist at the view's widest width only: serve covers a range
 * widest first, so a narrower width only ever serves an edge shorter than
 * one bucket of the next width, which is rarely a whole span (an hour edge
 * is under a day, a span 64 hours; a day edge under a week, a span 8 days;
 * where it is, serve folds bucket rows instead). They are
 * built from the bucket families when those exist: the merge then reads a
 * few hundred rows instead of every cell. */
#include "store/internal.h"

#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

/* ---- Block columns ----------------------------------------------------------- */

void *block_column_add(struct block_columns *bc, uint16_t role, uint16_t index,
                       enum format_type type, uint32_t n)
{
    if (bc->ncols == bc->cap) {
        int cap = bc->cap ? bc->cap * 2 : 32;
        struct format_column *cols = realloc(bc->cols, sizeof *cols * (size_t)cap);
        if (!cols)
            return NULL;
        bc->cols = cols;
        void **arrays = realloc(bc->arrays, sizeof *arrays * (size_t)cap);
        if (!arrays)
            return NULL;
        bc->arrays = arrays;
        bc->cap = cap;
    }
    void *a = malloc((n ? n : 1) * format_type_size(type));
    if (!a)
        return NULL;
    bc->arrays[bc->ncols] = a;
    /* Value-count runs, the cells' and the rollups', are most of a store's
     * bytes: they may take the smaller, slower RICE codecs. A rollup row's
     * runs are mostly read whole by one group, which decodes their rows and
     * only the code it picks (serve's struct vc_lazy): a code of a RICE
     * column costs a walk from its anchor, at most 127 codes. The cells'
     * run offsets too (0.4 MB, DRICE): only asks that merge cells' runs
     * read them, and those spend their time merging. */
    bool compact = role % STORE_ROLE_TOTAL == STORE_ROLE_VC_VALUES % STORE_ROLE_TOTAL ||
                   role % STORE_ROLE_TOTAL == STORE_ROLE_VC_COUNTS % STORE_ROLE_TOTAL ||
                   role == STORE_ROLE_VC_OFFSETS;
    bc->cols[bc->ncols++] = (struct format_column){role, index, type, n, a, compact, false};
    return a;
}

void block_columns_free(struct block_columns *bc)
{
    for (int i = 0; i < bc->ncols; i++)
        free(bc->arrays[i]);
    free(bc->arrays);
    free(bc->cols);
    memset(bc, 0, sizeof *bc);
}

/* Drops the columns added since ncols (a family left out half-built). */
static void truncate_columns(struct block_columns *bc, int ncols)
{
    while (bc->ncols > ncols)
        free(bc->arrays[--bc->ncols]);
}

static void *block_column_find(const struct block_columns *bc, uint16_t role, uint16_t index)
{
    for (int i = 0; i < bc->ncols; i++)
        if (bc->cols[i].role == role && bc->cols[i].index == index)
            return bc->arrays[i];
    return NULL;
}

int block_add_bucket_starts(struct block_columns *bc, uint16_t role, int span,
                            const int64_t *bucket, uint32_t n)
{
    int64_t *starts = block_column_add(bc, role, 1, FORMAT_I64, (uint32_t)span + 1);
    if (!starts)
        return -1;
    uint32_t i = 0;
    for (int b = 0; b <= span; b++) {
        while (i < n && bucket[i] < b)
            i++;
        starts[b] = i;
    }
    return 0;
}

/* ---- A family's rows, as column pointers into a block_columns -------------------
 *
 * The cursor's decoded view of a family (struct store_rows), borrowed: its
 * arrays are the block_columns' being built, and the keys a family rolled
 * away NULL. */

static int rows_alloc(const struct sql_view *v, struct store_rows *r)
{
    memset(r, 0, sizeof *r);
    r->borrowed = true;
    return store_rows_tables(v, r);
}

/* Whether a family holds its value counts (a marginal may leave them out). */
static bool holds_vcs(const struct sql_view *v, const struct store_rows *r)
{
    return v->nvalue_counts == 0 || r->vc_off[0] != NULL;
}

/* The cells' rows (family 0), found among the columns already built. */
static int cell_rows(const struct sql_view *v, const struct block_columns *bc, uint32_t n,
                     struct store_rows *r)
{
    if (rows_alloc(v, r))
        return -1;
    r->n = n;
    r->bucket = block_column_find(bc, STORE_ROLE_BUCKET, 0);
    for (int k = 0; k < v->ncell_keys; k++)
        r->keys[k] = block_column_find(bc, STORE_ROLE_KEY, (uint16_t)k);
    for (int k = 0; k < v->ncounts; k++)
        r->counts[k] = block_column_find(bc, STORE_ROLE_COUNT, (uint16_t)k);
    for (int k = 0; k < v->nsums; k++)
        r->sums[k] = block_column_find(bc, STORE_ROLE_SUM, (uint16_t)k);
    for (int k = 0; k < v->nvalue_counts; k++) {
        r->vc_off[k] = block_column_find(bc, STORE_ROLE_VC_OFFSETS, (uint16_t)k);
        r->vc_codes[k] = block_column_find(bc, STORE_ROLE_VC_VALUES, (uint16_t)k);
        r->vc_rows[k] = block_column_find(bc, STORE_ROLE_VC_COUNTS, (uint16_t)k);
    }
    return 0;
}

/* ---- Grouping ------------------------------------------------------------------ */

enum { EVERY_KEY = -2 };

struct grouping {
    const struct store_rows *src;
    bool span; /* one group per key value over the span, not per bucket */
    int key;   /* -1: every key rolled away; EVERY_KEY: every key kept */
    int span_buckets;
    int nkeys; /* the view's cell keys */
    bool keep_vcs; /* value counts kept whatever their size (marginals above the finest width) */
};

/* Whether rows a and b of the source hold the same key (the grouping's). */
static int cmp_keys(const struct grouping *g, uint32_t a, uint32_t b)
{
    int from = g->key == EVERY_KEY ? 0 : g->key, to = g->key == EVERY_KEY ? g->nkeys : g->key + 1;
    for (int k = from; k >= 0 && k < to; k++)
        if (g->src->keys[k][a] != g->src->keys[k][b])
            return g->src->keys[k][a] < g->src->keys[k][b] ? -1 : 1;
    return 0;
}

static int cmp_in_group_order(const void *pa, const void *pb, void *ctx)
{
    const struct grouping *g = ctx;
    uint32_t a = *(const uint32_t *)pa, b = *(const uint32_t *)pb;
    if (!g->span && g->src->bucket[a] != g->src->bucket[b])
        return g->src->bucket[a] < g->src->bucket[b] ? -1 : 1;
    int c = cmp_keys(g, a, b);
    if (c)
        return c;
    return a < b ? -1 : a > b; /* the source's order: float sums add the same way every time */
}

/* perm[0..n) = 0..n-1 in cmp_in_group_order's order: by the packed order
 * of the fields the grouping keeps (order.c), which a stable sort leaves
 * in the source's order within a group, when they fit one code; else, or
 * short of memory for the codes, by qsort_r. Cannot fail. */
static void sort_in_group_order(const struct grouping *g, uint32_t *perm, uint32_t n)
{
    const struct store_rows *src = g->src;
    int from = g->key == EVERY_KEY ? 0 : g->key, to = g->key == EVERY_KEY ? g->nkeys : g->key + 1;
    int nk = from >= 0 && to > from ? to - from : 0, first = g->span ? 0 : 1;
    struct order_packing p;
    order_packing_init(&p, first + nk);
    struct code_run *codes = NULL;
    if (n >= 2 && first + nk <= ORDER_MAX_FIELDS) {
        for (uint32_t i = 0; i < n; i++) {
            if (first)
                order_packing_see(&p, 0, src->bucket[i]);
            for (int k = 0; k < nk; k++)
                order_packing_see(&p, first + k, src->keys[from + k][i]);
        }
        if (order_packing_fits(&p))
            codes = malloc(sizeof *codes * n);
    }
    if (codes) {
        for (uint32_t i = 0; i < n; i++) {
            int64_t code = first ? order_packing_push(&p, 0, 0, src->bucket[i]) : 0;
            for (int k = 0; k < nk; k++)
                code = order_packing_push(&p, code, first + k, src->keys[from + k][i]);
            codes[i] = (struct code_run){code, i};
        }
        if (code_runs_sort(codes, n) == 0) {
            for (uint32_t i = 0; i < n; i++)
                perm[i] = (uint32_t)codes[i].rows;
            free(codes);
            return;
        }
        free(codes);
    }
    for (uint32_t i = 0; i < n; i++)
        perm[i] = i;
    qsort_r(perm, n, sizeof *perm, cmp_in_group_order, (void *)g);
}

static bool same_group(const struct grouping *g, uint32_t a, uint32_t b)
{
    return (g->span || g->src->bucket[a] == g->src->bucket[b]) && cmp_keys(g, a, b) == 0;
}

/* ---- Building a family ------------------------------------------------------------ */

enum { BUILT = 0, SKIPPED = 1, FAILED = -1 };

/* Column i keeps its first n elements and gives back the rest. */
static void *shrink_column(struct block_columns *bc, int i, uint32_t n)
{
    struct format_column *c = &bc->cols[i];
    void *a = realloc(bc->arrays[i], (n ? n : 1) * format_type_size(c->type));
    if (a) /* else the longer array serves as well */
        bc->arrays[i] = a;
    c->values = bc->arrays[i];
    c->n = n;
    return bc->arrays[i];
}

/* Value count k of the groups (group g = perm[start[g]..start[g+1])), or
 * SKIPPED as soon as its runs pass max_runs. Each group's runs are merged
 * in a scratch buffer as long as the group's input, then appended to the
 * columns, which are allocated for every input run but only written as
 * far as the merged runs reach: a family that merged the widest segment's
 * cells (3.9 M runs at full scale) through one buffer of all their runs
 * would touch that much again, enough to set a fold's peak memory. */
static int build_vc(const struct grouping *gr, int k, const uint32_t *perm, const uint32_t *start,
                    uint32_t ng, uint16_t base, uint64_t max_runs, struct block_columns *bc,
                    struct store_rows *out)
{
    const struct store_rows *src = gr->src;
    uint32_t total = src->n ? (uint32_t)src->vc_off[k][src->n] : 0;
    int64_t *off = block_column_add(bc, base + STORE_ROLE_VC_OFFSETS, (uint16_t)k, FORMAT_I64, ng + 1);
    int64_t *codes = off ? block_column_add(bc, base + STORE_ROLE_VC_VALUES, (uint16_t)k, FORMAT_I64, total) : NULL;
    int64_t *rows = codes ? block_column_add(bc, base + STORE_ROLE_VC_COUNTS, (uint16_t)k, FORMAT_I64, total) : NULL;
    struct code_run *scratch = NULL;
    size_t cap = 0, used = 0;
    int rc = FAILED;
    if (!rows)
        goto done;
    off[0] = 0;
    for (uint32_t g = 0; g < ng; g++) {
        size_t n = 0, need = 0;
        for (uint32_t i = start[g]; i < start[g + 1]; i++)
            need += (size_t)(src->vc_off[k][perm[i] + 1] - src->vc_off[k][perm[i]]);
        if (need > cap) {
            free(scratch);
            cap = need > 2 * cap ? need : 2 * cap;
            if (!(scratch = malloc(sizeof *scratch * cap)))
                goto done;
        }
        for (uint32_t i = start[g]; i < start[g + 1]; i++) {
            uint32_t r = perm[i];
            for (int64_t j = src->vc_off[k][r]; j < src->vc_off[k][r + 1]; j++)
                scratch[n++] = (struct code_run){src->vc_codes[k][j], src->vc_rows[k][j]};
        }
        struct store_error err;
        int64_t m = store_runs_merge(scratch, n, &err);
        if (m < 0)
            goto done;
        if (used + (uint64_t)m > max_runs) {
            rc = SKIPPED;
            goto done;
        }
        for (int64_t j = 0; j < m; j++) { /* merged runs never outnumber their input */
            codes[used + (size_t)j] = scratch[j].code;
            rows[used + (size_t)j] = scratch[j].rows;
        }
        used += (size_t)m;
        off[g + 1] = (int64_t)used;
    }
    out->vc_off[k] = off; /* the columns just added: offsets, codes, rows */
    out->vc_codes[k] = shrink_column(bc, bc->ncols - 2, (uint32_t)used);
    out->vc_rows[k] = shrink_column(bc, bc->ncols - 1, (uint32_t)used);
    /* The codes read by position, and the rows' running sums beside them
     * (STORE_VC_CUMULATIVE): a percentile over a group of rollup rows
     * binary-searches each row instead of merging them. */
    bc->cols[bc->ncols - 2].compact = false;
    bc->cols[bc->ncols - 2].seekable = true;
    int64_t *cum = block_column_add(bc, base + STORE_ROLE_VC_COUNTS,
                                    (uint16_t)(STORE_VC_CUMULATIVE + k), FORMAT_I64,
                                    (uint32_t)used);
    if (!cum)
        goto done;
    bc->cols[bc->ncols - 1].compact = false;
    bc->cols[bc->ncols - 1].seekable = true;
    for (uint32_t g = 0; g < ng; g++) {
        int64_t sum = 0; /* a row's rows are one segment's: no overflow */
        for (int64_t j = off[g]; j < off[g + 1]; j++)
            cum[j] = sum += out->vc_rows[k][j];
    }
    rc = BUILT;
done:
    free(scratch);
    return rc;
}

static int build_sums(const struct sql_view *v, const struct store_column_type *types,
                      const struct grouping *gr, const uint32_t *perm, const uint32_t *start,
                      uint32_t ng, uint16_t base, struct block_columns *bc, struct store_rows *out)
{
    const struct store_rows *src = gr->src;
    for (int k = 0; k < v->nsums; k++) {
        bool real = types[v->sums[k].fact_column].type == STORE_TYPE_FLOAT;
        void *a = block_column_add(bc, base + STORE_ROLE_SUM, (uint16_t)k,
                                   real ? FORMAT_F64 : FORMAT_I128, ng);
        if (!a)
            return FAILED;
        out->sums[k] = a;
        for (uint32_t g = 0; g < ng; g++) {
            __int128 exact = 0, one;
            double sum = 0;
            for (uint32_t i = start[g]; i < start[g + 1]; i++) {
                if (real) {
                    sum += ((const double *)src->sums[k])[perm[i]];
                    continue;
                }
                memcpy(&one, (const char *)src->sums[k] + 16 * (size_t)perm[i], 16);
                if (__builtin_add_overflow(exact, one, &exact))
                    return SKIPPED;
            }
            if (real)
                ((double *)a)[g] = sum;
            else
                memcpy((char *)a + 16 * (size_t)g, &exact, 16);
        }
    }
    return BUILT;
}

/* Builds one family from src into bc; *out points at its columns. */
static int build_family(const struct sql_view *v, const struct store_column_type *types,
                        const struct grouping *gr, const struct store_rows *cells, uint16_t base,
                        struct block_columns *bc, struct store_rows *out)
{
    uint32_t ncells = cells->n;
    const int64_t *const *cell_off = (const int64_t *const *)cells->vc_off;
    const struct store_rows *src = gr->src;
    memset(out, 0, sizeof *out);
    uint32_t *perm = malloc(sizeof *perm * (src->n + 1));
    uint32_t *start = malloc(sizeof *start * (src->n + 1)), ng = 0;
    int rc = FAILED;
    if (!perm || !start || rows_alloc(v, out))
        goto done;
    sort_in_group_order(gr, perm, src->n);
    for (uint32_t i = 0; i < src->n; i++)
        if (i == 0 || !same_group(gr, perm[i - 1], perm[i]))
            start[ng++] = i;
    start[ng] = src->n;
    rc = SKIPPED;
    if (gr->key != -1 && (uint64_t)ng * 2 > ncells)
        goto done;
    out->n = ng;
    rc = FAILED;
    int64_t *bucket = block_column_add(bc, base + STORE_ROLE_BUCKET, 0, FORMAT_I64, ng);
    if (!bucket)
        goto done;
    out->bucket = bucket;
    for (uint32_t g = 0; g < ng; g++)
        bucket[g] = gr->span ? 0 : src->bucket[perm[start[g]]];
    if (!gr->span && block_add_bucket_starts(bc, base + STORE_ROLE_BUCKET, gr->span_buckets, bucket, ng))
        goto done;
    for (int k = 0; k < v->ncell_keys; k++) {
        if (gr->key != EVERY_KEY && gr->key != k)
            continue;
        int64_t *key = block_column_add(bc, base + STORE_ROLE_KEY, (uint16_t)k, FORMAT_I64, ng);
        if (!key)
            goto done;
        out->keys[k] = key;
        for (uint32_t g = 0; g < ng; g++)
            key[g] = src->keys[k][perm[start[g]]];
    }
    for (int k = 0; k < v->ncounts; k++) {
        int64_t *a = block_column_add(bc, base + STORE_ROLE_COUNT, (uint16_t)k, FORMAT_I64, ng);
        if (!a)
            goto done;
        out->counts[k] = a;
        for (uint32_t g = 0; g < ng; g++) {
            a[g] = 0;
            for (uint32_t i = start[g]; i < start[g + 1]; i++)
                a[g] += src->counts[k][perm[i]]; /* cell counts are rows of one segment: no overflow */
        }
    }
    if ((rc = build_sums(v, types, gr, perm, start, ng, base, bc, out)) != BUILT)
        goto done;
    /* A marginal's value counts can cost as much as the cells' (a zone's
     * fares over a day are nearly as many runs as its cells'): then the
     * family keeps its counts and sums and leaves the value counts out. */
    int before_vcs = bc->ncols;
    bool vcs = holds_vcs(v, src);
    for (int k = 0; vcs && k < v->nvalue_counts; k++) {
        uint64_t max_runs = gr->key == -1 || gr->keep_vcs ? UINT64_MAX
                                                          : (uint64_t)cell_off[k][ncells] / 2;
        if ((rc = build_vc(gr, k, perm, start, ng, base, max_runs, bc, out)) == FAILED)
            goto done;
        vcs = rc == BUILT;
    }
    if (!vcs) {
        truncate_columns(bc, before_vcs);
        for (int k = 0; k < v->nvalue_counts; k++)
            out->vc_off[k] = out->vc_codes[k] = out->vc_rows[k] = NULL;
    }
    rc = BUILT;
done:
    free(perm);
    free(start);
    return rc;
}

/* One family, kept only when built; *built tells which. */
static int add_family(const struct sql_view *v, const struct store_column_type *types,
                      const struct grouping *gr, const struct store_rows *cells, struct block_columns *bc,
                      struct store_rows *out, bool *built)
{
    int ncols = bc->ncols;
    uint16_t base = gr->key == EVERY_KEY ? STORE_ROLLUP_SPAN_CELLS : store_rollup_base(gr->span, gr->key);
    int rc = build_family(v, types, gr, cells, base, bc, out);
    *built = rc == BUILT;
    if (rc != BUILT)
        truncate_columns(bc, ncols);
    return rc == FAILED ? -1 : 0;
}

int rollup_build(const struct sql_view *v, const struct store_column_type *types, int width,
                 struct block_columns *bc, uint32_t ncells)
{
    int nkeys = v->ncell_keys < STORE_ROLLUP_MAX_KEYS ? v->ncell_keys : STORE_ROLLUP_MAX_KEYS;
    bool spans = width == v->nwidths - 1;
    int span_buckets = store_span_buckets(v, width);
    struct store_rows cells = {0}, bucket_rows = {0}, span_rows = {0};
    bool built;
    int rc = cell_rows(v, bc, ncells, &cells);
    /* Totals, then a span total from them. */
    struct grouping per_bucket = {&cells, false, -1, span_buckets, v->ncell_keys, false};
    if (rc == 0)
        rc = add_family(v, types, &per_bucket, &cells, bc, &bucket_rows, &built);
    if (rc == 0 && spans) {
        struct grouping whole = {built && holds_vcs(v, &bucket_rows) ? &bucket_rows : &cells, true, -1,
                                 span_buckets, v->ncell_keys, false};
        rc = add_family(v, types, &whole, &cells, bc, &span_rows, &built);
    }
    store_rows_free(v, &bucket_rows);
    store_rows_free(v, &span_rows);
    /* Marginals by one key, per bucket (a view of one key has its cells
     * for that) and over the span. */
    for (int k = 0; rc == 0 && k < nkeys; k++) {
        struct grouping by_key = {&cells, false, k, span_buckets, v->ncell_keys, width > 0};
        built = false;
        if (nkeys > 1)
            rc = add_family(v, types, &by_key, &cells, bc, &bucket_rows, &built);
        struct grouping whole = {built && holds_vcs(v, &bucket_rows) ? &bucket_rows : &cells, true, k,
                                 span_buckets, v->ncell_keys, false};
        if (rc == 0 && spans)
            rc = add_family(v, types, &whole, &cells, bc, &span_rows, &built);
        store_rows_free(v, &bucket_rows);
        store_rows_free(v, &span_rows);
    }
    /* The span cells, from the cells (no other family keeps every key). */
    if (rc == 0 && spans && v->ncell_keys >= 2) {
        struct grouping whole = {&cells, true, EVERY_KEY, span_buckets, v->ncell_keys, false};
        rc = add_family(v, types, &whole, &cells, bc, &span_rows, &built);
        store_rows_free(v, &span_rows);
    }
    store_rows_free(v, &cells);
    return rc;
}
