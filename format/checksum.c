/* checksum.c -- XXH64 (seed 0) over a byte range.
 *
 * Kept behind one function so that every checksum in a block is computed the
 * same way and the hash can only change together with FORMAT_VERSION. */
#include "format/checksum.h"

#include <xxhash.h>

uint64_t format_checksum(const void *p, size_t len)
{
    static const uint8_t empty[1];
    return XXH64(len ? p : empty, len, 0);
}

uint32_t format_directory_checksum(const void *block, size_t dir_end)
{
    const uint8_t *b = block;
    /* Two chained hashes rather than one over a copy with the field
     * zeroed: no copy, no streaming state. */
    return (uint32_t)XXH64(b + 16, dir_end - 16, XXH64(b, 12, 0));
}
