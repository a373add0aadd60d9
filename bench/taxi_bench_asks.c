/* taxi_bench_asks.c -- `taxi asks`: the ten asks of seed 000 (and `taxi
 * dashboard`: six asks as a New York dashboard sends them, then a large
 * answer streamed, TAXI_LARGE_ASKS), each first
 * checked (Straum's answer equals PostgreSQL's; the run stops at the first
 * difference, printing both), then timed on each side from one client:
 * PostgreSQL by libpq (simple query protocol, session time zone New York),
 * Straum by the keep-alive HTTP client. Trials alternate sides; each trial
 * sends requests back to back for its share of --seconds (at least one), and
 * a side's figure is the median of all its requests. Prints the seed's
 * table: Ask | Rows | PostgreSQL | Straum | Faster. */
#include "tests/kit/answer.h"
#include "tests/kit/taxi_asks.h"
#include "bench/taxi_bench.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct samples {
    int64_t *v;
    int n, cap;
};

static void push(struct samples *s, int64_t x)
{
    if (s->n == s->cap) {
        s->cap = s->cap ? s->cap * 2 : 256;
        s->v = realloc(s->v, sizeof *s->v * (size_t)s->cap);
        if (!s->v) {
            fprintf(stderr, "taxi: out of memory\n");
            exit(2);
        }
    }
    s->v[s->n++] = x;
}

static void print_answer(const char *side, const struct answer *a)
{
    printf("    %s: %d rows\n      ", side, a->nrows);
    for (int c = 0; c < a->ncols; c++)
        printf("%s%s", c ? " | " : "", a->columns[c]);
    printf("\n");
    for (int r = 0; r < a->nrows && r < 50; r++) {
        printf("      ");
        for (int c = 0; c < a->ncols; c++)
            printf("%s%s", c ? " | " : "", a->rows[r].cells[c]);
        printf("\n");
    }
}

int taxi_check_ask(struct taxi_env *e, const struct taxi_ask *a, int i, struct http_client *http)
{
    PGresult *r = PQexec(e->conn, a->postgres_sql);
    if (PQresultStatus(r) != PGRES_TUPLES_OK) {
        printf("  %s: PostgreSQL failed: %s", a->name, PQerrorMessage(e->conn));
        PQclear(r);
        return -1;
    }
    struct answer want, got;
    int rc = answer_from_pg(r, &want);
    PQclear(r);
    if (rc)
        return -1;
    struct http_response resp = {0};
    char err[512];
    if (taxi_post_ask(http, a->ask, a->params, TAXI_TZ, &resp, err, sizeof err) != 0 ||
        resp.status != 200) {
        printf("  %s: straum-serve failed: %s\n", a->name, resp.status ? resp.body : err);
        http_response_free(&resp);
        answer_free(&want);
        return -1;
    }
    if (answer_from_json(resp.body, &got, err, sizeof err) != 0) {
        printf("  %s: straum-serve's answer: %s\n", a->name, err);
        http_response_free(&resp);
        answer_free(&want);
        return -1;
    }
    http_response_free(&resp);
    char why[1024];
    int rows = want.nrows;
    if (!answer_equal(&want, &got, why, sizeof why)) {
        printf("\n  %d. %s: Straum's answer DIFFERS from PostgreSQL's: %s\n", i + 1, a->name, why);
        print_answer("PostgreSQL", &want);
        print_answer("Straum", &got);
        rows = -1;
    }
    answer_free(&want);
    answer_free(&got);
    return rows;
}

static int trial_pg(struct taxi_env *e, const char *sql, double seconds, struct samples *s)
{
    int64_t start = taxi_now_ns(), end = start + (int64_t)(seconds * 1e9);
    do {
        int64_t t0 = taxi_now_ns();
        PGresult *r = PQexec(e->conn, sql);
        int64_t t1 = taxi_now_ns();
        bool ok = PQresultStatus(r) == PGRES_TUPLES_OK;
        PQclear(r);
        if (!ok) {
            fprintf(stderr, "taxi: %s", PQerrorMessage(e->conn));
            return -1;
        }
        push(s, t1 - t0);
    } while (taxi_now_ns() < end);
    return 0;
}

static int trial_straum(const struct taxi_ask *a, struct http_client *http, double seconds,
                        struct samples *s)
{
    struct http_response resp = {0};
    char err[512];
    int64_t start = taxi_now_ns(), end = start + (int64_t)(seconds * 1e9);
    do {
        int64_t t0 = taxi_now_ns();
        int rc = taxi_post_ask(http, a->ask, a->params, TAXI_TZ, &resp, err, sizeof err);
        int64_t t1 = taxi_now_ns();
        if (rc != 0 || resp.status != 200) {
            fprintf(stderr, "taxi: straum-serve: %s\n", rc ? err : resp.body);
            http_response_free(&resp);
            return -1;
        }
        push(s, t1 - t0);
    } while (taxi_now_ns() < end);
    http_response_free(&resp);
    return 0;
}

static void write_plot(struct taxi_env *e, const char *names[], const double *pg_ms,
                       const double *st_ms, int n)
{
    char path[1200];
    snprintf(path, sizeof path, "%s/asks.dat", e->o->plot_dir);
    FILE *f = fopen(path, "w");
    if (!f)
        return;
    for (int i = 0; i < n; i++)
        fprintf(f, "\"%d. %s\" %.6f %.6f\n", i + 1, names[i], pg_ms[i], st_ms[i]);
    fclose(f);
    taxi_plot(e->o->plot_dir, "asks",
              "set terminal pngcairo size 1100,600\n"
              "set output 'asks.png'\n"
              "set title 'Taxi asks: client-measured median (log scale)'\n"
              "set style data histograms\nset style fill solid 0.8\n"
              "set logscale y\nset ylabel 'ms'\nset xtics rotate by -30 scale 0\n"
              "set key top left\n"
              "plot 'asks.dat' using 2:xtic(1) title 'PostgreSQL', '' using 3 title 'Straum'\n");
}

/* Checks then times each ask of a list; the figures go into the report's
 * section (an array), the table is printed under title. */
static int run_list(struct taxi_env *e, const struct taxi_ask *asks, int nasks,
                    const char *section, const char *title)
{
    struct http_client http;
    char err[512];
    if (http_client_open(&http, e->url, err, sizeof err) != 0) {
        fprintf(stderr, "taxi: %s\n", err);
        return 2;
    }
    const struct taxi_opts *o = e->o;
    printf("\n%s: every answer checked against PostgreSQL%s\n", title,
           o->check_only ? " (check only, no timing)" : "");
    cJSON *arr = cJSON_AddArrayToObject(e->report, section);
    enum { MAX_ASKS = 16 };
    int rows[MAX_ASKS];
    double pg_ms[MAX_ASKS] = {0}, st_ms[MAX_ASKS] = {0};
    const char *names[MAX_ASKS];
    int failed = 0;
    if (nasks > MAX_ASKS)
        nasks = MAX_ASKS;
    for (int i = 0; i < nasks; i++) {
        names[i] = asks[i].name;
        rows[i] = taxi_check_ask(e, &asks[i], i, &http);
        if (rows[i] < 0) {
            failed = 1;
            break;
        }
        printf("  %2d. %-32s %4d rows  equal\n", i + 1, asks[i].name, rows[i]);
        fflush(stdout);
        cJSON *j = cJSON_CreateObject();
        cJSON_AddStringToObject(j, "ask", asks[i].name);
        cJSON_AddNumberToObject(j, "rows", rows[i]);
        cJSON_AddBoolToObject(j, "equal", true);
        cJSON_AddItemToArray(arr, j);
        if (o->check_only)
            continue;
        struct samples sp = {0}, ss = {0};
        double share = o->min_seconds / o->trials;
        for (int t = 0; t < o->trials && !failed; t++) {
            bool pg_first = t % 2 == 0;
            for (int side = 0; side < 2 && !failed; side++) {
                bool pg = (side == 0) == pg_first;
                if (pg ? trial_pg(e, asks[i].postgres_sql, share, &sp)
                       : trial_straum(&asks[i], &http, share, &ss))
                    failed = 1;
            }
        }
        if (failed) {
            free(sp.v);
            free(ss.v);
            break;
        }
        int np = sp.n, ns = ss.n;
        pg_ms[i] = (double)taxi_median(sp.v, sp.n) / 1e6;
        st_ms[i] = (double)taxi_median(ss.v, ss.n) / 1e6;
        cJSON_AddNumberToObject(j, "postgres_median_ms", pg_ms[i]);
        cJSON_AddNumberToObject(j, "postgres_requests", np);
        cJSON_AddNumberToObject(j, "postgres_min_ms", (double)sp.v[0] / 1e6);
        cJSON_AddNumberToObject(j, "straum_median_ms", st_ms[i]);
        cJSON_AddNumberToObject(j, "straum_requests", ns);
        cJSON_AddNumberToObject(j, "straum_min_ms", (double)ss.v[0] / 1e6);
        cJSON_AddNumberToObject(j, "faster", pg_ms[i] / st_ms[i]);
        free(sp.v);
        free(ss.v);
        char t1[32], t2[32], ra[32];
        printf("      PostgreSQL %s (%d requests)  Straum %s (%d requests)  %s\n",
               taxi_format_ns((int64_t)(pg_ms[i] * 1e6), t1, sizeof t1), np,
               taxi_format_ns((int64_t)(st_ms[i] * 1e6), t2, sizeof t2), ns,
               taxi_format_ratio(pg_ms[i] / st_ms[i], ra, sizeof ra));
        fflush(stdout);
    }
    if (http.reconnects)
        printf("  note: straum-serve closed the connection %d times\n", http.reconnects);
    http_client_close(&http);
    if (failed)
        return 1;
    if (!o->check_only) {
        printf("\n| Ask | Rows | PostgreSQL | Straum | Faster |\n|---|---|---|---|---|\n");
        for (int i = 0; i < nasks; i++) {
            char t1[32], t2[32], ra[32];
            printf("| %s | %d | %s | %s | %s |\n", asks[i].name, rows[i],
                   taxi_format_ns((int64_t)(pg_ms[i] * 1e6), t1, sizeof t1),
                   taxi_format_ns((int64_t)(st_ms[i] * 1e6), t2, sizeof t2),
                   taxi_format_ratio(pg_ms[i] / st_ms[i], ra, sizeof ra));
        }
        if (o->plot_dir && !strcmp(section, "asks"))
            write_plot(e, names, pg_ms, st_ms, nasks);
    }
    printf("\nEvery answer equals PostgreSQL's.\n");
    return 0;
}

int taxi_asks_run(struct taxi_env *e)
{
    return run_list(e, TAXI_ASKS, TAXI_NASKS, "asks", "Asks");
}

int taxi_dashboard_run(struct taxi_env *e)
{
    int rc = run_list(e, TAXI_DASHBOARD_ASKS, TAXI_NDASHBOARD_ASKS, "dashboard", "Dashboard asks");
    return rc ? rc : run_list(e, TAXI_LARGE_ASKS, TAXI_NLARGE_ASKS, "large", "A large answer");
}
