/* test_base_bytes.c -- big- and little-endian loads and stores. */
#include "base/bytes.h"

#include <criterion/criterion.h>
#include <string.h>

Test(base_bytes, big_endian)
{
    const uint8_t b[8] = {0x80, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0xFF};
    cr_assert_eq(be_load_u16(b), 0x8001);
    cr_assert_eq(be_load_u32(b), 0x80010203u);
    cr_assert_eq(be_load_u64(b), 0x80010203040506FFULL);
    cr_assert_eq(be_load_i16(b), -32767);
    cr_assert_eq(be_load_i32(b), (int32_t)-2147417597);
    cr_assert_eq(be_load_i64(b), INT64_MIN + 0x010203040506FFLL);
    const uint8_t m[8] = {0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF};
    cr_assert_eq(be_load_i16(m), -1);
    cr_assert_eq(be_load_i32(m), -1);
    cr_assert_eq(be_load_i64(m), -1);
    uint8_t o[8];
    be_store_u16(o, 0x8001);
    cr_assert(memcmp(o, b, 2) == 0);
    be_store_u32(o, 0x80010203u);
    cr_assert(memcmp(o, b, 4) == 0);
    be_store_u64(o, 0x80010203040506FFULL);
    cr_assert(memcmp(o, b, 8) == 0);
}

Test(base_bytes, little_endian)
{
    uint8_t o[8];
    le_store_u64(o, 0x0102030405060708ULL);
    const uint8_t want[8] = {8, 7, 6, 5, 4, 3, 2, 1};
    cr_assert(memcmp(o, want, 8) == 0);
    cr_assert_eq(le_load_u64(o), 0x0102030405060708ULL);
    cr_assert_eq(le_load_u32(o), 0x05060708u);
    cr_assert_eq(le_load_u16(o), 0x0708);
    const uint8_t high[4] = {0xFF, 0x80, 0x01, 0xFE};
    cr_assert_eq(le_load_u16(high), 0x80FF);
    cr_assert_eq(le_load_u32(high), 0xFE0180FFu);
    memset(o, 0, sizeof o);
    le_store_u32(o, 0xFE0180FFu);
    cr_assert(memcmp(o, high, 4) == 0);
    memset(o, 0, sizeof o);
    le_store_u16(o, 0x80FF);
    cr_assert(memcmp(o, high, 2) == 0);
    cr_assert_eq(o[2], 0, "a 2-byte store writes 2 bytes");
}
