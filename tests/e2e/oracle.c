/* oracle.c -- store contents and PostgreSQL's answers rendered as the same
 * text lines, sorted, and compared line by line.
 *
 * A cell line is "bucket µs|key...|count...|sum..."; a value-count line is
 * "bucket µs|key...|v<index>|value|rows". PostgreSQL computes them with the
 * view's own GROUP BY at each width over the cell keys (fact columns, so dim
 * changes move nothing); the store's side decodes every segment. Sums print
 * NULL when their column had no value, as SQL does. Float sums are rounded to
 * 9 significant digits on both sides: the order of additions differs. */
#include "tests/e2e/oracle.h"

#include <criterion/criterion.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

struct lines {
    char **v;
    size_t n, cap;
};

static void add_line(struct lines *l, const char *s)
{
    if (l->n == l->cap) {
        l->cap = l->cap ? l->cap * 2 : 1024;
        l->v = realloc(l->v, l->cap * sizeof *l->v);
    }
    l->v[l->n++] = strdup(s);
}

static void free_lines(struct lines *l)
{
    for (size_t i = 0; i < l->n; i++)
        free(l->v[i]);
    free(l->v);
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

void oracle_exec(PGconn *pg, const char *sql)
{
    PGresult *r = PQexec(pg, sql);
    ExecStatusType s = PQresultStatus(r);
    PQclear(r);
    cr_assert(s == PGRES_COMMAND_OK || s == PGRES_TUPLES_OK, "%s\n%s", sql, PQerrorMessage(pg));
}

void oracle_execf(PGconn *pg, const char *fmt, ...)
{
    char sql[16384];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(sql, sizeof sql, fmt, ap);
    va_end(ap);
    cr_assert_lt(n, (int)sizeof sql, "statement too long for the test's buffer");
    oracle_exec(pg, sql);
}

void oracle_value(PGconn *pg, char *out, size_t cap, const char *fmt, ...)
{
    char sql[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(sql, sizeof sql, fmt, ap);
    va_end(ap);
    PGresult *r = PQexec(pg, sql);
    cr_assert_eq(PQresultStatus(r), PGRES_TUPLES_OK, "%s: %s", sql, PQerrorMessage(pg));
    cr_assert_geq(PQntuples(r), 1, "%s: no row", sql);
    snprintf(out, cap, "%s", PQgetisnull(r, 0, 0) ? "" : PQgetvalue(r, 0, 0));
    PQclear(r);
}

uint64_t oracle_lsn(PGconn *pg, const char *sql)
{
    char v[64];
    oracle_value(pg, v, sizeof v, "%s", sql);
    unsigned hi = 0, lo = 0;
    if (sscanf(v, "%X/%X", &hi, &lo) != 2)
        return 0;
    return (uint64_t)hi << 32 | lo;
}

PGconn *oracle_connect(const char *conninfo)
{
    PGconn *c = PQconnectdb(conninfo);
    cr_assert_eq(PQstatus(c), CONNECTION_OK, "%s", PQerrorMessage(c));
    return c;
}

uint64_t oracle_current_lsn(PGconn *pg)
{
    PGresult *r = PQexec(pg, "SELECT pg_current_wal_lsn()");
    unsigned hi = 0, lo = 0;
    if (PQresultStatus(r) == PGRES_TUPLES_OK)
        sscanf(PQgetvalue(r, 0, 0), "%X/%X", &hi, &lo);
    PQclear(r);
    return (uint64_t)hi << 32 | lo;
}

uint64_t oracle_committed_lsn(PGconn *pg)
{
    /* A transaction flushes at commit only if it wrote WAL (an xid alone
     * does not count): a transactional logical message is the smallest
     * write, and decoding skips it (stream.c keeps no Message). */
    oracle_exec(pg, "BEGIN; SET LOCAL synchronous_commit = on; "
                    "SELECT pg_logical_emit_message(true, 'straum_oracle', ''); COMMIT");
    return oracle_current_lsn(pg);
}

uint64_t oracle_store_position(const char *store_dir)
{
    struct store *s;
    struct store_error err;
    struct store_read *r;
    struct store_catalog cat;
    if (store_open(store_dir, STORE_READ_ONLY, &s, &err))
        return 0;
    uint64_t lsn = 0;
    if (store_read_begin(s, &r, &err) == 0) {
        if (store_read_catalog(r, &cat, &err) == 0)
            lsn = cat.position.lsn;
        store_read_end(r);
    }
    store_close(s);
    return lsn;
}

bool oracle_wait_position(const char *store_dir, uint64_t lsn, int timeout_ms)
{
    for (int waited = 0; waited < timeout_ms; waited += 20) {
        if (oracle_store_position(store_dir) >= lsn)
            return true;
        usleep(20000);
    }
    return false;
}

/* ---- PostgreSQL's side ----------------------------------------------------- */

static void append(char *buf, size_t cap, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void append(char *buf, size_t cap, const char *fmt, ...)
{
    size_t n = strlen(buf);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf + n, cap - n, fmt, ap);
    va_end(ap);
}

static void quote_into(char *buf, size_t cap, const char *name)
{
    append(buf, cap, "\"");
    for (const char *c = name; *c; c++)
        append(buf, cap, *c == '"' ? "\"\"" : "%c", *c);
    append(buf, cap, "\"");
}

static void sql_from(char *sql, size_t cap, const struct sql_view *v)
{
    append(sql, cap, " FROM ");
    if (v->fact_schema) {
        quote_into(sql, cap, v->fact_schema);
        append(sql, cap, ".");
    }
    quote_into(sql, cap, v->fact_table);
}

/* SELECT bucket µs, cell keys as text, ... */
static void sql_head(char *sql, size_t cap, const struct sql_view *v, int width)
{
    snprintf(sql, cap,
             "SELECT (extract(epoch FROM date_bin(interval '%" PRId64 " microseconds', ",
             v->widths[width]);
    quote_into(sql, cap, v->fact_columns[v->bucket_fact_column].name);
    append(sql, cap, ", timestamptz 'epoch' + interval '%" PRId64 " microseconds')) * 1000000)::bigint",
           v->origin_usec);
    for (int k = 0; k < v->ncell_keys; k++) {
        append(sql, cap, ", ");
        quote_into(sql, cap, v->fact_columns[v->cell_keys[k]].name);
        append(sql, cap, "::text");
    }
}

static void sql_filter(char *sql, size_t cap, const struct sql_view *v, int filter)
{
    if (filter < 0)
        return;
    char text[2048];
    sql_filter_format(v, v->filters[filter], text, sizeof text);
    append(sql, cap, " FILTER (WHERE %s)", text);
}

/* Rows without a bucket time are kept in no cell: no ask's range names them. */
static void sql_no_null_bucket(char *sql, size_t cap, const struct sql_view *v, const char *glue)
{
    append(sql, cap, "%s", glue);
    quote_into(sql, cap, v->fact_columns[v->bucket_fact_column].name);
    append(sql, cap, " IS NOT NULL");
}

static void sql_group(char *sql, size_t cap, const struct sql_view *v, int extra)
{
    append(sql, cap, " GROUP BY 1");
    for (int k = 0; k < v->ncell_keys + extra; k++)
        append(sql, cap, ", %d", k + 2);
}

static void round_float(char *s, size_t cap)
{
    if (strcmp(s, "NULL") != 0)
        snprintf(s, cap, "%.9g", strtod(s, NULL));
}

static void pg_lines(PGconn *pg, const char *sql, const bool *is_float, struct lines *out)
{
    PGresult *r = PQexec(pg, sql);
    cr_assert_eq(PQresultStatus(r), PGRES_TUPLES_OK, "%s\n%s", sql, PQerrorMessage(pg));
    for (int i = 0; i < PQntuples(r); i++) {
        char line[8192] = "";
        for (int c = 0; c < PQnfields(r); c++) {
            char field[512];
            snprintf(field, sizeof field, "%s",
                     PQgetisnull(r, i, c) ? "NULL" : PQgetvalue(r, i, c));
            if (is_float && is_float[c])
                round_float(field, sizeof field);
            append(line, sizeof line, "%s%s", c ? "|" : "", field);
        }
        add_line(out, line);
    }
    PQclear(r);
}

static void pg_cells(PGconn *pg, const struct sql_view *v, const struct store_column_type *types,
                     int width, struct lines *out)
{
    char sql[16384];
    bool is_float[512] = {0};
    sql_head(sql, sizeof sql, v, width);
    for (int c = 0; c < v->ncounts; c++) {
        if (v->counts[c].fact_column < 0)
            append(sql, sizeof sql, ", count(*)");
        else {
            append(sql, sizeof sql, ", count(");
            quote_into(sql, sizeof sql, v->fact_columns[v->counts[c].fact_column].name);
            append(sql, sizeof sql, ")");
        }
        sql_filter(sql, sizeof sql, v, v->counts[c].filter);
    }
    for (int s = 0; s < v->nsums; s++) {
        append(sql, sizeof sql, ", sum(");
        quote_into(sql, sizeof sql, v->fact_columns[v->sums[s].fact_column].name);
        append(sql, sizeof sql, ")");
        sql_filter(sql, sizeof sql, v, v->sums[s].filter);
        is_float[1 + v->ncell_keys + v->ncounts + s] =
            types[v->sums[s].fact_column].type == STORE_TYPE_FLOAT;
    }
    sql_from(sql, sizeof sql, v);
    sql_no_null_bucket(sql, sizeof sql, v, " WHERE ");
    sql_group(sql, sizeof sql, v, 0);
    pg_lines(pg, sql, is_float, out);
}

static void pg_value_counts(PGconn *pg, const struct sql_view *v, int width, struct lines *out)
{
    for (int k = 0; k < v->nvalue_counts; k++) {
        const struct sql_value_count_spec *vs = &v->value_counts[k];
        char sql[16384];
        sql_head(sql, sizeof sql, v, width);
        append(sql, sizeof sql, ", 'v%d', ", k);
        quote_into(sql, sizeof sql, v->fact_columns[vs->fact_column].name);
        append(sql, sizeof sql, "::text, count(*)");
        sql_from(sql, sizeof sql, v);
        append(sql, sizeof sql, " WHERE ");
        quote_into(sql, sizeof sql, v->fact_columns[vs->fact_column].name);
        append(sql, sizeof sql, " IS NOT NULL");
        sql_no_null_bucket(sql, sizeof sql, v, " AND ");
        if (vs->filter >= 0) {
            char text[2048];
            sql_filter_format(v, v->filters[vs->filter], text, sizeof text);
            append(sql, sizeof sql, " AND (%s)", text);
        }
        sql_group(sql, sizeof sql, v, 2);
        pg_lines(pg, sql, NULL, out);
    }
}

/* ---- The store's side ---------------------------------------------------------- */

static void code_text(struct store_read *r, int view, int fact_col,
                      const struct store_column_type *t, int64_t code, char *buf, size_t cap)
{
    if (code != STORE_NULL && t->type == STORE_TYPE_TEXT) {
        const char *text;
        size_t len;
        if (store_dict_lookup(r, view, fact_col, code, &text, &len) == 0)
            snprintf(buf, cap, "%.*s", (int)len, text);
        else
            snprintf(buf, cap, "<no text for id %" PRId64 ">", code);
        return;
    }
    store_code_format(t, code, buf, cap);
}

static void int128_text(__int128 v, int scale, char *buf, size_t cap)
{
    char digits[64];
    int n = 0;
    bool neg = v < 0;
    unsigned __int128 m = neg ? (unsigned __int128)0 - (unsigned __int128)v : (unsigned __int128)v;
    do {
        digits[n++] = (char)('0' + (int)(m % 10));
        m /= 10;
    } while (m || n <= scale);
    size_t k = 0;
    if (neg && k + 1 < cap)
        buf[k++] = '-';
    for (int i = n - 1; i >= 0 && k + 2 < cap; i--) {
        buf[k++] = digits[i];
        if (i == scale && scale > 0)
            buf[k++] = '.';
    }
    buf[k] = '\0';
}

static int64_t *decode_i64(const struct format_block *b, int role, int index, uint32_t n)
{
    int col = format_block_find(b, (uint16_t)role, (uint16_t)index);
    cr_assert_geq(col, 0, "role %d index %d missing", role, index);
    int64_t *a = malloc(8 * ((size_t)n + 1));
    struct format_error ferr;
    cr_assert_eq(format_block_decode(b, col, a, &ferr), 0, "%s", ferr.message);
    return a;
}

/* The "bucket|keys" prefix of cell i. */
static void cell_prefix(struct store_read *r, int view, const struct sql_view *v,
                        const struct store_column_type *types, int width,
                        const struct store_segment *seg, int64_t **keys, const int64_t *bucket,
                        uint32_t i, char *line, size_t cap)
{
    snprintf(line, cap, "%" PRId64, seg->span_start + bucket[i] * v->widths[width]);
    for (int k = 0; k < v->ncell_keys; k++) {
        char text[512];
        int fc = v->cell_keys[k];
        code_text(r, view, fc, &types[fc], keys[k][i], text, sizeof text);
        append(line, cap, "|%s", text);
    }
}

static void store_segment_lines(struct store_read *r, int view, const struct sql_view *v,
                                const struct store_column_type *types, int width,
                                const struct store_segment *seg, struct lines *cells,
                                struct lines *vcs)
{
    uint32_t n = seg->block.info.ncells;
    int64_t *bucket = decode_i64(&seg->block, STORE_ROLE_BUCKET, 0, n);
    int64_t *keys[64], *counts[64];
    char *sums[64];
    for (int k = 0; k < v->ncell_keys; k++)
        keys[k] = decode_i64(&seg->block, STORE_ROLE_KEY, k, n);
    for (int c = 0; c < v->ncounts; c++)
        counts[c] = decode_i64(&seg->block, STORE_ROLE_COUNT, c, n);
    for (int s = 0; s < v->nsums; s++) {
        int col = format_block_find(&seg->block, STORE_ROLE_SUM, (uint16_t)s);
        sums[s] = malloc(16 * (size_t)n + 16);
        struct format_error ferr;
        cr_assert_eq(format_block_decode(&seg->block, col, sums[s], &ferr), 0, "%s", ferr.message);
    }
    for (uint32_t i = 0; i < n; i++) {
        char line[8192];
        cell_prefix(r, view, v, types, width, seg, keys, bucket, i, line, sizeof line);
        for (int c = 0; c < v->ncounts; c++)
            append(line, sizeof line, "|%" PRId64, counts[c][i]);
        for (int s = 0; s < v->nsums; s++) {
            const struct sql_sum_spec *ss = &v->sums[s];
            const struct store_column_type *t = &types[ss->fact_column];
            int64_t nonnull = 0;
            for (int c = 0; c < v->ncounts; c++)
                if (v->counts[c].fact_column == ss->fact_column && v->counts[c].filter == ss->filter)
                    nonnull = counts[c][i];
            char text[128];
            if (nonnull == 0) {
                snprintf(text, sizeof text, "NULL");
            } else if (t->type == STORE_TYPE_FLOAT) {
                double d;
                memcpy(&d, sums[s] + 8 * i, 8);
                snprintf(text, sizeof text, "%.9g", d);
            } else {
                __int128 x;
                memcpy(&x, sums[s] + 16 * i, 16);
                int128_text(x, t->type == STORE_TYPE_NUMERIC ? t->scale : 0, text, sizeof text);
            }
            append(line, sizeof line, "|%s", text);
        }
        add_line(cells, line);
    }
    for (int k = 0; k < v->nvalue_counts; k++) {
        int fc = v->value_counts[k].fact_column;
        int64_t *off = decode_i64(&seg->block, STORE_ROLE_VC_OFFSETS, k, n + 1);
        int64_t *codes = decode_i64(&seg->block, STORE_ROLE_VC_VALUES, k, (uint32_t)off[n]);
        int64_t *rows = decode_i64(&seg->block, STORE_ROLE_VC_COUNTS, k, (uint32_t)off[n]);
        for (uint32_t i = 0; i < n; i++)
            for (int64_t j = off[i]; j < off[i + 1]; j++) {
                char line[8192], text[512];
                cell_prefix(r, view, v, types, width, seg, keys, bucket, i, line, sizeof line);
                code_text(r, view, fc, &types[fc], codes[j], text, sizeof text);
                append(line, sizeof line, "|v%d|%s|%" PRId64, k, text, rows[j]);
                add_line(vcs, line);
            }
        free(off);
        free(codes);
        free(rows);
    }
    free(bucket);
    for (int k = 0; k < v->ncell_keys; k++)
        free(keys[k]);
    for (int c = 0; c < v->ncounts; c++)
        free(counts[c]);
    for (int s = 0; s < v->nsums; s++)
        free(sums[s]);
}

static void store_lines(struct store *s, struct store_read *r, int view, int width,
                        struct lines *cells, struct lines *vcs)
{
    const struct sql_view *v = &store_views(s)->views[view];
    const struct store_column_type *types = store_fact_types(s, view);
    struct store_segment_iter it;
    struct store_segment seg;
    struct store_error err;
    cr_assert_eq(store_segments_begin(r, view, width, INT64_MIN, INT64_MAX, &it, &err), 0);
    it.merged = true; /* whole cells */
    int rc;
    while ((rc = store_segments_next(&it, &seg, &err)) == 1) {
        cr_assert_eq(store_verify_segment(r, &seg, &err), 0, "%s", err.message);
        store_segment_lines(r, view, v, types, width, &seg, cells, vcs);
    }
    cr_assert_eq(rc, 0, "%s", err.message);
    store_segments_end(&it);
}

struct oracle_deltas oracle_deltas(const char *store_dir)
{
    struct store *s;
    struct store_read *r;
    struct store_error err;
    cr_assert_eq(store_open(store_dir, STORE_READ_ONLY, &s, &err), 0, "%s", err.message);
    cr_assert_eq(store_read_begin(s, &r, &err), 0, "%s", err.message);
    struct oracle_deltas d = {0};
    const struct sql_view_list *views = store_views(s);
    for (int v = 0; v < views->nviews; v++)
        for (int w = 0; w < views->views[v].nwidths; w++) {
            struct store_segment_iter it;
            struct store_segment seg;
            cr_assert_eq(store_segments_begin(r, v, w, INT64_MIN, INT64_MAX, &it, &err), 0);
            int rc;
            while ((rc = store_segments_next(&it, &seg, &err)) == 1) {
                uint64_t cells = 0;
                for (int i = 0; i < seg.ndeltas; i++)
                    cells += seg.deltas[i].block.info.ncells;
                d.blocks += seg.ndeltas;
                d.past_base += cells > seg.block.info.ncells;
            }
            cr_assert_eq(rc, 0, "%s", err.message);
            store_segments_end(&it);
        }
    store_read_end(r);
    store_close(s);
    return d;
}

int oracle_delta_blocks(const char *store_dir) { return oracle_deltas(store_dir).blocks; }

void oracle_compact(const char *store_dir)
{
    struct store *s;
    struct store_error err;
    int left;
    cr_assert_eq(store_open(store_dir, STORE_READ_WRITE, &s, &err), 0, "%s", err.message);
    cr_assert_eq(store_compact(s, INT64_MAX, true, &left, &err), 0, "%s", err.message);
    cr_assert_eq(left, 0);
    store_close(s);
}

/* ---- Comparing ---------------------------------------------------------------------- */

static int compare_lines(struct lines *want, struct lines *got, const char *what, char *diff,
                         size_t difflen)
{
    if (want->n)
        qsort(want->v, want->n, sizeof *want->v, cmp_str);
    if (got->n)
        qsort(got->v, got->n, sizeof *got->v, cmp_str);
    size_t i = 0, j = 0;
    while (i < want->n || j < got->n) {
        int c = i == want->n ? 1 : j == got->n ? -1 : strcmp(want->v[i], got->v[j]);
        if (c == 0) {
            i++;
            j++;
            continue;
        }
        snprintf(diff, difflen, "%s: %zu lines from PostgreSQL, %zu from the store; first "
                                "difference:\n  PostgreSQL: %s\n  store:      %s",
                 what, want->n, got->n, c < 0 ? want->v[i] : "(none)",
                 c > 0 ? got->v[j] : "(none)");
        return -1;
    }
    return 0;
}

static int compare_projections(PGconn *pg, struct store_read *r, const struct sql_view *v,
                               int view, char *diff, size_t difflen)
{
    for (int j = 0; j < v->njoins; j++) {
        const struct sql_join *jn = &v->joins[j];
        char sql[4096] = "SELECT ";
        quote_into(sql, sizeof sql, jn->dim_key);
        append(sql, sizeof sql, "::bigint");
        for (int c = 1; c < jn->ndim_columns; c++) {
            append(sql, sizeof sql, ", ");
            quote_into(sql, sizeof sql, jn->dim_columns[c]);
            append(sql, sizeof sql, "::text");
        }
        append(sql, sizeof sql, " FROM ");
        if (jn->schema) {
            quote_into(sql, sizeof sql, jn->schema);
            append(sql, sizeof sql, ".");
        }
        quote_into(sql, sizeof sql, jn->table);
        append(sql, sizeof sql, " WHERE ");
        quote_into(sql, sizeof sql, jn->dim_key);
        append(sql, sizeof sql, " IS NOT NULL");
        PGresult *res = PQexec(pg, sql);
        cr_assert_eq(PQresultStatus(res), PGRES_TUPLES_OK, "%s", PQerrorMessage(pg));
        struct store_dim_value vals[64];
        struct store_error err;
        int n = jn->ndim_columns - 1;
        bool seen[1024] = {0};
        for (int i = 0; i < PQntuples(res); i++) {
            int64_t key = atoll(PQgetvalue(res, i, 0));
            if (key >= 0 && key < 1024)
                seen[key] = true;
            int got = store_projection_get(r, view, j, key, vals, n, &err);
            if (got != 1) {
                snprintf(diff, difflen, "view %s: dim key %" PRId64 " of %s is not in the store",
                         v->name, key, jn->table);
                PQclear(res);
                return -1;
            }
            for (int c = 0; c < n; c++) {
                bool pg_null = PQgetisnull(res, i, c + 1);
                const char *pv = PQgetvalue(res, i, c + 1);
                if (pg_null != vals[c].is_null ||
                    (!pg_null && (strlen(pv) != vals[c].len || memcmp(pv, vals[c].text, vals[c].len)))) {
                    snprintf(diff, difflen, "view %s: dim key %" PRId64 " column %s: PostgreSQL "
                                            "'%s', store '%.*s'%s", v->name, key,
                             jn->dim_columns[c + 1], pg_null ? "NULL" : pv, (int)vals[c].len,
                             vals[c].text ? vals[c].text : "", vals[c].is_null ? " (NULL)" : "");
                    PQclear(res);
                    return -1;
                }
            }
        }
        PQclear(res);
        for (int64_t key = 0; key < 1024; key++)
            if (!seen[key] && store_projection_get(r, view, j, key, vals, n, &err) != 0) {
                snprintf(diff, difflen, "view %s: dim key %" PRId64 " of %s is gone upstream "
                                        "but still in the store", v->name, key, jn->table);
                return -1;
            }
    }
    return 0;
}

int oracle_compare(PGconn *pg, const char *store_dir, char *diff, size_t difflen)
{
    struct store *s;
    struct store_error err;
    struct store_read *r;
    cr_assert_eq(store_open(store_dir, STORE_READ_ONLY, &s, &err), 0, "%s", err.message);
    cr_assert_eq(store_read_begin(s, &r, &err), 0, "%s", err.message);
    int rc = 0;
    for (int view = 0; rc == 0 && view < store_views(s)->nviews; view++) {
        const struct sql_view *v = &store_views(s)->views[view];
        const struct store_column_type *types = store_fact_types(s, view);
        for (int w = 0; rc == 0 && w < v->nwidths; w++) {
            struct lines want = {0}, got = {0}, want_vc = {0}, got_vc = {0};
            pg_cells(pg, v, types, w, &want);
            pg_value_counts(pg, v, w, &want_vc);
            store_lines(s, r, view, w, &got, &got_vc);
            char what[128];
            snprintf(what, sizeof what, "view %s width %d cells", v->name, w);
            rc = compare_lines(&want, &got, what, diff, difflen);
            snprintf(what, sizeof what, "view %s width %d value counts", v->name, w);
            if (rc == 0)
                rc = compare_lines(&want_vc, &got_vc, what, diff, difflen);
            free_lines(&want);
            free_lines(&got);
            free_lines(&want_vc);
            free_lines(&got_vc);
        }
        if (rc == 0)
            rc = compare_projections(pg, r, v, view, diff, difflen);
    }
    store_read_end(r);
    store_close(s);
    return rc;
}
