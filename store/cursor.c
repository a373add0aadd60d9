/* cursor.c -- decoding a segment's blocks: the one decoder every reader uses
 * (the engine's scan, straum-dump, the writer's loads and folds, verify).
 *
 * A reader names what it wants of one family of one block (struct
 * store_want) and gets those columns of those rows (struct store_rows). The
 * cost is what the engine measured and kept: only the columns asked for; of
 * a range, only the rows of the buckets in it, found through the family's
 * bucket starts without reading the bucket column; each column a slice, read
 * in place for RAW, BITPACK and GFOR and from the anchor before for the others
 * (format_block_decode_slice); value-count codes, and rows a reader can do
 * without, left encoded (struct store_lazy_runs) for a reader that picks a
 * few; and the checksum of each column hashed once per snapshot and thread
 * (checked.c), not at every decode.
 *
 * Invariants a decoded view keeps, whatever the bytes:
 *   1. every array holds the length its table says (rows->n, rows->n + 1
 *      offsets, rows->vc_n[k] runs): a column of another type or length is
 *      an error, never a short read;
 *   2. bucket indexes lie in [0, span); bucket starts ascend from 0 to the
 *      family's rows;
 *   3. value-count offsets ascend, are never negative, and (whole blocks)
 *      start at 0 and end at the runs column's length.
 * Every error names the block's span. */
#include "base/scratch.h"
#include "store/internal.h"

#include <stdlib.h>
#include <string.h>

#define ANY_LENGTH UINT32_MAX

static int no_memory(struct store_error *err)
{
    store_fail(err, "out of memory");
    if (err)
        err->kind = STORE_ERR_NO_MEMORY;
    return -1;
}

void store_segment_block(struct store_read *r, const struct store_segment *seg, int i,
                         struct store_block *out)
{
    const struct sql_view *v = &r->s->views->views[seg->view];
    *out = (struct store_block){
        .block = i == 0 ? seg->block : seg->deltas[i - 1].block,
        .v = v,
        .types = r->s->types[seg->view],
        .span_start = seg->span_start,
        .width = v->widths[seg->width],
        .span = store_span_buckets(v, seg->width),
        .snapshot = store_read_snapshot_id(r),
    };
}

int store_block_open(struct store_block *out, const struct sql_view *v,
                     const struct store_column_type *types, int width, int64_t span_start,
                     const void *bytes, size_t len, bool verify, struct store_error *err)
{
    memset(out, 0, sizeof *out);
    struct format_error ferr;
    if (format_block_open(&out->block, bytes, len, verify, &ferr))
        return store_fail(err, "%s", ferr.message);
    out->v = v;
    out->types = types;
    out->span_start = span_start;
    out->width = v->widths[width];
    out->span = store_span_buckets(v, width);
    return 0;
}

int store_block_decode(const struct store_block *b, int i, uint32_t first, uint32_t count,
                       void *out, struct store_error *err)
{
    struct format_column_info ci = {0};
    format_block_column(&b->block, i, &ci);
    const uint8_t *bytes = b->block.base + ci.offset;
    bool known = b->snapshot && store_column_was_checked(b->snapshot, bytes, ci.length,
                                                         ci.checksum);
    struct format_error ferr;
    if (format_block_decode_slice(&b->block, i, first, count, !known, out, &ferr))
        return store_fail(err, "segment block of span %lld: %s", (long long)b->span_start,
                          ferr.message);
    if (!known && b->snapshot)
        store_column_mark_checked(b->snapshot, bytes, ci.length, ci.checksum);
    return 0;
}

/* The number of column (role, index), which must have the type and, unless
 * n is ANY_LENGTH, n elements; -1 with err otherwise. */
static int find_column(const struct store_block *b, uint16_t role, uint16_t index,
                       enum format_type type, uint32_t n, struct store_error *err)
{
    int i = format_block_find(&b->block, role, index);
    struct format_column_info ci = {0};
    if (i >= 0)
        format_block_column(&b->block, i, &ci);
    if (i < 0 || ci.type != type || (n != ANY_LENGTH && ci.n != n))
        return store_fail(err, "segment block of span %lld lacks column (role %u, index %u) "
                               "of %u elements",
                          (long long)b->span_start, role, index, n);
    return i;
}

/* Elements [first, first + count) of column (role, index), as find_column
 * checks it, in a new array (count + 1 elements: room for an end). */
static void *column(const struct store_block *b, uint16_t role, uint16_t index,
                    enum format_type type, uint32_t n, uint32_t first, uint32_t count,
                    struct store_error *err)
{
    int i = find_column(b, role, index, type, n, err);
    if (i < 0)
        return NULL;
    void *a = scratch_malloc(((size_t)count + 1) * format_type_size(type));
    if (!a) {
        no_memory(err);
        return NULL;
    }
    if (store_block_decode(b, i, first, count, a, err)) {
        scratch_free(a);
        return NULL;
    }
    return a;
}

static bool column_seeks(const struct format_block *b, int i)
{
    struct format_column_info ci = {0};
    format_block_column(b, i, &ci);
    return format_codec_seeks(ci.codec);
}

bool store_block_family(const struct store_block *b, uint16_t family, const bool *vcs,
                        uint32_t *nrows)
{
    *nrows = b->block.info.ncells;
    if (family == 0)
        return true;
    int i = format_block_find(&b->block, (uint16_t)(family + STORE_ROLE_BUCKET), 0);
    for (int k = 0; i >= 0 && vcs && k < b->v->nvalue_counts; k++)
        if (vcs[k] && format_block_find(&b->block, (uint16_t)(family + STORE_ROLE_VC_OFFSETS),
                                        (uint16_t)k) < 0)
            i = -1; /* a marginal without its value counts */
    if (i < 0)
        return false;
    struct format_column_info ci = {0};
    format_block_column(&b->block, i, &ci);
    *nrows = ci.n;
    return true;
}

static bool wants(const struct store_want *w, const bool *flags, int k)
{
    return w->every || (flags && flags[k]);
}

/* Every row, each bucket index read and checked inside the span. */
static int rows_whole(const struct store_block *b, uint16_t base, uint32_t n,
                      struct store_rows *r, struct store_error *err)
{
    r->first = 0;
    r->n = n;
    if (!(r->bucket = column(b, (uint16_t)(base + STORE_ROLE_BUCKET), 0, FORMAT_I64, n, 0, n, err)))
        return -1;
    for (uint32_t i = 0; i < n; i++)
        if (r->bucket[i] < 0 || r->bucket[i] >= b->span)
            return store_fail(err, "segment block of span %lld: cell %u has bucket index %lld "
                                   "outside the span",
                              (long long)b->span_start, i, (long long)r->bucket[i]);
    return 0;
}

/* Span rows: every row, all of bucket index 0. */
static int rows_of_span(uint32_t n, struct store_rows *r, struct store_error *err)
{
    r->first = 0;
    r->n = n;
    r->bucket = scratch_calloc((size_t)n + 1, sizeof *r->bucket);
    return r->bucket ? 0 : no_memory(err);
}

/* The rows in [from, to) from the family's bucket starts: the bucket column
 * is not read at all, each row's bucket follows from the starts. */
static int rows_by_starts(const struct store_block *b, uint16_t base, uint32_t n, int64_t from,
                          int64_t to, struct store_rows *r, struct store_error *err)
{
    int span = b->span;
    int64_t *starts = column(b, (uint16_t)(base + STORE_ROLE_BUCKET), 1, FORMAT_I64,
                             (uint32_t)span + 1, 0, (uint32_t)span + 1, err);
    if (!starts)
        return -1;
    bool sane = starts[0] == 0 && starts[span] == n;
    for (int k = 0; k < span && sane; k++)
        sane = starts[k] <= starts[k + 1];
    /* Bucket indexes [bf, bt) lie in [from, to). */
    int bf = 0, bt = 0;
    while (bf < span && b->span_start + bf * b->width < from)
        bf++;
    for (bt = bf; bt < span && b->span_start + bt * b->width < to;)
        bt++;
    r->first = sane ? (uint32_t)starts[bf] : 0;
    r->n = sane ? (uint32_t)(starts[bt] - starts[bf]) : 0;
    r->bucket = sane ? scratch_malloc(sizeof *r->bucket * (r->n + 1)) : NULL;
    for (int k = bf; r->bucket && k < bt; k++)
        for (int64_t i = starts[k]; i < starts[k + 1]; i++)
            r->bucket[i - starts[bf]] = k;
    scratch_free(starts);
    if (!sane)
        return store_fail(err, "segment block of span %lld has bad bucket starts",
                          (long long)b->span_start);
    return r->bucket ? 0 : no_memory(err);
}

int store_rows_tables(const struct sql_view *v, struct store_rows *r)
{
    size_t nk = (size_t)v->ncell_keys + 1, nc = (size_t)v->ncounts + 1,
           ns = (size_t)v->nsums + 1, nv = (size_t)v->nvalue_counts + 1;
    /* Pointers first, then the 4-byte and 1-byte tables: each aligned. */
    size_t pointers = nk + nc + ns + 4 * nv;
    char *block = scratch_calloc(1, pointers * sizeof(void *) + nv * sizeof(uint32_t) + ns);
    if (!block)
        return -1;
    void **p = (void **)block;
    r->keys = (int64_t **)p, p += nk;
    r->counts = (int64_t **)p, p += nc;
    r->sums = p, p += ns;
    r->vc_off = (int64_t **)p, p += nv;
    r->vc_codes = (int64_t **)p, p += nv;
    r->vc_rows = (int64_t **)p, p += nv;
    r->vc_lazy = (struct store_lazy_runs **)p, p += nv;
    r->vc_n = (uint32_t *)p;
    r->sum_real = (bool *)(r->vc_n + nv);
    return 0;
}

int store_rows_load(const struct store_block *b, const struct store_want *w,
                    struct store_rows *r, struct store_error *err)
{
    const struct sql_view *v = b->v;
    uint16_t base = w->family;
    memset(r, 0, sizeof *r);
    if (store_rows_tables(v, r))
        return no_memory(err);
    uint32_t n;
    if (!store_block_family(b, base, NULL, &n))
        return store_fail(err, "segment block of span %lld lacks rollup family %u",
                          (long long)b->span_start, base);
    r->nfamily = n;
    int rc = w->span_rows ? rows_of_span(n, r, err)
           : w->whole     ? rows_whole(b, base, n, r, err)
                          : rows_by_starts(b, base, n, w->from, w->to, r, err);
    if (rc)
        return -1;
    const uint32_t first = r->first, m = r->n;
    for (int k = 0; k < v->ncell_keys; k++) {
        uint16_t role = (uint16_t)(base + STORE_ROLE_KEY);
        if (!wants(w, w->keys, k) ||
            (w->every && base && format_block_find(&b->block, role, (uint16_t)k) < 0))
            continue; /* asked of every column: a key the family rolled away */
        if (!(r->keys[k] = column(b, role, (uint16_t)k, FORMAT_I64, n, first, m, err)))
            return -1;
    }
    return w->defer_measures ? 0 : store_rows_load_measures(b, w, r, err);
}

void store_rows_narrow(const struct sql_view *v, struct store_rows *r, uint32_t lo, uint32_t hi)
{
    uint32_t m = hi - lo;
    if (lo > 0) {
        memmove(r->bucket, r->bucket + lo, sizeof *r->bucket * m);
        for (int k = 0; k < v->ncell_keys; k++)
            if (r->keys[k])
                memmove(r->keys[k], r->keys[k] + lo, sizeof *r->keys[k] * m);
    }
    r->first += lo;
    r->n = m;
}

int store_rows_load_measures(const struct store_block *b, const struct store_want *w,
                             struct store_rows *r, struct store_error *err)
{
    const struct sql_view *v = b->v;
    const uint16_t base = w->family;
    const uint32_t n = r->nfamily, first = r->first, m = r->n;
    for (int k = 0; k < v->ncounts; k++)
        if (wants(w, w->counts, k) &&
            !(r->counts[k] = column(b, (uint16_t)(base + STORE_ROLE_COUNT), (uint16_t)k,
                                    FORMAT_I64, n, first, m, err)))
            return -1;
    for (int k = 0; k < v->nsums; k++) {
        r->sum_real[k] = b->types[v->sums[k].fact_column].type == STORE_TYPE_FLOAT;
        if (wants(w, w->sums, k) &&
            !(r->sums[k] = column(b, (uint16_t)(base + STORE_ROLE_SUM), (uint16_t)k,
                                  r->sum_real[k] ? FORMAT_F64 : FORMAT_I128, n, first, m, err)))
            return -1;
    }
    for (int k = 0; k < v->nvalue_counts; k++) {
        if (!wants(w, w->vcs, k) ||
            (w->every && base &&
             format_block_find(&b->block, (uint16_t)(base + STORE_ROLE_VC_OFFSETS),
                               (uint16_t)k) < 0))
            continue; /* asked of every column: a marginal that left its value counts out */
        int64_t *off = r->vc_off[k] = column(b, (uint16_t)(base + STORE_ROLE_VC_OFFSETS),
                                             (uint16_t)k, FORMAT_I64, n + 1, first, m + 1, err);
        if (!off)
            return -1;
        int64_t runs = off[m] - off[0];
        if (off[0] < 0 || (w->whole && off[0] != 0))
            runs = -1;
        for (uint32_t i = 0; i < m; i++)
            if (off[i] > off[i + 1])
                runs = -1;
        if (runs < 0 || runs > FORMAT_MAX_VALUES)
            return store_fail(err, "segment block of span %lld has bad value-count offsets",
                              (long long)b->span_start);
    }
    return w->defer_runs ? 0 : store_rows_load_runs(b, w, r, NULL, err);
}

/* Runs [from, to) of value count k into codes and rows at position at;
 * with lazy set, the rows only (none when rows_pending), and *lazy says
 * where the rest lies. Whole blocks: the runs columns hold exactly the runs
 * the offsets say. */
static int runs_into(const struct store_block *b, const struct store_want *w, int k,
                     int64_t from, int64_t to, int64_t *codes, int64_t *rows, int64_t at,
                     struct store_lazy_runs *lazy, struct store_error *err)
{
    uint16_t base = w->family;
    uint32_t count = (uint32_t)(to - from), n = w->whole ? count : ANY_LENGTH;
    int ic = find_column(b, (uint16_t)(base + STORE_ROLE_VC_VALUES), (uint16_t)k, FORMAT_I64, n,
                         err);
    int ir = ic < 0 ? -1
                    : find_column(b, (uint16_t)(base + STORE_ROLE_VC_COUNTS), (uint16_t)k,
                                  FORMAT_I64, n, err);
    if (ir < 0)
        return -1;
    bool rows_pending = lazy && w->lazy_rows && w->lazy_rows[k] && column_seeks(&b->block, ir);
    if (!rows_pending && store_block_decode(b, ir, (uint32_t)from, count, rows + at, err))
        return -1;
    if (lazy) {
        *lazy = (struct store_lazy_runs){*b, ic, ir, rows_pending, (uint32_t)from};
        return 0;
    }
    return store_block_decode(b, ic, (uint32_t)from, count, codes + at, err);
}

int store_rows_load_runs(const struct store_block *b, const struct store_want *w,
                         struct store_rows *r, const bool *pass, struct store_error *err)
{
    const uint32_t m = r->n;
    for (int k = 0; k < b->v->nvalue_counts; k++) {
        if (!r->vc_off[k])
            continue;
        int64_t *off = r->vc_off[k], all = off[m] - off[0], wanted = 0;
        for (uint32_t i = 0; pass && i < m; i++)
            wanted += pass[i] ? off[i + 1] - off[i] : 0;
        bool packed = pass && wanted < all / 4;
        int64_t got = packed ? wanted : all;
        r->vc_codes[k] = scratch_malloc(sizeof(int64_t) * (size_t)(got + 1));
        r->vc_rows[k] = scratch_malloc(sizeof(int64_t) * (size_t)(got + 1));
        r->vc_n[k] = (uint32_t)got;
        bool defer = w->lazy_codes && !packed;
        struct store_lazy_runs *lazy = defer ? scratch_malloc(sizeof *lazy) : NULL;
        if (!r->vc_codes[k] || !r->vc_rows[k] || (defer && !lazy)) {
            scratch_free(lazy);
            return no_memory(err);
        }
        if (!packed) {
            if (runs_into(b, w, k, off[0], off[m], r->vc_codes[k], r->vc_rows[k], 0, lazy, err)) {
                scratch_free(lazy);
                return -1;
            }
            r->vc_lazy[k] = lazy;
            for (uint32_t i = m + 1; i-- > 0;)
                off[i] -= off[0];
            continue;
        }
        /* Each stretch of passing rows is one slice; off is rewritten
         * behind the reads (row i's new offset once rows < i are done). */
        int64_t at = 0;
        for (uint32_t i = 0; i < m;) {
            if (!pass[i]) {
                off[i++] = at;
                continue;
            }
            uint32_t j = i;
            while (j < m && pass[j])
                j++;
            int64_t start = off[i];
            if (runs_into(b, w, k, start, off[j], r->vc_codes[k], r->vc_rows[k], at, NULL, err))
                return -1;
            for (; i < j; i++)
                off[i] = at + (off[i] - start);
            at += off[j] - start;
        }
        off[m] = at;
    }
    return 0;
}

void store_rows_take_runs(struct store_rows *r, int k, int64_t **codes, int64_t **run_rows,
                          uint32_t *n, struct store_lazy_runs **lazy)
{
    *codes = r->vc_codes[k];
    *run_rows = r->vc_rows[k];
    *n = r->vc_n[k];
    *lazy = r->vc_lazy[k];
    r->vc_codes[k] = r->vc_rows[k] = NULL;
    r->vc_lazy[k] = NULL;
    r->vc_n[k] = 0;
}

void store_rows_free(const struct sql_view *v, struct store_rows *r)
{
    if (!r->borrowed) {
        scratch_free(r->bucket);
        for (int k = 0; r->keys && k < v->ncell_keys; k++)
            scratch_free(r->keys[k]);
        for (int k = 0; r->counts && k < v->ncounts; k++)
            scratch_free(r->counts[k]);
        for (int k = 0; r->sums && k < v->nsums; k++)
            scratch_free(r->sums[k]);
        for (int k = 0; r->vc_off && r->vc_codes && r->vc_rows && r->vc_lazy && k < v->nvalue_counts;
             k++) {
            scratch_free(r->vc_off[k]);
            scratch_free(r->vc_codes[k]);
            scratch_free(r->vc_rows[k]);
            scratch_free(r->vc_lazy[k]);
        }
    }
    scratch_free(r->keys); /* the tables' one block (store_rows_tables) */
    memset(r, 0, sizeof *r);
}

int store_lazy_codes(const struct store_lazy_runs *l, uint32_t i, uint32_t count, int64_t *out,
                     struct store_error *err)
{
    return store_block_decode(&l->b, l->codes_column, l->first + i, count, out, err);
}

int store_lazy_rows(const struct store_lazy_runs *l, uint32_t i, uint32_t count, int64_t *out,
                    struct store_error *err)
{
    return store_block_decode(&l->b, l->rows_column, l->first + i, count, out, err);
}

bool store_lazy_codes_seek(const struct store_lazy_runs *l)
{
    return column_seeks(&l->b.block, l->codes_column);
}

/* Column i as a format_seek, its checksum checked once per snapshot. 1, 0
 * when it does not seek in place, -1 with err on a checksum mismatch. */
static int seek_column(const struct store_block *b, int i, struct format_seek *out,
                       struct store_error *err)
{
    struct format_column_info ci = {0};
    format_block_column(&b->block, i, &ci);
    if (ci.type != FORMAT_I64 || !format_codec_in_place(ci.codec))
        return 0;
    const uint8_t *bytes = b->block.base + ci.offset;
    bool known = b->snapshot && store_column_was_checked(b->snapshot, bytes, ci.length,
                                                         ci.checksum);
    struct format_error ferr;
    if (format_block_seek(&b->block, i, !known, out, &ferr))
        return store_fail(err, "segment block of span %lld: %s", (long long)b->span_start,
                          ferr.message);
    if (!known && b->snapshot)
        store_column_mark_checked(b->snapshot, bytes, ci.length, ci.checksum);
    return 1;
}

int store_lazy_seek(const struct store_lazy_runs *l, uint32_t count, struct store_seek_runs *out,
                    struct store_error *err)
{
    struct format_column_info ci = {0};
    format_block_column(&l->b.block, l->codes_column, &ci);
    int ic = format_block_find(&l->b.block, (uint16_t)(ci.role + 1),
                               (uint16_t)(STORE_VC_CUMULATIVE + ci.index));
    if (ic < 0 || ci.role % STORE_ROLE_TOTAL != STORE_ROLE_VC_VALUES % STORE_ROLE_TOTAL ||
        ci.role < STORE_ROLE_TOTAL)
        return 0;
    int rc = seek_column(&l->b, l->codes_column, &out->codes, err);
    if (rc == 1)
        rc = seek_column(&l->b, ic, &out->cum, err);
    if (rc == 1 && out->cum.n != out->codes.n)
        return store_fail(err, "segment block of span %lld: %u running rows for %u runs",
                          (long long)l->b.span_start, out->cum.n, out->codes.n);
    if (rc == 1 && (uint64_t)l->first + count > out->codes.n)
        return store_fail(err, "segment block of span %lld: value-count offsets pass its %u runs",
                          (long long)l->b.span_start, out->codes.n);
    return rc;
}
