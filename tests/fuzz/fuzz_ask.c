/* fuzz_ask.c -- libFuzzer target for the ask parser (sql/ask.c) and the
 * time literals asks are made of (sql/time.c).
 *
 * Each input is compiled as an ask against two view lists: the benchmark's
 * (bench/taxi_views.sql: joins, dims, percentiles) and a second one with
 * what those lack (filtered counts, count(DISTINCT), float sums, an inner
 * join, a quoted column name, a 15-minute stride with a non-epoch origin).
 * A failure must be a positioned error with a message. A compiled ask must
 * be one serve can plan from without checking it again:
 *   - it points at a view of the list and keeps the text it came from;
 *   - output columns, group keys, conditions and ORDER BY name columns of
 *     the right kinds within range; the bucket width is a declared width;
 *   - every parameter used is described, with the kind its place implies
 *     (bucket edges timestamps, LIMIT and OFFSET counts, keys their column).
 * The input is also read as an interval and as a timestamp: an interval is
 * positive; a timestamp's day survives sql_civil_from_days and
 * sql_days_from_civil. ASan/LSan/UBSan watch for the rest. */
#include "tests/fuzz/fuzz_check.h"
#include "sql/sql.h"
#include "tests/unit/source_file.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char OTHER_VIEWS[] =
    "CREATE VIEW rides WITH (buckets = '15 minutes, 1 hour, 1 day') AS\n"
    "SELECT date_bin('15 minutes', r.at, timestamptz '2000-01-03 00:00:00+00') AS bucket,\n"
    "  r.zone, r.kind AS \"Kind\", z.name AS zone_name,\n"
    "  count(*) AS n, count(*) FILTER (WHERE r.fare > 10 AND r.kind <> 'x') AS big,\n"
    "  count(r.fare) AS fares, sum(r.fare) AS fare, avg(r.dist) AS dist,\n"
    "  min(r.fare) AS least, max(r.fare) AS most,\n"
    "  percentile_cont(0.25) WITHIN GROUP (ORDER BY r.dist) AS q1,\n"
    "  count(DISTINCT r.kind) AS kinds\n"
    "FROM rides r JOIN zones z ON z.id = r.zone GROUP BY 1, 2, 3, 4;\n";

static struct sql_view_list *lists[2];

static void check_error(const struct sql_error *err)
{
    CHECK(err->code != SQL_OK && err->message[0] != '\0' && err->line >= 0 && err->column >= 0);
    CHECK(memchr(err->message, '\0', sizeof err->message) != NULL);
}

static void check_operand(const struct sql_ask *a, const struct sql_operand *o,
                          enum sql_param_kind kind)
{
    if (!o->is_param)
        return;
    CHECK(o->param >= 1 && o->param <= a->nparams);
    CHECK(a->params[o->param - 1].kind == kind);
}

static bool is_key_column(const struct sql_view *v, int c)
{
    return c >= 0 && c < v->ncolumns &&
           (v->columns[c].kind == SQL_COLUMN_FACT_KEY || v->columns[c].kind == SQL_COLUMN_DIM);
}

/* A condition tree: AND and OR with two sides, NOT with one, leaves
 * naming one of the n conditions, every one of them reached once. */
static int check_pred_leaves(const struct sql_pred *p, int n)
{
    if (!p)
        return 0;
    switch (p->kind) {
    case SQL_PRED_COND:
        CHECK(p->cond >= 0 && p->cond < n);
        return 1;
    case SQL_PRED_NOT:
        CHECK(p->left && !p->right);
        return check_pred_leaves(p->left, n);
    case SQL_PRED_AND:
    case SQL_PRED_OR:
        CHECK(p->left && p->right);
        return check_pred_leaves(p->left, n) + check_pred_leaves(p->right, n);
    }
    CHECK(!"unknown predicate kind");
    return 0;
}

static void check_pred(const struct sql_pred *p, int n)
{
    CHECK(check_pred_leaves(p, n) == n);
}

static void check_ask(const struct sql_ask *a, const struct sql_view_list *list, const char *text)
{
    const struct sql_view *v = a->view;
    CHECK(v >= list->views && v < list->views + list->nviews);
    CHECK(a->text && strcmp(a->text, text) == 0);
    CHECK(a->nparams >= 0 && a->nparams <= SQL_MAX_PARAMS);
    for (int i = 0; i < a->nparams; i++) {
        const struct sql_param *p = &a->params[i];
        CHECK(p->kind == SQL_PARAM_TIMESTAMP || p->kind == SQL_PARAM_COUNT ||
              (p->kind == SQL_PARAM_KEY && is_key_column(v, p->view_column)));
    }
    CHECK(a->ncolumns >= 1);
    for (int i = 0; i < a->ncolumns; i++) {
        const struct sql_ask_column *c = &a->columns[i];
        CHECK(c->name);
        switch (c->kind) {
        case SQL_ASK_BUCKET:
            CHECK(a->group_by_bucket);
            break;
        case SQL_ASK_KEY:
            CHECK(is_key_column(v, c->view_column));
            break;
        case SQL_ASK_MEASURE:
            CHECK(c->view_column >= 0 && c->view_column < v->ncolumns &&
                  v->columns[c->view_column].kind == SQL_COLUMN_MEASURE);
            break;
        default:
            CHECK(!"unknown ask column kind");
        }
    }
    /* Bins are whole finest buckets, from an origin on a finest edge. */
    CHECK(a->bucket_width > 0 && a->bucket_width % v->widths[0] == 0);
    CHECK((a->bucket_origin - v->origin_usec) % v->widths[0] == 0);
    CHECK(a->group_by_bucket || (a->bucket_width == v->widths[0] && !a->bucket_calendar));
    CHECK(!a->bucket_calendar || (a->group_by_bucket && a->bucket_unit <= SQL_UNIT_YEAR));
    for (int g = 0; g < a->ngroup_keys; g++)
        CHECK(is_key_column(v, a->group_keys[g]));
    if (a->has_range_from)
        check_operand(a, &a->range_from, SQL_PARAM_TIMESTAMP);
    if (a->has_range_to)
        check_operand(a, &a->range_to, SQL_PARAM_TIMESTAMP);
    for (int k = 0; k < a->nconds; k++) {
        const struct sql_ask_cond *c = &a->conds[k];
        CHECK(is_key_column(v, c->view_column));
        switch (c->kind) {
        case SQL_COND_EQ:
        case SQL_COND_NE:
        case SQL_COND_LT:
        case SQL_COND_LE:
        case SQL_COND_GT:
        case SQL_COND_GE:
        case SQL_COND_LIKE:
        case SQL_COND_ILIKE:
            CHECK(c->nvalues == 1);
            break;
        case SQL_COND_IN:
        case SQL_COND_NOT_IN:
            CHECK(c->nvalues >= 1);
            break;
        case SQL_COND_IS_NULL:
        case SQL_COND_IS_NOT_NULL:
            CHECK(c->nvalues == 0);
            break;
        default:
            CHECK(!"unknown condition kind");
        }
        for (int i = 0; i < c->nvalues; i++) {
            check_operand(a, &c->values[i], SQL_PARAM_KEY);
            if (c->values[i].is_param)
                CHECK(a->params[c->values[i].param - 1].view_column == c->view_column);
        }
    }
    check_pred(a->where, a->nconds);
    check_pred(a->having_pred, a->nhaving);
    CHECK((a->having_pred != NULL) == (a->nhaving > 0));
    for (int h = 0; h < a->nhaving; h++) {
        const struct sql_having_cmp *c = &a->having[h];
        CHECK(c->view_column >= 0 && c->view_column < v->ncolumns &&
              v->columns[c->view_column].kind == SQL_COLUMN_MEASURE);
        check_operand(a, &c->value, SQL_PARAM_MEASURE);
    }
    for (int i = 0; i < a->norder; i++)
        CHECK(a->order[i].output_column >= 0 && a->order[i].output_column < a->ncolumns);
    if (a->has_limit)
        check_operand(a, &a->limit, SQL_PARAM_COUNT);
    if (a->has_offset)
        check_operand(a, &a->offset, SQL_PARAM_COUNT);
}

static void check_time(const char *text)
{
    char why[200];
    int64_t usec;
    bool has_offset;
    if (sql_parse_interval(text, &usec, why, sizeof why))
        CHECK(usec > 0);
    else
        CHECK(why[0] != '\0');
    if (!sql_parse_timestamp(text, &usec, &has_offset, why, sizeof why)) {
        CHECK(why[0] != '\0');
        return;
    }
    int64_t days = usec / SQL_USEC_PER_DAY - (usec % SQL_USEC_PER_DAY < 0);
    int64_t y;
    unsigned m, d;
    sql_civil_from_days(days, &y, &m, &d);
    /* Years 1 to 9999, give or take a day of offset. */
    CHECK(y >= 0 && y <= 10000 && m >= 1 && m <= 12 && d >= 1 && d <= 31);
    CHECK(sql_days_from_civil(y, m, d) == days);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!lists[0]) {
        struct sql_error err;
        char *text = read_source_file("bench/taxi_views.sql");
        lists[0] = text ? sql_parse_views(text, &err) : NULL;
        free(text);
        lists[1] = sql_parse_views(OTHER_VIEWS, &err);
        if (!lists[0] || !lists[1]) {
            fprintf(stderr, "fuzz_ask: the seed views do not parse: %s\n", err.message);
            abort();
        }
    }
    char *text = malloc(size + 1);
    if (!text)
        return 0;
    memcpy(text, data, size);
    text[size] = '\0';

    for (int l = 0; l < 2; l++) {
        struct sql_error err;
        struct sql_ask *ask = sql_parse_ask(text, lists[l], &err);
        if (ask) {
            check_ask(ask, lists[l], text);
            sql_ask_free(ask);
        } else {
            check_error(&err);
        }
    }
    check_time(text);
    free(text);
    return 0;
}
