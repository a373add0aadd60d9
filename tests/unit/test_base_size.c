/* test_base_size.c -- size options: accepted and refused inputs, overflow. */
#include "base/size.h"

#include <criterion/criterion.h>

Test(base_size, accepted)
{
    static const struct {
        const char *text;
        uint64_t bytes;
    } ok[] = {
        {"0", 0}, {"1048576", 1048576}, {"64k", 65536}, {"64K", 65536}, {"64KiB", 65536},
        {"64KB", 65536}, {"512MiB", 512ULL << 20}, {"20G", 20ULL << 30}, {"20GiB", 20ULL << 30},
        {"2T", 2ULL << 40}, {"1TB", 1ULL << 40}, {"1t", 1ULL << 40}, {"18446744073709551615", UINT64_MAX},
        {"16777215T", 16777215ULL << 40},
    };
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
        uint64_t v = 1;
        cr_assert_eq(size_parse(ok[i].text, &v), 0, "refused %s", ok[i].text);
        cr_assert_eq(v, ok[i].bytes, "%s", ok[i].text);
    }
}

Test(base_size, refused)
{
    static const char *const bad[] = {"", "K", "-1", "+1", " 1", "1 ", "1.5G", "1e3", "1P",
                                      "1Ki", "1tb", "1KiBs", "1iB", "0x10", "1Gb ",
                                      "18446744073709551616", "16777216T", "17179869184G"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        uint64_t v = 7;
        cr_assert_eq(size_parse(bad[i], &v), -1, "accepted \"%s\"", bad[i]);
        cr_assert_eq(v, 7);
    }
}
