/* checksum.h -- the one checksum of the format: XXH64 with seed 0. Used for
 * each column's encoded bytes and for the block trailer, and (its low 32
 * bits, chained) for the header and directory. Private to format/ (and its
 * tests and fuzz target, which rewrite blocks). */
#ifndef STRAUM_FORMAT_CHECKSUM_H
#define STRAUM_FORMAT_CHECKSUM_H

#include <stddef.h>
#include <stdint.h>

uint64_t format_checksum(const void *p, size_t len);

/* The directory checksum of a block whose directory ends at dir_end (32 +
 * 40 * ncolumns): the low 32 bits of XXH64 over bytes [16, dir_end) seeded
 * with XXH64 (seed 0) of bytes [0, 12). It covers the header and directory
 * but its own bytes [12, 16). */
uint32_t format_directory_checksum(const void *block, size_t dir_end);

#endif
