/* fuzz_format.c -- libFuzzer target for segment blocks.
 *
 * Each input is used three ways:
 *  1. As a block: opened with and without the trailer check, verified, and
 *     every column decoded (and read in place when RAW), whole and in
 *     slices (format_block_decode_range, as serve reads it). Nothing may
 *     crash or read out of bounds; every failure must carry a message; a
 *     block that verifies must decode every column, agree with its raw
 *     view and with its slices, and survive a re-encode round trip.
 *     The same bytes are then tried again with the directory checksum, and
 *     then every column checksum and the trailer, recomputed, so that
 *     mutated headers, directories and column data get past the checksums
 *     and reach the structural checks and the decoders themselves.
 *  2. As values: the bytes after the first, shaped by the first (raw, small
 *     deltas, few bits with rare wide ones, extremes), become an i64, an i128 and an f64 column,
 *     encoded with both policies and every codec that can hold them; each
 *     must decode to exactly its input, or the target aborts.
 *  3. As a bit-packed stream for bitpack_unpack_at (see as_bitpack).
 * Column buffers are capped at 1 << 20 elements to keep the fuzzer's RSS low
 * (a legal 30-byte directory entry may describe 2^28 equal values). */
#include "format/bitpack.h"
#include "format/checksum.h"
#include "format/column.h"
#include "format/format.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define MAX_DECODE_VALUES (1u << 20)

static void check_error(const struct format_error *err)
{
    if (err->message[0] == '\0')
        abort();
}

/* Encodes cols (with forced codecs, or NULL), decodes, compares. */
static void roundtrip(const struct format_column *cols, int ncols, enum format_policy policy,
                      const int *codecs)
{
    struct format_block_info info = {.span_start = -1, .width = 1000, .ncells = 3};
    size_t cap = format_block_bound(cols, ncols), len;
    uint8_t *buf = malloc(cap);
    struct format_error err = {{0}};
    if (!buf)
        return;
    if (format_block_encode_codecs(&info, cols, ncols, policy, codecs, buf, cap, &len, &err) != 0)
        abort(); /* callers force only codecs that can hold the values */
    struct format_block b;
    if (format_block_open(&b, buf, len, true, &err) != 0 || format_block_verify(&b, &err) != 0)
        abort();
    if (b.ncolumns != ncols || b.info.span_start != info.span_start)
        abort();
    for (int i = 0; i < ncols; i++) {
        size_t bytes = (size_t)cols[i].n * format_type_size(cols[i].type);
        uint8_t *out = malloc(bytes + 1);
        if (!out)
            abort();
        if (format_block_decode(&b, i, out, &err) != 0)
            abort();
        if (bytes && memcmp(out, cols[i].values, bytes) != 0)
            abort();
        struct format_column_info ci;
        format_block_column(&b, i, &ci);
        if (codecs && codecs[i] != COLUMN_CODEC_AUTO && (int)ci.codec != codecs[i])
            abort();
        if (policy == FORMAT_POLICY_RAW && !codecs && ci.codec != FORMAT_RAW)
            abort();
        if (policy == FORMAT_POLICY_QUICK && !codecs && ci.codec != FORMAT_RAW &&
            ci.codec != FORMAT_BITPACK && ci.codec != FORMAT_DELTA && ci.codec != FORMAT_GFOR)
            abort(); /* QUICK plans the one-pass codecs only */
        free(out);
    }
    free(buf);
}

/* format_block_decode_range over slices of column i (ci), against the
 * whole column `all` as format_block_decode gave it (NULL when that
 * failed): the read path serve takes for the bucket-start, key and value-
 * count columns, where RAW and BITPACK columns read only the slice asked
 * (bitpack_unpack_at from a bit offset inside a byte). Each slice must equal
 * the same elements of the whole; a slice past the end must fail; and a
 * column that does not decode whole must not decode in part either, unless
 * its codec reads only the slice (RAW and BITPACK cannot fail; PFOR and
 * DPFOR check the exception positions up to the slice's end, so a slice
 * that reaches the column's end fails alike). */
static void check_ranges(const struct format_block *b, int i, const struct format_column_info *ci,
                         const uint8_t *all)
{
    const uint32_t n = ci->n;
    const size_t size = format_type_size(ci->type);
    struct format_error err;
    /* Long slices of short columns; short slices (at odd bit offsets) of
     * long ones, and only one of a long DELTA or LZ4 column, which decodes
     * whole for every slice: each input stays well under a millisecond. */
    uint32_t m = n < 64 ? n : 64;
    uint32_t slices[][2] = {
        {0, n <= 4096 ? n : m}, {0, 0}, {n, 0}, {n - m, m}, {n / 2, n / 2 < 17 ? n / 2 : 17},
        {n / 7, n <= 4096 ? n - n / 7 : 1}, {n / 3, n <= 4096 ? n / 2 - n / 3 : 3},
    };
    size_t nslices = sizeof slices / sizeof slices[0];
    if (n > 4096 && ci->codec != FORMAT_RAW && ci->codec != FORMAT_BITPACK &&
        ci->codec != FORMAT_PFOR && ci->codec != FORMAT_DPFOR && ci->codec != FORMAT_RICE &&
        ci->codec != FORMAT_DRICE && ci->codec != FORMAT_GFOR)
        nslices = 1;
    for (size_t k = 0; k < nslices; k++) {
        uint32_t first = slices[k][0], count = slices[k][1];
        /* Exactly count elements, so ASan sees a write past the slice. */
        uint8_t *out = malloc(count ? (size_t)count * size : 1);
        if (!out)
            abort();
        err.message[0] = '\0';
        int ok = format_block_decode_range(b, i, first, count, out, &err) == 0;
        if (!ok)
            check_error(&err);
        if (all && !ok)
            abort(); /* the whole decoded; a part of it must too */
        bool patched = ci->codec == FORMAT_PFOR || ci->codec == FORMAT_DPFOR;
        bool rice = ci->codec == FORMAT_RICE || ci->codec == FORMAT_DRICE;
        if (!all && ok && ci->codec != FORMAT_RAW && ci->codec != FORMAT_BITPACK && !rice &&
            ci->codec != FORMAT_GFOR && (!patched || (uint64_t)first + count == n))
            abort(); /* DELTA and LZ4 decode from the start, PFOR and DPFOR check
                        every exception up to the end: the same failure (a RICE
                        slice starts at its anchor and may miss a bad code, a GFOR
                        slice checks the groups it reads) */
        if (all && count && memcmp(out, all + (size_t)first * size, (size_t)count * size) != 0)
            abort();
        free(out);
    }
    /* Past the end, and a first + count that wraps 32 bits. */
    uint8_t one[16];
    if (format_block_decode_range(b, i, n, 1, one, &err) == 0)
        abort();
    check_error(&err);
    if (format_block_decode_range(b, i, UINT32_MAX, 2, one, &err) == 0)
        abort();
    check_error(&err);
}

static void as_block(const uint8_t *data, size_t size)
{
    for (int verify = 0; verify < 2; verify++) {
        struct format_block b;
        struct format_error err = {{0}};
        if (format_block_open(&b, data, size, verify, &err) != 0) {
            check_error(&err);
            continue;
        }
        if (b.ncolumns < 0 || b.ncolumns > FORMAT_MAX_COLUMNS)
            abort();
        err.message[0] = '\0';
        int verified = format_block_verify(&b, &err) == 0;
        if (!verified)
            check_error(&err);
        if (verify && !verified && strstr(err.message, "segment block checksum") != NULL)
            abort(); /* the trailer was checked by open */

        struct format_column decoded[8];
        void *mem[8];
        int ndecoded = 0;
        for (int i = 0; i < b.ncolumns; i++) {
            struct format_column_info ci;
            format_block_column(&b, i, &ci);
            int found = format_block_find(&b, ci.role, ci.index);
            if (found < 0 || found > i)
                abort();
            if (ci.n > MAX_DECODE_VALUES)
                continue;
            size_t bytes = (size_t)ci.n * format_type_size(ci.type);
            uint8_t *out = malloc(bytes ? bytes : 1);
            if (!out)
                abort();
            err.message[0] = '\0';
            int ok = format_block_decode(&b, i, out, &err) == 0;
            if (!ok)
                check_error(&err);
            if (verified && !ok)
                abort(); /* verify promised every column decodes */
            const void *raw = format_block_raw(&b, i, true, &err);
            if ((raw != NULL) != (ci.codec == FORMAT_RAW && ok))
                abort();
            if (raw && bytes && memcmp(raw, out, bytes) != 0)
                abort();
            /* Read by position: an I64 RAW, BITPACK or GFOR column that
             * decodes reads the same values in place; one that does not
             * decode may still open to seek (GFOR checks its header only),
             * but every load stays inside the block whatever it reads. */
            struct format_seek seek;
            bool seeks = format_block_seek(&b, i, true, &seek, &err) == 0;
            if (!seeks)
                check_error(&err);
            bool gfor = ci.type == FORMAT_I64 && ci.codec == FORMAT_GFOR;
            if (ok && seeks != (ci.type == FORMAT_I64 && (ci.codec == FORMAT_RAW ||
                                                          ci.codec == FORMAT_BITPACK || gfor)))
                abort();
            if (!ok && seeks && !gfor)
                abort();
            int64_t sink = 0;
            for (uint32_t j = 0; seeks && j < ci.n; j++) {
                int64_t x = format_seek_get(&seek, j);
                if (ok && x != format_load_i64(out, j))
                    abort();
                sink ^= x;
            }
            __asm__ volatile("" : : "r"(sink));
            check_ranges(&b, i, &ci, ok ? out : NULL);
            if (verified && ndecoded < 8) {
                decoded[ndecoded] = (struct format_column){ci.role, ci.index, ci.type, ci.n, out, false, false};
                mem[ndecoded++] = out;
            } else {
                free(out);
            }
        }
        /* What decoded re-encodes to the same values. */
        if (ndecoded) {
            roundtrip(decoded, ndecoded, FORMAT_POLICY_SMALLEST, NULL);
            roundtrip(decoded, ndecoded, FORMAT_POLICY_RAW, NULL);
            roundtrip(decoded, ndecoded, FORMAT_POLICY_QUICK, NULL);
        }
        for (int i = 0; i < ndecoded; i++)
            free(mem[i]);
    }
}

/* The directory checksum of buf (its ncolumns read from the header), or
 * false when the directory does not fit. */
static bool fix_directory(uint8_t *buf, size_t size)
{
    uint16_t ncols;
    memcpy(&ncols, buf + 6, 2);
    size_t end = FORMAT_HEADER_BYTES + (size_t)ncols * FORMAT_DIR_ENTRY_BYTES;
    if (end > size)
        return false;
    uint32_t d = format_directory_checksum(buf, end);
    memcpy(buf + 12, &d, 4);
    return true;
}

/* Recomputes a block's checksums, so that the fuzzer's changes get past
 * them: first the directory checksum, so that header and directory edits
 * reach the structural checks of open; then, for a block whose structure
 * opens, every column checksum (they live in the directory, so the
 * directory checksum again) and the trailer, so that changes to column
 * data reach the decoders themselves. */
static void as_fixed_block(const uint8_t *data, size_t size)
{
    if (size < FORMAT_HEADER_BYTES + FORMAT_TRAILER_BYTES)
        return;
    uint8_t *buf = malloc(size);
    if (!buf)
        abort();
    memcpy(buf, data, size);
    struct format_block b;
    struct format_error err;
    if (!fix_directory(buf, size) || format_block_open(&b, buf, size, false, &err) != 0) {
        as_block(buf, size);
        free(buf);
        return;
    }
    for (int i = 0; i < b.ncolumns; i++) {
        struct format_column_info ci;
        format_block_column(&b, i, &ci);
        uint64_t h = format_checksum(buf + ci.offset, ci.length);
        memcpy(buf + FORMAT_HEADER_BYTES + (size_t)i * FORMAT_DIR_ENTRY_BYTES + 32, &h, 8);
    }
    fix_directory(buf, size);
    uint64_t h = format_checksum(buf, size - FORMAT_TRAILER_BYTES);
    memcpy(buf + size - FORMAT_TRAILER_BYTES, &h, 8);
    if (format_block_open(&b, buf, size, true, &err) != 0)
        abort(); /* only checksums changed */
    as_block(buf, size);
    free(buf);
}

/* Shapes the input bytes into int64 values that reach every codec path. */
static void shape_i64(uint8_t mode, const uint8_t *p, size_t n, int64_t *v)
{
    static const int64_t ext[] = {INT64_MIN, INT64_MAX, 0, -1, 1, INT64_MIN + 1, INT64_MAX - 1, 42};
    uint64_t acc = 0;
    unsigned bits = mode >> 2; /* 0..63 */
    for (size_t i = 0; i < n; i++) {
        uint64_t u;
        memcpy(&u, p + i * 8, 8);
        switch (mode & 3) {
        case 0: /* as is */
            break;
        case 1: /* a running sum of small signed steps: sorted-ish timestamps */
            acc += (uint64_t)(int64_t)(int8_t)p[i * 8] * ((uint64_t)p[i * 8 + 1] + 1);
            u = acc;
            break;
        case 2: /* few significant bits above a shared base, rarely (a last
                   byte of 0xFF) a wide value: PFOR's exceptions */
            if (p[i * 8 + 7] != 0xFF)
                u = (u & (((uint64_t)1 << bits) - 1)) + ((uint64_t)p[0] << 56);
            break;
        default: /* extremes */
            u = (uint64_t)ext[p[i * 8] & 7];
            break;
        }
        memcpy(&v[i], &u, 8);
    }
}

static void as_values(const uint8_t *data, size_t size)
{
    if (size < 9)
        return;
    uint8_t mode = data[0];
    const uint8_t *p = data + 1;
    size_t n64 = (size - 1) / 8, n128 = n64 / 2;

    int64_t *v = malloc(n64 * 8);
    __int128 *w = malloc(n128 * 16 + 1);
    double *d = malloc(n64 * 8);
    if (!v || !w || !d)
        abort();
    shape_i64(mode, p, n64, v);
    for (size_t i = 0; i < n128; i++) {
        /* i128: the shaped i64 pair as high and low halves, or (mode bit 7)
         * the sign-extended low half, which bitpack can hold. */
        unsigned __int128 u = ((unsigned __int128)(uint64_t)v[2 * i] << 64) | (uint64_t)v[2 * i + 1];
        w[i] = (mode & 0x80) ? (__int128)v[2 * i + 1] : (__int128)u;
    }
    memcpy(d, p, n64 * 8);

    struct format_column cols[3] = {
        {1, 0, FORMAT_I64, (uint32_t)n64, v, false, false},
        {2, 0, FORMAT_I128, (uint32_t)n128, w, false, false},
        {3, 0, FORMAT_F64, (uint32_t)n64, d, false, false},
    };
    roundtrip(cols, 3, FORMAT_POLICY_SMALLEST, NULL);
    roundtrip(cols, 3, FORMAT_POLICY_RAW, NULL);
    roundtrip(cols, 3, FORMAT_POLICY_QUICK, NULL);
    cols[0].compact = true; /* SMALLEST may take RICE or DRICE */
    roundtrip(cols, 1, FORMAT_POLICY_SMALLEST, NULL);
    cols[0].compact = false;
    for (int codec = FORMAT_RAW; codec <= FORMAT_CODEC_LAST; codec++) {
        int c64 = codec;
        roundtrip(&cols[0], 1, FORMAT_POLICY_SMALLEST, &c64);
        if (codec == FORMAT_RAW || codec == FORMAT_LZ4) {
            roundtrip(&cols[2], 1, FORMAT_POLICY_SMALLEST, &c64);
            roundtrip(&cols[1], 1, FORMAT_POLICY_SMALLEST, &c64);
        }
    }
    /* BITPACK and PFOR on i128 only when the values allow it; otherwise they
     * must refuse. */
    for (int c128 = FORMAT_BITPACK; c128 <= FORMAT_PFOR; c128 += FORMAT_PFOR - FORMAT_BITPACK) {
        int bp = c128;
        size_t cap = format_block_bound(&cols[1], 1), len;
        uint8_t *buf = malloc(cap);
        struct format_error err = {{0}};
        struct format_block_info info = {0};
        if (format_block_encode_codecs(&info, &cols[1], 1, FORMAT_POLICY_SMALLEST, &bp, buf, cap,
                                       &len, &err) == 0)
            roundtrip(&cols[1], 1, FORMAT_POLICY_SMALLEST, &bp);
        else
            check_error(&err);
        free(buf);
    }
    free(v);
    free(w);
    free(d);
}

/* bitpack_unpack_at straight on the input: byte 0 the width (0..64),
 * bytes 1-2 where to start (10 bits: every bit offset, and cheap), byte 3
 * how many; the rest is the packed stream, copied to an exact-size buffer
 * so that ASan sees a read past it. Starting at value `first` must give the
 * same values as unpacking from 0 and skipping, whenever the stream holds
 * them all; a short stream gives garbage but never a read past it. */
static void as_bitpack(const uint8_t *data, size_t size)
{
    if (size < 4)
        return;
    unsigned bits = data[0] % 65;
    size_t first = (size_t)data[1] | (size_t)(data[2] & 0x03) << 8, n = data[3];
    size_t len = size - 4;
    uint8_t *in = malloc(len ? len : 1);
    uint8_t *at = malloc(n * 8 + 1), *all = malloc((first + n) * 8 + 1);
    if (!in || !at || !all)
        abort();
    if (len)
        memcpy(in, data + 4, len);
    bitpack_unpack_at(in, len, first, n, bits, at);
    bitpack_unpack(in, len, first + n, bits, all);
    if (bitpack_bytes(first + n, bits) <= len) {
        if (n && memcmp(at, all + first * 8, n * 8) != 0)
            abort();
        const uint64_t mask = bits >= 64 ? UINT64_MAX : ((uint64_t)1 << bits) - 1;
        for (size_t i = 0; i < n; i++) {
            uint64_t v;
            memcpy(&v, at + i * 8, 8);
            if (v & ~mask)
                abort();
        }
    }
    free(in);
    free(at);
    free(all);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    as_block(data, size);
    as_fixed_block(data, size);
    as_values(data, size);
    as_bitpack(data, size);
    return 0;
}
