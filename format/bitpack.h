/* bitpack.h -- packing unsigned integers at a fixed bit width (0..64).
 *
 * The stream is little-endian at the bit level: value i occupies stream bits
 * [i*bits, (i+1)*bits), and stream bit k is bit (k % 8) of byte k / 8. A run
 * of n values takes exactly bitpack_bytes(n, bits) = ceil(n*bits / 8) bytes;
 * the unused high bits of the last byte are zero. Width 0 stores nothing
 * (every value is 0). The writer is inline because the column encoder calls
 * it once per value; the reader is a bulk function in bitpack.c. Private to
 * format/. */
#ifndef STRAUM_FORMAT_BITPACK_H
#define STRAUM_FORMAT_BITPACK_H

#include "format/bytes.h"

#include <stddef.h>
#include <stdint.h>

/* Bytes taken by n values of `bits` bits (n < 2^32, bits < 256: no overflow). */
static inline uint64_t bitpack_bytes(uint64_t n, unsigned bits) { return (n * bits + 7) / 8; }

/* The low `bits` bits set (bits <= 64; all 64 at 64). */
static inline uint64_t bitpack_mask(unsigned bits)
{
    return bits >= 64 ? UINT64_MAX : ((uint64_t)1 << bits) - 1;
}

/* The smallest width that holds v (0 for v == 0). */
static inline unsigned bitpack_width(uint64_t v)
{
    return v ? 64u - (unsigned)__builtin_clzll(v) : 0u;
}

/* Accumulates values and stores them 8 bytes at a time; writes exactly
 * bitpack_bytes(count, bits) bytes once flushed. */
struct bitpack_writer {
    uint8_t *out;
    uint64_t acc;  /* pending bits, low nacc bits valid, the rest zero */
    unsigned nacc; /* always < 64 */
};

static inline void bitpack_writer_init(struct bitpack_writer *w, uint8_t *out)
{
    w->out = out;
    w->acc = 0;
    w->nacc = 0;
}

/* Appends v, which must be < 2^bits (bits <= 64). */
static inline void bitpack_put(struct bitpack_writer *w, uint64_t v, unsigned bits)
{
    unsigned total = w->nacc + bits;
    w->acc |= v << w->nacc;
    if (total >= 64) {
        store_u64(w->out, w->acc);
        w->out += 8;
        w->acc = w->nacc ? v >> (64 - w->nacc) : 0;
        w->nacc = total - 64;
    } else {
        w->nacc = total;
    }
}

static inline void bitpack_flush(struct bitpack_writer *w)
{
    for (unsigned k = 0; k < w->nacc; k += 8) {
        *w->out++ = (uint8_t)w->acc;
        w->acc >>= 8;
    }
    w->acc = 0;
    w->nacc = 0;
}

/* Unpacks n values of `bits` bits (<= 64) from in[0..len) into out as n
 * consecutive uint64 (native order, out may be unaligned). Never reads past
 * in + len: a short input yields garbage values, not an out-of-bounds read,
 * but callers check len == bitpack_bytes(n, bits) first. */
void bitpack_unpack(const uint8_t *in, size_t len, size_t n, unsigned bits, uint8_t *out);
/* The same, starting at value `first` of the stream. */
void bitpack_unpack_at(const uint8_t *in, size_t len, size_t first, size_t n, unsigned bits,
                       uint8_t *out);
/* The same, each value plus add (mod 2^64): a frame of reference. */
void bitpack_unpack_add(const uint8_t *in, size_t len, size_t first, size_t n, unsigned bits,
                        uint64_t add, uint8_t *out);
/* The same as running sums: out[i] = prev += step + value i (mod 2^64).
 * Returns the last sum (prev when n is 0). */
uint64_t bitpack_unpack_sum(const uint8_t *in, size_t len, size_t first, size_t n,
                            unsigned bits, uint64_t step, uint64_t prev, uint8_t *out);
/* The sum (mod 2^64) of values [first, first + n), read in place: nothing
 * is written. Where a DELTA column's slice starts (its deltas before it). */
uint64_t bitpack_sum(const uint8_t *in, size_t len, size_t first, size_t n, unsigned bits);

#endif
