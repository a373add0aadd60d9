/* verify.c -- checking what the store holds: segment invariants, and the
 * compacted copy that straum-dump ships.
 *
 * The writer keeps these invariants; verify exists because disks and bugs
 * do not. Every failure names the segment (view, width, span) so that an
 * operator can find it with straum-dump segments. */
#include "store/internal.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static int64_t *column_i64(const struct format_block *b, uint16_t role, uint16_t index,
                           uint32_t n, struct store_error *err)
{
    return store_decode_column(b, role, index, FORMAT_I64, n, err);
}

/* The cells' bucket starts, when the block has them (older blocks do not),
 * point at the first cell of each bucket index. */
static int check_bucket_starts(const struct format_block *b, int span, const int64_t *bucket,
                               uint32_t n, struct store_error *err)
{
    if (format_block_find(b, STORE_ROLE_BUCKET, 1) < 0)
        return 0;
    int64_t *starts = column_i64(b, STORE_ROLE_BUCKET, 1, (uint32_t)span + 1, err);
    if (!starts)
        return -1;
    int rc = 0;
    uint32_t i = 0;
    for (int k = 0; rc == 0 && k <= span; k++) {
        while (i < n && bucket[i] < k)
            i++;
        if (starts[k] != i)
            rc = store_fail(err, "bucket index %d starts at cell %lld, not at cell %u", k,
                            (long long)starts[k], i);
    }
    free(starts);
    return rc;
}

/* A delta block's counts may be negative or zero (store.h); a base's are
 * positive. */
static int check_cells(const struct sql_view *v, int width, const struct format_block *b,
                       bool delta, struct store_error *err)
{
    int span = store_span_buckets(v, width);
    uint32_t n = b->info.ncells;
    int64_t *bucket = column_i64(b, STORE_ROLE_BUCKET, 0, n, err);
    int64_t *rows = bucket ? column_i64(b, STORE_ROLE_COUNT, 0, n, err) : NULL;
    int64_t **keys = calloc((size_t)v->ncell_keys + 1, sizeof *keys);
    int rc = rows && keys ? 0 : -1;
    if (!keys)
        store_fail(err, "out of memory");
    for (int k = 0; rc == 0 && k < v->ncell_keys; k++)
        if (!(keys[k] = column_i64(b, STORE_ROLE_KEY, (uint16_t)k, n, err)))
            rc = -1;
    for (uint32_t i = 0; rc == 0 && i < n; i++) {
        if (bucket[i] < 0 || bucket[i] >= span)
            rc = store_fail(err, "cell %u has bucket index %lld outside the span", i,
                            (long long)bucket[i]);
        else if (rows[i] <= 0 && !delta)
            rc = store_fail(err, "cell %u has %lld rows", i, (long long)rows[i]);
        else if (i > 0) {
            int cmp = bucket[i] < bucket[i - 1] ? -1 : bucket[i] > bucket[i - 1];
            for (int k = 0; cmp == 0 && k < v->ncell_keys; k++)
                cmp = keys[k][i] < keys[k][i - 1] ? -1 : keys[k][i] > keys[k][i - 1];
            if (cmp <= 0)
                rc = store_fail(err, "cell %u is not after cell %u in (bucket, keys) order",
                                i, i - 1);
        }
    }
    if (rc == 0)
        rc = check_bucket_starts(b, span, bucket, n, err);
    for (int k = 0; keys && k < v->ncell_keys; k++)
        free(keys[k]);
    free(keys);
    free(bucket);
    free(rows);
    return rc;
}

static int check_value_counts(const struct sql_view *v, const struct format_block *b,
                              bool delta, struct store_error *err)
{
    uint32_t n = b->info.ncells;
    for (int k = 0; k < v->nvalue_counts; k++) {
        int64_t *off = column_i64(b, STORE_ROLE_VC_OFFSETS, (uint16_t)k, n + 1, err);
        if (!off)
            return -1;
        int rc = off[0] == 0 ? 0 : store_fail(err, "value count %d offsets start at %lld", k,
                                                 (long long)off[0]);
        for (uint32_t i = 0; rc == 0 && i < n; i++)
            if (off[i + 1] < off[i])
                rc = store_fail(err, "value count %d offsets fall at cell %u", k, i);
        int64_t runs = off[n];
        int64_t *codes = NULL, *rows = NULL;
        if (rc == 0 && (runs < 0 || runs > FORMAT_MAX_VALUES))
            rc = store_fail(err, "value count %d holds %lld runs", k, (long long)runs);
        if (rc == 0 && !(codes = column_i64(b, STORE_ROLE_VC_VALUES, (uint16_t)k, (uint32_t)runs, err)))
            rc = -1;
        if (rc == 0 && !(rows = column_i64(b, STORE_ROLE_VC_COUNTS, (uint16_t)k, (uint32_t)runs, err)))
            rc = -1;
        for (uint32_t i = 0; rc == 0 && i < n; i++)
            for (int64_t r = off[i]; rc == 0 && r < off[i + 1]; r++) {
                if (rows[r] == 0 || (rows[r] < 0 && !delta))
                    rc = store_fail(err, "value count %d of cell %u has a run of %lld rows", k,
                                    i, (long long)rows[r]);
                else if (r > off[i] && codes[r] <= codes[r - 1])
                    rc = store_fail(err, "value count %d of cell %u is not in value order",
                                    k, i);
            }
        free(off);
        free(codes);
        free(rows);
        if (rc)
            return -1;
    }
    return 0;
}

/* Column i of a block decoded into a fresh array; NULL with err. */
static void *column_at(const struct format_block *b, int i, size_t *bytes, struct store_error *err)
{
    struct format_column_info ci;
    format_block_column(b, i, &ci);
    *bytes = (size_t)ci.n * format_type_size(ci.type);
    return store_decode_column(b, ci.role, ci.index, ci.type, ci.n, err);
}

/* Every rollup column the block holds equals the one the writer builds from
 * the block's cells now (a block may lack a family: serve then reads the
 * cells). The cells were checked first, so re-encoding them is safe. */
static int check_rollups(struct store *s, int view, int width, const struct format_block *b,
                         bool delta, struct store_error *err)
{
    const struct sql_view *v = &s->views->views[view];
    struct cellmap *m = cellmap_new(v, s->types[view], view, width, b->info.span_start);
    void *fresh = NULL;
    size_t len = 0;
    struct format_block fb;
    struct format_error ferr;
    int rc = m ? 0 : store_fail(err, "out of memory");
    if (rc == 0)
        rc = cellmap_load(m, b->base, b->len, err) ||
             (delta ? cellmap_encode_delta(m, &fresh, &len, err)
                    : cellmap_encode(m, &fresh, &len, err));
    if (rc == 0 && len > 0 && format_block_open(&fb, fresh, len, false, &ferr))
        rc = store_fail(err, "re-encoding the cells: %s", ferr.message);
    for (int i = 0; rc == 0 && len > 0 && i < b->ncolumns; i++) {
        struct format_column_info ci;
        format_block_column(b, i, &ci);
        if (ci.role <= STORE_ROLE_TOTAL)
            continue; /* the cells */
        int j = format_block_find(&fb, ci.role, ci.index);
        size_t nstored, nfresh;
        void *stored = column_at(b, i, &nstored, err), *want = NULL;
        if (!stored)
            rc = -1;
        else if (j < 0)
            rc = store_fail(err, "rollup column (role %u, index %u) should not be there", ci.role,
                            ci.index);
        else if (!(want = column_at(&fb, j, &nfresh, err)))
            rc = -1;
        else if (nstored != nfresh || memcmp(stored, want, nstored) != 0)
            rc = store_fail(err, "rollup column (role %u, index %u) differs from its cells",
                            ci.role, ci.index);
        free(stored);
        free(want);
    }
    free(fresh);
    cellmap_free(m);
    return rc;
}

/* One block of a segment: checksums, the key's span and width, the cells. */
static int check_block(const struct sql_view *v, int width, int64_t span_start,
                       const struct format_block *b, bool delta, struct store_error *err)
{
    struct format_error ferr;
    if (format_block_verify(b, &ferr))
        return store_fail(err, "%s", ferr.message);
    if (b->info.span_start != span_start || b->info.width != v->widths[width])
        return store_fail(err, "the block says span %lld, width %lld; its key says otherwise",
                          (long long)b->info.span_start, (long long)b->info.width);
    return check_cells(v, width, b, delta, err) || check_value_counts(v, b, delta, err);
}

/* The deltas merged into the base leave no count or run negative. */
static int check_merge(struct store *s, const struct store_segment *seg, struct store_error *err)
{
    MDB_val blocks[1 + STORE_MAX_DELTAS] = {{seg->len, (void *)seg->bytes}};
    for (int i = 0; i < seg->ndeltas; i++)
        blocks[1 + i] = (MDB_val){seg->deltas[i].len, (void *)seg->deltas[i].bytes};
    struct cellmap *m = cellmap_new(&s->views->views[seg->view], s->types[seg->view], seg->view,
                                    seg->width, seg->span_start);
    void *block = NULL;
    size_t len;
    int rc = m ? cellmap_load_segment(m, blocks, 1 + seg->ndeltas, err)
               : store_fail(err, "out of memory");
    if (rc == 0)
        rc = cellmap_encode(m, &block, &len, err);
    free(block);
    cellmap_free(m);
    return rc;
}

int store_verify_segment(struct store_read *r, const struct store_segment *seg,
                         struct store_error *err)
{
    const struct sql_view *v = &r->s->views->views[seg->view];
    struct store_error inner;
    int rc = check_block(v, seg->width, seg->span_start, &seg->block, false, &inner) ||
             check_rollups(r->s, seg->view, seg->width, &seg->block, false, &inner);
    int d = 0;
    for (; rc == 0 && d < seg->ndeltas; d++)
        rc = check_block(v, seg->width, seg->span_start, &seg->deltas[d].block, true, &inner) ||
             check_rollups(r->s, seg->view, seg->width, &seg->deltas[d].block, true, &inner);
    if (rc && d > 0)
        return store_fail(err, "segment of view \"%s\", width %d, span %lld, delta block %d: %s",
                          v->name, seg->width, (long long)seg->span_start, d, inner.message);
    if (rc == 0 && seg->ndeltas)
        rc = check_merge(r->s, seg, &inner);
    if (rc)
        return store_fail(err, "segment of view \"%s\", width %d, span %lld: %s", v->name,
                          seg->width, (long long)seg->span_start, inner.message);
    return 0;
}

int store_copy(struct store *s, const char *dest, struct store_error *err)
{
    if (mkdir(dest, 0755) && errno != EEXIST)
        return store_fail(err, "cannot create %s: %s", dest, strerror(errno));
    int rc = mdb_env_copy2(s->env, dest, MDB_CP_COMPACT);
    return rc ? store_lmdb_error(err, rc, "copying the store") : 0;
}

int store_size(struct store *s, uint64_t *file_bytes, uint64_t *map_bytes,
               struct store_error *err)
{
    MDB_envinfo info;
    MDB_stat st;
    int rc = mdb_env_info(s->env, &info);
    if (!rc)
        rc = mdb_env_stat(s->env, &st);
    if (rc)
        return store_lmdb_error(err, rc, "reading the store's size");
    *file_bytes = (uint64_t)(info.me_last_pgno + 1) * st.ms_psize;
    *map_bytes = info.me_mapsize;
    return 0;
}
