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
#define FORMAT_VERSION 6 /* 6: codec GFOR; 5: RICE and DRICE widths per block, in the anchors; 4: codecs RICE and DRICE (one width a column), PFOR for i128 columns; 3: codecs PFOR and DPFOR */
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
    FORMAT_GFOR = 8,    /* I64 only: a frame of reference per group of
                           FORMAT_GFOR_GROUP values, each group's smallest
                           value, width and place in a table: read by
                           position in place like BITPACK, in fewer bytes
                           where neighbours lie close (format/gfor.c) */
};
#define FORMAT_CODEC_LAST FORMAT_GFOR
/* GFOR's group: value i belongs to group i / FORMAT_GFOR_GROUP (why 32:
 * format/gfor.c). */
#define FORMAT_GFOR_GROUP 32u

/* Which codecs the encoder may pick for a column. */
enum format_policy {
    FORMAT_POLICY_SMALLEST = 0, /* the smallest encoding wins; ties go to RAW */
    FORMAT_POLICY_RAW = 1,      /* always RAW: the fastest to read */
    FORMAT_POLICY_QUICK = 2,    /* the smallest of RAW, BITPACK, DELTA (GFOR for
                                   seekable i64 columns): one pass each, for
                                   blocks soon rewritten (format/column.c) */
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
                             SMALLEST policy picks RAW, BITPACK or GFOR
                             only */
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
 * checking the whole column's checksum; RAW, BITPACK and GFOR columns read
 * only those elements. Returns 0, or -1 with err (also when the range passes
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

/* An I64 column read by position in place: RAW, BITPACK or GFOR. */
struct format_seek {
    const uint8_t *data;  /* RAW, BITPACK: the column's bytes inside the
                             block; GFOR: its stream */
    uint64_t base;        /* the frame of reference; 0 for RAW */
    uint64_t mask;        /* RAW, BITPACK: the low `bits` bits; GFOR: the
                             low abits bits (when ebits <= 57) */
    uint32_t n;
    uint8_t bits;         /* 64 for RAW, BITPACK's width, 0 for GFOR */
    /* GFOR only (groups NULL otherwise): the group table, its fields'
     * widths, and the last stream byte a load may start at. */
    const uint8_t *groups;
    uint32_t ebits;
    uint8_t abits, pbits, wmax;
    uint64_t pmask, last;
};

/* n int64 values in memory read as a seekable column (RAW). */
static inline struct format_seek format_seek_array(const int64_t *values, uint32_t n)
{
    return (struct format_seek){
        .data = (const uint8_t *)values, .mask = UINT64_MAX, .n = n, .bits = 64};
}

/* Column i as a format_seek, after checking its checksum when verify is
 * true. -1 with err when it is not an I64 column in RAW, BITPACK or GFOR. */
int format_block_seek(const struct format_block *b, int i, bool verify, struct format_seek *out,
                      struct format_error *err);

/* The w (<= 64) bits at bit `bit` of p: one unaligned 8-byte load, a
 * ninth byte when the field straddles it. The caller keeps p + bit / 8 + 8
 * inside the block (a block ends with its 8-byte trailer). */
static inline uint64_t format_bits_at(const uint8_t *p, uint64_t bit, unsigned w)
{
    uint64_t x;
    p += bit / 8;
    unsigned shift = (unsigned)(bit % 8);
    __builtin_memcpy(&x, p, 8);
    x >>= shift;
    if (shift + w > 64)
        x |= (uint64_t)p[8] << (64 - shift);
    return w >= 64 ? x : x & (((uint64_t)1 << w) - 1);
}

/* GFOR group g's entry: its smallest value less the base, its width,
 * whether its first value is that smallest and where its values start in
 * the stream. One 8-byte load when the entry is at most 57 bits (a minimum
 * and a position of 49 bits together), two otherwise.
 * A width or position no valid column has is clamped to the stream, so
 * every load stays in the block whatever the bytes say. */
struct format_gfor_group {
    uint64_t min, pos;
    unsigned w;
    bool min_first; /* the group's first value is its smallest */
};

static inline __attribute__((always_inline)) struct format_gfor_group
format_gfor_group(const struct format_seek *s, uint32_t g)
{
    uint64_t ebit = (uint64_t)g * s->ebits, wp;
    struct format_gfor_group e;
    if (s->ebits <= 57) {
        uint64_t x;
        __builtin_memcpy(&x, s->groups + ebit / 8, 8);
        x >>= ebit % 8;
        e.min = x & s->mask;
        wp = x >> s->abits;
    } else {
        e.min = format_bits_at(s->groups, ebit, s->abits);
        wp = format_bits_at(s->groups, ebit + s->abits, 8u + s->pbits);
    }
    e.w = (unsigned)(wp & 127);
    e.w = e.w > s->wmax ? s->wmax : e.w;
    e.min_first = (wp >> 7) & 1;
    e.pos = (wp >> 8) & s->pmask;
    return e;
}

/* A GFOR group ready to read: where its values start, their width, mask
 * and the value to add; direct when each of its values is one 8-byte load
 * inside the stream (no clamp to the stream, no ninth byte). */
struct format_gfor_view {
    uint64_t pos, add, mask;
    unsigned w;
    bool direct;
};

static inline __attribute__((always_inline)) struct format_gfor_view
format_gfor_view(const struct format_seek *s, const struct format_gfor_group *e)
{
    struct format_gfor_view v = {.pos = e->pos, .add = s->base + e->min, .w = e->w};
    v.mask = e->w >= 64 ? UINT64_MAX : ((uint64_t)1 << e->w) - 1;
    v.direct = e->w <= 56 && e->pos + (FORMAT_GFOR_GROUP - 1) * e->w < (s->last + 1) * 8;
    return v;
}

/* Value j (< 32) of a GFOR group's view. */
static inline __attribute__((always_inline)) int64_t
format_gfor_view_value(const struct format_seek *s, const struct format_gfor_view *v, uint32_t j)
{
    uint64_t bit = v->pos + (uint64_t)j * v->w;
    if (v->direct) {
        uint64_t word;
        __builtin_memcpy(&word, s->data + bit / 8, 8);
        return (int64_t)(v->add + ((word >> (bit % 8)) & v->mask));
    }
    if (bit / 8 > s->last)
        bit = s->last * 8;
    return (int64_t)(v->add + format_bits_at(s->data, bit, v->w));
}

/* Value j (< 32) of the GFOR group whose entry is e. */
static inline __attribute__((always_inline)) int64_t
format_gfor_value(const struct format_seek *s, const struct format_gfor_group *e, uint32_t j)
{
    struct format_gfor_view v = format_gfor_view(s, e);
    return format_gfor_view_value(s, &v, j);
}

/* Element i (< s->n) of a seekable column. RAW and BITPACK: one unaligned
 * 8-byte load, two when the value straddles it. GFOR: its group's entry,
 * then its value. */
static inline __attribute__((always_inline)) int64_t format_seek_get(const struct format_seek *s,
                                                                     uint32_t i)
{
    if (s->groups) {
        struct format_gfor_group e = format_gfor_group(s, i / FORMAT_GFOR_GROUP);
        return format_gfor_value(s, &e, i % FORMAT_GFOR_GROUP);
    }
    uint64_t bit = (uint64_t)i * s->bits, w;
    const uint8_t *p = s->data + bit / 8;
    unsigned shift = (unsigned)(bit % 8);
    __builtin_memcpy(&w, p, 8);
    w >>= shift;
    if (shift + s->bits > 64)
        w |= (uint64_t)p[8] << (64 - shift);
    return (int64_t)(s->base + (w & s->mask));
}

/* The first value of GFOR group g: from its entry alone when that value
 * is the group's smallest (a group inside one rollup row's ascending
 * runs), else from the stream. */
static inline __attribute__((always_inline)) int64_t
format_gfor_first(const struct format_seek *s, uint32_t g)
{
    struct format_gfor_group e = format_gfor_group(s, g);
    return e.min_first ? (int64_t)(s->base + e.min) : format_gfor_value(s, &e, 0);
}

/* The first element in [lo, hi) above v, or hi: the elements of [lo, hi)
 * ascend. A binary search. In a GFOR column it first finds the group by
 * the first values of the groups that start inside [lo, hi), most read
 * from the group table alone (dense: a few cache lines for thousands of
 * values), then searches that group with its entry read once. */
static inline uint32_t format_seek_upper(const struct format_seek *s, uint32_t lo, uint32_t hi,
                                         int64_t v)
{
    if (lo >= hi)
        return lo;
    if (s->groups) {
        /* Groups glo + 1 .. ghi start inside the range: find the last of
         * them whose first value is <= v (glo when none is). */
        uint32_t glo = lo / FORMAT_GFOR_GROUP, a = glo + 1, b = (hi - 1) / FORMAT_GFOR_GROUP + 1;
        while (a < b) {
            uint32_t m = a + (b - a) / 2;
            if (format_gfor_first(s, m) <= v)
                a = m + 1;
            else
                b = m;
        }
        const uint32_t g = a - 1, at = g * FORMAT_GFOR_GROUP;
        const struct format_gfor_group e = format_gfor_group(s, g);
        const struct format_gfor_view gv = format_gfor_view(s, &e);
        uint32_t x = lo > at ? lo - at : 0;
        uint32_t y = hi - at < FORMAT_GFOR_GROUP ? hi - at : FORMAT_GFOR_GROUP;
        while (x < y) {
            uint32_t m = x + (y - x) / 2;
            if (format_gfor_view_value(s, &gv, m) <= v)
                x = m + 1;
            else
                y = m;
        }
        return at + x;
    }
    while (lo < hi) {
        uint32_t m = lo + (hi - lo) / 2;
        if (format_seek_get(s, m) <= v)
            lo = m + 1;
        else
            hi = m;
    }
    return lo;
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
 * pass over the values before it (RAW, BITPACK and GFOR read in place, RICE and
 * DRICE start at most 127 values back; DELTA, PFOR, DPFOR and LZ4 walk or
 * decode what lies before the slice). */
bool format_codec_seeks(enum format_codec codec);
/* Whether an I64 column in this codec is read by position in place
 * (format_block_seek): RAW, BITPACK and GFOR. */
bool format_codec_in_place(enum format_codec codec);
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
