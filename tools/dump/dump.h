/* dump.h -- what straum-dump's files share: the run context, the commands,
 * and helpers that name and render store things the same way in every
 * command (views, widths, accumulators, typed values, segments).
 *
 * straum-dump reads a store through store/store.h only, read-only, in one
 * read snapshot per command, so it can run next to a live straum-ingest. */
#ifndef STRAUM_DUMP_H
#define STRAUM_DUMP_H

#include "store/store.h"
#include "tools/dump/json.h"
#include "tools/dump/text.h"

#include <stdbool.h>
#include <stdio.h>

#define DUMP_VERSION STRAUM_VERSION /* from project() in CMakeLists.txt */

/* Exit statuses. */
enum {
    DUMP_OK = 0,
    DUMP_FAILED = 1, /* verify found damage, or reading the store failed */
    DUMP_USAGE = 2,  /* bad arguments, or a store that cannot be opened */
};

struct dump {
    const char *dir;
    struct store *store;
    const struct sql_view_list *views;
    bool json;
    FILE *out;
    struct json j; /* when json */
};

/* A command's arguments after parsing (main.c checks which are allowed). */
struct dump_args {
    const char *pos[2];
    int npos;
    const char *width, *from, *to, *limit;
};

/* The commands; each returns an exit status. */
int cmd_catalog(struct dump *d, const struct dump_args *a);
int cmd_stats(struct dump *d, const struct dump_args *a);
int cmd_segments(struct dump *d, const struct dump_args *a);
int cmd_cells(struct dump *d, const struct dump_args *a);
int cmd_dims(struct dump *d, const struct dump_args *a);
int cmd_verify(struct dump *d, const struct dump_args *a);
int cmd_copy(struct dump *d, const struct dump_args *a);

/* ---- Helpers (common.c) ----------------------------------------------------- */

/* "straum-dump: <message>" on stderr. */
void dump_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Allocation that cannot fail: running out of memory ends the tool. */
void *xmalloc(size_t n);
void *xcalloc(size_t n, size_t size);
void *xrealloc(void *p, size_t n);

int64_t dump_now_usec(void);

/* Begins the command's one read snapshot; prints the error itself. */
int dump_read_begin(struct dump *d, struct store_read **r);

/* A view by name, or -1 after a usage error naming the views there are. */
int dump_find_view(struct dump *d, const char *name);
/* A width by index ("0") or by text ("1 hour"); -1 after a usage error. */
int dump_find_width(const struct sql_view *v, const char *text);

/* "int", "numeric", "float", "text", "bool", "date", "timestamp". */
const char *dump_type_name(enum store_type type);
/* "bucket", "key", "count", "sum", "vc_offsets", "vc_values", "vc_counts". */
const char *dump_role_name(unsigned role);

/* Accumulator labels, unique within a view, used as keys in cells output:
 * "count(*)", "count(fare)", "sum(fare)", "values(fare)", each followed by
 * " FILTER (WHERE <canonical filter>)" when filtered. */
void dump_label_count(const struct sql_view *v, int i, struct sbuf *b);
void dump_label_sum(const struct sql_view *v, int i, struct sbuf *b);
void dump_label_vc(const struct sql_view *v, int i, struct sbuf *b);
/* " FILTER (WHERE ...)" for a filter index, nothing for -1. */
void dump_filter_suffix(const struct sql_view *v, int filter, struct sbuf *b);

/* "view trips, width 1 hour, span 2024-01-01 00:00:00+00 .. 2024-01-03 16:00:00+00" */
void dump_segment_name(const struct sql_view *v, int width, int64_t span_start, struct sbuf *b);
int64_t dump_span_end(const struct sql_view *v, int width, int64_t span_start);

/* store_segments_next that tells a broken block, after which the walk can
 * go on, from an iterator that cannot continue: 1 a segment, 0 the end,
 * -1 a segment whose block does not open (err names it; *span is its span
 * start, or INT64_MIN when unknown), -2 the walk cannot continue (err). */
int dump_segments_next(struct store_segment_iter *it, struct store_segment *seg,
                       int64_t *span, struct store_error *err);

/* The text of a code of fact column `col` of view `view`, for one line of
 * human output: dictionary text for TEXT codes, NULL for STORE_NULL. */
void dump_render_code(struct store_read *r, int view, int col,
                      const struct store_column_type *t, int64_t code, struct sbuf *b);
/* The same value in JSON: null; a number for INT; true/false for BOOL; a
 * number for finite FLOAT; otherwise a string (NUMERIC keeps its exact
 * decimal text, DATE and TIMESTAMP their PostgreSQL text). */
void dump_json_code(struct json *j, struct store_read *r, int view, int col,
                    const struct store_column_type *t, int64_t code);

#endif
