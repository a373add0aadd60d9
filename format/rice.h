/* rice.h -- the RICE and DRICE column codecs (Golomb-Rice codes).
 *
 * For columns that are most of a store's bytes and whose codes are read
 * whole rarely: the value-count runs of cells and of rollups (serve picks
 * single codes of a rollup row from the anchor before them). A
 * Rice code spends about log2 of a value's magnitude plus one or two bits
 * on it, where PFOR spends one width on every value: value codes ascending
 * within a cell take about 9.6 bits a run instead of DPFOR's 13, row counts
 * (mostly 1) 1.3 instead of 2.4. Decoding walks the codes one by one (2.3 to
 * 3.9 ns a value), several times slower than unpacking fixed widths, which
 * is why the encoder tries them only for columns marked compact. Layout and
 * rules: rice.c.
 * Private to format/. */
#ifndef STRAUM_FORMAT_RICE_H
#define STRAUM_FORMAT_RICE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define RICE_KMAX 23u /* the largest remainder width (the directory's bits) */

/* What a RICE (delta false) or DRICE (delta true) encoding of n i64 values
 * would be: ok is false when the codec cannot hold them (a stream of 2^27
 * bits or more, 16 MiB: anchors hold 27-bit offsets). */
struct rice_plan {
    bool ok;
    unsigned k;     /* the largest block's remainder width */
    unsigned xbits; /* an escape's width: that of max - min */
    int64_t base;   /* the smallest value */
    uint64_t size;  /* encoded bytes */
    uint8_t *ks;    /* each block's remainder width, as rice_plan found it; or NULL */
};

/* min is the values' smallest and xbits the width of max - min: what the
 * caller's frame-of-reference plan (BITPACK's) already found. ks, when not
 * NULL, has room for a byte per block of 128 values (rice_blocks): the
 * plan keeps each block's k there for rice_write, which otherwise sizes
 * every block again. */
void rice_plan(const uint8_t *v, uint32_t n, bool delta, int64_t min, unsigned xbits,
               uint8_t *ks, struct rice_plan *p);

/* How many blocks n values make: the bytes rice_plan's ks needs. */
uint32_t rice_blocks(uint32_t n);

/* Writes exactly p->size bytes. */
void rice_write(const uint8_t *v, uint32_t n, bool delta, const struct rice_plan *p,
                uint8_t *out);

/* The smallest length n values can take: what a directory entry is checked
 * against without the data. */
uint64_t rice_min_length(uint32_t n);

/* Checks the whole data without decoding it anywhere: header, anchors, that
 * every code is well formed, that each anchor points at its value's code
 * (an escape, for DRICE) and that the codes fill the stream exactly. */
int rice_check_data(bool delta, unsigned k, uint32_t n, const uint8_t *src, uint32_t length,
                    char *why, size_t whylen);

/* Decodes values [first, first + count) into out (i64, any alignment),
 * from the anchor at or before first (at most 127 values back). Never reads
 * outside src[0..length); malformed codes fail with why. */
int rice_decode(bool delta, unsigned k, int64_t base, uint32_t n, uint32_t first,
                uint32_t count, const uint8_t *src, uint32_t length, uint8_t *out, char *why,
                size_t whylen);

#endif
