/* taxi_pg_time.c -- `taxi pg-time`: straum-serve's two protocols side by
 * side, on the setup the other modes build (taxi_setup.c, straum-serve with
 * --pg-listen too) or against a running straum-serve (--url and --pg).
 *
 * Per ask, one client each: HTTP by the keep-alive client, PostgreSQL by
 * libpq over one connection with each ask prepared once (PQprepare) and
 * run by PQexecPrepared with its parameters in text, binary results. The
 * two alternate ask by ask for twice --seconds, so the machine's noise
 * falls on both alike (a side timed after the other met another stretch
 * of it: one ask's two medians differed by a fifth either way from run to
 * run). Then, on the setup, throughput over 64 connections from 2
 * client threads for --duration: pgbench -n -M prepared with the light
 * asks (1, 2, 4 and 9: one script each, parameters as literals, drawn in
 * turn at random) against --pg-listen, and wrk POSTing the same asks in
 * turn over HTTP when wrk is installed. Figures go to the report as
 * "pg_time" (recorded under "pg-time" in --results). */
#include "tests/kit/http_client.h"
#include "bench/taxi_bench.h"
#include "tests/kit/taxi_asks.h"

#include <libpq-fe.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

static int usage(void)
{
    fprintf(stderr,
            "usage: taxi pg-time [--seconds S] [--duration S] [--connections N] [--asks LIST]\n"
            "                    [--trips N] [--results FILE] [--json FILE] [...]\n"
            "       taxi pg-time --url URL --pg CONNINFO [--seconds S] [--pgbench-dir DIR]\n"
            "  --seconds S        per ask and side (default 1)\n"
            "  --duration S       pgbench's and wrk's run (default 10)\n"
            "  --connections N    pgbench's and wrk's connections (default 64, on 2 threads)\n"
            "  --asks LIST        the asks pgbench and wrk send (default 1,2,4,9: the light ones)\n"
            "  --url URL          a running straum-serve's HTTP address (with --pg: no setup,\n"
            "                     no throughput, nothing recorded)\n"
            "  --pg CONNINFO      its --pg-listen, as libpq reads it\n"
            "  --pgbench-dir DIR  also write ask1.sql .. ask10.sql (parameters as literals)\n"
            "  and the options every mode takes (taxi asks --help)\n");
    return 2;
}

/* The ask with $n replaced by its parameter as a quoted literal. */
static void literal_ask(const struct taxi_ask *a, char *out, size_t cap)
{
    size_t n = 0;
    for (const char *p = a->ask; *p && n + 1 < cap; p++) {
        if (*p == '$' && p[1] >= '1' && p[1] <= '9') {
            const char *v = a->params[p[1] - '1'];
            n += (size_t)snprintf(out + n, cap - n, "'%s'", v);
            p++;
        } else {
            out[n++] = *p;
        }
    }
    out[n < cap ? n : cap - 1] = '\0';
}

/* Times ask a over both protocols for `seconds`, the two alternating ask
 * by ask (an HTTP request, then the prepared statement `name` over
 * PostgreSQL), so that what else the machine does falls on both alike.
 * 0, or -1 after printing why. */
static int time_both(struct http_client *h, PGconn *c, const char *name,
                     const struct taxi_ask *a, double seconds, struct taxi_latency *http,
                     struct taxi_latency *pgl)
{
    int nparams = 0;
    while (a->params[nparams])
        nparams++;
    size_t cap = 1024, k = 0;
    int64_t *hs = malloc(sizeof *hs * cap), *ps = malloc(sizeof *ps * cap);
    int64_t end = taxi_now_ns() + (int64_t)(seconds * 1e9);
    int rc = hs && ps ? 0 : -1;
    while (rc == 0 && (k < 3 || taxi_now_ns() < end)) {
        struct http_response resp = {0};
        char err[512];
        int64_t t0 = taxi_now_ns();
        rc = taxi_post_ask(h, a->ask, a->params, "America/New_York", &resp, err, sizeof err);
        int64_t t1 = taxi_now_ns();
        if (rc)
            fprintf(stderr, "taxi pg-time: %s\n", err);
        else if (resp.status != 200) {
            fprintf(stderr, "taxi pg-time: %s: %d %.300s\n", a->name, resp.status, resp.body);
            rc = -1;
        }
        http_response_free(&resp);
        if (rc)
            break;
        PGresult *r = PQexecPrepared(c, name, nparams, a->params, NULL, NULL, 1);
        int64_t t2 = taxi_now_ns();
        if (PQresultStatus(r) != PGRES_TUPLES_OK) {
            fprintf(stderr, "taxi pg-time: %s: %s", a->name, PQerrorMessage(c));
            rc = -1;
        }
        PQclear(r);
        if (rc == 0 && k == cap) {
            cap *= 2;
            int64_t *h2 = realloc(hs, sizeof *hs * cap);
            if (h2)
                hs = h2;
            int64_t *p2 = realloc(ps, sizeof *ps * cap);
            if (p2)
                ps = p2;
            rc = h2 && p2 ? 0 : -1;
        }
        if (rc == 0) {
            hs[k] = t1 - t0;
            ps[k++] = t2 - t1;
        }
    }
    if (rc == 0) {
        taxi_latency_of(hs, (int)k, http);
        taxi_latency_of(ps, (int)k, pgl);
    }
    free(hs);
    free(ps);
    return rc;
}

/* Writes DIR/askN.sql (the ask with its parameters as literals) for ask
 * index i. 0, or -1 after printing why. */
static int write_pgbench_script(const char *dir, int i)
{
    char path[1200], sql[2048];
    snprintf(path, sizeof path, "%s/ask%d.sql", dir, i + 1);
    literal_ask(&TAXI_ASKS[i], sql, sizeof sql);
    FILE *f = fopen(path, "w");
    if (!f) {
        perror(path);
        return -1;
    }
    fprintf(f, "%s;\n", sql);
    return fclose(f) == 0 ? 0 : -1;
}

struct pg_time_opts {
    const char *url, *pg, *dir;
    double seconds, duration_s;
    int connections;
    bool asks[TAXI_NASKS]; /* the throughput's */
};

/* The per-ask medians over both protocols; each ask's figures into arr
 * when not NULL. 0, or 1 after printing why. */
static int time_asks(const char *url, const char *pg, const struct pg_time_opts *po, cJSON *arr)
{
    struct http_client h;
    char err[512];
    if (http_client_open(&h, url, err, sizeof err) != 0) {
        fprintf(stderr, "taxi pg-time: %s\n", err);
        return 1;
    }
    PGconn *c = PQconnectdb(pg);
    if (PQstatus(c) != CONNECTION_OK) {
        fprintf(stderr, "taxi pg-time: %s", PQerrorMessage(c));
        PQfinish(c);
        http_client_close(&h);
        return 1;
    }
    PQclear(PQexec(c, "SET TimeZone TO 'America/New_York'"));
    printf("  %-32s %12s %12s %12s %10s\n", "ask", "HTTP median", "PG median", "PG p99",
           "PG asks");
    int rc = 0;
    for (int i = 0; i < TAXI_NASKS && rc == 0; i++) {
        const struct taxi_ask *a = &TAXI_ASKS[i];
        char name[16];
        snprintf(name, sizeof name, "ask%d", i + 1);
        PGresult *r = PQprepare(c, name, a->ask, 0, NULL);
        if (PQresultStatus(r) != PGRES_COMMAND_OK) {
            fprintf(stderr, "taxi pg-time: %s: %s", a->name, PQerrorMessage(c));
            PQclear(r);
            rc = 1;
            break;
        }
        PQclear(r);
        struct taxi_latency http, pgl;
        if (time_both(&h, c, name, a, 2 * po->seconds, &http, &pgl)) {
            rc = 1;
            break;
        }
        char t1[32], t2[32], t3[32];
        taxi_format_ns(http.median_ns, t1, sizeof t1);
        taxi_format_ns(pgl.median_ns, t2, sizeof t2);
        taxi_format_ns(pgl.p99_ns, t3, sizeof t3);
        printf("  %-32s %*s %*s %*s %10ld\n", a->name, 12 + (strstr(t1, "µ") != NULL), t1,
               12 + (strstr(t2, "µ") != NULL), t2, 12 + (strstr(t3, "µ") != NULL), t3, pgl.n);
        if (arr) {
            cJSON *o = cJSON_CreateObject();
            cJSON_AddStringToObject(o, "name", a->name);
            cJSON_AddNumberToObject(o, "http_median_ms", (double)http.median_ns / 1e6);
            cJSON_AddNumberToObject(o, "http_p99_ms", (double)http.p99_ns / 1e6);
            cJSON_AddNumberToObject(o, "http_asks", (double)http.n);
            cJSON_AddNumberToObject(o, "pg_median_ms", (double)pgl.median_ns / 1e6);
            cJSON_AddNumberToObject(o, "pg_p99_ms", (double)pgl.p99_ns / 1e6);
            cJSON_AddNumberToObject(o, "pg_asks", (double)pgl.n);
            cJSON_AddItemToArray(arr, o);
        }
        if (po->dir && write_pgbench_script(po->dir, i))
            rc = 2;
    }
    PQfinish(c);
    http_client_close(&h);
    return rc;
}

/* pgbench's figures, from its output. */
struct pgbench_figures {
    double tps, latency_ms;
    long long processed, failed;
};

static int parse_pgbench(const char *path, struct pgbench_figures *p)
{
    FILE *f = fopen(path, "r");
    char line[1024];
    int got = 0;
    *p = (struct pgbench_figures){0};
    while (f && fgets(line, sizeof line, f)) {
        got += sscanf(line, "tps = %lf (without initial connection time)", &p->tps) == 1;
        got += sscanf(line, "number of transactions actually processed: %lld", &p->processed) == 1;
        sscanf(line, "number of failed transactions: %lld", &p->failed);
        sscanf(line, "latency average = %lf ms", &p->latency_ms);
    }
    if (f)
        fclose(f);
    return got == 2 ? 0 : -1;
}

/* Runs argv to its end, stdout into out; 0 when it exited 0. */
static int run_to_end(char *const *argv, const char *out, const char *log)
{
    pid_t pid = taxi_spawn_out(argv, out, log);
    if (pid < 0)
        return -1;
    int status = 0;
    waitpid(pid, &status, 0);
    taxi_track_child(pid, false);
    return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : -1;
}

/* pgbench against --pg-listen, then wrk against HTTP, the same asks over
 * the same connections; the figures into j. 0, or 1 after printing why. */
static int throughput(struct taxi_env *e, const struct pg_time_opts *po, cJSON *j)
{
    char pgbench[1100], wrk[1100];
    if (!taxi_find_on_path("pgbench", pgbench, sizeof pgbench)) {
        fprintf(stderr, "taxi pg-time: pgbench is not installed (Debian: postgresql-15)\n");
        return 1;
    }
    char conns[16], dur[32], port[16], out[1200], log[1200];
    snprintf(conns, sizeof conns, "%d", po->connections);
    snprintf(dur, sizeof dur, "%.0f", po->duration_s);
    snprintf(port, sizeof port, "%d", e->pg_port);
    snprintf(out, sizeof out, "%s/pgbench.out", e->work);
    snprintf(log, sizeof log, "%s/pgbench.log", e->work);
    static char files[TAXI_NASKS][1200];
    char *argv[64] = {pgbench, "-n", "-M", "prepared", "-c", conns, "-j", "2", "-T", dur,
                      "-h", "127.0.0.1", "-p", port, "-U", "pgbench"};
    int n = 16;
    char shown[2048];
    size_t k = (size_t)snprintf(shown, sizeof shown, "pgbench -n -M prepared -c %s -j 2 -T %s", conns,
                                dur);
    cJSON *asks = cJSON_AddArrayToObject(j, "asks");
    for (int i = 0; i < TAXI_NASKS; i++) {
        if (!po->asks[i])
            continue;
        if (write_pgbench_script(e->work, i))
            return 1;
        snprintf(files[i], sizeof files[i], "%s/ask%d.sql", e->work, i + 1);
        argv[n++] = "-f";
        argv[n++] = files[i];
        k += (size_t)snprintf(shown + k, sizeof shown - k, " -f ask%d.sql", i + 1);
        cJSON_AddItemToArray(asks, cJSON_CreateNumber(i + 1));
    }
    argv[n++] = "straum";
    argv[n] = NULL;
    snprintf(shown + k, sizeof shown - k, " -h 127.0.0.1 -p PORT straum");
    printf("\nThroughput:\n  PGOPTIONS='-c TimeZone=America/New_York' %s\n", shown);
    fflush(stdout);
    /* The asks' time zone, as the HTTP side gives it with each ask. */
    setenv("PGOPTIONS", "-c TimeZone=" TAXI_TZ, 1);
    struct pgbench_figures p;
    if (run_to_end(argv, out, log) || parse_pgbench(out, &p)) {
        fprintf(stderr, "taxi pg-time: pgbench failed (output %s, log %s)\n", out, log);
        return 1;
    }
    char c1[32];
    printf("  %s asks/s over PostgreSQL (average latency %.2f ms, %lld failed)\n",
           taxi_format_count((long long)(p.tps + 0.5), c1, sizeof c1), p.latency_ms, p.failed);
    cJSON_AddNumberToObject(j, "connections", po->connections);
    cJSON_AddNumberToObject(j, "client_threads", 2);
    cJSON_AddNumberToObject(j, "duration_s", po->duration_s);
    cJSON_AddStringToObject(j, "pgbench_command", shown);
    cJSON_AddNumberToObject(j, "pgbench_tps", p.tps);
    cJSON_AddNumberToObject(j, "pgbench_transactions", (double)p.processed);
    cJSON_AddNumberToObject(j, "pgbench_failed", (double)p.failed);
    cJSON_AddNumberToObject(j, "pgbench_latency_ms", p.latency_ms);
    int rc = p.failed ? 1 : 0;
    if (!taxi_find_on_path("wrk", wrk, sizeof wrk)) {
        printf("  wrk is not installed (Debian: wrk): no HTTP figure beside it\n");
        return rc;
    }
    char script[1200];
    snprintf(script, sizeof script, "%s/pg_time.lua", e->work);
    snprintf(out, sizeof out, "%s/wrk.out", e->work);
    snprintf(log, sizeof log, "%s/wrk.log", e->work);
    char durs[40];
    snprintf(durs, sizeof durs, "%ss", dur);
    char *wargv[] = {wrk, "-t", "2", "-c", conns, "-d", durs, "--timeout", "5s", "--latency",
                     "-s", script, e->url, NULL};
    char wshown[512];
    snprintf(wshown, sizeof wshown, "wrk -t 2 -c %s -d %s --timeout 5s --latency -s pg_time.lua URL",
             conns, durs);
    printf("  %s\n", wshown);
    fflush(stdout);
    struct taxi_wrk_figures w;
    if (taxi_wrk_script(script, po->asks) || run_to_end(wargv, out, log) ||
        taxi_wrk_parse(out, &w)) {
        fprintf(stderr, "taxi pg-time: wrk failed (output %s, log %s)\n", out, log);
        return 1;
    }
    double rps = (double)w.requests / ((double)w.duration_us / 1e6);
    long long errors = w.connect + w.read + w.write + w.status + w.timeout;
    printf("  %s asks/s over HTTP (p50 %.2f ms, %lld errors)\n",
           taxi_format_count((long long)(rps + 0.5), c1, sizeof c1), (double)w.p50_us / 1e3,
           errors);
    cJSON_AddStringToObject(j, "wrk_command", wshown);
    cJSON_AddNumberToObject(j, "wrk_requests_per_s", rps);
    cJSON_AddNumberToObject(j, "wrk_p50_ms", (double)w.p50_us / 1e3);
    cJSON_AddNumberToObject(j, "wrk_errors", (double)errors);
    return errors ? 1 : rc;
}

/* Takes pg-time's options out of argv (the rest go to taxi_opts_parse);
 * 0, or 2 after printing usage. */
static int parse_pg_time_opts(struct pg_time_opts *po, int *argc, char **argv)
{
    *po = (struct pg_time_opts){.seconds = 1, .duration_s = 10, .connections = 64};
    taxi_parse_ask_list("1,2,4,9", po->asks, TAXI_NASKS);
    int out = 1;
    for (int i = 1; i < *argc; i++) {
        const char *a = argv[i], *v = i + 1 < *argc ? argv[i + 1] : NULL;
        static const char *const ours[] = {"--url", "--pg", "--pgbench-dir", "--seconds",
                                           "--duration", "--connections", "--asks"};
        bool mine = false;
        for (size_t k = 0; k < sizeof ours / sizeof *ours; k++)
            mine |= !strcmp(a, ours[k]);
        if (!strcmp(a, "--help"))
            return usage();
        if (!mine) {
            argv[out++] = argv[i];
            continue;
        }
        if (!v)
            return usage();
        if (!strcmp(a, "--url"))
            po->url = v;
        else if (!strcmp(a, "--pg"))
            po->pg = v;
        else if (!strcmp(a, "--pgbench-dir"))
            po->dir = v;
        else if (!strcmp(a, "--seconds"))
            po->seconds = atof(v);
        else if (!strcmp(a, "--duration"))
            po->duration_s = atof(v);
        else if (!strcmp(a, "--connections"))
            po->connections = atoi(v);
        else if (!taxi_parse_ask_list(v, po->asks, TAXI_NASKS))
            return usage();
        i++;
    }
    *argc = out;
    argv[out] = NULL;
    if (po->seconds <= 0 || po->duration_s < 1 || po->connections < 2 || !po->url != !po->pg)
        return usage();
    return 0;
}

int taxi_pg_time_main(int argc, char **argv)
{
    static char *given[256];
    int ngiven = argc < 255 ? argc : 255;
    memcpy(given, argv, sizeof *given * (size_t)ngiven);
    static struct pg_time_opts po;
    int rc = parse_pg_time_opts(&po, &argc, argv);
    if (rc)
        return rc;
    if (po.url) {
        if (argc > 1)
            return usage();
        return time_asks(po.url, po.pg, &po, NULL);
    }
    static struct taxi_opts o;
    if ((rc = taxi_opts_parse(&o, argc, argv, "pg-time")))
        return rc;
    o.argc = ngiven;
    o.argv = given;
    o.pg_listen = true;
    static struct taxi_env e;
    if (taxi_setup(&e, &o, true) != 0) {
        fprintf(stderr, "taxi: setup failed; logs in %s\n", e.work);
        o.work_dir = e.work;
        return 2;
    }
    char pg[256];
    snprintf(pg, sizeof pg, "host=127.0.0.1 port=%d user=bench dbname=straum sslmode=disable",
             e.pg_port);
    cJSON *j = cJSON_AddObjectToObject(e.report, "pg_time");
    printf("\nPer ask, one client each (HTTP keep-alive; libpq prepared, binary):\n");
    rc = time_asks(e.url, pg, &po, cJSON_AddArrayToObject(j, "asks"));
    if (rc == 0)
        rc = throughput(&e, &po, cJSON_AddObjectToObject(j, "throughput"));
    if (rc == 0 && taxi_report_write(&e))
        rc = 2;
    if (rc)
        o.work_dir = e.work; /* keep pgbench's and wrk's output */
    taxi_teardown(&e);
    return rc;
}
