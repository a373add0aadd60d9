/* blocks.c -- `straum-dump stats` and `straum-dump segments`: the store seen
 * as segment blocks (their sizes, cells and column encodings), read from
 * block headers and directories only, never decoding column data, so both
 * stay fast on a large store. */
#include "tools/dump/dump.h"
#include "tools/dump/table.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

struct totals {
    uint64_t segments, cells, bytes, vc_entries;
};

static void add_totals(struct totals *to, const struct totals *from)
{
    to->segments += from->segments;
    to->cells += from->cells;
    to->bytes += from->bytes;
    to->vc_entries += from->vc_entries;
}

static double per_cell(const struct totals *t)
{
    return t->cells ? (double)t->bytes / (double)t->cells : 0.0;
}

/* Value-count entries of a block: the lengths of its VC_VALUES columns. */
static uint64_t vc_entries(const struct format_block *b)
{
    uint64_t n = 0;
    for (int i = 0; i < b->ncolumns; i++) {
        struct format_column_info ci = {0};
        format_block_column(b, i, &ci);
        if (ci.role == STORE_ROLE_VC_VALUES)
            n += ci.n;
    }
    return n;
}

/* Sums one view and width; -1 after printing the error. */
static int width_totals(struct dump *d, struct store_read *r, int view, int width,
                        struct totals *t)
{
    const struct sql_view *v = &d->views->views[view];
    struct store_segment_iter it;
    struct store_segment seg;
    struct store_error err;
    memset(t, 0, sizeof *t);
    if (store_segments_begin(r, view, width, INT64_MIN, INT64_MAX, &it, &err)) {
        dump_error("%s", err.message);
        return -1;
    }
    int rc;
    int64_t span;
    while ((rc = dump_segments_next(&it, &seg, &span, &err)) == 1) {
        t->segments++;
        t->cells += seg.block.info.ncells;
        t->bytes += seg.len;
        t->vc_entries += vc_entries(&seg.block);
        for (int i = 0; i < seg.ndeltas; i++)
            t->bytes += seg.deltas[i].len;
    }
    store_segments_end(&it);
    if (rc < 0) {
        char wt[TEXT_SMALL];
        text_width(wt, v->widths[width]);
        dump_error("view %s, width %s: %s (straum-dump verify lists every broken segment)",
                   v->name, wt, err.message);
        return -1;
    }
    return 0;
}

static void totals_json(struct json *j, const struct totals *t)
{
    json_kv_uint(j, "segments", t->segments);
    json_kv_uint(j, "cells", t->cells);
    json_kv_uint(j, "bytes", t->bytes);
    json_kv_double(j, "bytes_per_cell", round(per_cell(t) * 100) / 100);
    json_kv_uint(j, "value_count_entries", t->vc_entries);
}

static void totals_row(struct table *tb, const char *view, const char *width,
                       const struct totals *t)
{
    table_row(tb);
    table_cell(tb, "%s", view);
    table_cell(tb, "%s", width);
    table_cell(tb, "%llu", (unsigned long long)t->segments);
    table_cell(tb, "%llu", (unsigned long long)t->cells);
    table_cell(tb, "%llu", (unsigned long long)t->bytes);
    table_cell(tb, "%.2f", per_cell(t));
    table_cell(tb, "%llu", (unsigned long long)t->vc_entries);
}

int cmd_stats(struct dump *d, const struct dump_args *a)
{
    (void)a;
    struct store_read *r;
    if (dump_read_begin(d, &r))
        return DUMP_FAILED;
    struct store_error err;
    uint64_t file_bytes, map_bytes;
    if (store_size(d->store, &file_bytes, &map_bytes, &err)) {
        store_read_end(r);
        dump_error("%s", err.message);
        return DUMP_FAILED;
    }

    /* Everything is summed before anything is printed, so a read error
     * never leaves half a table or half a JSON document behind. */
    int nv = d->views->nviews;
    struct totals **per = xcalloc((size_t)nv, sizeof *per);
    struct totals *view_total = xcalloc((size_t)nv, sizeof *view_total);
    struct totals all = {0};
    int status = DUMP_OK;
    for (int v = 0; v < nv && status == DUMP_OK; v++) {
        const struct sql_view *view = &d->views->views[v];
        per[v] = xcalloc((size_t)view->nwidths, sizeof **per);
        for (int w = 0; w < view->nwidths && status == DUMP_OK; w++) {
            if (width_totals(d, r, v, w, &per[v][w]))
                status = DUMP_FAILED;
            add_totals(&view_total[v], &per[v][w]);
        }
        add_totals(&all, &view_total[v]);
    }
    store_read_end(r);

    char wt[TEXT_SMALL];
    if (status != DUMP_OK) {
        /* nothing printed */
    } else if (d->json) {
        struct json *j = &d->j;
        json_object_begin(j);
        json_kv_str(j, "store", d->dir);
        json_kv_uint(j, "file_bytes", file_bytes);
        json_kv_uint(j, "map_bytes", map_bytes);
        json_key(j, "views");
        json_array_begin(j);
        for (int v = 0; v < nv; v++) {
            const struct sql_view *view = &d->views->views[v];
            json_object_begin(j);
            json_kv_str(j, "name", view->name);
            json_key(j, "widths");
            json_array_begin(j);
            for (int w = 0; w < view->nwidths; w++) {
                json_object_begin_inline(j);
                json_kv_int(j, "index", w);
                text_width(wt, view->widths[w]);
                json_kv_str(j, "width", wt);
                totals_json(j, &per[v][w]);
                json_object_end(j);
            }
            json_array_end(j);
            json_key(j, "total");
            json_object_begin_inline(j);
            totals_json(j, &view_total[v]);
            json_object_end(j);
            json_object_end(j);
        }
        json_array_end(j);
        json_key(j, "total");
        json_object_begin_inline(j);
        totals_json(j, &all);
        json_object_end(j);
        json_object_end(j);
        json_finish(j);
    } else {
        struct table *tb = table_new(7, (const char *const[]){"view", "width", "segments", "cells",
                                                              "bytes", "bytes/cell",
                                                              "vc entries"});
        for (int c = 2; c < 7; c++)
            table_align_right(tb, c);
        for (int v = 0; v < nv; v++) {
            const struct sql_view *view = &d->views->views[v];
            for (int w = 0; w < view->nwidths; w++) {
                text_width(wt, view->widths[w]);
                totals_row(tb, view->name, wt, &per[v][w]);
            }
            totals_row(tb, view->name, "total", &view_total[v]);
        }
        totals_row(tb, "all views", "", &all);
        table_print(tb, d->out, 0);
        table_free(tb);
        fprintf(d->out, "store file: %llu bytes (map %llu bytes)\n",
                (unsigned long long)file_bytes, (unsigned long long)map_bytes);
    }
    for (int v = 0; v < nv; v++)
        free(per[v]);
    free(per);
    free(view_total);
    return status;
}

/* ---- segments ---------------------------------------------------------------- */

static void segment_json(struct json *j, const struct sql_view *v, const struct store_segment *s)
{
    char t[TEXT_SMALL];
    json_object_begin(j);
    json_kv_int(j, "width_index", s->width);
    text_width(t, v->widths[s->width]);
    json_kv_str(j, "width", t);
    text_time(t, s->span_start, TIME_RFC3339);
    json_kv_str(j, "span_start", t);
    text_time(t, dump_span_end(v, s->width, s->span_start), TIME_RFC3339);
    json_kv_str(j, "span_end", t);
    json_kv_uint(j, "cells", s->block.info.ncells);
    json_kv_uint(j, "bytes", s->len);
    json_key(j, "deltas");
    json_array_begin(j);
    for (int i = 0; i < s->ndeltas; i++) {
        json_object_begin_inline(j);
        json_kv_uint(j, "cells", s->deltas[i].block.info.ncells);
        json_kv_uint(j, "bytes", s->deltas[i].len);
        json_object_end(j);
    }
    json_array_end(j);
    json_key(j, "columns");
    json_array_begin(j);
    for (int i = 0; i < s->block.ncolumns; i++) {
        struct format_column_info ci = {0};
        format_block_column(&s->block, i, &ci);
        json_object_begin_inline(j);
        json_kv_str(j, "role", dump_role_name(ci.role));
        json_kv_int(j, "index", ci.index);
        json_kv_str(j, "codec", format_codec_name(ci.codec));
        json_kv_int(j, "bits", ci.bits);
        json_kv_uint(j, "n", ci.n);
        json_kv_uint(j, "bytes", ci.length);
        int shared = format_block_shares(&s->block, i);
        if (shared >= 0)
            json_kv_int(j, "shares_bytes_of", shared);
        json_object_end(j);
    }
    json_array_end(j);
    json_object_end(j);
}

static void segment_human(FILE *f, const struct sql_view *v, const struct store_segment *s)
{
    char wt[TEXT_SMALL], from[TEXT_SMALL], to[TEXT_SMALL];
    text_width(wt, v->widths[s->width]);
    text_time(from, s->span_start, TIME_PG);
    text_time(to, dump_span_end(v, s->width, s->span_start), TIME_PG);
    fprintf(f, "%s  %s .. %s  cells %u  bytes %zu", wt, from, to,
            (unsigned)s->block.info.ncells, s->len);
    for (int i = 0; i < s->ndeltas; i++)
        fprintf(f, "  delta %d: cells %u bytes %zu", i + 1,
                (unsigned)s->deltas[i].block.info.ncells, s->deltas[i].len);
    fputs("  columns:", f);
    for (int i = 0; i < s->block.ncolumns; i++) {
        struct format_column_info ci = {0};
        format_block_column(&s->block, i, &ci);
        if (format_block_shares(&s->block, i) >= 0)
            fprintf(f, "%s %s#%u %s shared", i ? "," : "", dump_role_name(ci.role),
                    (unsigned)ci.index, format_codec_name(ci.codec));
        else
            fprintf(f, "%s %s#%u %s %u", i ? "," : "", dump_role_name(ci.role),
                    (unsigned)ci.index, format_codec_name(ci.codec), (unsigned)ci.length);
    }
    fputc('\n', f);
}

int cmd_segments(struct dump *d, const struct dump_args *a)
{
    int view = dump_find_view(d, a->pos[0]);
    if (view < 0)
        return DUMP_USAGE;
    const struct sql_view *v = &d->views->views[view];
    int first = 0, last = v->nwidths - 1;
    if (a->width) {
        if ((first = dump_find_width(v, a->width)) < 0)
            return DUMP_USAGE;
        last = first;
    }
    struct store_read *r;
    if (dump_read_begin(d, &r))
        return DUMP_FAILED;
    struct json *j = &d->j;
    if (d->json) {
        json_object_begin(j);
        json_kv_str(j, "view", v->name);
        json_key(j, "segments");
        json_array_begin(j);
    }
    /* A block that does not open is reported in place and the walk goes on:
     * this is the command to look at a damaged store with. */
    int status = DUMP_OK;
    for (int w = first; w <= last; w++) {
        struct store_segment_iter it;
        struct store_segment seg;
        struct store_error err;
        if (store_segments_begin(r, view, w, INT64_MIN, INT64_MAX, &it, &err)) {
            dump_error("%s", err.message);
            status = DUMP_FAILED;
            break;
        }
        int rc;
        int64_t span;
        while ((rc = dump_segments_next(&it, &seg, &span, &err)) != 0) {
            if (rc < 0) {
                dump_error("%s", err.message);
                status = DUMP_FAILED;
                if (rc == -2)
                    break;
                continue;
            }
            if (d->json)
                segment_json(j, v, &seg);
            else
                segment_human(d->out, v, &seg);
        }
        store_segments_end(&it);
    }
    if (d->json) {
        json_array_end(j);
        json_kv_bool(j, "complete", status == DUMP_OK);
        json_object_end(j);
        json_finish(j);
    }
    store_read_end(r);
    return status;
}
