/* wire.h -- big-endian reading and writing for PostgreSQL's wire formats
 * (replication framing, pgoutput, binary COPY, send-format values).
 *
 * Self-contained and static inline, so any file in ingest/ may include it.
 * Everything works byte by byte: no unaligned loads, no signed overflow.
 *
 *   Loads/stores:  base/bytes.h's be_load_* and be_store_*.
 *   Reader:        a cursor over a buffer; every wire_read_* checks that the
 *                  bytes are there and returns false (consuming nothing)
 *                  when they are not.
 *   Writer:        appends to a buffer of cap bytes; w.len always counts the
 *                  bytes needed, so a write past cap is dropped but counted
 *                  (encode once with cap 0 to size a buffer). */
#ifndef STRAUM_INGEST_WIRE_H
#define STRAUM_INGEST_WIRE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "base/bytes.h"

/* ---- Reader --------------------------------------------------------------- */

struct wire_reader {
    const uint8_t *buf;
    size_t len;
    size_t pos;
};

static inline void wire_reader_init(struct wire_reader *r, const void *buf, size_t len)
{
    r->buf = (const uint8_t *)buf;
    r->len = buf != NULL ? len : 0;
    r->pos = 0;
}

static inline size_t wire_left(const struct wire_reader *r)
{
    return r->len - r->pos;
}

static inline bool wire_read_u8(struct wire_reader *r, uint8_t *v)
{
    if (wire_left(r) < 1)
        return false;
    *v = r->buf[r->pos++];
    return true;
}

static inline bool wire_read_u16(struct wire_reader *r, uint16_t *v)
{
    if (wire_left(r) < 2)
        return false;
    *v = be_load_u16(r->buf + r->pos);
    r->pos += 2;
    return true;
}

static inline bool wire_read_u32(struct wire_reader *r, uint32_t *v)
{
    if (wire_left(r) < 4)
        return false;
    *v = be_load_u32(r->buf + r->pos);
    r->pos += 4;
    return true;
}

static inline bool wire_read_u64(struct wire_reader *r, uint64_t *v)
{
    if (wire_left(r) < 8)
        return false;
    *v = be_load_u64(r->buf + r->pos);
    r->pos += 8;
    return true;
}

static inline bool wire_read_i16(struct wire_reader *r, int16_t *v)
{
    if (wire_left(r) < 2)
        return false;
    *v = be_load_i16(r->buf + r->pos);
    r->pos += 2;
    return true;
}

static inline bool wire_read_i32(struct wire_reader *r, int32_t *v)
{
    if (wire_left(r) < 4)
        return false;
    *v = be_load_i32(r->buf + r->pos);
    r->pos += 4;
    return true;
}

static inline bool wire_read_i64(struct wire_reader *r, int64_t *v)
{
    if (wire_left(r) < 8)
        return false;
    *v = be_load_i64(r->buf + r->pos);
    r->pos += 8;
    return true;
}

/* n bytes in place: *p points into the buffer (NULL when n is 0). */
static inline bool wire_read_bytes(struct wire_reader *r, size_t n, const uint8_t **p)
{
    if (wire_left(r) < n)
        return false;
    *p = n > 0 ? r->buf + r->pos : NULL;
    r->pos += n;
    return true;
}

/* A NUL-terminated string in place; fails unless the NUL is inside the
 * buffer. *len (may be NULL) gets the length without the NUL. */
static inline bool wire_read_cstring(struct wire_reader *r, const char **s, size_t *len)
{
    size_t left = wire_left(r);
    if (left == 0)
        return false;
    const uint8_t *start = r->buf + r->pos;
    const uint8_t *nul = (const uint8_t *)memchr(start, 0, left);
    if (nul == NULL)
        return false;
    *s = (const char *)start;
    if (len != NULL)
        *len = (size_t)(nul - start);
    r->pos += (size_t)(nul - start) + 1;
    return true;
}

/* ---- Writer --------------------------------------------------------------- */

struct wire_writer {
    uint8_t *buf;
    size_t cap;
    size_t len; /* bytes needed so far, even past cap; SIZE_MAX on overflow */
};

static inline void wire_writer_init(struct wire_writer *w, void *buf, size_t cap)
{
    w->buf = (uint8_t *)buf;
    w->cap = buf != NULL ? cap : 0;
    w->len = 0;
}

/* Reserves n bytes: a pointer to write them to, or NULL when they do not
 * fit (they are still counted) or n is 0. */
static inline uint8_t *wire_reserve(struct wire_writer *w, size_t n)
{
    if (n > SIZE_MAX - w->len) {
        w->len = SIZE_MAX;
        return NULL;
    }
    size_t at = w->len;
    w->len += n;
    return n > 0 && w->len <= w->cap ? w->buf + at : NULL;
}

static inline void wire_put_u8(struct wire_writer *w, uint8_t v)
{
    uint8_t *p = wire_reserve(w, 1);
    if (p != NULL)
        *p = v;
}

static inline void wire_put_u16(struct wire_writer *w, uint16_t v)
{
    uint8_t *p = wire_reserve(w, 2);
    if (p != NULL)
        be_store_u16(p, v);
}

static inline void wire_put_u32(struct wire_writer *w, uint32_t v)
{
    uint8_t *p = wire_reserve(w, 4);
    if (p != NULL)
        be_store_u32(p, v);
}

static inline void wire_put_u64(struct wire_writer *w, uint64_t v)
{
    uint8_t *p = wire_reserve(w, 8);
    if (p != NULL)
        be_store_u64(p, v);
}

static inline void wire_put_i16(struct wire_writer *w, int16_t v)
{
    wire_put_u16(w, (uint16_t)v);
}

static inline void wire_put_i32(struct wire_writer *w, int32_t v)
{
    wire_put_u32(w, (uint32_t)v);
}

static inline void wire_put_i64(struct wire_writer *w, int64_t v)
{
    wire_put_u64(w, (uint64_t)v);
}

static inline void wire_put_bytes(struct wire_writer *w, const void *data, size_t n)
{
    uint8_t *p = wire_reserve(w, n);
    if (p != NULL && n > 0)
        memcpy(p, data, n);
}

/* s and its NUL; NULL is written as the empty string. */
static inline void wire_put_cstring(struct wire_writer *w, const char *s)
{
    if (s == NULL)
        s = "";
    wire_put_bytes(w, s, strlen(s) + 1);
}

#endif
