/* test_ingest_row_record.c -- the initial load's set-aside rows: a decoded
 * row of every column type, NULLs included, comes back from its record
 * with every field decoding gave; a record cut short, with bytes too many
 * or of random bytes is refused with a message, never read past. */
#include "ingest/row_record.h"

#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* One column of each type, a second TEXT after a NULL-able run, nine in all
 * so that the NULL bitmap takes two bytes. */
static struct source_column cols[] = {
    {.name = "i", .type = {STORE_TYPE_INT, 0, PG_INT8}},
    {.name = "n", .type = {STORE_TYPE_NUMERIC, 2, PG_NUMERIC}},
    {.name = "f", .type = {STORE_TYPE_FLOAT, 0, PG_FLOAT8}},
    {.name = "s", .type = {STORE_TYPE_TEXT, 0, PG_TEXT}},
    {.name = "b", .type = {STORE_TYPE_BOOL, 0, PG_BOOL}},
    {.name = "d", .type = {STORE_TYPE_DATE, 0, PG_DATE}},
    {.name = "t", .type = {STORE_TYPE_TIMESTAMP, 0, PG_TIMESTAMPTZ}},
    {.name = "n6", .type = {STORE_TYPE_NUMERIC, 6, PG_NUMERIC}},
    {.name = "s2", .type = {STORE_TYPE_TEXT, 0, PG_VARCHAR}},
};
enum { NCOLS = sizeof cols / sizeof cols[0] };
static struct source_table table = {.qualified = "\"public\".\"t\"", .cols = cols, .ncols = NCOLS};

static bool same_double(double a, double b)
{
    return (isnan(a) && isnan(b)) || memcmp(&a, &b, sizeof a) == 0;
}

/* A row with column c's code (or text) picked by seed; NULL where the
 * bit of nulls is set. */
static void make_row(struct decoded_value *row, uint64_t seed, unsigned nulls)
{
    static const int64_t codes[] = {0, 1, -1, 63, -64, 64, 1234567, -1234567,
                                    INT64_MAX, INT64_MIN + 1, 1LL << 62, -(1LL << 62)};
    static const char *texts[] = {"", "Manhattan", "a\0b", "ünïcödé"};
    for (int c = 0; c < NCOLS; c++) {
        row[c].is_null = nulls >> c & 1;
        int64_t code = codes[(seed + (uint64_t)c * 7) % (sizeof codes / sizeof codes[0])];
        if (cols[c].type.type == STORE_TYPE_TEXT) {
            const char *s = texts[(seed + (uint64_t)c) % 4];
            row[c].v = (struct pgvalue){.text = s, .len = s[0] == 'a' ? 3 : strlen(s)};
        } else if (cols[c].type.type == STORE_TYPE_FLOAT) {
            static const double reals[] = {1.5, -0.0, NAN, -INFINITY, 1e-320, 0.1};
            pgvalue_from_code(&cols[c].type, store_float_code(reals[seed % 6]), &row[c].v);
        } else {
            pgvalue_from_code(&cols[c].type, code, &row[c].v);
        }
    }
}

static void assert_same_row(const struct decoded_value *a, const struct decoded_value *b)
{
    for (int c = 0; c < NCOLS; c++) {
        cr_assert_eq(a[c].is_null, b[c].is_null, "column %s", cols[c].name);
        if (a[c].is_null)
            continue;
        if (cols[c].type.type == STORE_TYPE_TEXT) {
            cr_assert(a[c].v.len == b[c].v.len && memcmp(a[c].v.text, b[c].v.text, a[c].v.len) == 0,
                      "column %s", cols[c].name);
            continue;
        }
        cr_assert_eq(a[c].v.code, b[c].v.code, "column %s", cols[c].name);
        cr_assert(a[c].v.exact == b[c].v.exact, "column %s", cols[c].name);
        cr_assert(same_double(a[c].v.real, b[c].v.real), "column %s", cols[c].name);
    }
}

Test(ingest_row_record, every_type_and_null_comes_back)
{
    struct row_record_buf buf = {0};
    struct decoded_value row[NCOLS], back[NCOLS];
    char err[256];
    for (uint64_t seed = 0; seed < 48; seed++)
        for (unsigned nulls = 0; nulls < (1u << NCOLS); nulls += 1 + (unsigned)seed) {
            make_row(row, seed, nulls);
            size_t len = row_record_encode(&table, row, &buf);
            cr_assert_gt(len, 0);
            cr_assert_eq(row_record_decode(&table, buf.bytes, len, back, err, sizeof err), 0,
                         "%s", err);
            assert_same_row(row, back);
        }
    row_record_buf_free(&buf);
}

/* What the load's records cost: the point of them. A taxi trip's codes
 * (a timestamp, two zones, a payment type, three cents amounts) take
 * 20 bytes, against 86 as a binary COPY tuple. */
Test(ingest_row_record, a_trip_takes_about_twenty_bytes)
{
    static struct source_column trip_cols[] = {
        {.name = "pickup_at", .type = {STORE_TYPE_TIMESTAMP, 0, PG_TIMESTAMP}},
        {.name = "pu", .type = {STORE_TYPE_INT, 0, PG_INT4}},
        {.name = "do", .type = {STORE_TYPE_INT, 0, PG_INT4}},
        {.name = "payment", .type = {STORE_TYPE_INT, 0, PG_INT2}},
        {.name = "fare", .type = {STORE_TYPE_NUMERIC, 2, PG_NUMERIC}},
        {.name = "tip", .type = {STORE_TYPE_NUMERIC, 2, PG_NUMERIC}},
        {.name = "distance", .type = {STORE_TYPE_NUMERIC, 2, PG_NUMERIC}},
    };
    struct source_table trips = {.qualified = "trips", .cols = trip_cols, .ncols = 7};
    const int64_t codes[] = {1705485600123456, 161, 236, 1, 1750, 350, 312};
    struct decoded_value row[7];
    for (int c = 0; c < 7; c++) {
        row[c].is_null = false;
        pgvalue_from_code(&trip_cols[c].type, codes[c], &row[c].v);
    }
    struct row_record_buf buf = {0};
    cr_assert_eq(row_record_encode(&trips, row, &buf), 1 + 8 + 2 + 2 + 1 + 2 + 2 + 2);
    row_record_buf_free(&buf);
}

Test(ingest_row_record, a_record_cut_short_or_too_long_is_refused)
{
    struct row_record_buf buf = {0};
    struct decoded_value row[NCOLS], back[NCOLS];
    char err[256];
    make_row(row, 5, 0);
    size_t len = row_record_encode(&table, row, &buf);
    uint8_t *exact = malloc(len + 1);
    for (size_t cut = 0; cut < len; cut++) {
        /* A copy of just cut bytes, so that ASan sees any read past it. */
        uint8_t *p = malloc(cut ? cut : 1);
        memcpy(p, buf.bytes, cut);
        cr_assert_eq(row_record_decode(&table, p, cut, back, err, sizeof err), -1, "cut %zu", cut);
        cr_assert_str_eq(err, "a set-aside row of \"public\".\"t\" is cut short");
        free(p);
    }
    memcpy(exact, buf.bytes, len);
    exact[len] = 0;
    cr_assert_eq(row_record_decode(&table, exact, len + 1, back, err, sizeof err), -1);
    cr_assert_str_eq(err, "a set-aside row of \"public\".\"t\" has 1 bytes too many");
    /* A varint of eleven bytes, or of ten whose last carries more than
     * 64 bits, is no code. */
    uint8_t wide[2 + 11];
    wide[0] = 0xfe; /* every column NULL but the first, "i" */
    wide[1] = 0x01;
    memset(wide + 2, 0xff, 10);
    wide[12] = 0x01;
    cr_assert_eq(row_record_decode(&table, wide, sizeof wide, back, err, sizeof err), -1);
    wide[11] = 0x02;
    cr_assert_eq(row_record_decode(&table, wide, 12, back, err, sizeof err), -1);
    wide[11] = 0x01;
    cr_assert_eq(row_record_decode(&table, wide, 12, back, err, sizeof err), 0, "%s", err);
    cr_assert_eq(back[0].v.code, INT64_MIN, "ten bytes of 64 bits: the zigzag of INT64_MIN");
    free(exact);
    row_record_buf_free(&buf);
}

/* Random bytes: refused with a message or read as some row, never read
 * past their end (ASan). */
Test(ingest_row_record, random_bytes_are_never_read_past)
{
    struct decoded_value back[NCOLS];
    char err[256];
    uint64_t x = 88172645463325252ULL;
    int refused = 0;
    for (int i = 0; i < 20000; i++) {
        size_t len = (size_t)(i % 40);
        uint8_t *p = malloc(len ? len : 1);
        for (size_t k = 0; k < len; k++) {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            p[k] = (uint8_t)x;
        }
        err[0] = '\0';
        if (row_record_decode(&table, p, len, back, err, sizeof err) != 0) {
            refused++;
            cr_assert(strncmp(err, "a set-aside row of ", 19) == 0, "%s", err);
        }
        free(p);
    }
    cr_assert_gt(refused, 10000, "most random bytes are no record");
}
