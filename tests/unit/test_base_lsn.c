/* test_base_lsn.c -- WAL positions as PostgreSQL writes them. */
#include "base/lsn.h"

#include <criterion/criterion.h>

Test(base_lsn, text)
{
    char t[LSN_TEXT_BYTES];
    cr_assert_str_eq(lsn_text(0, t), "0/00000000");
    cr_assert_str_eq(lsn_text(0x16B374D848ULL, t), "16/B374D848");
    cr_assert_str_eq(lsn_text(0x100000001ULL, t), "1/00000001");
    cr_assert_str_eq(lsn_text(UINT64_MAX, t), "FFFFFFFF/FFFFFFFF");
}

Test(base_lsn, parse)
{
    uint64_t v = 0;
    cr_assert(lsn_parse("16/B374D848", &v));
    cr_assert_eq(v, 0x16B374D848ULL);
    cr_assert(lsn_parse("0/0", &v));
    cr_assert_eq(v, 0);
    cr_assert(lsn_parse("ffffffff/ffffffff", &v));
    cr_assert_eq(v, UINT64_MAX);
    static const char *const bad[] = {"", "/", "1/", "/1", "1", "1/2/3", "1/2 ", " 1/2", "+1/2",
                                      "0x1/2", "1/-2", "g/1", "100000000/0", "0/100000000"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        v = 99;
        cr_assert_not(lsn_parse(bad[i], &v), "accepted \"%s\"", bad[i]);
        cr_assert_eq(v, 99);
    }
    char t[LSN_TEXT_BYTES];
    for (uint64_t x = 1, i = 0; i < 41; x *= 3, i++) { /* text and back */
        cr_assert(lsn_parse(lsn_text(x, t), &v));
        cr_assert_eq(v, x);
    }
}
