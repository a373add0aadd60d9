/* test_sql_view.c -- CREATE VIEW compiles to the structs ingest relies on:
 * columns and their kinds, fact columns, joins, cell keys (bound cells
 * included), filters and the accumulators measures share. */
#include "sql/sql.h"
#include "tests/unit/source_file.h"

#include <criterion/criterion.h>
#include <string.h>

static struct sql_view_list *parse_ok(const char *text)
{
    struct sql_error err;
    struct sql_view_list *list = sql_parse_views(text, &err);
    char buf[400];
    cr_assert_not_null(list, "parse failed: %s", sql_error_format(&err, buf, sizeof buf));
    return list;
}

static const struct sql_view_column *col(const struct sql_view *v, const char *name)
{
    int i = sql_view_column_find(v, name);
    cr_assert_geq(i, 0, "no column %s", name);
    return &v->columns[i];
}

static const char *fact_name(const struct sql_view *v, int i)
{
    cr_assert(i >= 0 && i < v->nfact_columns, "fact column %d out of range", i);
    return v->fact_columns[i].name;
}

static char *filter_text(const struct sql_view *v, int i)
{
    static char buf[512];
    cr_assert(i >= 0 && i < v->nfilters);
    sql_filter_format(v, v->filters[i], buf, sizeof buf);
    return buf;
}

Test(sql_view, seed_views_compile_as_expected)
{
    char *text = read_source_file("bench/taxi_views.sql");
    cr_assert_not_null(text);
    struct sql_view_list *list = parse_ok(text);
    cr_assert_eq(list->nviews, 2);

    const struct sql_view *t = sql_view_find(list, "trips");
    cr_assert_not_null(t);
    cr_assert_str_eq(t->fact_schema, "public");
    cr_assert_str_eq(t->fact_table, "yellow_trips");
    cr_assert_str_eq(t->fact_alias, "trips");
    cr_assert_eq(t->nwidths, 3);
    cr_assert_eq(t->widths[0], SQL_USEC_PER_HOUR);
    cr_assert_eq(t->widths[1], SQL_USEC_PER_DAY);
    cr_assert_eq(t->widths[2], 7 * SQL_USEC_PER_DAY);
    cr_assert_eq(t->origin_usec, 0);
    cr_assert(t->origin_has_zone);
    cr_assert_str_eq(fact_name(t, t->bucket_fact_column), "pickup_at");
    cr_assert_eq(t->ncolumns, 9);

    cr_assert_eq(col(t, "bucket")->kind, SQL_COLUMN_BUCKET);
    const struct sql_view_column *pu = col(t, "pu_location_id");
    cr_assert_eq(pu->kind, SQL_COLUMN_FACT_KEY);
    cr_assert_str_eq(fact_name(t, pu->fact_column), "pu_location_id");
    const struct sql_view_column *pt = col(t, "payment_type");
    cr_assert_eq(pt->kind, SQL_COLUMN_FACT_KEY);

    /* borough is read through the zones' projection, not kept in cells */
    const struct sql_view_column *bo = col(t, "borough");
    cr_assert_eq(bo->kind, SQL_COLUMN_DIM);
    cr_assert_eq(t->njoins, 1);
    const struct sql_join *j = &t->joins[bo->join];
    cr_assert_eq(j->kind, SQL_JOIN_LEFT);
    cr_assert_str_eq(j->schema, "public");
    cr_assert_str_eq(j->table, "taxi_zones");
    cr_assert_str_eq(j->alias, "pickup");
    cr_assert_str_eq(j->dim_key, "location_id");
    cr_assert_str_eq(fact_name(t, j->fact_column), "pu_location_id");
    cr_assert_eq(j->ndim_columns, 2);
    cr_assert_str_eq(j->dim_columns[0], "location_id");
    cr_assert_str_eq(j->dim_columns[bo->dim_column], "borough");

    /* cells keyed by the two fact keys; no bound cells: the join column is a key */
    cr_assert_eq(t->ncell_keys, 2);
    cr_assert_eq(t->cell_keys[pu->cell_key], pu->fact_column);
    cr_assert_eq(t->cell_keys[pt->cell_key], pt->fact_column);

    /* measures and their shared accumulators */
    const struct sql_view_column *trips = col(t, "trips"), *fare = col(t, "fare"),
                                 *avg = col(t, "avg_fare"), *med = col(t, "median_fare"),
                                 *p99 = col(t, "p99_fare");
    cr_assert_eq(trips->measure.agg, SQL_AGG_COUNT_STAR);
    cr_assert_eq(trips->measure.count, 0, "count(*) is counts[0]");
    cr_assert_eq(fare->measure.agg, SQL_AGG_SUM);
    cr_assert_eq(avg->measure.agg, SQL_AGG_AVG);
    cr_assert_eq(fare->measure.sum, avg->measure.sum, "sum and avg share one sum");
    cr_assert_eq(fare->measure.count, avg->measure.count);
    cr_assert_str_eq(fact_name(t, fare->measure.fact_column), "fare_amount");
    cr_assert_eq(med->measure.agg, SQL_AGG_PERCENTILE_DISC);
    cr_assert_str_eq(med->measure.fraction_text, "0.5");
    cr_assert_float_eq(p99->measure.fraction, 0.99, 1e-12);
    cr_assert_eq(med->measure.value_counts, p99->measure.value_counts,
                 "both percentiles read one set of value counts");
    cr_assert_eq(t->ncounts, 2);
    cr_assert_eq(t->counts[0].fact_column, -1);
    cr_assert_eq(t->nsums, 1);
    cr_assert_eq(t->nvalue_counts, 1);
    cr_assert_str_eq(fact_name(t, t->value_counts[0].fact_column), "fare_amount");
    cr_assert_eq(t->nfilters, 0);

    const struct sql_view *d = sql_view_find(list, "dropoffs");
    cr_assert_not_null(d);
    cr_assert_eq(d->ncolumns, 7);
    cr_assert_eq(d->ncell_keys, 1);
    cr_assert_str_eq(fact_name(d, d->cell_keys[0]), "do_location_id");
    cr_assert_eq(d->nsums, 3);
    cr_assert_eq(d->nvalue_counts, 0);
    cr_assert_eq(d->ncounts, 4, "count(*) plus non-null counts of three summed columns");
    cr_assert_str_eq(d->joins[0].alias, "dropoff");
    cr_assert(strstr(d->source, "CREATE VIEW dropoffs") == d->source);
    cr_assert(strstr(d->source, "GROUP BY 1, 2, 3") != NULL);
    cr_assert_null(strchr(d->source, ';'), "source stops before the semicolon");

    sql_view_list_free(list);
    free(text);
}

Test(sql_view, bound_cells_when_join_column_is_not_a_key)
{
    struct sql_view_list *l = parse_ok(
        "CREATE VIEW v AS SELECT date_bin('1 hour', t.ts, timestamptz 'epoch') AS bucket,\n"
        "  z.borough, t.payment_type, count(*) AS n\n"
        "FROM trips t LEFT JOIN zones z ON t.zone_id = z.id GROUP BY 1, 2, 3");
    const struct sql_view *v = &l->views[0];
    cr_assert_eq(v->ncell_keys, 2);
    cr_assert_str_eq(fact_name(v, v->cell_keys[0]), "payment_type");
    cr_assert_str_eq(fact_name(v, v->cell_keys[1]), "zone_id", "bound cell key");
    cr_assert_str_eq(v->joins[0].dim_key, "id", "ON written fact side first");
    cr_assert_str_eq(col(v, "borough")->name, "borough", "default name is the column");
    sql_view_list_free(l);
}

Test(sql_view, inner_join_without_dim_columns_keeps_join_key)
{
    struct sql_view_list *l = parse_ok(
        "CREATE VIEW v AS SELECT date_bin('1 hour', t.ts, timestamptz 'epoch') AS bucket,\n"
        "  count(*) AS n FROM trips t JOIN zones z ON z.id = t.zone_id\n"
        "  LEFT JOIN vendors ve ON ve.id = t.vendor_id GROUP BY bucket");
    const struct sql_view *v = &l->views[0];
    cr_assert_eq(v->njoins, 2);
    cr_assert_eq(v->joins[0].kind, SQL_JOIN_INNER);
    cr_assert_eq(v->joins[1].kind, SQL_JOIN_LEFT);
    /* the inner join drops trips without a zone, so its key is kept; the
     * left join with nothing selected changes nothing and is not */
    cr_assert_eq(v->ncell_keys, 1);
    cr_assert_str_eq(fact_name(v, v->cell_keys[0]), "zone_id");
    sql_view_list_free(l);
}

Test(sql_view, every_measure_kind_and_filter)
{
    struct sql_view_list *l = parse_ok(
        "create view m with (buckets = '1 day, 15 minutes, 1 hour') as\n"
        "select date_bin('15 minutes', f.ts, timestamp '2000-01-01 00:00:00') as b,\n"
        "  f.k,\n"
        "  count(*) as n,\n"
        "  count(*) filter (where f.x > 10 and f.y in ('a', 'b')) as n_big,\n"
        "  count(f.x) as nx,\n"
        "  count(distinct f.y) as ny,\n"
        "  sum(f.x) filter (where 10 < f.x AND f.y IN ('a','b')) as big_sum,\n"
        "  avg(f.x) as ax,\n"
        "  min(f.x) as lo, max(f.x) as hi,\n"
        "  percentile_cont(0.25) within group (order by f.x asc) as q1,\n"
        "  count(*) filter (where f.y is null or not f.x <> -1.5) as odd,\n"
        "  count(*) filter (where f.y not in ('c') and f.z is not null) as other\n"
        "from f group by 1, 2");
    const struct sql_view *v = &l->views[0];
    cr_assert_eq(v->nwidths, 3);
    cr_assert_eq(v->widths[0], 15 * SQL_USEC_PER_MINUTE, "sorted, stride first");
    cr_assert_eq(v->widths[1], SQL_USEC_PER_HOUR);
    cr_assert_eq(v->widths[2], SQL_USEC_PER_DAY);
    cr_assert_not(v->origin_has_zone);
    cr_assert_eq(v->origin_usec, 946684800LL * SQL_USEC_PER_SEC);
    cr_assert_str_eq(v->fact_alias, "f", "alias defaults to the table name");

    cr_assert_eq(col(v, "n_big")->measure.agg, SQL_AGG_COUNT_STAR);
    cr_assert_eq(col(v, "nx")->measure.agg, SQL_AGG_COUNT);
    cr_assert_eq(col(v, "ny")->measure.agg, SQL_AGG_COUNT_DISTINCT);
    cr_assert_eq(col(v, "lo")->measure.agg, SQL_AGG_MIN);
    cr_assert_eq(col(v, "hi")->measure.agg, SQL_AGG_MAX);
    cr_assert_eq(col(v, "q1")->measure.agg, SQL_AGG_PERCENTILE_CONT);

    /* "x > 10 AND y IN" and "10 < x AND y IN" are one filter */
    int fb = col(v, "n_big")->measure.filter;
    cr_assert_eq(col(v, "big_sum")->measure.filter, fb);
    cr_assert_str_eq(filter_text(v, fb), "(x > 10 AND y IN ('a', 'b'))");
    cr_assert_str_eq(filter_text(v, col(v, "odd")->measure.filter),
                     "(y IS NULL OR (NOT x <> -1.5))");
    cr_assert_str_eq(filter_text(v, col(v, "other")->measure.filter),
                     "(y NOT IN ('c') AND z IS NOT NULL)");
    cr_assert_eq(v->nfilters, 3);

    /* min, max and the percentile share the value counts of x; distinct y has its own */
    int vx = col(v, "lo")->measure.value_counts;
    cr_assert_eq(col(v, "hi")->measure.value_counts, vx);
    cr_assert_eq(col(v, "q1")->measure.value_counts, vx);
    cr_assert_neq(col(v, "ny")->measure.value_counts, vx);
    cr_assert_eq(v->nvalue_counts, 2);
    /* count(x), avg(x) share count(x); the filtered sum has its own count and sum */
    cr_assert_eq(col(v, "nx")->measure.count, col(v, "ax")->measure.count);
    cr_assert_neq(col(v, "big_sum")->measure.count, col(v, "ax")->measure.count);
    cr_assert_eq(v->nsums, 2);
    cr_assert_eq(v->counts[col(v, "n_big")->measure.count].filter, fb);
    sql_view_list_free(l);
}

Test(sql_view, lexical_forms)
{
    struct sql_view_list *l = parse_ok(
        "-- a comment\n"
        "CREATE OR REPLACE VIEW \"Weird View\" WITH (buckets = '1 hour') AS /* block /* nested */ */\n"
        "SELECT DATE_BIN(INTERVAL '1 hour', t.\"PickupAt\", '1970-01-01 00:00:00+00'::timestamptz) bucket,\n"
        "       t.\"Zone\" AS \"Zone Name\",\n"
        "       Count(*) FILTER (WHERE t.note = E'it\\'s\\n' OR t.note = 'it''s'\n"
        "                        'continued' OR t.note = $$dollar 'quoted'$$\n"
        "                        OR t.day = DATE '2024-01-01') trips\n"
        "FROM \"Sales\".\"Fact\" AS t\n"
        "GROUP BY bucket, \"Zone Name\";\n");
    const struct sql_view *v = &l->views[0];
    cr_assert_str_eq(v->name, "Weird View");
    cr_assert_str_eq(v->fact_schema, "Sales");
    cr_assert_str_eq(v->fact_table, "Fact");
    cr_assert_str_eq(fact_name(v, v->bucket_fact_column), "PickupAt");
    cr_assert_eq(col(v, "Zone Name")->kind, SQL_COLUMN_FACT_KEY);
    cr_assert_str_eq(fact_name(v, col(v, "Zone Name")->fact_column), "Zone");
    cr_assert_eq(col(v, "trips")->measure.agg, SQL_AGG_COUNT_STAR);
    cr_assert_str_eq(filter_text(v, 0),
                     "(((note = 'it''s\n' OR note = 'it''scontinued') OR "
                     "note = 'dollar ''quoted''') OR day = '2024-01-01'::date)");
    sql_view_list_free(l);
}

Test(sql_view, unqualified_columns_and_default_names)
{
    struct sql_view_list *l = parse_ok(
        "CREATE VIEW v AS SELECT date_bin('1 hour', ts, timestamptz 'epoch'), k, count(*),\n"
        "sum(x), avg(x) FROM f GROUP BY date_bin, k");
    const struct sql_view *v = &l->views[0];
    cr_assert_eq(col(v, "date_bin")->kind, SQL_COLUMN_BUCKET);
    cr_assert_eq(col(v, "k")->kind, SQL_COLUMN_FACT_KEY);
    cr_assert_eq(col(v, "count")->kind, SQL_COLUMN_MEASURE);
    cr_assert_eq(col(v, "sum")->measure.agg, SQL_AGG_SUM);
    cr_assert_eq(col(v, "avg")->measure.agg, SQL_AGG_AVG);
    cr_assert_eq(v->nwidths, 1, "no buckets option: the stride alone");
    sql_view_list_free(l);
}

Test(sql_view, group_by_column_reference)
{
    struct sql_view_list *l = parse_ok(
        "CREATE VIEW v AS SELECT date_bin('1 hour', t.ts, timestamptz '2024-01-01 05:00+05')\n"
        "AS bucket, z.name AS zone_name, t.k AS key, count(*) n\n"
        "FROM f t INNER JOIN public.z ON z.id = t.k GROUP BY bucket, z.name, t.k");
    const struct sql_view *v = &l->views[0];
    cr_assert_eq(v->origin_usec, 1704067200LL * SQL_USEC_PER_SEC, "offset applied");
    cr_assert_eq(col(v, "zone_name")->kind, SQL_COLUMN_DIM);
    cr_assert_eq(v->ncell_keys, 1, "join column is already the key");
    sql_view_list_free(l);
}

Test(sql_view, several_views_and_lookup)
{
    struct sql_view_list *l = parse_ok(
        "CREATE VIEW a AS SELECT date_bin('1 hour', ts, timestamptz 'epoch') b, count(*) n "
        "FROM f GROUP BY 1;;\n"
        "CREATE VIEW b AS SELECT date_bin('1 day', ts, timestamptz 'epoch') b, count(*) n "
        "FROM f GROUP BY 1");
    cr_assert_eq(l->nviews, 2);
    cr_assert_eq(sql_view_find(l, "b")->widths[0], SQL_USEC_PER_DAY);
    cr_assert_null(sql_view_find(l, "c"));
    cr_assert_eq(sql_view_column_find(&l->views[0], "n"), 1);
    cr_assert_eq(sql_view_column_find(&l->views[0], "zz"), -1);
    sql_view_list_free(l);
}
