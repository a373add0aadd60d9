/* test_engine_format.c -- the text serve writes for times and exact decimals
 * (engine/tz.c tz_format and engine_format_pg_time, base/decimal.c
 * decimal_format), written without
 * printf. Times are checked against the C library's own local time
 * (localtime_r with TZ set: an independent reading of the same tz
 * database) for random instants in four zones, one with an offset in
 * seconds; years outside 0 to 9999 and short buffers against fixed
 * expectations. Averages of exact decimals (engine/numeric.c dec_avg)
 * against psql's text and against long division one digit at a time, and
 * their order (dec_avg_cmp) against their digits'. */
#include "engine/internal.h"
#include "engine/tz.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static uint64_t rng_state = 1;

static uint64_t rnd(uint64_t n)
{
    rng_state = rng_state * 6364136223846793005ULL + 1442695040888963407ULL;
    return (rng_state >> 11) % n;
}

/* What PostgreSQL writes for utc_us in the zone, from libc. */
static void expected(const char *zone, int64_t utc_us, char *out, size_t len)
{
    setenv("TZ", zone, 1);
    tzset();
    int64_t secs = utc_us / 1000000 - (utc_us % 1000000 < 0), frac = utc_us - secs * 1000000;
    time_t t = (time_t)secs;
    struct tm tm;
    cr_assert_not_null(localtime_r(&t, &tm));
    long off = tm.tm_gmtoff, a = off < 0 ? -off : off;
    int n = snprintf(out, len, "%04d-%02d-%02dT%02d:%02d:%02d", tm.tm_year + 1900, tm.tm_mon + 1,
                     tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec);
    if (frac)
        n += snprintf(out + n, len - (size_t)n, ".%06lld", (long long)frac);
    n += snprintf(out + n, len - (size_t)n, "%c%02ld:%02ld", off < 0 ? '-' : '+', a / 3600,
                  a / 60 % 60);
    if (a % 60)
        snprintf(out + n, len - (size_t)n, ":%02ld", a % 60);
}

Test(format, times_equal_the_c_librarys_in_four_zones)
{
    const char *zones[] = {"UTC", "America/New_York", "Asia/Kolkata", "Europe/Amsterdam"};
    for (int z = 0; z < 4; z++) {
        char err[200];
        const struct tz *tz = tz_get(zones[z], err, sizeof err);
        cr_assert_not_null(tz, "%s", err);
        for (int i = 0; i < 5000; i++) {
            /* 1970 to 2037, whole seconds half the time; Amsterdam also
             * 1920 to 1940, when its offset was +00:19:32. */
            int64_t lo = 0, span = 2100000000LL;
            if (z == 3 && i % 2)
                lo = -1577923200LL, span = 631152000LL;
            int64_t us = (lo + (int64_t)rnd((uint64_t)span)) * 1000000 +
                         (rnd(2) ? (int64_t)rnd(1000000) : 0);
            char got[64], want[64];
            size_t n = tz_format(tz, us, got, sizeof got);
            expected(zones[z], us, want, sizeof want);
            cr_assert_str_eq(got, want, "%s at %lld µs: %s, want %s", zones[z], (long long)us, got, want);
            cr_assert_eq(n, strlen(want));
        }
    }
}

Test(format, far_years_and_short_buffers)
{
    char err[200], got[64];
    const struct tz *utc = tz_get("UTC", err, sizeof err);
    cr_assert_not_null(utc, "%s", err);
    /* 10000-01-01 and 0001-01-01 BC (year 0 in ISO). */
    cr_assert_eq(tz_format(utc, 253402300800000000LL, got, sizeof got), 26);
    cr_assert_str_eq(got, "10000-01-01T00:00:00+00:00");
    tz_format(utc, -62167219200000000LL, got, sizeof got);
    cr_assert_str_eq(got, "0000-01-01T00:00:00+00:00");
    /* 2 BC, year -1: printf's "%04" counts the sign in the four. */
    tz_format(utc, -62198755200000000LL, got, sizeof got);
    cr_assert_str_eq(got, "-001-01-01T00:00:00+00:00");
    /* As snprintf: the full length back, what fits written and ended. */
    char small[8];
    cr_assert_eq(tz_format(utc, 1705449600000001LL, small, sizeof small), 32);
    cr_assert_str_eq(small, "2024-01");
    cr_assert_eq(tz_format(utc, 0, NULL, 0), 25);
}

/* PostgreSQL's own text for timestamptz and timestamp (DateStyle ISO), as
 * the PostgreSQL protocol writes them: a space, the fraction's trailing
 * zeros dropped, offset minutes and seconds only when not zero. */
Test(format, postgresql_text)
{
    char got[64];
    int64_t t = 1705449600000000LL; /* 2024-01-17 00:00:00 UTC */
    cr_assert_eq(engine_format_pg_time(t - 5 * 3600000000LL, -5 * 3600, got, sizeof got), 22);
    cr_assert_str_eq(got, "2024-01-16 19:00:00-05");
    engine_format_pg_time(t + 19800000000LL, 19800, got, sizeof got);
    cr_assert_str_eq(got, "2024-01-17 05:30:00+05:30");
    engine_format_pg_time(t + 1172000000LL, 1172, got, sizeof got);
    cr_assert_str_eq(got, "2024-01-17 00:19:32+00:19:32");
    engine_format_pg_time(t + 120000, INT32_MIN, got, sizeof got);
    cr_assert_str_eq(got, "2024-01-17 00:00:00.12");
    engine_format_pg_time(t + 1, 0, got, sizeof got);
    cr_assert_str_eq(got, "2024-01-17 00:00:00.000001+00");
    char small[8];
    cr_assert_eq(engine_format_pg_time(t, 0, small, sizeof small), 22);
    cr_assert_str_eq(small, "2024-01");
}

Test(format, decimals)
{
    char got[64];
    struct {
        __int128 v;
        int scale;
        const char *want;
    } cases[] = {
        {12345, 2, "123.45"}, {-5, 3, "-0.005"}, {0, 0, "0"}, {0, 2, "0.00"},
        {-1200, 2, "-12.00"}, {7, 0, "7"},
        {(__int128)INT64_MAX * 1000, 3, "9223372036854775807.000"},
        {-((__int128)1 << 120), 0, "-1329227995784915872903807060280344576"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        size_t n = decimal_format(cases[i].v, cases[i].scale, got, sizeof got);
        cr_assert_str_eq(got, cases[i].want);
        cr_assert_eq(n, strlen(cases[i].want));
    }
    char small[4];
    cr_assert_eq(decimal_format(12345, 2, small, sizeof small), 6);
    cr_assert_str_eq(small, "123");
}

/* avg(numeric) as numeric_div writes it, long division one digit at a time
 * in 128 bits: the reference dec_avg is checked against. */
static void reference_avg(__int128 sum, int scale, int64_t count, char *out, size_t cap)
{
    unsigned __int128 mag = sum < 0 ? (unsigned __int128)0 - (unsigned __int128)sum
                                    : (unsigned __int128)sum;
    unsigned __int128 den = (unsigned __int128)count;
    for (int i = 0; i < scale; i++)
        den *= 10;
    /* the result scale: 16 significant digits, at least the sum's scale */
    int rscale;
    {
        /* numeric_div's select_div_scale over base-10000 weights */
        unsigned __int128 m = mag;
        int pad = (4 - scale % 4) % 4;
        for (int i = 0; i < pad; i++)
            m *= 10;
        int w1 = 0, f1 = 0, w2 = 0, f2 = 0, g = 0;
        if (m) {
            while (m >= 10000) {
                m /= 10000;
                g++;
            }
            f1 = (int)m;
            w1 = g - (scale + pad) / 4;
        }
        unsigned __int128 c = (unsigned __int128)count;
        g = 0;
        while (c >= 10000) {
            c /= 10000;
            g++;
        }
        f2 = (int)c;
        w2 = g;
        int qweight = w1 - w2 - (f1 <= f2);
        rscale = 16 - qweight * 4;
        rscale = rscale < scale ? scale : rscale;
        rscale = rscale < 0 ? 0 : rscale;
    }
    unsigned __int128 q = mag / den, rem = mag % den;
    char frac[1100];
    for (int i = 0; i < rscale; i++) {
        rem *= 10;
        frac[i] = (char)('0' + (int)(rem / den));
        rem %= den;
    }
    if (rem * 2 >= den) {
        int i = rscale - 1;
        while (i >= 0 && frac[i] == '9')
            frac[i--] = '0';
        if (i >= 0)
            frac[i]++;
        else
            q++;
    }
    frac[rscale] = '\0';
    char probe[64];
    decimal_format(q, 0, probe, sizeof probe);
    bool negative = sum < 0 && (q != 0 || strspn(frac, "0") < (size_t)rscale);
    snprintf(out, cap, "%s%s%s%s", negative ? "-" : "", probe, rscale ? "." : "", frac);
}

Test(format, averages_as_numeric_div_writes_them)
{
    char got[1100], want[1100];
    struct {
        __int128 sum;
        int scale;
        int64_t count;
        const char *want; /* psql's */
    } fixed[] = {
        {5, 0, 3, "1.6666666666666667"},
        {3, 2, 2, "0.01500000000000000000"},
        {-12345678901233567LL, 3, 2, "-6172839450616.7835"},
        {13, 0, 1, "13.0000000000000000"},
        {-1, 5, 3, "-0.000003333333333333333333"},
        {(__int128)9999999999999999999ULL * 2000 + 1998 + 100, 2, 3,
         "66666666666666666666.99"},
    };
    for (size_t i = 0; i < sizeof fixed / sizeof fixed[0]; i++) {
        size_t n = dec_avg(fixed[i].sum, fixed[i].scale, fixed[i].count, got, sizeof got);
        cr_assert_str_eq(got, fixed[i].want);
        cr_assert_eq(n, strlen(fixed[i].want));
    }
    /* sums of every magnitude up to 2^100, counts up to 2^62 (a divisor past
     * 64 bits once scaled), scales 0 to 8 */
    for (int i = 0; i < 200000; i++) {
        int bits = 1 + (int)rnd(100), scale = (int)rnd(9);
        __int128 sum = (__int128)rnd(UINT64_MAX) << 36 ^ (__int128)rnd(UINT64_MAX);
        sum &= ((__int128)1 << bits) - 1;
        if (rnd(2))
            sum = -sum;
        int cbits = 1 + (int)rnd(62);
        int64_t count = 1 + (int64_t)(rnd(UINT64_MAX) & (((uint64_t)1 << cbits) - 1)) / 2;
        reference_avg(sum, scale, count, want, sizeof want);
        size_t n = dec_avg(sum, scale, count, got, sizeof got);
        cr_assert_str_eq(got, want, "sum scale %d count %lld", scale, (long long)count);
        cr_assert_eq(n, strlen(want));
    }
    char small[5];
    cr_assert_eq(dec_avg(5, 0, 3, small, sizeof small), 18);
    cr_assert_str_eq(small, "1.66");
}

/* Two decimal texts as reference_avg writes them ("-12.3400"), compared
 * by value: <0, 0, >0. */
static int reference_cmp(const char *a, const char *b)
{
    int sa = a[0] == '-' ? -1 : 1, sb = b[0] == '-' ? -1 : 1;
    a += a[0] == '-';
    b += b[0] == '-';
    bool za = strspn(a, "0.") == strlen(a), zb = strspn(b, "0.") == strlen(b);
    if (za || zb) /* "-0.00" is not written, but zero has no sign */
        return za && zb ? 0 : za ? -sb : sa;
    if (sa != sb)
        return sa;
    size_t ia = strcspn(a, "."), ib = strcspn(b, ".");
    int c = ia != ib ? (ia < ib ? -1 : 1) : strncmp(a, b, ia);
    c = (c > 0) - (c < 0);
    const char *fa = a[ia] ? a + ia + 1 : "", *fb = b[ib] ? b + ib + 1 : "";
    while (c == 0 && (*fa || *fb)) { /* the fractions, the shorter padded with zeros */
        char da = *fa ? *fa++ : '0', db = *fb ? *fb++ : '0';
        c = (da > db) - (da < db);
    }
    return sa * c;
}

/* dec_avg_cmp against the digits compared: random averages, averages a
 * rounding digit apart or tied only once rounded (large counts around one
 * quotient), equal quotients of different counts, and signs. */
Test(format, averages_order_as_their_numerics)
{
    char a[1100], b[1100];
    int near_ties = 0;
    for (int i = 0; i < 300000; i++) {
        int scale = (int)rnd(5);
        __int128 sa, sb;
        int64_t na, nb;
        switch (i % 3) {
        case 0: /* anything */
            sa = (__int128)(int64_t)rnd(1ULL << 60) - (int64_t)(1ULL << 59);
            sb = (__int128)(int64_t)rnd(1ULL << 60) - (int64_t)(1ULL << 59);
            na = 1 + (int64_t)rnd(1ULL << 40);
            nb = 1 + (int64_t)rnd(1ULL << 40);
            break;
        case 1: { /* around one quotient q, a few units of the 16th digit apart */
            int64_t q = 1 + (int64_t)rnd(1000000);
            int64_t n0 = rnd(2) ? 1000000000 : 1000000000000;
            na = n0 + (int64_t)rnd((uint64_t)n0);
            nb = n0 + (int64_t)rnd((uint64_t)n0);
            sa = (__int128)q * na + (int64_t)rnd(64) - 32;
            sb = (__int128)q * nb + (int64_t)rnd(64) - 32;
            if (rnd(2)) {
                sa = -sa;
                sb = -sb;
            }
            break;
        }
        default: { /* one quotient over two counts */
            int64_t k = 1 + (int64_t)rnd(1000);
            na = 1 + (int64_t)rnd(1000000);
            sa = (__int128)(int64_t)rnd(1ULL << 40) - (int64_t)(1ULL << 39);
            nb = na * k;
            sb = sa * k + (rnd(4) == 0 ? 1 : 0);
            break;
        }
        }
        reference_avg(sa, scale, na, a, sizeof a);
        reference_avg(sb, scale, nb, b, sizeof b);
        int want = reference_cmp(a, b);
        int got = dec_avg_cmp(sa, na, dec_avg_approx(sa, scale, na), sb, nb,
                              dec_avg_approx(sb, scale, nb), scale);
        cr_assert_eq((got > 0) - (got < 0), want, "%s against %s: %d", a, b, got);
        near_ties += i % 3 == 1 && strcmp(a, b) == 0 && sa * nb != sb * na;
    }
    cr_assert_gt(near_ties, 100, "only %d averages tied once rounded", near_ties);
}
