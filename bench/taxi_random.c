/* taxi_random.c -- `taxi random`: the generated asks of
 * tests/kit/taxi_random.h (a thousand by default, over both views) as a
 * dashboard's users would send them, each timed, a sample checked, the
 * slowest set beside PostgreSQL and DuckDB.
 *
 * Every ask is sent over one keep-alive connection (the client of `taxi
 * asks`) five times back to back; its figure is the median. An ask the
 * server refuses (a 4xx or 5xx: too_many_groups past --max-groups,
 * ask_timeout past --ask-timeout) is sent once and counted by its code.
 * After each ask serve's anonymous RSS (RssAnon, /proc/PID/status) is read:
 * its peak over the run and its value after the last ask are reported
 * beside the value before the first.
 *
 * Then PostgreSQL answers --check asks over the raw tables (session time
 * zone America/New_York, as the asks'): the twenty slowest and the rest
 * spread evenly over the sequence; each answer must equal Straum's (rows as
 * sets, tests/kit/answer.h), a refusal must be too_many_groups for an ask
 * that has more groups than the limit the message names. Any difference
 * fails the run (exit 1) after printing both sides. The twenty slowest are
 * timed on PostgreSQL (median of three, the check's run among them) and,
 * unless --no-duckdb, on an in-memory DuckDB loaded with the same trips
 * (bench/duckdb/taxi_duckdb.mjs --sql, median of three after a warm-up).
 *
 * Reported: p50, p90, p99 and max of the answered asks, overall, per view
 * and over the asks of at most 10,000 rows (the targets' set); refusals by
 * code; the twenty slowest with their text, shape and both peers' times;
 * the RSS figures; the load average before and after. Every ask's figure
 * goes to random-times.tsv in the work dir (kept with --keep-data), one
 * line an ask, for whoever wants the whole distribution. */
#include "tests/kit/answer.h"
#include "tests/kit/taxi_random.h"
#include "bench/taxi_bench.h"
#include "bench/taxi_results.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define RUNS 5        /* requests per ask: the median is its figure */
#define SLOWEST 20    /* asks set beside PostgreSQL and DuckDB */
#define PEER_RUNS 3   /* their runs on each peer */
#define SMALL_ROWS 10000 /* the targets' answers: at most this many rows */

struct timed {
    int number;
    int64_t median_ns;
    int status;       /* 200, or the refusal's */
    char code[32];    /* the refusal's code */
    int rows;
    double pg_ms, duckdb_ms; /* -1: not measured */
    int checked;      /* 0 not, 1 equal, -1 differs */
};

static int json_rows(const char *body)
{
    cJSON *j = cJSON_Parse(body);
    int n = cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(j, "rows"));
    cJSON_Delete(j);
    return n;
}

static void refusal_code(const char *body, char *code, size_t len)
{
    cJSON *j = cJSON_Parse(body);
    const char *c = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(j, "code"));
    if (!c) { /* {"error": {"code": ...}} */
        cJSON *err = cJSON_GetObjectItemCaseSensitive(j, "error");
        c = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(err, "code"));
    }
    snprintf(code, len, "%s", c ? c : "?");
    cJSON_Delete(j);
}

/* Times ask a: RUNS requests, or one when refused. -1 when the connection
 * fails (printed). */
static int time_one(struct http_client *c, const struct taxi_random_ask *a, struct timed *t)
{
    struct http_response resp = {0};
    char err[512];
    int64_t v[RUNS];
    int n = 0;
    for (; n < RUNS; n++) {
        int64_t t0 = taxi_now_ns();
        int rc = taxi_post_ask(c, a->ask, a->params, TAXI_RANDOM_TZ, &resp, err, sizeof err);
        int64_t t1 = taxi_now_ns();
        if (rc) {
            fprintf(stderr, "taxi random: ask %d: %s\n", a->number, err);
            http_response_free(&resp);
            return -1;
        }
        v[n] = t1 - t0;
        if (n == 0) {
            t->status = resp.status;
            if (resp.status == 200)
                t->rows = json_rows(resp.body);
            else {
                refusal_code(resp.body, t->code, sizeof t->code);
                n++;
                break;
            }
        }
    }
    t->median_ns = taxi_median(v, n);
    http_response_free(&resp);
    return 0;
}

struct stats {
    int n;
    int64_t p50, p90, p99, max;
};

/* Percentiles of the answered asks that pass keep (view or NULL; small:
 * at most SMALL_ROWS rows). */
static struct stats stats_of(const struct timed *t, int n, const char *view, bool small)
{
    int64_t *v = malloc(sizeof *v * (size_t)(n ? n : 1));
    int k = 0;
    for (int i = 0; i < n; i++) {
        if (t[i].status != 200 || (small && t[i].rows > SMALL_ROWS))
            continue;
        if (view) {
            struct taxi_random_ask a;
            taxi_random_ask(TAXI_RANDOM_SEED, t[i].number, &a);
            if (strcmp(a.view, view))
                continue;
        }
        v[k++] = t[i].median_ns;
    }
    struct stats s = {k, 0, 0, 0, 0};
    if (k) {
        taxi_sort_ns(v, k);
        s.p50 = v[k / 2];
        s.p90 = v[(int)((int64_t)k * 90 / 100)];
        s.p99 = taxi_sorted_p99(v, k);
        s.max = v[k - 1];
    }
    free(v);
    return s;
}

static void stats_row(cJSON *arr, const char *what, struct stats s)
{
    char a[32], b[32], c[32], d[32];
    printf("| %s | %d | %s | %s | %s | %s |\n", what, s.n, taxi_format_ns(s.p50, a, sizeof a),
           taxi_format_ns(s.p90, b, sizeof b), taxi_format_ns(s.p99, c, sizeof c),
           taxi_format_ns(s.max, d, sizeof d));
    cJSON *j = cJSON_CreateObject();
    cJSON_AddStringToObject(j, "asks", what);
    cJSON_AddNumberToObject(j, "n", s.n);
    cJSON_AddNumberToObject(j, "p50_ms", (double)s.p50 / 1e6);
    cJSON_AddNumberToObject(j, "p90_ms", (double)s.p90 / 1e6);
    cJSON_AddNumberToObject(j, "p99_ms", (double)s.p99 / 1e6);
    cJSON_AddNumberToObject(j, "max_ms", (double)s.max / 1e6);
    cJSON_AddItemToArray(arr, j);
}

/* Checks ask a (timed as t) against PostgreSQL; runs it runs times, its
 * median time into t->pg_ms. Returns 0 (t->checked set), or -1 when
 * PostgreSQL fails. */
static int check_one(struct taxi_env *e, struct http_client *c, const struct taxi_random_ask *a,
                     struct timed *t, int runs)
{
    int64_t v[PEER_RUNS];
    PGresult *res = NULL;
    for (int r = 0; r < runs; r++) {
        if (res)
            PQclear(res);
        int64_t t0 = taxi_now_ns();
        res = PQexec(e->conn, a->sql);
        v[r] = taxi_now_ns() - t0;
        if (PQresultStatus(res) != PGRES_TUPLES_OK) {
            fprintf(stderr, "taxi random: ask %d: PostgreSQL: %s%s\n", a->number,
                    PQerrorMessage(e->conn), a->sql);
            PQclear(res);
            return -1;
        }
    }
    t->pg_ms = (double)taxi_median(v, runs) / 1e6;
    struct answer want, got;
    int rc = answer_from_pg(res, &want);
    PQclear(res);
    if (rc)
        return -1;
    struct http_response resp = {0};
    char err[512], why[1024];
    t->checked = -1;
    if (taxi_post_ask(c, a->ask, a->params, TAXI_RANDOM_TZ, &resp, err, sizeof err)) {
        fprintf(stderr, "taxi random: ask %d: %s\n", a->number, err);
    } else if (resp.status != 200) {
        /* Expected only past the group limit the refusal names. */
        char code[32];
        refusal_code(resp.body, code, sizeof code);
        const char *more = strstr(resp.body, "more than ");
        long limit = more ? atol(more + 10) : -1;
        if (!strcmp(code, "too_many_groups") && limit > 0 && want.nrows > limit)
            t->checked = 1; /* more rows than the limit even after HAVING and LIMIT */
        else {
            char *g = taxi_pg_value(e->conn, a->groups_sql);
            long groups = g ? atol(g) : -1;
            free(g);
            if (!strcmp(code, "too_many_groups") && limit > 0 && groups > limit)
                t->checked = 1;
            else
                printf("\n  ask %d refused (%d %s) with %ld groups: %s\n  %s\n", a->number,
                       resp.status, code, groups, resp.body, a->ask);
        }
    } else if (answer_from_json(resp.body, &got, why, sizeof why)) {
        printf("\n  ask %d: straum-serve's answer: %s\n", a->number, why);
    } else {
        if (answer_equal(&want, &got, why, sizeof why))
            t->checked = 1;
        else
            printf("\n  ask %d: Straum's answer DIFFERS from PostgreSQL's: %s\n  %s\n  SQL: %s\n",
                   a->number, why, a->ask, a->sql);
        answer_free(&got);
    }
    http_response_free(&resp);
    answer_free(&want);
    return 0;
}

/* DuckDB's median times for the slowest asks, by the script's --sql mode:
 * into t[i].duckdb_ms. Returns 0, or -1 (printed; the figures stay -1). */
static int duckdb_times(struct taxi_env *e, struct timed **slow, int n)
{
    char sqlf[1200], outf[1200], log[1200], trips[32], seed[32], runs[8];
    snprintf(sqlf, sizeof sqlf, "%s/random-duckdb-asks.json", e->work);
    snprintf(outf, sizeof outf, "%s/random-duckdb.json", e->work);
    snprintf(log, sizeof log, "%s/random-duckdb.log", e->work);
    cJSON *arr = cJSON_CreateArray();
    for (int i = 0; i < n; i++) {
        struct taxi_random_ask a;
        taxi_random_ask(TAXI_RANDOM_SEED, slow[i]->number, &a);
        cJSON *j = cJSON_CreateObject();
        char name[16];
        snprintf(name, sizeof name, "%d", a.number);
        cJSON_AddStringToObject(j, "name", name);
        cJSON_AddStringToObject(j, "sql", a.sql);
        cJSON_AddItemToArray(arr, j);
    }
    char *text = cJSON_Print(arr);
    cJSON_Delete(arr);
    FILE *f = fopen(sqlf, "w");
    if (!f || !text) {
        fprintf(stderr, "taxi random: cannot write %s\n", sqlf);
        free(text);
        if (f)
            fclose(f);
        return -1;
    }
    fputs(text, f);
    fclose(f);
    free(text);
    char node[1024], script[1200], exe[1100];
    if (!taxi_find_on_path("node", node, sizeof node)) {
        fprintf(stderr, "taxi random: node is not on PATH: no DuckDB column (--no-duckdb)\n");
        return -1;
    }
    snprintf(script, sizeof script, "%s/bench/duckdb/taxi_duckdb.mjs", e->o->src_dir);
    snprintf(exe, sizeof exe, "%s", e->gen_bin);
    snprintf(trips, sizeof trips, "%lld", e->o->trips);
    snprintf(seed, sizeof seed, "%llu", e->o->seed);
    snprintf(runs, sizeof runs, "%d", PEER_RUNS);
    char *argv[] = {node, script, "--trips", trips, "--seed", seed, "--gen", exe,
                    "--source-dir", (char *)e->o->src_dir, "--sql", sqlf, "--runs", runs,
                    "--json", outf, "--tmp", e->work, NULL};
    printf("  DuckDB: loading %s trips in memory (log: %s) ...\n", trips, log);
    fflush(stdout);
    pid_t pid = taxi_spawn(argv, log);
    if (pid < 0)
        return -1;
    int status;
    while (waitpid(pid, &status, 0) < 0)
        if (errno != EINTR)
            return -1;
    taxi_track_child(pid, false);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        fprintf(stderr, "taxi random: the DuckDB script failed; see %s\n", log);
        return -1;
    }
    cJSON *doc = taxi_json_load(outf), *a;
    if (!doc)
        return -1;
    cJSON_ArrayForEach(a, cJSON_GetObjectItemCaseSensitive(doc, "asks"))
    {
        const char *name = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(a, "name"));
        cJSON *us = cJSON_GetObjectItemCaseSensitive(a, "duckdb_median_us");
        for (int i = 0; i < n && name; i++)
            if (slow[i]->number == atoi(name) && cJSON_IsNumber(us))
                slow[i]->duckdb_ms = cJSON_GetNumberValue(us) / 1e3;
    }
    cJSON_Delete(doc);
    return 0;
}

static double loadavg1(void)
{
    double l = -1;
    FILE *f = fopen("/proc/loadavg", "r");
    if (f) {
        if (fscanf(f, "%lf", &l) != 1)
            l = -1;
        fclose(f);
    }
    return l;
}

/* Writes every timed ask to WORK/random-times.tsv: number, view, status,
 * rows, median µs, shape, ask text. A failure to write is printed, not
 * fatal: the figures are in the report. */
static void write_times(const struct taxi_env *e, const struct timed *t, int n)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/random-times.tsv", e->work);
    FILE *f = fopen(path, "w");
    if (!f) {
        fprintf(stderr, "taxi random: %s: %s\n", path, strerror(errno));
        return;
    }
    fprintf(f, "number\tview\tstatus\trows\tmedian_us\tshape\task\n");
    for (int i = 0; i < n; i++) {
        struct taxi_random_ask a;
        char shape[128];
        taxi_random_ask(TAXI_RANDOM_SEED, t[i].number, &a);
        taxi_random_shape(&a, shape, sizeof shape);
        fprintf(f, "%d\t%s\t%d\t%d\t%.1f\t%s\t%s\n", t[i].number, a.view, t[i].status,
                t[i].rows, (double)t[i].median_ns / 1e3, shape, a.ask);
    }
    if (fclose(f))
        fprintf(stderr, "taxi random: %s: %s\n", path, strerror(errno));
}

static int by_time_desc(const void *x, const void *y)
{
    const struct timed *a = *(const struct timed *const *)x, *b = *(const struct timed *const *)y;
    return (a->median_ns < b->median_ns) - (a->median_ns > b->median_ns);
}

int taxi_random_run(struct taxi_env *e)
{
    const struct taxi_opts *o = e->o;
    int n = o->random_count, ncheck = o->random_check < n ? o->random_check : n;
    struct http_client c;
    char err[512];
    if (http_client_open(&c, e->url, err, sizeof err) != 0) {
        fprintf(stderr, "taxi: %s\n", err);
        return 2;
    }
    struct timed *t = calloc((size_t)n, sizeof *t);
    if (!t)
        return 2;
    double load_before = loadavg1();
    long anon_before = taxi_proc_kib(e->serve_pid, "RssAnon"), anon_peak = anon_before;
    printf("\nRandom asks: %d generated asks (seed %u) over trips and dropoffs, each sent %d "
           "times\n", n, TAXI_RANDOM_SEED, RUNS);
    int64_t started = taxi_now_ns();
    for (int i = 0; i < n; i++) {
        struct taxi_random_ask a;
        taxi_random_ask(TAXI_RANDOM_SEED, i, &a);
        t[i].number = i;
        t[i].pg_ms = t[i].duckdb_ms = -1;
        if (time_one(&c, &a, &t[i])) {
            http_client_close(&c);
            free(t);
            return 1;
        }
        long anon = taxi_proc_kib(e->serve_pid, "RssAnon");
        if (anon > anon_peak)
            anon_peak = anon;
        if ((i + 1) % 100 == 0) {
            printf("  %d asks, %.0f s, RssAnon %.1f MiB\n", i + 1,
                   (double)(taxi_now_ns() - started) / 1e9, (double)anon / 1024.0);
            fflush(stdout);
        }
    }
    long anon_after = taxi_proc_kib(e->serve_pid, "RssAnon");
    double load_timed = loadavg1();
    write_times(e, t, n);

    /* The slowest answered or refused asks first; the sample to check: the
     * slowest, then evenly spread. */
    struct timed **order = malloc(sizeof *order * (size_t)n);
    for (int i = 0; i < n; i++)
        order[i] = &t[i];
    qsort(order, (size_t)n, sizeof *order, by_time_desc);
    int nslow = n < SLOWEST ? n : SLOWEST, nslow_checked = nslow < ncheck ? nslow : ncheck;
    printf("\nChecking %d asks against PostgreSQL over the raw rows (the %d slowest timed %d "
           "times) ...\n", ncheck, nslow_checked, PEER_RUNS);
    fflush(stdout);
    int checked = 0, differ = 0;
    for (int k = 0; k < ncheck; k++) {
        /* The slowest, then every (n / rest)th ask, or the next unchecked. */
        struct timed *x = order[k < nslow_checked ? k : 0];
        if (k >= nslow_checked) {
            int i = (int)((int64_t)(k - nslow_checked) * n / (ncheck - nslow_checked));
            while (t[i].checked)
                i = (i + 1) % n;
            x = &t[i];
        }
        struct taxi_random_ask a;
        taxi_random_ask(TAXI_RANDOM_SEED, x->number, &a);
        if (check_one(e, &c, &a, x, k < nslow_checked ? PEER_RUNS : 1)) {
            http_client_close(&c);
            free(order);
            free(t);
            return 1;
        }
        checked++;
        differ += x->checked < 0;
        if (checked % 20 == 0) {
            printf("  %d checked\n", checked);
            fflush(stdout);
        }
    }
    http_client_close(&c);
    if (!o->no_duckdb)
        duckdb_times(e, order, nslow);

    /* Report. */
    cJSON *r = cJSON_AddObjectToObject(e->report, "random");
    cJSON_AddNumberToObject(r, "seed", TAXI_RANDOM_SEED);
    cJSON_AddNumberToObject(r, "asks", n);
    cJSON_AddNumberToObject(r, "runs_per_ask", RUNS);
    int answered = 0;
    cJSON *refused = cJSON_AddObjectToObject(r, "refused");
    for (int i = 0; i < n; i++) {
        if (t[i].status == 200) {
            answered++;
            continue;
        }
        char key[48];
        snprintf(key, sizeof key, "%d %s", t[i].status, t[i].code);
        cJSON *v = cJSON_GetObjectItemCaseSensitive(refused, key);
        if (v)
            cJSON_SetNumberValue(v, cJSON_GetNumberValue(v) + 1);
        else
            cJSON_AddNumberToObject(refused, key, 1);
    }
    cJSON_AddNumberToObject(r, "answered", answered);
    cJSON_AddNumberToObject(r, "checked", checked);
    cJSON_AddNumberToObject(r, "equal", checked - differ);
    printf("\n%d asks answered, %d refused; %d checked against PostgreSQL, %d equal\n\n",
           answered, n - answered, checked, checked - differ);
    printf("| Asks | n | p50 | p90 | p99 | max |\n|---|---|---|---|---|---|\n");
    cJSON *st = cJSON_AddArrayToObject(r, "latency");
    stats_row(st, "all answered", stats_of(t, n, NULL, false));
    stats_row(st, "trips", stats_of(t, n, "trips", false));
    stats_row(st, "dropoffs", stats_of(t, n, "dropoffs", false));
    stats_row(st, "at most 10,000 rows", stats_of(t, n, NULL, true));
    stats_row(st, "trips, at most 10,000 rows", stats_of(t, n, "trips", true));
    stats_row(st, "dropoffs, at most 10,000 rows", stats_of(t, n, "dropoffs", true));

    printf("\nThe %d slowest\n\n| # | Shape | Rows | Straum | PostgreSQL | DuckDB | Ask |\n"
           "|---|---|---|---|---|---|---|\n", nslow);
    cJSON *sl = cJSON_AddArrayToObject(r, "slowest");
    for (int k = 0; k < nslow; k++) {
        struct timed *x = order[k];
        struct taxi_random_ask a;
        taxi_random_ask(TAXI_RANDOM_SEED, x->number, &a);
        char shape[128], s1[32], s2[32], s3[32];
        taxi_random_shape(&a, shape, sizeof shape);
        printf("| %d | %s | %d%s%s | %s | %s | %s | `%s` |\n", x->number, shape, x->rows,
               x->status == 200 ? "" : " refused ", x->status == 200 ? "" : x->code,
               taxi_format_ns(x->median_ns, s1, sizeof s1),
               x->pg_ms >= 0 ? taxi_format_ns((int64_t)(x->pg_ms * 1e6), s2, sizeof s2) : "-",
               x->duckdb_ms >= 0 ? taxi_format_ns((int64_t)(x->duckdb_ms * 1e6), s3, sizeof s3)
                                 : "-",
               a.ask);
        cJSON *j = cJSON_CreateObject();
        cJSON_AddNumberToObject(j, "number", x->number);
        cJSON_AddStringToObject(j, "view", a.view);
        cJSON_AddStringToObject(j, "shape", shape);
        cJSON_AddStringToObject(j, "ask", a.ask);
        cJSON *p = cJSON_AddArrayToObject(j, "params");
        for (int q = 0; q < a.nparams; q++)
            cJSON_AddItemToArray(p, cJSON_CreateString(a.params[q]));
        cJSON_AddNumberToObject(j, "status", x->status);
        if (x->status != 200)
            cJSON_AddStringToObject(j, "code", x->code);
        cJSON_AddNumberToObject(j, "rows", x->rows);
        cJSON_AddNumberToObject(j, "straum_ms", (double)x->median_ns / 1e6);
        if (x->pg_ms >= 0)
            cJSON_AddNumberToObject(j, "postgres_ms", x->pg_ms);
        if (x->duckdb_ms >= 0)
            cJSON_AddNumberToObject(j, "duckdb_ms", x->duckdb_ms);
        cJSON_AddBoolToObject(j, "equal", x->checked > 0);
        cJSON_AddItemToArray(sl, j);
    }
    cJSON *rss = cJSON_AddObjectToObject(r, "serve_rss_anon_kib");
    cJSON_AddNumberToObject(rss, "before", (double)anon_before);
    cJSON_AddNumberToObject(rss, "peak", (double)anon_peak);
    cJSON_AddNumberToObject(rss, "after", (double)anon_after);
    cJSON *la = cJSON_AddObjectToObject(r, "load_average");
    cJSON_AddNumberToObject(la, "before", load_before);
    cJSON_AddNumberToObject(la, "after_timing", load_timed);
    cJSON_AddNumberToObject(la, "after", loadavg1());
    printf("\nstraum-serve's RssAnon: %.1f MiB before the first ask, %.1f MiB at its peak, "
           "%.1f MiB after the last\nLoad average (1 min): %.2f before, %.2f after the timing, "
           "%.2f at the end\n",
           (double)anon_before / 1024.0, (double)anon_peak / 1024.0, (double)anon_after / 1024.0,
           load_before, load_timed, loadavg1());
    free(order);
    free(t);
    if (differ) {
        printf("\n%d of %d checked asks differ from PostgreSQL's\n", differ, checked);
        return 1;
    }
    return 0;
}
