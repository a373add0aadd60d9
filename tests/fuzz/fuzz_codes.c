/* fuzz_codes.c -- libFuzzer target for values into store codes
 * (store_code_of_value) and codes into text (store_code_format).
 *
 * Input: byte 0 picks the column type (byte % 12) and the form (byte / 12
 * % 3: text, number as written, boolean); the rest is the value. Checks:
 *   - the result is OK, NONE or REFUSED, and every NONE and REFUSED has a
 *     message;
 *   - an OK code is never STORE_NULL; a TEXT value is the input's bytes;
 *   - an OK code's text (store_code_format) fits 80 bytes and reads back,
 *     as text, as the same code (but for a timestamp pushed by its offset
 *     out of the years sql_parse_timestamp reads, and a number as written
 *     for a real, which may be a double no real equals);
 *   - the same input gives the same answer twice (no hidden state).
 * ASan/UBSan watch for the rest (the numeric reader's 128-bit sums and
 * exponents, strtod's copies). */
#include "tests/fuzz/fuzz_check.h"
#include "store/store.h"

#include <stdint.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const struct store_column_type types[] = {
    {STORE_TYPE_INT, 0, PG_INT2},       {STORE_TYPE_INT, 0, PG_INT4},
    {STORE_TYPE_INT, 0, PG_INT8},       {STORE_TYPE_NUMERIC, 0, PG_NUMERIC},
    {STORE_TYPE_NUMERIC, 2, PG_NUMERIC}, {STORE_TYPE_FLOAT, 0, PG_FLOAT4},
    {STORE_TYPE_FLOAT, 0, PG_FLOAT8},   {STORE_TYPE_BOOL, 0, PG_BOOL},
    {STORE_TYPE_DATE, 0, PG_DATE},      {STORE_TYPE_TIMESTAMP, 0, PG_TIMESTAMP},
    {STORE_TYPE_TIMESTAMP, 0, PG_TIMESTAMPTZ}, {STORE_TYPE_NUMERIC, 18, PG_NUMERIC},
};
#define NTYPES (sizeof types / sizeof types[0])

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == 0)
        return 0;
    const struct store_column_type *t = &types[data[0] % NTYPES];
    enum store_value_form form = (enum store_value_form)(data[0] / NTYPES % 3);
    struct store_value v = {form, size > 1 && (data[1] & 1), (const char *)data + 1, size - 1};
    struct store_coded c, again;
    char err[300] = "", err2[300] = "";
    int rc = store_code_of_value(t, &v, &c, err, sizeof err);
    CHECK(rc == STORE_CODE_OK || rc == STORE_CODE_NONE || rc == STORE_CODE_REFUSED);
    CHECK(store_code_of_value(t, &v, &again, err2, sizeof err2) == rc);
    CHECK(strcmp(err, err2) == 0);
    if (rc != STORE_CODE_OK) {
        CHECK(err[0] != '\0');
        return 0;
    }
    CHECK(c.code == again.code && c.local == again.local);
    if (t->type == STORE_TYPE_TEXT)
        return 0;
    CHECK(c.code != STORE_NULL);
    char text[128];
    size_t n = store_code_format(t, c.code, text, sizeof text);
    CHECK(n < 80);
    if (t->type == STORE_TYPE_FLOAT && form == STORE_VALUE_NUMBER && t->pg_oid == PG_FLOAT4)
        return 0;
    if (t->type == STORE_TYPE_TIMESTAMP && (n < 4 || text[4] != '-' || strstr(text, " BC")))
        return 0;
    struct store_value back = {STORE_VALUE_TEXT, false, text, n};
    struct store_coded b;
    CHECK(store_code_of_value(t, &back, &b, err, sizeof err) == STORE_CODE_OK);
    CHECK(b.code == c.code);
    return 0;
}
