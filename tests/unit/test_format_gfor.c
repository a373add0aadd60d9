/* test_format_gfor.c -- the GFOR codec: every value read back by position
 * and by slice over the shapes it is for (a rollup's codes and running
 * rows, ascending within rows that start again) and the shapes it is not
 * (the whole 64-bit range); the SMALLEST policy's choice for seekable
 * columns; and hostile group tables: checks that name what is wrong, and
 * reads by position that never leave the block. */
#include "format/gfor.h"
#include "tests/unit/test_format_util.h"

#include <criterion/criterion.h>

/* n values of a rollup family's shape: rows of 1 to 400 ascending values
 * (codes spread over `spread`, or running rows: sums of small counts with
 * a heavy run now and then), starting again at each row. */
static void gen_rows(struct rng *r, int64_t *v, uint32_t n, bool running, uint64_t spread)
{
    uint32_t i = 0;
    while (i < n) {
        uint32_t len = 1 + (uint32_t)rng_below(r, 400);
        int64_t x = running ? 0 : (int64_t)rng_below(r, spread / 4 + 1);
        for (uint32_t k = 0; k < len && i < n; k++, i++) {
            uint64_t step = rng_below(r, 20) == 0 ? rng_below(r, 5000) : rng_below(r, 4);
            uint64_t gap = rng_below(r, 10) == 0 ? rng_below(r, spread / 64 + 1) : rng_below(r, 6);
            x += (int64_t)(running ? step : gap) + 1;
            v[i] = x;
        }
    }
}

/* The block of one column of v forced to codec (or AUTO), seekable. */
static uint8_t *encode(const int64_t *v, uint32_t n, int codec, size_t *len)
{
    struct format_column col = {.role = 1, .index = 2, .type = FORMAT_I64, .n = n,
                                .values = v, .seekable = true};
    struct format_block_info info = {0};
    size_t cap = format_block_bound(&col, 1);
    uint8_t *buf = malloc(cap);
    struct format_error err;
    cr_assert_eq(format_block_encode_codecs(&info, &col, 1, FORMAT_POLICY_SMALLEST, &codec, buf,
                                            cap, len, &err),
                 0, "%s", err.message);
    /* Exactly len bytes, so that ASan sees a load past the block. */
    uint8_t *exact = malloc(*len);
    memcpy(exact, buf, *len);
    free(buf);
    return exact;
}

/* Every value by format_seek_get, the whole column and slices by decode,
 * each equal to v; and verify passes. */
static void check_reads(const uint8_t *buf, size_t len, const int64_t *v, uint32_t n)
{
    struct format_block b;
    struct format_error err;
    cr_assert_eq(format_block_open(&b, buf, len, true, &err), 0, "%s", err.message);
    cr_assert_eq(format_block_verify(&b, &err), 0, "%s", err.message);
    struct format_seek s;
    cr_assert_eq(format_block_seek(&b, 0, true, &s, &err), 0, "%s", err.message);
    for (uint32_t i = 0; i < n; i++)
        cr_assert_eq(format_seek_get(&s, i), v[i], "value %u of %u", i, n);
    int64_t *out = malloc((size_t)n * 8 + 8);
    cr_assert_eq(format_block_decode(&b, 0, out, &err), 0, "%s", err.message);
    cr_assert_eq(memcmp(out, v, (size_t)n * 8), 0);
    uint32_t cuts[][2] = {{0, 1}, {31, 2}, {32, 32}, {33, 70}, {n / 3, n / 3}, {n - 1, 1}};
    for (size_t k = 0; k < sizeof cuts / sizeof *cuts; k++) {
        uint32_t first = cuts[k][0], count = cuts[k][1];
        if (n == 0 || (uint64_t)first + count > n)
            continue;
        cr_assert_eq(format_block_decode_range(&b, 0, first, count, out, &err), 0, "%s",
                     err.message);
        cr_assert_eq(memcmp(out, v + first, (size_t)count * 8), 0, "slice %u+%u", first, count);
    }
    free(out);
}

Test(format_gfor, every_value_reads_back)
{
    static const uint32_t sizes[] = {1, 2, 31, 32, 33, 63, 64, 65, 1000, 4097};
    struct rng r = {77};
    int64_t *v = malloc(4097 * 8);
    for (size_t s = 0; s < sizeof sizes / sizeof *sizes; s++) {
        uint32_t n = sizes[s];
        for (int shape = 0; shape < 6; shape++) {
            for (uint32_t i = 0; i < n; i++) {
                switch (shape) {
                case 0: /* constant: every width 0, an empty stream */
                    v[i] = -5;
                    break;
                case 1: /* the whole range: 64-bit minima and widths */
                    v[i] = i64_of(rng_next(&r));
                    break;
                case 2: /* the extremes side by side */
                    v[i] = i % 3 == 0 ? INT64_MIN : i % 3 == 1 ? INT64_MAX : 0;
                    break;
                default:
                    break;
                }
            }
            if (shape == 3)
                gen_rows(&r, v, n, false, 1 << 17);
            if (shape == 4)
                gen_rows(&r, v, n, true, 0);
            if (shape == 5) /* one wide group among narrow ones */
                for (uint32_t i = 0; i < n; i++)
                    v[i] = i / 32 == 1 ? i64_of(rng_next(&r)) : (int64_t)(i % 7);
            size_t len;
            uint8_t *buf = encode(v, n, FORMAT_GFOR, &len);
            check_reads(buf, len, v, n);
            free(buf);
        }
    }
    free(v);
}

/* A seekable column takes GFOR where it is smaller than BITPACK (a
 * rollup's rows) and BITPACK where it is not (values spread evenly), and
 * the rollups' shapes come out well under BITPACK's size. */
Test(format_gfor, seekable_columns_take_the_smaller)
{
    struct rng r = {5};
    enum { N = 20000 };
    int64_t *v = malloc(N * 8);
    for (int running = 0; running < 2; running++) {
        gen_rows(&r, v, N, running, 1 << 17);
        size_t lauto, lbp;
        uint8_t *a = encode(v, N, COLUMN_CODEC_AUTO, &lauto);
        uint8_t *bp = encode(v, N, FORMAT_BITPACK, &lbp);
        struct format_block b;
        struct format_error err;
        cr_assert_eq(format_block_open(&b, a, lauto, true, &err), 0);
        struct format_column_info ci;
        format_block_column(&b, 0, &ci);
        cr_assert_eq(ci.codec, FORMAT_GFOR, "picked %s", format_codec_name(ci.codec));
        cr_assert_lt(lauto * 10, lbp * 9, "gfor %zu bytes, bitpack %zu", lauto, lbp);
        check_reads(a, lauto, v, N);
        free(a);
        free(bp);
    }
    for (uint32_t i = 0; i < N; i++)
        v[i] = (int64_t)rng_below(&r, 1u << 20);
    size_t len;
    uint8_t *buf = encode(v, N, COLUMN_CODEC_AUTO, &len);
    struct format_block b;
    struct format_error err;
    cr_assert_eq(format_block_open(&b, buf, len, true, &err), 0);
    struct format_column_info ci;
    format_block_column(&b, 0, &ci);
    cr_assert_eq(ci.codec, FORMAT_BITPACK, "picked %s", format_codec_name(ci.codec));
    free(buf);
    /* Not seekable: GFOR is never tried. */
    gen_rows(&r, v, N, true, 0);
    struct format_column col = {.role = 1, .index = 2, .type = FORMAT_I64, .n = N, .values = v};
    size_t cap = format_block_bound(&col, 1);
    buf = malloc(cap);
    cr_assert_eq(format_block_encode(&(struct format_block_info){0}, &col, 1,
                                     FORMAT_POLICY_SMALLEST, buf, cap, &len, &err),
                 0);
    cr_assert_eq(format_block_open(&b, buf, len, true, &err), 0);
    format_block_column(&b, 0, &ci);
    cr_assert_neq(ci.codec, FORMAT_GFOR);
    free(buf);
    free(v);
}

/* The column's data within its block: one column, right after the
 * directory. */
enum { DATA = FORMAT_HEADER_BYTES + FORMAT_DIR_ENTRY_BYTES };

/* Checksums as a writer would have made them: the hostile bytes must be
 * caught by the codec's own checks, not by a hash. */
static void refresh(uint8_t *buf, size_t len)
{
    fix_column_checksum(buf, 0);
    fix_trailer(buf, len);
}

static void expect_verify(uint8_t *buf, size_t len, const char *want)
{
    refresh(buf, len);
    struct format_block b;
    struct format_error err;
    cr_assert_eq(format_block_open(&b, buf, len, false, &err), 0, "%s", err.message);
    cr_assert_eq(format_block_verify(&b, &err), -1, "verify passed; wanted %s", want);
    cr_assert(strstr(err.message, want), "%s; wanted %s", err.message, want);
}

/* Reads every value by position and by decode: whatever the table says,
 * no load leaves the exact-size block (ASan), and decode either fails with
 * a message or decodes. */
static void read_everything(const uint8_t *buf, size_t len, uint32_t n)
{
    struct format_block b;
    struct format_error err;
    if (format_block_open(&b, buf, len, false, &err) < 0)
        return;
    struct format_seek s;
    int64_t sink = 0, *out = malloc((size_t)n * 8);
    if (format_block_seek(&b, 0, false, &s, &err) == 0)
        for (uint32_t i = 0; i < n; i++)
            sink ^= format_seek_get(&s, i);
    if (format_block_decode_slice(&b, 0, 0, n, false, out, &err) < 0)
        cr_assert(err.message[0]);
    __asm__ volatile("" : : "r"(sink));
    free(out);
}

Test(format_gfor, hostile_tables)
{
    struct rng r = {9};
    enum { N = 200 };
    int64_t v[N];
    gen_rows(&r, v, N, true, 0);
    size_t len;
    uint8_t *orig = encode(v, N, FORMAT_GFOR, &len), *buf = malloc(len);
    const unsigned abits = orig[FORMAT_HEADER_BYTES + 6];
    uint32_t offset;
    memcpy(&offset, orig + FORMAT_HEADER_BYTES + 12, 4);
    cr_assert_eq(offset, DATA);
    const unsigned pbits = orig[DATA];
    const unsigned ebits = abits + 8 + pbits;

    memcpy(buf, orig, len);
    buf[DATA] = 36;
    expect_verify(buf, len, "gfor position width 36 exceeds 35");
    memcpy(buf, orig, len);
    buf[DATA + 3] = 1;
    expect_verify(buf, len, "gfor header has reserved bytes set");
    /* Group 1's width field (bits abits .. abits + 6 of entry 1) set to 127. */
    memcpy(buf, orig, len);
    for (unsigned k = 0; k < 7; k++) {
        uint64_t bit = ebits + abits + k;
        buf[DATA + 8 + bit / 8] |= (uint8_t)(1u << (bit % 8));
    }
    expect_verify(buf, len, "gfor group 1 has width 127");
    read_everything(buf, len, N);
    /* Group 2's position off by one. */
    memcpy(buf, orig, len);
    uint64_t bit = 2 * (uint64_t)ebits + abits + 8;
    buf[DATA + 8 + bit / 8] ^= (uint8_t)(1u << (bit % 8));
    expect_verify(buf, len, "gfor group 2 starts at stream bit");
    read_everything(buf, len, N);
    /* Group 3's flag flipped: running rows ascend, so it was set. */
    memcpy(buf, orig, len);
    bit = 3 * (uint64_t)ebits + abits + 7;
    cr_assert(buf[DATA + 8 + bit / 8] & (1u << (bit % 8)));
    buf[DATA + 8 + bit / 8] ^= (uint8_t)(1u << (bit % 8));
    expect_verify(buf, len, "gfor group 3's flag says its first value is not its smallest");
    read_everything(buf, len, N);
    /* Group 3's first value (its smallest: running rows ascend) raised by
     * one: none of its values is its minimum any more. */
    memcpy(buf, orig, len);
    uint64_t pos = 0, table = (7 * (uint64_t)ebits + 7) / 8;
    for (unsigned k = 0; k < pbits; k++) {
        bit = 3 * (uint64_t)ebits + abits + 8 + k;
        pos |= (uint64_t)((buf[DATA + 8 + bit / 8] >> (bit % 8)) & 1) << k;
    }
    cr_assert_eq(buf[DATA + 8 + table + pos / 8] >> (pos % 8) & 1, 0);
    buf[DATA + 8 + table + pos / 8] ^= (uint8_t)(1u << (pos % 8));
    expect_verify(buf, len, "gfor group 3's values lie above its minimum");
    /* Random tables: never a load outside the block. */
    for (int round = 0; round < 2000; round++) {
        memcpy(buf, orig, len);
        unsigned table = (unsigned)((7 * ebits + 7) / 8);
        for (int k = 0; k < 4; k++)
            buf[DATA + 8 + rng_below(&r, table)] = (uint8_t)rng_next(&r);
        refresh(buf, len);
        read_everything(buf, len, N);
    }
    free(buf);
    free(orig);
}

/* format_seek_upper over GFOR against a linear scan: ranges inside the
 * ascending stretches of a rollup's codes and running rows (whose groups
 * straddle the stretches' ends), values below, inside and above them. */
Test(format_gfor, upper_finds_what_a_scan_finds)
{
    struct rng r = {31};
    enum { N = 5000 };
    int64_t *v = malloc(N * 8);
    for (int running = 0; running < 2; running++) {
        gen_rows(&r, v, N, running, 1 << 17);
        size_t len;
        uint8_t *buf = encode(v, N, FORMAT_GFOR, &len);
        struct format_block b;
        struct format_error err;
        cr_assert_eq(format_block_open(&b, buf, len, true, &err), 0);
        struct format_seek s, bp = format_seek_array(v, N);
        cr_assert_eq(format_block_seek(&b, 0, true, &s, &err), 0, "%s", err.message);
        for (int t = 0; t < 20000; t++) {
            uint32_t lo = (uint32_t)rng_below(&r, N), hi = lo;
            while (hi < N && (hi == lo || v[hi] >= v[hi - 1]) && rng_below(&r, 300))
                hi++;
            int64_t x = lo == hi ? 0 : v[lo] + (int64_t)rng_below(&r, (uint64_t)(v[hi - 1] - v[lo]) + 3) - 1;
            uint32_t want = lo;
            while (want < hi && v[want] <= x)
                want++;
            cr_assert_eq(format_seek_upper(&s, lo, hi, x), want, "[%u, %u) v %lld", lo, hi,
                         (long long)x);
            cr_assert_eq(format_seek_upper(&bp, lo, hi, x), want);
        }
        free(buf);
    }
    free(v);
}
