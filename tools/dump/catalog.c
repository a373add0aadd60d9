/* catalog.c -- `straum-dump catalog`: what the store is and what it keeps.
 *
 * The store-wide figures come from the snapshot's catalog (format version,
 * creation, source position and lag); the views from their compiled form,
 * described column by column the way SPEC.md "Views" explains them, so that
 * the role/index tags `segments` prints can be read against this listing. */
#include "base/lsn.h"
#include "tools/dump/dump.h"
#include "tools/dump/table.h"

#include <stdlib.h>
#include <string.h>

static const char *column_kind_name(enum sql_column_kind kind)
{
    switch (kind) {
    case SQL_COLUMN_BUCKET: return "bucket";
    case SQL_COLUMN_FACT_KEY: return "key";
    case SQL_COLUMN_DIM: return "dim";
    case SQL_COLUMN_MEASURE: return "measure";
    }
    return "?";
}

static const char *fact_name(const struct sql_view *v, int col)
{
    return col >= 0 && col < v->nfact_columns ? v->fact_columns[col].name : "?";
}

static void measure_text(const struct sql_view *v, const struct sql_measure *m, struct sbuf *b)
{
    char text[600];
    sql_agg_format(m->agg, fact_name(v, m->fact_column), m->fraction_text, text, sizeof text);
    sbuf_puts(b, text);
    dump_filter_suffix(v, m->filter, b);
}

static const char *join_table(const struct sql_join *jn, struct sbuf *b)
{
    sbuf_reset(b);
    if (jn->schema)
        sbuf_printf(b, "%s.", jn->schema);
    sbuf_puts(b, jn->table);
    return b->p;
}

/* What a view column is, in one phrase. */
static void column_text(const struct sql_view *v, const struct sql_view_column *c, struct sbuf *b)
{
    char wt[TEXT_SMALL];
    switch (c->kind) {
    case SQL_COLUMN_BUCKET:
        text_width(wt, v->widths[0]);
        sbuf_printf(b, "date_bin('%s', %s)", wt, fact_name(v, c->fact_column));
        break;
    case SQL_COLUMN_FACT_KEY:
        sbuf_printf(b, "%s (cell key %d)", fact_name(v, c->fact_column), c->cell_key);
        break;
    case SQL_COLUMN_DIM: {
        const struct sql_join *jn = &v->joins[c->join];
        sbuf_printf(b, "%s.%s via join %d (%s ON %s.%s = %s)", jn->alias ? jn->alias : jn->table,
                    jn->dim_columns[c->dim_column], c->join, jn->table,
                    jn->alias ? jn->alias : jn->table, jn->dim_key,
                    fact_name(v, jn->fact_column));
        break;
    }
    case SQL_COLUMN_MEASURE:
        measure_text(v, &c->measure, b);
        break;
    }
}

static void position_json(struct json *j, const struct store_position *p, int64_t now)
{
    char t[TEXT_SMALL];
    json_key(j, "position");
    json_object_begin(j);
    lsn_text(p->lsn, t);
    json_kv_str(j, "lsn", t);
    json_kv_uint(j, "lsn_int", p->lsn);
    if (p->commit_time) {
        text_time(t, p->commit_time, TIME_RFC3339);
        json_kv_str(j, "commit_time", t);
    } else {
        json_kv_null(j, "commit_time");
    }
    /* The lag straum-serve and straum-ingest report (store_lag_usec). */
    int64_t lag = store_lag_usec(p, now);
    if (lag >= 0)
        json_kv_int(j, "lag_usec", lag);
    else
        json_kv_null(j, "lag_usec");
    if (p->contact_time) {
        text_time(t, p->contact_time, TIME_RFC3339);
        json_kv_str(j, "contact_time", t);
    } else {
        json_kv_null(j, "contact_time");
    }
    json_kv_uint(j, "bytes_behind", p->bytes_behind);
    json_object_end(j);
}

static void view_json(struct json *j, const struct sql_view *v,
                      const struct store_column_type *types)
{
    struct sbuf b = {0};
    char t[TEXT_SMALL];
    json_object_begin(j);
    json_kv_str(j, "name", v->name);
    json_kv_str(j, "fact_schema", v->fact_schema);
    json_kv_str(j, "fact_table", v->fact_table);
    json_kv_str(j, "fact_alias", v->fact_alias);
    json_kv_str(j, "bucket_column", fact_name(v, v->bucket_fact_column));
    text_time(t, v->origin_usec, TIME_RFC3339);
    json_kv_str(j, "origin", t);
    json_key(j, "widths");
    json_array_begin(j);
    for (int w = 0; w < v->nwidths; w++) {
        json_object_begin_inline(j);
        json_kv_int(j, "index", w);
        text_width(t, v->widths[w]);
        json_kv_str(j, "width", t);
        json_kv_int(j, "usec", v->widths[w]);
        json_object_end(j);
    }
    json_array_end(j);

    json_key(j, "columns");
    json_array_begin(j);
    for (int i = 0; i < v->ncolumns; i++) {
        const struct sql_view_column *c = &v->columns[i];
        json_object_begin_inline(j);
        json_kv_str(j, "name", c->name);
        json_kv_str(j, "kind", column_kind_name(c->kind));
        switch (c->kind) {
        case SQL_COLUMN_BUCKET:
            json_kv_str(j, "fact_column", fact_name(v, c->fact_column));
            break;
        case SQL_COLUMN_FACT_KEY:
            json_kv_str(j, "fact_column", fact_name(v, c->fact_column));
            json_kv_int(j, "cell_key", c->cell_key);
            break;
        case SQL_COLUMN_DIM:
            json_kv_int(j, "join", c->join);
            json_kv_str(j, "dim_column", v->joins[c->join].dim_columns[c->dim_column]);
            break;
        case SQL_COLUMN_MEASURE: {
            const struct sql_measure *m = &c->measure;
            sbuf_reset(&b);
            measure_text(v, m, &b);
            json_kv_str(j, "measure", b.p);
            json_kv_str(j, "fact_column", m->fact_column >= 0 ? fact_name(v, m->fact_column) : NULL);
            if (m->filter >= 0) {
                size_t n = sql_filter_format(v, v->filters[m->filter], NULL, 0);
                char *ft = xmalloc(n + 1);
                sql_filter_format(v, v->filters[m->filter], ft, n + 1);
                json_kv_str(j, "filter", ft);
                free(ft);
            } else {
                json_kv_null(j, "filter");
            }
            json_kv_int(j, "count", m->count);
            json_kv_int(j, "sum", m->sum);
            json_kv_int(j, "value_counts", m->value_counts);
            break;
        }
        }
        json_object_end(j);
    }
    json_array_end(j);

    json_key(j, "cell_keys");
    json_array_begin_inline(j);
    for (int k = 0; k < v->ncell_keys; k++)
        json_str(j, fact_name(v, v->cell_keys[k]));
    json_array_end(j);

    json_key(j, "joins");
    json_array_begin(j);
    for (int i = 0; i < v->njoins; i++) {
        const struct sql_join *jn = &v->joins[i];
        json_object_begin_inline(j);
        json_kv_str(j, "kind", jn->kind == SQL_JOIN_LEFT ? "left" : "inner");
        json_kv_str(j, "schema", jn->schema);
        json_kv_str(j, "table", jn->table);
        json_kv_str(j, "alias", jn->alias);
        json_kv_str(j, "key", jn->dim_key);
        json_kv_str(j, "fact_column", fact_name(v, jn->fact_column));
        json_key(j, "dim_columns");
        json_array_begin(j);
        for (int c = 1; c < jn->ndim_columns; c++)
            json_str(j, jn->dim_columns[c]);
        json_array_end(j);
        json_object_end(j);
    }
    json_array_end(j);

    json_key(j, "accumulators");
    json_object_begin(j);
    json_key(j, "counts");
    json_array_begin_inline(j);
    for (int i = 0; i < v->ncounts; i++) {
        sbuf_reset(&b);
        dump_label_count(v, i, &b);
        json_str(j, b.p);
    }
    json_array_end(j);
    json_key(j, "sums");
    json_array_begin_inline(j);
    for (int i = 0; i < v->nsums; i++) {
        sbuf_reset(&b);
        dump_label_sum(v, i, &b);
        json_str(j, b.p);
    }
    json_array_end(j);
    json_key(j, "value_counts");
    json_array_begin_inline(j);
    for (int i = 0; i < v->nvalue_counts; i++) {
        sbuf_reset(&b);
        dump_label_vc(v, i, &b);
        json_str(j, b.p);
    }
    json_array_end(j);
    json_object_end(j);

    json_key(j, "fact_columns");
    json_array_begin(j);
    for (int i = 0; i < v->nfact_columns; i++) {
        json_object_begin_inline(j);
        json_kv_str(j, "name", v->fact_columns[i].name);
        json_kv_str(j, "type", dump_type_name(types[i].type));
        if (types[i].type == STORE_TYPE_NUMERIC)
            json_kv_int(j, "scale", types[i].scale);
        else
            json_kv_null(j, "scale");
        json_kv_uint(j, "pg_oid", types[i].pg_oid);
        json_object_end(j);
    }
    json_array_end(j);
    json_object_end(j);
    sbuf_free(&b);
}

static void view_human(FILE *f, const struct sql_view *v, const struct store_column_type *types)
{
    struct sbuf b = {0};
    char t[TEXT_SMALL];
    fprintf(f, "\nview %s\n", v->name);
    fprintf(f, "  fact table    %s%s%s", v->fact_schema ? v->fact_schema : "",
            v->fact_schema ? "." : "", v->fact_table);
    if (v->fact_alias && strcmp(v->fact_alias, v->fact_table) != 0)
        fprintf(f, " (alias %s)", v->fact_alias);
    text_time(t, v->origin_usec, TIME_PG);
    fprintf(f, "\n  bucket        date_bin over %s, origin %s\n",
            fact_name(v, v->bucket_fact_column), t);
    fputs("  widths        ", f);
    for (int w = 0; w < v->nwidths; w++) {
        text_width(t, v->widths[w]);
        fprintf(f, "%s%d = %s", w ? ", " : "", w, t);
    }
    fputs("\n  columns\n", f);
    struct table *tb = table_new(3, (const char *const[]){"name", "kind", "definition"});
    for (int i = 0; i < v->ncolumns; i++) {
        const struct sql_view_column *c = &v->columns[i];
        sbuf_reset(&b);
        column_text(v, c, &b);
        table_row(tb);
        table_cell(tb, "%s", c->name);
        table_cell(tb, "%s", column_kind_name(c->kind));
        table_cell(tb, "%s", b.p);
    }
    table_print(tb, f, 4);
    table_free(tb);

    fputs("  cell keys     ", f);
    for (int k = 0; k < v->ncell_keys; k++)
        fprintf(f, "%s%d = %s", k ? ", " : "", k, fact_name(v, v->cell_keys[k]));
    fputs(v->ncell_keys ? "\n" : "none\n", f);

    fputs(v->njoins ? "  joins\n" : "  joins         none\n", f);
    for (int i = 0; i < v->njoins; i++) {
        const struct sql_join *jn = &v->joins[i];
        const char *alias = jn->alias ? jn->alias : jn->table;
        fprintf(f, "    %d: %s JOIN %s", i, jn->kind == SQL_JOIN_LEFT ? "LEFT" : "INNER",
                join_table(jn, &b));
        if (jn->alias)
            fprintf(f, " %s", jn->alias);
        fprintf(f, " ON %s.%s = %s; dim columns:", alias, jn->dim_key,
                fact_name(v, jn->fact_column));
        for (int c = 1; c < jn->ndim_columns; c++)
            fprintf(f, "%s %s", c > 1 ? "," : "", jn->dim_columns[c]);
        if (jn->ndim_columns <= 1)
            fputs(" none", f);
        fputc('\n', f);
    }

    fputs("  accumulators\n", f);
    for (int i = 0; i < v->ncounts; i++) {
        sbuf_reset(&b);
        dump_label_count(v, i, &b);
        fprintf(f, "    count %d: %s\n", i, b.p);
    }
    for (int i = 0; i < v->nsums; i++) {
        sbuf_reset(&b);
        dump_label_sum(v, i, &b);
        fprintf(f, "    sum %d: %s\n", i, b.p);
    }
    for (int i = 0; i < v->nvalue_counts; i++) {
        sbuf_reset(&b);
        dump_label_vc(v, i, &b);
        fprintf(f, "    value count %d: %s\n", i, b.p);
    }

    fputs("  fact columns (source types)\n", f);
    tb = table_new(4, (const char *const[]){"name", "type", "scale", "pg oid"});
    table_align_right(tb, 2);
    table_align_right(tb, 3);
    for (int i = 0; i < v->nfact_columns; i++) {
        table_row(tb);
        table_cell(tb, "%s", v->fact_columns[i].name);
        table_cell(tb, "%s", dump_type_name(types[i].type));
        if (types[i].type == STORE_TYPE_NUMERIC)
            table_cell(tb, "%d", types[i].scale);
        else
            table_cell(tb, "%s", "");
        if (types[i].pg_oid)
            table_cell(tb, "%u", (unsigned)types[i].pg_oid);
    }
    table_print(tb, f, 4);
    table_free(tb);
    sbuf_free(&b);
}

int cmd_catalog(struct dump *d, const struct dump_args *a)
{
    (void)a;
    struct store_read *r;
    if (dump_read_begin(d, &r))
        return DUMP_FAILED;
    struct store_catalog cat;
    struct store_error err;
    if (store_read_catalog(r, &cat, &err)) {
        store_read_end(r);
        dump_error("cannot read the catalog of %s: %s", d->dir, err.message);
        return DUMP_FAILED;
    }
    int64_t now = dump_now_usec();
    const struct store_position *p = &cat.position;
    char t[TEXT_SMALL];
    if (d->json) {
        struct json *j = &d->j;
        json_object_begin(j);
        json_kv_str(j, "store", d->dir);
        json_kv_uint(j, "format_version", cat.format_version);
        if (cat.created_at) {
            text_time(t, cat.created_at, TIME_RFC3339);
            json_kv_str(j, "created_at", t);
        } else {
            json_kv_null(j, "created_at");
        }
        position_json(j, p, now);
        json_key(j, "views");
        json_array_begin(j);
        for (int v = 0; v < d->views->nviews; v++)
            view_json(j, &d->views->views[v], store_fact_types(d->store, v));
        json_array_end(j);
        json_object_end(j);
        json_finish(j);
    } else {
        FILE *f = d->out;
        fprintf(f, "store           %s\n", d->dir);
        fprintf(f, "format version  %u\n", (unsigned)cat.format_version);
        text_time(t, cat.created_at, TIME_PG);
        fprintf(f, "created at      %s\n", cat.created_at ? t : "unknown");
        lsn_text(p->lsn, t);
        fprintf(f, "position        %s\n", t);
        text_time(t, p->commit_time, TIME_PG);
        fprintf(f, "last commit     %s\n", p->commit_time ? t : "unknown");
        text_time(t, p->contact_time, TIME_PG);
        fprintf(f, "last contact    %s\n", p->contact_time ? t : "unknown");
        fprintf(f, "bytes behind    %llu\n", (unsigned long long)p->bytes_behind);
        int64_t lag = store_lag_usec(p, now);
        text_duration(t, lag);
        fprintf(f, "lag             %s\n", lag >= 0 ? t : "unknown");
        for (int v = 0; v < d->views->nviews; v++)
            view_human(f, &d->views->views[v], store_fact_types(d->store, v));
    }
    store_read_end(r);
    return DUMP_OK;
}
