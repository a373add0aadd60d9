/* heap_tuple.c -- heap tuples as stored, taken apart into columns and turned
 * into the binary send format (heap_tuple.h).
 *
 * The walk is heap_deform_tuple's (src/backend/access/common/heaptuple.c)
 * with tupmacs.h's alignment macros; the varlena headers are varatt.h's
 * (postgres.h in 15); numeric's on-disk headers are numeric.c's
 * NUMERIC_SIGN, NUMERIC_WEIGHT and NUMERIC_DSCALE, and the send format
 * numeric_send's; pglz is pg_lzcompress.c's format, decompressed by
 * pglz.c (as pgwal.c's page images are). Offsets are relative to the tuple's data,
 * which PostgreSQL places MAXALIGNed (t_hoff), so aligning an offset is
 * aligning the address PostgreSQL aligned. */
#include "ingest/heap_tuple.h"

#include "base/bytes.h"
#include "base/error.h"
#include "ingest/pglz.h"
#include "store/store.h"

#include <lz4.h>
#include <stdio.h>
#include <string.h>

#define VARHDRSZ 4
#define VARTAG_ONDISK 18
#define TOAST_POINTER_SIZE 16       /* sizeof(varatt_external) */
#define EXTSIZE_MASK 0x3FFFFFFFu    /* VARLENA_EXTSIZE_MASK: va_tcinfo, va_extinfo */
#define EXTSIZE_BITS 30
#define MAXALIGN 8

/* numeric.c's header bits. */
#define NUMERIC_SIGN_MASK 0xC000
#define NUMERIC_NEG 0x4000
#define NUMERIC_SHORT 0x8000
#define NUMERIC_SPECIAL 0xC000
#define NUMERIC_EXT_SIGN_MASK 0xF000
#define NUMERIC_SHORT_SIGN_MASK 0x2000
#define NUMERIC_SHORT_DSCALE_MASK 0x1F80
#define NUMERIC_SHORT_DSCALE_SHIFT 7
#define NUMERIC_SHORT_WEIGHT_SIGN_MASK 0x0040
#define NUMERIC_SHORT_WEIGHT_MASK 0x003F
#define NUMERIC_DSCALE_MASK 0x3FFF

/* "column "x"" or "attribute 3" for messages. */
static const char *col_name(const struct heap_attr *a, char *buf, size_t n)
{
    if (a->name != NULL)
        snprintf(buf, n, "column \"%s\"", a->name);
    else
        snprintf(buf, n, "attribute %d", (int)a->attnum);
    return buf;
}

#define COL(a) col_name((a), colbuf, sizeof colbuf)

/* ---- Descriptors ------------------------------------------------------------- */

/* The layout PostgreSQL gives the types heap_datum_send converts: attlen,
 * attbyval, attalign (pg_type). */
struct type_layout {
    uint32_t oid;
    const char *name;
    int16_t len;
    bool byval;
    char align;
};

static const struct type_layout layouts[] = {
    {PG_BOOL, "bool", 1, true, 'c'},
    {PG_INT2, "int2", 2, true, 's'},
    {PG_INT4, "int4", 4, true, 'i'},
    {PG_INT8, "int8", 8, true, 'd'},
    {PG_FLOAT4, "float4", 4, true, 'i'},
    {PG_FLOAT8, "float8", 8, true, 'd'},
    {PG_DATE, "date", 4, true, 'i'},
    {PG_TIMESTAMP, "timestamp", 8, true, 'd'},
    {PG_TIMESTAMPTZ, "timestamptz", 8, true, 'd'},
    {PG_NUMERIC, "numeric", -1, false, 'i'},
    {PG_TEXT, "text", -1, false, 'i'},
    {PG_VARCHAR, "varchar", -1, false, 'i'},
    {PG_BPCHAR, "bpchar", -1, false, 'i'},
};

static const struct type_layout *layout_of(uint32_t oid)
{
    for (size_t i = 0; i < sizeof layouts / sizeof layouts[0]; i++)
        if (layouts[i].oid == oid)
            return &layouts[i];
    return NULL;
}

static size_t align_to(size_t off, char attalign)
{
    size_t a = attalign == 'd' ? 8 : attalign == 'i' ? 4 : attalign == 's' ? 2 : 1;
    return (off + a - 1) & ~(a - 1);
}

/* What walking an attribute needs of it: a length, an alignment, by value
 * only where a Datum could hold it. */
static int check_walk(const struct heap_attr *a, char *err, size_t errlen)
{
    char colbuf[96];
    if (a->attlen == -2)
        return error_fmt(err, errlen,
                         "%s is a cstring (attlen -2), which no table column stores", COL(a));
    if (a->attlen == 0 || a->attlen < -2)
        return error_fmt(err, errlen, "%s has attlen %d", COL(a), (int)a->attlen);
    if (a->attalign != 'c' && a->attalign != 's' && a->attalign != 'i' && a->attalign != 'd')
        return error_fmt(err, errlen, "%s has attalign '\\x%02x', not one of c, s, i, d", COL(a),
                         (unsigned)(unsigned char)a->attalign);
    if (a->attbyval && a->attlen != 1 && a->attlen != 2 && a->attlen != 4 && a->attlen != 8)
        return error_fmt(err, errlen, "%s is passed by value with attlen %d", COL(a),
                         (int)a->attlen);
    return 0;
}

static int missing_error(const struct heap_attr *a, char *err, size_t errlen)
{
    char colbuf[96];
    return error_fmt(err, errlen,
                     "%s was added with a default (ALTER TABLE ... ADD COLUMN ... DEFAULT) that "
                     "the rows written before it do not store: PostgreSQL keeps it in "
                     "pg_attribute.attmissingval (atthasmissing), and Straum reads rows as "
                     "stored. Run VACUUM FULL (or CLUSTER) on the table once: it writes the "
                     "value into every row and clears atthasmissing",
                     COL(a));
}

int heap_desc_check(const struct heap_desc *d, char *err, size_t errlen)
{
    char colbuf[96];
    if (d->natts < 0 || d->natts > HEAP_MAX_ATTRS)
        return error_fmt(err, errlen, "a table of %d attributes (at most %d)", d->natts,
                         HEAP_MAX_ATTRS);
    for (int i = 0; i < d->natts; i++) {
        const struct heap_attr *a = &d->attrs[i];
        if (a->attnum != i + 1)
            return error_fmt(err, errlen, "%s is attribute %d in the description, not %d",
                             COL(a), i + 1, (int)a->attnum);
        if (check_walk(a, err, errlen))
            return -1;
        if (a->attisdropped)
            continue;
        if (a->atthasmissing)
            return missing_error(a, err, errlen);
        const struct type_layout *t = layout_of(a->type_oid);
        if (t != NULL && (a->attlen != t->len || a->attbyval != t->byval || a->attalign != t->align))
            return error_fmt(err, errlen,
                             "%s of type %s has attlen %d, attbyval %s, attalign '%c'; "
                             "PostgreSQL stores %s with %d, %s, '%c'",
                             COL(a), t->name, (int)a->attlen, a->attbyval ? "true" : "false",
                             a->attalign, t->name, (int)t->len, t->byval ? "true" : "false",
                             t->align);
    }
    return 0;
}

/* ---- Tuples ------------------------------------------------------------------ */

int heap_tuple_split_page(const uint8_t *tuple, size_t len, struct heap_tuple_header *h,
                          const uint8_t **body, size_t *body_len, char *err, size_t errlen)
{
    if (len < HEAP_TUPLE_HEADER_SIZE)
        return error_fmt(err, errlen, "a heap tuple of %zu bytes, shorter than its %d-byte header",
                         len, HEAP_TUPLE_HEADER_SIZE);
    /* t_choice (12), t_ctid (6), then these. */
    h->infomask2 = le_load_u16(tuple + 18);
    h->infomask = le_load_u16(tuple + 20);
    h->hoff = tuple[22];
    *body = tuple + HEAP_TUPLE_HEADER_SIZE;
    *body_len = len - HEAP_TUPLE_HEADER_SIZE;
    return 0;
}

int heap_tuple_split_xlog(const uint8_t *rec, size_t len, struct heap_tuple_header *h,
                          const uint8_t **body, size_t *body_len, char *err, size_t errlen)
{
    if (len < HEAP_XLOG_HEADER_SIZE)
        return error_fmt(err, errlen,
                         "a logged heap tuple of %zu bytes, shorter than its %d-byte header", len,
                         HEAP_XLOG_HEADER_SIZE);
    h->infomask2 = le_load_u16(rec);
    h->infomask = le_load_u16(rec + 2);
    h->hoff = rec[4];
    *body = rec + HEAP_XLOG_HEADER_SIZE;
    *body_len = len - HEAP_XLOG_HEADER_SIZE;
    return 0;
}

/* The varlena at p (avail bytes to the data's end) into *out; *size is
 * the bytes it takes in the tuple (VARSIZE_ANY). */
static int read_varlena(const struct heap_attr *a, const uint8_t *p, size_t avail,
                        struct heap_datum *out, size_t *size, char *err, size_t errlen)
{
    char colbuf[96];
    uint8_t b0 = p[0];
    if (b0 == 0x01) {
        /* VARATT_IS_1B_E: a TOAST pointer, va_tag then the pointer. */
        if (avail < 2)
            return error_fmt(err, errlen, "%s: a TOAST pointer cut off by the tuple's end",
                             COL(a));
        if (p[1] != VARTAG_ONDISK)
            return error_fmt(err, errlen,
                             "%s: a TOAST pointer of tag %u; tables store only on-disk "
                             "pointers (tag %d)",
                             COL(a), (unsigned)p[1], VARTAG_ONDISK);
        if (avail < 2 + TOAST_POINTER_SIZE)
            return error_fmt(err, errlen, "%s: a TOAST pointer cut off by the tuple's end",
                             COL(a));
        /* varatt_external, unaligned: va_rawsize, va_extinfo, va_valueid,
         * va_toastrelid. */
        uint32_t rawsize = le_load_u32(p + 2), extinfo = le_load_u32(p + 6);
        if (rawsize < VARHDRSZ || rawsize - VARHDRSZ > EXTSIZE_MASK)
            return error_fmt(err, errlen, "%s: a TOAST pointer to a value of %u bytes", COL(a),
                             rawsize);
        out->kind = HEAP_DATUM_EXTERNAL;
        out->raw_size = rawsize - VARHDRSZ;
        out->ext_size = extinfo & EXTSIZE_MASK;
        out->compression = out->ext_size < out->raw_size ? (uint8_t)(extinfo >> EXTSIZE_BITS) : 0;
        out->value_id = le_load_u32(p + 10);
        out->toast_relid = le_load_u32(p + 14);
        *size = 2 + TOAST_POINTER_SIZE;
        return 0;
    }
    if (b0 & 0x01) {
        /* VARATT_IS_1B: the length, header included, in the top 7 bits. */
        size_t n = b0 >> 1;
        if (n > avail)
            return error_fmt(err, errlen,
                             "%s: a value of %zu bytes with %zu left in the tuple", COL(a), n,
                             avail);
        out->kind = HEAP_DATUM_PLAIN;
        out->data = p + 1;
        out->len = n - 1;
        *size = n;
        return 0;
    }
    /* VARATT_IS_4B: the length, header included, in the top 30 bits. */
    if (avail < VARHDRSZ)
        return error_fmt(err, errlen, "%s: a 4-byte varlena header cut off by the tuple's end",
                         COL(a));
    size_t n = (le_load_u32(p) >> 2) & EXTSIZE_MASK;
    bool compressed = (b0 & 0x03) == 0x02;
    size_t hdr = compressed ? VARHDRSZ + 4 : VARHDRSZ; /* VARHDRSZ_COMPRESSED: + va_tcinfo */
    if (n < hdr || n > avail)
        return error_fmt(err, errlen,
                         "%s: a value of %zu bytes (header included) with %zu left in the tuple",
                         COL(a), n, avail);
    out->data = p + hdr;
    out->len = n - hdr;
    if (compressed) {
        uint32_t tcinfo = le_load_u32(p + 4);
        out->kind = HEAP_DATUM_COMPRESSED;
        out->raw_size = tcinfo & EXTSIZE_MASK;
        out->compression = (uint8_t)(tcinfo >> EXTSIZE_BITS);
    } else {
        out->kind = HEAP_DATUM_PLAIN;
    }
    *size = n;
    return 0;
}

int heap_tuple_deform(const struct heap_desc *d, const struct heap_tuple_header *h,
                      const uint8_t *body, size_t body_len, struct heap_datum *out, char *err,
                      size_t errlen)
{
    char colbuf[96];
    if (d->natts < 0 || d->natts > HEAP_MAX_ATTRS)
        return error_fmt(err, errlen, "a table of %d attributes (at most %d)", d->natts,
                         HEAP_MAX_ATTRS);
    int natts = h->infomask2 & HEAP_NATTS_MASK;
    if (natts > d->natts)
        return error_fmt(err, errlen,
                         "the tuple has %d attributes and the table's description %d: the "
                         "description is older than the tuple",
                         natts, d->natts);
    bool hasnulls = (h->infomask & HEAP_HASNULL) != 0;
    size_t bitmap_len = hasnulls ? ((size_t)natts + 7) / 8 : 0;
    if (h->hoff < HEAP_TUPLE_HEADER_SIZE + bitmap_len)
        return error_fmt(err, errlen,
                         "t_hoff %u leaves no room for the %d-byte header and a null bitmap of "
                         "%zu bytes",
                         (unsigned)h->hoff, HEAP_TUPLE_HEADER_SIZE, bitmap_len);
    if (h->hoff % MAXALIGN != 0)
        return error_fmt(err, errlen, "t_hoff %u is not a multiple of %d", (unsigned)h->hoff,
                         MAXALIGN);
    size_t start = (size_t)h->hoff - HEAP_TUPLE_HEADER_SIZE;
    if (start > body_len)
        return error_fmt(err, errlen, "t_hoff %u is past the tuple's end (%zu bytes)",
                         (unsigned)h->hoff, body_len + HEAP_TUPLE_HEADER_SIZE);
    const uint8_t *bits = body, *tp = body + start;
    size_t dlen = body_len - start, off = 0;

    int i = 0;
    for (; i < natts; i++) {
        const struct heap_attr *a = &d->attrs[i];
        struct heap_datum *v = &out[i];
        memset(v, 0, sizeof *v);
        if (check_walk(a, err, errlen))
            return -1;
        if (hasnulls && !(bits[i >> 3] & (1u << (i & 7)))) {
            v->kind = HEAP_DATUM_NULL; /* att_isnull */
            continue;
        }
        size_t size = 0;
        if (a->attlen == -1) {
            /* att_align_pointer: a non-zero byte is a 1-byte header or the
             * first byte of an aligned 4-byte one; a zero byte is padding
             * or the start of an aligned 4-byte header. */
            if (off >= dlen || (tp[off] == 0 && (off = align_to(off, a->attalign)) >= dlen))
                return error_fmt(err, errlen, "%s: the tuple ends before its value", COL(a));
            if (read_varlena(a, tp + off, dlen - off, v, &size, err, errlen))
                return -1;
        } else {
            off = align_to(off, a->attalign);
            size = (size_t)a->attlen;
            if (off > dlen || size > dlen - off)
                return error_fmt(err, errlen,
                                 "%s: a value of %zu bytes at offset %zu of a tuple data of "
                                 "%zu bytes",
                                 COL(a), size, off, dlen);
            v->kind = HEAP_DATUM_FIXED;
            v->data = tp + off;
            v->len = size;
        }
        off += size;
        if (a->attisdropped)
            memset(v, 0, sizeof *v); /* walked over, reported NULL */
    }
    /* Attributes added after the tuple was written. */
    for (; i < d->natts; i++) {
        const struct heap_attr *a = &d->attrs[i];
        memset(&out[i], 0, sizeof out[i]);
        if (a->atthasmissing && !a->attisdropped)
            return missing_error(a, err, errlen);
    }
    return 0;
}

/* ---- Send format --------------------------------------------------------------- */

size_t heap_datum_send_size(const struct heap_attr *a, const struct heap_datum *v)
{
    if (a->attisdropped || v->kind == HEAP_DATUM_NULL || v->kind == HEAP_DATUM_EXTERNAL)
        return 0;
    const struct type_layout *t = layout_of(a->type_oid);
    if (t == NULL)
        return 0;
    bool numeric = a->type_oid == PG_NUMERIC;
    switch (v->kind) {
    case HEAP_DATUM_FIXED:
        return t->len > 0 ? (size_t)t->len : 0;
    case HEAP_DATUM_PLAIN:
        return numeric ? v->len + 6 : 0;
    case HEAP_DATUM_COMPRESSED:
        return numeric ? 2 * (size_t)v->raw_size + 6 : v->raw_size;
    default:
        return 0;
    }
}

size_t heap_tuple_send_size(const struct heap_desc *d, const struct heap_datum *datums)
{
    size_t n = 0;
    for (int i = 0; i < d->natts; i++)
        n += heap_datum_send_size(&d->attrs[i], &datums[i]);
    return n;
}

static int arena_error(const struct heap_attr *a, size_t need, size_t left, char *err,
                       size_t errlen)
{
    char colbuf[96];
    return error_fmt(err, errlen, "%s: its value needs %zu bytes, the arena has %zu left",
                     COL(a), need, left);
}

/* numeric's stored payload (after the varlena header) p, len bytes, to
 * numeric_send's i16 ndigits, i16 weight, u16 sign, u16 dscale and the
 * digits, big-endian, at dst (cap bytes). Mirrors init_var_from_num over
 * the header macros, so that a stored value sends as PostgreSQL sends it. */
static int numeric_send(const struct heap_attr *a, const uint8_t *p, size_t len, uint8_t *dst,
                        size_t cap, size_t *out_len, char *err, size_t errlen)
{
    char colbuf[96];
    if (len < 2)
        return error_fmt(err, errlen, "%s: a numeric value of %zu bytes, shorter than its header",
                         COL(a), len);
    uint16_t h = le_load_u16(p);
    bool short_header = (h & 0x8000) != 0; /* NUMERIC_HEADER_IS_SHORT: short, NaN, Inf */
    size_t hdr = short_header ? 2 : 4;
    if (len < hdr || (len - hdr) % 2 != 0)
        return error_fmt(err, errlen,
                         "%s: a numeric value of %zu bytes: not a %zu-byte header and whole "
                         "digits",
                         COL(a), len, hdr);
    size_t ndigits = (len - hdr) / 2;
    uint16_t sign;
    if ((h & NUMERIC_SIGN_MASK) == NUMERIC_SHORT)
        sign = (h & NUMERIC_SHORT_SIGN_MASK) ? NUMERIC_NEG : 0;
    else if ((h & NUMERIC_SIGN_MASK) == NUMERIC_SPECIAL)
        sign = h & NUMERIC_EXT_SIGN_MASK;
    else
        sign = h & NUMERIC_SIGN_MASK;
    uint16_t dscale, weight;
    if (short_header) {
        dscale = (uint16_t)((h & NUMERIC_SHORT_DSCALE_MASK) >> NUMERIC_SHORT_DSCALE_SHIFT);
        weight = (uint16_t)(((h & NUMERIC_SHORT_WEIGHT_SIGN_MASK) ? ~NUMERIC_SHORT_WEIGHT_MASK : 0) |
                            (h & NUMERIC_SHORT_WEIGHT_MASK));
    } else {
        dscale = h & NUMERIC_DSCALE_MASK;
        weight = le_load_u16(p + 2);
    }
    size_t need = 8 + 2 * ndigits;
    if (need > cap)
        return arena_error(a, need, cap, err, errlen);
    /* pq_sendint16 of an int: ndigits past 32767 wraps, as in PostgreSQL
     * (pgvalue then refuses the value). */
    be_store_u16(dst, (uint16_t)ndigits);
    be_store_u16(dst + 2, weight);
    be_store_u16(dst + 4, sign);
    be_store_u16(dst + 6, dscale);
    for (size_t k = 0; k < ndigits; k++)
        be_store_u16(dst + 8 + 2 * k, le_load_u16(p + hdr + 2 * k));
    *out_len = need;
    return 0;
}

int heap_datum_send(const struct heap_attr *a, const struct heap_datum *v, uint8_t *arena,
                    size_t cap, size_t *used, struct heap_value *out, char *err, size_t errlen)
{
    char colbuf[96];
    memset(out, 0, sizeof *out);
    if (a->attisdropped || v->kind == HEAP_DATUM_NULL) {
        out->is_null = true;
        return 0;
    }
    const struct type_layout *t = layout_of(a->type_oid);
    if (t == NULL) {
        out->unsupported = true;
        return 0;
    }
    if (v->kind == HEAP_DATUM_EXTERNAL) {
        out->external = true;
        return 0;
    }
    size_t left = *used <= cap ? cap - *used : 0;
    uint8_t *dst = arena != NULL ? arena + *used : NULL;

    if (t->len > 0) {
        /* By value: native little-endian to big-endian. */
        if (v->kind != HEAP_DATUM_FIXED || v->len != (size_t)t->len)
            return error_fmt(err, errlen,
                             "%s of type %s: a stored value of %zu bytes%s, expected %d", COL(a),
                             t->name, v->len, v->kind == HEAP_DATUM_FIXED ? "" : " (a varlena)",
                             (int)t->len);
        if (v->len > left)
            return arena_error(a, v->len, left, err, errlen);
        if (a->type_oid == PG_BOOL)
            dst[0] = v->data[0] != 0; /* boolsend */
        else
            for (size_t k = 0; k < v->len; k++)
                dst[k] = v->data[v->len - 1 - k];
        out->data = dst;
        out->len = v->len;
        *used += v->len;
        return 0;
    }

    if (v->kind == HEAP_DATUM_FIXED)
        return error_fmt(err, errlen, "%s of type %s: a stored value of fixed length %zu",
                         COL(a), t->name, v->len);
    const uint8_t *payload = v->data;
    size_t plen = v->len;
    if (v->kind == HEAP_DATUM_COMPRESSED) {
        size_t raw = v->raw_size;
        if (raw > left)
            return arena_error(a, raw, left, err, errlen);
        uint8_t none[1];
        uint8_t *to = raw > 0 ? dst : none;
        bool ok;
        if (v->compression == HEAP_COMPRESSION_PGLZ) {
            /* toast_decompress_datum's check_complete: the value is all
             * of its stored size, no byte more or less. */
            ok = pglz_decompress(v->data, v->len, to, raw, true) == (long)raw;
        } else if (v->compression == HEAP_COMPRESSION_LZ4) {
            int n = LZ4_decompress_safe((const char *)v->data, (char *)to, (int)v->len,
                                        raw > 0 ? (int)raw : 1);
            ok = n >= 0 && (size_t)n == raw;
        } else {
            return error_fmt(err, errlen, "%s: a value compressed by unknown method %u", COL(a),
                             (unsigned)v->compression);
        }
        if (!ok)
            return error_fmt(err, errlen,
                             "%s: %s-compressed data of %zu bytes does not decompress to its "
                             "%zu bytes",
                             COL(a), v->compression == HEAP_COMPRESSION_PGLZ ? "pglz" : "lz4",
                             v->len, raw);
        payload = raw > 0 ? dst : none;
        plen = raw;
        *used += raw;
        left -= raw;
        dst = dst != NULL ? dst + raw : NULL;
    }
    if (a->type_oid != PG_NUMERIC) {
        /* textsend, varcharsend, bpcharsend: the bytes as stored. */
        out->data = plen > 0 ? payload : (const uint8_t *)"";
        out->len = plen;
        return 0;
    }
    size_t n = 0;
    if (numeric_send(a, payload, plen, dst, left, &n, err, errlen))
        return -1;
    out->data = dst;
    out->len = n;
    *used += n;
    return 0;
}

int heap_tuple_send(const struct heap_desc *d, const struct heap_datum *datums, uint8_t *arena,
                    size_t cap, struct heap_value *out, char *err, size_t errlen)
{
    size_t used = 0;
    for (int i = 0; i < d->natts; i++)
        if (heap_datum_send(&d->attrs[i], &datums[i], arena, cap, &used, &out[i], err, errlen))
            return -1;
    return 0;
}
