/* verify.c -- `straum-dump verify` and `straum-dump copy`: checking a store
 * end to end, and shipping a compacted copy of it.
 *
 * verify walks every segment of every view and width in one snapshot and
 * keeps going past damage, so one run lists every broken segment (by view,
 * width and span, the names `segments` and `cells` take); then it checks
 * every join's dense dim columns (store_verify_dense). */
#include "tools/dump/dump.h"

#include <stdio.h>
#include <string.h>

struct verify_state {
    struct dump *d;
    uint64_t segments, cells, dim_rows, broken;
};

/* Reports one broken segment (the catalog when v is NULL, a view's dim
 * columns when width is -1). */
static void report_broken(struct verify_state *st, const struct sql_view *v, int width,
                          int64_t span, const char *message)
{
    struct dump *d = st->d;
    char t[TEXT_SMALL];
    st->broken++;
    if (d->json) {
        struct json *j = &d->j;
        json_object_begin_inline(j);
        json_kv_str(j, "view", v ? v->name : NULL);
        if (v && width >= 0) {
            json_kv_int(j, "width_index", width);
            text_width(t, v->widths[width]);
            json_kv_str(j, "width", t);
        }
        if (v && width >= 0 && span != INT64_MIN) {
            text_time(t, span, TIME_RFC3339);
            json_kv_str(j, "span_start", t);
            text_time(t, dump_span_end(v, width, span), TIME_RFC3339);
            json_kv_str(j, "span_end", t);
        }
        json_kv_str(j, "error", message);
        json_object_end(j);
        return;
    }
    struct sbuf b = {0};
    if (!v) {
        sbuf_puts(&b, "the catalog");
    } else if (width < 0) {
        sbuf_printf(&b, "view %s", v->name);
    } else if (span != INT64_MIN) {
        dump_segment_name(v, width, span, &b);
    } else {
        text_width(t, v->widths[width]);
        sbuf_printf(&b, "view %s, width %s", v->name, t);
    }
    fprintf(d->out, "broken: %s: %s\n", b.p, message);
    sbuf_free(&b);
}

static void verify_width(struct verify_state *st, struct store_read *r, int view, int width)
{
    const struct sql_view *v = &st->d->views->views[view];
    struct store_segment_iter it;
    struct store_segment seg;
    struct store_error err;
    if (store_segments_begin(r, view, width, INT64_MIN, INT64_MAX, &it, &err)) {
        report_broken(st, v, width, INT64_MIN, err.message);
        return;
    }
    int rc;
    int64_t span;
    while ((rc = dump_segments_next(&it, &seg, &span, &err)) != 0) {
        if (rc == -2) {
            /* The cursor cannot go on: what is left of this width is unread. */
            report_broken(st, v, width, span, err.message);
            break;
        }
        if (rc == -1 || store_verify_segment(r, &seg, &err)) {
            report_broken(st, v, width, span, err.message);
            continue;
        }
        st->segments++;
        st->cells += seg.block.info.ncells;
    }
    store_segments_end(&it);
}

/* A join's dense dim columns (store_verify_dense). */
static void verify_dense(struct verify_state *st, struct store_read *r, int view, int join)
{
    struct store_error err;
    uint64_t rows;
    if (store_verify_dense(r, view, join, &rows, &err)) {
        const struct sql_join *j = &st->d->views->views[view].joins[join];
        char what[400];
        snprintf(what, sizeof what, "join %s: %s", j->alias ? j->alias : j->table, err.message);
        report_broken(st, &st->d->views->views[view], -1, INT64_MIN, what);
        return;
    }
    st->dim_rows += rows;
}

int cmd_verify(struct dump *d, const struct dump_args *a)
{
    (void)a;
    struct store_read *r;
    if (dump_read_begin(d, &r))
        return DUMP_FAILED;
    struct verify_state st = {.d = d};
    struct json *j = &d->j;
    if (d->json) {
        json_object_begin(j);
        json_kv_str(j, "store", d->dir);
        json_key(j, "broken");
        json_array_begin(j);
    }
    struct store_catalog cat;
    struct store_error err;
    if (store_read_catalog(r, &cat, &err))
        report_broken(&st, NULL, 0, INT64_MIN, err.message);
    else if (cat.format_version != STORE_FORMAT_VERSION)
        report_broken(&st, NULL, 0, INT64_MIN, "the catalog's format version changed under us");
    for (int v = 0; v < d->views->nviews; v++)
        for (int w = 0; w < d->views->views[v].nwidths; w++)
            verify_width(&st, r, v, w);
    for (int v = 0; v < d->views->nviews; v++)
        for (int jn = 0; jn < d->views->views[v].njoins; jn++)
            verify_dense(&st, r, v, jn);
    store_read_end(r);
    if (d->json) {
        json_array_end(j);
        json_kv_uint(j, "segments", st.segments);
        json_kv_uint(j, "cells", st.cells);
        json_kv_uint(j, "dim_rows", st.dim_rows);
        json_kv_bool(j, "ok", st.broken == 0);
        json_object_end(j);
        json_finish(j);
    } else if (st.broken == 0) {
        fprintf(d->out, "ok: %llu segments, %llu cells, %llu dim rows verified\n",
                (unsigned long long)st.segments, (unsigned long long)st.cells,
                (unsigned long long)st.dim_rows);
    } else {
        fprintf(d->out, "damaged: %llu broken; %llu other segments, %llu cells verified\n",
                (unsigned long long)st.broken, (unsigned long long)st.segments,
                (unsigned long long)st.cells);
    }
    return st.broken ? DUMP_FAILED : DUMP_OK;
}

int cmd_copy(struct dump *d, const struct dump_args *a)
{
    const char *dest = a->pos[0];
    struct store_error err;
    uint64_t src_bytes, copy_bytes, map_bytes;
    if (store_copy(d->store, dest, &err)) {
        dump_error("cannot copy %s to %s: %s", d->dir, dest, err.message);
        return DUMP_FAILED;
    }
    /* Opening the copy proves it is a store this build reads. */
    struct store *copy;
    if (store_open(dest, STORE_READ_ONLY, &copy, &err)) {
        dump_error("the copy at %s does not open: %s", dest, err.message);
        return DUMP_FAILED;
    }
    int rc = store_size(d->store, &src_bytes, &map_bytes, &err);
    if (!rc)
        rc = store_size(copy, &copy_bytes, &map_bytes, &err);
    store_close(copy);
    if (rc) {
        dump_error("%s", err.message);
        return DUMP_FAILED;
    }
    if (d->json) {
        struct json *j = &d->j;
        json_object_begin(j);
        json_kv_str(j, "source", d->dir);
        json_kv_str(j, "dest", dest);
        json_kv_uint(j, "source_bytes", src_bytes);
        json_kv_uint(j, "copy_bytes", copy_bytes);
        json_object_end(j);
        json_finish(j);
    } else {
        fprintf(d->out, "copied %s (%llu bytes) to %s (%llu bytes)\n", d->dir,
                (unsigned long long)src_bytes, dest, (unsigned long long)copy_bytes);
    }
    return DUMP_OK;
}
