/* pgvalue.c -- PostgreSQL values (binary send format and text output)
 * turned into store codes. What PostgreSQL writes is read here, strictly;
 * what a person writes (a view's FILTER constants, an ask's parameters)
 * goes through store_code_of_value, PostgreSQL's input rules.
 *
 * Numbers are converted exactly: a numeric becomes value x 10^scale in a
 * 128-bit integer built digit by digit, never through a double; a digit
 * below the column's scale that is not zero is an error, never rounded. The
 * double a numeric also yields (for percentile_cont and the like) is strtod
 * of its exact decimal text, which is what PostgreSQL's numeric::float8 cast
 * computes, so both agree to the last bit.
 *
 * Floats are canonicalised the way PostgreSQL compares them: every NaN is
 * one NaN, and -0 is 0 (float8eq says -0 = 0, and PostgreSQL groups them
 * together), so equal values get equal codes.
 *
 * Codes never collide with STORE_NULL (INT64_MIN): a value whose code would
 * be INT64_MIN is refused as out of range. */
#include "base/error.h"
#include "base/bytes.h"
#include "ingest/pgvalue.h"

#include "sql/sql.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define PG_EPOCH_DAYS 10957                 /* 2000-01-01 in days since 1970 */
#define PG_EPOCH_USEC 946684800000000LL     /* ... and in microseconds */
#define USEC_PER_DAY 86400000000LL
#define MAX_SCALE 18                        /* 10^19 > INT64_MAX */
#define SHOW 60                             /* bytes of a bad value quoted in messages */

typedef unsigned __int128 u128;


/* "%.*s%s" arguments quoting at most SHOW bytes of a value. */
#define QUOTE(s, len) (int)((len) < SHOW ? (len) : SHOW), (s), ((len) > SHOW ? "..." : "")

static const char *pg_type_name(uint32_t oid)
{
    switch (oid) {
    case PG_BOOL: return "bool";
    case PG_INT8: return "int8";
    case PG_INT2: return "int2";
    case PG_INT4: return "int4";
    case PG_TEXT: return "text";
    case PG_FLOAT4: return "float4";
    case PG_FLOAT8: return "float8";
    case PG_BPCHAR: return "bpchar";
    case PG_VARCHAR: return "varchar";
    case PG_DATE: return "date";
    case PG_TIMESTAMP: return "timestamp";
    case PG_TIMESTAMPTZ: return "timestamptz";
    case PG_NUMERIC: return "numeric";
    }
    return NULL;
}

static const char *store_type_name(enum store_type t)
{
    switch (t) {
    case STORE_TYPE_INT: return "integer";
    case STORE_TYPE_NUMERIC: return "numeric";
    case STORE_TYPE_FLOAT: return "float";
    case STORE_TYPE_TEXT: return "text";
    case STORE_TYPE_BOOL: return "boolean";
    case STORE_TYPE_DATE: return "date";
    case STORE_TYPE_TIMESTAMP: return "timestamp";
    }
    return "unknown";
}

/* ---- Column types --------------------------------------------------------- */

int pgvalue_store_type(uint32_t type_oid, int32_t typmod, struct store_column_type *out,
                       char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    out->pg_oid = type_oid;
    switch (type_oid) {
    case PG_INT2:
    case PG_INT4:
    case PG_INT8:
        out->type = STORE_TYPE_INT;
        return 0;
    case PG_NUMERIC: {
        int scale = PGVALUE_DEFAULT_NUMERIC_SCALE;
        if (typmod >= 4) {
            /* Low 11 bits, signed since PostgreSQL 15 (numeric(3,-2)); the
             * same as (typmod - 4) & 0xFFFF for the scales 0 to 1000 older
             * servers allow. */
            uint32_t m = (uint32_t)(typmod - 4);
            scale = (int)((m & 0x7FF) ^ 1024) - 1024;
        }
        /* A negative scale rounds to tens, hundreds...: every value is an
         * integer, kept exactly at scale 0. */
        if (scale < 0)
            scale = 0;
        if (scale > MAX_SCALE)
            return error_fmt(err, errlen,
                        "numeric column with scale %d is not supported: Straum keeps numerics "
                        "as 64-bit integers at the column's scale, at most %d decimals",
                        scale, MAX_SCALE);
        out->type = STORE_TYPE_NUMERIC;
        out->scale = (int16_t)scale;
        return 0;
    }
    case PG_FLOAT4:
    case PG_FLOAT8:
        out->type = STORE_TYPE_FLOAT;
        return 0;
    case PG_TEXT:
    case PG_VARCHAR:
    case PG_BPCHAR:
        out->type = STORE_TYPE_TEXT;
        return 0;
    case PG_BOOL:
        out->type = STORE_TYPE_BOOL;
        return 0;
    case PG_DATE:
        out->type = STORE_TYPE_DATE;
        return 0;
    case PG_TIMESTAMP:
    case PG_TIMESTAMPTZ:
        out->type = STORE_TYPE_TIMESTAMP;
        return 0;
    }
    return error_fmt(err, errlen,
                "type OID %u is not supported; Straum keeps int2/4/8, numeric, float4/8, "
                "text/varchar, bool, date and timestamp(tz) columns",
                (unsigned)type_oid);
}

/* ---- Which source types go into which column types -------------------------- */

enum src {
    SRC_INT, SRC_NUMERIC, SRC_FLOAT4, SRC_FLOAT8, SRC_BOOL, SRC_DATE, SRC_TIMESTAMP,
    SRC_TIMESTAMPTZ, SRC_TEXT,
};

static int source_of(uint32_t oid, const struct store_column_type *t, enum src *src,
                     char *err, size_t errlen)
{
    switch (oid) {
    case PG_INT2: case PG_INT4: case PG_INT8: *src = SRC_INT; break;
    case PG_NUMERIC: *src = SRC_NUMERIC; break;
    case PG_FLOAT4: *src = SRC_FLOAT4; break;
    case PG_FLOAT8: *src = SRC_FLOAT8; break;
    case PG_BOOL: *src = SRC_BOOL; break;
    case PG_DATE: *src = SRC_DATE; break;
    case PG_TIMESTAMP: *src = SRC_TIMESTAMP; break;
    case PG_TIMESTAMPTZ: *src = SRC_TIMESTAMPTZ; break;
    case PG_TEXT: case PG_VARCHAR: case PG_BPCHAR: *src = SRC_TEXT; break;
    default:
        return error_fmt(err, errlen,
                    "type OID %u is not supported; Straum keeps int2/4/8, numeric, float4/8, "
                    "text/varchar, bool, date and timestamp(tz) columns",
                    (unsigned)oid);
    }
    bool ok = false;
    switch (t->type) {
    case STORE_TYPE_INT: ok = *src == SRC_INT || *src == SRC_NUMERIC; break;
    case STORE_TYPE_NUMERIC: ok = *src == SRC_INT || *src == SRC_NUMERIC; break;
    case STORE_TYPE_FLOAT: ok = *src == SRC_INT || *src == SRC_FLOAT4 || *src == SRC_FLOAT8; break;
    case STORE_TYPE_TEXT: ok = *src == SRC_TEXT; break;
    case STORE_TYPE_BOOL: ok = *src == SRC_BOOL; break;
    case STORE_TYPE_DATE: ok = *src == SRC_DATE; break;
    case STORE_TYPE_TIMESTAMP:
        ok = *src == SRC_DATE || *src == SRC_TIMESTAMP || *src == SRC_TIMESTAMPTZ;
        break;
    }
    if (!ok)
        return error_fmt(err, errlen, "a %s value cannot be stored in a %s column", pg_type_name(oid),
                    store_type_name(t->type));
    if (t->type == STORE_TYPE_NUMERIC && (t->scale < 0 || t->scale > MAX_SCALE))
        return error_fmt(err, errlen, "numeric column scale %d is out of range (0 to %d)",
                    (int)t->scale, MAX_SCALE);
    return 0;
}

/* ---- Exact scaled integers --------------------------------------------------- */

/* Magnitudes stay below 10^38, well inside 128 bits; anything that large is
 * out of range for a 64-bit code anyway. */
static u128 pow10_u128(int e)
{
    static const uint64_t p[20] = {
        1ULL, 10ULL, 100ULL, 1000ULL, 10000ULL, 100000ULL, 1000000ULL, 10000000ULL,
        100000000ULL, 1000000000ULL, 10000000000ULL, 100000000000ULL, 1000000000000ULL,
        10000000000000ULL, 100000000000000ULL, 1000000000000000ULL, 10000000000000000ULL,
        100000000000000000ULL, 1000000000000000000ULL, 10000000000000000000ULL,
    };
    return e <= 19 ? (u128)p[e] : (u128)p[19] * p[e - 19];
}

#define MAG_LIMIT_EXP 38

enum num_status {
    NUM_OK, NUM_SYNTAX, NUM_DECIMALS, NUM_RANGE, NUM_NAN, NUM_PINF, NUM_NINF,
};

/* *acc += d x 10^e (e >= 0), keeping *acc < 10^38. */
static enum num_status add_digits(u128 *acc, uint32_t d, int64_t e)
{
    if (d == 0)
        return NUM_OK;
    if (e >= MAG_LIMIT_EXP)
        return NUM_RANGE;
    u128 p = pow10_u128((int)e);
    /* Without a 128-bit division when the sum plainly fits (every digit of
     * an ordinary value; __udivti3 was 2% of a load, perf): a
     * digit under 10^4 at e <= 33 adds under 10^37. */
    if (d < 10000 && e <= 33 && *acc < 9 * pow10_u128(37)) {
        *acc += (u128)d * p;
        return NUM_OK;
    }
    u128 limit = pow10_u128(MAG_LIMIT_EXP);
    if (p > (limit - 1 - *acc) / d)
        return NUM_RANGE;
    *acc += (u128)d * p;
    return NUM_OK;
}

/* A scaled magnitude into code and exact. */
static enum num_status set_scaled(struct pgvalue *out, bool neg, u128 mag)
{
    if (mag > (u128)INT64_MAX)
        return NUM_RANGE; /* also keeps INT64_MIN, which is STORE_NULL, out */
    int64_t code = neg ? -(int64_t)mag : (int64_t)mag;
    out->code = code;
    out->exact = code;
    out->real = 0;
    return NUM_OK;
}

static enum num_status int_scaled(struct pgvalue *out, int64_t v, int scale)
{
    bool neg = v < 0;
    u128 mag = neg ? (u128)((uint64_t)0 - (uint64_t)v) : (u128)v;
    mag *= pow10_u128(scale); /* < 2^63 x 10^18 < 10^38 */
    return set_scaled(out, neg, mag);
}

/* numeric's send format: i16 ndigits, i16 weight, u16 sign, u16 dscale, then
 * ndigits base-10000 digits, the first worth 10000^weight. */
static enum num_status numeric_binary_scaled(const uint8_t *p, size_t len, int scale,
                                             struct pgvalue *out, char *err, size_t errlen)
{
    if (len < 8) {
        error_fmt(err, errlen, "numeric value has %zu bytes, expected at least 8", len);
        return NUM_SYNTAX;
    }
    int ndigits = be_load_i16(p), weight = be_load_i16(p + 2);
    unsigned sign = be_load_u16(p + 4), dscale = be_load_u16(p + 6);
    if (ndigits < 0) {
        error_fmt(err, errlen, "numeric value has %d digits", ndigits);
        return NUM_SYNTAX;
    }
    if (len != 8 + 2 * (size_t)ndigits) {
        error_fmt(err, errlen, "numeric value has %zu bytes, expected %zu for %d digits", len,
             8 + 2 * (size_t)ndigits, ndigits);
        return NUM_SYNTAX;
    }
    switch (sign) {
    case 0x0000: case 0x4000: break;
    case 0xC000: return NUM_NAN;
    case 0xD000: return NUM_PINF;
    case 0xF000: return NUM_NINF;
    default:
        error_fmt(err, errlen, "numeric value has invalid sign 0x%04x", sign);
        return NUM_SYNTAX;
    }
    if ((dscale & 0x3FFF) != dscale) {
        error_fmt(err, errlen, "numeric value has invalid display scale %u", dscale);
        return NUM_SYNTAX;
    }
    u128 mag = 0;
    enum num_status st = NUM_OK;
    for (int i = 0; i < ndigits; i++) {
        int d = be_load_i16(p + 8 + 2 * i);
        if (d < 0 || d > 9999) {
            error_fmt(err, errlen, "numeric value has invalid digit %d", d);
            return NUM_SYNTAX;
        }
        if (d == 0 || st != NUM_OK)
            continue;
        int64_t e = 4 * ((int64_t)weight - i) + scale; /* decimal exponent of the digit's units */
        if (e >= 0) {
            st = add_digits(&mag, (uint32_t)d, e);
        } else if (e <= -4) {
            st = NUM_DECIMALS;
        } else {
            uint32_t div = (uint32_t)pow10_u128((int)-e);
            st = (uint32_t)d % div ? NUM_DECIMALS : add_digits(&mag, (uint32_t)d / div, 0);
        }
    }
    if (st != NUM_OK)
        return st;
    return set_scaled(out, sign == 0x4000, mag);
}

static bool word_is(const char *s, size_t len, const char *w)
{
    return strlen(w) == len && strncasecmp(s, w, len) == 0;
}

/* Decimal text: [+-] digits [. digits] [e [+-] digits], at least one digit
 * in the mantissa; also NaN and [+-]Infinity / inf, which are reported as
 * such. numeric's output never has an exponent, but view constants may. */
static enum num_status decimal_text_scaled(const char *s, size_t len, int scale,
                                           struct pgvalue *out)
{
    size_t i = 0;
    bool neg = false;
    if (i < len && (s[i] == '+' || s[i] == '-'))
        neg = s[i++] == '-';
    if (word_is(s, len, "nan"))
        return NUM_NAN;
    if (word_is(s + i, len - i, "infinity") || word_is(s + i, len - i, "inf"))
        return neg ? NUM_NINF : NUM_PINF;
    size_t int0 = i;
    while (i < len && s[i] >= '0' && s[i] <= '9')
        i++;
    size_t int1 = i, frac0 = i, frac1 = i;
    if (i < len && s[i] == '.') {
        frac0 = ++i;
        while (i < len && s[i] >= '0' && s[i] <= '9')
            i++;
        frac1 = i;
    }
    if (int1 == int0 && frac1 == frac0)
        return NUM_SYNTAX;
    int64_t exp = 0;
    if (i < len && (s[i] == 'e' || s[i] == 'E')) {
        i++;
        bool eneg = false;
        if (i < len && (s[i] == '+' || s[i] == '-'))
            eneg = s[i++] == '-';
        size_t e0 = i;
        while (i < len && s[i] >= '0' && s[i] <= '9') {
            if (exp < 1000000000)
                exp = exp * 10 + (s[i] - '0'); /* beyond any range; clamped */
            i++;
        }
        if (i == e0)
            return NUM_SYNTAX;
        if (eneg)
            exp = -exp;
    }
    if (i != len)
        return NUM_SYNTAX;
    u128 mag = 0;
    enum num_status st = NUM_OK;
    int64_t nint = (int64_t)(int1 - int0);
    for (size_t k = int0; k < frac1 && st == NUM_OK; k++) {
        if (k == int1) {
            k = frac0 - 1; /* skip the point */
            continue;
        }
        int d = s[k] - '0';
        if (d == 0)
            continue;
        /* Exponent of this digit: integer digits count down from nint - 1,
         * fraction digits from -1. */
        int64_t pos = k < int1 ? nint - 1 - (int64_t)(k - int0) : -(int64_t)(k - frac0) - 1;
        int64_t e = pos + exp + scale;
        st = e < 0 ? NUM_DECIMALS : add_digits(&mag, (uint32_t)d, e);
    }
    if (st != NUM_OK)
        return st;
    return set_scaled(out, neg, mag);
}

/* Messages for a value (not a constant) that failed to become a scaled
 * integer. */
static int number_error(enum num_status st, const struct store_column_type *t, int scale,
                        uint32_t oid, const char *text, size_t len, char *err, size_t errlen)
{
    switch (st) {
    case NUM_OK:
        return 0;
    case NUM_SYNTAX:
        if (text)
            return error_fmt(err, errlen, "invalid %s value \"%.*s%s\"", pg_type_name(oid),
                        QUOTE(text, len));
        return -1; /* message already written */
    case NUM_DECIMALS:
        if (t->type == STORE_TYPE_INT)
            return error_fmt(err, errlen, "numeric value is not an integer, but the column is");
        return error_fmt(err, errlen, "numeric value has more than %d decimals", scale);
    case NUM_RANGE:
        if (t->type == STORE_TYPE_INT)
            return error_fmt(err, errlen, "%s value is out of range for a 64-bit integer column",
                        pg_type_name(oid));
        return error_fmt(err, errlen,
                    "%s value is out of range for a numeric column of scale %d (value x "
                    "10^%d must fit in 64 bits)",
                    pg_type_name(oid), scale, scale);
    case NUM_NAN:
        return error_fmt(err, errlen, "numeric NaN is not supported");
    case NUM_PINF:
        return error_fmt(err, errlen, "numeric Infinity is not supported");
    case NUM_NINF:
        return error_fmt(err, errlen, "numeric -Infinity is not supported");
    }
    return -1;
}

static int column_scale(const struct store_column_type *t)
{
    return t->type == STORE_TYPE_NUMERIC ? t->scale : 0;
}

/* ---- Floats, booleans, times ------------------------------------------------- */

static void set_float(struct pgvalue *out, double v)
{
    if (isnan(v))
        v = NAN;          /* one NaN, whatever its sign and payload */
    else if (v == 0)
        v = 0.0;          /* -0 = 0 */
    out->code = store_float_code(v);
    out->exact = 0;
    out->real = v;
}

static void set_plain(struct pgvalue *out, int64_t code)
{
    out->code = code;
    out->exact = code;
    out->real = 0;
}

/* Float text: what float4out/float8out print ("1.5", "-1e+300", "Infinity",
 * "NaN") or a plain decimal. Rejects what strtod would accept beyond that
 * (hex floats, "nan(...)", spaces). Out of range is an error, as in
 * PostgreSQL's float8in; denormals are fine. */
static bool parse_float(const char *s, size_t len, bool single, double *v)
{
    char buf[512];
    if (len == 0 || len >= sizeof buf)
        return false;
    size_t i = s[0] == '+' || s[0] == '-' ? 1 : 0;
    bool word = word_is(s + i, len - i, "nan") || word_is(s + i, len - i, "inf") ||
                word_is(s + i, len - i, "infinity");
    if (!word) {
        for (size_t k = i; k < len; k++) {
            char c = s[k];
            if (!((c >= '0' && c <= '9') || c == '.' || c == 'e' || c == 'E' || c == '+' ||
                  c == '-'))
                return false;
        }
    }
    memcpy(buf, s, len);
    buf[len] = '\0';
    char *end;
    errno = 0;
    double d = single ? (double)strtof(buf, &end) : strtod(buf, &end);
    if (end != buf + len)
        return false;
    if (errno == ERANGE && (d == 0 || isinf(d)))
        return false;
    *v = d;
    return true;
}

static bool parse_bool(const char *s, size_t len, bool *v)
{
    static const char *const yes[] = {"t", "true", "y", "yes", "on", "1"};
    static const char *const no[] = {"f", "false", "n", "no", "off", "0"};
    for (size_t i = 0; i < sizeof yes / sizeof yes[0]; i++) {
        if (word_is(s, len, yes[i])) {
            *v = true;
            return true;
        }
        if (word_is(s, len, no[i])) {
            *v = false;
            return true;
        }
    }
    return false;
}

static bool leap_year(int64_t y)
{
    return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
}

/* Reads exactly n digits at s[*i]. */
static bool read_digits(const char *s, size_t len, size_t *i, int n, int *out)
{
    int v = 0;
    if (len - *i < (size_t)n)
        return false;
    for (int k = 0; k < n; k++) {
        char c = s[*i + (size_t)k];
        if (c < '0' || c > '9')
            return false;
        v = v * 10 + (c - '0');
    }
    *i += (size_t)n;
    *out = v;
    return true;
}

/* A date as PostgreSQL's ISO DateStyle prints it: YYYY-MM-DD with four or
 * more year digits. The era (" BC") comes at the very end of the value and
 * is stripped by the caller (strip_bc). */
static bool parse_ymd(const char *s, size_t len, size_t *i, int64_t *y, int *m, int *d)
{
    int64_t year = 0;
    size_t y0 = *i;
    while (*i < len && s[*i] >= '0' && s[*i] <= '9' && *i - y0 < 8)
        year = year * 10 + (s[(*i)++] - '0');
    if (*i - y0 < 4 || *i >= len || s[*i] != '-')
        return false;
    (*i)++;
    if (!read_digits(s, len, i, 2, m) || *i >= len || s[*i] != '-')
        return false;
    (*i)++;
    if (!read_digits(s, len, i, 2, d))
        return false;
    *y = year;
    return true;
}

/* Checks a calendar date (bc: the year is BC) and gives its days since
 * 1970-01-01. */
static bool date_days(int64_t y, int m, int d, bool bc, int64_t *days)
{
    static const int mdays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    if (y < 1 || m < 1 || m > 12)
        return false;
    if (bc)
        y = 1 - y; /* 1 BC is year 0 */
    if (d < 1 || d > (m == 2 && leap_year(y) ? 29 : mdays[m - 1]))
        return false;
    *days = sql_days_from_civil(y, (unsigned)m, (unsigned)d);
    return true;
}

static bool strip_bc(const char *s, size_t *len)
{
    if (*len >= 3 && memcmp(s + *len - 3, " BC", 3) == 0) {
        *len -= 3;
        return true;
    }
    return false;
}

static int infinity_error(const char *what, const char *s, size_t len, char *err, size_t errlen)
{
    if (word_is(s, len, "infinity") || word_is(s, len, "+infinity"))
        return error_fmt(err, errlen, "%s infinity is not supported", what);
    if (word_is(s, len, "-infinity"))
        return error_fmt(err, errlen, "%s -infinity is not supported", what);
    return 0;
}

static int parse_date_text(const char *s, size_t len, int64_t *days, char *err, size_t errlen)
{
    if (infinity_error("date", s, len, err, errlen))
        return -1;
    size_t n = len, i = 0;
    bool bc = strip_bc(s, &n);
    int64_t y;
    int m, d;
    if (!parse_ymd(s, n, &i, &y, &m, &d) || i != n || !date_days(y, m, d, bc, days))
        return error_fmt(err, errlen, "invalid date value \"%.*s%s\"", QUOTE(s, len));
    return 0;
}

/* A timestamp as PostgreSQL's ISO DateStyle prints it:
 * "YYYY-MM-DD HH:MM:SS[.ffffff][+HH[:MM[:SS]]][ BC]", in any session time
 * zone (offsets of local mean time have seconds). timestamptz prints an
 * offset (one missing is read as UTC); timestamp never does, and one in a
 * timestamp value is refused, since PostgreSQL would ignore it. */
static int parse_timestamp_text(const char *s, size_t len, bool tz, int64_t *usec, char *err,
                                size_t errlen)
{
    const char *what = tz ? "timestamptz" : "timestamp";
    if (infinity_error(what, s, len, err, errlen))
        return -1;
    size_t n = len, i = 0;
    bool bc = strip_bc(s, &n);
    int64_t y, days;
    int mo, d, hh, mi, ss;
    int64_t frac = 0;
    if (!parse_ymd(s, n, &i, &y, &mo, &d) || i >= n || (s[i] != ' ' && s[i] != 'T'))
        goto bad;
    i++;
    if (!read_digits(s, n, &i, 2, &hh) || i >= n || s[i++] != ':' ||
        !read_digits(s, n, &i, 2, &mi) || i >= n || s[i++] != ':' ||
        !read_digits(s, n, &i, 2, &ss))
        goto bad;
    if (i < n && s[i] == '.') {
        i++;
        int digits = 0;
        while (i < n && s[i] >= '0' && s[i] <= '9') {
            if (++digits > 6)
                goto bad;
            frac = frac * 10 + (s[i++] - '0');
        }
        if (digits == 0)
            goto bad;
        for (; digits < 6; digits++)
            frac *= 10;
    }
    int64_t offset = 0;
    if (i < n && (s[i] == '+' || s[i] == '-')) {
        if (!tz)
            return error_fmt(err, errlen, "timestamp value \"%.*s%s\" has a time zone offset",
                        QUOTE(s, len));
        int sign = s[i++] == '-' ? -1 : 1, oh, om = 0, os = 0;
        if (!read_digits(s, n, &i, 2, &oh))
            goto bad;
        if (i < n && s[i] == ':') {
            i++;
            if (!read_digits(s, n, &i, 2, &om))
                goto bad;
            if (i < n && s[i] == ':') {
                i++;
                if (!read_digits(s, n, &i, 2, &os))
                    goto bad;
            }
        }
        if (oh > 15 || om > 59 || os > 59)
            goto bad;
        offset = sign * ((int64_t)oh * 3600 + om * 60 + os) * 1000000;
    }
    if (i != n || hh > 23 || mi > 59 || ss > 59 || !date_days(y, mo, d, bc, &days))
        goto bad;
    __int128 v = (__int128)days * USEC_PER_DAY +
                 ((int64_t)hh * 3600 + mi * 60 + ss) * 1000000 + frac - offset;
    if (v <= INT64_MIN || v > INT64_MAX)
        return error_fmt(err, errlen, "%s value is out of range", what);
    *usec = (int64_t)v;
    return 0;
bad:
    return error_fmt(err, errlen, "invalid %s value \"%.*s%s\"", what, QUOTE(s, len));
}

static int days_to_timestamp(int64_t days, int64_t *usec, char *err, size_t errlen)
{
    __int128 v = (__int128)days * USEC_PER_DAY;
    if (v <= INT64_MIN || v > INT64_MAX)
        return error_fmt(err, errlen, "date is out of range for a timestamp column");
    *usec = (int64_t)v;
    return 0;
}

/* ---- Binary send format ------------------------------------------------------ */

static int want_len(uint32_t oid, size_t len, size_t want, char *err, size_t errlen)
{
    if (len != want)
        return error_fmt(err, errlen, "%s value has %zu bytes, expected %zu", pg_type_name(oid), len,
                    want);
    return 0;
}

int pgvalue_decode_binary(uint32_t type_oid, const struct store_column_type *t,
                          const uint8_t *p, size_t len, struct pgvalue *out, char *err,
                          size_t errlen)
{
    memset(out, 0, sizeof *out);
    enum src src = SRC_TEXT;
    if (source_of(type_oid, t, &src, err, errlen))
        return -1;
    int scale = column_scale(t);
    switch (src) {
    case SRC_INT: {
        int64_t v;
        size_t want = type_oid == PG_INT2 ? 2 : type_oid == PG_INT4 ? 4 : 8;
        if (want_len(type_oid, len, want, err, errlen))
            return -1;
        v = want == 2 ? be_load_i16(p) : want == 4 ? be_load_i32(p) : be_load_i64(p);
        if (t->type == STORE_TYPE_FLOAT) {
            set_float(out, (double)v);
            return 0;
        }
        return number_error(int_scaled(out, v, scale), t, scale, type_oid, NULL, 0, err, errlen);
    }
    case SRC_NUMERIC: {
        enum num_status st = numeric_binary_scaled(p, len, scale, out, err, errlen);
        if (st == NUM_SYNTAX)
            return -1;
        return number_error(st, t, scale, type_oid, NULL, 0, err, errlen);
    }
    case SRC_FLOAT4: {
        if (want_len(type_oid, len, 4, err, errlen))
            return -1;
        uint32_t bits = be_load_u32(p);
        float f;
        memcpy(&f, &bits, 4);
        set_float(out, (double)f);
        return 0;
    }
    case SRC_FLOAT8: {
        if (want_len(type_oid, len, 8, err, errlen))
            return -1;
        uint64_t bits = be_load_u64(p);
        double d;
        memcpy(&d, &bits, 8);
        set_float(out, d);
        return 0;
    }
    case SRC_BOOL:
        if (want_len(type_oid, len, 1, err, errlen))
            return -1;
        set_plain(out, p[0] != 0); /* as boolrecv: any non-zero byte is true */
        return 0;
    case SRC_DATE: {
        if (want_len(type_oid, len, 4, err, errlen))
            return -1;
        int32_t d = be_load_i32(p);
        if (d == INT32_MIN)
            return error_fmt(err, errlen, "date -infinity is not supported");
        if (d == INT32_MAX)
            return error_fmt(err, errlen, "date infinity is not supported");
        int64_t days = (int64_t)d + PG_EPOCH_DAYS, usec = 0;
        if (t->type == STORE_TYPE_DATE) {
            set_plain(out, days);
            return 0;
        }
        if (days_to_timestamp(days, &usec, err, errlen))
            return -1;
        set_plain(out, usec);
        return 0;
    }
    case SRC_TIMESTAMP:
    case SRC_TIMESTAMPTZ: {
        if (want_len(type_oid, len, 8, err, errlen))
            return -1;
        int64_t v = be_load_i64(p), usec = 0;
        if (v == INT64_MIN)
            return error_fmt(err, errlen, "%s -infinity is not supported", pg_type_name(type_oid));
        if (v == INT64_MAX)
            return error_fmt(err, errlen, "%s infinity is not supported", pg_type_name(type_oid));
        if (__builtin_add_overflow(v, PG_EPOCH_USEC, &usec))
            return error_fmt(err, errlen, "%s value is out of range", pg_type_name(type_oid));
        set_plain(out, usec);
        return 0;
    }
    case SRC_TEXT:
        out->text = (const char *)p;
        out->len = len;
        return 0;
    }
    return -1;
}

/* ---- Text output format ------------------------------------------------------ */

int pgvalue_decode_text(uint32_t type_oid, const struct store_column_type *t, const char *s,
                        size_t len, struct pgvalue *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    enum src src = SRC_TEXT;
    if (source_of(type_oid, t, &src, err, errlen))
        return -1;
    int scale = column_scale(t);
    switch (src) {
    case SRC_INT:
    case SRC_NUMERIC: {
        enum num_status st;
        if (src == SRC_INT) {
            /* int2/4/8 print as [-]digits, nothing else. */
            size_t i = len > 0 && (s[0] == '-' || s[0] == '+') ? 1 : 0;
            if (i == len)
                return number_error(NUM_SYNTAX, t, scale, type_oid, s, len, err, errlen);
            for (; i < len; i++)
                if (s[i] < '0' || s[i] > '9')
                    return number_error(NUM_SYNTAX, t, scale, type_oid, s, len, err, errlen);
        }
        if (t->type == STORE_TYPE_FLOAT) {
            /* Integers only here (source_of). */
            struct pgvalue iv;
            st = decimal_text_scaled(s, len, 0, &iv);
            if (st == NUM_OK) {
                set_float(out, (double)iv.code);
                return 0;
            }
        } else {
            st = decimal_text_scaled(s, len, scale, out);
        }
        return number_error(st, t, scale, type_oid, s, len, err, errlen);
    }
    case SRC_FLOAT4:
    case SRC_FLOAT8: {
        double v;
        if (!parse_float(s, len, src == SRC_FLOAT4, &v))
            return error_fmt(err, errlen, "invalid %s value \"%.*s%s\"", pg_type_name(type_oid),
                        QUOTE(s, len));
        set_float(out, v);
        return 0;
    }
    case SRC_BOOL: {
        bool b;
        if (!parse_bool(s, len, &b))
            return error_fmt(err, errlen, "invalid bool value \"%.*s%s\"", QUOTE(s, len));
        set_plain(out, b);
        return 0;
    }
    case SRC_DATE: {
        int64_t days = 0, usec = 0;
        if (parse_date_text(s, len, &days, err, errlen))
            return -1;
        if (t->type == STORE_TYPE_DATE) {
            set_plain(out, days);
            return 0;
        }
        if (days_to_timestamp(days, &usec, err, errlen))
            return -1;
        set_plain(out, usec);
        return 0;
    }
    case SRC_TIMESTAMP:
    case SRC_TIMESTAMPTZ: {
        int64_t usec = 0;
        if (parse_timestamp_text(s, len, src == SRC_TIMESTAMPTZ, &usec, err, errlen))
            return -1;
        set_plain(out, usec);
        return 0;
    }
    case SRC_TEXT:
        out->text = s;
        out->len = len;
        return 0;
    }
    return -1;
}

void pgvalue_from_code(const struct store_column_type *t, int64_t code, struct pgvalue *out)
{
    out->text = NULL;
    out->len = 0;
    if (t->type == STORE_TYPE_FLOAT) {
        set_float(out, store_code_float(code));
        return;
    }
    out->code = code;
    out->exact = code;
    out->real = 0;
}
