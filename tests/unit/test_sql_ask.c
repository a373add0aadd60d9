/* test_sql_ask.c -- asks compile against the views: the ten seed asks to
 * the structs serve plans from, and every construct of the ask grammar. */
#include "tests/kit/taxi_asks.h"
#include "sql/sql.h"
#include "tests/unit/source_file.h"

#include <criterion/criterion.h>
#include <string.h>

static struct sql_view_list *views;
static char *views_text;

static void setup(void)
{
    struct sql_error err;
    views_text = read_source_file("bench/taxi_views.sql");
    cr_assert_not_null(views_text);
    views = sql_parse_views(views_text, &err);
    cr_assert_not_null(views, "%s", err.message);
}

static void teardown(void)
{
    sql_view_list_free(views);
    free(views_text);
}

TestSuite(sql_ask, .init = setup, .fini = teardown);

static struct sql_ask *ask_ok(const char *text)
{
    struct sql_error err;
    char buf[400];
    struct sql_ask *a = sql_parse_ask(text, views, &err);
    cr_assert_not_null(a, "%s: %s", text, sql_error_format(&err, buf, sizeof buf));
    return a;
}

static const char *view_col(const struct sql_ask *a, int i)
{
    return a->view->columns[i].name;
}

/* The shape each seed ask must compile to. */
struct expected_ask {
    const char *view;
    const char *columns;      /* output names, space separated */
    const char *group_keys;   /* view column names, space separated */
    bool by_bucket;
    const char *cond_column;  /* NULL when no key condition */
    int nparams;
};

static const struct expected_ask EXPECTED[] = {
    {"trips", "trips", "", false, NULL, 2},
    {"trips", "trips", "", false, "payment_type", 3},
    {"trips", "borough trips", "borough", false, NULL, 2},
    {"trips", "payment_type trips fare avg_fare", "payment_type", false, NULL, 2},
    {"trips", "median_fare", "", false, NULL, 2},
    {"trips", "payment_type p99_fare", "payment_type", false, NULL, 2},
    {"trips", "bucket median_fare", "", true, NULL, 2},
    {"trips", "trips", "", false, "borough", 3},
    {"trips", "bucket trips", "", true, NULL, 2},
    {"dropoffs", "borough trips tips avg_distance fare", "borough", false, NULL, 2},
};

static void names_eq(const char *expected, const char *const *names, int n)
{
    char buf[256] = "";
    for (int i = 0; i < n; i++) {
        if (i)
            strcat(buf, " ");
        strcat(buf, names[i]);
    }
    cr_assert_str_eq(buf, expected);
}

Test(sql_ask, the_ten_seed_asks)
{
    cr_assert_eq(TAXI_NASKS, 10);
    for (int i = 0; i < TAXI_NASKS; i++) {
        const struct expected_ask *e = &EXPECTED[i];
        struct sql_ask *a = ask_ok(TAXI_ASKS[i].ask);
        cr_assert_str_eq(a->view->name, e->view, "%s", TAXI_ASKS[i].name);
        const char *names[16];
        for (int c = 0; c < a->ncolumns; c++)
            names[c] = a->columns[c].name;
        names_eq(e->columns, names, a->ncolumns);
        for (int k = 0; k < a->ngroup_keys; k++)
            names[k] = view_col(a, a->group_keys[k]);
        names_eq(e->group_keys, names, a->ngroup_keys);
        cr_assert_eq(a->group_by_bucket, e->by_bucket, "%s", TAXI_ASKS[i].name);
        cr_assert_eq(a->bucket_width, SQL_USEC_PER_HOUR);
        cr_assert(a->range_from.is_param && a->range_from.param == 1);
        cr_assert(a->range_to.is_param && a->range_to.param == 2);
        cr_assert_eq(a->params[0].kind, SQL_PARAM_TIMESTAMP);
        cr_assert_eq(a->params[1].kind, SQL_PARAM_TIMESTAMP);
        cr_assert_eq(a->nparams, e->nparams, "%s", TAXI_ASKS[i].name);
        int nvalues = 0;
        while (TAXI_ASKS[i].params[nvalues])
            nvalues++;
        cr_assert_eq(nvalues, a->nparams, "the seed gives every parameter a value");
        if (e->cond_column) {
            cr_assert_eq(a->nconds, 1);
            cr_assert_str_eq(view_col(a, a->conds[0].view_column), e->cond_column);
            cr_assert_eq(a->conds[0].kind, SQL_COND_EQ);
            cr_assert_eq(a->conds[0].values[0].param, 3);
            cr_assert_eq(a->params[2].kind, SQL_PARAM_KEY);
            cr_assert_eq(a->params[2].view_column, a->conds[0].view_column);
        } else {
            cr_assert_eq(a->nconds, 0);
        }
        for (int c = 0; c < a->ncolumns; c++) {
            enum sql_column_kind k = a->view->columns[a->columns[c].view_column].kind;
            enum sql_ask_column_kind want = k == SQL_COLUMN_BUCKET    ? SQL_ASK_BUCKET
                                            : k == SQL_COLUMN_MEASURE ? SQL_ASK_MEASURE
                                                                      : SQL_ASK_KEY;
            cr_assert_eq(a->columns[c].kind, want);
        }
        sql_ask_free(a);
    }
}

Test(sql_ask, rebucketed_and_ordered)
{
    struct sql_ask *a = ask_ok(
        "SELECT date_bin('1 day', t.bucket, timestamptz 'epoch') AS day, borough, trips\n"
        "FROM trips AS t\n"
        "WHERE t.bucket >= '2024-01-01' AND bucket < $1 AND payment_type IN (1, $2)\n"
        "  AND borough IS NOT NULL AND pu_location_id <> 5 AND payment_type NOT IN (3)\n"
        "  AND borough IS NULL\n"
        "GROUP BY 1, borough ORDER BY day DESC, 2 NULLS FIRST, trips ASC NULLS LAST\n"
        "LIMIT $3 OFFSET 10;");
    cr_assert(a->group_by_bucket);
    cr_assert_eq(a->bucket_width, SQL_USEC_PER_DAY);
    cr_assert_eq(a->columns[0].kind, SQL_ASK_BUCKET);
    cr_assert_str_eq(a->columns[0].name, "day");
    cr_assert_eq(a->ngroup_keys, 1);
    cr_assert_not(a->range_from.is_param);
    cr_assert_str_eq(a->range_from.lit.text, "2024-01-01");
    cr_assert_eq(a->range_to.param, 1);
    cr_assert_eq(a->nconds, 5);
    cr_assert_eq(a->conds[0].kind, SQL_COND_IN);
    cr_assert_eq(a->conds[0].nvalues, 2);
    cr_assert_str_eq(a->conds[0].values[0].lit.text, "1");
    cr_assert_eq(a->conds[0].values[1].param, 2);
    cr_assert_eq(a->conds[1].kind, SQL_COND_IS_NOT_NULL);
    cr_assert_eq(a->conds[2].kind, SQL_COND_NE);
    cr_assert_eq(a->conds[3].kind, SQL_COND_NOT_IN);
    cr_assert_eq(a->conds[4].kind, SQL_COND_IS_NULL);
    cr_assert_eq(a->conds[1].line, 4);
    cr_assert_eq(a->conds[1].column, 7);
    cr_assert_eq(a->norder, 3);
    cr_assert_eq(a->order[0].output_column, 0);
    cr_assert(a->order[0].descending);
    cr_assert(a->order[0].nulls_first, "DESC puts NULLs first by default");
    cr_assert_eq(a->order[1].output_column, 1);
    cr_assert(a->order[1].nulls_first);
    cr_assert_eq(a->order[2].output_column, 2);
    cr_assert_not(a->order[2].nulls_first);
    cr_assert(a->has_limit && a->limit.is_param && a->limit.param == 3);
    cr_assert(a->has_offset && !a->offset.is_param);
    cr_assert_eq(a->nparams, 3);
    cr_assert_eq(a->params[0].kind, SQL_PARAM_TIMESTAMP);
    cr_assert_eq(a->params[1].kind, SQL_PARAM_KEY);
    cr_assert_str_eq(view_col(a, a->params[1].view_column), "payment_type");
    cr_assert_eq(a->params[2].kind, SQL_PARAM_COUNT);
    sql_ask_free(a);
}

Test(sql_ask, group_by_without_selecting_and_limit_all)
{
    struct sql_ask *a = ask_ok(
        "select TRIPS from TRIPS where BUCKET >= $1 and BUCKET < $2 "
        "group by payment_type, date_bin('7 days', bucket) limit all");
    cr_assert_eq(a->ngroup_keys, 1);
    cr_assert(a->group_by_bucket);
    cr_assert_eq(a->bucket_width, 7 * SQL_USEC_PER_DAY);
    cr_assert_not(a->has_limit);
    sql_ask_free(a);
}

Test(sql_ask, same_parameter_for_same_key_twice)
{
    struct sql_ask *a = ask_ok(
        "SELECT trips FROM trips WHERE bucket >= $1 AND bucket < $2 AND payment_type <> $3 "
        "AND payment_type IN ($3, 4)");
    cr_assert_eq(a->nparams, 3);
    sql_ask_free(a);
}

Test(sql_ask, literal_keys_and_typed_range)
{
    struct sql_ask *a = ask_ok(
        "SELECT trips FROM trips WHERE bucket >= timestamptz '2024-01-08 00:00:00-05' AND "
        "bucket < '2024-01-15T00:00:00Z'::timestamptz AND borough = 'Manhattan' "
        "AND payment_type = -1");
    cr_assert_eq(a->nparams, 0);
    cr_assert_str_eq(a->range_from.lit.cast, "timestamptz");
    cr_assert_str_eq(a->conds[0].values[0].lit.text, "Manhattan");
    cr_assert_eq(a->conds[0].values[0].lit.kind, SQL_CONST_STRING);
    cr_assert_str_eq(a->conds[1].values[0].lit.text, "-1");
    sql_ask_free(a);
}

/* A compiled ask holds what it answers by, not its parse: the ask cache
 * keeps it whole and is bounded in bytes (--ask-cache-bytes), so every
 * byte a compiled ask keeps is one a serve holds. An ask of a dashboard's
 * size (a range, three group keys, a condition, HAVING, ORDER BY and
 * LIMIT) keeps under 5 KiB: its tokens, grown by doubling in the arena,
 * made it 12 KiB. */
Test(sql_ask, a_compiled_ask_keeps_no_more_than_it_answers_by)
{
    const char *text =
        "SELECT date_trunc('day', bucket) AS b, payment_type, borough, pu_location_id, trips, "
        "fare, avg_fare, median_fare, p99_fare FROM trips WHERE bucket >= $1 AND bucket < $2 "
        "AND pu_location_id NOT IN (1, 2, 3) AND borough <> $3 GROUP BY b, payment_type, "
        "borough, pu_location_id HAVING p99_fare > $4 ORDER BY median_fare DESC, b LIMIT 20";
    struct sql_ask *a = ask_ok(text);
    size_t bytes = sql_ask_bytes(a);
    cr_assert_lt(bytes, 5 * 1024, "a compiled ask of %zu text bytes keeps %zu bytes",
                 strlen(text), bytes);
    sql_ask_free(a);
}
