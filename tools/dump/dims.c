/* dims.c -- `straum-dump dims`: the dense dim columns of every view's joins
 * (SPEC.md §4.3): per dim column, the keys with a dim row, how many of them
 * are NULL, the texts its dictionary has given ids, and the chunks stored
 * with their bytes and widest entry. Each chunk is opened and checked as
 * serve opens it. */
#include "tools/dump/dump.h"
#include "tools/dump/table.h"

#include <stdlib.h>

/* A dense column's name: the dim column, or the join's key for a join
 * that reads none (its one column of NULLs tells rows from no rows). */
static const char *column_name(const struct sql_join *j, int col)
{
    return j->ndim_columns > 1 ? j->dim_columns[col + 1] : j->dim_key;
}

static const char *join_name(const struct sql_join *j)
{
    return j->alias ? j->alias : j->table;
}

int cmd_dims(struct dump *d, const struct dump_args *a)
{
    (void)a;
    struct store_read *r;
    if (dump_read_begin(d, &r))
        return DUMP_FAILED;
    /* Read everything first: an error leaves no half table behind. */
    int n = 0;
    for (int v = 0; v < d->views->nviews; v++)
        for (int j = 0; j < d->views->views[v].njoins; j++)
            n += store_dense_columns(&d->views->views[v].joins[j]);
    struct store_dense_stats *st = xcalloc((size_t)n + 1, sizeof *st);
    struct store_error err;
    int at = 0, status = DUMP_OK;
    for (int v = 0; v < d->views->nviews && status == DUMP_OK; v++)
        for (int j = 0; j < d->views->views[v].njoins && status == DUMP_OK; j++)
            for (int c = 0; c < store_dense_columns(&d->views->views[v].joins[j]); c++)
                if (store_dense_stats(r, v, j, c, &st[at++], &err)) {
                    dump_error("%s", err.message);
                    status = DUMP_FAILED;
                    break;
                }
    store_read_end(r);
    if (status != DUMP_OK) {
        free(st);
        return status;
    }
    struct table *tb = d->json ? NULL
                               : table_new(9, (const char *const[]){"view", "join", "column", "rows",
                                                                    "nulls", "texts", "chunks",
                                                                    "bytes", "width"});
    for (int c = 3; tb && c < 9; c++)
        table_align_right(tb, c);
    struct json *js = &d->j;
    if (d->json) {
        json_object_begin(js);
        json_kv_str(js, "store", d->dir);
        json_key(js, "dims");
        json_array_begin(js);
    }
    at = 0;
    for (int v = 0; v < d->views->nviews; v++) {
        const struct sql_view *view = &d->views->views[v];
        for (int j = 0; j < view->njoins; j++) {
            const struct sql_join *join = &view->joins[j];
            for (int c = 0; c < store_dense_columns(join); c++, at++) {
                const struct store_dense_stats *s = &st[at];
                if (d->json) {
                    json_object_begin_inline(js);
                    json_kv_str(js, "view", view->name);
                    json_kv_str(js, "join", join_name(join));
                    json_kv_str(js, "column", column_name(join, c));
                    json_kv_uint(js, "rows", s->rows);
                    json_kv_uint(js, "nulls", s->nulls);
                    json_kv_uint(js, "texts", s->texts);
                    json_kv_uint(js, "chunks", s->chunks);
                    json_kv_uint(js, "bytes", s->bytes);
                    json_kv_uint(js, "width", s->width_max);
                    json_object_end(js);
                    continue;
                }
                table_row(tb);
                table_cell(tb, "%s", view->name);
                table_cell(tb, "%s", join_name(join));
                table_cell(tb, "%s", column_name(join, c));
                table_cell(tb, "%llu", (unsigned long long)s->rows);
                table_cell(tb, "%llu", (unsigned long long)s->nulls);
                table_cell(tb, "%llu", (unsigned long long)s->texts);
                table_cell(tb, "%llu", (unsigned long long)s->chunks);
                table_cell(tb, "%llu", (unsigned long long)s->bytes);
                table_cell(tb, "%u", s->width_max);
            }
        }
    }
    if (d->json) {
        json_array_end(js);
        json_object_end(js);
        json_finish(js);
    } else {
        table_print(tb, d->out, 0);
        table_free(tb);
    }
    free(st);
    return DUMP_OK;
}
