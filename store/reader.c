/* reader.c -- what a read snapshot hands out: segment blocks in time order
 * straight from the map, dictionary texts, dim rows and value dictionaries.
 * Nothing here copies: every pointer points into the snapshot and stays valid
 * until store_read_end. */
#include "store/internal.h"

#include <stdlib.h>
#include <string.h>

int store_segments_begin(struct store_read *r, int view, int width, int64_t from, int64_t to,
                         struct store_segment_iter *it, struct store_error *err)
{
    memset(it, 0, sizeof *it);
    const struct sql_view_list *views = r->s->views;
    if (view < 0 || view >= views->nviews || width < 0 ||
        width >= views->views[view].nwidths)
        return store_fail(err, "view %d has no width %d", view, width);
    it->r = r;
    it->view = view;
    it->width = width;
    /* A segment holding `from` starts at or before it. The far past (as
     * "every segment" asks) needs no rounding and must not overflow. */
    it->from = from <= INT64_MIN / 2 ? INT64_MIN : store_span_start(&views->views[view], width, from);
    it->to = to;
    it->at = INT64_MIN;
    MDB_cursor *cur;
    int rc = mdb_cursor_open(r->txn, r->s->seg, &cur);
    if (rc)
        return store_lmdb_error(err, rc, "opening a segment cursor");
    it->cursor = cur;
    return 0;
}

/* The next entry of the walk: the one the cursor stands on when a delta
 * scan stopped there, else the next. An LMDB code. */
static int next_entry(struct store_segment_iter *it, MDB_val *k, MDB_val *v)
{
    MDB_cursor *cur = it->cursor;
    if (!it->started) {
        uint8_t key[SEG_KEY_BYTES];
        seg_key(key, it->view, it->width, it->from);
        *k = (MDB_val){sizeof key, key};
        it->started = true;
        return mdb_cursor_get(cur, k, v, MDB_SET_RANGE);
    }
    if (it->pending) {
        it->pending = false;
        return mdb_cursor_get(cur, k, v, MDB_GET_CURRENT);
    }
    return mdb_cursor_get(cur, k, v, MDB_NEXT);
}

/* Collects the delta blocks following a base (keys: the base's, then a
 * number), leaving the cursor on the entry after them. */
static int collect_deltas(struct store_segment_iter *it, const uint8_t base[SEG_KEY_BYTES],
                          MDB_val *blocks, int *n, struct store_error *err)
{
    MDB_val k, v;
    int rc;
    while ((rc = mdb_cursor_get(it->cursor, &k, &v, MDB_NEXT)) == 0) {
        if (k.mv_size != DELTA_KEY_BYTES || memcmp(k.mv_data, base, SEG_KEY_BYTES) != 0) {
            it->pending = true;
            return 0;
        }
        if (*n == 1 + STORE_MAX_DELTAS)
            return store_fail(err, "more than %d delta blocks", STORE_MAX_DELTAS);
        blocks[(*n)++] = v;
    }
    return rc == MDB_NOTFOUND ? 0 : store_lmdb_error(err, rc, "reading delta blocks");
}

/* Merged mode: the base and its deltas as one fresh block; 1 when no cell
 * is left (the writer folds such a segment away, but a reader must not
 * rely on it). */
static int merge_blocks(struct store_segment_iter *it, const MDB_val *blocks, int n,
                        int64_t span_start, MDB_val *out, struct store_error *err)
{
    struct store *s = it->r->s;
    struct cellmap *m = cellmap_new(&s->views->views[it->view], s->types[it->view], it->view,
                                    it->width, span_start);
    free(it->merged_block);
    it->merged_block = NULL;
    int rc = m ? cellmap_load_segment(m, blocks, n, err) : store_fail(err, "out of memory");
    if (rc == 0)
        rc = cellmap_encode(m, &it->merged_block, &out->mv_size, err);
    cellmap_free(m);
    out->mv_data = it->merged_block;
    return rc == 0 && !it->merged_block ? 1 : rc;
}

static int segment_next(struct store_segment_iter *it, struct store_segment *seg,
                        struct store_error *err)
{
    if (it->done)
        return 0;
    MDB_val k, v;
    int rc = next_entry(it, &k, &v);
    if (rc == MDB_NOTFOUND) {
        it->done = true;
        return 0;
    }
    if (rc) {
        it->done = true;
        seg->bytes = NULL;
        return store_lmdb_error(err, rc, "reading segments");
    }
    const uint8_t *key = k.mv_data;
    if (k.mv_size < SEG_KEY_BYTES || be_load_u16(key) != it->view || key[2] != it->width ||
        get_i64key(key + 3) >= it->to) {
        it->done = true;
        return 0;
    }
    const char *name = it->r->s->views->views[it->view].name;
    seg->view = it->view;
    seg->width = it->width;
    seg->span_start = it->at = get_i64key(key + 3);
    seg->bytes = v.mv_data;
    seg->len = v.mv_size;
    seg->ndeltas = 0;
    if (k.mv_size != SEG_KEY_BYTES)
        return store_fail(err, "segment of view \"%s\", width %d, span %lld: a delta block "
                               "without its base", name, it->width, (long long)seg->span_start);
    uint8_t base[SEG_KEY_BYTES];
    memcpy(base, key, sizeof base);
    MDB_val blocks[1 + STORE_MAX_DELTAS] = {v};
    int n = 1, rc2 = 0;
    struct store_error inner;
    struct format_error ferr;
    if (collect_deltas(it, base, blocks, &n, &inner) ||
        (n > 1 && it->merged &&
         (rc2 = merge_blocks(it, blocks, n, seg->span_start, &blocks[0], &inner)) < 0))
        return store_fail(err, "segment of view \"%s\", width %d, span %lld: %s", name,
                          it->width, (long long)seg->span_start, inner.message);
    if (rc2 == 1)
        return 2; /* nothing left: the caller walks on */
    seg->bytes = blocks[0].mv_data;
    seg->len = blocks[0].mv_size;
    if (format_block_open(&seg->block, seg->bytes, seg->len, false, &ferr))
        return store_fail(err, "segment of view \"%s\", width %d, span %lld: %s", name,
                          it->width, (long long)seg->span_start, ferr.message);
    for (int i = 1; !it->merged && i < n; i++) {
        struct store_block_ref *d = &seg->deltas[seg->ndeltas++];
        d->bytes = blocks[i].mv_data;
        d->len = blocks[i].mv_size;
        if (format_block_open(&d->block, d->bytes, d->len, false, &ferr))
            return store_fail(err, "segment of view \"%s\", width %d, span %lld, delta block "
                                   "%d: %s", name, it->width, (long long)seg->span_start, i,
                              ferr.message);
    }
    return 1;
}

void store_segments_skip(struct store_segment_iter *it, int64_t t)
{
    const struct sql_view *v = &it->r->s->views->views[it->view];
    int64_t from = store_span_start(v, it->width, t);
    if (it->done || from <= it->at || from <= it->from)
        return;
    /* The next call seeks (next_entry) rather than stepping: the segments
     * between are never opened. */
    it->from = from;
    it->started = false;
    it->pending = false;
}

int store_segments_next(struct store_segment_iter *it, struct store_segment *seg,
                        struct store_error *err)
{
    int rc;
    while ((rc = segment_next(it, seg, err)) == 2)
        ;
    return rc;
}

void store_segments_end(struct store_segment_iter *it)
{
    if (it->cursor)
        mdb_cursor_close(it->cursor);
    it->cursor = NULL;
    free(it->merged_block);
    it->merged_block = NULL;
}

int segment_blocks(struct store *s, MDB_txn *txn, const uint8_t key[SEG_KEY_BYTES],
                   MDB_val blocks[1 + STORE_MAX_DELTAS], int *n)
{
    MDB_cursor *cur;
    *n = 0;
    int rc = mdb_cursor_open(txn, s->seg, &cur);
    if (rc)
        return rc;
    MDB_val k = {SEG_KEY_BYTES, (void *)key}, v;
    rc = mdb_cursor_get(cur, &k, &v, MDB_SET_KEY);
    while (rc == 0 && *n < 1 + STORE_MAX_DELTAS) {
        blocks[(*n)++] = v;
        rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT);
        if (rc == 0 && (k.mv_size != DELTA_KEY_BYTES || memcmp(k.mv_data, key, SEG_KEY_BYTES)))
            break;
    }
    mdb_cursor_close(cur);
    return rc == MDB_NOTFOUND ? 0 : rc;
}

int store_dict_lookup(struct store_read *r, int view, int fact_column, int64_t id,
                      const char **text, size_t *len)
{
    uint8_t key[DICT_REV_KEY_BYTES];
    triple_key(key, view, fact_column, id);
    MDB_val k = {sizeof key, key}, v;
    if (mdb_get(r->txn, r->s->dictrev, &k, &v))
        return -1;
    *text = v.mv_data;
    *len = v.mv_size;
    return 0;
}

int store_dict_find(struct store_read *r, int view, int fact_column, const char *text, size_t len,
                    int64_t *id)
{
    uint8_t key[DICT_KEY_MAX_BYTES];
    int probes = len <= DICT_INLINE_BYTES ? 0 : DICT_MAX_PROBES;
    for (int probe = 0; probe <= probes; probe++) {
        MDB_val k = {dict_key(key, view, fact_column, text, len, probe), key}, v;
        if (mdb_get(r->txn, r->s->dict, &k, &v) || v.mv_size != 8)
            return 1; /* probes are taken in order: the first free one ends the chain */
        *id = get_i64key(v.mv_data);
        if (len <= DICT_INLINE_BYTES)
            return 0;
        const char *stored; /* a hashed key: confirm the whole text */
        size_t slen;
        if (store_dict_lookup(r, view, fact_column, *id, &stored, &slen) == 0 && slen == len &&
            memcmp(stored, text, len) == 0)
            return 0;
    }
    return 1;
}

int store_projection_get(struct store_read *r, int view, int join, int64_t key,
                         struct store_dim_value *values, int nvalues, struct store_error *err)
{
    const struct sql_join *j = &r->s->views->views[view].joins[join];
    if (nvalues != j->ndim_columns - 1)
        return store_fail(err, "join %d of view %d has %d dim columns, not %d", join, view,
                          j->ndim_columns - 1, nvalues);
    uint64_t chunk;
    uint32_t off;
    store_dense_locate(key, &chunk, &off);
    for (int c = 0; c < store_dense_columns(j); c++) {
        struct format_dense d;
        int got = store_dense_chunk(r, view, join, c, chunk, &d, err);
        if (got <= 0)
            return got;
        uint32_t e = format_dense_get(&d, off);
        if (e == FORMAT_DENSE_ABSENT)
            return 0; /* every column of the join agrees (verify) */
        if (c >= nvalues)
            break; /* a join that reads no dim column: its row is there */
        values[c] = (struct store_dim_value){.is_null = e == FORMAT_DENSE_NULL};
        if (e != FORMAT_DENSE_NULL &&
            store_dense_text(r, view, join, c, (int64_t)(e - FORMAT_DENSE_FIRST_ID),
                             &values[c].text, &values[c].len))
            return store_fail(err, "dim column \"%s\" of view \"%s\": id %u at key %lld is "
                                   "in no dictionary entry", j->dim_columns[c + 1],
                              r->s->views->views[view].name, e - FORMAT_DENSE_FIRST_ID,
                              (long long)key);
    }
    return 1;
}

int store_values_walk(struct store_read *r, int view, int vc, store_value_fn fn, void *ctx,
                      struct store_error *err)
{
    MDB_cursor *cur;
    int rc = mdb_cursor_open(r->txn, r->s->values, &cur);
    if (rc)
        return store_lmdb_error(err, rc, "opening the value dictionary");
    uint8_t key[VALUE_KEY_BYTES];
    triple_key(key, view, vc, INT64_MIN);
    MDB_val k = {sizeof key, key}, v;
    int ret = 0;
    for (rc = mdb_cursor_get(cur, &k, &v, MDB_SET_RANGE); rc == 0;
         rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
        if (k.mv_size != VALUE_KEY_BYTES || memcmp(k.mv_data, key, 4) != 0 || v.mv_size != 8)
            break;
        int64_t rows;
        memcpy(&rows, v.mv_data, 8);
        if ((ret = fn(ctx, get_i64key((uint8_t *)k.mv_data + 4), rows)))
            break;
    }
    mdb_cursor_close(cur);
    if (rc && rc != MDB_NOTFOUND)
        return store_lmdb_error(err, rc, "walking the value dictionary");
    return ret;
}
