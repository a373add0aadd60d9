/* views.c -- GET /views: what each view keeps, as JSON: its widths with
 * their cell counts (read from block headers, not cells: the cells as
 * stored, a base's and its delta blocks', so a cell changed since its
 * segment was last folded counts once per block holding it), keys, dim
 * columns and measures; and the views as relations (their columns and
 * types) for the PostgreSQL catalog. */
#include "engine/internal.h"

#include <stdio.h>
#include <ctype.h>
#include <stdlib.h>
#include <strings.h>
#include <string.h>

static int count_cells(struct store_read *r, int view, int width, int64_t *cells,
                       struct ask_error *err)
{
    struct store_segment_iter it;
    struct store_segment s;
    struct store_error serr;
    *cells = 0;
    if (store_segments_begin(r, view, width, INT64_MIN, INT64_MAX, &it, &serr))
        return ask_fail(err, 500, "corrupt_store", "%s", serr.message);
    int got;
    while ((got = store_segments_next(&it, &s, &serr)) == 1) {
        *cells += s.block.info.ncells;
        for (int d = 0; d < s.ndeltas; d++)
            *cells += s.deltas[d].block.info.ncells;
    }
    store_segments_end(&it);
    return got < 0 ? ask_fail(err, 500, "corrupt_store", "%s", serr.message) : 0;
}

static void write_name_list(struct buf *out, const struct sql_view *v, enum sql_column_kind kind)
{
    bool first = true;
    for (int c = 0; c < v->ncolumns; c++) {
        if (v->columns[c].kind != kind)
            continue;
        buf_puts(out, first ? "" : ",");
        first = false;
        buf_json_string(out, v->columns[c].name, strlen(v->columns[c].name));
    }
}

static void write_measures(struct buf *out, const struct sql_view *v)
{
    bool first = true;
    for (int c = 0; c < v->ncolumns; c++) {
        const struct sql_view_column *vc = &v->columns[c];
        if (vc->kind != SQL_COLUMN_MEASURE)
            continue;
        const struct sql_measure *m = &vc->measure;
        buf_puts(out, first ? "{\"name\":" : ",{\"name\":");
        first = false;
        buf_json_string(out, vc->name, strlen(vc->name));
        buf_puts(out, ",\"aggregate\":");
        buf_json_string(out, sql_agg_label(m->agg), strlen(sql_agg_label(m->agg)));
        buf_puts(out, ",\"column\":");
        if (m->fact_column >= 0)
            buf_json_string(out, v->fact_columns[m->fact_column].name,
                            strlen(v->fact_columns[m->fact_column].name));
        else
            buf_puts(out, "null");
        if (m->fraction_text)
            buf_printf(out, ",\"fraction\":%s", m->fraction_text);
        buf_puts(out, ",\"filter\":");
        if (m->filter >= 0) {
            char text[2048];
            sql_filter_format(v, v->filters[m->filter], text, sizeof text);
            buf_json_string(out, text, strlen(text));
        } else {
            buf_puts(out, "null");
        }
        buf_puts(out, "}");
    }
}

static void write_dims(struct buf *out, const struct sql_view *v)
{
    bool first = true;
    for (int c = 0; c < v->ncolumns; c++) {
        const struct sql_view_column *vc = &v->columns[c];
        if (vc->kind != SQL_COLUMN_DIM)
            continue;
        const struct sql_join *j = &v->joins[vc->join];
        buf_puts(out, first ? "{\"name\":" : ",{\"name\":");
        first = false;
        buf_json_string(out, vc->name, strlen(vc->name));
        buf_puts(out, ",\"table\":");
        buf_json_string(out, j->table, strlen(j->table));
        buf_puts(out, ",\"column\":");
        buf_json_string(out, j->dim_columns[vc->dim_column], strlen(j->dim_columns[vc->dim_column]));
        buf_puts(out, "}");
    }
}

int engine_views(struct engine *e, struct buf *out, struct ask_error *err)
{
    const struct sql_view_list *views = store_views(e->store);
    struct store_read *r;
    struct store_error serr;
    if (store_read_begin(e->store, &r, &serr))
        return ask_fail(err, 503, "store_unavailable", "%s", serr.message);
    int rc = 0;
    buf_puts(out, "{\"views\":[");
    for (int i = 0; rc == 0 && i < views->nviews; i++) {
        const struct sql_view *v = &views->views[i];
        buf_puts(out, i ? ",{\"name\":" : "{\"name\":");
        buf_json_string(out, v->name, strlen(v->name));
        buf_puts(out, ",\"fact_table\":");
        buf_json_string(out, v->fact_table, strlen(v->fact_table));
        buf_puts(out, ",\"widths\":[");
        for (int w = 0; rc == 0 && w < v->nwidths; w++) {
            char text[64];
            int64_t cells;
            sql_format_interval(v->widths[w], text, sizeof text);
            rc = count_cells(r, i, w, &cells, err);
            buf_printf(out, "%s{\"width\":\"%s\",\"seconds\":%lld,\"cells\":%lld}", w ? "," : "",
                       text, (long long)(v->widths[w] / 1000000), (long long)cells);
        }
        buf_puts(out, "],\"keys\":[");
        write_name_list(out, v, SQL_COLUMN_FACT_KEY);
        buf_puts(out, "],\"dim_columns\":[");
        write_dims(out, v);
        buf_puts(out, "],\"measures\":[");
        write_measures(out, v);
        buf_puts(out, "]}");
    }
    buf_puts(out, "]}");
    store_read_end(r);
    if (rc == 0 && out->failed)
        rc = ask_fail(err, 500, "internal", "out of memory");
    return rc;
}

int engine_relations(struct engine *e, struct engine_relation **out, int *n,
                     struct ask_error *err)
{
    const struct sql_view_list *views = store_views(e->store);
    /* One block: the relations, every view's columns, then the names. */
    size_t ncols = 0, names = 0;
    for (int i = 0; i < views->nviews; i++) {
        const struct sql_view *v = &views->views[i];
        names += strlen(v->name) + 1 + 1 + strlen(v->source) + 1;
        ncols += (size_t)v->ncolumns;
        for (int c = 0; c < v->ncolumns; c++)
            names += strlen(v->columns[c].name) + 1;
    }
    size_t rel_bytes = sizeof **out * ((size_t)views->nviews + 1);
    char *block = malloc(rel_bytes + sizeof(struct answer_column) * (ncols + 1) + names);
    if (!block)
        return ask_fail(err, 500, "internal", "out of memory");
    struct engine_relation *rels = (struct engine_relation *)block;
    struct answer_column *col = (struct answer_column *)(block + rel_bytes);
    char *name = (char *)(col + ncols + 1);
    for (int i = 0; i < views->nviews; i++) {
        const struct sql_view *v = &views->views[i];
        const struct store_column_type *types = store_fact_types(e->store, i);
        size_t len = strlen(v->name) + 1;
        rels[i] = (struct engine_relation){memcpy(name, v->name, len), col, v->ncolumns, NULL};
        name += len;
        /* From its SELECT, after a space, as PostgreSQL's pg_get_viewdef
         * answers one. */
        const char *sel = v->source;
        for (const char *p = v->source; *p; p++)
            if (!strncasecmp(p, "select", 6) && (p == v->source || isspace((unsigned char)p[-1]))) {
                sel = p;
                break;
            }
        len = strlen(sel) + 1;
        rels[i].definition = name;
        *name++ = ' ';
        memcpy(name, sel, len);
        name += len;
        for (int c = 0; c < v->ncolumns; c++, col++) {
            len = strlen(v->columns[c].name) + 1;
            *col = (struct answer_column){memcpy(name, v->columns[c].name, len),
                                          answer_view_column_oid(&v->columns[c], types)};
            name += len;
        }
    }
    *out = rels;
    *n = views->nviews;
    return 0;
}
