/* test_ingest_pglz.c -- pglz_decompress (ingest/pglz.h) on hand-made
 * pg_lzcompress.c streams: literals, overlapping back references, the
 * extra length byte, a match cut at the output's end, both check_complete
 * modes, and each kind of corrupt input. Inputs and outputs sit in
 * buffers of their exact size, so a sanitized build sees any byte read or
 * written past them. */
#include "ingest/pglz.h"

#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

/* Decodes n bytes of src into a fresh buffer of rawsize bytes; the
 * output is copied to out (room for rawsize) when out is not NULL. */
static long decode(const uint8_t *src, size_t n, size_t rawsize, bool check_complete,
                   uint8_t *out)
{
    uint8_t *in = malloc(n > 0 ? n : 1);
    uint8_t *dst = rawsize > 0 ? malloc(rawsize) : NULL;
    cr_assert(in != NULL && (rawsize == 0 || dst != NULL));
    if (n > 0)
        memcpy(in, src, n);
    if (dst != NULL)
        memset(dst, 0xEE, rawsize);
    long got = pglz_decompress(in, n, dst, rawsize, check_complete);
    if (out != NULL && dst != NULL)
        memcpy(out, dst, rawsize);
    free(in);
    free(dst);
    return got;
}

/* Control byte 0x08: three literals, then a tag of length 14 (0x0B + 3)
 * at offset 3, repeating "abc" over itself. */
static const uint8_t abc[] = {0x08, 'a', 'b', 'c', 0x0B, 0x03};

Test(ingest_pglz, literals_and_an_overlapping_match)
{
    uint8_t out[17];
    cr_assert_eq(decode(abc, sizeof abc, 17, true, out), 17);
    cr_assert(memcmp(out, "abcabcabcabcabcab", 17) == 0);

    const uint8_t plain[] = {0x00, 'h', 'e', 'l', 'l', 'o'};
    uint8_t o5[5];
    cr_assert_eq(decode(plain, sizeof plain, 5, true, o5), 5);
    cr_assert(memcmp(o5, "hello", 5) == 0);
}

Test(ingest_pglz, the_extra_length_byte_and_a_match_cut_short)
{
    /* A literal 'x', then a tag of nibble 15 (18) plus 5 at offset 1: 24
     * bytes of 'x'. Into 10 bytes the match is cut there, and with the
     * input used up and the output full that is complete, as PostgreSQL
     * has it. */
    const uint8_t src[] = {0x02, 'x', 0x0F, 0x01, 0x05};
    uint8_t out[24], want[24];
    memset(want, 'x', sizeof want);
    const size_t sizes[] = {24, 10};
    for (size_t i = 0; i < 2; i++) {
        memset(out, 0, sizeof out);
        cr_assert_eq(decode(src, sizeof src, sizes[i], true, out), (long)sizes[i]);
        cr_assert(memcmp(out, want, sizes[i]) == 0);
    }
    cr_assert_eq(decode(abc, sizeof abc, 5, false, out), 5);
    cr_assert(memcmp(out, "abcab", 5) == 0);
}

Test(ingest_pglz, check_complete)
{
    /* Output full with input left over. */
    const uint8_t four[] = {0x00, 'a', 'b', 'c', 'd'};
    uint8_t out[4];
    cr_assert_eq(decode(four, sizeof four, 2, true, NULL), -1);
    cr_assert_eq(decode(four, sizeof four, 2, false, out), 2);
    cr_assert(memcmp(out, "ab", 2) == 0);
    /* Input used up with output short. */
    cr_assert_eq(decode(four, sizeof four, 6, true, NULL), -1);
    cr_assert_eq(decode(four, sizeof four, 6, false, NULL), 4);
    cr_assert_eq(decode(abc, sizeof abc, 18, true, NULL), -1);
    cr_assert_eq(decode(abc, sizeof abc, 18, false, NULL), 17);
    /* Nothing in, nothing out. */
    cr_assert_eq(decode(NULL, 0, 0, true, NULL), 0);
    cr_assert_eq(decode(NULL, 0, 4, true, NULL), -1);
    cr_assert_eq(decode(NULL, 0, 4, false, NULL), 0);
    cr_assert_eq(decode(four, sizeof four, 0, true, NULL), -1);
    cr_assert_eq(decode(four, sizeof four, 0, false, NULL), 0);
}

Test(ingest_pglz, corrupt_input)
{
    static const struct {
        const char *what;
        uint8_t src[8];
        size_t n;
    } bad[] = {
        {"an offset of 0", {0x01, 0x00, 0x00}, 3},
        {"a reference before the start", {0x02, 'a', 0x00, 0x02}, 4},
        {"a reference from an empty output", {0x01, 0x00, 0x01}, 3},
        {"a tag cut after its first byte", {0x02, 'a', 0x00}, 3},
        {"a tag without its extra length byte", {0x02, 'a', 0x0F, 0x01}, 4},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        cr_assert_eq(decode(bad[i].src, bad[i].n, 64, true, NULL), -1, "%s", bad[i].what);
        cr_assert_eq(decode(bad[i].src, bad[i].n, 64, false, NULL), -1, "%s", bad[i].what);
    }
}
