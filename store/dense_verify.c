/* dense_verify.c -- straum-dump verify's check of the dense dim columns
 * (dense.c). They are a join's dim rows, nothing else holds them, so what
 * is checked is what must hold of any such columns: every chunk opens and
 * matches its checksum and is encoded canonically (format/dense.c: one
 * encoding per set of entries), the join's columns hold their chunks at
 * the same numbers and agree at every key on whether a dim row is there,
 * every id reads back as a text of the column's dictionary whose id it is,
 * and no chunk is stored without a row in it. Each failure is named. */
#include "store/internal.h"

#include <stdlib.h>
#include <string.h>

/* The code of offset off of chunk `chunk` (store_dense_locate backwards). */
static int64_t chunk_code(uint64_t chunk, uint32_t off)
{
    return (int64_t)((chunk * FORMAT_DENSE_CHUNK + off) ^ (UINT64_C(1) << 63));
}

static const char *column_name(const struct sql_join *j, int col)
{
    return j->ndim_columns > 1 ? j->dim_columns[col + 1] : j->dim_key;
}

/* One chunk of column c, decoded into entries and checked: stored in its
 * canonical encoding, each id a text of the dictionary that reads back as
 * that id. 1 stored, 0 not, -1 with err. */
static int chunk_entries(struct store_read *r, int view, int join, int c, uint64_t chunk,
                         uint32_t *entries, uint8_t *encoded, struct store_error *err)
{
    const struct sql_view *v = &r->s->views->views[view];
    const struct sql_join *j = &v->joins[join];
    struct format_dense d;
    int got = store_dense_chunk(r, view, join, c, chunk, &d, err);
    if (got <= 0)
        return got;
    format_dense_decode(&d, entries);
    size_t len = format_dense_encode(entries, encoded);
    if (len != FORMAT_DENSE_HEADER_BYTES + (size_t)d.n * d.width ||
        memcmp(d.entries - FORMAT_DENSE_HEADER_BYTES, encoded, len) != 0)
        return store_fail(err, "dim column \"%s\" of view \"%s\": dense chunk %llu is not "
                               "encoded as its entries encode",
                          column_name(j, c), v->name, (unsigned long long)chunk);
    for (uint32_t off = 0; off < FORMAT_DENSE_CHUNK; off++) {
        if (entries[off] < FORMAT_DENSE_FIRST_ID)
            continue;
        int64_t id = (int64_t)(entries[off] - FORMAT_DENSE_FIRST_ID), back;
        const char *text;
        size_t tlen;
        if (store_dense_text(r, view, join, c, id, &text, &tlen) ||
            store_dense_find(r, view, join, c, text, tlen, &back) || back != id)
            return store_fail(err, "dim column \"%s\" of view \"%s\": the id %lld at key %lld "
                                   "does not read back from its dictionary",
                              column_name(j, c), v->name, (long long)id,
                              (long long)chunk_code(chunk, off));
    }
    return 1;
}

/* Column c holds no chunk that column 0 lacks (the walk over column 0's
 * chunks checks the others at each of them). */
static int no_chunk_beyond_first(struct store_read *r, int view, int join, int c,
                                 struct store_error *err)
{
    const struct sql_view *v = &r->s->views->views[view];
    MDB_cursor *cur;
    int rc = mdb_cursor_open(r->txn, r->s->dense, &cur);
    if (rc)
        return store_lmdb_error(err, rc, "opening a dense cursor");
    uint8_t prefix[DENSE_KEY_BYTES], first[DENSE_KEY_BYTES];
    triple_key(prefix, view, dense_slot(v, join, c), 0);
    MDB_val k = {sizeof prefix, prefix}, val;
    int ret = 0;
    for (rc = mdb_cursor_get(cur, &k, &val, MDB_SET_RANGE); rc == 0 && ret == 0;
         rc = mdb_cursor_get(cur, &k, &val, MDB_NEXT)) {
        if (k.mv_size != DENSE_KEY_BYTES || memcmp(k.mv_data, prefix, 4) != 0)
            break;
        uint64_t chunk = (uint64_t)get_i64key((uint8_t *)k.mv_data + 4);
        triple_key(first, view, dense_slot(v, join, 0), (int64_t)chunk);
        MDB_val fk = {sizeof first, first}, fv;
        int frc = mdb_get(r->txn, r->s->dense, &fk, &fv);
        if (frc == MDB_NOTFOUND)
            ret = store_fail(err, "dim column \"%s\" of view \"%s\": dense chunk %llu is stored "
                                  "but no dim row lies in it",
                             column_name(&v->joins[join], c), v->name,
                             (unsigned long long)chunk);
        else if (frc)
            ret = store_lmdb_error(err, frc, "reading a dense chunk");
    }
    mdb_cursor_close(cur);
    if (ret == 0 && rc && rc != MDB_NOTFOUND)
        return store_lmdb_error(err, rc, "walking dense chunks");
    return ret;
}

int store_verify_dense(struct store_read *r, int view, int join, uint64_t *rows,
                       struct store_error *err)
{
    const struct sql_view *v = &r->s->views->views[view];
    const struct sql_join *j = &v->joins[join];
    int ncols = store_dense_columns(j);
    uint32_t *first = malloc(sizeof *first * FORMAT_DENSE_CHUNK);
    uint32_t *other = malloc(sizeof *other * FORMAT_DENSE_CHUNK);
    uint8_t *encoded = malloc(FORMAT_DENSE_MAX_BYTES);
    int ret = first && other && encoded ? 0 : store_fail(err, "out of memory");
    *rows = 0;
    /* Column 0's chunks as stored, by a cursor: dim keys may lie far apart,
     * so the chunk numbers between the first and the last are no bound. */
    MDB_cursor *cur = NULL;
    int rc = ret ? 0 : mdb_cursor_open(r->txn, r->s->dense, &cur);
    if (rc)
        ret = store_lmdb_error(err, rc, "opening a dense cursor");
    uint8_t prefix[DENSE_KEY_BYTES];
    triple_key(prefix, view, dense_slot(v, join, 0), 0);
    MDB_val k = {sizeof prefix, prefix}, val;
    for (rc = ret ? MDB_NOTFOUND : mdb_cursor_get(cur, &k, &val, MDB_SET_RANGE);
         rc == 0 && ret == 0; rc = mdb_cursor_get(cur, &k, &val, MDB_NEXT)) {
        if (k.mv_size != DENSE_KEY_BYTES || memcmp(k.mv_data, prefix, 4) != 0)
            break;
        uint64_t chunk = (uint64_t)get_i64key((uint8_t *)k.mv_data + 4);
        if (chunk_entries(r, view, join, 0, chunk, first, encoded, err) <= 0) {
            ret = -1; /* it is stored: 0 cannot come */
            break;
        }
        uint64_t present = 0;
        for (uint32_t off = 0; off < FORMAT_DENSE_CHUNK; off++)
            present += first[off] != FORMAT_DENSE_ABSENT;
        if (present == 0) {
            ret = store_fail(err, "dim column \"%s\" of view \"%s\": dense chunk %llu is stored "
                                  "but no dim row lies in it",
                             column_name(j, 0), v->name, (unsigned long long)chunk);
            break;
        }
        *rows += present;
        for (int c = 1; ret == 0 && c < ncols; c++) {
            int also = chunk_entries(r, view, join, c, chunk, other, encoded, err);
            if (also < 0) {
                ret = -1;
            } else if (also == 0) {
                ret = store_fail(err, "dim column \"%s\" of view \"%s\": dense chunk %llu is "
                                      "missing, though the dim row at key %lld lies in it",
                                 column_name(j, c), v->name, (unsigned long long)chunk,
                                 (long long)chunk_code(chunk, 0));
            } else {
                for (uint32_t off = 0; ret == 0 && off < FORMAT_DENSE_CHUNK; off++)
                    if ((first[off] == FORMAT_DENSE_ABSENT) != (other[off] == FORMAT_DENSE_ABSENT))
                        ret = store_fail(err, "dim columns \"%s\" and \"%s\" of view \"%s\" "
                                              "disagree on whether a dim row is at key %lld",
                                         column_name(j, 0), column_name(j, c), v->name,
                                         (long long)chunk_code(chunk, off));
            }
        }
    }
    if (cur)
        mdb_cursor_close(cur);
    if (ret == 0 && rc && rc != MDB_NOTFOUND)
        ret = store_lmdb_error(err, rc, "walking dense chunks");
    for (int c = 1; ret == 0 && c < ncols; c++)
        ret = no_chunk_beyond_first(r, view, join, c, err);
    free(first);
    free(other);
    free(encoded);
    return ret;
}
