/* bitpack.c -- the bulk reader for bit-packed runs (layout in bitpack.h).
 *
 * Widths up to 56 read each value from the 8 bytes at its first byte while
 * those lie inside the input (fast_count). Otherwise (and for the last
 * values) it
 * reads the stream 8 bytes at a time into a 64-bit accumulator; a value that
 * straddles two words is stitched from the accumulator's remaining bits and
 * the next word. Every shift count stays below 64 (width 64 and an empty
 * accumulator are handled apart), and the last partial word is read byte by
 * byte, so the reader never touches memory past in + len. */
#include "format/bitpack.h"

#include <string.h>

void bitpack_unpack(const uint8_t *in, size_t len, size_t n, unsigned bits, uint8_t *out)
{
    bitpack_unpack_at(in, len, 0, n, bits, out);
}

/* How many values from `first` on lie whole within 8 bytes that can be
 * loaded in bounds from their first byte (widths up to 56 only). */
static size_t fast_count(size_t len, size_t first, size_t n, unsigned bits)
{
    if (bits == 0 || bits > 56 || len < 8)
        return 0;
    /* Value i qualifies while (i * bits) / 8 <= len - 8. */
    uint64_t last = ((uint64_t)(len - 8) * 8) / bits + 1; /* values 0..last-1 */
    if (last <= first)
        return 0;
    return last - first < n ? (size_t)(last - first) : n;
}

void bitpack_unpack_add(const uint8_t *in, size_t len, size_t first, size_t n, unsigned bits,
                        uint64_t add, uint8_t *out)
{
    const uint64_t mask = bitpack_mask(bits);
    size_t fast = fast_count(len, first, n, bits);
    uint64_t off = (uint64_t)first * bits;
    for (size_t i = 0; i < fast; i++, off += bits)
        store_u64(out + i * 8, ((load_u64(in + off / 8) >> (off % 8)) & mask) + add);
    if (fast == n)
        return;
    bitpack_unpack_at(in, len, first + fast, n - fast, bits, out + fast * 8);
    for (size_t i = fast; i < n; i++)
        store_u64(out + i * 8, load_u64(out + i * 8) + add);
}

uint64_t bitpack_unpack_sum(const uint8_t *in, size_t len, size_t first, size_t n,
                            unsigned bits, uint64_t step, uint64_t prev, uint8_t *out)
{
    const uint64_t mask = bitpack_mask(bits);
    size_t fast = fast_count(len, first, n, bits);
    uint64_t off = (uint64_t)first * bits;
    for (size_t i = 0; i < fast; i++, off += bits) {
        prev += step + ((load_u64(in + off / 8) >> (off % 8)) & mask);
        store_u64(out + i * 8, prev);
    }
    if (fast == n)
        return prev;
    bitpack_unpack_at(in, len, first + fast, n - fast, bits, out + fast * 8);
    for (size_t i = fast; i < n; i++) {
        prev += step + load_u64(out + i * 8);
        store_u64(out + i * 8, prev);
    }
    return prev;
}

uint64_t bitpack_sum(const uint8_t *in, size_t len, size_t first, size_t n, unsigned bits)
{
    if (bits == 0)
        return 0;
    const uint64_t mask = bitpack_mask(bits);
    size_t fast = fast_count(len, first, n, bits);
    uint64_t off = (uint64_t)first * bits, sum = 0;
    for (size_t i = 0; i < fast; i++, off += bits)
        sum += (load_u64(in + off / 8) >> (off % 8)) & mask;
    /* The last values (the final 8 bytes, or widths past 56): a few at a
     * time through the general reader. */
    uint8_t chunk[64 * 8];
    for (size_t at = first + fast, left = n - fast; left;) {
        size_t k = left < 64 ? left : 64;
        bitpack_unpack_at(in, len, at, k, bits, chunk);
        for (size_t i = 0; i < k; i++)
            sum += load_u64(chunk + i * 8);
        at += k;
        left -= k;
    }
    return sum;
}

void bitpack_unpack_at(const uint8_t *in, size_t len, size_t first, size_t n, unsigned bits,
                       uint8_t *out)
{
    if (bits == 0) {
        memset(out, 0, n * 8);
        return;
    }
    const uint64_t mask = bitpack_mask(bits);
    size_t fast = fast_count(len, first, n, bits);
    uint64_t off = (uint64_t)first * bits;
    for (size_t i = 0; i < fast; i++, off += bits)
        store_u64(out + i * 8, (load_u64(in + off / 8) >> (off % 8)) & mask);
    first += fast;
    n -= fast;
    out += fast * 8;
    uint64_t acc = 0;  /* unread bits, low nacc valid */
    unsigned nacc = 0; /* < 64 between values */
    size_t pos = first * bits / 8;
    unsigned skip = (unsigned)(first * bits % 8);
    if (pos >= len) {
        pos = len; /* a short input: garbage values, no out-of-bounds read */
    } else if (skip) {
        acc = (uint64_t)in[pos++] >> skip;
        nacc = 8 - skip;
    }
    for (size_t i = 0; i < n; i++) {
        uint64_t v;
        if (nacc >= bits) {
            v = acc & mask;
            acc = bits >= 64 ? 0 : acc >> bits;
            nacc -= bits;
        } else {
            uint64_t w = 0;
            unsigned got = 0;
            if (len - pos >= 8) {
                w = load_u64(in + pos);
                pos += 8;
                got = 64;
            } else {
                while (pos < len) {
                    w |= (uint64_t)in[pos++] << got;
                    got += 8;
                }
            }
            unsigned need = bits - nacc; /* 1..64 */
            v = (acc | (w << nacc)) & mask;
            acc = need >= 64 ? 0 : w >> need;
            nacc = got >= need ? got - need : 0; /* short input: no bits left */
        }
        store_u64(out + i * 8, v);
    }
}
