/* dense_verify.c -- straum-dump verify's check of the dense dim columns
 * (dense.c): rebuilt from the projection rows they mirror and compared
 * with the stored chunks byte for byte (the encoding is canonical,
 * format/dense.c), so a chunk the writer let drift from its rows, a text
 * whose id reads back as another text, and a chunk left where no dim row
 * lies are each named. */
#include "store/internal.h"

#include <stdlib.h>
#include <string.h>

/* The code of offset off of chunk `chunk` (store_dense_locate backwards). */
static int64_t chunk_code(uint64_t chunk, uint32_t off)
{
    return (int64_t)((chunk * FORMAT_DENSE_CHUNK + off) ^ (UINT64_C(1) << 63));
}

struct rebuild {
    struct store_read *r;
    int view, join, ncols;
    uint64_t chunk;
    bool have;
    uint32_t **entries;       /* per column: the chunk as the rows make it */
    uint8_t *encoded;
};

static const char *column_name(const struct sql_join *j, int col)
{
    return j->ndim_columns > 1 ? j->dim_columns[col + 1] : j->dim_key;
}

/* Compares the rebuilt chunk of every column with the stored one, then
 * empties it. 0, or -1 with err. */
static int flush(struct rebuild *b, struct store_error *err)
{
    const struct sql_view *v = &b->r->s->views->views[b->view];
    const struct sql_join *j = &v->joins[b->join];
    for (int c = 0; b->have && c < b->ncols; c++) {
        size_t len = format_dense_encode(b->entries[c], b->encoded);
        struct format_dense d;
        int got = store_dense_chunk(b->r, b->view, b->join, c, b->chunk, &d, err);
        if (got < 0)
            return -1;
        if (got == 0)
            return store_fail(err, "dim column \"%s\" of view \"%s\": dense chunk %llu is "
                                   "missing, though the dim row at key %lld lies in it",
                              column_name(j, c), v->name, (unsigned long long)b->chunk,
                              (long long)chunk_code(b->chunk, 0));
        size_t stored = FORMAT_DENSE_HEADER_BYTES + (size_t)d.n * d.width;
        if (stored != len || memcmp(d.entries - FORMAT_DENSE_HEADER_BYTES, b->encoded, len)) {
            uint32_t off = 0;
            while (off + 1 < FORMAT_DENSE_CHUNK && format_dense_get(&d, off) == b->entries[c][off])
                off++;
            return store_fail(err, "dim column \"%s\" of view \"%s\": dense chunk %llu differs "
                                   "from the dim rows at key %lld (entry %u, the rows make %u)",
                              column_name(j, c), v->name, (unsigned long long)b->chunk,
                              (long long)chunk_code(b->chunk, off), format_dense_get(&d, off),
                              b->entries[c][off]);
        }
        memset(b->entries[c], 0, sizeof **b->entries * FORMAT_DENSE_CHUNK);
    }
    b->have = false;
    return 0;
}

/* The entry the row's value of column c makes, its text read back. */
static int entry_of(struct rebuild *b, int c, int64_t key, const struct store_dim_value *val,
                    uint32_t *out, struct store_error *err)
{
    const struct sql_view *v = &b->r->s->views->views[b->view];
    const struct sql_join *j = &v->joins[b->join];
    if (j->ndim_columns <= 1 || val->is_null) {
        *out = FORMAT_DENSE_NULL;
        return 0;
    }
    int64_t id;
    const char *text;
    size_t len;
    if (store_dense_find(b->r, b->view, b->join, c, val->text, val->len, &id))
        return store_fail(err, "dim column \"%s\" of view \"%s\": the text of the dim row at "
                               "key %lld is not in its dictionary", column_name(j, c), v->name,
                          (long long)key);
    if (id < 0 || id > (int64_t)UINT32_MAX - FORMAT_DENSE_FIRST_ID ||
        store_dense_text(b->r, b->view, b->join, c, id, &text, &len) || len != val->len ||
        memcmp(text, val->text, len) != 0)
        return store_fail(err, "dim column \"%s\" of view \"%s\": the dictionary id %lld of the "
                               "text at key %lld does not read back as that text",
                          column_name(j, c), v->name, (long long)id, (long long)key);
    *out = (uint32_t)id + FORMAT_DENSE_FIRST_ID;
    return 0;
}

/* Whether a projection row of the join lies in chunk `chunk`. */
static int chunk_has_row(struct store_read *r, MDB_cursor *proj, int view, int join,
                         uint64_t chunk)
{
    uint8_t key[PROJ_KEY_BYTES];
    triple_key(key, view, join, chunk_code(chunk, 0));
    MDB_val k = {sizeof key, key}, v;
    (void)r;
    if (mdb_cursor_get(proj, &k, &v, MDB_SET_RANGE) || k.mv_size != PROJ_KEY_BYTES ||
        memcmp(k.mv_data, key, 4) != 0)
        return 0;
    uint64_t c;
    uint32_t off;
    store_dense_locate(get_i64key((uint8_t *)k.mv_data + 4), &c, &off);
    return c == chunk;
}

/* Every stored chunk of column c holds some dim row: none is left over. */
static int no_stray_chunks(struct store_read *r, int view, int join, int c,
                           struct store_error *err)
{
    const struct sql_view *v = &r->s->views->views[view];
    MDB_cursor *dense, *proj;
    int rc = mdb_cursor_open(r->txn, r->s->dense, &dense);
    if (rc)
        return store_lmdb_error(err, rc, "opening a dense cursor");
    if ((rc = mdb_cursor_open(r->txn, r->s->proj, &proj))) {
        mdb_cursor_close(dense);
        return store_lmdb_error(err, rc, "opening a projection cursor");
    }
    uint8_t prefix[DENSE_KEY_BYTES];
    triple_key(prefix, view, dense_slot(v, join, c), 0);
    MDB_val k = {sizeof prefix, prefix}, val;
    int ret = 0;
    for (rc = mdb_cursor_get(dense, &k, &val, MDB_SET_RANGE); rc == 0 && ret == 0;
         rc = mdb_cursor_get(dense, &k, &val, MDB_NEXT)) {
        if (k.mv_size != DENSE_KEY_BYTES || memcmp(k.mv_data, prefix, 4) != 0)
            break;
        uint64_t chunk = (uint64_t)get_i64key((uint8_t *)k.mv_data + 4);
        if (!chunk_has_row(r, proj, view, join, chunk))
            ret = store_fail(err, "dim column \"%s\" of view \"%s\": dense chunk %llu is stored "
                                  "but no dim row lies in it",
                             column_name(&v->joins[join], c), v->name,
                             (unsigned long long)chunk);
    }
    mdb_cursor_close(dense);
    mdb_cursor_close(proj);
    if (ret == 0 && rc && rc != MDB_NOTFOUND)
        return store_lmdb_error(err, rc, "walking dense chunks");
    return ret;
}

int store_verify_dense(struct store_read *r, int view, int join, uint64_t *rows,
                       struct store_error *err)
{
    const struct sql_view *v = &r->s->views->views[view];
    const struct sql_join *j = &v->joins[join];
    int nvals = j->ndim_columns - 1;
    struct rebuild b = {.r = r, .view = view, .join = join, .ncols = store_dense_columns(j)};
    struct store_dim_value *vals = calloc((size_t)nvals + 1, sizeof *vals);
    b.entries = calloc((size_t)b.ncols, sizeof *b.entries);
    b.encoded = malloc(FORMAT_DENSE_MAX_BYTES);
    int ret = vals && b.entries && b.encoded ? 0 : store_fail(err, "out of memory");
    for (int c = 0; ret == 0 && c < b.ncols; c++)
        if (!(b.entries[c] = calloc(FORMAT_DENSE_CHUNK, sizeof **b.entries)))
            ret = store_fail(err, "out of memory");
    *rows = 0;
    MDB_cursor *cur = NULL;
    int rc = ret ? 0 : mdb_cursor_open(r->txn, r->s->proj, &cur);
    if (rc)
        ret = store_lmdb_error(err, rc, "opening a projection cursor");
    uint8_t prefix[PROJ_KEY_BYTES];
    triple_key(prefix, view, join, INT64_MIN);
    MDB_val k = {sizeof prefix, prefix}, val;
    for (rc = ret ? MDB_NOTFOUND : mdb_cursor_get(cur, &k, &val, MDB_SET_RANGE);
         rc == 0 && ret == 0; rc = mdb_cursor_get(cur, &k, &val, MDB_NEXT)) {
        if (k.mv_size != PROJ_KEY_BYTES || memcmp(k.mv_data, prefix, 4) != 0)
            break;
        int64_t key = get_i64key((uint8_t *)k.mv_data + 4);
        uint64_t chunk;
        uint32_t off;
        store_dense_locate(key, &chunk, &off);
        if (b.have && chunk != b.chunk && flush(&b, err)) {
            ret = -1;
            break;
        }
        b.chunk = chunk;
        b.have = true;
        (*rows)++;
        if (proj_row_parse(val.mv_data, val.mv_size, view, join, vals, nvals, err)) {
            ret = -1;
            break;
        }
        for (int c = 0; ret == 0 && c < b.ncols; c++)
            ret = entry_of(&b, c, key, &vals[c < nvals ? c : 0], &b.entries[c][off], err);
    }
    if (cur)
        mdb_cursor_close(cur);
    if (ret == 0 && rc && rc != MDB_NOTFOUND)
        ret = store_lmdb_error(err, rc, "walking projection rows");
    if (ret == 0)
        ret = flush(&b, err);
    for (int c = 0; ret == 0 && c < b.ncols; c++)
        ret = no_stray_chunks(r, view, join, c, err);
    for (int c = 0; b.entries && c < b.ncols; c++)
        free(b.entries[c]);
    free(b.entries);
    free(b.encoded);
    free(vals);
    return ret;
}
