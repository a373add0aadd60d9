/* common.c -- straum-dump helpers every command uses (see dump.h). */
#include "tools/dump/dump.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

void dump_error(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("straum-dump: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

static void out_of_memory(void)
{
    dump_error("out of memory");
    exit(DUMP_FAILED);
}

void *xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (!p)
        out_of_memory();
    return p;
}

void *xcalloc(size_t n, size_t size)
{
    void *p = calloc(n ? n : 1, size ? size : 1);
    if (!p)
        out_of_memory();
    return p;
}

void *xrealloc(void *p, size_t n)
{
    void *q = realloc(p, n ? n : 1);
    if (!q)
        out_of_memory();
    return q;
}

int64_t dump_now_usec(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

int dump_read_begin(struct dump *d, struct store_read **r)
{
    struct store_error err;
    if (store_read_begin(d->store, r, &err)) {
        dump_error("cannot read the store at %s: %s", d->dir, err.message);
        return -1;
    }
    return 0;
}

int dump_find_view(struct dump *d, const char *name)
{
    for (int i = 0; i < d->views->nviews; i++)
        if (strcmp(d->views->views[i].name, name) == 0)
            return i;
    struct sbuf b = {0};
    for (int i = 0; i < d->views->nviews; i++)
        sbuf_printf(&b, "%s%s", i ? ", " : "", d->views->views[i].name);
    dump_error("the store has no view \"%s\" (views: %s)", name, b.p ? b.p : "none");
    sbuf_free(&b);
    return -1;
}

int dump_find_width(const struct sql_view *v, const char *text)
{
    int64_t index;
    if (text_parse_count(text, &index)) {
        if (index < v->nwidths)
            return (int)index;
    } else {
        int64_t usec;
        char why[200];
        if (!sql_parse_interval(text, &usec, why, sizeof why)) {
            dump_error("--width: %s", why);
            return -1;
        }
        for (int w = 0; w < v->nwidths; w++)
            if (v->widths[w] == usec)
                return w;
    }
    struct sbuf b = {0};
    for (int w = 0; w < v->nwidths; w++) {
        char wt[TEXT_SMALL];
        text_width(wt, v->widths[w]);
        sbuf_printf(&b, "%s%d = %s", w ? ", " : "", w, wt);
    }
    dump_error("view %s has no width \"%s\" (widths: %s)", v->name, text, b.p);
    sbuf_free(&b);
    return -1;
}

const char *dump_type_name(enum store_type type)
{
    switch (type) {
    case STORE_TYPE_INT: return "int";
    case STORE_TYPE_NUMERIC: return "numeric";
    case STORE_TYPE_FLOAT: return "float";
    case STORE_TYPE_TEXT: return "text";
    case STORE_TYPE_BOOL: return "bool";
    case STORE_TYPE_DATE: return "date";
    case STORE_TYPE_TIMESTAMP: return "timestamp";
    }
    return "unknown";
}

/* "vc_values" for a cell column; rollup columns (store.h) are prefixed by
 * their family: "totals.", "key1.", "span.", "span.key1.", "span.cells.". */
const char *dump_role_name(unsigned role)
{
    static const char *const base[] = {"bucket", "key", "count", "sum", "vc_offsets",
                                       "vc_values", "vc_counts"};
    static char names[STORE_ROLLUP_SPAN_CELLS + STORE_ROLE_TOTAL + 1][40];
    if (role == 0 || role >= sizeof names / sizeof names[0])
        return "unknown";
    if (!names[role][0]) {
        unsigned family = (role - 1) / STORE_ROLE_TOTAL;
        const char *name = base[(role - 1) % STORE_ROLE_TOTAL];
        unsigned span_total = STORE_ROLLUP_MAX_KEYS + 2;
        if (family == 0)
            snprintf(names[role], sizeof names[role], "%s", name);
        else if (family == 1)
            snprintf(names[role], sizeof names[role], "totals.%s", name);
        else if (family < span_total)
            snprintf(names[role], sizeof names[role], "key%u.%s", family - 2, name);
        else if (family == span_total)
            snprintf(names[role], sizeof names[role], "span.%s", name);
        else if (family == STORE_ROLLUP_SPAN_CELLS / STORE_ROLE_TOTAL)
            snprintf(names[role], sizeof names[role], "span.cells.%s", name);
        else
            snprintf(names[role], sizeof names[role], "span.key%u.%s", family - span_total - 1,
                     name);
    }
    return names[role];
}

void dump_filter_suffix(const struct sql_view *v, int filter, struct sbuf *b)
{
    if (filter < 0 || filter >= v->nfilters)
        return;
    size_t n = sql_filter_format(v, v->filters[filter], NULL, 0);
    char *text = xmalloc(n + 1);
    sql_filter_format(v, v->filters[filter], text, n + 1);
    sbuf_printf(b, " FILTER (WHERE %s)", text);
    free(text);
}

static const char *fact_name(const struct sql_view *v, int col)
{
    return col >= 0 && col < v->nfact_columns ? v->fact_columns[col].name : "?";
}

void dump_label_count(const struct sql_view *v, int i, struct sbuf *b)
{
    const struct sql_count_spec *c = &v->counts[i];
    if (c->fact_column < 0)
        sbuf_puts(b, "count(*)");
    else
        sbuf_printf(b, "count(%s)", fact_name(v, c->fact_column));
    dump_filter_suffix(v, c->filter, b);
}

void dump_label_sum(const struct sql_view *v, int i, struct sbuf *b)
{
    sbuf_printf(b, "sum(%s)", fact_name(v, v->sums[i].fact_column));
    dump_filter_suffix(v, v->sums[i].filter, b);
}

void dump_label_vc(const struct sql_view *v, int i, struct sbuf *b)
{
    sbuf_printf(b, "values(%s)", fact_name(v, v->value_counts[i].fact_column));
    dump_filter_suffix(v, v->value_counts[i].filter, b);
}

int64_t dump_span_end(const struct sql_view *v, int width, int64_t span_start)
{
    return span_start + v->widths[width] * store_span_buckets(v, width);
}

void dump_segment_name(const struct sql_view *v, int width, int64_t span_start, struct sbuf *b)
{
    char wt[TEXT_SMALL], from[TEXT_SMALL], to[TEXT_SMALL];
    text_width(wt, v->widths[width]);
    text_time(from, span_start, TIME_PG);
    text_time(to, dump_span_end(v, width, span_start), TIME_PG);
    sbuf_printf(b, "view %s, width %s, span %s .. %s", v->name, wt, from, to);
}

int dump_segments_next(struct store_segment_iter *it, struct store_segment *seg, int64_t *span,
                       struct store_error *err)
{
    /* store_segments_next fills the segment's key fields before it opens
     * the block, and leaves its cursor on that key: after a block that does
     * not open, the next call moves on. Any other failure (LMDB's) leaves
     * bytes unset, and the cursor's state unknown. */
    memset(seg, 0, sizeof *seg);
    seg->span_start = INT64_MIN;
    int rc = store_segments_next(it, seg, err);
    *span = seg->span_start;
    if (rc >= 0)
        return rc;
    return seg->bytes ? -1 : -2;
}

void dump_render_code(struct store_read *r, int view, int col, const struct store_column_type *t,
                      int64_t code, struct sbuf *b)
{
    if (code == STORE_NULL) {
        sbuf_puts(b, "NULL");
        return;
    }
    if (t->type == STORE_TYPE_TEXT) {
        const char *text;
        size_t len;
        if (store_dict_lookup(r, view, col, code, &text, &len) == 0)
            sbuf_add_display(b, text, len);
        else
            sbuf_printf(b, "<unknown text #%lld>", (long long)code);
        return;
    }
    char small[128];
    size_t n = store_code_format(t, code, small, sizeof small);
    if (n < sizeof small) {
        sbuf_add(b, small, n);
        return;
    }
    char *big = xmalloc(n + 1);
    store_code_format(t, code, big, n + 1);
    sbuf_add(b, big, n);
    free(big);
}

void dump_json_code(struct json *j, struct store_read *r, int view, int col,
                    const struct store_column_type *t, int64_t code)
{
    if (code == STORE_NULL) {
        json_null(j);
        return;
    }
    switch (t->type) {
    case STORE_TYPE_INT:
        json_int(j, code);
        return;
    case STORE_TYPE_BOOL:
        json_bool(j, code != 0);
        return;
    case STORE_TYPE_FLOAT:
        json_double(j, store_code_float(code));
        return;
    case STORE_TYPE_TEXT: {
        const char *text;
        size_t len;
        if (store_dict_lookup(r, view, col, code, &text, &len) == 0) {
            json_strn(j, text, len);
            return;
        }
        break; /* an unknown id: its placeholder text below */
    }
    default:
        break;
    }
    struct sbuf b = {0};
    dump_render_code(r, view, col, t, code, &b);
    json_strn(j, b.p, b.len);
    sbuf_free(&b);
}
