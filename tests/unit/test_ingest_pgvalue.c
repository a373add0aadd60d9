/* test_ingest_pgvalue.c -- PostgreSQL values into store codes: hand-built
 * binary encodings and text output of every supported type, and a
 * cross-check against a real server (binary COPY decoded
 * with the COPY parser and pgvalue_decode_binary must agree with the same
 * values fetched as text, and numerics' codes with PostgreSQL's own
 * value x 10^scale). */
#include "ingest/copy_binary.h"
#include "ingest/pgvalue.h"
#include "tests/pg/pgtest.h"

#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- Helpers --------------------------------------------------------------- */

static const struct store_column_type T_INT = {STORE_TYPE_INT, 0, PG_INT8};
static const struct store_column_type T_NUM2 = {STORE_TYPE_NUMERIC, 2, PG_NUMERIC};
static const struct store_column_type T_NUM0 = {STORE_TYPE_NUMERIC, 0, PG_NUMERIC};
static const struct store_column_type T_NUM6 = {STORE_TYPE_NUMERIC, 6, PG_NUMERIC};
static const struct store_column_type T_FLOAT = {STORE_TYPE_FLOAT, 0, PG_FLOAT8};
static const struct store_column_type T_TEXT = {STORE_TYPE_TEXT, 0, PG_TEXT};
static const struct store_column_type T_BOOL = {STORE_TYPE_BOOL, 0, PG_BOOL};
static const struct store_column_type T_DATE = {STORE_TYPE_DATE, 0, PG_DATE};
static const struct store_column_type T_TS = {STORE_TYPE_TIMESTAMP, 0, PG_TIMESTAMPTZ};

#define USEC 1000000LL
#define DAY_USEC (86400LL * USEC)
#define PG_EPOCH_USEC 946684800000000LL

struct bytes {
    uint8_t b[512];
    size_t len;
};

static void b16(struct bytes *x, int v)
{
    x->b[x->len++] = (uint8_t)((unsigned)v >> 8);
    x->b[x->len++] = (uint8_t)v;
}

static void b32(struct bytes *x, int64_t v)
{
    uint32_t u = (uint32_t)v;
    for (int i = 3; i >= 0; i--)
        x->b[x->len++] = (uint8_t)(u >> (8 * i));
}

static void b64(struct bytes *x, uint64_t u)
{
    for (int i = 7; i >= 0; i--)
        x->b[x->len++] = (uint8_t)(u >> (8 * i));
}

static struct bytes be64(int64_t v)
{
    struct bytes x = {.len = 0};
    b64(&x, (uint64_t)v);
    return x;
}

static struct bytes be32(int64_t v)
{
    struct bytes x = {.len = 0};
    b32(&x, v);
    return x;
}

static struct bytes be16(int v)
{
    struct bytes x = {.len = 0};
    b16(&x, v);
    return x;
}

static struct bytes f64(double d)
{
    uint64_t u;
    memcpy(&u, &d, 8);
    struct bytes x = {.len = 0};
    b64(&x, u);
    return x;
}

static struct bytes f32(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    struct bytes x = {.len = 0};
    b32(&x, u);
    return x;
}

/* numeric's send format, by hand. */
static struct bytes numeric_raw(int ndigits, int weight, unsigned sign, unsigned dscale,
                                const int *digits)
{
    struct bytes x = {.len = 0};
    b16(&x, ndigits);
    b16(&x, weight);
    b16(&x, (int)sign);
    b16(&x, (int)dscale);
    for (int i = 0; i < ndigits; i++)
        b16(&x, digits[i]);
    return x;
}

/* numeric's send format of a decimal text, as numeric_in + numeric_send
 * produce it: base-10000 groups aligned on the point, leading and trailing
 * zero groups stripped, dscale = digits after the point. */
static struct bytes numeric_of(const char *text)
{
    bool neg = text[0] == '-';
    if (neg || text[0] == '+')
        text++;
    const char *dot = strchr(text, '.');
    size_t nint = dot ? (size_t)(dot - text) : strlen(text);
    const char *frac = dot ? dot + 1 : "";
    size_t nfrac = strlen(frac);
    size_t pad_left = (4 - nint % 4) % 4, pad_right = (4 - nfrac % 4) % 4;
    char all[600] = "";
    size_t n = 0;
    for (size_t i = 0; i < pad_left; i++)
        all[n++] = '0';
    memcpy(all + n, text, nint);
    n += nint;
    memcpy(all + n, frac, nfrac);
    n += nfrac;
    for (size_t i = 0; i < pad_right; i++)
        all[n++] = '0';
    int groups[150], ngroups = (int)(n / 4);
    for (int g = 0; g < ngroups; g++)
        groups[g] = (all[4 * g] - '0') * 1000 + (all[4 * g + 1] - '0') * 100 +
                    (all[4 * g + 2] - '0') * 10 + (all[4 * g + 3] - '0');
    int weight = (int)((pad_left + nint) / 4) - 1, first = 0, last = ngroups;
    while (first < last && groups[first] == 0) {
        first++;
        weight--;
    }
    while (last > first && groups[last - 1] == 0)
        last--;
    if (first == last)
        return numeric_raw(0, 0, 0, (unsigned)nfrac, NULL);
    return numeric_raw(last - first, weight, neg ? 0x4000 : 0, (unsigned)nfrac, groups + first);
}

static struct pgvalue bin_ok(uint32_t oid, const struct store_column_type *t, struct bytes x)
{
    struct pgvalue v;
    char err[256] = "";
    int rc = pgvalue_decode_binary(oid, t, x.b, x.len, &v, err, sizeof err);
    cr_assert_eq(rc, 0, "oid %u: %s", (unsigned)oid, err);
    return v;
}

static const char *bin_err(uint32_t oid, const struct store_column_type *t, struct bytes x)
{
    static char err[256];
    struct pgvalue v;
    err[0] = '\0';
    cr_assert_eq(pgvalue_decode_binary(oid, t, x.b, x.len, &v, err, sizeof err), -1,
                 "oid %u accepted (code %lld)", (unsigned)oid, (long long)v.code);
    return err;
}

static struct pgvalue text_ok(uint32_t oid, const struct store_column_type *t, const char *s)
{
    struct pgvalue v;
    char err[256] = "";
    int rc = pgvalue_decode_text(oid, t, s, strlen(s), &v, err, sizeof err);
    cr_assert_eq(rc, 0, "\"%s\": %s", s, err);
    return v;
}

static const char *text_err(uint32_t oid, const struct store_column_type *t, const char *s)
{
    static char err[256];
    struct pgvalue v;
    err[0] = '\0';
    cr_assert_eq(pgvalue_decode_text(oid, t, s, strlen(s), &v, err, sizeof err), -1,
                 "\"%s\" accepted (code %lld)", s, (long long)v.code);
    return err;
}

static bool same_double(double a, double b)
{
    return (isnan(a) && isnan(b)) || memcmp(&a, &b, sizeof a) == 0;
}

/* ---- Column types ------------------------------------------------------------ */

static struct store_column_type store_type(uint32_t oid, int32_t typmod)
{
    struct store_column_type t;
    char err[256] = "";
    cr_assert_eq(pgvalue_store_type(oid, typmod, &t, err, sizeof err), 0, "%u: %s",
                 (unsigned)oid, err);
    cr_assert_eq(t.pg_oid, oid);
    return t;
}

static int32_t numeric_typmod(int precision, int scale)
{
    return (int32_t)(((uint32_t)precision << 16) | ((uint32_t)scale & 0x7FF)) + 4;
}

Test(ingest_pgvalue, store_types)
{
    cr_assert_eq(store_type(PG_INT2, -1).type, STORE_TYPE_INT);
    cr_assert_eq(store_type(PG_INT4, -1).type, STORE_TYPE_INT);
    cr_assert_eq(store_type(PG_INT8, -1).type, STORE_TYPE_INT);
    cr_assert_eq(store_type(PG_FLOAT4, -1).type, STORE_TYPE_FLOAT);
    cr_assert_eq(store_type(PG_FLOAT8, -1).type, STORE_TYPE_FLOAT);
    cr_assert_eq(store_type(PG_TEXT, -1).type, STORE_TYPE_TEXT);
    cr_assert_eq(store_type(PG_VARCHAR, 24).type, STORE_TYPE_TEXT);
    cr_assert_eq(store_type(PG_BPCHAR, 9).type, STORE_TYPE_TEXT);
    cr_assert_eq(store_type(PG_BOOL, -1).type, STORE_TYPE_BOOL);
    cr_assert_eq(store_type(PG_DATE, -1).type, STORE_TYPE_DATE);
    cr_assert_eq(store_type(PG_TIMESTAMP, -1).type, STORE_TYPE_TIMESTAMP);
    cr_assert_eq(store_type(PG_TIMESTAMPTZ, 3).type, STORE_TYPE_TIMESTAMP);

    struct store_column_type t = store_type(PG_NUMERIC, numeric_typmod(10, 2));
    cr_assert_eq(t.type, STORE_TYPE_NUMERIC);
    cr_assert_eq(t.scale, 2);
    cr_assert_eq(store_type(PG_NUMERIC, -1).scale, PGVALUE_DEFAULT_NUMERIC_SCALE);
    cr_assert_eq(store_type(PG_NUMERIC, numeric_typmod(18, 0)).scale, 0);
    cr_assert_eq(store_type(PG_NUMERIC, numeric_typmod(38, 18)).scale, 18);
    cr_assert_eq(store_type(PG_NUMERIC, numeric_typmod(3, -2)).scale, 0,
                 "PostgreSQL 15's negative scales hold integers: scale 0");

    char err[256];
    cr_assert_eq(pgvalue_store_type(114, -1, &t, err, sizeof err), -1);
    cr_assert_str_eq(err, "type OID 114 is not supported; Straum keeps int2/4/8, numeric, "
                          "float4/8, text/varchar, bool, date and timestamp(tz) columns");
    cr_assert_eq(pgvalue_store_type(PG_NUMERIC, numeric_typmod(30, 20), &t, err, sizeof err), -1);
    cr_assert_str_eq(err, "numeric column with scale 20 is not supported: Straum keeps "
                          "numerics as 64-bit integers at the column's scale, at most 18 "
                          "decimals");
}

/* ---- Binary: integers, booleans, text ----------------------------------------- */

Test(ingest_pgvalue, binary_integers)
{
    struct pgvalue v = bin_ok(PG_INT2, &T_INT, be16(-32768));
    cr_assert_eq(v.code, -32768);
    cr_assert(v.exact == -32768);
    cr_assert_eq(v.real, 0, "only floats have a double");
    cr_assert_eq(bin_ok(PG_INT4, &T_INT, be32(-123456789)).code, -123456789);
    cr_assert_eq(bin_ok(PG_INT4, &T_INT, be32(INT32_MAX)).code, INT32_MAX);
    v = bin_ok(PG_INT8, &T_INT, be64(INT64_MAX));
    cr_assert_eq(v.code, INT64_MAX);
    cr_assert(v.exact == INT64_MAX);
    cr_assert_eq(bin_ok(PG_INT8, &T_INT, be64(INT64_MIN + 1)).code, INT64_MIN + 1);
    cr_assert_str_eq(bin_err(PG_INT8, &T_INT, be64(INT64_MIN)),
                     "int8 value is out of range for a 64-bit integer column",
                     "INT64_MIN is STORE_NULL");
    cr_assert_str_eq(bin_err(PG_INT4, &T_INT, be16(1)), "int4 value has 2 bytes, expected 4");
    cr_assert_str_eq(bin_err(PG_INT2, &T_INT, be32(1)), "int2 value has 4 bytes, expected 2");
    cr_assert_str_eq(bin_err(PG_INT8, &T_INT, be32(1)), "int8 value has 4 bytes, expected 8");

    /* Integers into numeric and float columns. */
    v = bin_ok(PG_INT4, &T_NUM2, be32(-7));
    cr_assert_eq(v.code, -700);
    cr_assert(v.exact == -700);
    cr_assert_eq(bin_ok(PG_INT8, &T_NUM2, be64(92233720368547758LL)).code,
                 9223372036854775800LL);
    cr_assert_str_eq(bin_err(PG_INT8, &T_NUM2, be64(92233720368547759LL)),
                     "int8 value is out of range for a numeric column of scale 2 (value x 10^2 "
                     "must fit in 64 bits)");
    v = bin_ok(PG_INT8, &T_FLOAT, be64(3));
    cr_assert_eq(v.code, store_float_code(3.0));
    cr_assert_eq(v.real, 3.0);
}

Test(ingest_pgvalue, binary_bool_text_and_mismatches)
{
    struct bytes x = {.b = {1}, .len = 1};
    struct pgvalue v = bin_ok(PG_BOOL, &T_BOOL, x);
    cr_assert_eq(v.code, 1);
    cr_assert(v.exact == 1);
    x.b[0] = 0;
    cr_assert_eq(bin_ok(PG_BOOL, &T_BOOL, x).code, 0);
    x.len = 2;
    cr_assert_str_eq(bin_err(PG_BOOL, &T_BOOL, x), "bool value has 2 bytes, expected 1");

    struct bytes s = {.b = "caf\xc3\xa9", .len = 5};
    /* Decoded in place: the text points into s itself (bin_ok takes a copy). */
    cr_assert_eq(pgvalue_decode_binary(PG_TEXT, &T_TEXT, s.b, s.len, &v, NULL, 0), 0);
    cr_assert_eq(v.len, 5u);
    cr_assert_eq(memcmp(v.text, "caf\xc3\xa9", 5), 0);
    struct pgvalue e;
    cr_assert_eq(pgvalue_decode_binary(PG_VARCHAR, &T_TEXT, s.b, 0, &e, NULL, 0), 0);
    cr_assert_eq(e.len, 0u, "an empty string");
    cr_assert_eq(pgvalue_decode_binary(PG_BPCHAR, &T_TEXT, s.b, 3, &e, NULL, 0), 0);
    cr_assert_eq(e.text, (const char *)s.b, "points into the input");

    cr_assert_str_eq(bin_err(PG_DATE, &T_BOOL, be32(0)),
                     "a date value cannot be stored in a boolean column");
    cr_assert_str_eq(bin_err(PG_FLOAT8, &T_NUM2, f64(1)),
                     "a float8 value cannot be stored in a numeric column");
    cr_assert_str_eq(bin_err(PG_TEXT, &T_INT, s), "a text value cannot be stored in a integer "
                                                 "column");
    cr_assert_str_eq(bin_err(114, &T_TEXT, s),
                     "type OID 114 is not supported; Straum keeps int2/4/8, numeric, float4/8, "
                     "text/varchar, bool, date and timestamp(tz) columns");
    struct store_column_type bad = {STORE_TYPE_NUMERIC, 19, PG_NUMERIC};
    cr_assert_str_eq(bin_err(PG_INT4, &bad, be32(1)),
                     "numeric column scale 19 is out of range (0 to 18)");
}

/* ---- Binary: numeric ---------------------------------------------------------- */

static int64_t num2(const char *text)
{
    struct pgvalue v = bin_ok(PG_NUMERIC, &T_NUM2, numeric_of(text));
    cr_assert(v.exact == v.code, "%s", text);
    cr_assert_eq(v.real, 0, "%s: only floats have a double", text);
    return v.code;
}

Test(ingest_pgvalue, binary_numeric_scale_2)
{
    cr_assert_eq(num2("0"), 0);
    cr_assert_eq(num2("0.00"), 0);
    cr_assert_eq(num2("-0.01"), -1);
    cr_assert_eq(num2("12.5"), 1250);
    cr_assert_eq(num2("12.50"), 1250);
    cr_assert_eq(num2("-12.50"), -1250);
    cr_assert_eq(num2("123456789.12"), 12345678912LL);
    cr_assert_eq(num2("10000"), 1000000);
    cr_assert_eq(num2("0.1"), 10);
    cr_assert_eq(num2("1.230"), 123, "trailing zeros below the scale are fine");
    cr_assert_eq(num2("92233720368547758.07"), INT64_MAX);
    cr_assert_eq(num2("-92233720368547758.07"), -INT64_MAX);

    /* The same values built by hand, as numeric_send lays them out. */
    cr_assert_eq(bin_ok(PG_NUMERIC, &T_NUM2, numeric_raw(2, 0, 0, 1, (int[]){12, 5000})).code,
                 1250);
    cr_assert_eq(bin_ok(PG_NUMERIC, &T_NUM2, numeric_raw(1, -1, 0x4000, 2, (int[]){100})).code,
                 -1);
    cr_assert_eq(
        bin_ok(PG_NUMERIC, &T_NUM2, numeric_raw(4, 2, 0, 2, (int[]){1, 2345, 6789, 1200})).code,
        12345678912LL);
    cr_assert_eq(bin_ok(PG_NUMERIC, &T_NUM2, numeric_raw(0, 0, 0, 0, NULL)).code, 0);
    cr_assert_eq(bin_ok(PG_NUMERIC, &T_NUM2, numeric_raw(0, 0, 0x4000, 5, NULL)).code, 0,
                 "negative zero");
    cr_assert_eq(bin_ok(PG_NUMERIC, &T_NUM2, numeric_raw(1, 1, 0, 0, (int[]){1})).code,
                 1000000, "10000 as one digit of weight 1");

    /* Out of range and too precise: exact errors, never wrapped or rounded. */
    const char *range = "numeric value is out of range for a numeric column of scale 2 (value "
                        "x 10^2 must fit in 64 bits)";
    cr_assert_str_eq(bin_err(PG_NUMERIC, &T_NUM2, numeric_of("99999999999999999999.99")), range);
    cr_assert_str_eq(bin_err(PG_NUMERIC, &T_NUM2, numeric_of("92233720368547758.08")), range);
    cr_assert_str_eq(bin_err(PG_NUMERIC, &T_NUM2, numeric_of("-92233720368547758.08")), range,
                     "INT64_MIN is STORE_NULL");
    cr_assert_str_eq(bin_err(PG_NUMERIC, &T_NUM2, numeric_raw(1, 32767, 0, 0, (int[]){1})),
                     range);
    cr_assert_str_eq(bin_err(PG_NUMERIC, &T_NUM2,
                             numeric_of("9999999999999999999999999999999999999999999999")),
                     range);
    cr_assert_str_eq(bin_err(PG_NUMERIC, &T_NUM2, numeric_of("0.000001")),
                     "numeric value has more than 2 decimals");
    cr_assert_str_eq(bin_err(PG_NUMERIC, &T_NUM2, numeric_of("1.005")),
                     "numeric value has more than 2 decimals");
    cr_assert_str_eq(bin_err(PG_NUMERIC, &T_NUM2, numeric_raw(1, -32768, 0, 0, (int[]){1})),
                     "numeric value has more than 2 decimals");

    cr_assert_str_eq(bin_err(PG_NUMERIC, &T_NUM2, numeric_raw(0, 0, 0xC000, 0, NULL)),
                     "numeric NaN is not supported");
    cr_assert_str_eq(bin_err(PG_NUMERIC, &T_NUM2, numeric_raw(0, 0, 0xD000, 0, NULL)),
                     "numeric Infinity is not supported");
    cr_assert_str_eq(bin_err(PG_NUMERIC, &T_NUM2, numeric_raw(0, 0, 0xF000, 0, NULL)),
                     "numeric -Infinity is not supported");
}

Test(ingest_pgvalue, binary_numeric_malformed)
{
    struct bytes x = numeric_of("12.5");
    x.len = 7;
    cr_assert_str_eq(bin_err(PG_NUMERIC, &T_NUM2, x),
                     "numeric value has 7 bytes, expected at least 8");
    x = numeric_of("12.5");
    x.len--;
    cr_assert_str_eq(bin_err(PG_NUMERIC, &T_NUM2, x),
                     "numeric value has 11 bytes, expected 12 for 2 digits");
    x = numeric_of("12.5");
    x.b[x.len++] = 0;
    x.b[x.len++] = 0;
    cr_assert_str_eq(bin_err(PG_NUMERIC, &T_NUM2, x),
                     "numeric value has 14 bytes, expected 12 for 2 digits");
    cr_assert_str_eq(bin_err(PG_NUMERIC, &T_NUM2, numeric_raw(-1, 0, 0, 0, NULL)),
                     "numeric value has -1 digits");
    cr_assert_str_eq(bin_err(PG_NUMERIC, &T_NUM2, numeric_raw(1, 0, 0x8000, 0, (int[]){1})),
                     "numeric value has invalid sign 0x8000");
    cr_assert_str_eq(bin_err(PG_NUMERIC, &T_NUM2, numeric_raw(1, 0, 0, 0x4000, (int[]){1})),
                     "numeric value has invalid display scale 16384");
    cr_assert_str_eq(bin_err(PG_NUMERIC, &T_NUM2, numeric_raw(1, 0, 0, 0, (int[]){10000})),
                     "numeric value has invalid digit 10000");
    cr_assert_str_eq(bin_err(PG_NUMERIC, &T_NUM2, numeric_raw(2, 0, 0, 0, (int[]){1, -1})),
                     "numeric value has invalid digit -1");
}

/* A numeric's double is strtod of its text, to the last bit, whether it
 * comes from a division of exact doubles (magnitudes to 2^53) or from
 * strtod itself (larger ones): random codes at every scale. */
Test(ingest_pgvalue, numeric_doubles_equal_strtod_at_every_scale)
{
    uint64_t rng = 12345;
    for (int i = 0; i < 20000; i++) {
        rng = rng * 6364136223846793005ULL + 1442695040888963407ULL;
        int scale = (int)(rng >> 59) % 19;
        int bits = 1 + (int)((rng >> 40) % 63);
        int64_t code = (int64_t)((rng >> 1) >> (63 - bits));
        if (rng & 1)
            code = -code;
        char text[64];
        uint64_t mag = code < 0 ? (uint64_t)0 - (uint64_t)code : (uint64_t)code;
        uint64_t p = 1;
        for (int k = 0; k < scale; k++)
            p *= 10;
        if (scale)
            snprintf(text, sizeof text, "%s%llu.%0*llu", code < 0 ? "-" : "",
                     (unsigned long long)(mag / p), scale, (unsigned long long)(mag % p));
        else
            snprintf(text, sizeof text, "%lld", (long long)code);
        struct store_column_type t = {STORE_TYPE_NUMERIC, scale, PG_NUMERIC};
        struct pgvalue v = bin_ok(PG_NUMERIC, &t, numeric_of(text));
        cr_assert_eq(v.code, code, "%s", text);
        cr_assert(v.exact == code, "%s", text);
    }
}

Test(ingest_pgvalue, binary_numeric_other_scales)
{
    struct pgvalue v = bin_ok(PG_NUMERIC, &T_NUM6, numeric_of("-0.000001"));
    cr_assert_eq(v.code, -1);
    cr_assert_eq(bin_ok(PG_NUMERIC, &T_NUM6, numeric_of("1234567.891")).code, 1234567891000LL);
    cr_assert_str_eq(bin_err(PG_NUMERIC, &T_NUM6, numeric_of("0.0000001")),
                     "numeric value has more than 6 decimals");
    cr_assert_eq(bin_ok(PG_NUMERIC, &T_NUM0, numeric_of("-9223372036854775807")).code,
                 -INT64_MAX);
    v = bin_ok(PG_NUMERIC, &T_NUM0, numeric_of("9007199254740993"));
    cr_assert_eq(v.code, 9007199254740993LL, "exact past a double's 2^53");
    struct store_column_type t18 = {STORE_TYPE_NUMERIC, 18, PG_NUMERIC};
    v = bin_ok(PG_NUMERIC, &t18, numeric_of("9.223372036854775807"));
    cr_assert_eq(v.code, INT64_MAX);
    v = bin_ok(PG_NUMERIC, &t18, numeric_of("-0.000000000000000001"));
    cr_assert_eq(v.code, -1);

    /* A numeric into an integer column. */
    cr_assert_eq(bin_ok(PG_NUMERIC, &T_INT, numeric_of("42")).code, 42);
    cr_assert_eq(bin_ok(PG_NUMERIC, &T_INT, numeric_of("42.000")).code, 42);
    cr_assert_str_eq(bin_err(PG_NUMERIC, &T_INT, numeric_of("4.2")),
                     "numeric value is not an integer, but the column is");
    cr_assert_str_eq(bin_err(PG_NUMERIC, &T_INT, numeric_of("9223372036854775808")),
                     "numeric value is out of range for a 64-bit integer column");
}

/* Every numeric with up to 12 significant digits at several positions
 * agrees with strtod for its double and with the text decoder for its
 * code. */
Test(ingest_pgvalue, binary_numeric_random)
{
    srand(11);
    for (int i = 0; i < 20000; i++) {
        char text[64];
        long long ip = rand() % 1000000000LL * (rand() % 3 ? 1 : 1000);
        int frac_digits = rand() % 7;
        long long fp = 0;
        for (int k = 0; k < frac_digits; k++)
            fp = fp * 10 + rand() % 10;
        if (frac_digits)
            snprintf(text, sizeof text, "%s%lld.%0*lld", rand() % 2 ? "-" : "", ip, frac_digits,
                     fp);
        else
            snprintf(text, sizeof text, "%s%lld", rand() % 2 ? "-" : "", ip);
        struct pgvalue b, t;
        char eb[256] = "", et[256] = "";
        int rb = pgvalue_decode_binary(PG_NUMERIC, &T_NUM6, numeric_of(text).b,
                                       numeric_of(text).len, &b, eb, sizeof eb);
        int rt = pgvalue_decode_text(PG_NUMERIC, &T_NUM6, text, strlen(text), &t, et, sizeof et);
        cr_assert_eq(rb, 0, "%s: %s", text, eb);
        cr_assert_eq(rt, 0, "%s: %s", text, et);
        cr_assert_eq(b.code, t.code, "%s", text);
        cr_assert(b.exact == t.exact);
        cr_assert(b.real == 0 && t.real == 0, "%s", text);
    }
}

/* ---- Binary: floats, dates, timestamps ------------------------------------------ */

Test(ingest_pgvalue, binary_floats)
{
    struct pgvalue v = bin_ok(PG_FLOAT8, &T_FLOAT, f64(1.5));
    cr_assert_eq(v.code, store_float_code(1.5));
    cr_assert_eq(v.real, 1.5);
    cr_assert(v.exact == 0);
    v = bin_ok(PG_FLOAT8, &T_FLOAT, f64(-1e300));
    cr_assert_eq(v.code, store_float_code(-1e300));
    cr_assert_eq(v.real, -1e300);
    v = bin_ok(PG_FLOAT8, &T_FLOAT, f64(-0.0));
    cr_assert_eq(v.code, store_float_code(0.0), "-0 = 0, as PostgreSQL compares them");
    cr_assert_not(signbit(v.real));
    v = bin_ok(PG_FLOAT8, &T_FLOAT, f64(INFINITY));
    cr_assert_eq(v.code, store_float_code(INFINITY));
    cr_assert_lt(bin_ok(PG_FLOAT8, &T_FLOAT, f64(-INFINITY)).code,
                 bin_ok(PG_FLOAT8, &T_FLOAT, f64(-1e300)).code);

    /* Every NaN is one NaN, above infinity. */
    int64_t nan_code = bin_ok(PG_FLOAT8, &T_FLOAT, f64(NAN)).code;
    cr_assert_eq(nan_code, store_float_code(NAN));
    cr_assert_gt(nan_code, v.code);
    struct bytes odd_nan = be64((int64_t)0xFFF8000000000123ULL);
    cr_assert_eq(bin_ok(PG_FLOAT8, &T_FLOAT, odd_nan).code, nan_code);
    cr_assert(isnan(bin_ok(PG_FLOAT8, &T_FLOAT, odd_nan).real));
    cr_assert_eq(bin_ok(PG_FLOAT4, &T_FLOAT, f32(NAN)).code, nan_code);

    v = bin_ok(PG_FLOAT4, &T_FLOAT, f32(0.1f));
    cr_assert_eq(v.real, (double)0.1f);
    cr_assert_eq(v.code, store_float_code((double)0.1f));
    cr_assert_eq(bin_ok(PG_FLOAT4, &T_FLOAT, f32(-0.0f)).code, store_float_code(0.0));
    cr_assert_str_eq(bin_err(PG_FLOAT4, &T_FLOAT, f64(1)), "float4 value has 8 bytes, expected 4");
    cr_assert_str_eq(bin_err(PG_FLOAT8, &T_FLOAT, f32(1)), "float8 value has 4 bytes, expected 8");
}

Test(ingest_pgvalue, binary_dates)
{
    struct pgvalue v = bin_ok(PG_DATE, &T_DATE, be32(0));
    cr_assert_eq(v.code, 10957, "2000-01-01");
    cr_assert(v.exact == 10957);
    cr_assert_eq(bin_ok(PG_DATE, &T_DATE, be32(-10957)).code, 0, "1970-01-01");
    cr_assert_eq(bin_ok(PG_DATE, &T_DATE, be32(-36524)).code, -25567, "1900-01-01");
    cr_assert_eq(bin_ok(PG_DATE, &T_DATE, be32(8782)).code, 19739, "2024-01-17");
    cr_assert_eq(bin_ok(PG_DATE, &T_DATE, be32(-2451507)).code, -2451507 + 10957,
                 "4713-01-01 BC, PostgreSQL's first date");
    cr_assert_str_eq(bin_err(PG_DATE, &T_DATE, be32(INT32_MAX)), "date infinity is not supported");
    cr_assert_str_eq(bin_err(PG_DATE, &T_DATE, be32(INT32_MIN)),
                     "date -infinity is not supported");
    cr_assert_str_eq(bin_err(PG_DATE, &T_DATE, be64(0)), "date value has 8 bytes, expected 4");
    /* A date into a timestamp column: its midnight. */
    cr_assert_eq(bin_ok(PG_DATE, &T_TS, be32(8782)).code, 19739 * DAY_USEC);
}

Test(ingest_pgvalue, binary_timestamps)
{
    struct pgvalue v = bin_ok(PG_TIMESTAMPTZ, &T_TS, be64(0));
    cr_assert_eq(v.code, PG_EPOCH_USEC);
    cr_assert(v.exact == PG_EPOCH_USEC);
    cr_assert_eq(bin_ok(PG_TIMESTAMP, &T_TS, be64(-1)).code, PG_EPOCH_USEC - 1);
    cr_assert_eq(bin_ok(PG_TIMESTAMP, &T_TS, be64(-PG_EPOCH_USEC - 1)).code, -1,
                 "1969-12-31 23:59:59.999999");
    cr_assert_eq(bin_ok(PG_TIMESTAMPTZ, &T_TS, be64(758800800000000LL)).code,
                 1705485600000000LL, "2024-01-17 10:00:00+00");
    /* PostgreSQL's first timestamp, 4713-11-24 BC. */
    cr_assert_eq(bin_ok(PG_TIMESTAMP, &T_TS, be64(-211781865600000000LL)).code,
                 -211781865600000000LL + PG_EPOCH_USEC);
    cr_assert_eq(text_ok(PG_TIMESTAMP, &T_TS, "4713-11-24 00:00:00 BC").code,
                 -211781865600000000LL + PG_EPOCH_USEC);
    cr_assert_str_eq(bin_err(PG_TIMESTAMPTZ, &T_TS, be64(INT64_MAX)),
                     "timestamptz infinity is not supported");
    cr_assert_str_eq(bin_err(PG_TIMESTAMP, &T_TS, be64(INT64_MIN)),
                     "timestamp -infinity is not supported");
    cr_assert_str_eq(bin_err(PG_TIMESTAMP, &T_TS, be64(INT64_MAX - 1)),
                     "timestamp value is out of range");
    cr_assert_eq(bin_ok(PG_TIMESTAMP, &T_TS, be64(INT64_MAX - PG_EPOCH_USEC)).code, INT64_MAX);
    cr_assert_str_eq(bin_err(PG_TIMESTAMP, &T_TS, be32(0)),
                     "timestamp value has 4 bytes, expected 8");
    cr_assert_str_eq(bin_err(PG_TIMESTAMP, &T_DATE, be64(0)),
                     "a timestamp value cannot be stored in a date column");
}

/* ---- Text output ---------------------------------------------------------------- */

Test(ingest_pgvalue, text_numbers)
{
    struct pgvalue v = text_ok(PG_NUMERIC, &T_NUM2, "-12.50");
    cr_assert_eq(v.code, -1250);
    cr_assert(v.exact == -1250);
    cr_assert_eq(text_ok(PG_NUMERIC, &T_NUM2, "0").code, 0);
    cr_assert_eq(text_ok(PG_NUMERIC, &T_NUM2, "123456789.12").code, 12345678912LL);
    cr_assert_eq(text_ok(PG_NUMERIC, &T_NUM2, "92233720368547758.07").code, INT64_MAX);
    cr_assert_str_eq(text_err(PG_NUMERIC, &T_NUM2, "99999999999999999999.99"),
                     "numeric value is out of range for a numeric column of scale 2 (value x "
                     "10^2 must fit in 64 bits)");
    cr_assert_str_eq(text_err(PG_NUMERIC, &T_NUM2, "0.000001"),
                     "numeric value has more than 2 decimals");
    cr_assert_str_eq(text_err(PG_NUMERIC, &T_NUM2, "NaN"), "numeric NaN is not supported");
    cr_assert_str_eq(text_err(PG_NUMERIC, &T_NUM2, "Infinity"),
                     "numeric Infinity is not supported");
    cr_assert_str_eq(text_err(PG_NUMERIC, &T_NUM2, "-Infinity"),
                     "numeric -Infinity is not supported");
    cr_assert_str_eq(text_err(PG_NUMERIC, &T_NUM2, "12,5"), "invalid numeric value \"12,5\"");
    cr_assert_str_eq(text_err(PG_NUMERIC, &T_NUM2, ""), "invalid numeric value \"\"");
    cr_assert_str_eq(text_err(PG_NUMERIC, &T_NUM2, "-"), "invalid numeric value \"-\"");
    cr_assert_str_eq(text_err(PG_NUMERIC, &T_NUM2, "."), "invalid numeric value \".\"");
    cr_assert_str_eq(text_err(PG_NUMERIC, &T_NUM2, " 1"), "invalid numeric value \" 1\"");

    cr_assert_eq(text_ok(PG_INT2, &T_INT, "-32768").code, -32768);
    cr_assert_eq(text_ok(PG_INT8, &T_INT, "9223372036854775807").code, INT64_MAX);
    cr_assert_str_eq(text_err(PG_INT8, &T_INT, "-9223372036854775808"),
                     "int8 value is out of range for a 64-bit integer column");
    cr_assert_str_eq(text_err(PG_INT4, &T_INT, "1.5"), "invalid int4 value \"1.5\"");
    cr_assert_str_eq(text_err(PG_INT4, &T_INT, "1e3"), "invalid int4 value \"1e3\"");
    cr_assert_str_eq(text_err(PG_INT4, &T_INT, "NaN"), "invalid int4 value \"NaN\"");
    cr_assert_str_eq(text_err(PG_INT4, &T_INT, ""), "invalid int4 value \"\"");
    cr_assert_eq(text_ok(PG_INT4, &T_NUM2, "-7").code, -700);
    cr_assert_eq(text_ok(PG_INT4, &T_FLOAT, "-7").real, -7.0);

    char longtext[200];
    memset(longtext, '9', sizeof longtext - 1);
    longtext[sizeof longtext - 1] = '\0';
    longtext[5] = 'x';
    cr_assert_str_eq(text_err(PG_NUMERIC, &T_NUM2, longtext),
                     "invalid numeric value "
                     "\"99999x999999999999999999999999999999999999999999999999999999...\"");
}

Test(ingest_pgvalue, text_floats_bools)
{
    struct pgvalue v = text_ok(PG_FLOAT8, &T_FLOAT, "1.5");
    cr_assert_eq(v.code, store_float_code(1.5));
    cr_assert_eq(v.real, 1.5);
    cr_assert_eq(text_ok(PG_FLOAT8, &T_FLOAT, "-1e+300").real, -1e300);
    cr_assert_eq(text_ok(PG_FLOAT8, &T_FLOAT, "-Infinity").real, -INFINITY);
    cr_assert_eq(text_ok(PG_FLOAT8, &T_FLOAT, "Infinity").code, store_float_code(INFINITY));
    cr_assert_eq(text_ok(PG_FLOAT8, &T_FLOAT, "NaN").code, store_float_code(NAN));
    cr_assert_eq(text_ok(PG_FLOAT8, &T_FLOAT, "-0").code, store_float_code(0.0));
    cr_assert_eq(text_ok(PG_FLOAT8, &T_FLOAT, "1e-320").real, 1e-320, "denormals are values");
    cr_assert_eq(text_ok(PG_FLOAT4, &T_FLOAT, "0.1").real, (double)0.1f,
                 "float4 text is read as a float4");
    cr_assert_eq(text_ok(PG_FLOAT4, &T_FLOAT, "1.2345679e+08").real, (double)123456789.123456789f);
    cr_assert_str_eq(text_err(PG_FLOAT8, &T_FLOAT, "1e400"), "invalid float8 value \"1e400\"");
    cr_assert_str_eq(text_err(PG_FLOAT4, &T_FLOAT, "1e39"), "invalid float4 value \"1e39\"");
    cr_assert_str_eq(text_err(PG_FLOAT8, &T_FLOAT, "0x10"), "invalid float8 value \"0x10\"");
    cr_assert_str_eq(text_err(PG_FLOAT8, &T_FLOAT, " 1"), "invalid float8 value \" 1\"");
    cr_assert_str_eq(text_err(PG_FLOAT8, &T_FLOAT, "nan(1)"), "invalid float8 value \"nan(1)\"");
    cr_assert_str_eq(text_err(PG_FLOAT8, &T_FLOAT, ""), "invalid float8 value \"\"");

    cr_assert_eq(text_ok(PG_BOOL, &T_BOOL, "t").code, 1);
    cr_assert_eq(text_ok(PG_BOOL, &T_BOOL, "f").code, 0);
    cr_assert_eq(text_ok(PG_BOOL, &T_BOOL, "true").code, 1);
    cr_assert_eq(text_ok(PG_BOOL, &T_BOOL, "false").code, 0);
    cr_assert_str_eq(text_err(PG_BOOL, &T_BOOL, "maybe"), "invalid bool value \"maybe\"");

    v = text_ok(PG_TEXT, &T_TEXT, "as is ");
    cr_assert_eq(v.len, 6u);
    cr_assert_eq(memcmp(v.text, "as is ", 6), 0);
}

Test(ingest_pgvalue, text_dates)
{
    cr_assert_eq(text_ok(PG_DATE, &T_DATE, "2024-01-17").code, 19739);
    cr_assert_eq(text_ok(PG_DATE, &T_DATE, "1970-01-01").code, 0);
    cr_assert_eq(text_ok(PG_DATE, &T_DATE, "1900-01-01").code, -25567);
    cr_assert_eq(text_ok(PG_DATE, &T_DATE, "2000-02-29").code, 11016);
    cr_assert_eq(text_ok(PG_DATE, &T_DATE, "0001-01-01").code, -719162);
    cr_assert_eq(text_ok(PG_DATE, &T_DATE, "0001-12-31 BC").code, -719163, "1 BC is year 0");
    cr_assert_eq(text_ok(PG_DATE, &T_DATE, "0001-02-29 BC").code, -719162 - 366 + 59,
                 "year 0 is a leap year");
    /* Day numbers from PostgreSQL: SELECT d - '1970-01-01'::date. */
    cr_assert_eq(text_ok(PG_DATE, &T_DATE, "4713-01-01 BC").code, -2451507 + 10957);
    cr_assert_eq(text_ok(PG_DATE, &T_DATE, "5874897-12-31").code, 2145042905);
    cr_assert_eq(text_ok(PG_DATE, &T_TS, "2024-01-17").code, 19739 * DAY_USEC);
    cr_assert_str_eq(text_err(PG_DATE, &T_DATE, "infinity"), "date infinity is not supported");
    cr_assert_str_eq(text_err(PG_DATE, &T_DATE, "-infinity"), "date -infinity is not supported");
    cr_assert_str_eq(text_err(PG_DATE, &T_DATE, "2023-02-29"),
                     "invalid date value \"2023-02-29\"");
    cr_assert_str_eq(text_err(PG_DATE, &T_DATE, "0000-01-01"),
                     "invalid date value \"0000-01-01\"");
    cr_assert_str_eq(text_err(PG_DATE, &T_DATE, "24-01-17"), "invalid date value \"24-01-17\"");
    cr_assert_str_eq(text_err(PG_DATE, &T_DATE, "2024-01-17 "),
                     "invalid date value \"2024-01-17 \"");
    cr_assert_str_eq(text_err(PG_DATE, &T_DATE, "01/17/2024"),
                     "invalid date value \"01/17/2024\"");
}

Test(ingest_pgvalue, text_timestamps)
{
    const int64_t jan17 = 19739 * DAY_USEC;
    cr_assert_eq(text_ok(PG_TIMESTAMP, &T_TS, "2024-01-17 10:00:00").code,
                 jan17 + 10 * 3600 * USEC);
    cr_assert_eq(text_ok(PG_TIMESTAMP, &T_TS, "2024-01-17 10:00:00.5").code,
                 jan17 + 10 * 3600 * USEC + 500000);
    cr_assert_eq(text_ok(PG_TIMESTAMP, &T_TS, "2024-01-17 10:00:00.000001").code,
                 jan17 + 10 * 3600 * USEC + 1);
    cr_assert_eq(text_ok(PG_TIMESTAMP, &T_TS, "1969-12-31 23:59:59.999999").code, -1);
    cr_assert_eq(text_ok(PG_TIMESTAMPTZ, &T_TS, "2024-01-17 10:00:00+00").code,
                 jan17 + 10 * 3600 * USEC);
    cr_assert_eq(text_ok(PG_TIMESTAMPTZ, &T_TS, "2024-01-17 15:30:00+05:30").code,
                 jan17 + 10 * 3600 * USEC);
    cr_assert_eq(text_ok(PG_TIMESTAMPTZ, &T_TS, "2024-01-17 06:30:00.25-03:30").code,
                 jan17 + 10 * 3600 * USEC + 250000);
    cr_assert_eq(text_ok(PG_TIMESTAMPTZ, &T_TS, "1850-01-01 00:19:32+00:19:32").code,
                 (int64_t)-43829 * DAY_USEC, "local mean time offsets have seconds");
    cr_assert_eq(text_ok(PG_TIMESTAMPTZ, &T_TS, "0044-03-15 12:19:32+00:19:32 BC").code,
                 text_ok(PG_TIMESTAMP, &T_TS, "0044-03-15 12:00:00 BC").code);
    cr_assert_eq(text_ok(PG_TIMESTAMP, &T_TS, "0044-03-15 12:00:00 BC").code,
                 text_ok(PG_DATE, &T_TS, "0044-03-15 BC").code + 12 * 3600 * USEC);
    cr_assert_eq(text_ok(PG_DATE, &T_DATE, "0044-03-15 BC").code, -735160,
                 "the Ides of March, 44 BC");
    cr_assert_eq(text_ok(PG_TIMESTAMP, &T_TS, "12345-06-07 08:09:10.5").code,
                 text_ok(PG_DATE, &T_TS, "12345-06-07").code + (8 * 3600 + 9 * 60 + 10) * USEC +
                     500000);
    cr_assert_eq(text_ok(PG_TIMESTAMP, &T_TS, "2024-01-17T10:00:00").code,
                 jan17 + 10 * 3600 * USEC);

    cr_assert_str_eq(text_err(PG_TIMESTAMPTZ, &T_TS, "infinity"),
                     "timestamptz infinity is not supported");
    cr_assert_str_eq(text_err(PG_TIMESTAMP, &T_TS, "-infinity"),
                     "timestamp -infinity is not supported");
    cr_assert_str_eq(text_err(PG_TIMESTAMP, &T_TS, "2024-01-17 10:00:00+00"),
                     "timestamp value \"2024-01-17 10:00:00+00\" has a time zone offset");
    cr_assert_str_eq(text_err(PG_TIMESTAMP, &T_TS, "2024-01-17 24:00:00"),
                     "invalid timestamp value \"2024-01-17 24:00:00\"");
    cr_assert_str_eq(text_err(PG_TIMESTAMP, &T_TS, "2024-01-17 10:00"),
                     "invalid timestamp value \"2024-01-17 10:00\"");
    cr_assert_str_eq(text_err(PG_TIMESTAMP, &T_TS, "2024-01-17 10:00:00.1234567"),
                     "invalid timestamp value \"2024-01-17 10:00:00.1234567\"");
    cr_assert_str_eq(text_err(PG_TIMESTAMP, &T_TS, "2024-01-17 10:00:00."),
                     "invalid timestamp value \"2024-01-17 10:00:00.\"");
    cr_assert_str_eq(text_err(PG_TIMESTAMPTZ, &T_TS, "2024-01-17 10:00:00+16"),
                     "invalid timestamptz value \"2024-01-17 10:00:00+16\"");
    cr_assert_str_eq(text_err(PG_TIMESTAMPTZ, &T_TS, "2024-01-17 10:00:00+5"),
                     "invalid timestamptz value \"2024-01-17 10:00:00+5\"");
    cr_assert_str_eq(text_err(PG_TIMESTAMP, &T_TS, "99999999-12-31 00:00:00"),
                     "timestamp value is out of range");
    cr_assert_str_eq(text_err(PG_TIMESTAMP, &T_DATE, "2024-01-17 10:00:00"),
                     "a timestamp value cannot be stored in a date column");
}

/* ---- Back from a code ------------------------------------------------------------ */

/* The initial load keeps only a value's code while it sets rows aside
 * (row_record.h): from the code and the type, pgvalue_from_code must give
 * back every field decoding gave, to the last bit of the double. */
Test(ingest_pgvalue, a_code_gives_back_the_value_decoding_gave)
{
    static const struct {
        uint32_t oid;
        const struct store_column_type *t;
        const char *text;
    } cases[] = {
        {PG_INT8, &T_INT, "0"}, {PG_INT8, &T_INT, "-9223372036854775807"},
        {PG_INT8, &T_INT, "9223372036854775807"}, {PG_INT4, &T_INT, "-7"},
        {PG_NUMERIC, &T_NUM2, "12.34"}, {PG_NUMERIC, &T_NUM2, "-0.01"},
        {PG_NUMERIC, &T_NUM2, "92233720368547758.07"}, {PG_NUMERIC, &T_NUM6, "0.000001"},
        {PG_NUMERIC, &T_NUM6, "-9223372036854.775807"}, {PG_NUMERIC, &T_NUM0, "123456789"},
        {PG_FLOAT8, &T_FLOAT, "1.5"}, {PG_FLOAT8, &T_FLOAT, "-0"},
        {PG_FLOAT8, &T_FLOAT, "NaN"}, {PG_FLOAT8, &T_FLOAT, "-Infinity"},
        {PG_FLOAT8, &T_FLOAT, "1e-320"}, {PG_FLOAT4, &T_FLOAT, "0.1"},
        {PG_INT4, &T_FLOAT, "-7"}, {PG_BOOL, &T_BOOL, "t"}, {PG_BOOL, &T_BOOL, "f"},
        {PG_DATE, &T_DATE, "2024-01-17"}, {PG_DATE, &T_DATE, "1969-12-31"},
        {PG_TIMESTAMPTZ, &T_TS, "2024-01-17 10:00:00.123456+00"},
        {PG_TIMESTAMPTZ, &T_TS, "1900-01-01 00:00:00+00"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct pgvalue v = text_ok(cases[i].oid, cases[i].t, cases[i].text), back;
        memset(&back, 0xa5, sizeof back);
        pgvalue_from_code(cases[i].t, v.code, &back);
        cr_assert_eq(back.code, v.code, "%s", cases[i].text);
        cr_assert(back.exact == v.exact, "%s: exact", cases[i].text);
        cr_assert(same_double(back.real, v.real), "%s: real %.17g, decoded %.17g", cases[i].text,
                  back.real, v.real);
        cr_assert(back.text == NULL && back.len == 0, "%s", cases[i].text);
    }
}

/* ---- Against PostgreSQL ------------------------------------------------------------- */

static PGresult *exec_ok(PGconn *c, const char *sql, ExecStatusType want)
{
    PGresult *r = PQexec(c, sql);
    cr_assert_eq(PQresultStatus(r), want, "%s: %s", sql, PQerrorMessage(c));
    return r;
}

#define NCOLS 18
#define NROWS 600

/* Column list of the cross-check, in both queries. */
static const char *const columns[NCOLS] = {
    "i2", "i4", "i8", "n2", "n0", "n4", "nu", "nx", "f4", "f8",
    "tx", "vc", "bc", "b", "d", "ts", "tz", "tzl",
};

struct cell {
    bool is_null;
    int rc;
    char err[256];
    struct pgvalue v;
    char *text; /* TEXT values, copied out of the COPY buffer */
};

static struct cell (*cells)[NCOLS];

Test(ingest_pgvalue, against_postgresql, .timeout = 180)
{
    PGconn *c = pgtest_connect(NULL);
    cr_assert_not_null(c, "no test PostgreSQL (see stderr)");
    PQclear(exec_ok(c, "SET extra_float_digits = 3", PGRES_COMMAND_OK));
    PQclear(exec_ok(c, "SET TimeZone = 'Europe/Amsterdam'", PGRES_COMMAND_OK));
    PQclear(exec_ok(c, "SET DateStyle = 'ISO, MDY'", PGRES_COMMAND_OK));
    PQclear(exec_ok(c, "SELECT setseed(0.25)", PGRES_TUPLES_OK));
    PQclear(exec_ok(c,
                    "CREATE TEMP TABLE x (id int, i2 int2, i4 int4, i8 int8, n2 numeric(12,2), "
                    "n0 numeric(18,0), n4 numeric(20,4), nu numeric, nx numeric(30,8), "
                    "f4 float4, f8 float8, tx text, vc varchar(20), bc char(5), b bool, "
                    "d date, ts timestamp(6), tz timestamptz, tzl timestamptz)",
                    PGRES_COMMAND_OK));
    /* Random values, NULLs in every column. The unconstrained numeric nu
     * gets up to 6 decimals (the default scale); nx is read at scale 8. */
    PQclear(exec_ok(
        c,
        "INSERT INTO x SELECT g,"
        " CASE WHEN g % 13 = 1 THEN NULL ELSE ((random() - 0.5) * 65534)::int2 END,"
        " CASE WHEN g % 13 = 2 THEN NULL ELSE ((random() - 0.5) * 4e9)::int4 END,"
        " CASE WHEN g % 13 = 3 THEN NULL ELSE ((random() - 0.5) * 1.8e19)::numeric::int8 END,"
        " CASE WHEN g % 13 = 4 THEN NULL ELSE round(((random() - 0.5) * 10 ^ (random() * 10))"
        "::numeric, 2) END,"
        " CASE WHEN g % 13 = 5 THEN NULL ELSE round(((random() - 0.5) * 10 ^ (random() * 18))"
        "::numeric, 0) END,"
        " CASE WHEN g % 13 = 6 THEN NULL ELSE round(((random() - 0.5) * 10 ^ (random() * 15))"
        "::numeric, 4) END,"
        " CASE WHEN g % 13 = 7 THEN NULL ELSE round(((random() - 0.5) * 10 ^ (random() * 12))"
        "::numeric, (g % 7)) END,"
        " CASE WHEN g % 13 = 8 THEN NULL ELSE round(((random() - 0.5) * 10 ^ (random() * 11))"
        "::numeric, 8) END,"
        " CASE WHEN g % 13 = 9 THEN NULL ELSE ((random() - 0.5) * 10 ^ (random() * 60 - 30))"
        "::float4 END,"
        " CASE WHEN g % 13 = 10 THEN NULL ELSE (random() - 0.5) * 10 ^ (random() * 600 - 300) "
        "END,"
        " CASE WHEN g % 13 = 11 THEN NULL WHEN g % 17 = 0 THEN '' ELSE md5(g::text) END,"
        " CASE WHEN g % 13 = 12 THEN NULL ELSE left(md5((g * 7)::text), g % 20) END,"
        " CASE WHEN g % 13 = 0 THEN NULL ELSE left(md5((g * 3)::text), g % 6) END,"
        " CASE WHEN g % 11 = 0 THEN NULL ELSE random() < 0.5 END,"
        " CASE WHEN g % 11 = 1 THEN NULL ELSE date '2000-01-01' + ((random() - 0.5) * 1e6)::int "
        "END,"
        " CASE WHEN g % 11 = 2 THEN NULL ELSE timestamp '2000-01-01' + (random() - 0.5) * "
        "interval '600 years' END,"
        " CASE WHEN g % 11 = 3 THEN NULL ELSE timestamptz '2000-01-01 00:00+00' + (random() - "
        "0.5) * interval '120 years' END,"
        " CASE WHEN g % 11 = 4 THEN NULL ELSE timestamptz '1800-01-01 00:00+00' + random() * "
        "interval '150 years' END"
        " FROM generate_series(1, 560) g",
        PGRES_COMMAND_OK));
    /* Edge values the random ones may miss. */
    PQclear(exec_ok(
        c,
        "INSERT INTO x VALUES"
        " (1001, -32768, -2147483648, -9223372036854775807, -0.01, 0, 0.0001, -0.000001, "
        "  92233720368.54775807, '-0', '-0', 'é', ' x', 'a', true, '0044-03-15 BC',"
        "  '0001-01-01 00:00:00 BC', '1900-01-01 00:00:00.000001+00', '1600-06-01 12:00+00'),"
        " (1002, 32767, 2147483647, 9223372036854775807, 9999999999.99, "
        "  999999999999999999, 9999999999999999.9999, 0.1, -92233720368.54775807,"
        "  'NaN', 'NaN', '', '', '', false, '5874897-12-31', '294276-12-31 23:59:59.999999',"
        "  '1969-12-31 23:59:59.999999+00', '1937-07-01 00:00+00'),"
        " (1003, 0, 0, 0, 0, 0, 0, 12.5, 0, 'Infinity', '-Infinity', 'NULL', 'null', 'N', "
        "  NULL, '4713-01-01 BC', '4713-11-24 00:00:00 BC', '2024-03-31 01:59:59.999999+00',"
        "  '2024-10-27 00:30+00'),"
        " (1004, 1, 1, 1, 123456789.12, -1, -0.0001, 99999999999999999, 1e-8, 1.5, 1e300,"
        "  'tab\there', 'new\nline', 'q\"', NULL, '1999-12-31', '1999-12-31 23:59:59.5', "
        "  '2000-01-01 00:00:00.000001+00', '1800-01-01 00:00+00'),"
        " (1005, 2, 3, 4, 0.5, 5, 6.7, 1e-7, 12345678901.23456789, '1e-40', '4.9e-324', "
        "  'x', 'y', 'z', true, '2000-01-01', '2000-01-01', '2000-01-01 00:00+05:30',"
        "  '1900-05-01 00:00+00')",
        PGRES_COMMAND_OK));

    /* Types, as the source reader gets them. */
    char sql[1024] = "SELECT ";
    for (int i = 0; i < NCOLS; i++)
        snprintf(sql + strlen(sql), sizeof sql - strlen(sql), "%s%s", i ? ", " : "", columns[i]);
    char probe[1100];
    snprintf(probe, sizeof probe, "%s FROM x LIMIT 0", sql);
    strcat(sql, " FROM x ORDER BY id");
    PGresult *r = exec_ok(c, probe, PGRES_TUPLES_OK);
    uint32_t oids[NCOLS];
    struct store_column_type types[NCOLS];
    for (int i = 0; i < NCOLS; i++) {
        char err[256];
        oids[i] = PQftype(r, i);
        cr_assert_eq(pgvalue_store_type(oids[i], PQfmod(r, i), &types[i], err, sizeof err), 0,
                     "%s: %s", columns[i], err);
    }
    PQclear(r);
    cr_assert_eq(types[3].scale, 2);
    cr_assert_eq(types[4].scale, 0);
    cr_assert_eq(types[5].scale, 4);
    cr_assert_eq(types[6].scale, 6);
    cr_assert_eq(types[7].scale, 8);

    /* Binary COPY through the COPY parser, in libpq's chunks. */
    char copy[1200];
    snprintf(copy, sizeof copy, "COPY (%s) TO STDOUT (FORMAT binary)", sql);
    PQclear(exec_ok(c, copy, PGRES_COPY_OUT));
    cells = calloc(NROWS, sizeof *cells);
    cr_assert_not_null(cells);
    struct copy_parser p;
    copy_parser_init(&p);
    struct copy_tuple *t = malloc(sizeof *t);
    int nrows = 0, n;
    char *buf;
    while ((n = PQgetCopyData(c, &buf, 0)) > 0) {
        cr_assert_eq(copy_parser_feed(&p, buf, (size_t)n), 0);
        PQfreemem(buf);
        int got;
        while ((got = copy_parser_next(&p, t)) == 1) {
            cr_assert_lt(nrows, NROWS);
            cr_assert_eq(t->nfields, NCOLS);
            for (int i = 0; i < NCOLS; i++) {
                struct cell *cl = &cells[nrows][i];
                cl->is_null = t->fields[i].is_null;
                if (cl->is_null)
                    continue;
                cl->rc = pgvalue_decode_binary(oids[i], &types[i], t->fields[i].data,
                                               t->fields[i].len, &cl->v, cl->err, sizeof cl->err);
                if (cl->rc == 0 && types[i].type == STORE_TYPE_TEXT) {
                    cl->text = strndup(cl->v.text, cl->v.len);
                    cl->v.text = NULL;
                }
            }
            nrows++;
        }
        cr_assert_eq(got, 0, "%s", p.error);
    }
    cr_assert_eq(n, -1, "%s", PQerrorMessage(c));
    cr_assert_eq(copy_parser_finish(&p), 0, "%s", p.error);
    copy_parser_free(&p);
    free(t);
    for (PGresult *end; (end = PQgetResult(c)) != NULL; PQclear(end))
        cr_assert_eq(PQresultStatus(end), PGRES_COMMAND_OK, "%s", PQerrorMessage(c));
    cr_assert_eq(nrows, 565);

    /* The same values as text, and the numerics scaled by PostgreSQL
     * (value x 10^scale, exact). Text results are the types' output functions, what
     * pgoutput sends in text mode (col::text would be the same but for
     * char(n), whose cast to text drops the padding its output keeps). */
    char text_sql[2048] = "SELECT ";
    for (int i = 0; i < NCOLS; i++)
        snprintf(text_sql + strlen(text_sql), sizeof text_sql - strlen(text_sql), "%s%s",
                 i ? ", " : "", columns[i]);
    for (int i = 3; i <= 7; i++)
        snprintf(text_sql + strlen(text_sql), sizeof text_sql - strlen(text_sql),
                 ", trunc(%s * 1e%d)::text", columns[i], types[i].scale);
    strcat(text_sql, " FROM x ORDER BY id");
    r = exec_ok(c, text_sql, PGRES_TUPLES_OK);
    cr_assert_eq(PQntuples(r), nrows);
    int checked = 0, refused = 0;
    for (int row = 0; row < nrows; row++) {
        for (int i = 0; i < NCOLS; i++) {
            struct cell *cl = &cells[row][i];
            cr_assert_eq(PQgetisnull(r, row, i), cl->is_null, "row %d %s", row, columns[i]);
            if (cl->is_null)
                continue;
            const char *s = PQgetvalue(r, row, i);
            struct pgvalue tv;
            char terr[256] = "";
            int trc = pgvalue_decode_text(oids[i], &types[i], s, (size_t)PQgetlength(r, row, i),
                                          &tv, terr, sizeof terr);
            cr_assert_eq(trc, cl->rc, "row %d %s \"%s\": binary %d (%s), text %d (%s)", row,
                         columns[i], s, cl->rc, cl->err, trc, terr);
            checked++;
            if (trc) {
                cr_assert_str_eq(terr, cl->err, "row %d %s \"%s\"", row, columns[i], s);
                refused++;
                continue;
            }
            if (types[i].type == STORE_TYPE_TEXT) {
                cr_assert_eq(tv.len, strlen(cl->text), "row %d %s", row, columns[i]);
                cr_assert_eq(memcmp(tv.text, cl->text, tv.len), 0, "row %d %s", row, columns[i]);
                continue;
            }
            cr_assert_eq(tv.code, cl->v.code, "row %d %s \"%s\": text %lld, binary %lld", row,
                         columns[i], s, (long long)tv.code, (long long)cl->v.code);
            cr_assert(tv.exact == cl->v.exact, "row %d %s", row, columns[i]);
            cr_assert(same_double(tv.real, cl->v.real), "row %d %s \"%s\": %.17g vs %.17g", row,
                      columns[i], s, tv.real, cl->v.real);
            if (i >= 3 && i <= 7) {
                const char *scaled = PQgetvalue(r, row, NCOLS + (i - 3));
                cr_assert_eq(cl->v.code, strtoll(scaled, NULL, 10),
                             "row %d %s %s: code %lld, PostgreSQL's value x 10^%d %s", row,
                             columns[i], s, (long long)cl->v.code, types[i].scale, scaled);
            }
        }
    }
    PQclear(r);
    cr_assert_gt(checked, 8000);
    cr_assert_eq(refused, 4, "the edge rows hold four values Straum refuses");
    for (int row = 0; row < nrows; row++)
        for (int i = 0; i < NCOLS; i++)
            free(cells[row][i].text);
    free(cells);
    PQfinish(c);
}
