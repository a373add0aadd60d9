/* test_dump.c -- straum-dump end to end: builds a small store through the
 * store API, runs the straum-dump binary on it and checks what it prints,
 * against a model of the rows kept here (cell counts are distinct tuples).
 *
 * The damage test flips one byte of a segment block inside data.mdb: the
 * block is made large (> 4 KiB) so LMDB keeps it contiguous in overflow
 * pages, and the store is written in a single commit so no stale copy of
 * the block sits in a freed page to be flipped by mistake. */
#include <criterion/criterion.h>
#include <cjson/cJSON.h>

#include "store/store.h"

#include <lmdb.h>

#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define HOUR_USEC (3600LL * 1000000)
#define DAY_USEC (24 * HOUR_USEC)
#define SPAN_USEC (64 * HOUR_USEC) /* store_span_buckets: 64 buckets of the finest width, 1 hour */
#define NROWS 1500
#define NZONES_WITH_ROWS 20
#define NZONES_PROJECTED 15
#define TEST_LSN ((0x1AULL << 32) | 0x002B3C4DULL)
#define TEST_LSN_TEXT "1A/002B3C4D"

static const char *const views_text =
    "CREATE VIEW trips WITH (buckets = '1 hour, 1 day') AS\n"
    "SELECT date_bin('1 hour', t.pickup_at, timestamptz 'epoch') AS bucket, t.zone_id,\n"
    " z.borough, t.payment_type,\n"
    " count(*) AS trips, sum(t.fare) AS fare,\n"
    " percentile_disc(0.5) WITHIN GROUP (ORDER BY t.fare) AS median_fare\n"
    "FROM yellow_trips t LEFT JOIN zones z ON z.id = t.zone_id GROUP BY 1, 2, 3, 4";

/* Texts that exercise the dictionary and escaping: quote, backslash,
 * non-ASCII, control characters (which must not break a line of human
 * output) and a byte that is not UTF-8 (JSON gets U+FFFD instead). */
static const char *const payments[] = {"card", "cash", "no charge", "dispute",
                                       "say \"hi\" \\ ok", "\xc3\xa9\x63hec",
                                       "bad\xff\tline\nbreak"};
#define NPAYMENTS ((int)(sizeof payments / sizeof payments[0]))
static const char *const boroughs[] = {"Manhattan", "Brooklyn", "Queens", "Bronx",
                                       "Staten Island"};

struct row {
    int64_t time;
    int64_t zone;    /* STORE_NULL or 1.. */
    int payment;     /* -1 NULL, else index into payments */
    int64_t fare;    /* cents, or STORE_NULL */
};

/* What a test needs to know about the store it built. */
struct fixture {
    char dir[256];   /* the temp dir holding everything */
    char store[300]; /* dir/store */
    struct row rows[NROWS];
    int64_t payment_ids[NPAYMENTS];
    long cells_w0, cells_w1;
};

static uint64_t rng_state = 0x9e3779b97f4a7c15ULL;
static uint64_t rng(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}

static int fact_index(const struct sql_view *v, const char *name)
{
    for (int i = 0; i < v->nfact_columns; i++)
        if (strcmp(v->fact_columns[i].name, name) == 0)
            return i;
    cr_assert_fail("fact column %s missing", name);
    return -1;
}

/* The code of a row's fact column, as the store keeps it. */
static int64_t row_code(const struct fixture *fx, const struct row *r, const char *col)
{
    if (strcmp(col, "zone_id") == 0)
        return r->zone;
    if (strcmp(col, "payment_type") == 0)
        return r->payment < 0 ? STORE_NULL : fx->payment_ids[r->payment];
    if (strcmp(col, "fare") == 0)
        return r->fare;
    if (strcmp(col, "pickup_at") == 0)
        return r->time;
    cr_assert_fail("no column %s in the model", col);
    return STORE_NULL;
}

struct tuple {
    int64_t a, b, c;
};

static int tuple_cmp(const void *x, const void *y)
{
    const struct tuple *p = x, *q = y;
    if (p->a != q->a)
        return p->a < q->a ? -1 : 1;
    if (p->b != q->b)
        return p->b < q->b ? -1 : 1;
    if (p->c != q->c)
        return p->c < q->c ? -1 : 1;
    return 0;
}

static int64_t floor_to(int64_t t, int64_t w)
{
    int64_t q = t / w;
    if (t % w && t < 0)
        q--;
    return q * w;
}

/* Distinct (bucket, zone, payment) tuples of rows with time in [from, to). */
static long distinct_cells(const struct row *rows, int n, int64_t width, int64_t from, int64_t to)
{
    struct tuple *t = calloc((size_t)n, sizeof *t);
    int m = 0;
    for (int i = 0; i < n; i++) {
        int64_t b = floor_to(rows[i].time, width);
        if (b >= from && b < to)
            t[m++] = (struct tuple){b, rows[i].zone, rows[i].payment};
    }
    qsort(t, (size_t)m, sizeof *t, tuple_cmp);
    long distinct = 0;
    for (int i = 0; i < m; i++)
        if (i == 0 || tuple_cmp(&t[i], &t[i - 1]) != 0)
            distinct++;
    free(t);
    return distinct;
}

static void build_store(struct fixture *fx)
{
    memset(fx, 0, sizeof *fx);
    snprintf(fx->dir, sizeof fx->dir, "/tmp/straum-dump-test-XXXXXX");
    cr_assert_not_null(mkdtemp(fx->dir));
    snprintf(fx->store, sizeof fx->store, "%s/store", fx->dir);

    struct sql_error serr;
    struct sql_view_list *views = sql_parse_views(views_text, &serr);
    cr_assert_not_null(views, "views: %s", serr.message);
    const struct sql_view *v = &views->views[0];
    struct store_column_type *types = calloc((size_t)v->nfact_columns, sizeof *types);
    types[fact_index(v, "zone_id")] = (struct store_column_type){STORE_TYPE_INT, 0, 23};
    types[fact_index(v, "payment_type")] = (struct store_column_type){STORE_TYPE_TEXT, 0, 25};
    types[fact_index(v, "fare")] = (struct store_column_type){STORE_TYPE_NUMERIC, 2, 1700};
    types[fact_index(v, "pickup_at")] = (struct store_column_type){STORE_TYPE_TIMESTAMP, 0, 1184};
    struct store_view_types vt = {types};

    struct store *s;
    struct store_error err;
    cr_assert_eq(store_create(fx->store, views_text, &vt, &s, &err), 0, "%s", err.message);
    free(types);
    v = &store_views(s)->views[0];
    sql_view_list_free(views);

    int pay_col = fact_index(v, "payment_type");
    for (int p = 0; p < NPAYMENTS; p++)
        cr_assert_eq(store_dict_intern(s, 0, pay_col, payments[p], strlen(payments[p]),
                                       &fx->payment_ids[p], &err),
                     0, "%s", err.message);

    /* Rows fill the first 48 hours of one 64-hour span (one big block at
     * width 0) and a few hours of the next. */
    int64_t base = floor_to(1704067200LL * 1000000, SPAN_USEC);
    for (int i = 0; i < NROWS; i++) {
        struct row *r = &fx->rows[i];
        int64_t hour = i % 10 == 9 ? 64 + (int64_t)(rng() % 6) : (int64_t)(rng() % 48);
        r->time = base + hour * HOUR_USEC + (int64_t)(rng() % 3600) * 1000000;
        r->zone = rng() % 20 == 0 ? STORE_NULL : 1 + (int64_t)(rng() % NZONES_WITH_ROWS);
        r->payment = rng() % 30 == 0 ? -1 : (int)(rng() % NPAYMENTS);
        /* Some refunds: negative fares make negative exact sums. */
        uint64_t f = rng() % 50;
        r->fare = f < 2 ? STORE_NULL : f < 3 ? -(int64_t)(1 + rng() % 99) : 250 + (int64_t)(rng() % 9750);

        int64_t keys[8], counts[8];
        struct store_sum sums[8];
        struct store_vc_delta vcs[8];
        int nvcs = 0;
        cr_assert(v->ncell_keys <= 8 && v->ncounts <= 8 && v->nsums <= 8 &&
                  v->nvalue_counts <= 8 && v->nfilters == 0);
        for (int k = 0; k < v->ncell_keys; k++)
            keys[k] = row_code(fx, r, v->fact_columns[v->cell_keys[k]].name);
        for (int k = 0; k < v->ncounts; k++) {
            int col = v->counts[k].fact_column;
            counts[k] = col < 0 || row_code(fx, r, v->fact_columns[col].name) != STORE_NULL;
        }
        for (int k = 0; k < v->nsums; k++) {
            int64_t c = row_code(fx, r, v->fact_columns[v->sums[k].fact_column].name);
            sums[k] = (struct store_sum){c == STORE_NULL ? 0 : c, 0};
        }
        for (int k = 0; k < v->nvalue_counts; k++) {
            int64_t c = row_code(fx, r, v->fact_columns[v->value_counts[k].fact_column].name);
            if (c != STORE_NULL)
                vcs[nvcs++] = (struct store_vc_delta){k, c, 1};
        }
        struct store_delta d = {0, r->time, keys, counts, sums, vcs, nvcs};
        cr_assert_eq(store_apply(s, &d, &err), 0, "%s", err.message);
    }
    for (int z = 1; z <= NZONES_PROJECTED; z++) {
        const char *b = boroughs[z % 5];
        struct store_dim_value dv = {false, b, strlen(b)};
        cr_assert_eq(store_projection_put(s, 0, 0, z, &dv, &err), 0, "%s", err.message);
    }
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    int64_t now_usec = (int64_t)now.tv_sec * 1000000;
    struct store_position pos = {TEST_LSN, now_usec - 5000000, now_usec, 1234};
    cr_assert_eq(store_commit(s, &pos, &err), 0, "%s", err.message);
    store_close(s);

    fx->cells_w0 = distinct_cells(fx->rows, NROWS, HOUR_USEC, INT64_MIN, INT64_MAX);
    fx->cells_w1 = distinct_cells(fx->rows, NROWS, DAY_USEC, INT64_MIN, INT64_MAX);
}

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st, (void)flag, (void)ftw;
    return remove(path);
}

static void remove_fixture(struct fixture *fx)
{
    if (getenv("STRAUM_DUMP_TEST_KEEP")) /* to look at a store by hand */
        return;
    nftw(fx->dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

static char *read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    cr_assert_not_null(f, "open %s", path);
    size_t cap = 4096, n = 0;
    char *buf = malloc(cap);
    size_t got;
    while ((got = fread(buf + n, 1, cap - n - 1, f)) > 0) {
        n += got;
        if (cap - n - 1 == 0)
            buf = realloc(buf, cap *= 2);
    }
    fclose(f);
    buf[n] = '\0';
    if (len)
        *len = n;
    return buf;
}

/* What a run of straum-dump printed and how it ended. */
struct run {
    int status; /* exit status, or 128 + signal */
    char *out, *err;
};

static void run_free(struct run *r)
{
    free(r->out);
    free(r->err);
}

/* Runs straum-dump with args (NULL-terminated), capturing stdout and
 * stderr in files (no pipe to fill up and block on). */
static struct run run_dump_v(const struct fixture *fx, const char *const *args)
{
    char out_path[320], err_path[320];
    snprintf(out_path, sizeof out_path, "%s/out.txt", fx->dir);
    snprintf(err_path, sizeof err_path, "%s/err.txt", fx->dir);
    const char *argv[32] = {STRAUM_DUMP_BIN};
    int n = 1;
    for (; args[n - 1]; n++)
        argv[n] = args[n - 1];
    argv[n] = NULL;
    fflush(NULL);
    pid_t pid = fork();
    cr_assert(pid >= 0);
    if (pid == 0) {
        int o = open(out_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        int e = open(err_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (o < 0 || e < 0 || dup2(o, 1) < 0 || dup2(e, 2) < 0)
            _exit(127);
        execv(STRAUM_DUMP_BIN, (char *const *)argv);
        _exit(127);
    }
    int ws;
    cr_assert_eq(waitpid(pid, &ws, 0), pid);
    struct run r;
    r.status = WIFEXITED(ws) ? WEXITSTATUS(ws) : 128 + WTERMSIG(ws);
    r.out = read_file(out_path, NULL);
    r.err = read_file(err_path, NULL);
    return r;
}

#define run_dump(fx, ...) run_dump_v(fx, (const char *const[]){__VA_ARGS__, NULL})

static int count_lines(const char *s)
{
    int n = 0;
    for (; *s; s++)
        n += *s == '\n';
    return n;
}

static cJSON *parse_json(const struct run *r)
{
    cJSON *j = cJSON_Parse(r->out);
    cr_assert_not_null(j, "not JSON: %s", r->out);
    return j;
}

static cJSON *path(cJSON *j, const char *key)
{
    cJSON *c = cJSON_GetObjectItemCaseSensitive(j, key);
    cr_assert_not_null(c, "no \"%s\" in JSON", key);
    return c;
}

static void iso_pg(char *buf, size_t len, int64_t usec)
{
    time_t s = (time_t)(usec / 1000000);
    struct tm tm;
    gmtime_r(&s, &tm);
    strftime(buf, len, "%Y-%m-%d %H:%M:%S+00", &tm);
}

/* ---- Tests -------------------------------------------------------------------- */

Test(dump, catalog)
{
    static struct fixture fx;
    build_store(&fx);
    struct run r = run_dump(&fx, "--store", fx.store, "catalog");
    cr_assert_eq(r.status, 0, "stderr: %s", r.err);
    cr_expect(strstr(r.out, "view trips"), "%s", r.out);
    cr_expect(strstr(r.out, TEST_LSN_TEXT), "%s", r.out);
    cr_expect(strstr(r.out, "1 hour"), "%s", r.out);
    cr_expect(strstr(r.out, "1 day"), "%s", r.out);
    cr_expect(strstr(r.out, "yellow_trips"), "%s", r.out);
    cr_expect(strstr(r.out, "bytes behind    1234"), "%s", r.out);
    cr_expect(strstr(r.out, "percentile_disc(0.5) WITHIN GROUP (ORDER BY fare)"), "%s", r.out);
    cr_expect(strstr(r.out, "numeric"), "%s", r.out);
    run_free(&r);

    r = run_dump(&fx, "--json", "--store", fx.store, "catalog");
    cr_assert_eq(r.status, 0, "stderr: %s", r.err);
    cJSON *j = parse_json(&r);
    cr_expect_str_eq(path(path(j, "position"), "lsn")->valuestring, TEST_LSN_TEXT);
    cr_expect_eq(path(path(j, "position"), "bytes_behind")->valuedouble, 1234);
    cr_expect_geq(path(path(j, "position"), "lag_usec")->valuedouble, 5e6);
    cJSON *view = cJSON_GetArrayItem(path(j, "views"), 0);
    cr_expect_str_eq(path(view, "name")->valuestring, "trips");
    cr_expect_str_eq(path(cJSON_GetArrayItem(path(view, "widths"), 1), "width")->valuestring,
                     "1 day");
    cr_expect_eq(cJSON_GetArraySize(path(view, "cell_keys")), 2);
    cJSON_Delete(j);
    run_free(&r);
    remove_fixture(&fx);
}

Test(dump, stats)
{
    static struct fixture fx;
    build_store(&fx);
    struct run r = run_dump(&fx, "--store", fx.store, "stats");
    cr_assert_eq(r.status, 0, "stderr: %s", r.err);
    cr_expect(strstr(r.out, "bytes/cell"), "%s", r.out);
    /* The width-0 row carries the model's cell count as a column. */
    char want[64];
    snprintf(want, sizeof want, " %ld ", fx.cells_w0);
    char *row = NULL;
    for (const char *line = r.out; *line && !row;) {
        const char *eol = strchr(line, '\n');
        size_t n = eol ? (size_t)(eol - line) : strlen(line);
        char *l = strndup(line, n);
        if (strncmp(l, "trips ", 6) == 0 && strstr(l, " 1 hour "))
            row = l;
        else
            free(l);
        line += n + (eol != NULL);
    }
    cr_assert_not_null(row, "no width-0 row in %s", r.out);
    cr_expect(strstr(row, want), "row \"%s\" lacks %ld cells", row, fx.cells_w0);
    free(row);
    run_free(&r);

    r = run_dump(&fx, "--store", fx.store, "stats", "--json");
    cr_assert_eq(r.status, 0, "stderr: %s", r.err);
    cJSON *j = parse_json(&r);
    cJSON *view = cJSON_GetArrayItem(path(j, "views"), 0);
    cJSON *w0 = cJSON_GetArrayItem(path(view, "widths"), 0);
    cJSON *w1 = cJSON_GetArrayItem(path(view, "widths"), 1);
    cr_expect_eq((long)path(w0, "cells")->valuedouble, fx.cells_w0);
    cr_expect_eq((long)path(w1, "cells")->valuedouble, fx.cells_w1);
    cr_expect_eq((long)path(w0, "segments")->valuedouble, 2);
    cr_expect_gt(path(w0, "value_count_entries")->valuedouble, 0);
    cr_expect_eq((long)path(path(j, "total"), "cells")->valuedouble, fx.cells_w0 + fx.cells_w1);
    cr_expect_gt(path(j, "file_bytes")->valuedouble, 0);
    cJSON_Delete(j);
    run_free(&r);
    remove_fixture(&fx);
}

Test(dump, cells)
{
    static struct fixture fx;
    build_store(&fx);
    struct run r = run_dump(&fx, "--store", fx.store, "cells", "trips", "--width", "0",
                            "--limit", "0");
    cr_assert_eq(r.status, 0, "stderr: %s", r.err);
    cr_expect_eq(count_lines(r.out), fx.cells_w0);
    cr_expect(strstr(r.out, "borough=Brooklyn"), "no borough from the projection");
    cr_expect(strstr(r.out, "borough=NULL"), "zones without a dim row show NULL");
    cr_expect(strstr(r.out, "payment_type=card"), "no text payment type");
    cr_expect(strstr(r.out, "payment_type=no charge"));
    cr_expect(strstr(r.out, "payment_type=NULL"));
    cr_expect(strstr(r.out, "payment_type=bad\xff\\tline\\nbreak  "), "control bytes escaped");
    cr_expect(strstr(r.out, "count(*)="));
    cr_expect(strstr(r.out, "sum(fare)="));
    cr_expect(strstr(r.out, "values(fare)={"));
    cr_expect(strstr(r.out, "+00  zone_id="), "bucket first, as PostgreSQL prints it");
    run_free(&r);

    /* The default limit, and a note on stderr when cells are left out. */
    r = run_dump(&fx, "--store", fx.store, "cells", "trips", "--width", "1 hour");
    cr_assert_eq(r.status, 0, "stderr: %s", r.err);
    cr_expect_eq(count_lines(r.out), 100);
    cr_expect(strstr(r.err, "--limit"));
    run_free(&r);

    /* A time range at the coarse width, by width text. */
    int64_t base = floor_to(fx.rows[0].time, SPAN_USEC);
    char from[64], to[64];
    iso_pg(from, sizeof from, base + DAY_USEC);
    iso_pg(to, sizeof to, base + 2 * DAY_USEC);
    from[19] = to[19] = '\0'; /* no offset: read as UTC */
    r = run_dump(&fx, "--store", fx.store, "cells", "trips", "--width", "1 day", "--from", from,
                 "--to", to, "--limit", "0");
    cr_assert_eq(r.status, 0, "stderr: %s", r.err);
    cr_expect_eq(count_lines(r.out),
                 distinct_cells(fx.rows, NROWS, DAY_USEC, base + DAY_USEC, base + 2 * DAY_USEC));
    run_free(&r);

    /* JSON: every cell, exact sums as strings, texts escaped. */
    r = run_dump(&fx, "--store", fx.store, "--json", "cells", "trips", "--width", "0", "--limit",
                 "0");
    cr_assert_eq(r.status, 0, "stderr: %s", r.err);
    cJSON *j = parse_json(&r);
    cJSON *cells = path(j, "cells");
    cr_expect_eq(cJSON_GetArraySize(cells), fx.cells_w0);
    cr_expect(cJSON_IsFalse(path(j, "truncated")));
    bool saw_quote = false, saw_accent = false, saw_replaced = false, saw_negative = false;
    int64_t rows = 0, fare_cents = 0;
    cJSON *cell;
    cJSON_ArrayForEach(cell, cells)
    {
        cJSON *pay = path(path(cell, "keys"), "payment_type");
        if (cJSON_IsString(pay)) {
            saw_quote |= strcmp(pay->valuestring, payments[4]) == 0;
            saw_accent |= strcmp(pay->valuestring, payments[5]) == 0;
            saw_replaced |= strcmp(pay->valuestring, "bad\xef\xbf\xbd\tline\nbreak") == 0;
        }
        rows += (int64_t)path(path(cell, "counts"), "count(*)")->valuedouble;
        cJSON *sum = path(path(cell, "sums"), "sum(fare)");
        cr_assert(cJSON_IsString(sum));
        const char *text = sum->valuestring, *dot = strchr(text, '.');
        cr_assert(dot && strlen(dot) == 3, "sum %s not at scale 2", text);
        bool negative = text[0] == '-';
        int64_t cents = llabs(strtoll(text, NULL, 10)) * 100 + strtoll(dot + 1, NULL, 10);
        saw_negative |= negative && cents > 0;
        fare_cents += negative ? -cents : cents;
    }
    cr_expect(saw_quote && saw_accent, "texts did not come back intact");
    cr_expect(saw_replaced, "the invalid byte did not become U+FFFD");
    cr_expect_eq(rows, NROWS);
    int64_t want_cents = 0;
    for (int i = 0; i < NROWS; i++)
        want_cents += fx.rows[i].fare == STORE_NULL ? 0 : fx.rows[i].fare;
    cr_expect_eq(fare_cents, want_cents);
    cr_expect(saw_negative, "no negative sum was rendered");
    cJSON_Delete(j);
    run_free(&r);
    remove_fixture(&fx);
}

Test(dump, segments)
{
    static struct fixture fx;
    build_store(&fx);
    struct run r = run_dump(&fx, "--store", fx.store, "segments", "trips");
    cr_assert_eq(r.status, 0, "stderr: %s", r.err);
    cr_expect_eq(count_lines(r.out), 3, "%s", r.out); /* 2 hourly spans, 1 daily */
    cr_expect(strstr(r.out, "bucket#0"));
    cr_expect(strstr(r.out, "vc_values#0"));
    run_free(&r);

    r = run_dump(&fx, "--store", fx.store, "--json", "segments", "trips", "--width", "1 day");
    cr_assert_eq(r.status, 0, "stderr: %s", r.err);
    cJSON *j = parse_json(&r);
    cJSON *segs = path(j, "segments");
    cr_expect_eq(cJSON_GetArraySize(segs), 1);
    cJSON *seg = cJSON_GetArrayItem(segs, 0);
    cr_expect_eq((long)path(seg, "cells")->valuedouble, fx.cells_w1);
    cr_expect_gt(cJSON_GetArraySize(path(seg, "columns")), 5);
    cJSON_Delete(j);
    run_free(&r);
    remove_fixture(&fx);
}

/* Flips one byte in the middle of the largest width-0 block inside
 * data.mdb; returns that segment's span start. */
static int64_t damage_store(const struct fixture *fx)
{
    struct store *s;
    struct store_read *rd;
    struct store_error err;
    cr_assert_eq(store_open(fx->store, STORE_READ_ONLY, &s, &err), 0, "%s", err.message);
    cr_assert_eq(store_read_begin(s, &rd, &err), 0, "%s", err.message);
    struct store_segment_iter it;
    struct store_segment seg;
    cr_assert_eq(store_segments_begin(rd, 0, 0, INT64_MIN, INT64_MAX, &it, &err), 0);
    unsigned char *block = NULL;
    size_t len = 0;
    int64_t span = 0;
    while (store_segments_next(&it, &seg, &err) == 1)
        if (seg.len > len) {
            free(block);
            block = malloc(seg.len);
            memcpy(block, seg.bytes, seg.len);
            len = seg.len;
            span = seg.span_start;
        }
    store_segments_end(&it);
    store_read_end(rd);
    store_close(s);
    cr_assert_gt(len, 4096, "the block (%zu bytes) would not live in overflow pages", len);

    char data_path[400];
    snprintf(data_path, sizeof data_path, "%s/data.mdb", fx->store);
    size_t flen;
    unsigned char *data = (unsigned char *)read_file(data_path, &flen);
    /* A 16-byte window from the middle of the block that occurs once in
     * the file: that is the block's own copy. */
    long at = -1;
    for (size_t off = len / 2; off + 16 < len && at < 0; off += 16) {
        int hits = 0;
        long where = -1;
        for (size_t i = 0; i + 16 <= flen; i++)
            if (data[i] == block[off] && memcmp(data + i, block + off, 16) == 0) {
                hits++;
                where = (long)i;
            }
        if (hits == 1)
            at = where;
    }
    cr_assert_geq(at, 0, "no unique window of the block found in data.mdb");
    int fd = open(data_path, O_WRONLY);
    cr_assert_geq(fd, 0);
    unsigned char b = data[at + 8] ^ 0x5a;
    cr_assert_eq(pwrite(fd, &b, 1, at + 8), 1);
    close(fd);
    free(data);
    free(block);
    return span;
}

Test(dump, verify_and_damage)
{
    static struct fixture fx;
    build_store(&fx);
    struct run r = run_dump(&fx, "--store", fx.store, "verify");
    cr_assert_eq(r.status, 0, "stdout: %s stderr: %s", r.out, r.err);
    char want[128];
    snprintf(want, sizeof want, "ok: 3 segments, %ld cells, %d dim rows verified",
             fx.cells_w0 + fx.cells_w1, NZONES_PROJECTED);
    cr_expect(strstr(r.out, want), "%s", r.out);
    run_free(&r);

    int64_t span = damage_store(&fx);
    char span_text[64];
    iso_pg(span_text, sizeof span_text, span);
    r = run_dump(&fx, "--store", fx.store, "verify");
    cr_expect_eq(r.status, 1, "stdout: %s stderr: %s", r.out, r.err);
    cr_expect(strstr(r.out, "view trips"), "%s", r.out);
    cr_expect(strstr(r.out, "width 1 hour"), "%s", r.out);
    cr_expect(strstr(r.out, span_text), "%s lacks %s", r.out, span_text);
    run_free(&r);

    r = run_dump(&fx, "--store", fx.store, "verify", "--json");
    cr_expect_eq(r.status, 1);
    cJSON *j = parse_json(&r);
    cr_expect(cJSON_IsFalse(path(j, "ok")));
    cJSON *broken = cJSON_GetArrayItem(path(j, "broken"), 0);
    cr_assert_not_null(broken);
    cr_expect_str_eq(path(broken, "width")->valuestring, "1 hour");
    cJSON_Delete(j);
    run_free(&r);
    remove_fixture(&fx);
}

Test(dump, dims)
{
    static struct fixture fx;
    build_store(&fx);
    struct run r = run_dump(&fx, "--store", fx.store, "dims");
    cr_assert_eq(r.status, 0, "stdout: %s stderr: %s", r.out, r.err);
    cr_expect(strstr(r.out, "borough"), "%s", r.out);
    run_free(&r);
    r = run_dump(&fx, "--store", fx.store, "--json", "dims");
    cr_assert_eq(r.status, 0, "stderr: %s", r.err);
    cJSON *j = parse_json(&r);
    cJSON *col = cJSON_GetArrayItem(path(j, "dims"), 0);
    cr_assert_not_null(col, "%s", r.out);
    cr_expect_str_eq(cJSON_GetStringValue(cJSON_GetObjectItem(col, "column")), "borough");
    cr_expect_eq(cJSON_GetNumberValue(cJSON_GetObjectItem(col, "rows")), NZONES_PROJECTED);
    cr_expect_eq(cJSON_GetNumberValue(cJSON_GetObjectItem(col, "nulls")), 0);
    cr_expect_eq(cJSON_GetNumberValue(cJSON_GetObjectItem(col, "texts")), 5);
    cr_expect_eq(cJSON_GetNumberValue(cJSON_GetObjectItem(col, "chunks")), 1);
    cr_expect_eq(cJSON_GetNumberValue(cJSON_GetObjectItem(col, "width")), 1);
    cJSON_Delete(j);
    run_free(&r);
    remove_fixture(&fx);
}

/* Rewrites the store's one dense chunk through LMDB with change() applied
 * to its bytes (and their length). */
static void rewrite_dense_chunk(const struct fixture *fx,
                                void (*change)(unsigned char *bytes, size_t *len))
{
    MDB_env *env;
    MDB_txn *txn;
    MDB_dbi dbi;
    MDB_cursor *cur;
    cr_assert_eq(mdb_env_create(&env), 0);
    mdb_env_set_maxdbs(env, 8);
    mdb_env_set_mapsize(env, (size_t)1 << 30);
    cr_assert_eq(mdb_env_open(env, fx->store, 0, 0644), 0);
    cr_assert_eq(mdb_txn_begin(env, NULL, 0, &txn), 0);
    cr_assert_eq(mdb_dbi_open(txn, "dense", 0, &dbi), 0);
    cr_assert_eq(mdb_cursor_open(txn, dbi, &cur), 0);
    MDB_val k, v;
    cr_assert_eq(mdb_cursor_get(cur, &k, &v, MDB_FIRST), 0, "no dense chunk stored");
    unsigned char key[64], bytes[FORMAT_DENSE_MAX_BYTES + 64];
    size_t klen = k.mv_size, len = v.mv_size;
    memcpy(key, k.mv_data, klen);
    memcpy(bytes, v.mv_data, len);
    mdb_cursor_close(cur);
    change(bytes, &len);
    k = (MDB_val){klen, key};
    v = (MDB_val){len, bytes};
    cr_assert_eq(mdb_put(txn, dbi, &k, &v, 0), 0);
    cr_assert_eq(mdb_txn_commit(txn), 0);
    mdb_env_close(env);
}

/* One entry set to an id its dictionary never gave and the chunk encoded
 * again, checksum and all: bytes a reader trusts, which only verify's
 * read-back of every id tells. */
static void give_an_unknown_id(unsigned char *bytes, size_t *len)
{
    struct format_dense d;
    struct format_error ferr;
    cr_assert_eq(format_dense_open(bytes, *len, &d, &ferr), 0, "%s", ferr.message);
    static uint32_t entries[FORMAT_DENSE_CHUNK];
    format_dense_decode(&d, entries);
    for (uint32_t i = 0; i < FORMAT_DENSE_CHUNK; i++)
        if (entries[i] >= FORMAT_DENSE_FIRST_ID) {
            entries[i] = FORMAT_DENSE_FIRST_ID + 1000;
            break;
        }
    *len = format_dense_encode(entries, bytes);
}

static void flip_an_entry_byte(unsigned char *bytes, size_t *len)
{
    bytes[*len - 1] ^= 0x5a;
}

Test(dump, verify_checks_dense_dim_columns)
{
    static struct fixture fx;
    build_store(&fx);
    rewrite_dense_chunk(&fx, give_an_unknown_id);
    struct run r = run_dump(&fx, "--store", fx.store, "verify");
    cr_expect_eq(r.status, 1, "stdout: %s stderr: %s", r.out, r.err);
    cr_expect(strstr(r.out, "broken: view trips: join"), "%s", r.out);
    cr_expect(strstr(r.out, "does not read back from its dictionary"), "%s", r.out);
    run_free(&r);
    rewrite_dense_chunk(&fx, flip_an_entry_byte);
    r = run_dump(&fx, "--store", fx.store, "verify");
    cr_expect_eq(r.status, 1, "stdout: %s stderr: %s", r.out, r.err);
    cr_expect(strstr(r.out, "checksum"), "%s", r.out);
    run_free(&r);
    r = run_dump(&fx, "--store", fx.store, "dims");
    cr_expect_eq(r.status, 1, "a damaged chunk is reported: %s", r.out);
    cr_expect(strstr(r.err, "checksum"), "%s", r.err);
    run_free(&r);
    remove_fixture(&fx);
}

Test(dump, copy)
{
    static struct fixture fx;
    build_store(&fx);
    char dest[400];
    snprintf(dest, sizeof dest, "%s/copy", fx.dir);
    struct run r = run_dump(&fx, "--store", fx.store, "copy", dest);
    cr_assert_eq(r.status, 0, "stderr: %s", r.err);
    cr_expect(strstr(r.out, "copied"), "%s", r.out);
    run_free(&r);

    r = run_dump(&fx, "--store", dest, "verify");
    cr_expect_eq(r.status, 0, "stdout: %s stderr: %s", r.out, r.err);
    run_free(&r);
    r = run_dump(&fx, "--store", dest, "--json", "stats");
    cr_assert_eq(r.status, 0, "stderr: %s", r.err);
    cJSON *j = parse_json(&r);
    cr_expect_eq((long)path(path(j, "total"), "cells")->valuedouble, fx.cells_w0 + fx.cells_w1);
    cJSON_Delete(j);
    run_free(&r);

    /* A copy never overwrites a store. */
    r = run_dump(&fx, "--store", fx.store, "copy", dest);
    cr_expect_eq(r.status, 1, "stdout: %s", r.out);
    cr_expect(strstr(r.err, "straum-dump: "), "%s", r.err);
    run_free(&r);
    remove_fixture(&fx);
}

Test(dump, usage_errors)
{
    static struct fixture fx;
    build_store(&fx);
    struct run r = run_dump(&fx, "--store", fx.store, "frobnicate");
    cr_expect_eq(r.status, 2);
    cr_expect(strstr(r.err, "straum-dump: unknown command \"frobnicate\""), "%s", r.err);
    run_free(&r);

    r = run_dump(&fx, "stats");
    cr_expect_eq(r.status, 2);
    cr_expect(strstr(r.err, "--store"), "%s", r.err);
    run_free(&r);

    /* A directory that holds no store, and one holding something else. */
    r = run_dump(&fx, "--store", fx.dir, "stats");
    cr_expect_eq(r.status, 2);
    cr_expect(strstr(r.err, "is not a Straum store"), "%s", r.err);
    run_free(&r);
    char other[400];
    snprintf(other, sizeof other, "%s/other", fx.dir);
    mkdir(other, 0755);
    char data[420];
    snprintf(data, sizeof data, "%s/data.mdb", other);
    FILE *f = fopen(data, "w");
    fputs("not an LMDB file", f);
    fclose(f);
    r = run_dump(&fx, "--store", other, "catalog");
    cr_expect_eq(r.status, 2);
    cr_expect(strstr(r.err, "straum-dump: cannot open the store"), "%s", r.err);
    run_free(&r);

    r = run_dump(&fx, "--store", fx.store, "cells", "trips");
    cr_expect_eq(r.status, 2);
    cr_expect(strstr(r.err, "--width"), "%s", r.err);
    run_free(&r);
    r = run_dump(&fx, "--store", fx.store, "cells", "nope", "--width", "0");
    cr_expect_eq(r.status, 2);
    cr_expect(strstr(r.err, "no view \"nope\""), "%s", r.err);
    run_free(&r);
    r = run_dump(&fx, "--store", fx.store, "cells", "trips", "--width", "2 hours");
    cr_expect_eq(r.status, 2);
    cr_expect(strstr(r.err, "0 = 1 hour, 1 = 1 day"), "%s", r.err);
    run_free(&r);
    r = run_dump(&fx, "--store", fx.store, "stats", "--width", "0");
    cr_expect_eq(r.status, 2);
    run_free(&r);
    r = run_dump(&fx, "--store", fx.store, "cells", "trips", "--width", "0", "--from", "soon");
    cr_expect_eq(r.status, 2);
    run_free(&r);

    r = run_dump(&fx, "--json", "verify", "--store=/nonexistent/dir");
    cr_expect_eq(r.status, 2);
    cr_expect(strstr(r.err, "straum-dump: cannot open the store at /nonexistent/dir"), "%s", r.err);
    run_free(&r);

    r = run_dump(&fx, "--version");
    cr_expect_eq(r.status, 0);
    cr_expect_str_eq(r.out, "straum-dump 0.1\n");
    run_free(&r);
    r = run_dump(&fx, "--help");
    cr_expect_eq(r.status, 0);
    cr_expect(strstr(r.out, "usage: straum-dump --store DIR"), "%s", r.out);
    run_free(&r);
    r = run_dump(&fx, "cells", "--help");
    cr_expect_eq(r.status, 0);
    cr_expect(strstr(r.out, "--limit N"), "%s", r.out);
    run_free(&r);
    remove_fixture(&fx);
}
