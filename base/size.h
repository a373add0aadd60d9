/* size.h -- the programs' size options (--max-store-size, --max-body):
 * "512MiB", "20G", "64k", "1048576".
 *
 * Digits, then optionally K, M, G or T (either case; powers of 1024), which
 * may be followed by "iB" or "B" ("KiB" and "KB" read the same): storage
 * and memory limits are powers of two whatever the suffix. No sign, no
 * fraction, no spaces. */
#ifndef STRAUM_BASE_SIZE_H
#define STRAUM_BASE_SIZE_H

#include <stdint.h>

/* Parses text as above: 0 and *bytes set, or -1 (bad form, or more than
 * UINT64_MAX bytes) and *bytes untouched. The caller checks its own range. */
int size_parse(const char *text, uint64_t *bytes);

#endif
