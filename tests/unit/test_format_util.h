/* test_format_util.h -- shared by the test_format_*.c suites: a seeded PRNG,
 * column generators with the distributions the codecs care about, and block
 * encoding helpers. Header-only so that each suite stays one executable. */
#ifndef STRAUM_TESTS_FORMAT_UTIL_H
#define STRAUM_TESTS_FORMAT_UTIL_H

#include "format/checksum.h"
#include "format/column.h"
#include "format/format.h"

#include <criterion/criterion.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

__extension__ typedef __int128 i128;
__extension__ typedef unsigned __int128 u128;

/* splitmix64: tiny, seedable, good enough for test data. */
struct rng {
    uint64_t s;
};

static inline uint64_t rng_next(struct rng *r)
{
    uint64_t z = (r->s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* Uniform in [0, bound) (bound > 0; the slight bias does not matter here). */
static inline uint64_t rng_below(struct rng *r, uint64_t bound) { return rng_next(r) % bound; }

static inline int64_t i64_of(uint64_t u)
{
    int64_t v;
    memcpy(&v, &u, 8);
    return v;
}

/* ---- Column generators ---------------------------------------------------- */

enum { DIST_I64 = 11, DIST_I128 = 7, DIST_F64 = 6 };

static inline int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* Fills v[0..n) with distribution d (0 <= d < DIST_I64). */
static inline void gen_i64(struct rng *r, int d, int64_t *v, uint32_t n)
{
    int64_t c = i64_of(rng_next(r));
    int64_t step = (int64_t)rng_below(r, 1000000) + 1;
    int64_t start = (int64_t)rng_below(r, (uint64_t)1 << 52);
    for (uint32_t i = 0; i < n; i++) {
        switch (d) {
        case 0: /* constant */
            v[i] = c;
            break;
        case 1: /* small range */
            v[i] = (int64_t)rng_below(r, 16);
            break;
        case 2: /* small range far from zero */
            v[i] = INT64_MAX - (int64_t)rng_below(r, 1000);
            break;
        case 3: /* full 64-bit range */
            v[i] = i64_of(rng_next(r));
            break;
        case 4: /* the extremes, so deltas and ranges wrap */
        {
            static const int64_t ext[] = {INT64_MIN, INT64_MAX, 0, -1, 1, INT64_MIN + 1};
            v[i] = ext[rng_below(r, 6)];
            break;
        }
        case 5: /* evenly spaced timestamps */
            v[i] = start + (int64_t)i * step;
            break;
        case 6: /* sorted timestamps with jitter */
            v[i] = start + (int64_t)i * step + (int64_t)rng_below(r, 100);
            break;
        case 7: /* alternating INT64_MIN / INT64_MAX */
            v[i] = (i & 1) ? INT64_MAX : INT64_MIN;
            break;
        case 8: /* a few distinct wide values, repeated (LZ4 territory) */
            v[i] = i64_of(0x0123456789abcdefull * (rng_below(r, 4) + 1));
            break;
        case 9: /* descending */
            v[i] = c / 2 - (int64_t)i * step;
            break;
        default: /* random, then sorted */
            v[i] = i64_of(rng_next(r)) >> rng_below(r, 64);
            break;
        }
    }
    if (d == 10)
        qsort(v, n, sizeof *v, cmp_i64);
}

static inline void gen_i128(struct rng *r, int d, i128 *v, uint32_t n)
{
    i128 c = (i128)(((u128)rng_next(r) << 64) | rng_next(r));
    for (uint32_t i = 0; i < n; i++) {
        switch (d) {
        case 0: /* constant, anywhere */
            v[i] = c;
            break;
        case 1: /* small sums */
            v[i] = (i128)rng_below(r, 100000);
            break;
        case 2: /* int64 range: bitpack at 64 bits */
            v[i] = (i128)i64_of(rng_next(r));
            break;
        case 3: /* wider than 64 bits: bitpack refuses */
            v[i] = (i128)(((u128)rng_next(r) << 64) | rng_next(r));
            break;
        case 4: /* the 128-bit extremes */
        {
            const i128 max = (i128)(((u128)1 << 127) - 1);
            switch (rng_below(r, 4)) {
            case 0: v[i] = max; break;
            case 1: v[i] = -max - 1; break;
            case 2: v[i] = 0; break;
            default: v[i] = -1; break;
            }
            break;
        }
        case 5: /* near INT64_MIN with a 64-bit spread above it */
            v[i] = (i128)INT64_MIN + (i128)(rng_next(r) >> 1);
            break;
        default: /* scaled sums of money: large, close together */
            v[i] = (i128)1000000000000000000ll * 1000 + (i128)rng_below(r, 1u << 20);
            break;
        }
    }
}

static inline void gen_f64(struct rng *r, int d, double *v, uint32_t n)
{
    for (uint32_t i = 0; i < n; i++) {
        switch (d) {
        case 0:
            v[i] = 42.5;
            break;
        case 1: /* whole numbers */
            v[i] = (double)rng_below(r, 1000);
            break;
        case 2: /* any bit pattern, NaNs with payloads included */
        {
            uint64_t u = rng_next(r);
            memcpy(&v[i], &u, 8);
            break;
        }
        case 3: /* specials */
        {
            static const double sp[] = {0.0, -0.0, 1e-310, -1e308, 1.0};
            int k = (int)rng_below(r, 7);
            v[i] = k < 5 ? sp[k] : k == 5 ? INFINITY : NAN;
            break;
        }
        case 4:
            v[i] = (double)rng_next(r) / 3.0;
            break;
        default:
            v[i] = (double)i * 0.25;
            break;
        }
    }
}

/* ---- Blocks --------------------------------------------------------------- */

/* Encodes into a fresh buffer of exactly format_block_bound() bytes (ASan
 * then catches any write past the bound); fails the test on error. */
static inline uint8_t *encode_block(const struct format_block_info *info,
                                    const struct format_column *cols, int ncols,
                                    enum format_policy policy, const int *codecs, size_t *len)
{
    size_t cap = format_block_bound(cols, ncols);
    uint8_t *buf = malloc(cap);
    cr_assert(buf);
    struct format_error err = {{0}};
    int rc = format_block_encode_codecs(info, cols, ncols, policy, codecs, buf, cap, len, &err);
    cr_assert_eq(rc, 0, "encode failed: %s", err.message);
    cr_assert_leq(*len, cap);
    return buf;
}

/* Recomputes a block's directory checksum (when its directory fits in len)
 * and trailer after a test edited it, so that the edit itself is what the
 * structural checks have to catch. */
static inline void fix_trailer(uint8_t *buf, size_t len)
{
    uint16_t ncols;
    memcpy(&ncols, buf + 6, 2);
    size_t dir_end = 32 + 40 * (size_t)ncols;
    if (dir_end <= len) {
        uint32_t d = format_directory_checksum(buf, dir_end);
        memcpy(buf + 12, &d, 4);
    }
    uint64_t h = XXH64(buf, len - 8, 0);
    memcpy(buf + len - 8, &h, 8);
}

/* Recomputes the trailer only: header and directory edits stay visible to
 * the directory checksum. */
static inline void fix_trailer_only(uint8_t *buf, size_t len)
{
    uint64_t h = XXH64(buf, len - 8, 0);
    memcpy(buf + len - 8, &h, 8);
}

/* Recomputes the checksum of directory entry i over its (edited) bytes. */
static inline void fix_column_checksum(uint8_t *buf, int i)
{
    uint8_t *e = buf + 32 + 40 * i;
    uint32_t off, length;
    memcpy(&off, e + 12, 4);
    memcpy(&length, e + 16, 4);
    uint64_t h = XXH64(buf + off, length, 0);
    memcpy(e + 32, &h, 8);
}

#endif
