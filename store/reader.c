/* reader.c -- what a read snapshot hands out: segment blocks in time order
 * straight from the map, dictionary texts, dim rows and value dictionaries.
 * Nothing here copies: every pointer points into the snapshot and stays valid
 * until store_read_end. */
#include "store/internal.h"

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
    MDB_cursor *cur;
    int rc = mdb_cursor_open(r->txn, r->s->seg, &cur);
    if (rc)
        return store_lmdb_error(err, rc, "opening a segment cursor");
    it->cursor = cur;
    return 0;
}

int store_segments_next(struct store_segment_iter *it, struct store_segment *seg,
                        struct store_error *err)
{
    if (it->done)
        return 0;
    MDB_val k, v;
    int rc;
    if (!it->started) {
        uint8_t key[SEG_KEY_BYTES];
        seg_key(key, it->view, it->width, it->from);
        k = (MDB_val){sizeof key, key};
        rc = mdb_cursor_get(it->cursor, &k, &v, MDB_SET_RANGE);
        it->started = true;
    } else {
        rc = mdb_cursor_get(it->cursor, &k, &v, MDB_NEXT);
    }
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
    if (k.mv_size != SEG_KEY_BYTES || get_u16be(key) != it->view || key[2] != it->width ||
        get_i64key(key + 3) >= it->to) {
        it->done = true;
        return 0;
    }
    seg->view = it->view;
    seg->width = it->width;
    seg->span_start = get_i64key(key + 3);
    seg->bytes = v.mv_data;
    seg->len = v.mv_size;
    struct format_error ferr;
    if (format_block_open(&seg->block, v.mv_data, v.mv_size, false, &ferr))
        return store_fail(err, "segment of view \"%s\", width %d, span %lld: %s",
                          it->r->s->views->views[it->view].name, it->width,
                          (long long)seg->span_start, ferr.message);
    return 1;
}

void store_segments_end(struct store_segment_iter *it)
{
    if (it->cursor)
        mdb_cursor_close(it->cursor);
    it->cursor = NULL;
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
    MDB_val k = {dict_key(key, view, fact_column, text, len), key}, v;
    if (mdb_get(r->txn, r->s->dict, &k, &v) || v.mv_size != 8)
        return 1;
    *id = get_i64key(v.mv_data);
    if (len <= DICT_INLINE_BYTES)
        return 0;
    const char *stored; /* a hashed key: confirm the whole text */
    size_t slen;
    if (store_dict_lookup(r, view, fact_column, *id, &stored, &slen) || slen != len ||
        memcmp(stored, text, len) != 0)
        return 1;
    return 0;
}

int store_projection_get(struct store_read *r, int view, int join, int64_t key,
                         struct store_dim_value *values, int nvalues, struct store_error *err)
{
    uint8_t kb[PROJ_KEY_BYTES];
    triple_key(kb, view, join, key);
    MDB_val k = {sizeof kb, kb}, v;
    int rc = mdb_get(r->txn, r->s->proj, &k, &v);
    if (rc == MDB_NOTFOUND)
        return 0;
    if (rc)
        return store_lmdb_error(err, rc, "reading a projection");
    const uint8_t *p = v.mv_data, *end = p + v.mv_size;
    if (end - p < 2 || (p[0] | p[1] << 8) != nvalues)
        return store_fail(err, "dim row of view %d, join %d has the wrong shape", view, join);
    p += 2;
    for (int i = 0; i < nvalues; i++) {
        if (end - p < 5)
            return store_fail(err, "dim row of view %d, join %d is truncated", view, join);
        uint32_t len = (uint32_t)p[1] | (uint32_t)p[2] << 8 | (uint32_t)p[3] << 16 |
                       (uint32_t)p[4] << 24;
        values[i].is_null = p[0] != 0;
        p += 5;
        if ((size_t)(end - p) < len)
            return store_fail(err, "dim row of view %d, join %d is truncated", view, join);
        values[i].text = (const char *)p;
        values[i].len = len;
        p += len;
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
