/* bitpack.c -- the bulk reader for bit-packed runs (layout in bitpack.h).
 *
 * Reads the stream 8 bytes at a time into a 64-bit accumulator; a value that
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

void bitpack_unpack_at(const uint8_t *in, size_t len, size_t first, size_t n, unsigned bits,
                       uint8_t *out)
{
    if (bits == 0) {
        memset(out, 0, n * 8);
        return;
    }
    const uint64_t mask = bits >= 64 ? UINT64_MAX : ((uint64_t)1 << bits) - 1;
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
