/* fuzz_heap_tuple.c -- libFuzzer target for ingest/heap_tuple.c.
 *
 * The input's first bytes are the table's description: a count of
 * attributes (its low 6 bits), then 8 bytes each: u16 type OID, i32
 * typmod (little-endian), i8 attlen, and flags (1 by value, 2 dropped,
 * 4 atthasmissing, alignment c/s/i/d in bits 3-4). One byte picks the
 * form (bit 0: a WAL record's xl_heap_header and body, else the tuple as
 * on a page); the rest is the tuple, its last byte the input's last.
 *
 * heap_desc_check may refuse the description, but deform must still run
 * safely on it. Nothing may crash, read out of bounds or leak; a refusal
 * must leave a message. Whatever deforms must convert, into an arena of
 * heap_tuple_send_size bytes (when under 4 MiB; a hostile raw size may
 * claim up to 1 GiB a value), and never fail for want of arena; a failure
 * must leave a message. Every value must agree with its datum (NULL,
 * external, unsupported type), lie inside the tuple or the arena, and
 * each non-NULL, non-external value of a supported type must decode with
 * pgvalue_decode_binary or be refused with a message. An arena of half
 * the size must fail cleanly or succeed. tests/e2e/test_heap_tuple.c
 * writes the seed corpus from a real table's pages. */
#include "ingest/heap_tuple.h"
#include "ingest/pgvalue.h"

#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define ARENA_LIMIT (4u << 20)

static bool inside(const uint8_t *p, size_t n, const uint8_t *base, size_t len)
{
    return p >= base && (size_t)(p - base) <= len && n <= len - (size_t)(p - base);
}

static bool supported(uint32_t oid)
{
    switch (oid) {
    case PG_BOOL: case PG_INT2: case PG_INT4: case PG_INT8: case PG_FLOAT4: case PG_FLOAT8:
    case PG_DATE: case PG_TIMESTAMP: case PG_TIMESTAMPTZ: case PG_NUMERIC: case PG_TEXT:
    case PG_VARCHAR: case PG_BPCHAR:
        return true;
    }
    return false;
}

static void check_values(const struct heap_desc *d, const struct heap_datum *dv,
                         const struct heap_value *v, const uint8_t *data, size_t size,
                         const uint8_t *arena, size_t cap)
{
    char err[512];
    for (int i = 0; i < d->natts; i++) {
        const struct heap_attr *a = &d->attrs[i];
        bool is_null = a->attisdropped || dv[i].kind == HEAP_DATUM_NULL;
        if (v[i].is_null != is_null)
            abort();
        if (is_null)
            continue;
        if (v[i].unsupported != !supported(a->type_oid))
            abort();
        if (v[i].unsupported)
            continue;
        if (v[i].external != (dv[i].kind == HEAP_DATUM_EXTERNAL))
            abort();
        if (v[i].external) {
            if (v[i].data != NULL)
                abort();
            continue;
        }
        if (v[i].data == NULL)
            abort();
        if (v[i].len > 0 && !inside(v[i].data, v[i].len, data, size) &&
            !inside(v[i].data, v[i].len, arena, cap))
            abort();
        struct store_column_type ct;
        if (pgvalue_store_type(a->type_oid, a->typmod, &ct, err, sizeof err) != 0 &&
            pgvalue_store_type(a->type_oid, -1, &ct, err, sizeof err) != 0)
            abort();
        struct pgvalue pv;
        err[0] = '\0';
        if (pgvalue_decode_binary(a->type_oid, &ct, v[i].data, v[i].len, &pv, err, sizeof err) !=
                0 &&
            err[0] == '\0')
            abort();
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    int natts = data[0] & 63;
    size_t pos = 1;
    if (size < pos + 8 * (size_t)natts + 1)
        return 0;
    struct heap_attr attrs[64];
    static const char aligns[4] = {'c', 's', 'i', 'd'};
    for (int i = 0; i < natts; i++, pos += 8) {
        const uint8_t *p = data + pos;
        uint8_t flags = p[7];
        attrs[i] = (struct heap_attr){
            .name = NULL,
            .attnum = (int16_t)(i + 1),
            .type_oid = (uint32_t)(p[0] | p[1] << 8),
            .typmod = (int32_t)((uint32_t)p[2] | (uint32_t)p[3] << 8 | (uint32_t)p[4] << 16 |
                                (uint32_t)p[5] << 24),
            .attlen = (int8_t)p[6],
            .attbyval = flags & 1,
            .attisdropped = (flags & 2) != 0,
            .atthasmissing = (flags & 4) != 0,
            .attalign = aligns[(flags >> 3) & 3],
        };
    }
    struct heap_desc d = {natts, attrs};
    char err[512];
    err[0] = '\0';
    if (heap_desc_check(&d, err, sizeof err) != 0 && err[0] == '\0')
        abort();
    bool wal = data[pos++] & 1;

    /* The tuple: a copy of its own, so that a read past it is caught. */
    size_t len = size - pos;
    uint8_t *tuple = malloc(len ? len : 1);
    if (tuple == NULL)
        abort();
    memcpy(tuple, data + pos, len);

    struct heap_tuple_header h;
    const uint8_t *body;
    size_t blen;
    err[0] = '\0';
    int rc = wal ? heap_tuple_split_xlog(tuple, len, &h, &body, &blen, err, sizeof err)
                 : heap_tuple_split_page(tuple, len, &h, &body, &blen, err, sizeof err);
    if (rc != 0) {
        if (err[0] == '\0')
            abort();
        free(tuple);
        return 0;
    }
    struct heap_datum dv[64];
    err[0] = '\0';
    if (heap_tuple_deform(&d, &h, body, blen, dv, err, sizeof err) != 0) {
        if (err[0] == '\0')
            abort();
        free(tuple);
        return 0;
    }
    for (int i = 0; i < natts; i++) {
        if (dv[i].kind == HEAP_DATUM_FIXED || dv[i].kind == HEAP_DATUM_PLAIN ||
            dv[i].kind == HEAP_DATUM_COMPRESSED) {
            if (!inside(dv[i].data, dv[i].len, body, blen))
                abort();
        }
    }

    size_t cap = heap_tuple_send_size(&d, dv);
    if (cap <= ARENA_LIMIT) {
        uint8_t *arena = malloc(cap ? cap : 1);
        if (arena == NULL)
            abort();
        struct heap_value v[64];
        err[0] = '\0';
        if (heap_tuple_send(&d, dv, arena, cap, v, err, sizeof err) == 0)
            check_values(&d, dv, v, tuple, len, arena, cap);
        else if (err[0] == '\0' || strstr(err, "arena") != NULL)
            abort();
        /* Half the arena: a clean failure or a success. */
        err[0] = '\0';
        if (heap_tuple_send(&d, dv, arena, cap / 2, v, err, sizeof err) != 0 && err[0] == '\0')
            abort();
        free(arena);
    }
    free(tuple);
    return 0;
}
