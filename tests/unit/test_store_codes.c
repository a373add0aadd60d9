/* test_store_codes.c -- values into codes (store_code_of_value) and codes
 * into text (store_code_format), table-driven, and every table entry
 * checked against a real PostgreSQL.
 *
 * Each entry is an input of one form for one column type, and what Straum
 * must make of it: a code, NONE (a value of the type no stored code equals),
 * REFUSED (not a value of the type), or UNREAD (a form PostgreSQL reads that
 * Straum refuses with the forms it reads: the tables list every such form
 * the code knows of). The PostgreSQL test runs SELECT $1::type for every
 * text entry: PostgreSQL must refuse exactly the REFUSED ones, and give the
 * same value for the accepted ones; each code's text must be PostgreSQL's
 * text of the same value, and read back as the same code. */
#include "store/store.h"
#include "tests/pg/pgtest.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum col { I2, I4, I8, N2, N0, F4, F8, B, D, TS, TZ, TX, NCOL };

static const struct store_column_type types[NCOL] = {
    [I2] = {STORE_TYPE_INT, 0, PG_INT2},        [I4] = {STORE_TYPE_INT, 0, PG_INT4},
    [I8] = {STORE_TYPE_INT, 0, PG_INT8},        [N2] = {STORE_TYPE_NUMERIC, 2, PG_NUMERIC},
    [N0] = {STORE_TYPE_NUMERIC, 0, PG_NUMERIC}, [F4] = {STORE_TYPE_FLOAT, 0, PG_FLOAT4},
    [F8] = {STORE_TYPE_FLOAT, 0, PG_FLOAT8},    [B] = {STORE_TYPE_BOOL, 0, PG_BOOL},
    [D] = {STORE_TYPE_DATE, 0, PG_DATE},        [TS] = {STORE_TYPE_TIMESTAMP, 0, PG_TIMESTAMP},
    [TZ] = {STORE_TYPE_TIMESTAMP, 0, PG_TIMESTAMPTZ}, [TX] = {STORE_TYPE_TEXT, 0, PG_TEXT},
};

/* The PostgreSQL type of each column, and the SQL that gives the value of
 * $1 in that type as the code's decimal text (or a word for the values no
 * code holds). */
static const char *const sql_type[NCOL] = {
    "int2", "int4", "int8", "numeric(40,2)", "numeric(40,0)", "float4", "float8",
    "bool", "date", "timestamp", "timestamptz", "text",
};

static const char *const sql_value[NCOL] = {
    [I2] = "SELECT $1::int2::text",
    [I4] = "SELECT $1::int4::text",
    [I8] = "SELECT $1::int8::text",
    [N2] = "SELECT CASE WHEN v = 'NaN' OR v IN ('Infinity', '-Infinity') THEN 'special' "
           "WHEN abs(v) >= 1e30 THEN 'huge' WHEN v <> round(v, 2) THEN 'decimals' ELSE (v * 100)::numeric(1000,0)::text END "
           "FROM (SELECT $1::numeric AS v) x",
    [N0] = "SELECT CASE WHEN v = 'NaN' OR v IN ('Infinity', '-Infinity') THEN 'special' "
           "WHEN abs(v) >= 1e30 THEN 'huge' WHEN v <> round(v, 0) THEN 'decimals' ELSE v::numeric(1000,0)::text END "
           "FROM (SELECT $1::numeric AS v) x",
    [F4] = "SELECT $1::float4::float8::text",
    [F8] = "SELECT $1::float8::text",
    [B] = "SELECT $1::bool::int::text",
    [D] = "SELECT CASE WHEN isfinite(v) THEN (v - date '1970-01-01')::text ELSE 'infinite' END "
          "FROM (SELECT $1::date AS v) x",
    [TS] = "SELECT CASE WHEN isfinite(v) THEN (extract(epoch FROM v) * 1000000)::numeric(30,0)"
           "::text ELSE 'infinite' END FROM (SELECT $1::timestamp AS v) x",
    [TZ] = "SELECT CASE WHEN isfinite(v) THEN (extract(epoch FROM v) * 1000000)::numeric(30,0)"
           "::text ELSE 'infinite' END FROM (SELECT $1::timestamptz AS v) x",
    [TX] = "SELECT $1::text",
};

enum outcome { OK, NONE, REFUSED, UNREAD };

enum { T = STORE_VALUE_TEXT, N = STORE_VALUE_NUMBER, BO = STORE_VALUE_BOOL };

struct entry {
    enum col col;
    int form;
    const char *in;  /* BOOL form: "true" or "false" */
    enum outcome want;
    int64_t code;    /* OK; floats: see fcode */
    double real;     /* F4, F8 with OK: the value (code = store_float_code(real)) */
    bool local;      /* TZ with OK: written without an offset */
};

#define DAY 86400000000LL
#define HOUR 3600000000LL
#define JAN17 19739 /* 2024-01-17 in days since 1970-01-01 */

static const struct entry table[] = {
    /* int2in, int4in, int8in */
    {I2, T, "0", OK, 0, 0, 0},
    {I2, T, "-32768", OK, -32768, 0, 0},
    {I2, T, "32767", OK, 32767, 0, 0},
    {I2, T, " 12 ", OK, 12, 0, 0},
    {I2, T, "\t7\n", OK, 7, 0, 0},
    {I2, T, "+5", OK, 5, 0, 0},
    {I2, T, "-0", OK, 0, 0, 0},
    {I2, T, "007", OK, 7, 0, 0},
    {I2, T, "32768", REFUSED, 0, 0, 0},
    {I2, T, "-32769", REFUSED, 0, 0, 0},
    {I2, T, "1.5", REFUSED, 0, 0, 0},
    {I2, T, "1e3", REFUSED, 0, 0, 0},
    {I2, T, "", REFUSED, 0, 0, 0},
    {I2, T, " ", REFUSED, 0, 0, 0},
    {I2, T, "12a", REFUSED, 0, 0, 0},
    {I2, T, "0x10", REFUSED, 0, 0, 0},
    {I2, T, "- 1", REFUSED, 0, 0, 0},
    {I2, T, "+", REFUSED, 0, 0, 0},
    {I2, T, "NaN", REFUSED, 0, 0, 0},
    {I4, T, "2147483647", OK, 2147483647, 0, 0},
    {I4, T, "-2147483648", OK, -2147483648LL, 0, 0},
    {I4, T, "2147483648", REFUSED, 0, 0, 0},
    {I4, T, "1 2", REFUSED, 0, 0, 0},
    {I8, T, "9223372036854775807", OK, INT64_MAX, 0, 0},
    {I8, T, "-9223372036854775807", OK, -INT64_MAX, 0, 0},
    {I8, T, "-9223372036854775808", NONE, 0, 0, 0},
    {I8, T, "9223372036854775808", REFUSED, 0, 0, 0},
    {I8, T, "99999999999999999999999", REFUSED, 0, 0, 0},
    /* A number as written compares as a numeric with an integer key. */
    {I4, N, "1e3", OK, 1000, 0, 0},
    {I4, N, "1.0", OK, 1, 0, 0},
    {I4, N, "-2147483648", OK, -2147483648LL, 0, 0},
    {I4, N, "1.5", NONE, 0, 0, 0},
    {I4, N, "3000000000", NONE, 0, 0, 0},
    {I2, N, "40000", NONE, 0, 0, 0},
    {I8, N, "9.223372036854775807e18", OK, INT64_MAX, 0, 0},
    {I8, N, "-9223372036854775808", NONE, 0, 0, 0},
    {I8, BO, "true", REFUSED, 0, 0, 0},

    /* numeric_in, at scale 2 and 0 */
    {N2, T, "12.5", OK, 1250, 0, 0},
    {N2, T, "-1.5", OK, -150, 0, 0},
    {N2, T, "1.500", OK, 150, 0, 0},
    {N2, T, ".5", OK, 50, 0, 0},
    {N2, T, "5.", OK, 500, 0, 0},
    {N2, T, "1e2", OK, 10000, 0, 0},
    {N2, T, "1.5E1", OK, 1500, 0, 0},
    {N2, T, "150e-2", OK, 150, 0, 0},
    {N2, T, "  3.25  ", OK, 325, 0, 0},
    {N2, T, "+0.01", OK, 1, 0, 0},
    {N2, T, "-0", OK, 0, 0, 0},
    {N2, T, "0.000", OK, 0, 0, 0},
    {N2, T, "00012.30", OK, 1230, 0, 0},
    {N2, T, "92233720368547758.07", OK, INT64_MAX, 0, 0},
    {N2, T, "-92233720368547758.07", OK, -INT64_MAX, 0, 0},
    {N2, T, "1.005", NONE, 0, 0, 0},
    {N2, T, "1e-3", NONE, 0, 0, 0},
    {N2, T, "1e30", NONE, 0, 0, 0},
    {N2, T, "1e1000", NONE, 0, 0, 0},
    {N2, T, "92233720368547758.08", NONE, 0, 0, 0},
    {N2, T, "NaN", NONE, 0, 0, 0},
    {N2, T, "nan", NONE, 0, 0, 0},
    {N2, T, "Infinity", NONE, 0, 0, 0},
    {N2, T, "-inf", NONE, 0, 0, 0},
    {N2, T, "abc", REFUSED, 0, 0, 0},
    {N2, T, "", REFUSED, 0, 0, 0},
    {N2, T, ".", REFUSED, 0, 0, 0},
    {N2, T, "-", REFUSED, 0, 0, 0},
    {N2, T, "1e", REFUSED, 0, 0, 0},
    {N2, T, "1e+", REFUSED, 0, 0, 0},
    {N2, T, "12,5", REFUSED, 0, 0, 0},
    {N2, T, "1.2.3", REFUSED, 0, 0, 0},
    {N2, T, "0x10", REFUSED, 0, 0, 0},
    {N2, T, "1e1001", NONE, 0, 0, 0},
    {N2, T, "1e131071", NONE, 0, 0, 0},
    {N2, T, "1e131072", REFUSED, 0, 0, 0},
    {N2, T, "0.0012e131074", NONE, 0, 0, 0},
    {N2, T, "0.0012e131075", REFUSED, 0, 0, 0},
    {N2, T, "1e-16383", NONE, 0, 0, 0},
    {N2, T, "1e-16384", REFUSED, 0, 0, 0},
    {N2, T, "1.5e-16382", NONE, 0, 0, 0},
    {N2, T, "1.5e-16383", REFUSED, 0, 0, 0},
    {N2, T, "0e1000000", OK, 0, 0, 0},
    {N2, T, "0e1073741823", REFUSED, 0, 0, 0},
    {N2, T, "1e 2", OK, 10000, 0, 0},
    {N2, T, "1e -2", OK, 1, 0, 0},
    {N2, T, "1e+ 2", REFUSED, 0, 0, 0},
    {N2, T, "+NaN", REFUSED, 0, 0, 0},
    {N2, T, "1 0", REFUSED, 0, 0, 0},
    {N2, N, "1e3", OK, 100000, 0, 0},
    {N2, N, "1.005", NONE, 0, 0, 0},
    {N2, BO, "false", REFUSED, 0, 0, 0},
    {N0, T, "5", OK, 5, 0, 0},
    {N0, T, "5.0", OK, 5, 0, 0},
    {N0, T, "5.5", NONE, 0, 0, 0},
    {N0, T, "-9223372036854775807", OK, -INT64_MAX, 0, 0},
    {N0, T, "9223372036854775808", NONE, 0, 0, 0},

    /* float4in, float8in */
    {F8, T, "1.5", OK, 0, 1.5, 0},
    {F8, T, "-1e+300", OK, 0, -1e300, 0},
    {F8, T, "1e-320", OK, 0, 1e-320, 0},
    {F8, T, "0.1", OK, 0, 0.1, 0},
    {F8, T, " 2.5 ", OK, 0, 2.5, 0},
    {F8, T, "Infinity", OK, 0, INFINITY, 0},
    {F8, T, "-Infinity", OK, 0, -INFINITY, 0},
    {F8, T, "inf", OK, 0, INFINITY, 0},
    {F8, T, "+inf", OK, 0, INFINITY, 0},
    {F8, T, "NaN", OK, 0, NAN, 0},
    {F8, T, "nan", OK, 0, NAN, 0},
    {F8, T, "-0", OK, 0, 0.0, 0},
    {F8, T, "0x10", OK, 0, 16, 0},
    {F8, T, "1e400", REFUSED, 0, 0, 0},
    {F8, T, "1e-400", REFUSED, 0, 0, 0},
    {F8, T, "1e", REFUSED, 0, 0, 0},
    {F8, T, "", REFUSED, 0, 0, 0},
    {F8, T, "abc", REFUSED, 0, 0, 0},
    {F8, T, "1.5x", REFUSED, 0, 0, 0},
    {F8, T, "infinityx", REFUSED, 0, 0, 0},
    {F8, N, "1e3", OK, 0, 1000, 0},
    {F4, T, "0.1", OK, 0, (double)0.1f, 0},
    {F4, T, "3.4028235e38", OK, 0, (double)3.4028235e38f, 0},
    {F4, T, "1e39", REFUSED, 0, 0, 0},
    {F4, T, "1e-50", REFUSED, 0, 0, 0},
    /* A number as written is a numeric, which compares with a real column
     * as a double precision: 0.1 equals no real. */
    {F4, N, "0.1", OK, 0, 0.1, 0},

    /* boolin */
    {B, T, "t", OK, 1, 0, 0},
    {B, T, "true", OK, 1, 0, 0},
    {B, T, "TRUE ", OK, 1, 0, 0},
    {B, T, "  yes", OK, 1, 0, 0},
    {B, T, "y", OK, 1, 0, 0},
    {B, T, "on", OK, 1, 0, 0},
    {B, T, "ON", OK, 1, 0, 0},
    {B, T, "1", OK, 1, 0, 0},
    {B, T, "tr", OK, 1, 0, 0},
    {B, T, "ye", OK, 1, 0, 0},
    {B, T, "0", OK, 0, 0, 0},
    {B, T, "f", OK, 0, 0, 0},
    {B, T, "false", OK, 0, 0, 0},
    {B, T, "No", OK, 0, 0, 0},
    {B, T, "n", OK, 0, 0, 0},
    {B, T, "off", OK, 0, 0, 0},
    {B, T, "of", OK, 0, 0, 0},
    {B, T, "fa", OK, 0, 0, 0},
    {B, T, "tomato", REFUSED, 0, 0, 0},
    {B, T, "o", REFUSED, 0, 0, 0},
    {B, T, "2", REFUSED, 0, 0, 0},
    {B, T, "", REFUSED, 0, 0, 0},
    {B, T, "truee", REFUSED, 0, 0, 0},
    {B, T, "yess", REFUSED, 0, 0, 0},
    {B, T, "onn", REFUSED, 0, 0, 0},
    {B, T, "t r", REFUSED, 0, 0, 0},
    {B, T, "-1", REFUSED, 0, 0, 0},
    {B, T, "01", REFUSED, 0, 0, 0},
    {B, BO, "true", OK, 1, 0, 0},
    {B, BO, "false", OK, 0, 0, 0},
    {B, N, "1", REFUSED, 0, 0, 0},

    /* date_in, DateStyle ISO */
    {D, T, "2024-01-17", OK, JAN17, 0, 0},
    {D, T, " 2024-01-17 ", OK, JAN17, 0, 0},
    {D, T, "2024-1-7", OK, JAN17 - 10, 0, 0},
    {D, T, "1970-01-01", OK, 0, 0, 0},
    {D, T, "epoch", OK, 0, 0, 0},
    {D, T, "2000-02-29", OK, 11016, 0, 0},
    {D, T, "0001-12-31 BC", OK, -719163, 0, 0},
    {D, T, "4713-01-01 BC", OK, -2440550, 0, 0},
    {D, T, "5874897-12-31", OK, 2145042905, 0, 0},
    {D, T, "12345-06-07", OK, 3789548, 0, 0},
    {D, T, "2024-01-17 AD", OK, JAN17, 0, 0},
    {D, T, "infinity", NONE, 0, 0, 0},
    {D, T, "-infinity", NONE, 0, 0, 0},
    {D, T, "2024-13-01", REFUSED, 0, 0, 0},
    {D, T, "2023-02-29", REFUSED, 0, 0, 0},
    {D, T, "2024-00-10", REFUSED, 0, 0, 0},
    {D, T, "2024-01-32", REFUSED, 0, 0, 0},
    {D, T, "0000-01-01", REFUSED, 0, 0, 0},
    {D, T, "", REFUSED, 0, 0, 0},
    {D, T, "tomato", REFUSED, 0, 0, 0},
    {D, T, "5874898-01-01", REFUSED, 0, 0, 0},
    {D, T, "4714-01-01 BC", REFUSED, 0, 0, 0},
    {D, T, "20240117", UNREAD, 0, 0, 0},
    {D, T, "Jan 17 2024", UNREAD, 0, 0, 0},
    {D, T, "17-Jan-2024", UNREAD, 0, 0, 0},
    {D, T, "2024/01/17", UNREAD, 0, 0, 0},
    {D, T, "01/17/2024", UNREAD, 0, 0, 0},
    {D, T, "2024-01-17 10:00", UNREAD, 0, 0, 0},
    {D, T, "today", UNREAD, 0, 0, 0},
    {D, N, "20240117", REFUSED, 0, 0, 0},

    /* timestamp_in, timestamptz_in, DateStyle ISO, TimeZone UTC */
    {TZ, T, "2024-01-17", OK, JAN17 * DAY, 0, 1},
    {TZ, T, "2024-01-17 10:00:00+02", OK, JAN17 * DAY + 8 * HOUR, 0, 0},
    {TZ, T, "2024-01-17T10:00:00Z", OK, JAN17 * DAY + 10 * HOUR, 0, 0},
    {TZ, T, "2024-01-17 10:00:00.5+00", OK, JAN17 * DAY + 10 * HOUR + 500000, 0, 0},
    {TZ, T, "2024-01-17 10:00+05:30", OK, JAN17 * DAY + 10 * HOUR - 5 * HOUR - HOUR / 2, 0, 0},
    {TZ, T, " 2024-01-17 10:00:00+00 ", OK, JAN17 * DAY + 10 * HOUR, 0, 0},
    {TZ, T, "2024-01-17 10:00", OK, JAN17 * DAY + 10 * HOUR, 0, 1},
    {TZ, T, "2024-01-17 10:00:00.123456-01", OK, JAN17 * DAY + 11 * HOUR + 123456, 0, 0},
    {TZ, T, "epoch", OK, 0, 0, 0},
    {TZ, T, "infinity", NONE, 0, 0, 0},
    {TZ, T, "-infinity", NONE, 0, 0, 0},
    {TZ, T, "2024-01-17 25:00", REFUSED, 0, 0, 0},
    {TZ, T, "2024-02-30", REFUSED, 0, 0, 0},
    {TZ, T, "tomato", REFUSED, 0, 0, 0},
    {TZ, T, "", REFUSED, 0, 0, 0},
    {TZ, T, "2024-01-17 10:61", REFUSED, 0, 0, 0},
    {TZ, T, "0044-03-15 10:00:00+00 BC", UNREAD, 0, 0, 0},
    {TZ, T, "Jan 17 2024 10:00", UNREAD, 0, 0, 0},
    {TZ, T, "2024-01-17 10:00:00 Europe/Amsterdam", UNREAD, 0, 0, 0},
    {TZ, T, "now", UNREAD, 0, 0, 0},
    {TZ, T, "12345-01-01 00:00+00", UNREAD, 0, 0, 0},
    {TZ, BO, "true", REFUSED, 0, 0, 0},
    {TS, T, "2024-01-17 10:00:00.25", OK, JAN17 * DAY + 10 * HOUR + 250000, 0, 0},
    {TS, T, "2024-01-17", OK, JAN17 * DAY, 0, 0},
    {TS, T, "epoch", OK, 0, 0, 0},
    {TS, T, "2024-01-17 10:00:00+02", UNREAD, 0, 0, 0},
    {TS, T, "2024-13-17", REFUSED, 0, 0, 0},

    /* text: as is */
    {TX, T, "tomato", OK, 0, 0, 0},
    {TX, T, " 2024-01-17 ", OK, 0, 0, 0},
    {TX, N, "12", REFUSED, 0, 0, 0},
    {TX, BO, "true", REFUSED, 0, 0, 0},
};
#define NTABLE (sizeof table / sizeof table[0])

static int64_t want_code(const struct entry *e)
{
    if (e->col == F4 || e->col == F8)
        return store_float_code(isnan(e->real) ? NAN : e->real == 0 ? 0.0 : e->real);
    return e->code;
}

static struct store_value value_of(const struct entry *e)
{
    if (e->form == BO)
        return (struct store_value){STORE_VALUE_BOOL, strcmp(e->in, "true") == 0, NULL, 0};
    return (struct store_value){(enum store_value_form)e->form, false, e->in, strlen(e->in)};
}

static const char *const outcome_name[] = {"OK", "NONE", "REFUSED", "UNREAD"};

Test(store_codes, every_entry)
{
    for (size_t i = 0; i < NTABLE; i++) {
        const struct entry *e = &table[i];
        struct store_value v = value_of(e);
        struct store_coded c;
        char err[300] = "";
        int rc = store_code_of_value(&types[e->col], &v, &c, err, sizeof err);
        int want = e->want == OK ? STORE_CODE_OK : e->want == NONE ? STORE_CODE_NONE
                                                                   : STORE_CODE_REFUSED;
        cr_expect_eq(rc, want, "%s \"%s\" (%s): rc %d, want %s: %s", sql_type[e->col], e->in,
                     e->form == T ? "text" : e->form == N ? "number" : "boolean", rc,
                     outcome_name[e->want], err);
        if (rc != STORE_CODE_OK) {
            cr_expect(err[0] != '\0', "%s \"%s\": no message", sql_type[e->col], e->in);
            continue;
        }
        if (e->col == TX) {
            cr_expect(c.len == strlen(e->in) && memcmp(c.text, e->in, c.len) == 0);
            continue;
        }
        cr_expect_eq(c.code, want_code(e), "%s \"%s\": code %" PRId64 ", want %" PRId64,
                     sql_type[e->col], e->in, c.code, want_code(e));
        cr_expect_eq(c.local, e->local, "%s \"%s\": local %d", sql_type[e->col], e->in, c.local);
        cr_expect_neq(c.code, STORE_NULL);
    }
}

Test(store_codes, messages_name_the_value_and_the_type)
{
    struct store_coded c;
    char err[300];
    struct store_value v = {STORE_VALUE_TEXT, false, "tomato", 6};
    cr_assert_eq(store_code_of_value(&types[B], &v, &c, err, sizeof err), STORE_CODE_REFUSED);
    cr_assert_str_eq(err, "\"tomato\" is not a boolean");
    v = (struct store_value){STORE_VALUE_TEXT, false, "40000", 5};
    cr_assert_eq(store_code_of_value(&types[I2], &v, &c, err, sizeof err), STORE_CODE_REFUSED);
    cr_assert_str_eq(err, "\"40000\" is out of range for smallint");
    v = (struct store_value){STORE_VALUE_TEXT, false, "1.5", 3};
    cr_assert_eq(store_code_of_value(&types[I4], &v, &c, err, sizeof err), STORE_CODE_REFUSED);
    cr_assert_str_eq(err, "\"1.5\" is not an integer");
    v = (struct store_value){STORE_VALUE_NUMBER, false, "1.005", 5};
    cr_assert_eq(store_code_of_value(&types[N2], &v, &c, err, sizeof err), STORE_CODE_NONE);
    cr_assert_str_eq(err, "1.005 has more decimals than the column keeps (2)");
    v = (struct store_value){STORE_VALUE_BOOL, true, NULL, 0};
    cr_assert_eq(store_code_of_value(&types[D], &v, &c, err, sizeof err), STORE_CODE_REFUSED);
    cr_assert_str_eq(err, "true is a boolean, not a date");
    v = (struct store_value){STORE_VALUE_TEXT, false, "Jan 17 2024", 11};
    cr_assert_eq(store_code_of_value(&types[D], &v, &c, err, sizeof err), STORE_CODE_REFUSED);
    cr_assert_str_eq(err, "\"Jan 17 2024\" is not a date Straum reads (YYYY-MM-DD, optionally "
                          "followed by BC or AD)");
    v = (struct store_value){STORE_VALUE_TEXT, false, "12a", 3};
    cr_assert_eq(store_code_of_value(&types[I8], &v, &c, err, sizeof err), STORE_CODE_REFUSED);
    cr_assert_str_eq(err, "\"12a\" is not a bigint");
    v = (struct store_value){STORE_VALUE_BOOL, false, NULL, 0};
    cr_assert_eq(store_code_of_value(&types[I4], &v, &c, err, sizeof err), STORE_CODE_REFUSED);
    cr_assert_str_eq(err, "false is a boolean, not an integer");
    v = (struct store_value){STORE_VALUE_NUMBER, false, "12", 2};
    cr_assert_eq(store_code_of_value(&types[TX], &v, &c, err, sizeof err), STORE_CODE_REFUSED);
    cr_assert_str_eq(err, "12 is a number, not text: give a string");
    v = (struct store_value){STORE_VALUE_TEXT, false, "1\0", 2};
    cr_assert_eq(store_code_of_value(&types[I8], &v, &c, err, sizeof err), STORE_CODE_REFUSED);
    cr_assert_str_eq(err, "a bigint holds no NUL byte");
    char big[2000];
    memset(big, '1', sizeof big);
    v = (struct store_value){STORE_VALUE_TEXT, false, big, sizeof big};
    cr_assert_eq(store_code_of_value(&types[F8], &v, &c, err, sizeof err), STORE_CODE_REFUSED);
    cr_assert(strstr(err, "...\" is out of range for double precision"), "%s", err);
    big[0] = '.';
    cr_assert_eq(store_code_of_value(&types[F8], &v, &c, err, sizeof err), STORE_CODE_OK,
                 "a long text is read whole: %s", err);
    cr_assert_eq(c.code, store_float_code(strtod(".11111111111111111111", NULL)));
    big[0] = '1';
    cr_assert_eq(store_code_of_value(&types[N0], &v, &c, err, sizeof err), STORE_CODE_NONE,
                 "a 2,000-digit number is a number no code holds");
}

/* Codes into text and back: every code a text entry gives is read back
 * from its text as the same code. (A number as written may be a value no
 * column of the type holds: 0.1 for a real.) */
Test(store_codes, text_reads_back)
{
    for (size_t i = 0; i < NTABLE; i++) {
        const struct entry *e = &table[i];
        if (e->want != OK || e->col == TX || e->form != T)
            continue;
        char text[80];
        int64_t code = want_code(e);
        size_t n = store_code_format(&types[e->col], code, text, sizeof text);
        cr_assert_lt(n, sizeof text);
        struct store_value v = {STORE_VALUE_TEXT, false, text, n};
        struct store_coded c;
        char err[300] = "";
        cr_expect_eq(store_code_of_value(&types[e->col], &v, &c, err, sizeof err), STORE_CODE_OK,
                     "%s %s: %s", sql_type[e->col], text, err);
        cr_expect_eq(c.code, code, "%s %s", sql_type[e->col], text);
    }
    char text[64];
    store_code_format(&types[D], -2440550, text, sizeof text);
    cr_assert_str_eq(text, "4713-01-01 BC");
    store_code_format(&types[F8], store_float_code(1e300), text, sizeof text);
    cr_assert_str_eq(text, "1e+300");
    store_code_format(&types[F4], store_float_code((double)0.1f), text, sizeof text);
    cr_assert_str_eq(text, "0.1");
    store_code_format(&types[TS], JAN17 * DAY + 500000, text, sizeof text);
    cr_assert_str_eq(text, "2024-01-17 00:00:00.5");
}

/* ---- Against PostgreSQL ------------------------------------------------------ */

static PGconn *connect_utc(void)
{
    PGconn *c = pgtest_connect(NULL);
    cr_assert_not_null(c, "no test PostgreSQL (see stderr)");
    PGresult *r = PQexec(c, "SET TimeZone = 'UTC'; SET DateStyle = 'ISO, MDY'; "
                            "SET extra_float_digits = 1");
    cr_assert_eq(PQresultStatus(r), PGRES_COMMAND_OK, "%s", PQerrorMessage(c));
    PQclear(r);
    return c;
}

/* $1 through sql with one text parameter: true with the first column's
 * text in out, false when PostgreSQL refuses it. */
static bool pg_value(PGconn *c, const char *sql, const char *param, char *out, size_t outlen)
{
    PGresult *r = PQexecParams(c, sql, 1, NULL, &param, NULL, NULL, 0);
    bool ok = PQresultStatus(r) == PGRES_TUPLES_OK;
    if (ok)
        snprintf(out, outlen, "%s", PQgetvalue(r, 0, 0));
    else
        snprintf(out, outlen, "%s", PQresultErrorMessage(r));
    PQclear(r);
    return ok;
}

static bool fits_int64(const char *s, int64_t *v)
{
    char *end;
    errno = 0;
    long long x = strtoll(s, &end, 10);
    if (errno || *end || end == s)
        return false;
    *v = x;
    return true;
}

Test(store_codes, postgresql_reads_the_same, .timeout = 120)
{
    PGconn *c = connect_utc();
    for (size_t i = 0; i < NTABLE; i++) {
        const struct entry *e = &table[i];
        if (e->form != T)
            continue;
        char got[600], sql[200];
        bool accepted = pg_value(c, sql_value[e->col], e->in, got, sizeof got);
        const char *what = sql_type[e->col];
        if (e->want == REFUSED) {
            cr_expect_not(accepted, "%s \"%s\": Straum refuses it, PostgreSQL reads %s", what,
                          e->in, got);
            continue;
        }
        cr_expect(accepted, "%s \"%s\": Straum reads it (%s), PostgreSQL refuses: %s", what,
                  e->in, outcome_name[e->want], got);
        if (!accepted || e->want == UNREAD)
            continue;
        int64_t code = want_code(e), pg = 0;
        switch (e->col) {
        case F4:
        case F8: {
            double d = strtod(got, NULL);
            int64_t pgcode = store_float_code(isnan(d) ? NAN : d == 0 ? 0.0 : d);
            if (e->want == OK)
                cr_expect_eq(pgcode, code, "%s \"%s\": PostgreSQL reads %s", what, e->in, got);
            break;
        }
        case TX:
            cr_expect_str_eq(got, e->in, "%s \"%s\"", what, e->in);
            break;
        default:
            if (e->want == OK) {
                cr_expect(fits_int64(got, &pg) && pg == code,
                          "%s \"%s\": code %" PRId64 ", PostgreSQL gives %s", what, e->in, code,
                          got);
            } else {
                /* NONE: a value no code holds. */
                cr_expect(!fits_int64(got, &pg) || (e->col == I8 && pg == INT64_MIN),
                          "%s \"%s\": Straum says no code equals it, PostgreSQL gives %s", what,
                          e->in, got);
                /* And PostgreSQL compares a column with it at the value's
                 * own scale: the column's nearest value does not equal it,
                 * so an ask's equality with it matches nothing. */
                if (!strcmp(got, "decimals")) {
                    char eq[600];
                    snprintf(sql, sizeof sql,
                             "SELECT count(*) FROM (SELECT round($1::numeric, %d)::%s AS x) v "
                             "WHERE x = $1", e->col == N2 ? 2 : 0, what);
                    cr_expect(pg_value(c, sql, e->in, eq, sizeof eq) && !strcmp(eq, "0"),
                              "%s \"%s\": PostgreSQL's column equals it: %s", what, e->in, eq);
                }
            }
            break;
        }
        if (e->want != OK || e->col == TX)
            continue;
        /* The code's text is PostgreSQL's text of the value (a float plus
         * zero: Straum keeps -0 as 0, one code for values that compare
         * equal). */
        char text[80], pgtext[600];
        store_code_format(&types[e->col], code, text, sizeof text);
        if (e->col == F4 || e->col == F8)
            snprintf(sql, sizeof sql, "SELECT ($1::%s + 0::%s)::text", what, what);
        else
            snprintf(sql, sizeof sql, "SELECT $1::%s::text", what);
        cr_assert(pg_value(c, sql, e->in, pgtext, sizeof pgtext), "%s: %s", sql, pgtext);
        cr_expect_str_eq(text, pgtext, "%s \"%s\": Straum writes %s, PostgreSQL %s", what, e->in,
                         text, pgtext);
    }
    PQfinish(c);
}

/* Random doubles and reals: Straum writes each as PostgreSQL does. */
Test(store_codes, floats_written_as_postgresql_writes_them, .timeout = 120)
{
    PGconn *c = connect_utc();
    uint64_t x = 0x9E3779B97F4A7C15ULL;
    for (int i = 0; i < 600; i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        bool single = i % 2;
        double d;
        if (i % 3 == 0) {
            uint64_t bits = x & ~(0x7FFULL << 52);
            bits |= (uint64_t)(1023 + (int)(x % 80) - 40) << 52; /* 1e-12 .. 1e12 */
            memcpy(&d, &bits, 8);
        } else {
            memcpy(&d, &x, 8);
        }
        if (single)
            d = (double)(float)d;
        if (!isfinite(d))
            continue;
        char in[64], text[64], pg[600];
        snprintf(in, sizeof in, "%.17g", d);
        store_code_format(&types[single ? F4 : F8], store_float_code(d), text, sizeof text);
        cr_assert(pg_value(c, single ? "SELECT $1::float4::text" : "SELECT $1::float8::text", in,
                           pg, sizeof pg),
                  "%s: %s", in, pg);
        cr_expect_str_eq(text, pg, "%s %s: Straum writes %s, PostgreSQL %s",
                         single ? "real" : "double", in, text, pg);
    }
    PQfinish(c);
}
