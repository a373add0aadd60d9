/* checksum.h -- the one checksum of the format: XXH64 with seed 0. Used for
 * each column's encoded bytes and for the block trailer. Private to format/. */
#ifndef STRAUM_FORMAT_CHECKSUM_H
#define STRAUM_FORMAT_CHECKSUM_H

#include <stddef.h>
#include <stdint.h>

uint64_t format_checksum(const void *p, size_t len);

#endif
