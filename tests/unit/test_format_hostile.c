/* test_format_hostile.c -- hand-built blocks that lie about themselves.
 *
 * Each case edits one field of a valid block and recomputes the checksums,
 * so the trailer check passes and the lie has to be caught by the structural
 * checks; each gets its own exact message. */
#include "tests/unit/test_format_util.h"

#include <criterion/criterion.h>
#include <stdio.h>

/* Directory entry field offsets (see format/block.c). */
enum { E_ROLE = 0, E_INDEX = 2, E_TYPE = 4, E_CODEC = 5, E_BITS = 6, E_RES1 = 7, E_N = 8,
       E_OFFSET = 12, E_LENGTH = 16, E_RES2 = 20, E_BASE = 24, E_CHECKSUM = 32 };

static const int64_t raw4[4] = {10, -20, 30, INT64_MIN};
static int64_t lz10[10];

/* Column 0: i64 RAW n 4 (role 1, index 2), at 112, 32 bytes.
 * Column 1: i64 LZ4 n 10 (role 5, index 6), at 144. */
static uint8_t *base_block(size_t *len)
{
    for (int i = 0; i < 10; i++)
        lz10[i] = 0x1111111111111111ll;
    struct format_column cols[] = {{1, 2, FORMAT_I64, 4, raw4, false, false}, {5, 6, FORMAT_I64, 10, lz10, false, false}};
    int codecs[] = {FORMAT_RAW, FORMAT_LZ4};
    struct format_block_info info = {.span_start = 0, .width = 1, .ncells = 4};
    uint8_t *buf = encode_block(&info, cols, 2, FORMAT_POLICY_SMALLEST, codecs, len);
    uint32_t off;
    memcpy(&off, buf + 32 + E_OFFSET, 4);
    cr_assert_eq(off, 112);
    memcpy(&off, buf + 72 + E_OFFSET, 4);
    cr_assert_eq(off, 144);
    cr_assert_eq(buf[72 + E_CODEC], FORMAT_LZ4);
    return buf;
}

static uint8_t *entry(uint8_t *buf, int i) { return buf + 32 + 40 * i; }
static void put8(uint8_t *p, uint8_t v) { *p = v; }
static void put16(uint8_t *p, uint16_t v) { memcpy(p, &v, 2); }
static void put32(uint8_t *p, uint32_t v) { memcpy(p, &v, 4); }
static void put64(uint8_t *p, uint64_t v) { memcpy(p, &v, 8); }

static uint32_t lz_length(uint8_t *buf)
{
    uint32_t l;
    memcpy(&l, entry(buf, 1) + E_LENGTH, 4);
    return l;
}

/* The block must fail to open (with and without the trailer check, the
 * trailer being fixed first) with exactly this message. */
static void expect_open(uint8_t *buf, size_t len, const char *message)
{
    if (len >= 8)
        fix_trailer(buf, len);
    for (int verify = 0; verify < 2; verify++) {
        struct format_block b;
        struct format_error err = {{0}};
        cr_assert_eq(format_block_open(&b, buf, len, verify, &err), -1, "opened: want %s",
                     message);
        cr_assert_str_eq(err.message, message);
    }
}

#define EXPECT_OPEN(edit, message)                                                          \
    do {                                                                                    \
        size_t len_;                                                                        \
        uint8_t *buf = base_block(&len_);                                                   \
        edit;                                                                               \
        expect_open(buf, len_, message);                                                    \
        free(buf);                                                                          \
    } while (0)

Test(format_hostile, header)
{
    size_t len;
    uint8_t *buf = base_block(&len);
    cr_assert_eq(len, 144 + ((lz_length(buf) + 7) & ~7u) + 8);
    free(buf);

    EXPECT_OPEN(put16(buf + 4, 7),
                "segment block has format version 7; this build reads version 6");
    EXPECT_OPEN(put16(buf + 4, 0),
                "segment block has format version 0; this build reads version 6");
    EXPECT_OPEN(memcpy(buf, "XXXX", 4),
                "not a segment block (magic 58585858, expected 42525453)");
    EXPECT_OPEN(put16(buf + 6, 5000),
                "segment block has 5000 columns, more than the limit of 4096");
    EXPECT_OPEN(put16(buf + 6, 4096),
                "segment block is truncated: 168 bytes, less than the 163880 its directory of "
                "4096 columns needs");
    EXPECT_OPEN(len_ = 39,
                "segment block is truncated: 39 bytes, less than its header and trailer (40)");
    EXPECT_OPEN(len_ = 0,
                "segment block is truncated: 0 bytes, less than its header and trailer (40)");
    EXPECT_OPEN(len_ = 41, "segment block length 41 is not a multiple of 8");
    EXPECT_OPEN(len_ = 104,
                "segment block is truncated: 104 bytes, less than the 120 its directory of 2 "
                "columns needs");

    struct format_block b;
    struct format_error err;
    cr_assert_eq(format_block_open(&b, NULL, 100, false, &err), -1);
    cr_assert_str_eq(err.message,
                     "segment block is truncated: 0 bytes, less than its header and trailer (40)");
}

/* Opens without the trailer check (as the store's readers do) and with it:
 * both must refuse a block whose header or directory changed behind the
 * directory checksum, before trusting any of it. */
static void expect_directory_corrupt(uint8_t *buf, size_t len)
{
    fix_trailer_only(buf, len);
    for (int verify = 0; verify < 2; verify++) {
        struct format_block b;
        struct format_error err = {{0}};
        cr_assert_eq(format_block_open(&b, buf, len, verify, &err), -1);
        cr_assert(strncmp(err.message, "segment block header or directory is corrupt (checksum ",
                          55) == 0, "%s", err.message);
    }
}

Test(format_hostile, directory_checksum)
{
    size_t len;
    uint8_t *buf = base_block(&len);
    put32(buf + 12, ~0u); /* the checksum itself */
    expect_directory_corrupt(buf, len);
    free(buf);

    /* Fields no structural check can doubt: a role, a cell count, a
     * column checksum (caught later anyway), the span. */
    buf = base_block(&len);
    put16(entry(buf, 0) + E_ROLE, 3);
    expect_directory_corrupt(buf, len);
    free(buf);
    buf = base_block(&len);
    put32(buf + 8, 5);
    expect_directory_corrupt(buf, len);
    free(buf);
    buf = base_block(&len);
    buf[16] ^= 1;
    expect_directory_corrupt(buf, len);
    free(buf);
}

/* The fuzz_segment finding: one byte of a BITPACK column's base changed
 * every value it decodes to, and neither the column's checksum (over its
 * packed bytes) nor any structural check could see it; a reader (which
 * skips the trailer) answered with wrong sums. Format 2's directory
 * checksum refuses the block. */
Test(format_hostile, bitpack_base_changed_behind_the_checksums)
{
    static const int64_t vals[6] = {1000, 1003, 1001, 1007, 1000, 1002};
    struct format_column col = {4, 2, FORMAT_I64, 6, vals, false, false};
    int codec = FORMAT_BITPACK;
    struct format_block_info info = {.span_start = 0, .width = 1, .ncells = 6};
    size_t len;
    uint8_t *buf = encode_block(&info, &col, 1, FORMAT_POLICY_SMALLEST, &codec, &len);
    cr_assert_eq(buf[32 + E_CODEC], FORMAT_BITPACK);
    buf[32 + E_BASE + 1] ^= 0x10; /* base 1000 becomes 5096 */
    expect_directory_corrupt(buf, len);
    /* Format 1 read it: the same edit with the directory checksum fixed up
     * opens and decodes to other numbers, which is why it must be checked. */
    fix_trailer(buf, len);
    struct format_block b;
    struct format_error err;
    cr_assert_eq(format_block_open(&b, buf, len, false, &err), 0, "%s", err.message);
    int64_t out[6];
    cr_assert_eq(format_block_decode(&b, 0, out, &err), 0, "%s", err.message);
    cr_assert_eq(out[0], 5096);
    free(buf);
}

Test(format_hostile, trailer)
{
    size_t len;
    uint8_t *buf = base_block(&len);
    buf[len - 1] ^= 0x40;
    struct format_block b;
    struct format_error err;
    cr_assert_eq(format_block_open(&b, buf, len, true, &err), -1);
    cr_assert(strncmp(err.message, "segment block checksum mismatch (stored ", 40) == 0, "%s",
              err.message);
    cr_assert_eq(format_block_open(&b, buf, len, false, &err), 0);
    cr_assert_eq(format_block_verify(&b, &err), -1);
    cr_assert(strncmp(err.message, "segment block checksum mismatch (stored ", 40) == 0);
    free(buf);
}

Test(format_hostile, counts)
{
    EXPECT_OPEN(put32(entry(buf, 0) + E_N, FORMAT_MAX_VALUES + 1),
                "column 0 (role 1, index 2): 268435457 values exceed the limit of 268435456");
    EXPECT_OPEN(put32(entry(buf, 1) + E_N, UINT32_MAX),
                "column 1 (role 5, index 6): 4294967295 values exceed the limit of 268435456");
    EXPECT_OPEN(put32(entry(buf, 0) + E_N, FORMAT_MAX_VALUES),
                "column 0 (role 1, index 2): raw length 32 does not match 268435456 i64 values "
                "(2147483648 bytes)");
    EXPECT_OPEN(put32(entry(buf, 0) + E_N, 5),
                "column 0 (role 1, index 2): raw length 32 does not match 5 i64 values "
                "(40 bytes)");
    EXPECT_OPEN(put8(entry(buf, 0) + E_TYPE, FORMAT_I128),
                "column 0 (role 1, index 2): raw length 32 does not match 4 i128 values "
                "(64 bytes)");
}

Test(format_hostile, bounds)
{
    EXPECT_OPEN(put32(entry(buf, 0) + E_OFFSET, 1000),
                "column 0 (role 1, index 2): bytes 1000..1032 lie outside the data area 112..160");
    /* 32-bit offset + length would wrap to 16. */
    EXPECT_OPEN(put32(entry(buf, 0) + E_OFFSET, 0xFFFFFFF0u),
                "column 0 (role 1, index 2): bytes 4294967280..4294967312 lie outside the data "
                "area 112..160");
    EXPECT_OPEN(put32(entry(buf, 0) + E_OFFSET, 40),
                "column 0 (role 1, index 2): bytes 40..72 lie outside the data area 112..160");
    EXPECT_OPEN(put32(entry(buf, 0) + E_OFFSET, 0),
                "column 0 (role 1, index 2): bytes 0..32 lie outside the data area 112..160");
    EXPECT_OPEN(put32(entry(buf, 0) + E_OFFSET, 113),
                "column 0 (role 1, index 2): offset 113 is not 8-byte aligned");
    EXPECT_OPEN(put32(entry(buf, 0) + E_OFFSET, 144),
                "column 0 (role 1, index 2): bytes 144..176 lie outside the data area 112..160");
    EXPECT_OPEN(put32(entry(buf, 0) + E_LENGTH, UINT32_MAX),
                "column 0 (role 1, index 2): raw length 4294967295 does not match 4 i64 values "
                "(32 bytes)");
    /* A length that matches its count but not the block. */
    EXPECT_OPEN((put8(entry(buf, 0) + E_CODEC, FORMAT_BITPACK), put8(entry(buf, 0) + E_BITS, 64),
                 put32(entry(buf, 0) + E_N, FORMAT_MAX_VALUES),
                 put32(entry(buf, 0) + E_LENGTH, 0x80000000u)),
                "column 0 (role 1, index 2): bytes 112..2147483760 lie outside the data area "
                "112..160");
    /* A zero-length column may sit right at the end of the data area, not past it. */
    EXPECT_OPEN((put32(entry(buf, 0) + E_N, 0), put32(entry(buf, 0) + E_LENGTH, 0),
                 put32(entry(buf, 0) + E_OFFSET, 168)),
                "column 0 (role 1, index 2): bytes 168..168 lie outside the data area 112..160");
}

Test(format_hostile, empty_column_at_the_end)
{
    size_t len;
    uint8_t *buf = base_block(&len);
    put32(entry(buf, 0) + E_N, 0);
    put32(entry(buf, 0) + E_LENGTH, 0);
    put32(entry(buf, 0) + E_OFFSET, (uint32_t)len - 8);
    fix_column_checksum(buf, 0);
    fix_trailer(buf, len);
    struct format_block b;
    struct format_error err;
    cr_assert_eq(format_block_open(&b, buf, len, true, &err), 0, "%s", err.message);
    cr_assert_eq(format_block_verify(&b, &err), 0, "%s", err.message);
    cr_assert_eq(format_block_decode(&b, 0, NULL, &err), 0, "%s", err.message);
    cr_assert_not_null(format_block_raw(&b, 0, true, &err));
    free(buf);
}

Test(format_hostile, codecs_and_types)
{
    EXPECT_OPEN(put8(entry(buf, 0) + E_CODEC, 9), "column 0 (role 1, index 2): unknown codec 9");
    EXPECT_OPEN(put8(entry(buf, 1) + E_CODEC, 255),
                "column 1 (role 5, index 6): unknown codec 255");
    EXPECT_OPEN(put8(entry(buf, 0) + E_TYPE, 4), "column 0 (role 1, index 2): unknown type 4");
    EXPECT_OPEN(put8(entry(buf, 0) + E_TYPE, 0), "column 0 (role 1, index 2): unknown type 0");
    EXPECT_OPEN((put8(entry(buf, 0) + E_TYPE, FORMAT_F64), put8(entry(buf, 0) + E_CODEC, 2)),
                "column 0 (role 1, index 2): codec delta is not valid for f64 columns");
    EXPECT_OPEN((put8(entry(buf, 0) + E_TYPE, FORMAT_F64), put8(entry(buf, 0) + E_CODEC, 1)),
                "column 0 (role 1, index 2): codec bitpack is not valid for f64 columns");
    EXPECT_OPEN((put8(entry(buf, 0) + E_TYPE, FORMAT_I128), put8(entry(buf, 0) + E_CODEC, 2)),
                "column 0 (role 1, index 2): codec delta is not valid for i128 columns");
    EXPECT_OPEN(put8(entry(buf, 0) + E_BITS, 3),
                "column 0 (role 1, index 2): codec raw has bit width 3; expected 0");
    EXPECT_OPEN(put64(entry(buf, 0) + E_BASE, 5),
                "column 0 (role 1, index 2): codec raw has base 5; expected 0");
    EXPECT_OPEN(put64(entry(buf, 1) + E_BASE, (uint64_t)-1),
                "column 1 (role 5, index 6): codec lz4 has base -1; expected 0");
    EXPECT_OPEN(put8(entry(buf, 0) + E_RES1, 1), "column 0 (role 1, index 2): reserved bytes set");
    EXPECT_OPEN(put32(entry(buf, 1) + E_RES2, 1 << 20),
                "column 1 (role 5, index 6): reserved bytes set");
    EXPECT_OPEN((put8(entry(buf, 0) + E_CODEC, FORMAT_BITPACK), put8(entry(buf, 0) + E_BITS, 200)),
                "column 0 (role 1, index 2): bit width 200 exceeds 64");
    EXPECT_OPEN((put8(entry(buf, 0) + E_CODEC, FORMAT_DELTA), put8(entry(buf, 0) + E_BITS, 65)),
                "column 0 (role 1, index 2): bit width 65 exceeds 64");
    EXPECT_OPEN((put8(entry(buf, 0) + E_CODEC, FORMAT_BITPACK), put8(entry(buf, 0) + E_BITS, 8)),
                "column 0 (role 1, index 2): bitpack length 32 does not match 4 values of 8 bits "
                "(4 bytes)");
    EXPECT_OPEN((put8(entry(buf, 0) + E_CODEC, FORMAT_DELTA), put8(entry(buf, 0) + E_BITS, 10)),
                "column 0 (role 1, index 2): delta length 32 does not match 4 values of 10 bits "
                "(12 bytes)");
    EXPECT_OPEN((put8(entry(buf, 0) + E_CODEC, FORMAT_DELTA), put32(entry(buf, 0) + E_N, 0)),
                "column 0 (role 1, index 2): delta length 32 does not match 0 values of 0 bits "
                "(0 bytes)");
}

Test(format_hostile, lz4_lies)
{
    size_t len;
    uint8_t *buf = base_block(&len);
    uint32_t l = lz_length(buf);
    free(buf);
    char want[200];

    snprintf(want, sizeof want,
             "column 1 (role 5, index 6): lz4 length %u cannot hold 100000 i64 values "
             "(800000 bytes)", l);
    EXPECT_OPEN(put32(entry(buf, 1) + E_N, 100000), want);
    EXPECT_OPEN((put8(entry(buf, 1) + E_TYPE, FORMAT_I128),
                 put32(entry(buf, 1) + E_N, FORMAT_MAX_VALUES)),
                "column 1 (role 5, index 6): 4294967296 bytes are too many for lz4");
    EXPECT_OPEN(put32(entry(buf, 1) + E_LENGTH, 0),
                "column 1 (role 5, index 6): lz4 length 0 cannot hold 10 i64 values (80 bytes)");
    EXPECT_OPEN(put8(entry(buf, 1) + E_BITS, 1),
                "column 1 (role 5, index 6): codec lz4 has bit width 1; expected 0");
}

/* Lies only decoding can catch: checksums are fixed, structure is fine. */
static void expect_decode(uint8_t *buf, size_t len, int col, const char *message)
{
    fix_column_checksum(buf, col);
    fix_trailer(buf, len);
    struct format_block b;
    struct format_error err = {{0}};
    cr_assert_eq(format_block_open(&b, buf, len, true, &err), 0, "%s", err.message);
    uint8_t out[4096];
    cr_assert_eq(format_block_decode(&b, col, out, &err), -1);
    cr_assert_str_eq(err.message, message);
    err.message[0] = '\0';
    cr_assert_eq(format_block_verify(&b, &err), -1);
    cr_assert_str_eq(err.message, message);
}

Test(format_hostile, lz4_streams)
{
    size_t len;
    uint8_t *buf = base_block(&len);
    uint32_t l = lz_length(buf);
    memset(buf + 144, 0xFF, l);
    expect_decode(buf, len, 1, "column 1 (role 5, index 6): lz4 data is corrupt");
    free(buf);

    /* A valid stream of 80 bytes claimed to hold 11 values, or 9. */
    buf = base_block(&len);
    put32(entry(buf, 1) + E_N, 11);
    expect_decode(buf, len, 1, "column 1 (role 5, index 6): lz4 data decodes to 80 bytes, "
                               "expected 88");
    free(buf);
    buf = base_block(&len);
    put32(entry(buf, 1) + E_N, 9);
    expect_decode(buf, len, 1, "column 1 (role 5, index 6): lz4 data is corrupt");
    free(buf);
}

/* Legal but extreme: 2^28 equal values in zero bytes. Opens and verifies
 * without allocating anything. */
Test(format_hostile, huge_constant_column)
{
    size_t len;
    uint8_t *buf = base_block(&len);
    uint8_t *e = entry(buf, 0);
    put8(e + E_CODEC, FORMAT_BITPACK);
    put8(e + E_BITS, 0);
    put32(e + E_N, FORMAT_MAX_VALUES);
    put32(e + E_LENGTH, 0);
    put64(e + E_BASE, (uint64_t)INT64_MIN);
    fix_column_checksum(buf, 0);
    fix_trailer(buf, len);
    struct format_block b;
    struct format_error err;
    cr_assert_eq(format_block_open(&b, buf, len, true, &err), 0, "%s", err.message);
    cr_assert_eq(format_block_verify(&b, &err), 0, "%s", err.message);
    struct format_column_info ci;
    format_block_column(&b, 0, &ci);
    cr_assert_eq(ci.n, FORMAT_MAX_VALUES);
    cr_assert_eq(ci.bits, 0);
    free(buf);
}

/* Garbage bit-packed and delta bytes decode (wrapping, no UB) to something. */
Test(format_hostile, wrapping_garbage)
{
    size_t len;
    uint8_t *buf = base_block(&len);
    uint8_t *e = entry(buf, 0);
    /* DELTA, n 4, 64 bits: dmin then 3 deltas, all 0xFF.. / 0x7F.. */
    put8(e + E_CODEC, FORMAT_DELTA);
    put8(e + E_BITS, 64);
    put64(e + E_BASE, (uint64_t)INT64_MAX);
    put64(buf + 112, (uint64_t)INT64_MAX);
    put64(buf + 120, UINT64_MAX);
    put64(buf + 128, (uint64_t)INT64_MAX);
    put64(buf + 136, (uint64_t)INT64_MIN);
    fix_column_checksum(buf, 0);
    fix_trailer(buf, len);
    struct format_block b;
    struct format_error err;
    cr_assert_eq(format_block_open(&b, buf, len, true, &err), 0, "%s", err.message);
    int64_t out[4];
    cr_assert_eq(format_block_decode(&b, 0, out, &err), 0, "%s", err.message);
    cr_assert_eq(out[0], INT64_MAX);
    cr_assert_eq(out[1], -3); /* INT64_MAX + INT64_MAX + (2^64 - 1), wrapped */
    cr_assert_eq(out[2], -5); /* -3 + INT64_MAX + INT64_MAX, wrapped */
    cr_assert_eq(out[3], -6); /* -5 + INT64_MAX + INT64_MIN */
    /* BITPACK at 64 bits from INT64_MAX: wraps too. */
    put8(e + E_CODEC, FORMAT_BITPACK);
    put32(e + E_N, 4);
    fix_column_checksum(buf, 0);
    fix_trailer(buf, len);
    cr_assert_eq(format_block_open(&b, buf, len, true, &err), 0, "%s", err.message);
    cr_assert_eq(format_block_decode(&b, 0, out, &err), 0, "%s", err.message);
    cr_assert_eq(out[0], -2); /* INT64_MAX + INT64_MAX */
    cr_assert_eq(out[1], INT64_MAX - 1);
    /* I128 BITPACK from a base of INT64_MIN. */
    put8(e + E_TYPE, FORMAT_I128);
    put32(e + E_N, 4);
    put64(e + E_BASE, (uint64_t)INT64_MIN);
    fix_column_checksum(buf, 0);
    fix_trailer(buf, len);
    cr_assert_eq(format_block_open(&b, buf, len, true, &err), 0, "%s", err.message);
    i128 o128[4];
    cr_assert_eq(format_block_decode(&b, 0, o128, &err), 0, "%s", err.message);
    cr_assert(o128[0] == -1);
    cr_assert(o128[1] == (i128)INT64_MIN + (i128)UINT64_MAX);
    free(buf);
}

Test(format_hostile, column_lookups)
{
    size_t len;
    uint8_t *buf = base_block(&len);
    struct format_block b;
    struct format_error err;
    cr_assert_eq(format_block_open(&b, buf, len, true, &err), 0);
    uint8_t out[256];
    cr_assert_eq(format_block_decode(&b, 2, out, &err), -1);
    cr_assert_str_eq(err.message, "column 2 does not exist; the block has 2");
    cr_assert_eq(format_block_decode(&b, -1, out, &err), -1);
    cr_assert_str_eq(err.message, "column -1 does not exist; the block has 2");
    cr_assert_null(format_block_raw(&b, 7, true, &err));
    cr_assert_str_eq(err.message, "column 7 does not exist; the block has 2");
    cr_assert_null(format_block_raw(&b, 1, false, &err));
    cr_assert_str_eq(err.message, "column 1 (role 5, index 6): codec lz4 is not raw; decode the "
                                  "column");
    struct format_column_info ci;
    format_block_column(&b, 5, &ci);
    cr_assert_eq(ci.n, 0);
    cr_assert_eq(ci.length, 0);

    /* An unopened block verifies as nothing. */
    struct format_block none;
    memset(&none, 0, sizeof none);
    cr_assert_eq(format_block_verify(&none, &err), -1);
    cr_assert_str_eq(err.message, "segment block is not open");
    free(buf);
}

/* ---- PFOR and DPFOR: exception lists that lie ------------------------------- */

/* One PFOR column of 10 values, base 1, 0 bits, at byte 72:
 *   72  u32 nexc 2, u8 xbits 13, 3 zero bytes
 *   80  positions 3 and 8 at 4 bits (one byte, 0x83)
 *   81  high parts 999 and 4999 at 13 bits (4 bytes)          length 13
 * One DPFOR column of 300 values (role 2), ascending by 1 within stretches
 * of 50: exceptions at 0, 50, 100, 128, 150, 200, 250, 256 (the anchors
 * every 128 and the resets). */
static const int64_t pf10[10] = {1, 1, 1, 1000, 1, 1, 1, 1, 5000, 1};
static int64_t dp300[300];

static uint8_t *patched_block(size_t *len)
{
    for (int i = 0; i < 300; i++)
        dp300[i] = 1000 * (i / 50) % 3000 + i % 50;
    struct format_column cols[] = {{1, 0, FORMAT_I64, 10, pf10, false, false}, {2, 0, FORMAT_I64, 300, dp300, false, false}};
    int codecs[] = {FORMAT_PFOR, FORMAT_DPFOR};
    struct format_block_info info = {.span_start = 0, .width = 1, .ncells = 10};
    uint8_t *buf = encode_block(&info, cols, 2, FORMAT_POLICY_SMALLEST, codecs, len);
    uint32_t off, length, nexc;
    memcpy(&off, entry(buf, 0) + E_OFFSET, 4);
    memcpy(&length, entry(buf, 0) + E_LENGTH, 4);
    cr_assert_eq(off, 112);
    cr_assert_eq(length, 13);
    cr_assert_eq(entry(buf, 0)[E_BITS], 0);
    memcpy(&nexc, buf + 112, 4);
    cr_assert_eq(nexc, 2);
    cr_assert_eq(buf[116], 13);
    cr_assert_eq(buf[120], 0x83);
    memcpy(&off, entry(buf, 1) + E_OFFSET, 4);
    cr_assert_eq(off, 128);
    memcpy(&nexc, buf + 128, 4);
    cr_assert_eq(nexc, 8);
    return buf;
}

/* Every way of reading the whole column must fail with exactly this
 * message: decode whole, decode a slice that reaches its end (even one
 * without exceptions in it), and verify (which allocates nothing for these
 * codecs). */
static void expect_patched(uint8_t *buf, size_t len, int col, const char *message)
{
    fix_column_checksum(buf, col);
    fix_trailer(buf, len);
    struct format_block b;
    struct format_error err = {{0}};
    cr_assert_eq(format_block_open(&b, buf, len, true, &err), 0, "%s", err.message);
    int64_t out[300];
    cr_assert_eq(format_block_decode(&b, col, out, &err), -1, "decoded: want %s", message);
    cr_assert_str_eq(err.message, message);
    err.message[0] = '\0';
    /* A slice that reaches the column's end reads every position. */
    uint32_t n = col == 0 ? 10 : 300;
    cr_assert_eq(format_block_decode_range(&b, col, n - 1, 1, out, &err), -1);
    cr_assert_str_eq(err.message, message);
    err.message[0] = '\0';
    cr_assert_eq(format_block_decode_range(&b, col, 0, n, out, &err), -1);
    cr_assert_str_eq(err.message, message);
    err.message[0] = '\0';
    cr_assert_eq(format_block_verify(&b, &err), -1);
    cr_assert_str_eq(err.message, message);
}

#define EXPECT_PATCHED(col, edit, message)                                                   \
    do {                                                                                    \
        size_t len_;                                                                        \
        uint8_t *buf = patched_block(&len_);                                                \
        edit;                                                                               \
        expect_patched(buf, len_, col, message);                                            \
        free(buf);                                                                          \
    } while (0)

Test(format_hostile, patched_intact)
{
    size_t len;
    uint8_t *buf = patched_block(&len);
    struct format_block b;
    struct format_error err;
    cr_assert_eq(format_block_open(&b, buf, len, true, &err), 0, "%s", err.message);
    cr_assert_eq(format_block_verify(&b, &err), 0, "%s", err.message);
    int64_t out[300];
    cr_assert_eq(format_block_decode(&b, 0, out, &err), 0, "%s", err.message);
    cr_assert_eq(memcmp(out, pf10, sizeof pf10), 0);
    cr_assert_eq(format_block_decode(&b, 1, out, &err), 0, "%s", err.message);
    cr_assert_eq(memcmp(out, dp300, sizeof dp300), 0);
    cr_assert_eq(format_block_decode_range(&b, 1, 299, 1, out, &err), 0, "%s", err.message);
    cr_assert_eq(out[0], dp300[299]);
    free(buf);
}

Test(format_hostile, pfor_lies)
{
    EXPECT_PATCHED(0, put8(buf + 120, 0x38),
                   "column 0 (role 1, index 0): pfor exception positions not ascending "
                   "(3 after 8)");
    EXPECT_PATCHED(0, put8(buf + 120, 0x33),
                   "column 0 (role 1, index 0): pfor exception positions not ascending "
                   "(3 after 3)");
    EXPECT_PATCHED(0, put8(buf + 120, 0xA3),
                   "column 0 (role 1, index 0): pfor exception 1 at position 10 of 10 values");
    EXPECT_PATCHED(0, put8(buf + 120, 0xF3),
                   "column 0 (role 1, index 0): pfor exception 1 at position 15 of 10 values");
    EXPECT_PATCHED(0, put32(buf + 112, 11),
                   "column 0 (role 1, index 0): pfor has 11 exceptions in 10 values");
    EXPECT_PATCHED(0, put32(buf + 112, 3),
                   "column 0 (role 1, index 0): pfor length 13 does not match 10 values of 0 "
                   "bits and 3 exceptions (15 bytes)");
    EXPECT_PATCHED(0, put32(buf + 112, 0xFFFFFFFF),
                   "column 0 (role 1, index 0): pfor has 4294967295 exceptions in 10 values");
    EXPECT_PATCHED(0, put8(buf + 116, 65),
                   "column 0 (role 1, index 0): pfor exception width 65 exceeds 64");
    EXPECT_PATCHED(0, put8(buf + 116, 12),
                   "column 0 (role 1, index 0): pfor length 13 does not match 10 values of 0 "
                   "bits and 2 exceptions (12 bytes)");
    EXPECT_PATCHED(0, put8(buf + 116, 0),
                   "column 0 (role 1, index 0): pfor exceptions of 0 bits above 0 bits");
    EXPECT_PATCHED(0, put8(buf + 117, 1),
                   "column 0 (role 1, index 0): pfor header has reserved bytes set");
    EXPECT_PATCHED(0, put8(buf + 119, 0x80),
                   "column 0 (role 1, index 0): pfor header has reserved bytes set");
    /* No exceptions but an exception width; exceptions above 64 bits. */
    EXPECT_PATCHED(0, (put32(buf + 112, 0), put32(entry(buf, 0) + E_LENGTH, 8)),
                   "column 0 (role 1, index 0): pfor has exception width 13 but no exceptions");
    EXPECT_PATCHED(0, (put8(entry(buf, 0) + E_BITS, 1), put8(buf + 116, 64),
                       put32(entry(buf, 0) + E_LENGTH, 8 + 2 + 1 + 16)),
                   "column 0 (role 1, index 0): pfor exceptions of 64 bits above 1 bits");
}

Test(format_hostile, pfor_directory_lies)
{
    EXPECT_OPEN((put8(entry(buf, 0) + E_CODEC, FORMAT_PFOR), put8(entry(buf, 0) + E_BITS, 65)),
                "column 0 (role 1, index 2): bit width 65 exceeds 64");
    EXPECT_OPEN((put8(entry(buf, 0) + E_CODEC, FORMAT_PFOR), put8(entry(buf, 0) + E_BITS, 60)),
                "column 0 (role 1, index 2): pfor length 32 is less than 4 values of 60 bits "
                "take (38 bytes)");
    EXPECT_OPEN((put8(entry(buf, 0) + E_CODEC, FORMAT_DPFOR), put32(entry(buf, 0) + E_N, 0)),
                "column 0 (role 1, index 2): dpfor column of 0 values with bit width 0, base 0, "
                "length 32; expected all 0");
    EXPECT_OPEN((put8(entry(buf, 0) + E_TYPE, FORMAT_I128), put8(entry(buf, 0) + E_CODEC, 5)),
                "column 0 (role 1, index 2): codec dpfor is not valid for i128 columns");
    EXPECT_OPEN((put8(entry(buf, 0) + E_TYPE, FORMAT_F64), put8(entry(buf, 0) + E_CODEC, 4)),
                "column 0 (role 1, index 2): codec pfor is not valid for f64 columns");
    EXPECT_OPEN((put8(entry(buf, 0) + E_TYPE, FORMAT_F64), put8(entry(buf, 0) + E_CODEC, 5)),
                "column 0 (role 1, index 2): codec dpfor is not valid for f64 columns");
    EXPECT_OPEN(put8(entry(buf, 0) + E_CODEC, 9), "column 0 (role 1, index 2): unknown codec 9");
    EXPECT_OPEN((put8(entry(buf, 0) + E_TYPE, FORMAT_I128), put8(entry(buf, 0) + E_CODEC, 6)),
                "column 0 (role 1, index 2): codec rice is not valid for i128 columns");
    EXPECT_OPEN((put8(entry(buf, 0) + E_CODEC, FORMAT_DRICE), put8(entry(buf, 0) + E_BITS, 24)),
                "column 0 (role 1, index 2): drice remainder width 24 exceeds 23");
    EXPECT_OPEN((put8(entry(buf, 0) + E_CODEC, FORMAT_RICE), put32(entry(buf, 0) + E_LENGTH, 12)),
                "column 0 (role 1, index 2): rice length 12 leaves no codes for 4 values");
}

/* DPFOR's positions: byte 136 on, 9 bits each (n 300), exceptions at 0,
 * 50, 100, 128, 150, 200, 250, 256. */
static void put_positions(uint8_t *buf, const uint32_t *pos, int n)
{
    uint8_t *p = buf + 128 + 16 + (300 * entry(buf, 1)[E_BITS] + 7) / 8;
    memset(p, 0, (size_t)(n * 9 + 7) / 8);
    for (int i = 0; i < n; i++)
        for (int k = 0; k < 9; k++)
            if (pos[i] >> k & 1)
                p[(i * 9 + k) / 8] |= (uint8_t)(1u << ((i * 9 + k) % 8));
}

/* The patched block with DPFOR's 8 positions replaced, checksums fixed,
 * opened in *b. */
static uint8_t *block_with_positions(const uint32_t *pos, struct format_block *b)
{
    size_t len;
    uint8_t *buf = patched_block(&len);
    put_positions(buf, pos, 8);
    fix_column_checksum(buf, 1);
    fix_trailer(buf, len);
    struct format_error err;
    cr_assert_eq(format_block_open(b, buf, len, true, &err), 0, "%s", err.message);
    return buf;
}

Test(format_hostile, dpfor_lies)
{
    static const uint32_t first_not_0[] = {1, 50, 100, 128, 150, 200, 250, 256};
    static const uint32_t gap[] = {0, 50, 100, 250, 256, 270, 280, 290};
    static const uint32_t tail[] = {0, 50, 100, 128, 150, 160, 170, 171};
    static const uint32_t down[] = {0, 50, 100, 128, 150, 200, 256, 250};
    static const uint32_t past[] = {0, 50, 100, 128, 150, 200, 250, 300};
    EXPECT_PATCHED(1, put_positions(buf, first_not_0, 8),
                   "column 1 (role 2, index 0): dpfor exception 0 at position 1 leaves a gap "
                   "over 128");
    EXPECT_PATCHED(1, put_positions(buf, tail, 8),
                   "column 1 (role 2, index 0): dpfor's last exception at 171 of 300 values "
                   "leaves a gap over 128");
    EXPECT_PATCHED(1, put_positions(buf, down, 8),
                   "column 1 (role 2, index 0): dpfor exception positions not ascending (250 "
                   "after 256)");
    EXPECT_PATCHED(1, put_positions(buf, past, 8),
                   "column 1 (role 2, index 0): dpfor exception 7 at position 300 of 300 values");
    EXPECT_PATCHED(1, put32(buf + 128, 0),
                   "column 1 (role 2, index 0): dpfor has no exceptions; value 0 must be one");
    EXPECT_PATCHED(1, put8(buf + 132, 64 + 1),
                   "column 1 (role 2, index 0): dpfor exception width 65 exceeds 64");
    EXPECT_PATCHED(1, put8(buf + 134, 9),
                   "column 1 (role 2, index 0): dpfor header has reserved bytes set");
    /* A gap of 150 is refused even though every position is in range, and
     * even for a slice after it. */
    {
        struct format_block b;
        struct format_error err;
        uint8_t *buf = block_with_positions(gap, &b);
        int64_t out[1];
        cr_assert_eq(format_block_decode_range(&b, 1, 299, 1, out, &err), -1);
        cr_assert_str_eq(err.message, "column 1 (role 2, index 0): dpfor exception 3 at "
                                      "position 250 leaves a gap over 128");
        free(buf);
    }
}

/* A slice checks the positions it reads, up to the first at or past its
 * end: a bad position later in the column fails the slices that reach it,
 * the column and verify, not a slice before it. */
Test(format_hostile, a_slice_reads_positions_up_to_its_end)
{
    static const uint32_t down[] = {0, 50, 100, 128, 150, 200, 256, 250};
    struct format_block b;
    struct format_error err;
    uint8_t *buf = block_with_positions(down, &b);
    int64_t out[300];
    cr_assert_eq(format_block_decode_range(&b, 1, 10, 100, out, &err), 0, "%s", err.message);
    cr_assert_eq(memcmp(out, dp300 + 10, 100 * sizeof *out), 0);
    const char *want = "column 1 (role 2, index 0): dpfor exception positions not ascending "
                       "(250 after 256)";
    cr_assert_eq(format_block_decode_range(&b, 1, 250, 10, out, &err), -1);
    cr_assert_str_eq(err.message, want);
    cr_assert_eq(format_block_verify(&b, &err), -1);
    cr_assert_str_eq(err.message, want);
    free(buf);
}

/* Garbage slots and exception values decode to something (wrapping), no
 * read outside the column: dmin and base at the extremes. */
Test(format_hostile, dpfor_wrapping_garbage)
{
    size_t len;
    uint8_t *buf = patched_block(&len);
    uint8_t *e = entry(buf, 1);
    put64(e + E_BASE, (uint64_t)INT64_MAX);
    put64(buf + 128 + 8, (uint64_t)INT64_MIN);
    cr_assert_eq(e[E_BITS], 0);
    memset(buf + 128 + 16 + (8 * 9 + 7) / 8, 0xFF, (size_t)(8 * buf[132] + 7) / 8);
    fix_column_checksum(buf, 1);
    fix_trailer(buf, len);
    struct format_block b;
    struct format_error err;
    cr_assert_eq(format_block_open(&b, buf, len, true, &err), 0, "%s", err.message);
    cr_assert_eq(format_block_verify(&b, &err), 0, "%s", err.message);
    int64_t out[300], part[7];
    cr_assert_eq(format_block_decode(&b, 1, out, &err), 0, "%s", err.message);
    cr_assert_eq(format_block_decode_range(&b, 1, 140, 7, part, &err), 0, "%s", err.message);
    cr_assert_eq(memcmp(part, out + 140, sizeof part), 0);
    free(buf);
}
