/* taxi_demo.c -- `taxi demo`: the ten benchmark asks (tests/kit/taxi_asks.h),
 * each run on PostgreSQL (session time zone America/New_York; one warm-up,
 * then one timed run) and posted to straum-serve (median of back-to-back
 * requests on one kept-alive connection), both answers printed side by side
 * and checked equal (tests/kit/answer.h). Exit 0 only if every answer is equal.
 * tools/demo.sh runs it; it is not a benchmark run (see the other modes). */
#include "tests/kit/answer.h"
#include "bench/taxi.h"
#include "tests/kit/taxi_asks.h"

#include <libpq-fe.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DEMO_TZ "America/New_York"
#define DEMO_MAX_RUNS 10000

struct demo_opts {
    const char *pg, *url;
    bool selected[TAXI_NASKS];
    int runs;     /* timed Straum requests per ask */
    int max_rows; /* rows shown per side */
};

struct demo_result {
    bool done, equal;
    int64_t pg_ns, straum_ns;
};

static int demo_usage(void)
{
    fprintf(stderr,
            "usage: taxi demo --pg CONNINFO --url http://HOST:PORT [--asks LIST] [--runs N]\n"
            "                 [--rows N]\n"
            "  --asks LIST  ask numbers to run, e.g. 3,7 (default all ten)\n"
            "  --runs N     timed straum-serve requests per ask; the median is shown (20)\n"
            "  --rows N     rows shown of each answer (6)\n");
    return 2;
}

static int parse_asks(const char *list, bool *selected)
{
    memset(selected, 0, sizeof(bool) * TAXI_NASKS);
    const char *p = list;
    while (*p) {
        char *end;
        long n = strtol(p, &end, 10);
        if (end == p || n < 1 || n > TAXI_NASKS)
            return -1;
        selected[n - 1] = true;
        p = end;
        if (*p == ',')
            p++;
        else if (*p)
            return -1;
    }
    return 0;
}

/* True when every shown value of column c is a number (or NULL): such
 * columns are right-aligned. */
static bool numeric_column(const struct answer *a, int c, int shown)
{
    for (int r = 0; r < shown; r++) {
        const char *v = a->rows[r].cells[c];
        if (!strcmp(v, "NULL"))
            continue;
        char *end;
        strtod(v, &end);
        if (end == v || *end)
            return false;
    }
    return true;
}

/* One side of the table: widths of each column over header and shown rows. */
struct side {
    const struct answer *a;
    int shown;
    int width[16];
    bool right[16];
    int content; /* width of the columns with their gaps */
    int total;   /* width the side is padded to (at least its title's) */
};

static void side_init(struct side *s, const struct answer *a, int max_rows)
{
    memset(s, 0, sizeof *s);
    s->a = a;
    s->shown = a->nrows < max_rows ? a->nrows : max_rows;
    int ncols = a->ncols < 16 ? a->ncols : 16;
    for (int c = 0; c < ncols; c++) {
        int w = taxi_text_width(a->columns[c]);
        for (int r = 0; r < s->shown; r++) {
            int vw = taxi_text_width(a->rows[r].cells[c]);
            if (vw > w)
                w = vw;
        }
        s->width[c] = w;
        s->right[c] = numeric_column(a, c, s->shown);
        s->content += w + (c ? 2 : 0);
    }
    s->total = s->content;
    char more[64], n[32];
    if (a->nrows > s->shown)
        snprintf(more, sizeof more, "… %s rows", taxi_format_count(a->nrows, n, sizeof n));
    else
        snprintf(more, sizeof more, "%s", a->nrows ? "" : "(no rows)");
    if (taxi_text_width(more) > s->total)
        s->total = taxi_text_width(more);
}

/* Writes line `line` of a side (0 = header, 1.. = rows, then "… N rows")
 * into out, padded to the side's width when pad. */
static void side_line(const struct side *s, int line, char *out, size_t len, bool pad)
{
    size_t o = 0;
    out[0] = '\0';
    int ncols = s->a->ncols < 16 ? s->a->ncols : 16;
    int used = 0;
    if (line == 0 || line <= s->shown) {
        for (int c = 0; c < ncols; c++) {
            const char *v = line == 0 ? s->a->columns[c] : s->a->rows[line - 1].cells[c];
            int fill = s->width[c] - taxi_text_width(v);
            o += (size_t)snprintf(out + o, len - o, "%s%*s%s%*s", c ? "  " : "",
                                  s->right[c] ? fill : 0, "", v, s->right[c] ? 0 : fill, "");
            if (o >= len)
                return;
        }
        used = s->content;
    } else if (line == s->shown + 1 && s->a->nrows > s->shown) {
        char n[32];
        o += (size_t)snprintf(out, len, "… %s rows", taxi_format_count(s->a->nrows, n, sizeof n));
        used = taxi_text_width(out);
    } else if (line == 1 && s->a->nrows == 0) {
        o += (size_t)snprintf(out, len, "(no rows)");
        used = taxi_text_width(out);
    }
    if (pad && o < len)
        snprintf(out + o, len - o, "%*s", s->total - used > 0 ? s->total - used : 0, "");
}

static int side_lines(const struct side *s)
{
    if (s->a->nrows == 0)
        return 2;
    return 1 + s->shown + (s->a->nrows > s->shown ? 1 : 0);
}

static void print_side_by_side(const struct answer *want, const struct answer *got, int max_rows)
{
    struct side l, r;
    side_init(&l, want, max_rows);
    side_init(&r, got, max_rows);
    const char *lt = "PostgreSQL", *rt = "Straum";
    if (l.total < (int)strlen(lt))
        l.total = (int)strlen(lt);
    int lines = side_lines(&l) > side_lines(&r) ? side_lines(&l) : side_lines(&r);
    printf("      %-*s │ %s\n", l.total, lt, rt);
    for (int i = 0; i < lines; i++) {
        char a[2048], b[2048];
        side_line(&l, i, a, sizeof a, true);
        side_line(&r, i, b, sizeof b, false);
        printf("      %s │ %s\n", a, b);
    }
}

static void print_params(const struct taxi_ask *a)
{
    printf("                  params [");
    for (int i = 0; a->params[i]; i++)
        printf("%s\"%s\"", i ? ", " : "", a->params[i]);
    printf("], time_zone %s\n", DEMO_TZ);
}

/* Runs one ask on both sides; prints it; fills res. */
static void run_ask(int idx, const struct demo_opts *o, PGconn *pg, struct http_client *http,
                    struct demo_result *res)
{
    const struct taxi_ask *a = &TAXI_ASKS[idx];
    char t1[32], t2[32], ratio[32], err[1024];
    printf("\n  %2d. %s\n", idx + 1, a->name);
    printf("      PostgreSQL  %s\n", a->postgres_sql);
    printf("      Straum      %s\n", a->ask);
    print_params(a);
    printf("\n");
    memset(res, 0, sizeof *res);
    res->done = true;

    /* PostgreSQL: one warm-up, one timed run. */
    PGresult *pr = PQexec(pg, a->postgres_sql);
    if (PQresultStatus(pr) == PGRES_TUPLES_OK) {
        PQclear(pr);
        int64_t t0 = taxi_now_ns();
        pr = PQexec(pg, a->postgres_sql);
        res->pg_ns = taxi_now_ns() - t0;
    }
    if (PQresultStatus(pr) != PGRES_TUPLES_OK) {
        printf("      PostgreSQL failed: %s", PQerrorMessage(pg));
        PQclear(pr);
        return;
    }
    struct answer want, got;
    if (answer_from_pg(pr, &want) != 0) {
        PQclear(pr);
        printf("      out of memory\n");
        return;
    }
    PQclear(pr);

    /* Straum: the first request is the answer (and warms the ask cache);
     * then `runs` timed ones back to back on the same connection. */
    struct http_response resp = {0};
    if (taxi_post_ask(http, a->ask, a->params, DEMO_TZ, &resp, err, sizeof err) != 0) {
        printf("      straum-serve failed: %s\n", err);
        goto out_want;
    }
    if (resp.status != 200) {
        printf("      straum-serve answered %d: %s\n", resp.status, resp.body);
        goto out_want;
    }
    if (answer_from_json(resp.body, &got, err, sizeof err) != 0) {
        printf("      straum-serve's answer: %s\n", err);
        goto out_want;
    }
    int64_t *times = malloc(sizeof *times * (size_t)o->runs);
    if (!times) {
        printf("      out of memory\n");
        goto out_got;
    }
    for (int i = 0; i < o->runs; i++) {
        int64_t t0 = taxi_now_ns();
        if (taxi_post_ask(http, a->ask, a->params, DEMO_TZ, &resp, err, sizeof err) != 0 ||
            resp.status != 200) {
            printf("      straum-serve failed on timed request %d: %s\n", i + 1,
                   resp.status != 200 ? resp.body : err);
            free(times);
            goto out_got;
        }
        times[i] = taxi_now_ns() - t0;
    }
    res->straum_ns = taxi_median(times, o->runs);
    free(times);

    print_side_by_side(&want, &got, o->max_rows);
    char why[1024];
    res->equal = answer_equal(&want, &got, why, sizeof why);
    printf("\n      PostgreSQL %s   Straum %s (median of %d)   %s faster   %s\n",
           taxi_format_ns(res->pg_ns, t1, sizeof t1), taxi_format_ns(res->straum_ns, t2, sizeof t2),
           o->runs,
           taxi_format_ratio((double)res->pg_ns / (double)(res->straum_ns ? res->straum_ns : 1),
                             ratio, sizeof ratio),
           res->equal ? "equal" : "DIFFERENT");
    if (!res->equal)
        printf("      %s\n", why);
out_got:
    answer_free(&got);
out_want:
    answer_free(&want);
    http_response_free(&resp);
}

static void print_summary(const struct demo_result *res)
{
    int namew = 4;
    for (int i = 0; i < TAXI_NASKS; i++)
        if (res[i].done && (int)strlen(TAXI_ASKS[i].name) + 4 > namew)
            namew = (int)strlen(TAXI_ASKS[i].name) + 4;
    printf("\n  %-*s  %10s  %10s  %8s  %s\n", namew, "Ask", "PostgreSQL", "Straum", "faster",
           "answer");
    for (int i = 0; i < TAXI_NASKS; i++) {
        if (!res[i].done)
            continue;
        char label[128], t1[32], t2[32], ratio[32];
        snprintf(label, sizeof label, "%2d. %s", i + 1, TAXI_ASKS[i].name);
        if (!res[i].straum_ns || !res[i].pg_ns) {
            printf("  %-*s  %10s  %10s  %8s  %s\n", namew, label, "-", "-", "-", "ERROR");
            continue;
        }
        taxi_format_ns(res[i].pg_ns, t1, sizeof t1);
        taxi_format_ns(res[i].straum_ns, t2, sizeof t2);
        /* µ takes two bytes for one column: widen the field by one. */
        printf("  %-*s  %*s  %*s  %8s  %s\n", namew, label, 10 + (strstr(t1, "µ") ? 1 : 0), t1,
               10 + (strstr(t2, "µ") ? 1 : 0), t2,
               taxi_format_ratio((double)res[i].pg_ns / (double)res[i].straum_ns, ratio,
                                 sizeof ratio),
               res[i].equal ? "equal" : "DIFFERENT");
    }
}

int taxi_demo_main(int argc, char **argv)
{
    struct demo_opts o = {.runs = 20, .max_rows = 6};
    for (int i = 0; i < TAXI_NASKS; i++)
        o.selected[i] = true;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (i + 1 >= argc)
            return demo_usage();
        const char *v = argv[++i];
        if (!strcmp(a, "--pg"))
            o.pg = v;
        else if (!strcmp(a, "--url"))
            o.url = v;
        else if (!strcmp(a, "--asks")) {
            if (parse_asks(v, o.selected) != 0) {
                fprintf(stderr, "taxi demo: --asks takes numbers 1 to %d, e.g. 3,7\n", TAXI_NASKS);
                return 2;
            }
        } else if (!strcmp(a, "--runs"))
            o.runs = atoi(v);
        else if (!strcmp(a, "--rows"))
            o.max_rows = atoi(v);
        else
            return demo_usage();
    }
    if (!o.pg || !o.url || o.runs < 1 || o.runs > DEMO_MAX_RUNS || o.max_rows < 0)
        return demo_usage();

    PGconn *pg = PQconnectdb(o.pg);
    if (PQstatus(pg) != CONNECTION_OK) {
        fprintf(stderr, "taxi demo: cannot connect to PostgreSQL: %s", PQerrorMessage(pg));
        PQfinish(pg);
        return 2;
    }
    PGresult *r = PQexec(pg, "SET TIME ZONE '" DEMO_TZ "'");
    if (PQresultStatus(r) != PGRES_COMMAND_OK) {
        fprintf(stderr, "taxi demo: SET TIME ZONE: %s", PQerrorMessage(pg));
        PQclear(r);
        PQfinish(pg);
        return 2;
    }
    PQclear(r);
    struct http_client http;
    char err[512];
    if (http_client_open(&http, o.url, err, sizeof err) != 0) {
        fprintf(stderr, "taxi demo: %s\n", err);
        PQfinish(pg);
        return 2;
    }

    struct demo_result res[TAXI_NASKS] = {0};
    int failed = 0;
    for (int i = 0; i < TAXI_NASKS; i++) {
        if (!o.selected[i])
            continue;
        run_ask(i, &o, pg, &http, &res[i]);
        if (!res[i].equal)
            failed++;
        fflush(stdout);
    }
    print_summary(res);
    if (http.reconnects)
        printf("\n  note: straum-serve closed the connection %d times; those requests' times\n"
               "  include connecting again\n",
               http.reconnects);
    if (failed)
        printf("\n  %d answer%s DIFFERENT from PostgreSQL's\n", failed, failed == 1 ? "" : "s");
    http_client_close(&http);
    PQfinish(pg);
    return failed ? 1 : 0;
}
