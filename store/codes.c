/* codes.c -- int64 codes of typed values: values into codes, and codes
 * back into text.
 *
 * Codes are what cells, value counts and projections hold. They keep the
 * value's order (except text, whose codes are dictionary ids in arrival
 * order), so a block's sorted runs are sorted values and a value dictionary
 * walked in key order is walked in value order.
 *
 * Values into codes (store_code_of_value) is the one rule set both a view's
 * FILTER constants (ingest) and an ask's parameters and literals (engine)
 * go through. Text follows PostgreSQL's input functions for the column's
 * source type (int2in/int4in/int8in, numeric_in, float4in/float8in, boolin,
 * date_in, timestamp_in/timestamptz_in with DateStyle ISO), so a value
 * PostgreSQL refuses is refused here with a message, and one it reads is read
 * as the same value; tests/unit/test_store_codes.c checks every entry of its
 * tables against a real server. Where date and timestamp input has forms
 * Straum does not read (month names, day-first orders, relative words, " BC"
 * on a timestamp), the refusal says which forms it reads. A number as written
 * (a JSON number, a numeric literal) is a numeric value compared exactly, as
 * PostgreSQL compares a numeric literal with a column of any number type.
 *
 * Invariants:
 *   1. A code given out is never STORE_NULL.
 *   2. STORE_CODE_NONE is a value of the type that equals no stored code
 *      (ingest stores no such value): more decimals than the column keeps,
 *      out of the code's range, NaN or infinity where the column refuses
 *      them. An ask's equality then matches nothing; a FILTER refuses it,
 *      since rounding it would change what < and > mean.
 *   3. Every refusal and every NONE writes a message naming the value. */
#include "base/decimal.h"
#include "base/error.h"
#include "store/store.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define USEC_PER_DAY 86400000000LL
#define SHOW 60          /* bytes of a bad value quoted in messages */
#define MAX_SCALE 18     /* 10^19 > INT64_MAX: no code has more decimals */
#define NUMBER_TEXT 256  /* float texts copied on the stack for strtod; longer
                            ones on the heap */
#define TIME_TEXT 128    /* longest date/time text: PostgreSQL's MAXDATELEN */

/* Doubles sort like their bit patterns once negative numbers have every bit
 * flipped and positive ones only the sign bit: the usual total order trick.
 * -0.0 and 0.0 get distinct codes; NaN sorts above infinity, as in
 * PostgreSQL. */
int64_t store_float_code(double v)
{
    uint64_t bits;
    memcpy(&bits, &v, 8);
    bits = (bits & (1ULL << 63)) ? ~bits : bits | (1ULL << 63);
    return (int64_t)(bits ^ (1ULL << 63)); /* so that signed order matches */
}

double store_code_float(int64_t code)
{
    uint64_t bits = (uint64_t)code ^ (1ULL << 63);
    bits = (bits & (1ULL << 63)) ? bits & ~(1ULL << 63) : ~bits;
    double v;
    memcpy(&v, &bits, 8);
    return v;
}

/* ---- Values into codes ------------------------------------------------------ */

static int say(char *err, size_t errlen, int rc, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static int say(char *err, size_t errlen, int rc, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    error_vfmt(err, errlen, fmt, ap);
    va_end(ap);
    return rc;
}

/* "%.*s%s" arguments quoting at most SHOW bytes of a value. */
#define QUOTE(s, len) (int)((len) < SHOW ? (len) : SHOW), (s), ((len) > SHOW ? "..." : "")

/* PostgreSQL's isspace() set, which every input function trims. */
static bool is_space(char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}

static void trim(const char **s, size_t *len)
{
    while (*len && is_space(**s))
        (*s)++, (*len)--;
    while (*len && is_space((*s)[*len - 1]))
        (*len)--;
}

static bool word_is(const char *s, size_t len, const char *w)
{
    return strlen(w) == len && strncasecmp(s, w, len) == 0;
}

/* What a type is called in messages, from the source type when known. */
static const char *type_word(const struct store_column_type *t)
{
    switch (t->type) {
    case STORE_TYPE_INT:
        return t->pg_oid == PG_INT2 ? "smallint" : t->pg_oid == PG_INT4 ? "integer" : "bigint";
    case STORE_TYPE_NUMERIC: return "number";
    case STORE_TYPE_FLOAT: return t->pg_oid == PG_FLOAT4 ? "real" : "double precision";
    case STORE_TYPE_TEXT: return "text";
    case STORE_TYPE_BOOL: return "boolean";
    case STORE_TYPE_DATE: return "date";
    case STORE_TYPE_TIMESTAMP:
        return t->pg_oid == PG_TIMESTAMP ? "timestamp" : "timestamp with time zone";
    }
    return "value";
}

/* "a" or "an" before a word. */
static const char *article(const char *word)
{
    return strchr("aeiou", word[0]) ? "an" : "a";
}

/* int2in, int4in, int8in: [spaces][+-]digits[spaces], within the type's
 * range. */
static int int_text(const struct store_column_type *t, const char *s, size_t len, int64_t *code,
                    char *err, size_t errlen)
{
    const char *q = s;
    size_t n = len;
    trim(&q, &n);
    size_t i = 0;
    bool neg = false;
    if (i < n && (q[i] == '+' || q[i] == '-'))
        neg = q[i++] == '-';
    if (i == n)
        goto bad;
    uint64_t mag = 0;
    bool over = false;
    for (; i < n; i++) {
        if (q[i] < '0' || q[i] > '9')
            goto bad;
        unsigned d = (unsigned)(q[i] - '0');
        if (mag > (UINT64_MAX - d) / 10)
            over = true;
        else
            mag = mag * 10 + d;
    }
    uint64_t max = t->pg_oid == PG_INT2 ? 32767 : t->pg_oid == PG_INT4 ? 2147483647 : INT64_MAX;
    if (over || mag > max + (neg ? 1 : 0))
        return say(err, errlen, STORE_CODE_REFUSED, "\"%.*s%s\" is out of range for %s",
                   QUOTE(s, len), type_word(t));
    if (neg && mag == (uint64_t)INT64_MAX + 1)
        return say(err, errlen, STORE_CODE_NONE,
                   "%.*s%s is the one bigint Straum cannot store (its code is NULL's)",
                   QUOTE(s, len));
    *code = neg ? -(int64_t)mag : (int64_t)mag;
    return STORE_CODE_OK;
bad:
    return say(err, errlen, STORE_CODE_REFUSED, "\"%.*s%s\" is not %s %s", QUOTE(s, len),
               article(type_word(t)), type_word(t));
}

/* PostgreSQL's numeric limits (numeric.c): an exponent under INT_MAX / 2
 * either way, at most 16383 digits after the point and a weight of at most
 * 32767 base-10000 digits, 131072 decimal digits before the point. */
#define NUMERIC_EXP_LIMIT 1073741823
#define NUMERIC_DSCALE_MAX 16383
#define NUMERIC_DIGITS_MAX 131072

/* numeric_in: [spaces][+-](digits[.digits]|.digits)[e[spaces][+-]digits]
 * [spaces], within numeric's limits; or NaN, [+-]Infinity, [+-]inf
 * in any case. The value scaled by 10^scale into *code, exactly. Returns OK,
 * NONE (a number no code equals: more decimals than scale, out of the code's
 * range, NaN, infinite) or REFUSED. */
static int numeric_text(const struct store_column_type *t, int scale, const char *s, size_t len,
                        int64_t *code, char *err, size_t errlen)
{
    const char *q = s;
    size_t n = len;
    trim(&q, &n);
    if (word_is(q, n, "nan") || word_is(q, n, "infinity") || word_is(q, n, "+infinity") ||
        word_is(q, n, "-infinity") || word_is(q, n, "inf") || word_is(q, n, "+inf") ||
        word_is(q, n, "-inf"))
        return say(err, errlen, STORE_CODE_NONE, "%.*s%s is not a value Straum stores",
                   QUOTE(s, len));
    size_t i = 0;
    bool neg = false;
    if (i < n && (q[i] == '+' || q[i] == '-'))
        neg = q[i++] == '-';
    size_t int0 = i;
    while (i < n && q[i] >= '0' && q[i] <= '9')
        i++;
    size_t int1 = i, frac0 = i, frac1 = i;
    if (i < n && q[i] == '.') {
        frac0 = ++i;
        while (i < n && q[i] >= '0' && q[i] <= '9')
            i++;
        frac1 = i;
    }
    if (int1 == int0 && frac1 == frac0)
        goto bad;
    int64_t exp = 0;
    if (i < n && (q[i] == 'e' || q[i] == 'E')) {
        /* The exponent as strtol reads it (spaces may come first). */
        i++;
        while (i < n && is_space(q[i]))
            i++;
        bool eneg = false;
        if (i < n && (q[i] == '+' || q[i] == '-'))
            eneg = q[i++] == '-';
        size_t e0 = i;
        while (i < n && q[i] >= '0' && q[i] <= '9') {
            if (exp < NUMERIC_EXP_LIMIT)
                exp = exp * 10 + (q[i] - '0');
            i++;
        }
        if (i == e0)
            goto bad;
        if (exp >= NUMERIC_EXP_LIMIT)
            goto overflow;
        if (eneg)
            exp = -exp;
    }
    if (i != n)
        goto bad;
    /* numeric's storage limits: at most NUMERIC_DSCALE_MAX digits after
     * the point as written (less the exponent), and a first non-zero digit
     * below 10^NUMERIC_DIGITS_MAX. */
    if ((int64_t)(frac1 - frac0) - exp > NUMERIC_DSCALE_MAX)
        goto overflow;
    for (size_t k = int0; k < frac1; k++) {
        if (k == int1 || q[k] == '0')
            continue;
        int64_t top = k < int1 ? (int64_t)(int1 - k) - 1 : -(int64_t)(k - frac0) - 1;
        if (top + exp >= NUMERIC_DIGITS_MAX)
            goto overflow;
        break;
    }
    /* Each non-zero digit at decimal position pos (0 for units) lands at
     * pos + exp + scale in the code: below 0 it is a decimal the column
     * cannot keep; at 19 or more it is past INT64_MAX. */
    unsigned __int128 mag = 0;
    bool decimals = false, range = false;
    int64_t nint = (int64_t)(int1 - int0);
    for (size_t k = int0; k < frac1; k++) {
        if (k == int1) {
            k = frac0 - 1; /* over the point */
            continue;
        }
        int d = q[k] - '0';
        int64_t pos = k < int1 ? nint - 1 - (int64_t)(k - int0) : -(int64_t)(k - frac0) - 1;
        int64_t e = pos + exp + scale;
        if (d == 0)
            continue;
        if (e < 0) {
            decimals = true;
        } else if (e >= 19 || range) {
            range = true;
        } else {
            unsigned __int128 p = 1;
            for (int64_t z = 0; z < e; z++)
                p *= 10;
            mag += (unsigned __int128)d * p;
            range = mag > (unsigned __int128)INT64_MAX;
        }
    }
    if (decimals) {
        if (t->type == STORE_TYPE_INT)
            return say(err, errlen, STORE_CODE_NONE, "%.*s%s is not an integer, but the column is",
                       QUOTE(s, len));
        return say(err, errlen, STORE_CODE_NONE,
                   "%.*s%s has more decimals than the column keeps (%d)", QUOTE(s, len), scale);
    }
    if (range || (t->type == STORE_TYPE_INT && t->pg_oid == PG_INT2 && mag > 32767 + (neg ? 1 : 0)) ||
        (t->type == STORE_TYPE_INT && t->pg_oid == PG_INT4 && mag > 2147483647u + (neg ? 1u : 0u)))
        return say(err, errlen, STORE_CODE_NONE, "%.*s%s is out of range for a %s column",
                   QUOTE(s, len), t->type == STORE_TYPE_INT ? type_word(t) : "numeric");
    *code = neg ? -(int64_t)mag : (int64_t)mag;
    return STORE_CODE_OK;
bad:
    return say(err, errlen, STORE_CODE_REFUSED, "\"%.*s%s\" is not a number", QUOTE(s, len));
overflow:
    return say(err, errlen, STORE_CODE_REFUSED,
               "\"%.*s%s\" is past what a numeric holds (%d digits before the point, %d after)",
               QUOTE(s, len), NUMERIC_DIGITS_MAX, NUMERIC_DSCALE_MAX);
}

/* float4in, float8in: strtod or strtof as PostgreSQL calls them (leading
 * spaces, hex floats and nan(...) included, as glibc reads them), trailing
 * spaces, the words NaN, [+-]Infinity and [+-]inf; out of range (overflow,
 * or underflow to zero) is refused, a denormal is fine. Every NaN is one
 * NaN and -0 is 0 (float8eq says -0 = 0), so equal values get one code.
 * A NUL byte has been refused before (store_code_of_value). */
static int float_copy(const struct store_column_type *t, bool single, const char *q, size_t n,
                      const char *s, size_t len, int64_t *code, char *err, size_t errlen);

static int float_text(const struct store_column_type *t, bool single, const char *s, size_t len,
                      int64_t *code, char *err, size_t errlen)
{
    /* strtod wants a NUL-terminated copy: on the stack, or for a long
     * text (PostgreSQL reads any length) on the heap. */
    char small[NUMBER_TEXT];
    char *buf = len < sizeof small ? small : malloc(len + 1);
    if (!buf)
        return say(err, errlen, STORE_CODE_REFUSED, "out of memory reading a %zu-byte number",
                   len);
    memcpy(buf, s, len);
    buf[len] = '\0';
    const char *q = buf;
    size_t n = len;
    trim(&q, &n);
    buf[q - buf + (ptrdiff_t)n] = '\0';
    int rc = float_copy(t, single, q, n, s, len, code, err, errlen);
    if (buf != small)
        free(buf);
    return rc;
}

static int float_copy(const struct store_column_type *t, bool single, const char *q, size_t n,
                      const char *s, size_t len, int64_t *code, char *err, size_t errlen)
{
    if (n == 0)
        return say(err, errlen, STORE_CODE_REFUSED, "\"%.*s%s\" is not a number", QUOTE(s, len));
    double d;
    if (word_is(q, n, "nan")) {
        d = NAN;
    } else if (word_is(q, n, "infinity") || word_is(q, n, "+infinity") || word_is(q, n, "inf") ||
               word_is(q, n, "+inf")) {
        d = INFINITY;
    } else if (word_is(q, n, "-infinity") || word_is(q, n, "-inf")) {
        d = -INFINITY;
    } else {
        char *end;
        errno = 0;
        d = single ? (double)strtof(q, &end) : strtod(q, &end);
        if (end != q + n || end == q)
            return say(err, errlen, STORE_CODE_REFUSED, "\"%.*s%s\" is not a number",
                       QUOTE(s, len));
        if (errno == ERANGE && (d == 0 || isinf(d)))
            return say(err, errlen, STORE_CODE_REFUSED, "\"%.*s%s\" is out of range for %s",
                       QUOTE(s, len), single ? "real" : type_word(t));
    }
    if (isnan(d))
        d = NAN;
    else if (d == 0)
        d = 0.0;
    *code = store_float_code(d);
    return STORE_CODE_OK;
}

/* boolin: trimmed, any case, a prefix of true, false, yes or no, at least
 * two letters of on or off, or 1 or 0. */
static bool bool_text(const char *s, size_t len, bool *v)
{
    trim(&s, &len);
    if (len == 0)
        return false;
    static const struct {
        const char *word;
        size_t least;
        bool value;
    } words[] = {
        {"true", 1, true}, {"false", 1, false}, {"yes", 1, true}, {"no", 1, false},
        {"on", 2, true}, {"off", 2, false}, {"1", 1, true}, {"0", 1, false},
    };
    for (size_t i = 0; i < sizeof words / sizeof words[0]; i++)
        if (len >= words[i].least && len <= strlen(words[i].word) &&
            strncasecmp(s, words[i].word, len) == 0) {
            *v = words[i].value;
            return true;
        }
    return false;
}

static bool leap_year(int64_t y)
{
    return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
}

/* Reads 1 to max digits at s[*i]. */
static bool read_number(const char *s, size_t len, size_t *i, size_t min, size_t max, int64_t *out)
{
    size_t i0 = *i;
    int64_t v = 0;
    while (*i < len && s[*i] >= '0' && s[*i] <= '9' && *i - i0 < max)
        v = v * 10 + (s[(*i)++] - '0');
    if (*i - i0 < min || (*i < len && s[*i] >= '0' && s[*i] <= '9'))
        return false;
    *out = v;
    return true;
}

/* The forms of date Straum reads, for refusals. */
#define DATE_FORMS "YYYY-MM-DD, optionally followed by BC or AD"

/* date_in with DateStyle ISO, for the forms [spaces]Y-M-D[ BC|AD][spaces]
 * with a year of four to seven digits and a month and day of one or two;
 * epoch; [+-]infinity (NONE: no stored date is infinite). Month names,
 * other orders, a time of day and relative words (today) are refused with
 * the forms Straum reads. */
static int date_text(const char *s, size_t len, int64_t *days, char *err, size_t errlen)
{
    const char *q = s;
    size_t n = len;
    trim(&q, &n);
    if (word_is(q, n, "epoch")) {
        *days = 0;
        return STORE_CODE_OK;
    }
    if (word_is(q, n, "infinity") || word_is(q, n, "+infinity") || word_is(q, n, "-infinity"))
        return say(err, errlen, STORE_CODE_NONE, "%.*s%s is not a date Straum stores",
                   QUOTE(s, len));
    bool bc = false;
    if (n >= 3 && is_space(q[n - 3]) && (word_is(q + n - 2, 2, "bc") || word_is(q + n - 2, 2, "ad"))) {
        bc = word_is(q + n - 2, 2, "bc");
        n -= 3;
        while (n && is_space(q[n - 1]))
            n--;
    }
    size_t i = 0;
    int64_t y, m, d;
    if (!read_number(q, n, &i, 4, 7, &y) || i >= n || q[i++] != '-' ||
        !read_number(q, n, &i, 1, 2, &m) || i >= n || q[i++] != '-' ||
        !read_number(q, n, &i, 1, 2, &d) || i != n)
        return say(err, errlen, STORE_CODE_REFUSED, "\"%.*s%s\" is not a date Straum reads (%s)",
                   QUOTE(s, len), DATE_FORMS);
    static const int mdays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    int64_t year = bc ? 1 - y : y; /* 1 BC is year 0 */
    if (y < 1 || m < 1 || m > 12 || d < 1 || d > (m == 2 && leap_year(year) ? 29 : mdays[m - 1]))
        return say(err, errlen, STORE_CODE_REFUSED, "\"%.*s%s\" is not a date", QUOTE(s, len));
    if ((bc && y > 4713) || (!bc && y > 5874897))
        return say(err, errlen, STORE_CODE_REFUSED, "\"%.*s%s\" is out of range for date",
                   QUOTE(s, len));
    *days = sql_days_from_civil(year, (unsigned)m, (unsigned)d);
    return STORE_CODE_OK;
}

#define TIMESTAMP_FORMS                                                                         \
    "YYYY-MM-DD, YYYY-MM-DD HH:MM[:SS[.ffffff]] with a space or T, then an offset such as "    \
    "+02, +05:30 or Z for a timestamp with time zone"

/* timestamp_in and timestamptz_in with DateStyle ISO, for the forms of
 * sql_parse_timestamp (the reader of bucket edges): a date with a four-digit
 * year, a time of day, an offset; epoch; [+-]infinity (NONE). A timestamp
 * without time zone takes no offset (PostgreSQL would drop it silently).
 * *local: written without an offset, so a timestamp with time zone is read
 * in the reader's time zone. */
static int timestamp_text(const struct store_column_type *t, const char *s, size_t len,
                          int64_t *usec, bool *local, char *err, size_t errlen)
{
    const char *q = s;
    size_t n = len;
    trim(&q, &n);
    bool tz = t->pg_oid != PG_TIMESTAMP;
    *local = false;
    if (word_is(q, n, "epoch")) {
        *usec = 0;
        return STORE_CODE_OK;
    }
    if (word_is(q, n, "infinity") || word_is(q, n, "+infinity") || word_is(q, n, "-infinity"))
        return say(err, errlen, STORE_CODE_NONE, "%.*s%s is not a timestamp Straum stores",
                   QUOTE(s, len));
    char buf[TIME_TEXT], why[200];
    bool has_offset = false;
    if (n >= sizeof buf || memchr(q, '\0', n))
        return say(err, errlen, STORE_CODE_REFUSED, "\"%.*s%s\" is not a %s Straum reads (%s)",
                   QUOTE(s, len), type_word(t), TIMESTAMP_FORMS);
    memcpy(buf, q, n);
    buf[n] = '\0';
    if (!sql_parse_timestamp(buf, usec, &has_offset, why, sizeof why))
        return say(err, errlen, STORE_CODE_REFUSED, "\"%.*s%s\" is not a %s Straum reads (%s)",
                   QUOTE(s, len), type_word(t), TIMESTAMP_FORMS);
    if (has_offset && !tz)
        return say(err, errlen, STORE_CODE_REFUSED,
                   "\"%.*s%s\" has a time zone offset, but the column is a timestamp without "
                   "time zone", QUOTE(s, len));
    *local = tz && !has_offset;
    return STORE_CODE_OK;
}

static const char *form_word(enum store_value_form f)
{
    return f == STORE_VALUE_BOOL ? "a boolean" : f == STORE_VALUE_NUMBER ? "a number" : "text";
}

int store_code_of_value(const struct store_column_type *t, const struct store_value *v,
                        struct store_coded *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    /* Which forms a type takes, as PostgreSQL's operators do: a number
     * compares with number columns only, a boolean with boolean ones. */
    bool fits = v->form == STORE_VALUE_TEXT ||
                (v->form == STORE_VALUE_NUMBER &&
                 (t->type == STORE_TYPE_INT || t->type == STORE_TYPE_NUMERIC ||
                  t->type == STORE_TYPE_FLOAT)) ||
                (v->form == STORE_VALUE_BOOL && t->type == STORE_TYPE_BOOL);
    if (!fits) {
        if (v->form == STORE_VALUE_BOOL)
            return say(err, errlen, STORE_CODE_REFUSED, "%s is a boolean, not %s %s",
                       v->boolean ? "true" : "false", article(type_word(t)), type_word(t));
        return say(err, errlen, STORE_CODE_REFUSED, "%.*s%s is %s, not %s%s%s: give a string",
                   QUOTE(v->text, v->len), form_word(v->form),
                   t->type == STORE_TYPE_TEXT ? "" : article(type_word(t)),
                   t->type == STORE_TYPE_TEXT ? "" : " ", type_word(t));
    }
    if (v->form == STORE_VALUE_BOOL) {
        out->code = v->boolean;
        return STORE_CODE_OK;
    }
    const char *s = v->text ? v->text : "";
    size_t len = v->text ? v->len : 0;
    if (t->type != STORE_TYPE_TEXT && memchr(s, '\0', len))
        return say(err, errlen, STORE_CODE_REFUSED, "a %s holds no NUL byte", type_word(t));
    switch (t->type) {
    case STORE_TYPE_INT:
        if (v->form == STORE_VALUE_NUMBER)
            return numeric_text(t, 0, s, len, &out->code, err, errlen);
        return int_text(t, s, len, &out->code, err, errlen);
    case STORE_TYPE_NUMERIC:
        if (t->scale < 0 || t->scale > MAX_SCALE)
            return say(err, errlen, STORE_CODE_REFUSED,
                       "numeric column scale %d is out of range (0 to %d)", (int)t->scale,
                       MAX_SCALE);
        return numeric_text(t, t->scale, s, len, &out->code, err, errlen);
    case STORE_TYPE_FLOAT:
        /* A number as written is a numeric, which PostgreSQL compares with
         * a real column as a double precision: 0.1 equals no real. */
        return float_text(t, t->pg_oid == PG_FLOAT4 && v->form == STORE_VALUE_TEXT, s, len,
                          &out->code, err, errlen);
    case STORE_TYPE_BOOL: {
        bool b;
        if (!bool_text(s, len, &b))
            return say(err, errlen, STORE_CODE_REFUSED, "\"%.*s%s\" is not a boolean",
                       QUOTE(s, len));
        out->code = b;
        return STORE_CODE_OK;
    }
    case STORE_TYPE_DATE:
        return date_text(s, len, &out->code, err, errlen);
    case STORE_TYPE_TIMESTAMP:
        return timestamp_text(t, s, len, &out->code, &out->local, err, errlen);
    case STORE_TYPE_TEXT:
        out->text = s;
        out->len = len;
        return STORE_CODE_OK;
    }
    return say(err, errlen, STORE_CODE_REFUSED, "column type %d is unknown", (int)t->type);
}

/* ---- Codes into text -------------------------------------------------------- */

/* float4out and float8out (extra_float_digits 1, their default): the fewest
 * digits that read back as the same value, in fixed notation when the
 * decimal exponent is from -4 to below 6 (real) or 15 (double precision),
 * else as d.ddde+XX. */
static size_t format_float(double v, bool single, char *buf, size_t len)
{
    if (isnan(v))
        return (size_t)snprintf(buf, len, "NaN");
    if (isinf(v))
        return (size_t)snprintf(buf, len, "%sInfinity", v < 0 ? "-" : "");
    if (v == 0)
        return (size_t)snprintf(buf, len, "%s0", signbit(v) ? "-" : "");
    char e[40];
    int p = 1;
    for (; p < 17; p++) {
        snprintf(e, sizeof e, "%.*e", p - 1, v);
        if (single ? strtof(e, NULL) == (float)v : strtod(e, NULL) == v)
            break;
    }
    snprintf(e, sizeof e, "%.*e", p - 1, v);
    /* e is [-]d[.ddd]e[+-]XX: its digits and exponent. */
    char digits[24];
    size_t nd = 0;
    const char *c = e;
    bool neg = *c == '-';
    if (neg)
        c++;
    for (; *c && *c != 'e'; c++)
        if (*c != '.')
            digits[nd++] = *c;
    while (nd > 1 && digits[nd - 1] == '0')
        nd--;
    digits[nd] = '\0';
    int exp = atoi(c + 1);
    if (exp < -4 || exp >= (single ? 6 : 15)) {
        if (nd == 1)
            return (size_t)snprintf(buf, len, "%s%ce%c%02d", neg ? "-" : "", digits[0],
                                    exp < 0 ? '-' : '+', abs(exp));
        return (size_t)snprintf(buf, len, "%s%c.%se%c%02d", neg ? "-" : "", digits[0], digits + 1,
                                exp < 0 ? '-' : '+', abs(exp));
    }
    char out[64];
    size_t o = 0;
    if (neg)
        out[o++] = '-';
    if (exp < 0) {
        out[o++] = '0';
        out[o++] = '.';
        for (int z = -1; z > exp; z--)
            out[o++] = '0';
        memcpy(out + o, digits, nd);
        o += nd;
    } else {
        for (int k = 0; k <= exp || k < (int)nd; k++) {
            if (k == exp + 1)
                out[o++] = '.';
            out[o++] = k < (int)nd ? digits[k] : '0';
        }
    }
    out[o] = '\0';
    return (size_t)snprintf(buf, len, "%s", out);
}

/* date_out with DateStyle ISO: at least four year digits, and " BC" for
 * years before 1 AD (year 0 is 1 BC). */
static size_t format_date(int64_t days, char *buf, size_t len, const char **era)
{
    int64_t y;
    unsigned m, d;
    sql_civil_from_days(days, &y, &m, &d);
    *era = y <= 0 ? " BC" : "";
    return (size_t)snprintf(buf, len, "%04" PRId64 "-%02u-%02u", y <= 0 ? 1 - y : y, m, d);
}

static int64_t floor_div(int64_t a, int64_t b)
{
    int64_t q = a / b;
    return (a % b != 0 && (a < 0) != (b < 0)) ? q - 1 : q;
}

size_t store_code_format(const struct store_column_type *t, int64_t code, char *buf, size_t len)
{
    if (code == STORE_NULL)
        return (size_t)snprintf(buf, len, "NULL");
    switch (t->type) {
    case STORE_TYPE_INT:
        return (size_t)snprintf(buf, len, "%" PRId64, code);
    case STORE_TYPE_NUMERIC:
        return decimal_format(code, t->scale, buf, len);
    case STORE_TYPE_FLOAT:
        return format_float(store_code_float(code), t->pg_oid == PG_FLOAT4, buf, len);
    case STORE_TYPE_TEXT:
        return (size_t)snprintf(buf, len, "#%" PRId64, code);
    case STORE_TYPE_BOOL:
        return (size_t)snprintf(buf, len, "%s", code ? "true" : "false");
    case STORE_TYPE_DATE: {
        char date[40];
        const char *era;
        format_date(code, date, sizeof date, &era);
        return (size_t)snprintf(buf, len, "%s%s", date, era);
    }
    case STORE_TYPE_TIMESTAMP: {
        /* rest from the remainder, not code - days * day: within a day of
         * INT64_MIN that product overflows (found formatting the time of a
         * row store_apply refuses). */
        int64_t days = floor_div(code, USEC_PER_DAY);
        int64_t rest = code % USEC_PER_DAY;
        if (rest < 0)
            rest += USEC_PER_DAY;
        char date[40], frac[16] = "";
        const char *era;
        format_date(days, date, sizeof date, &era);
        int64_t s = rest / 1000000, us = rest % 1000000;
        if (us) {
            /* timestamp_out: the microseconds without trailing zeros. */
            int n = snprintf(frac, sizeof frac, ".%06" PRId64, us);
            while (n > 1 && frac[n - 1] == '0')
                frac[--n] = '\0';
        }
        return (size_t)snprintf(buf, len, "%s %02" PRId64 ":%02" PRId64 ":%02" PRId64 "%s%s%s",
                                date, s / 3600, s / 60 % 60, s % 60, frac,
                                t->pg_oid == PG_TIMESTAMP ? "" : "+00", era);
    }
    }
    return (size_t)snprintf(buf, len, "?%" PRId64, code);
}
