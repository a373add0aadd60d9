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

/* The cells' bucket starts, when the block has them (older blocks do not),
 * point at the first cell of each bucket index. */
static int check_bucket_starts(const struct store_block *b, const int64_t *bucket, uint32_t n,
                               struct store_error *err)
{
    int span = b->span, i = format_block_find(&b->block, STORE_ROLE_BUCKET, 1);
    struct format_column_info ci = {0};
    if (i < 0)
        return 0;
    format_block_column(&b->block, i, &ci);
    if (ci.type != FORMAT_I64 || ci.n != (uint32_t)span + 1)
        return store_fail(err, "the bucket starts are misshapen");
    int64_t *starts = malloc(sizeof *starts * ((size_t)span + 1));
    if (!starts)
        return store_fail(err, "out of memory");
    int rc = store_block_decode(b, i, 0, (uint32_t)span + 1, starts, err);
    uint32_t at = 0;
    for (int k = 0; rc == 0 && k <= span; k++) {
        while (at < n && bucket[at] < k)
            at++;
        if (starts[k] != at)
            rc = store_fail(err, "bucket index %d starts at cell %lld, not at cell %u", k,
                            (long long)starts[k], at);
    }
    free(starts);
    return rc;
}

/* Cells sorted and unique, with positive rows. A delta block's counts may
 * be negative or zero (store.h); a base's are positive. The cursor checked
 * the bucket indexes inside the span. */
static int check_cells(const struct store_block *b, const struct store_rows *r, bool delta,
                       struct store_error *err)
{
    const struct sql_view *v = b->v;
    const int64_t *bucket = r->bucket, *rows = r->counts[0];
    int rc = 0;
    for (uint32_t i = 0; rc == 0 && i < r->n; i++) {
        if (rows[i] <= 0 && !delta)
            rc = store_fail(err, "cell %u has %lld rows", i, (long long)rows[i]);
        else if (i > 0) {
            int cmp = bucket[i] < bucket[i - 1] ? -1 : bucket[i] > bucket[i - 1];
            for (int k = 0; cmp == 0 && k < v->ncell_keys; k++)
                cmp = r->keys[k][i] < r->keys[k][i - 1] ? -1 : r->keys[k][i] > r->keys[k][i - 1];
            if (cmp <= 0)
                rc = store_fail(err, "cell %u is not after cell %u in (bucket, keys) order",
                                i, i - 1);
        }
    }
    return rc ? rc : check_bucket_starts(b, bucket, r->n, err);
}

/* Runs with rows (positive in a base), ascending by code within a cell.
 * The cursor checked the offsets: from 0, ascending, to the runs' end. */
static int check_value_counts(const struct sql_view *v, const struct store_rows *r, bool delta,
                              struct store_error *err)
{
    for (int k = 0; k < v->nvalue_counts; k++) {
        const int64_t *off = r->vc_off[k], *codes = r->vc_codes[k], *rows = r->vc_rows[k];
        for (uint32_t i = 0; i < r->n; i++)
            for (int64_t at = off[i]; at < off[i + 1]; at++) {
                if (rows[at] == 0 || (rows[at] < 0 && !delta))
                    return store_fail(err, "value count %d of cell %u has a run of %lld rows",
                                      k, i, (long long)rows[at]);
                if (at > off[i] && codes[at] <= codes[at - 1])
                    return store_fail(err, "value count %d of cell %u is not in value order",
                                      k, i);
            }
    }
    return 0;
}

/* Column i of a block decoded into a fresh array; NULL with err. */
static void *column_at(const struct store_block *b, int i, size_t *bytes,
                       struct store_error *err)
{
    struct format_column_info ci;
    format_block_column(&b->block, i, &ci);
    *bytes = (size_t)ci.n * format_type_size(ci.type);
    void *a = malloc(*bytes + 1);
    if (!a) {
        store_fail(err, "out of memory");
        return NULL;
    }
    if (store_block_decode(b, i, 0, ci.n, a, err)) {
        free(a);
        return NULL;
    }
    return a;
}

/* Every rollup column the block holds equals the one the writer builds from
 * the block's cells now (a block may lack a family: serve then reads the
 * cells). The cells were checked first, so re-encoding them is safe. */
static int check_rollups(struct store *s, int view, int width, const struct store_block *b,
                         bool delta, struct store_error *err)
{
    const struct sql_view *v = &s->views->views[view];
    struct cellmap *m = cellmap_new(v, s->types[view], view, width, b->span_start);
    void *fresh = NULL;
    size_t len = 0;
    struct store_block fb;
    int rc = m ? 0 : store_fail(err, "out of memory");
    if (rc == 0)
        rc = cellmap_load(m, b->block.base, b->block.len, err) ||
             (delta ? cellmap_encode_delta(m, &fresh, &len, err)
                    : cellmap_encode(m, &fresh, &len, err));
    if (rc == 0 && len > 0 &&
        store_block_open(&fb, v, s->types[view], width, b->span_start, fresh, len, false, err)) {
        struct store_error inner = *err;
        rc = store_fail(err, "re-encoding the cells: %s", inner.message);
    }
    for (int i = 0; rc == 0 && len > 0 && i < b->block.ncolumns; i++) {
        struct format_column_info ci;
        format_block_column(&b->block, i, &ci);
        if (ci.role <= STORE_ROLE_TOTAL)
            continue; /* the cells */
        int j = format_block_find(&fb.block, ci.role, ci.index);
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

/* One block of a segment: checksums, the key's span and width, the cells
 * as the cursor decodes them whole. */
static int check_block(const struct store_block *b, bool delta, struct store_error *err)
{
    struct format_error ferr;
    if (format_block_verify(&b->block, &ferr))
        return store_fail(err, "%s", ferr.message);
    if (b->block.info.span_start != b->span_start || b->block.info.width != b->width)
        return store_fail(err, "the block says span %lld, width %lld; its key says otherwise",
                          (long long)b->block.info.span_start, (long long)b->block.info.width);
    struct store_rows rows;
    const struct store_want every = {.whole = true, .every = true};
    int rc = store_rows_load(b, &every, &rows, err) || check_cells(b, &rows, delta, err) ||
             check_value_counts(b->v, &rows, delta, err);
    store_rows_free(b->v, &rows);
    return rc ? -1 : 0;
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
    int rc = 0, d = 0;
    for (; rc == 0 && d <= seg->ndeltas; d++) {
        struct store_block b;
        store_segment_block(r, seg, d, &b);
        b.snapshot = 0; /* verify hashes every column it reads */
        rc = check_block(&b, d > 0, &inner) ||
             check_rollups(r->s, seg->view, seg->width, &b, d > 0, &inner);
    }
    if (rc && d > 1)
        return store_fail(err, "segment of view \"%s\", width %d, span %lld, delta block %d: %s",
                          v->name, seg->width, (long long)seg->span_start, d - 1, inner.message);
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
