/* cells.c -- `straum-dump cells`: the cells of one view and width, decoded
 * and rendered the way a person reads them.
 *
 * One line per cell, in time order (segments come in span order and cells
 * inside a block are sorted by bucket, then keys):
 *
 *   <bucket>  <key>=<value> ...  <accumulator>=<value> ...
 *
 * Keys are the view's key and dim columns in SELECT order, then any bound
 * cell key (a join column that is not selected). Dim columns are looked up
 * in the projection by the cell's join key, as serve does at ask time, so
 * this shows the dim row the store holds now. */
#include "tools/dump/dump.h"

#include <stdlib.h>
#include <string.h>

/* One key column of the output. */
struct key_item {
    const char *name;
    int cell_key;   /* the cell key rendered, or -1 for a dim column */
    int join;       /* dim columns: the join */
    int dim_column; /* dim columns: index into the join's dim_columns */
};

/* What rendering a view's cells needs, worked out once. */
struct cell_view {
    int view;
    const struct sql_view *v;
    const struct store_column_type *types;
    struct key_item *items;
    int nitems;
    int *join_key;                     /* per join: cell key of its fact column, or -1 */
    struct store_dim_value **dim_rows; /* per join: ndim_columns - 1 values */
    int *dim_state;                    /* per join, per cell: -1 unread, 0 no row, 1 row */
    char **count_labels, **sum_labels, **vc_labels;
};

static char *label(void (*fn)(const struct sql_view *, int, struct sbuf *),
                   const struct sql_view *v, int i)
{
    struct sbuf b = {0};
    fn(v, i, &b);
    return b.p;
}

static void cell_view_init(struct cell_view *cv, struct dump *d, int view)
{
    const struct sql_view *v = &d->views->views[view];
    memset(cv, 0, sizeof *cv);
    cv->view = view;
    cv->v = v;
    cv->types = store_fact_types(d->store, view);
    cv->items = xcalloc((size_t)(v->ncolumns + v->ncell_keys), sizeof *cv->items);
    bool *shown = xcalloc((size_t)v->ncell_keys, sizeof *shown);
    for (int i = 0; i < v->ncolumns; i++) {
        const struct sql_view_column *c = &v->columns[i];
        if (c->kind == SQL_COLUMN_FACT_KEY) {
            cv->items[cv->nitems++] = (struct key_item){c->name, c->cell_key, -1, -1};
            if (c->cell_key >= 0 && c->cell_key < v->ncell_keys)
                shown[c->cell_key] = true;
        } else if (c->kind == SQL_COLUMN_DIM) {
            cv->items[cv->nitems++] = (struct key_item){c->name, -1, c->join, c->dim_column};
        }
    }
    for (int k = 0; k < v->ncell_keys; k++)
        if (!shown[k])
            cv->items[cv->nitems++] =
                (struct key_item){v->fact_columns[v->cell_keys[k]].name, k, -1, -1};
    free(shown);

    int nj = v->njoins;
    cv->join_key = xcalloc((size_t)nj, sizeof *cv->join_key);
    cv->dim_rows = xcalloc((size_t)nj, sizeof *cv->dim_rows);
    cv->dim_state = xcalloc((size_t)nj, sizeof *cv->dim_state);
    for (int j = 0; j < nj; j++) {
        cv->join_key[j] = -1;
        for (int k = 0; k < v->ncell_keys; k++)
            if (v->cell_keys[k] == v->joins[j].fact_column)
                cv->join_key[j] = k;
        cv->dim_rows[j] = xcalloc((size_t)v->joins[j].ndim_columns, sizeof **cv->dim_rows);
    }
    cv->count_labels = xcalloc((size_t)v->ncounts, sizeof(char *));
    for (int i = 0; i < v->ncounts; i++)
        cv->count_labels[i] = label(dump_label_count, v, i);
    cv->sum_labels = xcalloc((size_t)v->nsums, sizeof(char *));
    for (int i = 0; i < v->nsums; i++)
        cv->sum_labels[i] = label(dump_label_sum, v, i);
    cv->vc_labels = xcalloc((size_t)v->nvalue_counts, sizeof(char *));
    for (int i = 0; i < v->nvalue_counts; i++)
        cv->vc_labels[i] = label(dump_label_vc, v, i);
}

static void free_labels(char **labels, int n)
{
    for (int i = 0; i < n; i++)
        free(labels[i]);
    free(labels);
}

static void cell_view_free(struct cell_view *cv)
{
    for (int j = 0; j < cv->v->njoins; j++)
        free(cv->dim_rows[j]);
    free(cv->dim_rows);
    free(cv->dim_state);
    free(cv->join_key);
    free(cv->items);
    free_labels(cv->count_labels, cv->v->ncounts);
    free_labels(cv->sum_labels, cv->v->nsums);
    free_labels(cv->vc_labels, cv->v->nvalue_counts);
}

/* ---- Rendering ----------------------------------------------------------------- */

/* Reads the dim row of join j for cell i if not read yet: 0, or -1 (err). */
static int load_dim_row(struct cell_view *cv, struct store_read *r, const struct store_rows *cb,
                        uint32_t i, int j, struct store_error *err)
{
    if (cv->dim_state[j] >= 0)
        return 0;
    cv->dim_state[j] = 0;
    int k = cv->join_key[j];
    if (k < 0 || cb->keys[k][i] == STORE_NULL)
        return 0;
    const struct sql_join *jn = &cv->v->joins[j];
    int rc = store_projection_get(r, cv->view, j, cb->keys[k][i], cv->dim_rows[j],
                                  jn->ndim_columns - 1, err);
    if (rc < 0)
        return -1;
    cv->dim_state[j] = rc;
    return 0;
}

/* A dim column's value for cell i: NULL (no row), or text. */
static const struct store_dim_value *dim_value(const struct cell_view *cv, int j, int dim_column)
{
    if (cv->dim_state[j] != 1 || dim_column < 1 || dim_column >= cv->v->joins[j].ndim_columns)
        return NULL;
    return &cv->dim_rows[j][dim_column - 1];
}

/* The cell key of a key item, resolving a dim column that is the join key
 * itself (dim_columns[0]) to the fact key it equals. */
static int item_cell_key(const struct cell_view *cv, const struct key_item *it)
{
    if (it->cell_key >= 0)
        return it->cell_key;
    return it->dim_column == 0 ? cv->join_key[it->join] : -1;
}

static void render_human(struct cell_view *cv, struct store_read *r, const struct store_rows *cb,
                         uint32_t i, int64_t bucket, struct sbuf *b)
{
    const struct sql_view *v = cv->v;
    char t[TEXT_SMALL];
    text_time(t, bucket, TIME_PG);
    sbuf_puts(b, t);
    sbuf_puts(b, " ");
    for (int n = 0; n < cv->nitems; n++) {
        const struct key_item *it = &cv->items[n];
        sbuf_printf(b, " %s=", it->name);
        int k = item_cell_key(cv, it);
        if (k >= 0) {
            int col = v->cell_keys[k];
            dump_render_code(r, cv->view, col, &cv->types[col], cb->keys[k][i], b);
        } else {
            const struct store_dim_value *dv = dim_value(cv, it->join, it->dim_column);
            if (!dv || dv->is_null)
                sbuf_puts(b, "NULL");
            else
                sbuf_add_display(b, dv->text, dv->len);
        }
    }
    sbuf_puts(b, " ");
    for (int k = 0; k < v->ncounts; k++)
        sbuf_printf(b, " %s=%lld", cv->count_labels[k], (long long)cb->counts[k][i]);
    for (int k = 0; k < v->nsums; k++) {
        sbuf_printf(b, " %s=", cv->sum_labels[k]);
        if (cb->sum_real[k]) {
            sbuf_printf(b, "%.17g", format_load_f64(cb->sums[k], i));
        } else {
            const struct store_column_type *st = &cv->types[v->sums[k].fact_column];
            sbuf_scaled_i128(b, format_load_i128(cb->sums[k], i),
                             st->type == STORE_TYPE_NUMERIC ? st->scale : 0);
        }
    }
    for (int k = 0; k < v->nvalue_counts; k++) {
        int col = v->value_counts[k].fact_column;
        sbuf_printf(b, " %s={", cv->vc_labels[k]);
        for (int64_t run = cb->vc_off[k][i]; run < cb->vc_off[k][i + 1]; run++) {
            if (run > cb->vc_off[k][i])
                sbuf_puts(b, ", ");
            dump_render_code(r, cv->view, col, &cv->types[col], cb->vc_codes[k][run], b);
            sbuf_printf(b, ": %lld", (long long)cb->vc_rows[k][run]);
        }
        sbuf_puts(b, "}");
    }
}

static void render_json(struct cell_view *cv, struct store_read *r, struct json *j,
                        const struct store_rows *cb, uint32_t i, int64_t bucket)
{
    const struct sql_view *v = cv->v;
    char t[TEXT_SMALL];
    json_object_begin_inline(j);
    text_time(t, bucket, TIME_RFC3339);
    json_kv_str(j, "bucket", t);
    json_key(j, "keys");
    json_object_begin(j);
    for (int n = 0; n < cv->nitems; n++) {
        const struct key_item *it = &cv->items[n];
        json_key(j, it->name);
        int k = item_cell_key(cv, it);
        if (k >= 0) {
            int col = v->cell_keys[k];
            dump_json_code(j, r, cv->view, col, &cv->types[col], cb->keys[k][i]);
        } else {
            const struct store_dim_value *dv = dim_value(cv, it->join, it->dim_column);
            if (!dv || dv->is_null)
                json_null(j);
            else
                json_strn(j, dv->text, dv->len);
        }
    }
    json_object_end(j);
    json_key(j, "counts");
    json_object_begin(j);
    for (int k = 0; k < v->ncounts; k++)
        json_kv_int(j, cv->count_labels[k], cb->counts[k][i]);
    json_object_end(j);
    json_key(j, "sums");
    json_object_begin(j);
    struct sbuf b = {0};
    for (int k = 0; k < v->nsums; k++) {
        json_key(j, cv->sum_labels[k]);
        if (cb->sum_real[k]) {
            json_double(j, format_load_f64(cb->sums[k], i));
        } else {
            /* Exact sums as strings: 128 bits do not fit a JSON number
             * that every parser reads exactly. */
            const struct store_column_type *st = &cv->types[v->sums[k].fact_column];
            sbuf_reset(&b);
            sbuf_scaled_i128(&b, format_load_i128(cb->sums[k], i),
                             st->type == STORE_TYPE_NUMERIC ? st->scale : 0);
            json_strn(j, b.p, b.len);
        }
    }
    sbuf_free(&b);
    json_object_end(j);
    json_key(j, "value_counts");
    json_object_begin(j);
    for (int k = 0; k < v->nvalue_counts; k++) {
        int col = v->value_counts[k].fact_column;
        json_key(j, cv->vc_labels[k]);
        json_array_begin(j);
        for (int64_t run = cb->vc_off[k][i]; run < cb->vc_off[k][i + 1]; run++) {
            json_array_begin(j);
            dump_json_code(j, r, cv->view, col, &cv->types[col], cb->vc_codes[k][run]);
            json_int(j, cb->vc_rows[k][run]);
            json_array_end(j);
        }
        json_array_end(j);
    }
    json_object_end(j);
    json_object_end(j);
}

/* ---- The command ----------------------------------------------------------------- */

static int parse_time(const char *opt, const char *text, int64_t *usec)
{
    bool has_offset;
    char why[200];
    if (!sql_parse_timestamp(text, usec, &has_offset, why, sizeof why)) {
        dump_error("%s: %s", opt, why);
        return -1;
    }
    return 0; /* without an offset the text was read as UTC, as documented */
}

int cmd_cells(struct dump *d, const struct dump_args *a)
{
    int view = dump_find_view(d, a->pos[0]);
    if (view < 0)
        return DUMP_USAGE;
    const struct sql_view *v = &d->views->views[view];
    if (!a->width) {
        dump_error("cells needs --width W (an index such as 0, or a width such as \"1 hour\")");
        return DUMP_USAGE;
    }
    int width = dump_find_width(v, a->width);
    if (width < 0)
        return DUMP_USAGE;
    int64_t from = INT64_MIN, to = INT64_MAX, limit = 100;
    if ((a->from && parse_time("--from", a->from, &from)) ||
        (a->to && parse_time("--to", a->to, &to)))
        return DUMP_USAGE;
    if (from >= to) {
        dump_error("--from must be before --to");
        return DUMP_USAGE;
    }
    if (a->limit && !text_parse_count(a->limit, &limit)) {
        dump_error("--limit needs a whole number >= 0 (0 shows every cell), not \"%s\"",
                   a->limit);
        return DUMP_USAGE;
    }

    struct store_read *r;
    if (dump_read_begin(d, &r))
        return DUMP_FAILED;
    struct cell_view cv;
    cell_view_init(&cv, d, view);
    struct json *j = &d->j;
    char t[TEXT_SMALL];
    if (d->json) {
        json_object_begin(j);
        json_kv_str(j, "view", v->name);
        json_kv_int(j, "width_index", width);
        text_width(t, v->widths[width]);
        json_kv_str(j, "width", t);
        if (from != INT64_MIN) {
            text_time(t, from, TIME_RFC3339);
            json_kv_str(j, "from", t);
        } else {
            json_kv_null(j, "from");
        }
        if (to != INT64_MAX) {
            text_time(t, to, TIME_RFC3339);
            json_kv_str(j, "to", t);
        } else {
            json_kv_null(j, "to");
        }
        json_kv_int(j, "limit", limit);
        json_key(j, "cells");
        json_array_begin(j);
    }

    struct store_segment_iter it;
    struct store_segment seg;
    struct store_error err;
    struct sbuf line = {0};
    int status = DUMP_OK;
    bool truncated = false;
    int64_t shown = 0;
    if (store_segments_begin(r, view, width, from, to, &it, &err)) {
        dump_error("%s", err.message);
        status = DUMP_FAILED;
    }
    it.merged = true; /* the cells as they stand: base and deltas merged */
    int rc;
    int64_t span;
    while (status == DUMP_OK && !truncated &&
           (rc = dump_segments_next(&it, &seg, &span, &err)) != 0) {
        if (rc < 0) {
            dump_error("%s", err.message);
            status = DUMP_FAILED;
            break;
        }
        /* Every cell of the block, through the store's cursor, which checks
         * what indexing relies on (bucket indexes inside the span,
         * value-count offsets inside their runs): a damaged block is an
         * error here, never an out-of-bounds read. */
        struct store_block b;
        struct store_rows cb;
        const struct store_want every = {.whole = true, .every = true};
        store_segment_block(r, &seg, 0, &b);
        if (store_rows_load(&b, &every, &cb, &err)) {
            sbuf_reset(&line);
            dump_segment_name(v, width, seg.span_start, &line);
            dump_error("segment of %s: %s", line.p, err.message);
            store_rows_free(v, &cb);
            status = DUMP_FAILED;
            break;
        }
        for (uint32_t i = 0; i < cb.n && status == DUMP_OK; i++) {
            int64_t bucket = seg.span_start + cb.bucket[i] * v->widths[width];
            if (bucket < from || bucket >= to)
                continue;
            if (limit && shown == limit) {
                truncated = true;
                break;
            }
            for (int jn = 0; jn < v->njoins; jn++)
                cv.dim_state[jn] = -1;
            for (int jn = 0; jn < v->njoins && status == DUMP_OK; jn++)
                if (load_dim_row(&cv, r, &cb, i, jn, &err)) {
                    dump_error("%s", err.message);
                    status = DUMP_FAILED;
                }
            if (status != DUMP_OK)
                break;
            if (d->json) {
                render_json(&cv, r, j, &cb, i, bucket);
            } else {
                sbuf_reset(&line);
                render_human(&cv, r, &cb, i, bucket, &line);
                fprintf(d->out, "%s\n", line.p);
            }
            shown++;
        }
        store_rows_free(v, &cb);
    }
    store_segments_end(&it);
    if (d->json) {
        json_array_end(j);
        json_kv_int(j, "shown", shown);
        json_kv_bool(j, "truncated", truncated);
        json_object_end(j);
        json_finish(j);
    } else if (truncated) {
        /* On stderr, so stdout stays exactly one line per cell. */
        dump_error("stopped after %lld cells (--limit); --limit 0 shows them all",
                   (long long)shown);
    }
    sbuf_free(&line);
    cell_view_free(&cv);
    store_read_end(r);
    return status;
}
