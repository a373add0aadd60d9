/* test_base_error.c -- filling an error message. */
#include "base/error.h"

#include <criterion/criterion.h>
#include <string.h>

Test(base_error, fills_trims_and_returns_minus_one)
{
    char m[64];
    cr_assert_eq(error_fmt(m, sizeof m, "%d rows, %s", 3, "too many"), -1);
    cr_assert_str_eq(m, "3 rows, too many");
    cr_assert_eq(error_fmt(m, sizeof m, "libpq says no\n\n"), -1);
    cr_assert_str_eq(m, "libpq says no"); /* trailing newlines dropped */
    cr_assert_eq(error_fmt(m, sizeof m, "spaces  \n "), -1);
    cr_assert_str_eq(m, "spaces");
    char small[6];
    error_fmt(small, sizeof small, "%s", "a long message");
    cr_assert_str_eq(small, "a lon"); /* cut to fit, terminated */
    cr_assert_eq(error_fmt(NULL, 0, "%s", "nowhere"), -1);
    cr_assert_eq(error_fmt(m, 0, "%s", "nowhere"), -1);
}
