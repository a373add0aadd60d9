/* pg_types.c -- answer values written as PostgreSQL writes them, and Bind
 * parameters read into the text the engine binds.
 *
 * Text format follows PostgreSQL 15's output functions with DateStyle ISO,
 * MDY and extra_float_digits 1 (what the server announces): int2/4/8 in
 * decimal; bool t/f; numeric its exact digits; float8 the shortest text
 * that reads back as the same double (float8out with extra_float_digits >
 * 0), Infinity, -Infinity, NaN; date YYYY-MM-DD; timestamptz
 * "YYYY-MM-DD HH:MM:SS[.ffffff]+HH[:MM[:SS]]" in the session TimeZone,
 * trailing zeros of the fraction dropped; timestamp the same without the
 * offset. Binary format is each type's typsend: big-endian integers,
 * IEEE float8, bool one byte, date days and timestamps µs since
 * 2000-01-01, numeric as base-10000 digits with weight, sign and dscale. */
#include "serve/pg.h"

#include "sql/sql.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PG_EPOCH_DAYS 10957                    /* 1970-01-01 to 2000-01-01 */
#define PG_EPOCH_US (PG_EPOCH_DAYS * 86400000000LL)

int16_t pg_type_len(uint32_t oid)
{
    switch (oid) {
    case ANSWER_OID_BOOL: return 1;
    case ANSWER_OID_INT2: return 2;
    case ANSWER_OID_INT4:
    case ANSWER_OID_DATE: return 4;
    case ANSWER_OID_INT8:
    case ANSWER_OID_FLOAT8:
    case ANSWER_OID_TIMESTAMP:
    case ANSWER_OID_TIMESTAMPTZ: return 8;
    default: return -1;
    }
}

/* "2024-01-17": years 1 to 9999 as four digits, later ones as written,
 * earlier ones as PostgreSQL does ("0044-03-15 BC" is not needed: a bucket
 * before year 1 cannot be stored). */
static int date_text(int64_t days, char *out, size_t cap)
{
    int64_t y;
    unsigned m, d;
    sql_civil_from_days(days, &y, &m, &d);
    return snprintf(out, cap, "%04lld-%02u-%02u", (long long)y, m, d);
}


/* float8out's shortest round-trip form. */
static int double_text(double d, char *out, size_t cap)
{
    if (isnan(d))
        return snprintf(out, cap, "NaN");
    if (isinf(d))
        return snprintf(out, cap, d < 0 ? "-Infinity" : "Infinity");
    int n = 0;
    for (int p = 1; p <= 17; p++) {
        n = snprintf(out, cap, "%.*g", p, d);
        if (strtod(out, NULL) == d)
            break;
    }
    return n;
}

static void put_be(struct buf *b, uint64_t v, int bytes)
{
    unsigned char x[8];
    for (int i = 0; i < bytes; i++)
        x[i] = (unsigned char)(v >> (8 * (bytes - 1 - i)));
    buf_put(b, x, (size_t)bytes);
}

/* numeric_send from exact digits "-123.4500". */
static void numeric_binary(struct buf *b, const char *text, size_t len)
{
    bool neg = len && text[0] == '-';
    size_t i = neg;
    const char *dot = memchr(text, '.', len);
    size_t int_end = dot ? (size_t)(dot - text) : len;
    while (i < int_end && text[i] == '0')
        i++;
    size_t nint = int_end - i, nfrac = dot ? len - int_end - 1 : 0;
    /* Digits of the integer part padded on the left, the fraction on the
     * right, to whole groups of four. */
    size_t lead = (4 - nint % 4) % 4, ngroups = (lead + nint) / 4 + (nfrac + 3) / 4;
    int16_t groups[128];
    if (ngroups > sizeof groups / sizeof *groups)
        ngroups = sizeof groups / sizeof *groups;
    for (size_t g = 0; g < ngroups; g++) {
        int v = 0;
        for (size_t k = 0; k < 4; k++) {
            size_t pos = g * 4 + k; /* in the padded digit string */
            char c = '0';
            if (pos >= lead && pos < lead + nint)
                c = text[i + pos - lead];
            else if (pos >= lead + nint && pos - lead - nint < nfrac)
                c = dot[1 + pos - lead - nint];
            v = v * 10 + (c - '0');
        }
        groups[g] = (int16_t)v;
    }
    int weight = (int)((lead + nint) / 4) - 1;
    size_t first = 0, last = ngroups;
    while (first < last && groups[first] == 0) {
        first++;
        weight--;
    }
    while (last > first && groups[last - 1] == 0)
        last--;
    if (first == last)
        weight = 0;
    pg_put_int16(b, (int16_t)(last - first));
    pg_put_int16(b, (int16_t)weight);
    pg_put_int16(b, (int16_t)(neg && first < last ? 0x4000 : 0));
    pg_put_int16(b, (int16_t)nfrac);
    for (size_t g = first; g < last; g++)
        pg_put_int16(b, groups[g]);
}

void pg_put_value(struct buf *b, const struct answer_value *v, uint32_t oid, bool binary)
{
    char tmp[160];
    int n = 0;
    if (v->kind == ANSWER_NULL) {
        pg_put_int32(b, -1);
        return;
    }
    if (binary) {
        size_t at = b->len;
        pg_put_int32(b, 0);
        switch (v->kind) {
        case ANSWER_INT:
            put_be(b, (uint64_t)v->i, oid == ANSWER_OID_INT2 ? 2 : oid == ANSWER_OID_INT4 ? 4 : 8);
            break;
        case ANSWER_BOOL: put_be(b, (uint64_t)(v->i != 0), 1); break;
        case ANSWER_DOUBLE: {
            uint64_t u;
            memcpy(&u, &v->d, 8);
            put_be(b, u, 8);
            break;
        }
        case ANSWER_DECIMAL: numeric_binary(b, v->text, v->len); break;
        case ANSWER_TEXT: buf_put(b, v->text, v->len); break;
        case ANSWER_TIME: put_be(b, (uint64_t)(v->i - PG_EPOCH_US), 8); break;
        case ANSWER_DATE: put_be(b, (uint64_t)(v->i - PG_EPOCH_DAYS), 4); break;
        case ANSWER_NULL: break;
        }
        if (!b->failed) {
            uint32_t len = (uint32_t)(b->len - at - 4);
            unsigned char *p = (unsigned char *)b->data + at;
            p[0] = (unsigned char)(len >> 24);
            p[1] = (unsigned char)(len >> 16);
            p[2] = (unsigned char)(len >> 8);
            p[3] = (unsigned char)len;
        }
        return;
    }
    const char *text = tmp;
    switch (v->kind) {
    case ANSWER_INT: n = int64_text(v->i, tmp); break;
    case ANSWER_BOOL:
        tmp[0] = v->i ? 't' : 'f';
        n = 1;
        break;
    case ANSWER_DOUBLE: n = double_text(v->d, tmp, sizeof tmp); break;
    case ANSWER_DECIMAL:
    case ANSWER_TEXT:
        text = v->text;
        n = (int)v->len;
        break;
    case ANSWER_TIME:
        n = oid == ANSWER_OID_TIMESTAMP
                ? engine_format_pg_time(v->i, INT32_MIN, tmp, sizeof tmp)
                : engine_format_pg_time(v->i + (int64_t)v->utc_offset_s * 1000000,
                                        v->utc_offset_s, tmp, sizeof tmp);
        break;
    case ANSWER_DATE: n = date_text(v->i, tmp, sizeof tmp); break;
    case ANSWER_NULL: break;
    }
    pg_put_int32(b, n);
    buf_put(b, text, (size_t)n);
}

/* ---- Parameters ---------------------------------------------------------------- */

bool pg_type_compatible(uint32_t declared, uint32_t inferred)
{
    if (declared == 0 || declared == 705 /* unknown */ || declared == ANSWER_OID_TEXT ||
        declared == ANSWER_OID_VARCHAR || declared == 1042 /* bpchar */ || declared == inferred)
        return true;
    bool num_declared = declared == ANSWER_OID_INT2 || declared == ANSWER_OID_INT4 ||
                        declared == ANSWER_OID_INT8 || declared == ANSWER_OID_NUMERIC;
    switch (inferred) {
    case ANSWER_OID_TIMESTAMPTZ:
    case ANSWER_OID_TIMESTAMP:
    case ANSWER_OID_DATE:
        return declared == ANSWER_OID_TIMESTAMPTZ || declared == ANSWER_OID_TIMESTAMP ||
               declared == ANSWER_OID_DATE;
    case ANSWER_OID_INT2:
    case ANSWER_OID_INT4:
    case ANSWER_OID_INT8:
    case ANSWER_OID_NUMERIC:
        return num_declared;
    case ANSWER_OID_FLOAT8:
        return num_declared || declared == 700 || declared == ANSWER_OID_FLOAT8;
    case ANSWER_OID_TEXT:
    case ANSWER_OID_VARCHAR:
        return false;
    default: return false;
    }
}

static uint64_t get_be(const unsigned char *p, int bytes)
{
    uint64_t v = 0;
    for (int i = 0; i < bytes; i++)
        v = v << 8 | p[i];
    return v;
}

/* numeric_recv into exact digits. */
static int numeric_from_binary(const unsigned char *p, int32_t len, char *out, size_t cap,
                               size_t *outlen)
{
    if (len < 8)
        return -1;
    int ndigits = (int16_t)get_be(p, 2), weight = (int16_t)get_be(p + 2, 2);
    int sign = (int)get_be(p + 4, 2), dscale = (int16_t)get_be(p + 6, 2);
    if (ndigits < 0 || len != 8 + 2 * ndigits || dscale < 0 || dscale > 1000 ||
        (sign != 0 && sign != 0x4000) || weight > 1000 || weight < -1000)
        return -1;
    size_t n = 0;
#define PUT(c)                  \
    do {                        \
        if (n + 1 >= cap)       \
            return -1;          \
        out[n++] = (char)(c);   \
    } while (0)
    if (sign == 0x4000)
        PUT('-');
    /* Integer part: groups 0..weight. */
    bool any = false;
    for (int g = 0; g <= weight; g++) {
        int v = g < ndigits ? (int)get_be(p + 8 + 2 * g, 2) : 0;
        if (v > 9999)
            return -1;
        char d[5];
        snprintf(d, sizeof d, "%04d", v);
        for (int k = 0; k < 4; k++)
            if (any || d[k] != '0' || (g == weight && k == 3)) {
                PUT(d[k]);
                any = true;
            }
    }
    if (!any)
        PUT('0');
    if (dscale > 0) {
        PUT('.');
        for (int k = 0; k < dscale; k++) {
            int g = weight + 1 + k / 4; /* the group holding fraction digit k */
            int v = g >= 0 && g < ndigits ? (int)get_be(p + 8 + 2 * g, 2) : 0;
            static const int div[4] = {1000, 100, 10, 1};
            PUT('0' + v / div[k % 4] % 10);
        }
    }
#undef PUT
    out[n] = '\0';
    *outlen = n;
    return 0;
}

int pg_param_text(const struct pg_bind_param *p, int16_t format, uint32_t oid, char *tmp,
                  size_t cap, const char **text, size_t *len, char *why, size_t whylen)
{
    if (format == 0) {
        *text = (const char *)p->data;
        *len = (size_t)p->len;
        return 0;
    }
    const unsigned char *d = p->data;
    int32_t n = p->len;
    int k = -1;
    switch (oid) {
    case ANSWER_OID_INT2:
        if (n == 2)
            k = snprintf(tmp, cap, "%d", (int16_t)get_be(d, 2));
        break;
    case ANSWER_OID_INT4:
        if (n == 4)
            k = snprintf(tmp, cap, "%d", (int32_t)get_be(d, 4));
        break;
    case ANSWER_OID_INT8:
        if (n == 8)
            k = snprintf(tmp, cap, "%lld", (long long)(int64_t)get_be(d, 8));
        break;
    case ANSWER_OID_BOOL:
        if (n == 1)
            k = snprintf(tmp, cap, "%s", d[0] ? "true" : "false");
        break;
    case ANSWER_OID_FLOAT8:
        if (n == 8) {
            uint64_t u = get_be(d, 8);
            double x;
            memcpy(&x, &u, 8);
            k = snprintf(tmp, cap, "%.17g", x);
        }
        break;
    case ANSWER_OID_DATE:
        if (n == 4)
            k = date_text((int64_t)(int32_t)get_be(d, 4) + PG_EPOCH_DAYS, tmp, cap);
        break;
    case ANSWER_OID_TIMESTAMP:
    case ANSWER_OID_TIMESTAMPTZ:
        if (n == 8) {
            int64_t us = (int64_t)get_be(d, 8) + PG_EPOCH_US;
            k = (int)engine_format_pg_time(us, oid == ANSWER_OID_TIMESTAMPTZ ? 0 : INT32_MIN, tmp,
                                            cap);
        }
        break;
    case ANSWER_OID_NUMERIC: {
        size_t got;
        if (numeric_from_binary(d, n, tmp, cap, &got) == 0)
            k = (int)got;
        break;
    }
    case ANSWER_OID_TEXT:
    case ANSWER_OID_VARCHAR:
    case 1042:
    case 705:
    case 0:
        *text = (const char *)d;
        *len = (size_t)n;
        return 0;
    default:
        snprintf(why, whylen, "a binary parameter of type %u is not supported", oid);
        return -1;
    }
    if (k < 0 || (size_t)k >= cap) {
        snprintf(why, whylen, "a binary parameter of type %u has %d bytes, not its type's form",
                 oid, n);
        return -1;
    }
    *text = tmp;
    *len = (size_t)k;
    return 0;
}
