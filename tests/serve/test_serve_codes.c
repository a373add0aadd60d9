/* test_serve_codes.c -- an ask's parameters read by PostgreSQL's input rules
 * for each key's type, over HTTP: a value PostgreSQL refuses for the type is
 * a 422 bad_parameter naming the parameter and the type ("tomato" for a
 * boolean), one it reads is read as the same value ("yes", " 3 ", "1.250"),
 * and a number no stored value can equal matches nothing.
 *
 * The store holds one view with a key of each kind (boolean, smallint,
 * numeric(9,2), date), made through the store API. */
#include "serve/serve.h"
#include "tests/serve/serve_test.h"

#include <cjson/cJSON.h>
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char views_text[] =
    "CREATE VIEW kinds WITH (buckets = '1 hour') AS\n"
    "SELECT date_bin('1 hour', k.at, timestamptz 'epoch') AS bucket,\n"
    "       k.paid AS paid, k.small AS small, k.price AS price, k.day AS day,\n"
    "       count(*) AS n\n"
    "FROM public.kinds AS k\n"
    "GROUP BY 1, 2, 3, 4, 5;\n";

#define ROWS 20
#define JAN1 19723 /* 2024-01-01 in days since 1970 */

static char the_store[64] = "";
static struct serve_server *server;
static int port;

static struct store_column_type column_type(const char *name)
{
    if (!strcmp(name, "at"))
        return (struct store_column_type){STORE_TYPE_TIMESTAMP, 0, PG_TIMESTAMPTZ};
    if (!strcmp(name, "paid"))
        return (struct store_column_type){STORE_TYPE_BOOL, 0, PG_BOOL};
    if (!strcmp(name, "small"))
        return (struct store_column_type){STORE_TYPE_INT, 0, PG_INT2};
    if (!strcmp(name, "price"))
        return (struct store_column_type){STORE_TYPE_NUMERIC, 2, PG_NUMERIC};
    cr_assert_str_eq(name, "day");
    return (struct store_column_type){STORE_TYPE_DATE, 0, PG_DATE};
}

/* Row i: paid i % 2, small i % 5, price (i % 4) x 1.25, day 2024-01-01 +
 * i % 3, all in the first hour of 2024. */
static int64_t row_value(int i, const char *name)
{
    if (!strcmp(name, "at"))
        return FIXTURE_START_US + i * 1000000LL;
    if (!strcmp(name, "paid"))
        return i % 2;
    if (!strcmp(name, "small"))
        return i % 5;
    if (!strcmp(name, "price"))
        return (i % 4) * 125;
    return JAN1 + i % 3;
}

static void setup(void)
{
    strcpy(the_store, "/tmp/straum-codes-XXXXXX");
    cr_assert_not_null(mkdtemp(the_store));
    struct sql_error serr;
    struct sql_view_list *views = sql_parse_views(views_text, &serr);
    cr_assert_not_null(views, "%s", serr.message);
    struct store_column_type types[8];
    cr_assert_leq(views->views[0].nfact_columns, 8);
    for (int c = 0; c < views->views[0].nfact_columns; c++)
        types[c] = column_type(views->views[0].fact_columns[c].name);
    sql_view_list_free(views);
    struct store_view_types vt = {types};
    struct store *s;
    struct store_error err;
    cr_assert_eq(store_create(the_store, views_text, &vt, &s, &err), 0, "%s", err.message);
    const struct sql_view *view = &store_views(s)->views[0];
    for (int i = 0; i < ROWS; i++) {
        int64_t keys[8], counts[4] = {1, 1, 1, 1};
        for (int k = 0; k < view->ncell_keys; k++)
            keys[k] = row_value(i, view->fact_columns[view->cell_keys[k]].name);
        struct store_delta d = {.view = 0, .time = row_value(i, "at"), .keys = keys,
                                .counts = counts};
        cr_assert_eq(store_apply(s, &d, &err), 0, "%s", err.message);
    }
    struct store_position pos = {.lsn = 1, .commit_time = FIXTURE_START_US,
                                 .contact_time = FIXTURE_START_US};
    cr_assert_eq(store_commit(s, &pos, &err), 0, "%s", err.message);
    store_close(s);
    struct serve_options o = {.store_dir = the_store};
    server = fixture_serve(&o);
    port = serve_port(server);
}

static void teardown(void)
{
    serve_stop(server);
    fixture_remove_store(the_store);
}

TestSuite(serve_codes, .init = setup, .fini = teardown, .timeout = 60);

/* POSTs "SELECT n FROM kinds WHERE <range> AND <key> = $3" (or <key>
 * with its own operator, "price <") with param
 * (JSON text) as $3; returns the HTTP status, and the count in *n when 200
 * (0 for no rows), the body in body. */
static int ask_count(const char *key, const char *param, int64_t *n, char *body, size_t len)
{
    char req[512];
    snprintf(req, sizeof req,
             "{\"ask\": \"SELECT n FROM kinds WHERE bucket >= $1 AND bucket < $2 AND %s%s $3\", "
             "\"params\": [\"2024-01-01 00:00:00+00\", \"2024-01-01 01:00:00+00\", %s]}",
             key, strchr(key, ' ') ? "" : " =", param);
    struct hc_response r;
    hc_once(port, "POST", "/ask", NULL, req, &r);
    snprintf(body, len, "%s", r.body ? r.body : "");
    int status = r.status;
    *n = -1;
    if (status == 200) {
        cJSON *j = cJSON_Parse(r.body);
        cJSON *rows = cJSON_GetObjectItemCaseSensitive(j, "rows");
        cr_assert(cJSON_IsArray(rows), "%s", r.body);
        *n = cJSON_GetArraySize(rows) == 0
                 ? 0
                 : (int64_t)cJSON_GetArrayItem(cJSON_GetArrayItem(rows, 0), 0)->valuedouble;
        cJSON_Delete(j);
    }
    hc_free(&r);
    return status;
}

static int64_t rows_where(const char *key, int64_t value)
{
    int64_t n = 0;
    for (int i = 0; i < ROWS; i++)
        n += row_value(i, key) == value;
    return n;
}

static void expect_count(const char *key, const char *param, int64_t want)
{
    char body[1024];
    int64_t n;
    int status = ask_count(key, param, &n, body, sizeof body);
    cr_expect_eq(status, 200, "%s = %s: %d %s", key, param, status, body);
    cr_expect_eq(n, want, "%s = %s: %lld rows, want %lld (%s)", key, param, (long long)n,
                 (long long)want, body);
}

static void expect_refused(const char *key, const char *param, const char *message)
{
    char body[1024];
    int64_t n;
    int status = ask_count(key, param, &n, body, sizeof body);
    cr_expect_eq(status, 422, "%s = %s: %d %s", key, param, status, body);
    cJSON *j = cJSON_Parse(body);
    cJSON *e = cJSON_GetObjectItemCaseSensitive(j, "error");
    cJSON *code = cJSON_GetObjectItemCaseSensitive(e, "code");
    cJSON *m = cJSON_GetObjectItemCaseSensitive(e, "message");
    cr_expect(cJSON_IsString(code) && !strcmp(code->valuestring, "bad_parameter"), "%s", body);
    cr_expect(cJSON_IsString(m) && !strcmp(m->valuestring, message), "%s = %s: %s, want %s", key,
              param, body, message);
    cJSON_Delete(j);
}

Test(serve_codes, booleans_as_postgresql_reads_them)
{
    int64_t paid = rows_where("paid", 1), unpaid = rows_where("paid", 0);
    cr_assert(paid > 0 && unpaid > 0);
    expect_refused("paid", "\"tomato\"", "parameter $3: \"tomato\" is not a boolean");
    expect_refused("paid", "\"o\"", "parameter $3: \"o\" is not a boolean");
    expect_refused("paid", "1", "parameter $3: 1 is a number, not a boolean: give a string");
    expect_count("paid", "\"yes\"", paid);
    expect_count("paid", "\"TRUE \"", paid);
    expect_count("paid", "\"on\"", paid);
    expect_count("paid", "\"1\"", paid);
    expect_count("paid", "true", paid);
    expect_count("paid", "\"off\"", unpaid);
    expect_count("paid", "\"f\"", unpaid);
    expect_count("paid", "false", unpaid);
}

Test(serve_codes, numbers_as_postgresql_reads_them)
{
    expect_refused("small", "\"1e3\"", "parameter $3: \"1e3\" is not a smallint");
    expect_refused("small", "\"40000\"", "parameter $3: \"40000\" is out of range for smallint");
    expect_refused("small", "true", "parameter $3: true is a boolean, not a smallint");
    expect_count("small", "\" 3 \"", rows_where("small", 3));
    expect_count("small", "2", rows_where("small", 2));
    expect_count("small", "2e0", rows_where("small", 2));
    expect_count("small", "40000", 0);  /* a number no smallint equals */
    expect_count("small", "2.5", 0);
    expect_count("price", "1.25", rows_where("price", 125));
    expect_count("price", "\"1.250\"", rows_where("price", 125));
    expect_count("price", "\"125e-2\"", rows_where("price", 125));
    expect_count("price", "1.255", 0); /* more decimals than the column keeps */
    expect_count("price", "\"NaN\"", 0);
    expect_refused("price", "\"1,25\"", "parameter $3: \"1,25\" is not a number");
    /* A range compares values the key can hold. */
    expect_count("price <", "\"2.5\"", rows_where("price", 0) + rows_where("price", 125));
    expect_refused("price <", "1.255",
                   "parameter $3: 1.255 has more decimals than the column keeps (2): a range on "
                   "key \"price\" compares values the key can hold");
}

Test(serve_codes, dates_as_postgresql_reads_them)
{
    expect_count("day", "\"2024-01-02\"", rows_where("day", JAN1 + 1));
    expect_count("day", "\" 2024-1-3 \"", rows_where("day", JAN1 + 2));
    expect_count("day", "\"infinity\"", 0);
    expect_refused("day", "\"2024-02-30\"", "parameter $3: \"2024-02-30\" is not a date");
    expect_refused("day", "\"Jan 2 2024\"",
                   "parameter $3: \"Jan 2 2024\" is not a date Straum reads (YYYY-MM-DD, "
                   "optionally followed by BC or AD)");
}
