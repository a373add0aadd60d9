/* test_base_decimal.c -- scaled integers as decimal text. */
#include "base/decimal.h"

#include <criterion/criterion.h>
#include <string.h>

static const char *dec(__int128 v, int scale)
{
    static char b[200];
    size_t n = decimal_format(v, scale, b, sizeof b);
    cr_assert_eq(n, strlen(b));
    return b;
}

Test(base_decimal, text)
{
    cr_assert_str_eq(dec(-1250, 2), "-12.50");
    cr_assert_str_eq(dec(12, 4), "0.0012");
    cr_assert_str_eq(dec(-12, 4), "-0.0012");
    cr_assert_str_eq(dec(0, 0), "0");
    cr_assert_str_eq(dec(0, 3), "0.000");
    cr_assert_str_eq(dec(1234, 4), "0.1234");
    cr_assert_str_eq(dec(12345, 4), "1.2345");
    cr_assert_str_eq(dec(7, 0), "7");
    cr_assert_str_eq(dec(12, -3), "12000");
    cr_assert_str_eq(dec(0, -3), "0");
    cr_assert_str_eq(dec(-5, -1), "-50");
    const __int128 max = (__int128)(((unsigned __int128)1 << 127) - 1), min = -max - 1;
    cr_assert_str_eq(dec(min, 0), "-170141183460469231731687303715884105728");
    cr_assert_str_eq(dec(min, 38), "-1.70141183460469231731687303715884105728");
    cr_assert_str_eq(dec(max, 39), "0.170141183460469231731687303715884105727");
}

Test(base_decimal, cut_like_snprintf)
{
    char small[4] = "xxx";
    cr_assert_eq(decimal_format(12345, 2, small, sizeof small), 6);
    cr_assert_str_eq(small, "123");
    cr_assert_eq(decimal_format(-1, 2, NULL, 0), 5); /* "-0.01" */
    char big[1100];
    cr_assert_eq(decimal_format(1, 1000, big, sizeof big), 1002);
    cr_assert_eq(big[1001], '1');
    cr_assert_eq(strspn(big + 2, "0"), 999);
}

Test(base_decimal, digits)
{
    char d[DECIMAL_DIGITS_BYTES];
    cr_assert_eq(decimal_digits(0, d), 1);
    cr_assert_str_eq(d, "0");
    cr_assert_eq(decimal_digits(~(unsigned __int128)0, d), 39);
    cr_assert_str_eq(d, "340282366920938463463374607431768211455");
    /* Either side of 2^64, where the 64-bit digits take over. */
    unsigned __int128 two64 = (unsigned __int128)1 << 64;
    cr_assert_eq(decimal_digits(two64 - 1, d), 20);
    cr_assert_str_eq(d, "18446744073709551615");
    cr_assert_eq(decimal_digits(two64, d), 20);
    cr_assert_str_eq(d, "18446744073709551616");
    cr_assert_eq(decimal_digits(two64 * 10 + 7, d), 21);
    cr_assert_str_eq(d, "184467440737095516167");
    cr_assert_eq(decimal_digits(1000000, d), 7);
    cr_assert_str_eq(d, "1000000");
}
