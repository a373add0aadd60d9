/* bytes.h -- little-endian loads and stores at any address.
 *
 * Blocks live wherever LMDB or the caller put them, so nothing in this layer
 * casts a buffer to a struct or reads a multi-byte integer through a typed
 * pointer: every field goes through these helpers, which compile to plain
 * (unaligned-safe) loads and stores. Also the two's-complement conversions
 * the codecs need, written so that no signed overflow or implementation-
 * defined conversion is involved. Private to format/. */
#ifndef STRAUM_FORMAT_BYTES_H
#define STRAUM_FORMAT_BYTES_H

#include <stdint.h>
#include <string.h>

/* Columns are stored in the host's byte order and read in place (RAW) with
 * memcpy, so the host must be little-endian like the format. */
#if !defined(__BYTE_ORDER__) || __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "the segment block format assumes a little-endian host"
#endif

static inline uint16_t load_u16(const uint8_t *p)
{
    return (uint16_t)(p[0] | (unsigned)p[1] << 8);
}

static inline uint32_t load_u32(const uint8_t *p)
{
    uint32_t v;
    memcpy(&v, p, 4);
    return v;
}

static inline uint64_t load_u64(const uint8_t *p)
{
    uint64_t v;
    memcpy(&v, p, 8);
    return v;
}

static inline void store_u16(uint8_t *p, uint16_t v)
{
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
}

static inline void store_u32(uint8_t *p, uint32_t v) { memcpy(p, &v, 4); }
static inline void store_u64(uint8_t *p, uint64_t v) { memcpy(p, &v, 8); }

/* int64 <-> uint64 by two's complement, without implementation-defined
 * conversions; compilers reduce both to nothing. */
static inline uint64_t i64_bits(int64_t v) { return (uint64_t)v; }

static inline int64_t i64_from_bits(uint64_t u)
{
    return u <= (uint64_t)INT64_MAX ? (int64_t)u : -(int64_t)(UINT64_MAX - u) - 1;
}

static inline int64_t load_i64(const uint8_t *p) { return i64_from_bits(load_u64(p)); }
static inline void store_i64(uint8_t *p, int64_t v) { store_u64(p, i64_bits(v)); }

__extension__ typedef __int128 format_i128;
__extension__ typedef unsigned __int128 format_u128;

static inline format_i128 i128_from_bits(format_u128 u)
{
    const format_u128 max = ((format_u128)1 << 127) - 1;
    return u <= max ? (format_i128)u : -(format_i128)(~u) - 1;
}

#endif
