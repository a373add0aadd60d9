/* bytes.h -- integers as bytes at any address: big-endian (network order:
 * PostgreSQL's wire, binary COPY and send formats, TZif files, and LMDB keys,
 * which sort bytewise) and little-endian (the catalog's small values, and
 * PostgreSQL's on-disk and WAL layouts, which a little-endian server writes).
 *
 * Byte by byte, so no unaligned load, no signed overflow and no
 * implementation-defined conversion is involved; compilers reduce each to
 * one load or store (and a byte swap). The caller checks that the bytes are
 * there. Static inline, the one base piece without a .c: the COPY parser
 * calls these for every field of every row. format/bytes.h keeps the
 * segment format's own little-endian loads, which read columns in place by
 * memcpy on a host it requires to be little-endian. */
#ifndef STRAUM_BASE_BYTES_H
#define STRAUM_BASE_BYTES_H

#include <stdint.h>

static inline uint16_t be_load_u16(const uint8_t *p)
{
    return (uint16_t)((unsigned)p[0] << 8 | (unsigned)p[1]);
}

static inline uint32_t be_load_u32(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | (uint32_t)p[3];
}

static inline uint64_t be_load_u64(const uint8_t *p)
{
    return (uint64_t)be_load_u32(p) << 32 | be_load_u32(p + 4);
}

/* Two's complement reinterpretation without implementation-defined casts. */
static inline int16_t be_load_i16(const uint8_t *p)
{
    uint16_t u = be_load_u16(p);
    return u <= INT16_MAX ? (int16_t)u : (int16_t)(-(int32_t)(UINT16_MAX - u) - 1);
}

static inline int32_t be_load_i32(const uint8_t *p)
{
    uint32_t u = be_load_u32(p);
    return u <= INT32_MAX ? (int32_t)u : (int32_t)(-(int64_t)(UINT32_MAX - u) - 1);
}

static inline int64_t be_load_i64(const uint8_t *p)
{
    uint64_t u = be_load_u64(p);
    return u <= INT64_MAX ? (int64_t)u : -(int64_t)(UINT64_MAX - u) - 1;
}

static inline void be_store_u16(uint8_t *p, uint16_t v)
{
    p[0] = (uint8_t)(v >> 8);
    p[1] = (uint8_t)v;
}

static inline void be_store_u32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)(v >> 24);
    p[1] = (uint8_t)(v >> 16);
    p[2] = (uint8_t)(v >> 8);
    p[3] = (uint8_t)v;
}

static inline void be_store_u64(uint8_t *p, uint64_t v)
{
    be_store_u32(p, (uint32_t)(v >> 32));
    be_store_u32(p + 4, (uint32_t)v);
}

static inline uint16_t le_load_u16(const uint8_t *p)
{
    return (uint16_t)((unsigned)p[0] | (unsigned)p[1] << 8);
}

static inline uint32_t le_load_u32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static inline uint64_t le_load_u64(const uint8_t *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--)
        v = v << 8 | p[i];
    return v;
}

static inline void le_store_u16(uint8_t *p, uint16_t v)
{
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
}

static inline void le_store_u32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++, v >>= 8)
        p[i] = (uint8_t)v;
}

static inline void le_store_u64(uint8_t *p, uint64_t v)
{
    for (int i = 0; i < 8; i++, v >>= 8)
        p[i] = (uint8_t)v;
}

#endif
