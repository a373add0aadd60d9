/* row_record.c -- a decoded source row in a few bytes (row_record.h has
 * the layout). */
#include "ingest/row_record.h"

#include <stdlib.h>
#include <string.h>

/* A u64 is at most ten 7-bit groups. */
enum { VARINT_MAX = 10 };

static uint8_t *put_varint(uint8_t *p, uint64_t v)
{
    while (v >= 0x80) {
        *p++ = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    *p++ = (uint8_t)v;
    return p;
}

/* Reads a varint at *p below end; false when it runs past end or past
 * 64 bits. */
static bool get_varint(const uint8_t **p, const uint8_t *end, uint64_t *out)
{
    uint64_t v = 0;
    for (int shift = 0; *p < end && shift < 64; shift += 7) {
        uint8_t b = *(*p)++;
        v |= (uint64_t)(b & 0x7f) << shift;
        if (b < 0x80) {
            *out = v;
            return shift < 63 || b <= 1;
        }
    }
    return false;
}

static uint64_t zigzag(int64_t v)
{
    return ((uint64_t)v << 1) ^ (uint64_t)(v >> 63);
}

static int64_t unzigzag(uint64_t v)
{
    return (int64_t)(v >> 1) ^ -(int64_t)(v & 1);
}

static size_t bitmap_bytes(const struct source_table *t)
{
    return ((size_t)t->ncols + 7) / 8;
}

/* The most bytes row's record can take. */
static size_t record_bound(const struct source_table *t, const struct decoded_value *row)
{
    size_t n = bitmap_bytes(t);
    for (int c = 0; c < t->ncols; c++)
        if (!row[c].is_null)
            n += VARINT_MAX + (t->cols[c].type.type == STORE_TYPE_TEXT ? row[c].v.len : 0);
    return n;
}

size_t row_record_encode(const struct source_table *t, const struct decoded_value *row,
                         struct row_record_buf *buf)
{
    size_t need = record_bound(t, row);
    if (need > buf->cap) {
        size_t cap = buf->cap ? buf->cap : 256;
        while (cap < need)
            cap *= 2;
        uint8_t *b = realloc(buf->bytes, cap);
        if (!b)
            return 0;
        buf->bytes = b;
        buf->cap = cap;
    }
    uint8_t *p = buf->bytes;
    size_t nulls = bitmap_bytes(t);
    memset(p, 0, nulls);
    for (int c = 0; c < t->ncols; c++)
        if (row[c].is_null)
            p[c / 8] |= (uint8_t)(1u << (c % 8));
    p += nulls;
    for (int c = 0; c < t->ncols; c++) {
        const struct pgvalue *v = &row[c].v;
        if (row[c].is_null)
            continue;
        if (t->cols[c].type.type == STORE_TYPE_TEXT) {
            p = put_varint(p, v->len);
            memcpy(p, v->text, v->len);
            p += v->len;
        } else {
            p = put_varint(p, zigzag(v->code));
        }
    }
    return (size_t)(p - buf->bytes);
}

int row_record_decode(const struct source_table *t, const uint8_t *p, size_t len,
                      struct decoded_value *row, char *err, size_t errlen)
{
    const uint8_t *end = p + len, *nulls = p;
    if (len < bitmap_bytes(t))
        return error_fmt(err, errlen, "a set-aside row of %s is cut short", t->qualified);
    p += bitmap_bytes(t);
    for (int c = 0; c < t->ncols; c++) {
        row[c].is_null = nulls[c / 8] >> (c % 8) & 1;
        if (row[c].is_null)
            continue;
        uint64_t v;
        if (!get_varint(&p, end, &v))
            return error_fmt(err, errlen, "a set-aside row of %s is cut short", t->qualified);
        if (t->cols[c].type.type != STORE_TYPE_TEXT) {
            pgvalue_from_code(&t->cols[c].type, unzigzag(v), &row[c].v);
            continue;
        }
        if (v > (uint64_t)(end - p))
            return error_fmt(err, errlen, "a set-aside row of %s is cut short", t->qualified);
        row[c].v.text = (const char *)p;
        row[c].v.len = (size_t)v;
        p += v;
    }
    if (p != end)
        return error_fmt(err, errlen, "a set-aside row of %s has %zu bytes too many",
                           t->qualified, (size_t)(end - p));
    return 0;
}

void row_record_buf_free(struct row_record_buf *buf)
{
    free(buf->bytes);
    buf->bytes = NULL;
    buf->cap = 0;
}
