/* format.h -- the front door of the format layer: segment blocks as bytes.
 *
 * A block is what the store keeps under one segment key: every cell of one
 * view and width whose bucket falls in one time span, stored column by column.
 * This layer knows columns, codecs and checksums, not cells: a column is a
 * typed array with two caller-defined tags (role and index) that the store
 * uses to say "key 2" or "count 0". Pure functions over buffers: no I/O, no
 * LMDB, no global state.
 *
 * Byte layout (all integers little-endian; SPEC.md "Segment blocks" is the
 * reference):
 *
 *   header     32 bytes   magic "STRB", version, ncolumns, ncells,
 *                         directory checksum, span_start, width
 *   directory  40 bytes per column: role, index, type, codec, bits,
 *                         n, offset, length, base, checksum
 *   data       each column's bytes at its offset, 8-byte aligned
 *   trailer    8 bytes    XXH64 (seed 0) of every byte before it
 *
 * Decoders never trust their input: every offset, length, count and bit
 * width is checked before use, so a truncated, corrupted or hostile block
 * yields an error, never a crash or an out-of-bounds read. Readers open
 * blocks without the trailer check (it would hash every column of a block
 * of megabytes to read a few): the directory checksum, checked at every
 * open, and each column's checksum, checked when it is decoded, cover what
 * a reader uses, so a corrupted block fails rather than answers wrong.
 */
#ifndef STRAUM_FORMAT_H
#define STRAUM_FORMAT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define FORMAT_MAGIC 0x42525453u /* "STRB" read as a little-endian u32 */
/* Version 2 added the directory checksum (header bytes 12-15, reserved
 * and 0 in version 1): in version 1 a corrupted base, role or count in the
 * directory passed every check a reader makes and changed answers. */
#define FORMAT_VERSION 5 /* 5: RICE and DRICE widths per block, in the anchors; 4: codecs RICE and DRICE (one width a column), PFOR for i128 columns; 3: codecs PFOR and DPFOR */
#define FORMAT_HEADER_BYTES 32
#define FORMAT_DIR_ENTRY_BYTES 40
#define FORMAT_TRAILER_BYTES 8
#define FORMAT_MAX_COLUMNS 4096
#define FORMAT_MAX_VALUES (1u << 28) /* per column; bounds decoder allocations */

/* Element types of a column. */
enum format_type {
    FORMAT_I64 = 1,  /* int64_t */
    FORMAT_I128 = 2, /* __int128 (exact scaled sums) */
    FORMAT_F64 = 3,  /* double (float sums) */
};

/* How a column's values are stored. */
enum format_codec {
    FORMAT_RAW = 0,     /* fixed width, readable in place (zero-copy) */
    FORMAT_BITPACK = 1, /* frame of reference: value - base in `bits` bits */
    FORMAT_DELTA = 2,   /* I64 only: deltas from the previous value, frame
                           of reference (the smallest delta) + bit-packed;
                           exact definition in format/column.c */
    FORMAT_LZ4 = 3,     /* LZ4 block compression of the raw bytes */
    FORMAT_PFOR = 4,    /* I64 only: patched frame of reference: value - base
                           in `bits` bits, the few that do not fit patched
                           from an exception list (position, high bits) */
    FORMAT_DPFOR = 5,   /* I64 only: deltas minus the smallest in `bits`
                           bits; exceptions (every 128th value, deltas that
                           do not fit) hold the value itself, so a slice
                           decodes from at most 127 values before it */
    FORMAT_RICE = 6,    /* I64 only: value - base as Golomb-Rice codes (a unary
                           quotient, `bits` remainder bits), rare large
                           values escaped; small, slower to decode: only
                           for columns marked compact (format/rice.c) */
    FORMAT_DRICE = 7,   /* I64 only: deltas as Golomb-Rice codes; descents,
                           large jumps and every 128th value escaped */
};
#define FORMAT_CODEC_LAST FORMAT_DRICE

/* Which codecs the encoder may pick for a column. */
enum format_policy {
    FORMAT_POLICY_SMALLEST = 0, /* the smallest encoding wins; ties go to RAW */
    FORMAT_POLICY_RAW = 1,      /* always RAW: the fastest to read */
};

struct format_error {
    char message[200];
};

/* A column to encode, or a decoded column. */
struct format_column {
    uint16_t role;        /* caller-defined tag */
    uint16_t index;       /* caller-defined tag */
    enum format_type type;
    uint32_t n;           /* number of elements */
    const void *values;   /* n elements of `type` */
    bool compact;         /* read rarely: the SMALLEST policy may pick the
                             RICE codecs, smaller but slower to decode */
    bool seekable;        /* read by position (format_block_seek): the
                             SMALLEST policy picks RAW or BITPACK only */
};

struct format_block_info {
    int64_t span_start;   /* usec since the Unix epoch */
    int64_t width;        /* usec */
    uint32_t ncells;
};

/* ---- Encoding ----------------------------------------------------------- */

/* An upper bound on the encoded size of a block with these columns. */
size_t format_block_bound(const struct format_column *cols, int ncols);

/* Encodes a block into out (cap bytes, at least format_block_bound()).
 * Columns keep their order. Returns 0 and sets *len, or -1 with err. */
int format_block_encode(const struct format_block_info *info,
                        const struct format_column *cols, int ncols,
                        enum format_policy policy, void *out, size_t cap, size_t *len,
                        struct format_error *err);

/* ---- Decoding ----------------------------------------------------------- */

/* What the directory says about one column. */
struct format_column_info {
    uint16_t role, index;
    enum format_type type;
    enum format_codec codec;
    uint8_t bits;
    uint32_t n;
    uint32_t offset, length; /* encoded bytes within the block */
    uint64_t checksum;       /* XXH64 of the encoded bytes */
};

/* A block opened in place: points into the caller's buffer, owns nothing. */
struct format_block {
    struct format_block_info info;
    int ncolumns;
    const uint8_t *base;
    size_t len;
};

/* Checks magic, version, sizes, every directory entry's bounds and, when
 * verify is true, the block trailer checksum. Does not read column data. */
int format_block_open(struct format_block *b, const void *buf, size_t len, bool verify,
                      struct format_error *err);

/* Reads directory entry i (0 <= i < ncolumns). */
void format_block_column(const struct format_block *b, int i, struct format_column_info *out);

/* The first earlier column whose encoded bytes column i reuses (the
 * encoder writes equal encodings once), or -1. */
int format_block_shares(const struct format_block *b, int i);

/* The column with this role and index, or -1. */
int format_block_find(const struct format_block *b, uint16_t role, uint16_t index);

/* Decodes column i into out (room for n elements of its type), after
 * checking its checksum. Returns 0, or -1 with err naming the column. */
int format_block_decode(const struct format_block *b, int i, void *out,
                        struct format_error *err);

/* Decodes elements [first, first + count) of column i into out, after
 * checking the whole column's checksum; RAW and BITPACK columns read only
 * those elements. Returns 0, or -1 with err (also when the range passes
 * the column's end). */
int format_block_decode_range(const struct format_block *b, int i, uint32_t first,
                              uint32_t count, void *out, struct format_error *err);

/* format_block_decode_range, checking the checksum only when verify is
 * set: for a reader that already checked this column's bytes and knows
 * they have not changed since (serve, within one store snapshot). Every
 * other check still runs. */
int format_block_decode_slice(const struct format_block *b, int i, uint32_t first,
                              uint32_t count, bool verify, void *out, struct format_error *err);

/* For a RAW column, a pointer to its n elements inside the block, after
 * checking its checksum when verify is true; NULL (with err) otherwise. The
 * pointer may be unaligned: read elements with memcpy (format_load_*). */
const void *format_block_raw(const struct format_block *b, int i, bool verify,
                             struct format_error *err);

/* An I64 column read by position in place: RAW or BITPACK. */
struct format_seek {
    const uint8_t *data;  /* the column's bytes inside the block */
    uint64_t base;        /* BITPACK's frame of reference; 0 for RAW */
    uint64_t mask;        /* the low `bits` bits */
    uint32_t n;
    uint8_t bits;         /* 64 for RAW */
};

/* Column i as a format_seek, after checking its checksum when verify is
 * true. -1 with err when it is not an I64 column in RAW or BITPACK. */
int format_block_seek(const struct format_block *b, int i, bool verify, struct format_seek *out,
                      struct format_error *err);

/* Element i (< s->n) of a seekable column. One unaligned 8-byte load, two
 * when the value straddles it: a block ends with its 8-byte trailer, so a
 * load that starts inside a column's bytes stays inside the block. */
static inline int64_t format_seek_get(const struct format_seek *s, uint32_t i)
{
    uint64_t bit = (uint64_t)i * s->bits, w;
    const uint8_t *p = s->data + bit / 8;
    unsigned shift = (unsigned)(bit % 8);
    __builtin_memcpy(&w, p, 8);
    w >>= shift;
    if (shift + s->bits > 64)
        w |= (uint64_t)p[8] << (64 - shift);
    return (int64_t)(s->base + (w & s->mask));
}

/* Checks the trailer and every column: checksum, and that it decodes. */
int format_block_verify(const struct format_block *b, struct format_error *err);

/* Unaligned loads for RAW columns read in place. */
static inline int64_t format_load_i64(const void *p, size_t i)
{
    int64_t v;
    __builtin_memcpy(&v, (const char *)p + i * 8, 8);
    return v;
}

static inline __int128 format_load_i128(const void *p, size_t i)
{
    __int128 v;
    __builtin_memcpy(&v, (const char *)p + i * 16, 16);
    return v;
}

static inline double format_load_f64(const void *p, size_t i)
{
    double v;
    __builtin_memcpy(&v, (const char *)p + i * 8, 8);
    return v;
}

/* Size in bytes of one element of a type (0 for an unknown type). */
size_t format_type_size(enum format_type type);
const char *format_codec_name(enum format_codec codec);
/* Whether a slice of a column in this codec costs about its own length: no
 * pass over the values before it (RAW and BITPACK read in place, RICE and
 * DRICE start at most 127 values back; DELTA, PFOR, DPFOR and LZ4 walk or
 * decode what lies before the slice). */
bool format_codec_seeks(enum format_codec codec);
/* A slice of a column in a codec that seeks and starting at a multiple of
 * this needs no walk at all: a reader that decodes a column a stretch at a
 * time ends its stretches there (RICE's and DRICE's anchors). */
#define FORMAT_SEEK_STRIDE 128u

/* ---- Dense dim chunks (dense.c) -----------------------------------------
 *
 * A dense dim column maps a join key's code to a small integer, the *dim
 * value id* of one dim column at that key, by array position: the store
 * keeps it in chunks of FORMAT_DENSE_CHUNK consecutive offsets, each one
 * LMDB value read in place. A chunk (SPEC.md §4.3, all integers
 * little-endian):
 *
 *   0   1   entry width in bytes: 1, 2 or 4 (the fewest that hold its
 *           largest entry)
 *   1   3   0
 *   4   4   n: entries held, 1 to FORMAT_DENSE_CHUNK; the last is not 0
 *           (offsets past n hold 0)
 *   8   8   XXH64 (seed 0) of the n entries' bytes
 *   16  n x width  the entries
 *
 * An entry is FORMAT_DENSE_ABSENT (no dim row at that key), FORMAT_DENSE_NULL
 * (a row whose column is NULL) or FORMAT_DENSE_FIRST_ID + the id of the
 * column's text in its dictionary. FORMAT_DENSE_CHUNK is what makes a chunk
 * of one-byte entries fill one 4 KiB LMDB overflow page with its 16-byte
 * page header exactly (two pages at two bytes, four at four). */
#define FORMAT_DENSE_CHUNK 4064u
#define FORMAT_DENSE_HEADER_BYTES 16u
#define FORMAT_DENSE_MAX_BYTES (FORMAT_DENSE_HEADER_BYTES + 4u * FORMAT_DENSE_CHUNK)
enum { FORMAT_DENSE_ABSENT = 0, FORMAT_DENSE_NULL = 1, FORMAT_DENSE_FIRST_ID = 2 };

/* A chunk opened in place: points into the caller's bytes. */
struct format_dense {
    const uint8_t *entries;
    uint32_t n;
    uint8_t width;
    uint64_t checksum;     /* as stored: format_dense_check compares */
};

/* Encodes FORMAT_DENSE_CHUNK entries into out (FORMAT_DENSE_MAX_BYTES):
 * the bytes written, 0 when every entry is FORMAT_DENSE_ABSENT (no chunk is
 * stored then). Cannot fail. */
size_t format_dense_encode(const uint32_t *entries, uint8_t *out);

/* Opens a chunk: its width, count, reserved bytes and exact length checked,
 * the entries not read. 0, or -1 with err. */
int format_dense_open(const void *bytes, size_t len, struct format_dense *out,
                      struct format_error *err);

/* Whether the entries hash to the stored checksum. */
bool format_dense_check(const struct format_dense *d);

/* The entry at an offset below FORMAT_DENSE_CHUNK of an opened chunk
 * (FORMAT_DENSE_ABSENT past its n). Inline: the scan calls it per cell. */
static inline uint32_t format_dense_get(const struct format_dense *d, uint32_t i)
{
    if (i >= d->n)
        return FORMAT_DENSE_ABSENT;
    const uint8_t *p = d->entries + (size_t)i * d->width;
    if (d->width == 1)
        return p[0];
    if (d->width == 2)
        return (uint32_t)p[0] | (uint32_t)p[1] << 8;
    uint32_t v;
    __builtin_memcpy(&v, p, 4);
    return v;
}

/* Decodes every entry of an opened chunk into out (FORMAT_DENSE_CHUNK,
 * zeros past n). Cannot fail. */
void format_dense_decode(const struct format_dense *d, uint32_t *out);

#endif
