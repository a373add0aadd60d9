/* column.h -- one column's codecs: choosing, encoding, checking, decoding.
 *
 * block.c owns the block layout and names columns in error messages; this
 * file knows how a typed array becomes encoded bytes plus the three directory
 * fields that describe them (codec, bits, base). The reasons written into
 * `why` never name the column: block.c prefixes "column i (role r, index x)".
 * Private to format/, except the test hook at the end. */
#ifndef STRAUM_FORMAT_COLUMN_H
#define STRAUM_FORMAT_COLUMN_H

#include "format/format.h"

#include <stddef.h>
#include <stdint.h>

/* The directory fields describing an encoded column. */
struct column_encoding {
    enum format_codec codec;
    uint8_t bits;
    int64_t base;
    uint32_t length;
};

/* Pass as `codec` to column_encode to let the policy choose. */
#define COLUMN_CODEC_AUTO (-1)

/* Room needed to encode n values of a type with any codec, forced or not. */
uint64_t column_bound(enum format_type type, uint32_t n);

/* Encodes col (type known, n <= FORMAT_MAX_VALUES, values set when n > 0)
 * into out[0..cap). codec is COLUMN_CODEC_AUTO or a format_codec to force
 * (refused if not valid for the type and values). Returns 0 with *enc set, or
 * -1 with why. */
int column_encode(const struct format_column *col, enum format_policy policy, int codec,
                  uint8_t *out, size_t cap, struct column_encoding *enc, char *why,
                  size_t whylen);

/* Checks that a directory entry describes a column this build can decode:
 * known type and codec valid together, n within FORMAT_MAX_VALUES, bits and
 * base consistent with the codec, and length exactly what n values take
 * (for LZ4: a length that can hold n values at LZ4's largest ratio).
 * Returns 0, or -1 with why. */
int column_check(unsigned type, unsigned codec, unsigned bits, int64_t base, uint32_t n,
                 uint32_t length, char *why, size_t whylen);

/* Checks what column_check cannot without the column's bytes: for PFOR and
 * DPFOR the data's header, exact length and every exception position (0
 * for other codecs; LZ4 is checked by decoding). Allocates nothing.
 * Returns 0, or -1 with why. */
int column_check_data(enum format_codec codec, unsigned bits, uint32_t n, const uint8_t *src,
                      uint32_t length, char *why, size_t whylen);

/* Decodes a column that passed column_check into out (n elements of its
 * type, any alignment). LZ4, PFOR and DPFOR can fail here (PFOR and DPFOR
 * as column_check_data). Returns 0, or -1 with why. */
int column_decode(enum format_type type, enum format_codec codec, unsigned bits, int64_t base,
                  uint32_t n, const uint8_t *src, uint32_t length, void *out, char *why,
                  size_t whylen);

/* Decodes values [first, first + count) of such a column into out: RAW and
 * BITPACK read only those, PFOR those and its exception list (checked
 * whole), DPFOR those from at most 127 values before first (exceptions
 * checked whole), DELTA and LZ4 decode the whole column to a scratch
 * buffer. Returns 0, or -1 with why. */
int column_decode_range(enum format_type type, enum format_codec codec, unsigned bits,
                        int64_t base, uint32_t n, uint32_t first, uint32_t count,
                        const uint8_t *src, uint32_t length, void *out, char *why, size_t whylen);

/* The name of a type in messages: "i64", "i128", "f64", or "unknown". */
const char *column_type_name(unsigned type);

/* ---- Test hook ------------------------------------------------------------
 * format_block_encode() with each column's codec forced: codecs[i] is a
 * format_codec or COLUMN_CODEC_AUTO (codecs NULL: all AUTO, which is exactly
 * format_block_encode). Defined in block.c; used by tests and the fuzzer. */
int format_block_encode_codecs(const struct format_block_info *info,
                               const struct format_column *cols, int ncols,
                               enum format_policy policy, const int *codecs, void *out,
                               size_t cap, size_t *len, struct format_error *err);

#endif
