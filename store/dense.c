/* dense.c -- dense dim columns: per (view, join, dim column), the dim value
 * id at each join key, in chunks a reader indexes by array position
 * straight from the map (SPEC.md §4.2, §4.3).
 *
 * A projection row answers "the dim row of this join key" with a B-tree
 * lookup, a parse and a text: an ask over a range reading hundreds of
 * thousands of distinct join keys paid that per key. A dense column answers
 * "the id of this dim column at this join key" with an index into a chunk
 * of FORMAT_DENSE_CHUNK entries (format/dense.c), and an id compares and
 * groups as its text does, because each column's dictionary gives one id
 * per distinct text (the `dict` database, under the column number
 * DENSE_DICT_BASE + the column's slot). Texts are read only for an
 * answer's groups and a text condition's distinct ids.
 *
 * The writer keeps the chunks a batch changes decoded in memory (one entry
 * per offset, uint32), each loaded from the store when first touched, and
 * writes them with the projection rows in the batch's one transaction
 * (dense_write), so readers see rows and chunks change together. */
#include "store/internal.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* ---- Columns and keys ----------------------------------------------------------- */

int store_dense_columns(const struct sql_join *j)
{
    return j->ndim_columns > 1 ? j->ndim_columns - 1 : 1;
}

int dense_slot(const struct sql_view *v, int join, int col)
{
    int slot = 0;
    for (int j = 0; j < join; j++)
        slot += store_dense_columns(&v->joins[j]);
    return slot + col;
}

int dense_check_views(const struct sql_view_list *views, struct store_error *err)
{
    for (int i = 0; i < views->nviews; i++) {
        const struct sql_view *v = &views->views[i];
        int slots = dense_slot(v, v->njoins, 0);
        /* Dictionary columns: fact columns below DENSE_DICT_BASE, dim
         * columns' from it on. */
        if (v->nfact_columns >= DENSE_DICT_BASE || slots >= DENSE_DICT_BASE)
            return store_fail(err, "view \"%s\" reads %d fact columns and %d dim columns; a "
                                   "store keeps at most %d of each",
                              v->name, v->nfact_columns, slots, DENSE_DICT_BASE - 1);
    }
    return 0;
}

static void chunk_key(uint8_t out[DENSE_KEY_BYTES], int view, int slot, uint64_t chunk)
{
    triple_key(out, view, slot, (int64_t)chunk); /* chunk < 2^52: order kept */
}

/* ---- The writer -------------------------------------------------------------------- */

void dense_forget(struct pending *p)
{
    BYTEMAP_EACH(&p->dense, e) free(e->ptr);
    bytemap_clear(&p->dense);
    bytemap_clear(&p->dense_emptied);
}

/* The batch's decoded chunk `chunk` of a slot: loaded from the store when
 * first touched (nothing when the batch emptied the join). NULL with err. */
static uint32_t *batch_chunk(struct store *s, int view, int slot, uint64_t chunk,
                             struct store_error *err)
{
    struct pending *p = s->pending;
    uint8_t key[DENSE_KEY_BYTES];
    chunk_key(key, view, slot, chunk);
    struct bytemap_entry *e = bytemap_find(&p->dense, key, sizeof key);
    if (e)
        return e->ptr;
    uint32_t *entries = calloc(FORMAT_DENSE_CHUNK, sizeof *entries);
    if (!entries) {
        store_fail(err, "out of memory");
        return NULL;
    }
    if (!bytemap_find(&p->dense_emptied, key, 4)) {
        MDB_txn *txn;
        if (store_txn_begin(s, MDB_RDONLY, &txn, err)) {
            free(entries);
            return NULL;
        }
        MDB_val k = {sizeof key, key}, v;
        int rc = mdb_get(txn, s->dense, &k, &v);
        struct format_dense d;
        struct format_error ferr;
        if (rc == 0 && (format_dense_open(v.mv_data, v.mv_size, &d, &ferr) ||
                        !format_dense_check(&d))) {
            store_fail(err, "the dense chunk %llu of dim column %d of view \"%s\" is damaged "
                            "(rebuild the store with straum-ingest --rebuild)",
                       (unsigned long long)chunk, slot, s->views->views[view].name);
            rc = -1;
        } else if (rc == 0) {
            format_dense_decode(&d, entries);
        } else if (rc != MDB_NOTFOUND) {
            store_lmdb_error(err, rc, "reading a dense chunk");
        }
        mdb_txn_abort(txn);
        if (rc && rc != MDB_NOTFOUND) {
            free(entries);
            return NULL;
        }
    }
    if (!(e = bytemap_upsert(&p->dense, key, sizeof key))) {
        free(entries);
        store_fail(err, "out of memory");
        return NULL;
    }
    e->ptr = entries;
    return entries;
}

/* Sets the entry of every dense column of a join at a key: entries[c], or
 * FORMAT_DENSE_ABSENT for all when entries is NULL. */
static int set_entries(struct store *s, int view, int join, int64_t key,
                       const uint32_t *entries, struct store_error *err)
{
    const struct sql_view *v = &s->views->views[view];
    uint64_t chunk;
    uint32_t off;
    store_dense_locate(key, &chunk, &off);
    int n = store_dense_columns(&v->joins[join]);
    for (int c = 0; c < n; c++) {
        uint32_t *e = batch_chunk(s, view, dense_slot(v, join, c), chunk, err);
        if (!e)
            return -1;
        e[off] = entries ? entries[c] : FORMAT_DENSE_ABSENT;
    }
    return 0;
}

int dense_put(struct store *s, int view, int join, int64_t key,
              const struct store_dim_value *values, struct store_error *err)
{
    const struct sql_view *v = &s->views->views[view];
    const struct sql_join *j = &v->joins[join];
    int n = store_dense_columns(j);
    uint32_t one[1], *entries = n > 1 ? malloc(sizeof *entries * (size_t)n) : one;
    if (!entries)
        return store_fail(err, "out of memory");
    int rc = 0;
    for (int c = 0; rc == 0 && c < n; c++) {
        /* A join that reads no dim column keeps one column of NULLs: its
         * entries tell a key with a dim row (an INNER join's test). */
        if (j->ndim_columns <= 1 || values[c].is_null) {
            entries[c] = FORMAT_DENSE_NULL;
            continue;
        }
        int64_t id;
        rc = store_dict_intern(s, view, DENSE_DICT_BASE + dense_slot(v, join, c), values[c].text,
                               values[c].len, &id, err);
        if (rc == 0 && id > (int64_t)UINT32_MAX - FORMAT_DENSE_FIRST_ID)
            rc = store_fail(err, "dim column \"%s\" of view \"%s\" has more than %u distinct "
                                 "values", j->dim_columns[c + 1], v->name,
                            UINT32_MAX - FORMAT_DENSE_FIRST_ID);
        if (rc == 0)
            entries[c] = (uint32_t)id + FORMAT_DENSE_FIRST_ID;
    }
    if (rc == 0)
        rc = set_entries(s, view, join, key, entries, err);
    if (entries != one)
        free(entries);
    return rc;
}

int dense_delete(struct store *s, int view, int join, int64_t key, struct store_error *err)
{
    return set_entries(s, view, join, key, NULL, err);
}

int dense_truncate(struct store *s, int view, int join, struct store_error *err)
{
    struct pending *p = s->pending;
    const struct sql_view *v = &s->views->views[view];
    int n = store_dense_columns(&v->joins[join]);
    for (int c = 0; c < n; c++) {
        uint8_t prefix[DENSE_KEY_BYTES];
        chunk_key(prefix, view, dense_slot(v, join, c), 0);
        if (!bytemap_upsert(&p->dense_emptied, prefix, 4))
            return store_fail(err, "out of memory");
        BYTEMAP_EACH(&p->dense, e)
        {
            if (memcmp(e->key, prefix, 4) == 0) {
                free(e->ptr);
                bytemap_remove(&p->dense, e);
            }
        }
    }
    return 0;
}

static int entry_key_cmp(const void *a, const void *b)
{
    const struct bytemap_entry *x = *(struct bytemap_entry *const *)a;
    const struct bytemap_entry *y = *(struct bytemap_entry *const *)b;
    return memcmp(x->key, y->key, DENSE_KEY_BYTES);
}

int dense_write(struct store *s, MDB_txn *txn)
{
    struct pending *p = s->pending;
    int rc = 0;
    BYTEMAP_EACH(&p->dense_emptied, e)
    {
        if (!rc)
            rc = store_delete_prefix(txn, s->dense, e->key, 4);
    }
    size_t n = 0;
    struct bytemap_entry **es = malloc((p->dense.count + 1) * sizeof *es);
    uint8_t *buf = malloc(FORMAT_DENSE_MAX_BYTES);
    if (!es || !buf)
        rc = rc ? rc : ENOMEM;
    BYTEMAP_EACH(&p->dense, e)
    {
        if (es)
            es[n++] = e;
    }
    /* In key order, so that LMDB fills its pages as the keys come. */
    if (!rc && n > 1)
        qsort(es, n, sizeof *es, entry_key_cmp);
    for (size_t i = 0; !rc && i < n; i++) {
        MDB_val k = {DENSE_KEY_BYTES, es[i]->key}, v = {format_dense_encode(es[i]->ptr, buf), buf};
        rc = v.mv_size ? mdb_put(txn, s->dense, &k, &v, 0) : mdb_del(txn, s->dense, &k, NULL);
        if (rc == MDB_NOTFOUND)
            rc = 0;
    }
    free(es);
    free(buf);
    return rc;
}

/* ---- The reader --------------------------------------------------------------------- */

int store_dense_chunk(struct store_read *r, int view, int join, int col, uint64_t chunk,
                      struct format_dense *out, struct store_error *err)
{
    const struct sql_view *v = &r->s->views->views[view];
    uint8_t key[DENSE_KEY_BYTES];
    chunk_key(key, view, dense_slot(v, join, col), chunk);
    MDB_val k = {sizeof key, key}, val;
    int rc = mdb_get(r->txn, r->s->dense, &k, &val);
    if (rc == MDB_NOTFOUND)
        return 0;
    if (rc)
        return store_lmdb_error(err, rc, "reading a dense chunk");
    struct format_error ferr;
    const char *why = NULL;
    if (format_dense_open(val.mv_data, val.mv_size, out, &ferr)) {
        why = ferr.message;
    } else {
        /* Hashed once per snapshot and thread, as block columns are. */
        uint64_t snap = store_read_snapshot_id(r);
        uint32_t len = (uint32_t)val.mv_size;
        if (!store_column_was_checked(snap, val.mv_data, len, out->checksum)) {
            if (!format_dense_check(out))
                why = "its entries do not match their checksum";
            else
                store_column_mark_checked(snap, val.mv_data, len, out->checksum);
        }
    }
    if (why) {
        const struct sql_join *j = &v->joins[join];
        return store_fail(err, "dim column \"%s\" of view \"%s\", dense chunk %llu: %s",
                          j->ndim_columns > 1 ? j->dim_columns[col + 1] : j->dim_key, v->name,
                          (unsigned long long)chunk, why);
    }
    return 1;
}

int store_dense_bounds(struct store_read *r, int view, int join, int col, uint64_t *first,
                       uint64_t *last, struct store_error *err)
{
    const struct sql_view *v = &r->s->views->views[view];
    int slot = dense_slot(v, join, col);
    uint8_t lo[DENSE_KEY_BYTES], hi[DENSE_KEY_BYTES];
    chunk_key(lo, view, slot, 0);
    chunk_key(hi, view, slot + 1, 0);
    MDB_cursor *cur;
    int rc = mdb_cursor_open(r->txn, r->s->dense, &cur);
    if (rc)
        return store_lmdb_error(err, rc, "opening a dense cursor");
    MDB_val k = {sizeof lo, lo}, val;
    int found = 0;
    rc = mdb_cursor_get(cur, &k, &val, MDB_SET_RANGE);
    if (rc == 0 && k.mv_size == DENSE_KEY_BYTES && memcmp(k.mv_data, lo, 4) == 0) {
        *first = (uint64_t)get_i64key((uint8_t *)k.mv_data + 4);
        k = (MDB_val){sizeof hi, hi};
        rc = mdb_cursor_get(cur, &k, &val, MDB_SET_RANGE);
        rc = rc == 0 ? mdb_cursor_get(cur, &k, &val, MDB_PREV)
                     : rc == MDB_NOTFOUND ? mdb_cursor_get(cur, &k, &val, MDB_LAST) : rc;
        if (rc == 0 && k.mv_size == DENSE_KEY_BYTES && memcmp(k.mv_data, lo, 4) == 0) {
            *last = (uint64_t)get_i64key((uint8_t *)k.mv_data + 4);
            found = 1;
        }
    }
    mdb_cursor_close(cur);
    if (rc && rc != MDB_NOTFOUND)
        return store_lmdb_error(err, rc, "reading dense chunks");
    return found;
}

int store_dense_text(struct store_read *r, int view, int join, int col, int64_t id,
                     const char **text, size_t *len)
{
    const struct sql_view *v = &r->s->views->views[view];
    return store_dict_lookup(r, view, DENSE_DICT_BASE + dense_slot(v, join, col), id, text, len);
}

int store_dense_find(struct store_read *r, int view, int join, int col, const char *text,
                     size_t len, int64_t *id)
{
    const struct sql_view *v = &r->s->views->views[view];
    return store_dict_find(r, view, DENSE_DICT_BASE + dense_slot(v, join, col), text, len, id);
}

int store_dense_stats(struct store_read *r, int view, int join, int col,
                      struct store_dense_stats *out, struct store_error *err)
{
    const struct sql_view *v = &r->s->views->views[view];
    int slot = dense_slot(v, join, col);
    memset(out, 0, sizeof *out);
    MDB_cursor *cur;
    int rc = mdb_cursor_open(r->txn, r->s->dense, &cur);
    if (rc)
        return store_lmdb_error(err, rc, "opening a dense cursor");
    uint8_t prefix[DENSE_KEY_BYTES];
    chunk_key(prefix, view, slot, 0);
    MDB_val k = {sizeof prefix, prefix}, val;
    int ret = 0;
    for (rc = mdb_cursor_get(cur, &k, &val, MDB_SET_RANGE); rc == 0 && ret == 0;
         rc = mdb_cursor_get(cur, &k, &val, MDB_NEXT)) {
        if (k.mv_size != DENSE_KEY_BYTES || memcmp(k.mv_data, prefix, 4) != 0)
            break;
        uint64_t chunk = (uint64_t)get_i64key((uint8_t *)k.mv_data + 4);
        struct format_dense d;
        if ((ret = store_dense_chunk(r, view, join, col, chunk, &d, err)) < 0)
            break;
        ret = 0;
        out->chunks++;
        out->bytes += val.mv_size;
        out->width_max = d.width > out->width_max ? d.width : out->width_max;
        for (uint32_t i = 0; i < d.n; i++) {
            uint32_t e = format_dense_get(&d, i);
            out->rows += e != FORMAT_DENSE_ABSENT;
            out->nulls += e == FORMAT_DENSE_NULL;
        }
    }
    if (ret == 0 && rc && rc != MDB_NOTFOUND)
        ret = store_lmdb_error(err, rc, "walking dense chunks");
    mdb_cursor_close(cur);
    if (ret)
        return ret;
    /* The dictionary's size: one past its last id (ids are never reused). */
    if ((rc = mdb_cursor_open(r->txn, r->s->dictrev, &cur)))
        return store_lmdb_error(err, rc, "opening a dictionary cursor");
    uint8_t last[DICT_REV_KEY_BYTES];
    triple_key(last, view, DENSE_DICT_BASE + slot, INT64_MAX);
    k = (MDB_val){sizeof last, last};
    rc = mdb_cursor_get(cur, &k, &val, MDB_SET_RANGE);
    rc = rc == 0 ? mdb_cursor_get(cur, &k, &val, MDB_PREV)
                 : rc == MDB_NOTFOUND ? mdb_cursor_get(cur, &k, &val, MDB_LAST) : rc;
    if (rc == 0 && k.mv_size == DICT_REV_KEY_BYTES && memcmp(k.mv_data, last, 4) == 0)
        out->texts = (uint64_t)get_i64key((uint8_t *)k.mv_data + 4) + 1;
    mdb_cursor_close(cur);
    if (rc && rc != MDB_NOTFOUND)
        return store_lmdb_error(err, rc, "reading a dictionary");
    return 0;
}
