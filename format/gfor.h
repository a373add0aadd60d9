/* gfor.h -- the GFOR column codec: a frame of reference per group of
 * FORMAT_GFOR_GROUP values, read by position in place.
 *
 * For the columns a pick bisects in place (SPEC.md §4.2: rollups' value
 * codes and running rows): BITPACK spends the width of the whole column's
 * spread on every value, where the values of 32 neighbours (one rollup
 * row's codes or running rows) span a few bits. Per group, a width of its
 * own and its smallest value in a table that addresses it directly: value
 * i is one table entry and one field away, as BITPACK's is one field. On
 * the full-scale taxi store the rollups' codes take 22.5 MB in GFOR against
 * 38.2 MB in BITPACK, their running rows 22.3 against 41.0 MB. Layout and
 * rules: gfor.c; the reader is format_seek_get (format.h). Private to
 * format/. */
#ifndef STRAUM_FORMAT_GFOR_H
#define STRAUM_FORMAT_GFOR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define GFOR_HEADER 8u
#define GFOR_FIXED_BITS 8u  /* an entry's width (7 bits, 0 to 64) and flag */
#define GFOR_POS_BITS_MAX 35u /* a stream position: a column is under 2^32 bytes */

/* What a GFOR encoding of n i64 values would be. Any n values fit. */
struct gfor_plan {
    int64_t base;   /* the smallest value */
    unsigned abits; /* the width of the largest group minimum - base */
    unsigned pbits; /* the width of the stream's length in bits */
    uint64_t size;  /* encoded bytes */
};

void gfor_plan(const uint8_t *v, uint32_t n, struct gfor_plan *p);

/* Writes exactly p->size bytes. */
void gfor_write(const uint8_t *v, uint32_t n, const struct gfor_plan *p, uint8_t *out);

/* The largest length n values can take: what column_bound reserves. */
uint64_t gfor_max_length(uint32_t n);

/* The group table of a GFOR column, its header checked (reserved bytes 0,
 * pbits at most GFOR_POS_BITS_MAX, the table inside the data); the
 * entries are not read. */
struct gfor_table {
    const uint8_t *entries, *stream;
    uint64_t stream_len; /* bytes */
    unsigned abits, pbits, ebits;
};

int gfor_open(unsigned abits, uint32_t n, const uint8_t *src, uint32_t length,
              struct gfor_table *t, char *why, size_t whylen);

/* Checks the whole data: the header, every group's width (at most 64),
 * position (the sum of the groups' before it) and flag (set exactly when
 * its first value is its smallest), and that the groups fill the stream
 * exactly. */
int gfor_check_data(unsigned abits, uint32_t n, const uint8_t *src, uint32_t length, char *why,
                    size_t whylen);

/* Decodes values [first, first + count) into out (i64, any alignment),
 * checking the width and bounds of each group it reads. Never reads outside
 * src[0..length). */
int gfor_decode(unsigned abits, int64_t base, uint32_t n, uint32_t first, uint32_t count,
                const uint8_t *src, uint32_t length, uint8_t *out, char *why, size_t whylen);

#endif
