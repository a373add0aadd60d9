/* taxi.c -- the taxi benchmark program: main() dispatches to a mode, plus
 * the helpers every mode shares (clock, formatting, posting an ask) and the
 * small wait-ready mode. Modes:
 *
 *   taxi demo --pg CONNINFO --url URL [...]   the ten asks beside PostgreSQL
 *   taxi wait-ready --url URL [--timeout S]   poll GET /readyz until 200
 *   taxi shell [--trips N] [...]              the setup, then straum-shell on it
 *   taxi duckdb [--pg CONNINFO] [...]         the ten asks on in-memory DuckDB (node)
 *   taxi load [--connections N] [--duration S] [...]  serve under wrk's load
 *   taxi asks|dashboard|random|cold-start|memory|transactions|stream|wal|all [--trips N] [...]
 *   taxi warehouse [--tasks N] [...]          the warehouse workload, the same way
 *   taxi wide [--trips N] [...]               the trips under the seed's wide key
 *        the benchmark: sets up PostgreSQL, ingest and serve itself
 *        (taxi_setup.c) and runs one mode, or all on one setup
 */
#include "bench/taxi.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

struct mode {
    const char *name;
    int (*main)(int argc, char **argv);
    const char *summary;
};

static const struct mode MODES[] = {
    {"asks", taxi_asks_main,
     "[--trips N] [--seed S] [--check-only] [--json FILE] [--results FILE] [...]\n"
     "        the default: the ten asks, each checked equal to PostgreSQL's, then timed\n"
     "        on both sides (the seed's table); --results bench/RESULTS.json records\n"
     "        each mode run there, for bench/render_results.py"},
    {"dashboard", taxi_dashboard_main,
     "[--trips N] [--seed S] [--check-only] [--results FILE] [...]\n"
     "        six asks as a New York dashboard sends them (local days, a month of\n"
     "        medians, months by borough, a time picker's top ten, two percentiles\n"
     "        over six months), then a large answer (105,752 rows at full scale),\n"
     "        each checked, then timed"},
    {"random", taxi_random_main,
     "[--count N] [--check N] [--no-duckdb] [--list] [--trips N] [--results FILE] [...]\n"
     "        the generated asks over both views (tests/kit/taxi_random.h), each timed\n"
     "        (median of 5), --check of them checked against PostgreSQL; p50 to max per\n"
     "        view, the twenty slowest beside PostgreSQL and DuckDB, serve's RssAnon"},
    {"cold-start", taxi_cold_main,
     "[--trips N] [--restarts N] [...]\n"
     "        exec of straum-serve to /readyz 200 and to the first answer, warm and cold"},
    {"memory", taxi_memory_main,
     "[--trips N] [...]\n"
     "        the store on disk per view and width, serve's RSS, ingest's peak, PostgreSQL's"},
    {"transactions", taxi_txn_main,
     "[--trips N] [--sizes N,N,...] [...]\n"
     "        one UPDATE of N trips while asking: commit to applied, pg_recvlogical's floor"},
    {"stream", taxi_stream_main,
     "[--trips N] [--load-seconds S] [--scripts LIST] [--clients N] [...]\n"
     "        pgbench streams of small transactions (bench/stream): PostgreSQL's tps,\n"
     "        pg_recvlogical's floor, ingest's apply of the backlog and its lag beside the load"},
    {"wal", taxi_wal_main,
     "[--trips N] [--rows N] [...]\n"
     "        four phases of --rows changed trips (COPY, INSERT, UPDATE, DELETE): the WAL\n"
     "        PostgreSQL wrote and its time, then ingest's catch-up on each backlog by the\n"
     "        physical WAL (--wal physical) and by logical decoding, two stores, two slots"},
    {"scaling", taxi_scaling_main,
     "[--trips N] [--factors 1,2,4] [--seconds S] [...]\n"
     "        store size, initial load and ask latency at multiples of --trips\n"
     "        (same months, denser), each on a fresh setup; Straum only"},
    {"warehouse", taxi_warehouse_main,
     "[--tasks N] [--results FILE] [...]\n"
     "        the warehouse workload (bench/warehouse_*.sql; 13,116,878 tasks by default):\n"
     "        load, store size, the seed's asks and generated ones beside PostgreSQL,\n"
     "        the seed's seven changes from commit to applied, serve's memory"},
    {"wide", taxi_wide_main,
     "[--trips N] [--results FILE] [...]\n"
     "        the trips under the seed's wide key (bench/taxi_wide_views.sql): cells per\n"
     "        width, every key and by borough beside PostgreSQL, 200 streamed commits,\n"
     "        a zone renamed and moved, a trip in it, each from commit to applied"},
    {"all", taxi_all_main,
     "[options of every mode]\n"
     "        asks, memory, cold-start and transactions on one setup\n"
     "        (taxi <mode> --help lists the options)"},
    {"demo", taxi_demo_main,
     "--pg CONNINFO --url URL [--asks LIST] [--runs N] [--rows N]\n"
     "        each of the ten asks on PostgreSQL and on straum-serve, answers side\n"
     "        by side, both timed, checked equal"},
    {"load", taxi_load_main,
     "[--connections N] [--duration S] [--slow N] [--half-open N] [--trips N] [...]\n"
     "        wrk with 1,000 kept-alive connections POSTing the ten asks: requests/s,\n"
     "        p99, no errors; slow and half-open clients dropped meanwhile"},
    {"time", taxi_time_main,
     "--url URL [--seconds S] [--asks LIST]\n"
     "        the ten asks against a running straum-serve only: fastest, median, p99"},
    {"pg-time", taxi_pg_time_main,
     "[--seconds S] [--duration S] [--connections N] [--asks LIST] [--trips N] [...]\n"
     "        the ten asks over HTTP and over the PostgreSQL protocol (libpq, prepared,\n"
     "        binary): client medians side by side; then pgbench -M prepared and wrk,\n"
     "        64 connections each, over the light asks; --url URL --pg CONNINFO: a\n"
     "        running straum-serve, medians only"},
    {"shell", taxi_shell_main,
     "[--trips N] [...]\n"
     "        sets up PostgreSQL, ingest and serve (200,000 trips by default), then\n"
     "        straum-shell asking that serve; all removed when the shell ends"},
    {"duckdb", taxi_duckdb_main,
     "[--trips N] [--seed S] [--pg CONNINFO] [--runs N] [--threads N] [--json FILE]\n"
     "        [--results FILE] [...]\n"
     "        the ten asks on an in-memory DuckDB over the same trips (node and\n"
     "        @duckdb/node-api: bench/duckdb/taxi_duckdb.mjs), checked against PostgreSQL's"},
    {"wait-ready", taxi_wait_ready_main,
     "--url URL [--timeout SECONDS]\n"
     "        poll GET /readyz until it answers 200"},
};

#define NMODES ((int)(sizeof MODES / sizeof MODES[0]))

static int usage(FILE *f)
{
    fprintf(f, "usage: taxi <mode> [options]\n\nThe taxi benchmark: PostgreSQL beside straum-serve over the same trips.\n\nmodes:\n");
    for (int i = 0; i < NMODES; i++)
        fprintf(f, "  %s %s\n", MODES[i].name, MODES[i].summary);
    return f == stdout ? 0 : 2;
}

int main(int argc, char **argv)
{
    if (argc < 2 || argv[1][0] == '-') {
        if (argc >= 2 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")))
            return usage(stdout);
        /* No mode: asks, the default. */
        argv[0] = "asks";
        return taxi_asks_main(argc, argv);
    }
    if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help"))
        return usage(stdout);
    for (int i = 0; i < NMODES; i++)
        if (!strcmp(argv[1], MODES[i].name))
            return MODES[i].main(argc - 1, argv + 1);
    fprintf(stderr, "taxi: unknown mode %s\n", argv[1]);
    return usage(stderr);
}

/* ---- Shared helpers ------------------------------------------------------ */

int64_t taxi_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

const char *taxi_format_ns(int64_t ns, char *buf, size_t len)
{
    double us = (double)ns / 1e3;
    if (us < 10)
        snprintf(buf, len, "%.1f µs", us);
    else if (us < 1000)
        snprintf(buf, len, "%.0f µs", us);
    else if (us < 10000)
        snprintf(buf, len, "%.2f ms", us / 1e3);
    else if (us < 1000000)
        snprintf(buf, len, "%.1f ms", us / 1e3);
    else
        snprintf(buf, len, "%.2f s", us / 1e6);
    return buf;
}

const char *taxi_format_count(long long n, char *buf, size_t len)
{
    char digits[32];
    snprintf(digits, sizeof digits, "%lld", n < 0 ? -n : n);
    size_t nd = strlen(digits), o = 0;
    char out[48];
    if (n < 0)
        out[o++] = '-';
    for (size_t i = 0; i < nd; i++) {
        if (i && (nd - i) % 3 == 0)
            out[o++] = ',';
        out[o++] = digits[i];
    }
    out[o] = '\0';
    snprintf(buf, len, "%s", out);
    return buf;
}

const char *taxi_format_ratio(double ratio, char *buf, size_t len)
{
    if (ratio < 10) {
        snprintf(buf, len, "%.1fx", ratio);
        return buf;
    }
    char n[48];
    snprintf(buf, len, "%sx", taxi_format_count((long long)(ratio + 0.5), n, sizeof n));
    return buf;
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

void taxi_sort_ns(int64_t *v, int n)
{
    if (n > 0)
        qsort(v, (size_t)n, sizeof *v, cmp_i64);
}

int64_t taxi_median(int64_t *v, int n)
{
    if (n <= 0)
        return 0;
    taxi_sort_ns(v, n);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

int64_t taxi_sorted_p99(const int64_t *sorted, int n)
{
    if (n <= 0)
        return 0;
    int i = (int)((int64_t)n * 99 / 100);
    return sorted[i < n ? i : n - 1];
}

/* The first executable dir/name on PATH into out, or false. */
bool taxi_find_on_path(const char *name, char *out, size_t len)
{
    const char *path = getenv("PATH");
    if (!path || !*path)
        path = "/usr/local/bin:/usr/bin:/bin";
    for (const char *p = path; *p;) {
        const char *end = strchr(p, ':');
        size_t n = end ? (size_t)(end - p) : strlen(p);
        if (n && (size_t)snprintf(out, len, "%.*s/%s", (int)n, p, name) < len &&
            access(out, X_OK) == 0)
            return true;
        p += n + (end ? 1 : 0);
    }
    return false;
}

bool taxi_parse_ask_list(const char *list, bool *selected, int nasks)
{
    memset(selected, 0, sizeof *selected * (size_t)nasks);
    for (char *p = (char *)list, *end; *p; p = *end ? end + 1 : end) {
        long k = strtol(p, &end, 10);
        if (end == p || k < 1 || k > nasks || (*end && *end != ','))
            return false;
        selected[k - 1] = true;
    }
    return *list != '\0';
}

int taxi_text_width(const char *s)
{
    int w = 0;
    for (; *s; s++)
        if (((unsigned char)*s & 0xC0) != 0x80)
            w++;
    return w;
}

int taxi_post_ask(struct http_client *c, const char *ask, const char *const *params,
                  const char *tz, struct http_response *resp, char *err, size_t errlen)
{
    cJSON *req = cJSON_CreateObject();
    cJSON *arr = cJSON_CreateArray();
    if (!req || !arr || !cJSON_AddStringToObject(req, "ask", ask)) {
        cJSON_Delete(req);
        cJSON_Delete(arr);
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    cJSON_AddItemToObject(req, "params", arr);
    for (int i = 0; params && params[i]; i++)
        cJSON_AddItemToArray(arr, cJSON_CreateString(params[i]));
    if (tz)
        cJSON_AddStringToObject(req, "time_zone", tz);
    char *body = cJSON_PrintUnformatted(req);
    cJSON_Delete(req);
    if (!body) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    int rc = http_request(c, "POST", "/ask", "application/json", body, strlen(body), resp, err,
                          errlen);
    cJSON_free(body);
    return rc;
}

/* ---- wait-ready ---------------------------------------------------------- */

int taxi_wait_ready_main(int argc, char **argv)
{
    const char *url = NULL;
    double timeout_s = 30;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--url") && i + 1 < argc)
            url = argv[++i];
        else if (!strcmp(argv[i], "--timeout") && i + 1 < argc)
            timeout_s = atof(argv[++i]);
        else {
            fprintf(stderr, "usage: taxi wait-ready --url URL [--timeout SECONDS]\n");
            return 2;
        }
    }
    if (!url) {
        fprintf(stderr, "taxi wait-ready: --url is required\n");
        return 2;
    }
    int64_t t0 = taxi_now_ns(), deadline = t0 + (int64_t)(timeout_s * 1e9);
    char err[512] = "", last[512] = "no answer yet";
    struct http_response resp = {0};
    for (;;) {
        struct http_client c;
        if (http_client_open(&c, url, err, sizeof err) == 0) {
            if (http_request(&c, "GET", "/readyz", NULL, NULL, 0, &resp, err, sizeof err) == 0) {
                if (resp.status == 200) {
                    http_client_close(&c);
                    http_response_free(&resp);
                    return 0;
                }
                snprintf(last, sizeof last, "%d %.400s", resp.status, resp.body);
            } else
                snprintf(last, sizeof last, "%s", err);
        } else
            snprintf(last, sizeof last, "%s", err);
        http_client_close(&c);
        if (taxi_now_ns() > deadline)
            break;
        usleep(20000);
    }
    http_response_free(&resp);
    fprintf(stderr, "taxi wait-ready: %s/readyz not ready after %.0f s: %s\n", url, timeout_s,
            last);
    return 1;
}
