/* bytes_be.h -- big-endian (network order) integer reads, as PostgreSQL's
 * wire and COPY formats use them. The caller checks the length first.
 * Private to ingest/. */
#ifndef STRAUM_INGEST_BYTES_BE_H
#define STRAUM_INGEST_BYTES_BE_H

#include <stdint.h>

static inline uint16_t be_u16(const uint8_t *p)
{
    return (uint16_t)((unsigned)p[0] << 8 | p[1]);
}

static inline uint32_t be_u32(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static inline uint64_t be_u64(const uint8_t *p)
{
    return (uint64_t)be_u32(p) << 32 | be_u32(p + 4);
}

/* Two's complement reinterpretation without implementation-defined casts. */
static inline int16_t be_i16(const uint8_t *p)
{
    uint16_t u = be_u16(p);
    return u <= INT16_MAX ? (int16_t)u : (int16_t)(-(int32_t)(UINT16_MAX - u) - 1);
}

static inline int32_t be_i32(const uint8_t *p)
{
    uint32_t u = be_u32(p);
    return u <= INT32_MAX ? (int32_t)u : (int32_t)(-(int64_t)(UINT32_MAX - u) - 1);
}

static inline int64_t be_i64(const uint8_t *p)
{
    uint64_t u = be_u64(p);
    return u <= INT64_MAX ? (int64_t)u : -(int64_t)(UINT64_MAX - u) - 1;
}

#endif
