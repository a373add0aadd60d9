/* test_sql_errors.c -- malformed views and asks: each gets its exact
 * message, error code, line and column, and nothing leaks (LSan checks). */
#include "sql/sql.h"
#include "tests/unit/source_file.h"

#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <string.h>

struct bad_input {
    bool is_ask;       /* ask against the seed views, else a view file */
    const char *text;
    enum sql_error_code code;
    int line, column;
    const char *message;
};

/* A view's first two lines, so cases can break line 3 onwards. */
#define HEAD "CREATE VIEW v AS\nSELECT date_bin('1 hour', t.ts, timestamptz 'epoch') AS bucket,\n"
#define ASK "SELECT trips FROM trips WHERE bucket >= $1 AND bucket < $2"

static struct bad_input cases[] = {
    /* ---- views ---- */
    {false, HEAD "       medain(t.x) AS m\nFROM f t GROUP BY 1",
     SQL_ERR_UNKNOWN_COLUMN, 3, 8, "unknown function \"medain\""},
    {false, HEAD "  stddev(t.x)\nFROM f t GROUP BY 1",
     SQL_ERR_UNSUPPORTED, 3, 3,
     "aggregate \"stddev\" is not supported; use count, sum, avg, min, max, "
     "percentile_disc or percentile_cont"},
    {false, "CREATE VIEW v AS SELECT t.k, count(*) FROM f t GROUP BY 1",
     SQL_ERR_INVALID, 1, 1,
     "a view needs a bucket: date_bin('1 hour', fact.time_column, timestamptz 'epoch') "
     "AS bucket"},
    {false, HEAD "  date_bin('1 day', t.ts, timestamptz 'epoch') AS day\nFROM f t GROUP BY 1, 2",
     SQL_ERR_INVALID, 3, 3, "a view has one date_bin(...) column"},
    {false, "CREATE VIEW v AS SELECT date_bin('1 month', t.ts, timestamptz 'epoch') b, "
            "count(*) FROM f t GROUP BY 1",
     SQL_ERR_INVALID, 1, 34,
     "interval \"1 month\" has no fixed length: use minutes, hours, days or weeks"},
    {false, "CREATE VIEW v WITH (buckets = '1 hour, 90 minutes') AS\n"
            "SELECT date_bin('1 hour', t.ts, timestamptz 'epoch') b, count(*) FROM f t GROUP BY 1",
     SQL_ERR_INVALID, 1, 31, "width \"90 minutes\" is not a multiple of the date_bin stride"},
    /* Widths past 100 years would overflow the store's span arithmetic. */
    {false, "CREATE VIEW v WITH (buckets = '1 hour, 36526 days') AS\n"
            "SELECT date_bin('1 hour', t.ts, timestamptz 'epoch') b, count(*) FROM f t GROUP BY 1",
     SQL_ERR_INVALID, 1, 31, "width \"36526 days\" is longer than the 100 years a width may span"},
    {false, "CREATE VIEW v AS SELECT date_bin('5300 weeks', t.ts, timestamptz 'epoch') b, "
            "count(*) FROM f t GROUP BY 1",
     SQL_ERR_INVALID, 1, 34,
     "date_bin's interval \"5300 weeks\" is longer than the 100 years a width may span"},
    {false, "CREATE VIEW v WITH (buckets = '1 hour, 1 day, 24 hours') AS\n"
            "SELECT date_bin('1 hour', t.ts, timestamptz 'epoch') b, count(*) FROM f t GROUP BY 1",
     SQL_ERR_INVALID, 1, 31, "width \"24 hours\" is listed twice"},
    {false, "CREATE VIEW v WITH (refresh = '1 hour') AS SELECT 1",
     SQL_ERR_INVALID, 1, 21, "unknown view option \"refresh\"; the only option is buckets"},
    {false, HEAD "  t.k,\n  count(*)\nFROM f t GROUP BY 1",
     SQL_ERR_INVALID, 3, 3, "column \"k\" must appear in the GROUP BY clause"},
    {false, HEAD "  count(*)\nFROM f t GROUP BY 1, 9",
     SQL_ERR_INVALID, 4, 22, "GROUP BY position 9 is not in select list"},
    {false, HEAD "  count(*)\nFROM f t GROUP BY 1, 2",
     SQL_ERR_INVALID, 4, 22, "aggregate functions are not allowed in GROUP BY"},
    {false, HEAD "  count(*)\nFROM f t WHERE t.x > 0 GROUP BY 1",
     SQL_ERR_UNSUPPORTED, 4, 10,
     "a view cannot have WHERE; filter measures with FILTER (WHERE ...)"},
    {false, HEAD "  count(*)\nFROM f t RIGHT JOIN z ON z.id = t.k GROUP BY 1",
     SQL_ERR_UNSUPPORTED, 4, 10, "right joins are not supported; use LEFT JOIN or INNER JOIN"},
    {false, HEAD "  z.name, count(*)\nFROM f t LEFT JOIN z ON z.id = z.parent GROUP BY 1, 2",
     SQL_ERR_UNSUPPORTED, 4, 25,
     "a join must connect the fact table to the dim: ON z.key = t.column"},
    {false, HEAD "  q.k, count(*)\nFROM f t GROUP BY 1, 2",
     SQL_ERR_UNKNOWN_COLUMN, 3, 3, "missing FROM-clause entry for table \"q\""},
    {false, HEAD "  sum(z.pop)\nFROM f t JOIN zones z ON z.id = t.k GROUP BY 1",
     SQL_ERR_UNSUPPORTED, 3, 7,
     "\"z.pop\" is a column of dim \"zones\"; measures, filters and the bucket read fact "
     "columns"},
    {false, HEAD "  percentile_disc(1.5) WITHIN GROUP (ORDER BY t.x)\nFROM f t GROUP BY 1",
     SQL_ERR_INVALID, 3, 19, "percentile value 1.5 is not between 0 and 1"},
    {false, HEAD "  percentile_disc(0.5) WITHIN GROUP (ORDER BY t.x DESC)\nFROM f t GROUP BY 1",
     SQL_ERR_UNSUPPORTED, 3, 51, "percentiles are kept in ascending order only; remove DESC"},
    {false, HEAD "  sum(DISTINCT t.x)\nFROM f t GROUP BY 1",
     SQL_ERR_UNSUPPORTED, 3, 7, "sum(DISTINCT ...) is not supported; only count(DISTINCT ...)"},
    {false, HEAD "  sum(t.x * 2)\nFROM f t GROUP BY 1",
     SQL_ERR_UNSUPPORTED, 3, 11, "an aggregate reads one column, not an expression"},
    {false, HEAD "  count(*) FILTER (WHERE t.x = NULL)\nFROM f t GROUP BY 1",
     SQL_ERR_INVALID, 3, 32,
     "a comparison with NULL is never true; use IS NULL or IS NOT NULL"},
    {false, HEAD "  count(*) FILTER (WHERE t.x = $1)\nFROM f t GROUP BY 1",
     SQL_ERR_UNSUPPORTED, 3, 32, "parameters are not allowed in a view; write a constant"},
    {false, HEAD "  count(*) AS trips, sum(t.x) AS trips\nFROM f t GROUP BY 1",
     SQL_ERR_INVALID, 3, 22, "column \"trips\" specified more than once"},
    {false, "CREATE VIEW v AS SELECT date_bin('1 hour', ts, timestamptz 'epoch') b FROM f "
            "GROUP BY 1;\nCREATE VIEW v AS SELECT date_bin('1 hour', ts, timestamptz 'epoch') b "
            "FROM f GROUP BY 1",
     SQL_ERR_INVALID, 2, 1, "view \"v\" is defined twice"},
    {false, "CREATE VIEW v AS SELECT date_bin('1 hour, t.ts, timestamptz epoch) FROM f",
     SQL_ERR_SYNTAX, 1, 34, "unterminated quoted string"},
    {false, "CREATE VIEW v AS /* comment\n SELECT",
     SQL_ERR_SYNTAX, 1, 18, "unterminated /* comment"},
    {false, HEAD "  percentile_disc(0.5x) WITHIN GROUP (ORDER BY t.x)\nFROM f t GROUP BY 1",
     SQL_ERR_SYNTAX, 3, 19, "trailing junk after numeric literal"},
    {false, HEAD "  count(*) # 2\nFROM f t GROUP BY 1",
     SQL_ERR_SYNTAX, 3, 12, "unexpected character \"#\""},
    {false, "CREATE VIEW v AS SELECT date_bin('1 hour', t.ts) b FROM f t GROUP BY 1",
     SQL_ERR_SYNTAX, 1, 48,
     "date_bin needs an origin: date_bin('1 hour', col, timestamptz 'epoch')"},
    {false, "CREATE VIEW v AS SELECT date_bin('1 hour', t.ts, timestamptz '2024-13-01') b\n"
            "FROM f t GROUP BY 1",
     SQL_ERR_INVALID, 1, 50, "timestamp \"2024-13-01\" has a date out of range"},
    {false, "CREATE VIEW v AS SELECT * FROM f",
     SQL_ERR_UNSUPPORTED, 1, 25, "a view cannot SELECT *: list the bucket, keys and measures"},
    {false, HEAD "  count(*)\nFROM f t",
     SQL_ERR_SYNTAX, 4, 9, "expected GROUP BY, found end of input"},
    {false, "CREATE VIEW v AS SELCT 1",
     SQL_ERR_SYNTAX, 1, 18, "expected SELECT, found \"selct\""},
    {false, "  -- only a comment\n",
     SQL_ERR_SYNTAX, 1, 1, "expected CREATE VIEW, found end of input"},
    {false, HEAD "  count(*)\nFROM f t GROUP BY 1 ORDER BY 1",
     SQL_ERR_UNSUPPORTED, 4, 21, "a view cannot have ORDER BY; asks can"},
    {false, HEAD "  count(*) AS \"\"\nFROM f t GROUP BY 1",
     SQL_ERR_SYNTAX, 3, 15, "zero-length quoted identifier"},
    {false, HEAD "  count(*) OVER ()\nFROM f t GROUP BY 1",
     SQL_ERR_UNSUPPORTED, 3, 12, "window functions are not supported"},
    {false, HEAD "  count(*)\nFROM f t LEFT JOIN z t ON t.id = t.k GROUP BY 1",
     SQL_ERR_INVALID, 4, 20, "table name \"t\" specified more than once"},
    {false, HEAD "  count(*) FILTER (WHERE t.s = E'\\u12')\nFROM f t GROUP BY 1",
     SQL_ERR_SYNTAX, 3, 34, "invalid Unicode escape: \\u needs 4 hexadecimal digits"},
    {false, HEAD "  count(*) FILTER (WHERE t.s = E'a\\0')\nFROM f t GROUP BY 1",
     SQL_ERR_SYNTAX, 3, 35, "invalid null byte in string literal"},
    {false, "CREATE VIEW public.v AS SELECT 1",
     SQL_ERR_UNSUPPORTED, 1, 19, "view names are not schema-qualified; write the name alone"},
    {false, HEAD "  count(*)\nFROM f t GROUP BY 1 HAVING count(*) > 1",
     SQL_ERR_UNSUPPORTED, 4, 21, "a view cannot have HAVING; asks can"},
    {false, HEAD "  count(*) FILTER (WHERE t.x BETWEEN 1 AND 2)\nFROM f t GROUP BY 1",
     SQL_ERR_SYNTAX, 3, 30, "expected a comparison, IS or IN, found \"between\""},
    {false, HEAD "  t.k\nFROM f t GROUP BY 1, t.other",
     SQL_ERR_INVALID, 4, 22,
     "GROUP BY \"other\" is not in the select list; a view keeps only what it selects"},

    /* ---- asks, against the seed views ---- */
    {true, "SELECT trips FROM tripz WHERE bucket >= $1 AND bucket < $2",
     SQL_ERR_UNKNOWN_VIEW, 1, 19, "unknown view \"tripz\""},
    {true, "SELECT borogh FROM trips WHERE bucket >= $1 AND bucket < $2",
     SQL_ERR_UNKNOWN_COLUMN, 1, 8, "column \"borogh\" does not exist in view \"trips\""},
    {true, "SELECT trips FROM trips\nWHERE bucket = $1",
     SQL_ERR_UNSUPPORTED, 2, 14,
     "the bucket is compared with >=, >, <, <= or BETWEEN, such as bucket >= $1 AND bucket < $2"},
    {true, "SELECT trips FROM trips WHERE bucket BETWEEN $1 OR $2",
     SQL_ERR_SYNTAX, 1, 49, "expected AND, found \"or\""},
    {true, "SELECT trips FROM trips WHERE bucket > $1 AND bucket >= $2",
     SQL_ERR_INVALID, 1, 47, "the bucket range's start is given twice"},
    {true, ASK " OR payment_type = 1",
     SQL_ERR_UNSUPPORTED, 1, 60,
     "the bucket range cannot stand under OR: write it beside the other conditions, joined by AND"},
    {true, "SELECT trips FROM trips WHERE NOT bucket >= $1",
     SQL_ERR_UNSUPPORTED, 1, 31,
     "the bucket range cannot stand under NOT: write it beside the other conditions, joined by AND"},
    {true, ASK " AND trips = 5",
     SQL_ERR_UNSUPPORTED, 1, 64,
     "cannot filter on measure \"trips\" in WHERE: a view's measures are aggregates; "
     "conditions on them go in HAVING"},
    {true, ASK " GROUP BY payment_type HAVING payment_type > 1",
     SQL_ERR_INVALID, 1, 89,
     "HAVING compares measures; \"payment_type\" is a key: put its condition in WHERE"},
    {true, ASK " HAVING trips > NULL",
     SQL_ERR_INVALID, 1, 75, "a comparison with NULL is never true"},
    {true, ASK " LIMIT 3 HAVING trips > 1",
     SQL_ERR_SYNTAX, 1, 68, "HAVING comes after GROUP BY, before ORDER BY"},
    {true, ASK " AND borough LIKE",
     SQL_ERR_SYNTAX, 1, 76, "expected a parameter or a constant, found end of input"},
    {true, "SELECT borough, trips FROM trips WHERE bucket >= $1 AND bucket < $2",
     SQL_ERR_INVALID, 1, 8, "column \"borough\" must appear in the GROUP BY clause"},
    {true, ASK " GROUP BY trips",
     SQL_ERR_INVALID, 1, 69, "cannot group by measure \"trips\""},
    {true, "SELECT date_bin('90 minutes', bucket), trips FROM trips\n"
           "WHERE bucket >= $1 AND bucket < $2 GROUP BY 1",
     SQL_ERR_INVALID, 1, 17,
     "date_bin's width '90 minutes' is not a whole multiple of view \"trips\"'s finest width "
     "1 hour"},
    {true, "SELECT date_bin('2 days', bucket, '2024-01-01 00:30'), trips FROM trips\n"
           "GROUP BY 1",
     SQL_ERR_INVALID, 1, 35,
     "date_bin's origin must lie on an edge of view \"trips\"'s buckets (the view's origin "
     "plus whole finest widths)"},
    {true, "SELECT date_trunc('decade', bucket), trips FROM trips GROUP BY 1",
     SQL_ERR_UNSUPPORTED, 1, 19,
     "date_trunc unit 'decade' is not kept: use second, minute, hour, day, week, month, "
     "quarter or year"},
    {true, "SELECT date_trunc('day', borough), trips FROM trips GROUP BY 1",
     SQL_ERR_INVALID, 1, 26, "date_trunc re-buckets the bucket column, not \"borough\""},
    {true, "SELECT date_trunc('day', bucket, 5), trips FROM trips GROUP BY 1",
     SQL_ERR_INVALID, 1, 34,
     "date_trunc's third argument is a time zone such as 'America/New_York'"},
    {true, "SELECT trips FROM trips GROUP BY date_trunc('day', bucket), date_bin('1 day', bucket)",
     SQL_ERR_INVALID, 1, 61, "an ask groups by one bucket width"},
    {true, "SELECT trips FROM trips WHERE bucket >= $1 AND bucket < $3",
     SQL_ERR_INVALID, 1, 57, "parameter $2 is not used; number parameters from $1 without gaps"},
    {true, ASK " AND payment_type = $1",
     SQL_ERR_INVALID, 1, 79,
     "parameter $1 is used as a bucket edge and as a key value; use two parameters"},
    {true, "SELECT count(*) FROM trips WHERE bucket >= $1 AND bucket < $2",
     SQL_ERR_UNSUPPORTED, 1, 8,
     "count(...) is not allowed in an ask: a view's measures are already aggregated; "
     "select them by name"},
    {true, ASK " AND payment_type + $3",
     SQL_ERR_SYNTAX, 1, 77,
     "expected =, <>, <, <=, >, >=, IN, BETWEEN, LIKE, ILIKE or IS, found \"+\""},
    {true, ASK " ORDER BY fare",
     SQL_ERR_INVALID, 1, 69, "ORDER BY must name a selected column; select it first"},
    {true, ASK " LIMIT -1",
     SQL_ERR_SYNTAX, 1, 66, "expected a row count after LIMIT, found \"-\""},
    {true, "SELECT trips FROM trips WHERE bucket >= '2024-02-30' AND bucket < $1",
     SQL_ERR_INVALID, 1, 41, "timestamp \"2024-02-30\" has a date out of range"},
    {true, ASK " LIMIT 5 5",
     SQL_ERR_SYNTAX, 1, 68, "expected the end of the ask, found number 5"},
    {true, "SELECT trips FROM trips WHERE bucket >= $0 AND bucket < $1",
     SQL_ERR_SYNTAX, 1, 41, "parameters are numbered from $1"},
    {true, ASK " AND borough = NULL",
     SQL_ERR_INVALID, 1, 74, "a comparison with NULL is never true; use IS NULL or IS NOT NULL"},
    {true, "SELECT trips FROM trips, dropoffs WHERE bucket >= $1 AND bucket < $2",
     SQL_ERR_UNSUPPORTED, 1, 24, "an ask reads one view"},
    {true, "SELECT date_bin('1 day', borough), trips FROM trips WHERE bucket >= $1 "
           "AND bucket < $2 GROUP BY 1",
     SQL_ERR_INVALID, 1, 26, "date_bin re-buckets the bucket column, not \"borough\""},
    {true, "SELECT trips FROM trips WHERE bucket >= $1 AND bucket < $2\n"
           "GROUP BY bucket, date_bin('1 day', bucket)",
     SQL_ERR_INVALID, 2, 18, "an ask groups by one bucket width"},
    {true, "SELECT trips FROM trips WHERE bucket >= $1 AND bucket < $2 AND bucket < $3",
     SQL_ERR_INVALID, 1, 64, "the bucket range's end is given twice"},
    {true, "SELECT trips + 1 FROM trips WHERE bucket >= $1 AND bucket < $2",
     SQL_ERR_UNSUPPORTED, 1, 14, "an ask selects columns of the view, not expressions"},
    {true, "SELECT trips FROM trips WHERE bucket >= 17 AND bucket < $1",
     SQL_ERR_INVALID, 1, 41, "a bucket edge is a timestamp such as '2024-01-17' or a parameter"},
    {true, "", SQL_ERR_SYNTAX, 1, 1, "expected SELECT, found end of input"},
    {true, "SELECT x.trips FROM trips WHERE bucket >= $1 AND bucket < $2",
     SQL_ERR_UNKNOWN_COLUMN, 1, 8, "missing FROM-clause entry for table \"x\""},
};

/* Criterion re-executes the test binary for each case, so parameters must
 * not hold pointers: each case is passed as its index into cases[]. */
enum { NCASES = sizeof cases / sizeof cases[0] };
static int case_index[NCASES];

ParameterizedTestParameters(sql_errors, malformed)
{
    for (int i = 0; i < NCASES; i++)
        case_index[i] = i;
    return cr_make_param_array(int, case_index, NCASES);
}

ParameterizedTest(int *index, sql_errors, malformed)
{
    const struct bad_input *c = &cases[*index];
    struct sql_error err;
    if (c->is_ask) {
        char *text = read_source_file("bench/taxi_views.sql");
        cr_assert_not_null(text);
        struct sql_view_list *views = sql_parse_views(text, &err);
        cr_assert_not_null(views);
        struct sql_ask *a = sql_parse_ask(c->text, views, &err);
        sql_ask_free(a);
        sql_view_list_free(views);
        free(text);
        cr_assert_null(a, "accepted: %s", c->text);
    } else {
        struct sql_view_list *l = sql_parse_views(c->text, &err);
        sql_view_list_free(l);
        cr_assert_null(l, "accepted: %s", c->text);
    }
    cr_expect_str_eq(err.message, c->message, "for: %s", c->text);
    cr_expect_eq(err.line, c->line, "line %d, want %d, for: %s (%s)", err.line, c->line,
                 c->text, err.message);
    cr_expect_eq(err.column, c->column, "column %d, want %d, for: %s (%s)", err.column,
                 c->column, c->text, err.message);
    cr_expect_eq(err.code, c->code, "code %s, want %s, for: %s", sql_error_code_name(err.code),
                 sql_error_code_name(c->code), c->text);
}

Test(sql_errors, format_with_position)
{
    struct sql_error err;
    struct sql_view_list *l = sql_parse_views(HEAD "  medain(t.x)\nFROM f t GROUP BY 1", &err);
    cr_assert_null(l);
    char buf[300];
    cr_assert_str_eq(sql_error_format(&err, buf, sizeof buf),
                     "line 3, column 3: unknown function \"medain\"");
    cr_assert_str_eq(sql_error_code_name(err.code), "unknown_column");
}

Test(sql_errors, columns_count_characters_not_bytes)
{
    struct sql_error err;
    /* "é" is two bytes but one column */
    struct sql_view_list *l = sql_parse_views("CREATE VIEW \"é\" AS SELECT #", &err);
    cr_assert_null(l);
    cr_assert_eq(err.line, 1);
    cr_assert_eq(err.column, 27);
}

Test(sql_errors, limits)
{
    struct sql_error err;
    size_t n = SQL_MAX_TEXT_BYTES + 10;
    char *big = malloc(n + 1);
    cr_assert_not_null(big);
    memset(big, ' ', n);
    big[n] = '\0';
    cr_assert_null(sql_parse_views(big, &err));
    cr_assert_eq(err.code, SQL_ERR_LIMIT);
    free(big);

    /* 200 nested parentheses in a filter exceed the depth limit */
    char text[2048];
    int len = snprintf(text, sizeof text, HEAD "  count(*) FILTER (WHERE ");
    for (int i = 0; i < 200; i++)
        text[len++] = '(';
    snprintf(text + len, sizeof text - (size_t)len, "t.x = 1");
    cr_assert_null(sql_parse_views(text, &err));
    cr_assert_eq(err.code, SQL_ERR_LIMIT);
    cr_assert_str_eq(err.message, "expression is nested deeper than 64 levels");

    cr_assert_null(sql_parse_views("CREATE VIEW "
                                   "a234567890123456789012345678901234567890123456789012345678901234"
                                   " AS", &err));
    cr_assert_str_eq(err.message, "identifier is longer than 63 bytes");
    cr_assert_null(sql_parse_views("SELECT $257", &err));
    cr_assert_str_eq(err.message, "parameter number is above the limit of 256");
}
