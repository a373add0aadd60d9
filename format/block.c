/* block.c -- the segment block layout: header, directory, data, trailer.
 *
 *   offset  size  header (32 bytes)
 *        0     4  magic FORMAT_MAGIC ("STRB")
 *        4     2  version FORMAT_VERSION
 *        6     2  ncolumns (<= FORMAT_MAX_COLUMNS)
 *        8     4  ncells
 *       12     4  directory checksum: the low 32 bits of XXH64 over
 *                  bytes [16, 32 + 40*ncolumns) seeded with XXH64 of
 *                  bytes [0, 12) (format_directory_checksum)
 *       16     8  span_start (i64)
 *       24     8  width (i64)
 *
 *   directory entry i at 32 + 40*i (40 bytes)
 *        0     2  role          20     4  reserved, 0
 *        2     2  index         24     8  base (i64; BITPACK, DELTA)
 *        4     1  type          32     8  checksum: XXH64 of the encoded bytes
 *        5     1  codec
 *        6     1  bits (BITPACK, DELTA)
 *        7     1  reserved, 0
 *        8     4  n (values)
 *       12     4  offset (from the start of the block)
 *       16     4  length (encoded bytes)
 *
 *   data      from 32 + 40*ncolumns (a multiple of 8) to the trailer: each
 *             column at an 8-byte aligned offset, in directory order, zero
 *             padding between them; a column whose encoding (type, codec,
 *             bits, base, n and bytes) equals an earlier one's points at
 *             that column's bytes instead of repeating them
 *   trailer   8 bytes at len - 8: XXH64 of bytes [0, len - 8), itself
 *             8-byte aligned: a block's length is a multiple of 8, which
 *             also makes every truncation of a block fail to open, even
 *             without the trailer check (the last column no longer fits)
 *
 * All integers little-endian, read and written through bytes.h (a block may
 * sit at any address). Opening a block checks the directory checksum, then
 * the header and every directory entry against the buffer's length, with
 * 64-bit arithmetic that cannot overflow, so that later reads of column data
 * stay in bounds without further checks; column data itself is only read
 * (and its checksum checked) when a column is decoded or the block verified.
 * Without the directory checksum a reader, which skips the trailer, took a
 * corrupted base or role as true: the structural checks cannot tell a
 * plausible wrong value from the right one.
 */
#include "base/error.h"
#include "format/bytes.h"
#include "format/checksum.h"
#include "format/column.h"
#include "format/format.h"
#include "format/gfor.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

_Static_assert(FORMAT_HEADER_BYTES % 8 == 0 && FORMAT_DIR_ENTRY_BYTES % 8 == 0,
               "the data area must start 8-byte aligned");

enum {
    H_MAGIC = 0,
    H_VERSION = 4,
    H_NCOLUMNS = 6,
    H_NCELLS = 8,
    H_DIR_CHECKSUM = 12,
    H_SPAN_START = 16,
    H_WIDTH = 24,

    D_ROLE = 0,
    D_INDEX = 2,
    D_TYPE = 4,
    D_CODEC = 5,
    D_BITS = 6,
    D_RESERVED1 = 7,
    D_N = 8,
    D_OFFSET = 12,
    D_LENGTH = 16,
    D_RESERVED2 = 20,
    D_BASE = 24,
    D_CHECKSUM = 32,
};

enum { WHY_BYTES = 160 };

__attribute__((format(printf, 2, 3))) static int fail(struct format_error *err,
                                                      const char *fmt, ...)
{
    if (err) {
        va_list ap;
        va_start(ap, fmt);
        error_vfmt(err->message, sizeof err->message, fmt, ap);
        va_end(ap);
    }
    return -1;
}

/* An error about column i, prefixed with its position and tags. */
__attribute__((format(printf, 5, 6))) static int fail_column(struct format_error *err, int i,
                                                             unsigned role, unsigned index,
                                                             const char *fmt, ...)
{
    if (err) {
        int k = snprintf(err->message, sizeof err->message, "column %d (role %u, index %u): ",
                         i, role, index);
        if (k > 0 && (size_t)k < sizeof err->message) {
            va_list ap;
            va_start(ap, fmt);
            vsnprintf(err->message + k, sizeof err->message - (size_t)k, fmt, ap);
            va_end(ap);
        }
    }
    return -1;
}

static size_t dir_end(size_t ncolumns)
{
    return FORMAT_HEADER_BYTES + ncolumns * FORMAT_DIR_ENTRY_BYTES;
}

static const uint8_t *entry_at(const struct format_block *b, int i)
{
    return b->base + dir_end((size_t)i);
}

/* ---- Encoding ------------------------------------------------------------- */

size_t format_block_bound(const struct format_column *cols, int ncols)
{
    /* Clamped so that a list encode refuses still gets a finite answer. */
    if (ncols < 0)
        ncols = 0;
    if (ncols > FORMAT_MAX_COLUMNS)
        ncols = FORMAT_MAX_COLUMNS;
    uint64_t total = dir_end((size_t)ncols) + FORMAT_TRAILER_BYTES;
    for (int i = 0; i < ncols; i++) {
        uint32_t n = cols[i].n <= FORMAT_MAX_VALUES ? cols[i].n : 0;
        total += (column_bound(cols[i].type, n) + 7) & ~(uint64_t)7;
    }
    return total > SIZE_MAX ? SIZE_MAX : (size_t)total;
}

/* An earlier column (of the i already in the directory at o) whose encoded
 * bytes equal these, or -1. Equal encodings are common: a count of a column
 * that is never NULL is the row count, cell by cell (four of the benchmark's
 * six count columns). Sharing is invisible to readers: each entry still has
 * its own n, codec, bits, base and checksum, which describe the same bytes. */
static int same_bytes_as(const uint8_t *o, int i, enum format_type type, uint32_t n,
                         const struct column_encoding *enc, uint64_t checksum,
                         const uint8_t *bytes)
{
    if (enc->length == 0)
        return -1;
    for (int j = 0; j < i; j++) {
        const uint8_t *e = o + dir_end((size_t)j);
        if (load_u64(e + D_CHECKSUM) == checksum && load_u32(e + D_LENGTH) == enc->length &&
            e[D_TYPE] == (uint8_t)type && e[D_CODEC] == (uint8_t)enc->codec &&
            e[D_BITS] == enc->bits && load_u32(e + D_N) == n &&
            load_i64(e + D_BASE) == enc->base &&
            memcmp(o + load_u32(e + D_OFFSET), bytes, enc->length) == 0)
            return j;
    }
    return -1;
}

int format_block_encode_codecs(const struct format_block_info *info,
                               const struct format_column *cols, int ncols,
                               enum format_policy policy, const int *codecs, void *out,
                               size_t cap, size_t *len, struct format_error *err)
{
    uint8_t *o = out;
    if (ncols < 0 || ncols > FORMAT_MAX_COLUMNS)
        return fail(err, "a block holds 0 to %d columns, not %d", FORMAT_MAX_COLUMNS, ncols);
    if (policy != FORMAT_POLICY_SMALLEST && policy != FORMAT_POLICY_RAW &&
        policy != FORMAT_POLICY_QUICK)
        return fail(err, "unknown encoding policy %d", (int)policy);
    size_t pos = dir_end((size_t)ncols);
    if (cap < pos + FORMAT_TRAILER_BYTES)
        return fail(err, "output buffer too small: %zu bytes", cap);

    for (int i = 0; i < ncols; i++) {
        const struct format_column *c = &cols[i];
        if (format_type_size(c->type) == 0)
            return fail_column(err, i, c->role, c->index, "unknown type %d", (int)c->type);
        if (c->n > FORMAT_MAX_VALUES)
            return fail_column(err, i, c->role, c->index, "%u values exceed the limit of %u",
                               c->n, FORMAT_MAX_VALUES);
        if (c->n > 0 && !c->values)
            return fail_column(err, i, c->role, c->index, "no values");
        if (pos > UINT32_MAX)
            return fail(err, "block would exceed 4 GiB");

        struct column_encoding enc;
        char why[WHY_BYTES];
        size_t room = cap - pos - FORMAT_TRAILER_BYTES; /* pos + trailer <= cap holds */
        if (column_encode(c, policy, codecs ? codecs[i] : COLUMN_CODEC_AUTO, o + pos, room,
                          &enc, why, sizeof why) < 0)
            return fail_column(err, i, c->role, c->index, "%s", why);
        if ((uint64_t)pos + enc.length > UINT32_MAX)
            return fail(err, "block would exceed 4 GiB");

        uint64_t checksum = format_checksum(o + pos, enc.length);
        uint32_t offset = (uint32_t)pos;
        int same = same_bytes_as(o, i, c->type, c->n, &enc, checksum, o + pos);
        if (same >= 0)
            offset = load_u32(o + dir_end((size_t)same) + D_OFFSET);

        uint8_t *e = o + dir_end((size_t)i);
        store_u16(e + D_ROLE, c->role);
        store_u16(e + D_INDEX, c->index);
        e[D_TYPE] = (uint8_t)c->type;
        e[D_CODEC] = (uint8_t)enc.codec;
        e[D_BITS] = enc.bits;
        e[D_RESERVED1] = 0;
        store_u32(e + D_N, c->n);
        store_u32(e + D_OFFSET, offset);
        store_u32(e + D_LENGTH, enc.length);
        store_u32(e + D_RESERVED2, 0);
        store_i64(e + D_BASE, enc.base);
        store_u64(e + D_CHECKSUM, checksum);
        if (same >= 0)
            continue; /* its bytes at pos are left for the next column */

        pos += enc.length;
        size_t padded = (pos + 7) & ~(size_t)7;
        if (padded + FORMAT_TRAILER_BYTES > cap)
            return fail(err, "output buffer too small: %zu bytes", cap);
        memset(o + pos, 0, padded - pos);
        pos = padded;
    }

    store_u32(o + H_MAGIC, FORMAT_MAGIC);
    store_u16(o + H_VERSION, FORMAT_VERSION);
    store_u16(o + H_NCOLUMNS, (uint16_t)ncols);
    store_u32(o + H_NCELLS, info->ncells);
    store_i64(o + H_SPAN_START, info->span_start);
    store_i64(o + H_WIDTH, info->width);
    store_u32(o + H_DIR_CHECKSUM, format_directory_checksum(o, dir_end((size_t)ncols)));
    store_u64(o + pos, format_checksum(o, pos));
    *len = pos + FORMAT_TRAILER_BYTES;
    return 0;
}

int format_block_encode(const struct format_block_info *info,
                        const struct format_column *cols, int ncols,
                        enum format_policy policy, void *out, size_t cap, size_t *len,
                        struct format_error *err)
{
    return format_block_encode_codecs(info, cols, ncols, policy, NULL, out, cap, len, err);
}

/* ---- Opening ------------------------------------------------------------------ */

static int check_trailer(const uint8_t *p, size_t len, struct format_error *err)
{
    uint64_t stored = load_u64(p + len - FORMAT_TRAILER_BYTES);
    uint64_t computed = format_checksum(p, len - FORMAT_TRAILER_BYTES);
    if (stored != computed)
        return fail(err, "segment block checksum mismatch (stored %016llx, computed %016llx)",
                    (unsigned long long)stored, (unsigned long long)computed);
    return 0;
}

int format_block_open(struct format_block *b, const void *buf, size_t len, bool verify,
                      struct format_error *err)
{
    const uint8_t *p = buf;
    memset(b, 0, sizeof *b);
    if (!p || len < FORMAT_HEADER_BYTES + FORMAT_TRAILER_BYTES)
        return fail(err, "segment block is truncated: %zu bytes, less than its header and "
                         "trailer (%d)",
                    p ? len : 0, FORMAT_HEADER_BYTES + FORMAT_TRAILER_BYTES);
    uint32_t magic = load_u32(p + H_MAGIC);
    if (magic != FORMAT_MAGIC)
        return fail(err, "not a segment block (magic %08x, expected %08x)", magic, FORMAT_MAGIC);
    unsigned version = load_u16(p + H_VERSION);
    if (version != FORMAT_VERSION)
        return fail(err, "segment block has format version %u; this build reads version %d",
                    version, FORMAT_VERSION);
    unsigned ncolumns = load_u16(p + H_NCOLUMNS);
    if (ncolumns > FORMAT_MAX_COLUMNS)
        return fail(err, "segment block has %u columns, more than the limit of %d", ncolumns,
                    FORMAT_MAX_COLUMNS);
    if (len % 8 != 0)
        return fail(err, "segment block length %zu is not a multiple of 8", len);
    const size_t data_start = dir_end(ncolumns);
    if (len < data_start + FORMAT_TRAILER_BYTES)
        return fail(err, "segment block is truncated: %zu bytes, less than the %zu its "
                         "directory of %u columns needs",
                    len, data_start + FORMAT_TRAILER_BYTES, ncolumns);
    /* Before anything below trusts a header or directory field. */
    uint32_t stored = load_u32(p + H_DIR_CHECKSUM);
    uint32_t computed = format_directory_checksum(p, data_start);
    if (stored != computed)
        return fail(err, "segment block header or directory is corrupt (checksum %08x, "
                         "computed %08x)", stored, computed);
    if (verify && check_trailer(p, len, err) < 0)
        return -1;

    const uint64_t data_end = len - FORMAT_TRAILER_BYTES;
    for (unsigned i = 0; i < ncolumns; i++) {
        const uint8_t *e = p + dir_end(i);
        unsigned role = load_u16(e + D_ROLE), index = load_u16(e + D_INDEX);
        if (e[D_RESERVED1] != 0 || load_u32(e + D_RESERVED2) != 0)
            return fail_column(err, (int)i, role, index, "reserved bytes set");
        char why[WHY_BYTES];
        if (column_check(e[D_TYPE], e[D_CODEC], e[D_BITS], load_i64(e + D_BASE),
                         load_u32(e + D_N), load_u32(e + D_LENGTH), why, sizeof why) < 0)
            return fail_column(err, (int)i, role, index, "%s", why);
        uint64_t offset = load_u32(e + D_OFFSET), length = load_u32(e + D_LENGTH);
        if (offset % 8 != 0)
            return fail_column(err, (int)i, role, index, "offset %llu is not 8-byte aligned",
                               (unsigned long long)offset);
        /* Both terms are below 2^32: the sum cannot overflow 64 bits. */
        if (offset < data_start || offset + length > data_end)
            return fail_column(err, (int)i, role, index,
                               "bytes %llu..%llu lie outside the data area %zu..%llu",
                               (unsigned long long)offset,
                               (unsigned long long)(offset + length), data_start,
                               (unsigned long long)data_end);
    }

    b->base = p;
    b->len = len;
    b->ncolumns = (int)ncolumns;
    b->info.ncells = load_u32(p + H_NCELLS);
    b->info.span_start = load_i64(p + H_SPAN_START);
    b->info.width = load_i64(p + H_WIDTH);
    return 0;
}

/* ---- Reading columns --------------------------------------------------------- */

void format_block_column(const struct format_block *b, int i, struct format_column_info *out)
{
    memset(out, 0, sizeof *out);
    if (i < 0 || i >= b->ncolumns)
        return;
    const uint8_t *e = entry_at(b, i);
    out->role = load_u16(e + D_ROLE);
    out->index = load_u16(e + D_INDEX);
    out->type = (enum format_type)e[D_TYPE];
    out->codec = (enum format_codec)e[D_CODEC];
    out->bits = e[D_BITS];
    out->n = load_u32(e + D_N);
    out->offset = load_u32(e + D_OFFSET);
    out->length = load_u32(e + D_LENGTH);
    out->checksum = load_u64(e + D_CHECKSUM);
}

int format_block_shares(const struct format_block *b, int i)
{
    if (i < 0 || i >= b->ncolumns)
        return -1;
    const uint8_t *e = entry_at(b, i);
    uint32_t offset = load_u32(e + D_OFFSET), length = load_u32(e + D_LENGTH);
    for (int j = 0; j < i && length > 0; j++) {
        const uint8_t *f = entry_at(b, j);
        if (load_u32(f + D_OFFSET) == offset && load_u32(f + D_LENGTH) == length)
            return j;
    }
    return -1;
}

int format_block_find(const struct format_block *b, uint16_t role, uint16_t index)
{
    for (int i = 0; i < b->ncolumns; i++) {
        const uint8_t *e = entry_at(b, i);
        if (load_u16(e + D_ROLE) == role && load_u16(e + D_INDEX) == index)
            return i;
    }
    return -1;
}

/* Looks up column i and checks its bytes against the directory checksum. */
static int column_bytes(const struct format_block *b, int i, bool verify,
                        struct format_column_info *ci, struct format_error *err)
{
    if (i < 0 || i >= b->ncolumns)
        return fail(err, "column %d does not exist; the block has %d", i, b->ncolumns);
    format_block_column(b, i, ci);
    if (verify && format_checksum(b->base + ci->offset, ci->length) != ci->checksum)
        return fail_column(err, i, ci->role, ci->index, "checksum mismatch");
    return 0;
}

int format_block_decode(const struct format_block *b, int i, void *out,
                        struct format_error *err)
{
    struct format_column_info ci = {0};
    if (column_bytes(b, i, true, &ci, err) < 0)
        return -1;
    char why[WHY_BYTES];
    if (column_decode(ci.type, ci.codec, ci.bits, load_i64(entry_at(b, i) + D_BASE), ci.n,
                      b->base + ci.offset, ci.length, out, why, sizeof why) < 0)
        return fail_column(err, i, ci.role, ci.index, "%s", why);
    return 0;
}

int format_block_decode_range(const struct format_block *b, int i, uint32_t first,
                              uint32_t count, void *out, struct format_error *err)
{
    return format_block_decode_slice(b, i, first, count, true, out, err);
}

int format_block_decode_slice(const struct format_block *b, int i, uint32_t first,
                              uint32_t count, bool verify, void *out, struct format_error *err)
{
    struct format_column_info ci = {0};
    if (column_bytes(b, i, verify, &ci, err) < 0)
        return -1;
    char why[WHY_BYTES];
    if (column_decode_range(ci.type, ci.codec, ci.bits, load_i64(entry_at(b, i) + D_BASE), ci.n,
                            first, count, b->base + ci.offset, ci.length, out, why,
                            sizeof why) < 0)
        return fail_column(err, i, ci.role, ci.index, "%s", why);
    return 0;
}

const void *format_block_raw(const struct format_block *b, int i, bool verify,
                             struct format_error *err)
{
    struct format_column_info ci = {0};
    if (column_bytes(b, i, false, &ci, err) < 0)
        return NULL;
    if (ci.codec != FORMAT_RAW) {
        fail_column(err, i, ci.role, ci.index, "codec %s is not raw; decode the column",
                    format_codec_name(ci.codec));
        return NULL;
    }
    if (verify && column_bytes(b, i, true, &ci, err) < 0)
        return NULL;
    return b->base + ci.offset;
}

int format_block_seek(const struct format_block *b, int i, bool verify, struct format_seek *out,
                      struct format_error *err)
{
    struct format_column_info ci = {0};
    if (column_bytes(b, i, verify, &ci, err) < 0)
        return -1;
    if (ci.type != FORMAT_I64 || !format_codec_in_place(ci.codec))
        return fail_column(err, i, ci.role, ci.index, "a %s column in %s is not read by position",
                           ci.type == FORMAT_I64 ? "i64" : "non-i64", format_codec_name(ci.codec));
    unsigned bits = ci.codec == FORMAT_RAW ? 64 : ci.bits;
    /* The open checked the length against n and bits, and that the data
     * lies before the trailer: format_seek_get's loads stay in the block. */
    if (bits > 64 || (uint64_t)ci.offset + ci.length + FORMAT_TRAILER_BYTES > b->len)
        return fail_column(err, i, ci.role, ci.index, "bits or bounds out of range");
    const uint8_t *data = b->base + ci.offset;
    const uint64_t base = ci.codec == FORMAT_RAW ? 0 : (uint64_t)load_i64(entry_at(b, i) + D_BASE);
    if (ci.codec == FORMAT_GFOR) {
        struct gfor_table t;
        char why[160];
        if (gfor_open(bits, ci.n, data, ci.length, &t, why, sizeof why) < 0)
            return fail_column(err, i, ci.role, ci.index, "%s", why);
        /* The table's loads end inside it or in the stream after it; the
         * stream's clamp to its last byte keeps its loads in the column and
         * the trailer (an empty stream: width 0, a load of the trailer). */
        *out = (struct format_seek){
            .data = t.stream,
            .base = base,
            .mask = t.abits >= 64 ? UINT64_MAX : ((uint64_t)1 << t.abits) - 1,
            .n = ci.n,
            .groups = t.entries,
            .ebits = t.ebits,
            .abits = (uint8_t)t.abits,
            .pbits = (uint8_t)t.pbits,
            .wmax = t.stream_len ? 64 : 0,
            .pmask = ((uint64_t)1 << t.pbits) - 1,
            .last = t.stream_len ? t.stream_len - 1 : 0,
        };
        return 0;
    }
    *out = (struct format_seek){
        .data = data,
        .base = base,
        .mask = bits == 64 ? UINT64_MAX : ((uint64_t)1 << bits) - 1,
        .n = ci.n,
        .bits = (uint8_t)bits,
    };
    return 0;
}

int format_block_verify(const struct format_block *b, struct format_error *err)
{
    if (!b->base || b->len < FORMAT_HEADER_BYTES + FORMAT_TRAILER_BYTES)
        return fail(err, "segment block is not open");
    if (check_trailer(b->base, b->len, err) < 0)
        return -1;
    for (int i = 0; i < b->ncolumns; i++) {
        struct format_column_info ci = {0};
        if (column_bytes(b, i, true, &ci, err) < 0)
            return -1;
        /* RAW, BITPACK and DELTA decode any bytes of the checked length;
         * PFOR, DPFOR, RICE, DRICE and GFOR are checked without decoding,
         * LZ4 has to be tried.
         * Open bounded its output to 256 times its length, so this
         * allocation is bounded by the block's size. */
        char why0[WHY_BYTES];
        if (column_check_data(ci.codec, ci.bits, ci.n, b->base + ci.offset, ci.length, why0,
                              sizeof why0) < 0)
            return fail_column(err, i, ci.role, ci.index, "%s", why0);
        if (ci.codec != FORMAT_LZ4)
            continue;
        size_t raw = (size_t)ci.n * format_type_size(ci.type);
        void *tmp = malloc(raw ? raw : 1);
        if (!tmp)
            return fail_column(err, i, ci.role, ci.index, "out of memory (%zu bytes)", raw);
        char why[WHY_BYTES];
        int rc = column_decode(ci.type, ci.codec, 0, 0, ci.n, b->base + ci.offset, ci.length,
                               tmp, why, sizeof why);
        free(tmp);
        if (rc < 0)
            return fail_column(err, i, ci.role, ci.index, "%s", why);
    }
    return 0;
}
