/* keys.c -- byte encodings of LMDB keys and small catalog values.
 *
 * Keys sort bytewise in LMDB, so every integer in a key is big-endian and
 * signed integers have their sign bit flipped: then the byte order of keys is
 * the numeric order of (view, width, span start), which makes a time range
 * over one width a single forward cursor walk. */
#include "base/error.h"
#include "store/internal.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

void put_i64key(uint8_t *p, int64_t v) { be_store_u64(p, (uint64_t)v ^ (1ULL << 63)); }
int64_t get_i64key(const uint8_t *p) { return (int64_t)(be_load_u64(p) ^ (1ULL << 63)); }

void seg_key(uint8_t out[SEG_KEY_BYTES], int view, int width, int64_t span_start)
{
    be_store_u16(out, (uint16_t)view);
    out[2] = (uint8_t)width;
    put_i64key(out + 3, span_start);
}

void delta_key(uint8_t out[DELTA_KEY_BYTES], const uint8_t seg[SEG_KEY_BYTES], int seq)
{
    memcpy(out, seg, SEG_KEY_BYTES);
    out[SEG_KEY_BYTES] = (uint8_t)seq;
}

void triple_key(uint8_t out[12], int view, int a, int64_t code)
{
    be_store_u16(out, (uint16_t)view);
    be_store_u16(out + 2, (uint16_t)a);
    put_i64key(out + 4, code);
}

static uint64_t xxh64_seed0(const void *text, size_t len) { return XXH64(text, len, 0); }
uint64_t (*dict_text_hash)(const void *text, size_t len) = xxh64_seed0;

size_t dict_key(uint8_t *out, int view, int col, const char *text, size_t len, int probe)
{
    be_store_u16(out, (uint16_t)view);
    be_store_u16(out + 2, (uint16_t)col);
    if (len <= DICT_INLINE_BYTES) {
        memcpy(out + 4, text, len);
        return 4 + len;
    }
    memcpy(out + 4, text, DICT_PREFIX_BYTES);
    out[4 + DICT_PREFIX_BYTES] = 0xFF;
    be_store_u64(out + 5 + DICT_PREFIX_BYTES, dict_text_hash(text, len));
    if (probe == 0)
        return 13 + DICT_PREFIX_BYTES;
    out[13 + DICT_PREFIX_BYTES] = (uint8_t)probe;
    return 14 + DICT_PREFIX_BYTES;
}

void position_encode(const struct store_position *pos, uint8_t out[32])
{
    le_store_u64(out, pos->lsn);
    le_store_u64(out + 8, (uint64_t)pos->commit_time);
    le_store_u64(out + 16, (uint64_t)pos->contact_time);
    le_store_u64(out + 24, pos->bytes_behind);
}

void position_decode(const uint8_t in[32], struct store_position *pos)
{
    pos->lsn = le_load_u64(in);
    pos->commit_time = (int64_t)le_load_u64(in + 8);
    pos->contact_time = (int64_t)le_load_u64(in + 16);
    pos->bytes_behind = le_load_u64(in + 24);
}

/* Column types: for each view, u16 count then per fact column
 * u8 type, u8 reserved, i16 scale (LE), u32 oid (LE). */
size_t types_encode(const struct sql_view_list *views, struct store_column_type *const *types,
                    uint8_t *out, size_t cap)
{
    size_t need = 0;
    for (int v = 0; v < views->nviews; v++)
        need += 2 + 8 * (size_t)views->views[v].nfact_columns;
    if (need > cap)
        return need;
    uint8_t *p = out;
    for (int v = 0; v < views->nviews; v++) {
        int n = views->views[v].nfact_columns;
        p[0] = (uint8_t)n;
        p[1] = (uint8_t)(n >> 8);
        p += 2;
        for (int c = 0; c < n; c++, p += 8) {
            const struct store_column_type *t = &types[v][c];
            p[0] = (uint8_t)t->type;
            p[1] = 0;
            p[2] = (uint8_t)t->scale;
            p[3] = (uint8_t)((uint16_t)t->scale >> 8);
            for (int i = 0; i < 4; i++)
                p[4 + i] = (uint8_t)(t->pg_oid >> (8 * i));
        }
    }
    return need;
}

int types_decode(const struct sql_view_list *views, const uint8_t *p, size_t len,
                 struct store_column_type ***out, struct store_error *err)
{
    struct store_column_type **types = calloc((size_t)views->nviews, sizeof *types);
    if (!types)
        return store_fail(err, "out of memory");
    const uint8_t *end = p + len;
    for (int v = 0; v < views->nviews; v++) {
        int n = views->views[v].nfact_columns;
        if (end - p < 2 || (p[0] | p[1] << 8) != n || end - p < 2 + 8 * n) {
            types_free(views, types);
            return store_fail(err, "the catalog's column types do not match view \"%s\"",
                              views->views[v].name);
        }
        p += 2;
        types[v] = calloc((size_t)n + 1, sizeof **types);
        if (!types[v]) {
            types_free(views, types);
            return store_fail(err, "out of memory");
        }
        for (int c = 0; c < n; c++, p += 8) {
            struct store_column_type *t = &types[v][c];
            t->type = (enum store_type)p[0];
            t->scale = (int16_t)(uint16_t)(p[2] | p[3] << 8);
            t->pg_oid = (uint32_t)p[4] | (uint32_t)p[5] << 8 | (uint32_t)p[6] << 16 |
                        (uint32_t)p[7] << 24;
            if (t->type < STORE_TYPE_INT || t->type > STORE_TYPE_TIMESTAMP) {
                types_free(views, types);
                return store_fail(err, "the catalog names an unknown column type %d", p[0]);
            }
        }
    }
    *out = types;
    return 0;
}

void types_free(const struct sql_view_list *views, struct store_column_type **types)
{
    if (!types)
        return;
    for (int v = 0; v < views->nviews; v++)
        free(types[v]);
    free(types);
}

int store_fail(struct store_error *err, const char *fmt, ...)
{
    if (err) {
        err->kind = STORE_ERR_OTHER;
        va_list ap;
        va_start(ap, fmt);
        error_vfmt(err->message, sizeof err->message, fmt, ap);
        va_end(ap);
    }
    return -1;
}

int store_lmdb_error(struct store_error *err, int rc, const char *doing)
{
    if (rc == MDB_MAP_FULL)
        return store_fail(err, "%s: the store's map is full (%s)", doing, mdb_strerror(rc));
    return store_fail(err, "%s: %s", doing, mdb_strerror(rc));
}
