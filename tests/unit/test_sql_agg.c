/* test_sql_agg.c -- the aggregates' one table of names (sql/agg.c): every
 * enumerator of enum sql_agg has its row, each row is its own aggregate's,
 * and each aggregate written by its row's function and form parses back to
 * it, so that the parser, /views and straum-dump cannot disagree. */
#include "sql/sql.h"

#include <criterion/criterion.h>
#include <stdio.h>

Test(sql_agg, every_aggregate_has_its_names)
{
    /* By enumerator, not position: a reordered enum or table fails here. */
    static const struct {
        enum sql_agg agg;
        const char *function, *label;
        enum sql_agg_form form;
    } want[] = {
        {SQL_AGG_COUNT_STAR, "count", "count(*)", SQL_AGG_FORM_STAR},
        {SQL_AGG_COUNT, "count", "count", SQL_AGG_FORM_COLUMN},
        {SQL_AGG_COUNT_DISTINCT, "count", "count distinct", SQL_AGG_FORM_DISTINCT},
        {SQL_AGG_SUM, "sum", "sum", SQL_AGG_FORM_COLUMN},
        {SQL_AGG_AVG, "avg", "avg", SQL_AGG_FORM_COLUMN},
        {SQL_AGG_MIN, "min", "min", SQL_AGG_FORM_COLUMN},
        {SQL_AGG_MAX, "max", "max", SQL_AGG_FORM_COLUMN},
        {SQL_AGG_PERCENTILE_DISC, "percentile_disc", "percentile_disc",
         SQL_AGG_FORM_WITHIN_GROUP},
        {SQL_AGG_PERCENTILE_CONT, "percentile_cont", "percentile_cont",
         SQL_AGG_FORM_WITHIN_GROUP},
    };
    cr_assert_eq(sizeof want / sizeof want[0], (size_t)SQL_NAGGS,
                 "an aggregate without its expected names here");
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        const struct sql_agg_info *a = &sql_aggs[want[i].agg];
        cr_assert_not_null(a->function, "aggregate %d has no row", (int)want[i].agg);
        cr_assert_not_null(a->label, "aggregate %d has no label", (int)want[i].agg);
        cr_assert_str_eq(a->function, want[i].function);
        cr_assert_str_eq(a->label, want[i].label);
        cr_assert_eq(a->form, want[i].form, "%s", want[i].label);
        cr_assert_str_eq(sql_agg_label(want[i].agg), want[i].label);
    }
    for (int a = 0; a < SQL_NAGGS; a++) {
        cr_assert(sql_aggs[a].function && *sql_aggs[a].function, "aggregate %d has no function", a);
        for (int b = 0; b < a; b++)
            cr_assert_str_neq(sql_aggs[a].label, sql_aggs[b].label, "two aggregates labelled %s",
                              sql_aggs[a].label);
    }
    cr_assert_str_eq(sql_agg_label((enum sql_agg)SQL_NAGGS), "?");
    cr_assert_str_eq(sql_agg_label((enum sql_agg)-1), "?");
    cr_assert_eq(sql_agg_by_function("stddev"), -1);
    cr_assert_eq(sql_agg_by_function("count"), SQL_AGG_COUNT);
    cr_assert_eq(sql_agg_by_label("count(DISTINCT x)"), -1);
    char text[64];
    sql_agg_format(SQL_AGG_COUNT_DISTINCT, "zone", NULL, text, sizeof text);
    cr_assert_str_eq(text, "count(DISTINCT zone)");
    sql_agg_format(SQL_AGG_PERCENTILE_CONT, "fare", "0.5", text, sizeof text);
    cr_assert_str_eq(text, "percentile_cont(0.5) WITHIN GROUP (ORDER BY fare)");
    sql_agg_format((enum sql_agg)SQL_NAGGS, "fare", NULL, text, sizeof text);
    cr_assert_str_eq(text, "?");
}

Test(sql_agg, names_round_trip_through_the_parser)
{
    for (int agg = 0; agg < SQL_NAGGS; agg++) {
        /* Written as straum-dump and straum-shell write it. */
        char measure[120], text[600];
        sql_agg_format((enum sql_agg)agg, "t.fare", "0.25", measure, sizeof measure);
        cr_assert_eq(sql_agg_by_label(sql_aggs[agg].label), agg);
        snprintf(text, sizeof text,
                 "CREATE VIEW v WITH (buckets = '1 hour') AS\n"
                 "SELECT date_bin('1 hour', t.at, timestamptz 'epoch') AS bucket,\n"
                 "       t.zone AS zone,\n"
                 "       %s AS m\n"
                 "FROM public.facts AS t\n"
                 "GROUP BY 1, 2;\n",
                 measure);
        struct sql_error err;
        struct sql_view_list *list = sql_parse_views(text, &err);
        char msg[400];
        cr_assert_not_null(list, "%s: %s", measure, sql_error_format(&err, msg, sizeof msg));
        const struct sql_view *v = sql_view_find(list, "v");
        cr_assert_not_null(v);
        int c = sql_view_column_find(v, "m");
        cr_assert_geq(c, 0);
        cr_assert_eq(v->columns[c].kind, SQL_COLUMN_MEASURE);
        cr_assert_eq(v->columns[c].measure.agg, (enum sql_agg)agg, "%s parsed as %s", measure,
                     sql_agg_label(v->columns[c].measure.agg));
        sql_view_list_free(list);
    }
}
