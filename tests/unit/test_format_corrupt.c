/* test_format_corrupt.c -- damaged blocks fail cleanly with a message.
 *
 * Every single-byte change to a block (every byte of small blocks, a seeded
 * sample of large ones) fails the trailer check, and without it still fails
 * format_block_verify (a change to the header or directory fails open
 * itself, on the directory checksum); a change to a column's bytes fails
 * that column's decode with "checksum mismatch" even when the block was
 * opened without verification; every truncation fails to open. ASan watches for reads out of
 * bounds along the way. */
#include "tests/unit/test_format_util.h"

#include <criterion/criterion.h>
#include <stdio.h>

static int64_t small[100], stamps[100], pattern[200], plain[50];
static double dconst[64], dplain[10];
static i128 w128[30], r128[5], l128[20];
static int64_t rows[150], codes[300];

/* A block with every codec and type, n = 0 included. */
static uint8_t *mixed_block(size_t *len)
{
    struct rng r = {5};
    gen_i64(&r, 1, small, 100);
    gen_i64(&r, 6, stamps, 100);
    gen_i64(&r, 8, pattern, 200);
    gen_i64(&r, 3, plain, 50);
    gen_f64(&r, 0, dconst, 64);
    gen_f64(&r, 2, dplain, 10);
    gen_i128(&r, 1, w128, 30);
    gen_i128(&r, 3, r128, 5);
    gen_i128(&r, 0, l128, 20);
    /* Value-count runs: rows mostly 1; codes ascending in cells. */
    for (int i = 0; i < 150; i++)
        rows[i] = rng_below(&r, 5) ? 1 : 1 + (int64_t)rng_below(&r, 1000);
    for (int i = 0, x = 0; i < 300; i++)
        codes[i] = x = rng_below(&r, 8) ? x + 1 + (int)rng_below(&r, 20) : (int)rng_below(&r, 500);
    struct format_column cols[] = {
        {1, 0, FORMAT_I64, 50, plain, false, false},     {1, 1, FORMAT_I64, 100, small, false, false},
        {2, 0, FORMAT_I64, 100, stamps, false, false},   {2, 1, FORMAT_I64, 200, pattern, false, false},
        {3, 0, FORMAT_F64, 10, dplain, false, false},    {3, 1, FORMAT_F64, 64, dconst, false, false},
        {4, 0, FORMAT_I128, 30, w128, false, false},     {4, 1, FORMAT_I128, 5, r128, false, false},
        {5, 0, FORMAT_I64, 0, NULL, false, false},       {5, 1, FORMAT_I128, 20, l128, false, false},
        {5, 2, FORMAT_I64, 1, plain, false, false},      {6, 0, FORMAT_I64, 150, rows, false, false},
        {6, 1, FORMAT_I64, 300, codes, false, false},
        {7, 0, FORMAT_I64, 150, rows, false, false},
        {7, 1, FORMAT_I64, 300, codes, false, false},
    };
    int codecs[] = {FORMAT_RAW, FORMAT_BITPACK, FORMAT_DELTA, FORMAT_LZ4,
                    FORMAT_RAW, FORMAT_LZ4,     FORMAT_BITPACK, FORMAT_RAW,
                    FORMAT_RAW, FORMAT_LZ4,     FORMAT_DELTA, FORMAT_PFOR, FORMAT_DPFOR,
                    FORMAT_RICE, FORMAT_DRICE};
    struct format_block_info info = {.span_start = 1700000000000000, .width = 3600000000,
                                     .ncells = 77};
    return encode_block(&info, cols, 15, FORMAT_POLICY_SMALLEST, codecs, len);
}

/* A larger block under the SMALLEST policy. */
static uint8_t *large_block(size_t *len, void **mem, int *nmem)
{
    struct rng r = {77};
    struct format_column cols[6];
    for (int i = 0; i < 6; i++) {
        enum format_type t = (enum format_type)(1 + i % 3);
        uint32_t n = 5000 + (uint32_t)rng_below(&r, 5000);
        mem[i] = malloc(n * format_type_size(t));
        if (t == FORMAT_I64)
            gen_i64(&r, i == 0 ? 6 : 1, mem[i], n);
        else if (t == FORMAT_I128)
            gen_i128(&r, 1, mem[i], n);
        else
            gen_f64(&r, 1, mem[i], n);
        cols[i] = (struct format_column){(uint16_t)i, 0, t, n, mem[i], false, false};
    }
    *nmem = 6;
    struct format_block_info info = {.span_start = 0, .width = 60000000, .ncells = 9};
    return encode_block(&info, cols, 6, FORMAT_POLICY_SMALLEST, NULL, len);
}

/* Changes byte pos and checks that the block no longer passes. */
static void flip_and_check(const uint8_t *orig, size_t len, size_t pos, uint8_t x)
{
    uint8_t *buf = malloc(len);
    memcpy(buf, orig, len);
    buf[pos] ^= x;
    struct format_block b;
    struct format_error err = {{0}};
    cr_assert_eq(format_block_open(&b, buf, len, true, &err), -1, "byte %zu ^ %02x opened", pos,
                 x);
    cr_assert_neq(err.message[0], '\0');
    err.message[0] = '\0';
    if (format_block_open(&b, buf, len, false, &err) == 0) {
        cr_assert_eq(format_block_verify(&b, &err), -1, "byte %zu ^ %02x verified", pos, x);
        cr_assert_neq(err.message[0], '\0');
        /* Whatever still opens decodes without crashing. */
        for (int i = 0; i < b.ncolumns; i++) {
            struct format_column_info ci;
            format_block_column(&b, i, &ci);
            size_t bytes = (size_t)ci.n * format_type_size(ci.type);
            if (bytes > ((size_t)1 << 24))
                continue;
            void *out = malloc(bytes ? bytes : 1);
            (void)format_block_decode(&b, i, out, &err);
            free(out);
        }
    } else {
        cr_assert_neq(err.message[0], '\0');
    }
    free(buf);
}

Test(format_corrupt, every_byte_of_a_small_block, .timeout = 120)
{
    size_t len;
    uint8_t *buf = mixed_block(&len);
    static const uint8_t xs[] = {0x01, 0x80, 0xff, 0x10};
    for (size_t pos = 0; pos < len; pos++)
        flip_and_check(buf, len, pos, xs[pos % 4]);
    free(buf);
}

Test(format_corrupt, sampled_bytes_of_a_large_block, .timeout = 120)
{
    void *mem[6];
    int nmem;
    size_t len;
    uint8_t *buf = large_block(&len, mem, &nmem);
    cr_assert_gt(len, 1000);
    struct rng r = {3};
    for (int k = 0; k < 600; k++) {
        size_t pos = k < 100 ? (size_t)k * 40 % len : rng_below(&r, len);
        flip_and_check(buf, len, pos, (uint8_t)(1 + rng_below(&r, 255)));
    }
    free(buf);
    for (int i = 0; i < nmem; i++)
        free(mem[i]);
}

Test(format_corrupt, empty_block_every_byte)
{
    struct format_block_info info = {0};
    size_t len;
    uint8_t *buf = encode_block(&info, NULL, 0, FORMAT_POLICY_SMALLEST, NULL, &len);
    for (size_t pos = 0; pos < len; pos++)
        flip_and_check(buf, len, pos, 0x04);
    free(buf);
}

/* Without the trailer check, a column's bytes are still guarded by its own
 * checksum: decode and raw-with-verify refuse, other columns still decode. */
Test(format_corrupt, column_bytes_unverified_open, .timeout = 60)
{
    size_t len;
    uint8_t *orig = mixed_block(&len);
    struct format_block b;
    struct format_error err = {{0}};
    cr_assert_eq(format_block_open(&b, orig, len, true, &err), 0);
    int ncols = b.ncolumns;
    struct format_column_info info[16];
    for (int i = 0; i < ncols; i++)
        format_block_column(&b, i, &info[i]);

    uint8_t *buf = malloc(len);
    uint8_t out[8192];
    int tried = 0;
    for (int i = 0; i < ncols; i++) {
        for (uint32_t k = 0; k < info[i].length; k++) {
            memcpy(buf, orig, len);
            buf[info[i].offset + k] ^= (uint8_t)(1u << (k % 8));
            cr_assert_eq(format_block_open(&b, buf, len, false, &err), 0, "%s", err.message);
            char want[200];
            snprintf(want, sizeof want, "column %d (role %u, index %u): checksum mismatch", i,
                     info[i].role, info[i].index);
            cr_assert_eq(format_block_decode(&b, i, out, &err), -1);
            cr_assert_str_eq(err.message, want);
            cr_assert_eq(format_block_verify(&b, &err), -1);
            if (info[i].codec == FORMAT_RAW) {
                err.message[0] = '\0';
                cr_assert_null(format_block_raw(&b, i, true, &err));
                cr_assert_str_eq(err.message, want);
                cr_assert_eq(format_block_raw(&b, i, false, &err), buf + info[i].offset);
            }
            /* Its neighbours are unharmed. */
            int j = (i + 1) % ncols;
            cr_assert_eq(format_block_decode(&b, j, out, &err), 0, "%s", err.message);
            tried++;
        }
    }
    cr_assert_gt(tried, 500);

    /* The directory's checksum field itself: the directory checksum (format
     * 2) refuses the block at open, trailer check or not. */
    for (int i = 0; i < ncols; i++) {
        memcpy(buf, orig, len);
        buf[32 + 40 * i + 32 + (size_t)i % 8] ^= 0x20;
        cr_assert_eq(format_block_open(&b, buf, len, false, &err), -1);
        cr_assert(strstr(err.message, "segment block header or directory is corrupt"), "%s",
                  err.message);
    }

    /* Padding between columns: only the trailer notices. */
    int padded = 0;
    for (int i = 0; i + 1 < ncols; i++) {
        uint32_t end = info[i].offset + info[i].length;
        if (end == info[i + 1].offset)
            continue;
        memcpy(buf, orig, len);
        buf[end] ^= 1;
        cr_assert_eq(format_block_open(&b, buf, len, false, &err), 0);
        for (int j = 0; j < ncols; j++)
            cr_assert_eq(format_block_decode(&b, j, out, &err), 0);
        cr_assert_eq(format_block_verify(&b, &err), -1);
        cr_assert(strncmp(err.message, "segment block checksum mismatch", 31) == 0, "%s",
                  err.message);
        cr_assert_eq(format_block_open(&b, buf, len, true, &err), -1);
        padded++;
    }
    cr_assert_gt(padded, 0);
    free(buf);
    free(orig);
}

Test(format_corrupt, every_truncation)
{
    size_t len;
    uint8_t *orig = mixed_block(&len);
    for (size_t cut = 0; cut < len; cut++) {
        /* A fresh allocation of exactly cut bytes: ASan catches overreads. */
        uint8_t *buf = malloc(cut ? cut : 1);
        memcpy(buf, orig, cut);
        for (int verify = 0; verify < 2; verify++) {
            struct format_block b;
            struct format_error err = {{0}};
            cr_assert_eq(format_block_open(&b, buf, cut, verify, &err), -1, "prefix %zu opened",
                         cut);
            cr_assert_neq(err.message[0], '\0');
        }
        free(buf);
    }
    /* Extra bytes at the end break the trailer. */
    uint8_t *longer = calloc(1, len + 8);
    memcpy(longer, orig, len);
    struct format_block b;
    struct format_error err;
    cr_assert_eq(format_block_open(&b, longer, len + 8, true, &err), -1);
    free(longer);
    free(orig);
}

/* Every byte of the PFOR and DPFOR columns changed behind fixed checksums:
 * what decodes whole decodes the same in slices, what does not fails in
 * the slices that reach the column's end too, verify agrees, and nothing
 * reads outside the column (ASan). */
Test(format_corrupt, patched_columns_behind_fixed_checksums, .timeout = 60)
{
    size_t len;
    uint8_t *orig = mixed_block(&len);
    uint8_t *buf = malloc(len);
    int64_t all[300], part[300];
    int tried = 0, refused = 0;
    for (int col = 11; col <= 12; col++) {
        uint8_t *e = orig + 32 + 40 * col;
        uint32_t off, length, n;
        memcpy(&n, e + 8, 4);
        memcpy(&off, e + 12, 4);
        memcpy(&length, e + 16, 4);
        cr_assert_eq(e[5], col == 11 ? FORMAT_PFOR : FORMAT_DPFOR);
        for (uint32_t k = 0; k < length; k++) {
            for (int x = 0; x < 3; x++) {
                memcpy(buf, orig, len);
                buf[off + k] ^= (uint8_t)(x == 0 ? 1u << (k % 8) : x == 1 ? 0x80 : 0xFF);
                fix_column_checksum(buf, col);
                fix_trailer(buf, len);
                struct format_block b;
                struct format_error err = {{0}};
                cr_assert_eq(format_block_open(&b, buf, len, true, &err), 0, "%s", err.message);
                int whole = format_block_decode(&b, col, all, &err);
                if (whole)
                    cr_assert_neq(err.message[0], '\0');
                cr_assert_eq(format_block_verify(&b, &err), whole, "byte %u", k);
                static const uint32_t slices[][2] = {{0, 1}, {1, 5}, {127, 3}, {128, 1},
                                                     {140, 10}, {0, 150}, {149, 1}};
                for (size_t s = 0; s < sizeof slices / sizeof *slices; s++) {
                    uint32_t first = slices[s][0], count = slices[s][1];
                    if (first + count > n)
                        continue;
                    int rc = format_block_decode_range(&b, col, first, count, part, &err);
                    /* A slice reads the exception positions up to its end
                     * only: one before a damaged position may decode. */
                    if (!whole || first + count == n)
                        cr_assert_eq(rc, whole, "col %d byte %u slice [%u, +%u)", col, k,
                                     first, count);
                    if (!rc && !whole)
                        cr_assert_eq(memcmp(part, all + first, count * 8), 0,
                                     "col %d byte %u slice [%u, +%u)", col, k, first, count);
                }
                tried++;
                refused += whole != 0;
            }
        }
    }
    cr_assert_gt(tried, 100);
    cr_assert_gt(refused, 10);
    free(buf);
    free(orig);
}

/* Every byte of the RICE and DRICE columns changed behind fixed checksums:
 * nothing reads outside the column (ASan), every failure says why, what
 * verify accepts decodes whole, and what decodes whole (every anchor met
 * checked) decodes in slices to the same values. A whole decode may accept
 * what verify refuses (it does not check where the codes end). */
Test(format_corrupt, rice_columns_behind_fixed_checksums, .timeout = 60)
{
    size_t len;
    uint8_t *orig = mixed_block(&len);
    uint8_t *buf = malloc(len);
    int64_t all[300], part[300];
    int tried = 0, refused = 0;
    for (int col = 13; col <= 14; col++) {
        uint8_t *e = orig + 32 + 40 * col;
        uint32_t off, length, n;
        memcpy(&n, e + 8, 4);
        memcpy(&off, e + 12, 4);
        memcpy(&length, e + 16, 4);
        cr_assert_eq(e[5], col == 13 ? FORMAT_RICE : FORMAT_DRICE);
        for (uint32_t k = 0; k < length; k++) {
            for (int x = 0; x < 3; x++) {
                memcpy(buf, orig, len);
                buf[off + k] ^= (uint8_t)(x == 0 ? 1u << (k % 8) : x == 1 ? 0x80 : 0xFF);
                fix_column_checksum(buf, col);
                fix_trailer(buf, len);
                struct format_block b;
                struct format_error err = {{0}};
                cr_assert_eq(format_block_open(&b, buf, len, true, &err), 0, "%s", err.message);
                int whole = format_block_decode(&b, col, all, &err);
                if (whole)
                    cr_assert_neq(err.message[0], '\0');
                err.message[0] = '\0';
                int verified = format_block_verify(&b, &err);
                if (verified)
                    cr_assert_neq(err.message[0], '\0');
                if (verified == 0)
                    cr_assert_eq(whole, 0, "col %d byte %u: verified but does not decode", col,
                                 k);
                static const uint32_t slices[][2] = {{0, 1}, {1, 5}, {127, 3}, {128, 1},
                                                     {140, 10}, {0, 150}, {149, 1}, {256, 44}};
                for (size_t s = 0; s < sizeof slices / sizeof *slices; s++) {
                    uint32_t first = slices[s][0], count = slices[s][1];
                    if (first + count > n)
                        continue;
                    err.message[0] = '\0';
                    int rc = format_block_decode_range(&b, col, first, count, part, &err);
                    if (rc)
                        cr_assert_neq(err.message[0], '\0');
                    if (whole == 0) {
                        cr_assert_eq(rc, 0, "col %d byte %u slice [%u, +%u): %s", col, k, first,
                                     count, err.message);
                        cr_assert_eq(memcmp(part, all + first, count * 8), 0,
                                     "col %d byte %u slice [%u, +%u)", col, k, first, count);
                    }
                }
                tried++;
                refused += verified != 0;
            }
        }
    }
    cr_assert_gt(tried, 100);
    cr_assert_gt(refused, 10, "%d of %d refused", refused, tried);
    free(buf);
    free(orig);
}

/* A RICE block whose anchor names a remainder width above the directory's
 * (or past the stream) is refused, by a whole decode, a slice from it and
 * verify, with the reason, even behind fixed checksums. */
Test(format_corrupt, rice_anchor_width_and_offset)
{
    size_t len;
    uint8_t *orig = mixed_block(&len);
    uint8_t *buf = malloc(len);
    int64_t out[300];
    const int col = 14; /* DRICE, 300 values: anchors 0, 1, 2 */
    uint8_t *e = orig + 32 + 40 * col;
    uint32_t off;
    memcpy(&off, e + 12, 4);
    cr_assert_eq(e[5], FORMAT_DRICE);
    for (int anchor = 0; anchor < 3; anchor++) {
        for (int what = 0; what < 2; what++) {
            memcpy(buf, orig, len);
            uint8_t *a = buf + off + 8 + 4 * anchor;
            uint32_t word;
            memcpy(&word, a, 4);
            if (what == 0)
                word |= 31u << 27; /* width 31: over any directory's */
            else
                word = (word & ~((1u << 27) - 1)) | ((1u << 27) - 1); /* past the stream */
            memcpy(a, &word, 4);
            fix_column_checksum(buf, col);
            fix_trailer(buf, len);
            struct format_block b;
            struct format_error err = {{0}};
            cr_assert_eq(format_block_open(&b, buf, len, true, &err), 0, "%s", err.message);
            cr_assert_eq(format_block_decode(&b, col, out, &err), -1, "anchor %d", anchor);
            cr_assert(strstr(err.message, what == 0 ? "remainder width 31" : "anchor") != NULL,
                      "%s", err.message);
            cr_assert_eq(format_block_decode_range(&b, col, 128 * (uint32_t)anchor, 5, out, &err),
                         -1);
            cr_assert_eq(format_block_verify(&b, &err), -1);
        }
    }
    free(buf);
    free(orig);
}
