/* taxi_memory.c -- `taxi memory`: what Straum holds, on disk and in memory.
 * The store per view and width from `straum-dump --json stats` (cells,
 * bytes, bytes per cell, value-count entries); straum-serve's resident set
 * split into anonymous and file-backed (/proc/PID/status and smaps_rollup)
 * freshly started, after the ten asks, and after a sweep over every hour
 * bucket of both views (three asks per day of the six months); the initial
 * load's peak RSS; PostgreSQL's table and index sizes. */
#include "tests/kit/taxi_asks.h"
#include "bench/taxi_bench.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double mib(double kib) { return kib / 1024.0; }

static void rss_row(struct taxi_env *e, cJSON *arr, const char *state)
{
    pid_t p = e->serve_pid;
    long rss = taxi_proc_kib(p, "VmRSS"), anon = taxi_proc_kib(p, "RssAnon"),
         file = taxi_proc_kib(p, "RssFile"), shm = taxi_proc_kib(p, "RssShmem"),
         hwm = taxi_proc_kib(p, "VmHWM"), sanon = taxi_smaps_kib(p, "Anonymous"),
         pss = taxi_smaps_kib(p, "Pss");
    printf("| %s | %.1f MiB | %.1f MiB | %.1f MiB | %.1f MiB | %.1f MiB | %.1f MiB |\n", state,
           mib((double)rss), mib((double)anon), mib((double)file), mib((double)sanon),
           mib((double)pss), mib((double)hwm));
    fflush(stdout);
    cJSON *j = cJSON_CreateObject();
    cJSON_AddStringToObject(j, "state", state);
    cJSON_AddNumberToObject(j, "vm_rss_kib", (double)rss);
    cJSON_AddNumberToObject(j, "rss_anon_kib", (double)anon);
    cJSON_AddNumberToObject(j, "rss_file_kib", (double)file);
    cJSON_AddNumberToObject(j, "rss_shmem_kib", (double)shm);
    cJSON_AddNumberToObject(j, "smaps_anonymous_kib", (double)sanon);
    cJSON_AddNumberToObject(j, "pss_kib", (double)pss);
    cJSON_AddNumberToObject(j, "vm_hwm_kib", (double)hwm);
    cJSON_AddItemToArray(arr, j);
}

static int ask_ok(struct http_client *c, const char *ask, const char *const *params)
{
    struct http_response resp = {0};
    char err[256];
    int rc = taxi_post_ask(c, ask, params, TAXI_TZ, &resp, err, sizeof err);
    if (rc == 0 && resp.status != 200) {
        fprintf(stderr, "taxi: %s: %d %s\n", ask, resp.status, resp.body);
        rc = -1;
    } else if (rc)
        fprintf(stderr, "taxi: %s\n", err);
    http_response_free(&resp);
    return rc;
}

cJSON *taxi_dump_stats(struct taxi_env *e)
{
    char cmd[2600];
    snprintf(cmd, sizeof cmd, "'%s' --store '%s' --json stats", e->dump_bin, e->store);
    FILE *p = popen(cmd, "r");
    if (!p)
        return NULL;
    size_t cap = 1 << 16, len = 0, n;
    char *buf = malloc(cap);
    while (buf && (n = fread(buf + len, 1, cap - len - 1, p)) > 0) {
        len += n;
        if (cap - len < 4096) {
            char *more = realloc(buf, cap *= 2);
            if (!more)
                free(buf);
            buf = more;
        }
    }
    int status = pclose(p);
    cJSON *j = NULL;
    if (buf && status == 0) {
        buf[len] = '\0';
        j = cJSON_Parse(buf);
    }
    free(buf);
    if (!j)
        fprintf(stderr, "taxi: straum-dump stats failed\n");
    return j;
}

static int store_stats(struct taxi_env *e, cJSON *out)
{
    cJSON *j = taxi_dump_stats(e);
    if (!j)
        return -1;
    printf("\n| View | Width | Cells | Bytes on disk | Bytes/cell | Value-count entries |\n"
           "|---|---|---|---|---|---|\n");
    cJSON *views = cJSON_GetObjectItem(j, "views"), *v;
    char a[32], b[32], c[32];
    cJSON_ArrayForEach(v, views)
    {
        const char *name = cJSON_GetStringValue(cJSON_GetObjectItem(v, "name"));
        cJSON *w;
        cJSON_ArrayForEach(w, cJSON_GetObjectItem(v, "widths"))
        {
            printf("| %s | %s | %s | %s | %.2f | %s |\n", name,
                   cJSON_GetStringValue(cJSON_GetObjectItem(w, "width")),
                   taxi_format_count((long long)cJSON_GetNumberValue(cJSON_GetObjectItem(w, "cells")), a, sizeof a),
                   taxi_format_count((long long)cJSON_GetNumberValue(cJSON_GetObjectItem(w, "bytes")), b, sizeof b),
                   cJSON_GetNumberValue(cJSON_GetObjectItem(w, "bytes_per_cell")),
                   taxi_format_count((long long)cJSON_GetNumberValue(cJSON_GetObjectItem(w, "value_count_entries")), c, sizeof c));
        }
        cJSON *t = cJSON_GetObjectItem(v, "total");
        printf("| %s | all | %s | %s | %.2f | %s |\n", name,
               taxi_format_count((long long)cJSON_GetNumberValue(cJSON_GetObjectItem(t, "cells")), a, sizeof a),
               taxi_format_count((long long)cJSON_GetNumberValue(cJSON_GetObjectItem(t, "bytes")), b, sizeof b),
               cJSON_GetNumberValue(cJSON_GetObjectItem(t, "bytes_per_cell")),
               taxi_format_count((long long)cJSON_GetNumberValue(cJSON_GetObjectItem(t, "value_count_entries")), c, sizeof c));
    }
    cJSON *t = cJSON_GetObjectItem(j, "total");
    double fb = cJSON_GetNumberValue(cJSON_GetObjectItem(j, "file_bytes"));
    printf("| both views | all | %s | %s | %.2f | %s |\n",
           taxi_format_count((long long)cJSON_GetNumberValue(cJSON_GetObjectItem(t, "cells")), a, sizeof a),
           taxi_format_count((long long)cJSON_GetNumberValue(cJSON_GetObjectItem(t, "bytes")), b, sizeof b),
           cJSON_GetNumberValue(cJSON_GetObjectItem(t, "bytes_per_cell")),
           taxi_format_count((long long)cJSON_GetNumberValue(cJSON_GetObjectItem(t, "value_count_entries")), c, sizeof c));
    printf("\nStore file (LMDB, everything: segments, value counts, dictionaries, projections):"
           " %.1f MiB\n", fb / 1048576.0);
    cJSON_AddItemToObject(out, "store", j);
    return 0;
}

static void pg_sizes(struct taxi_env *e, cJSON *out)
{
    static const char *const q[][2] = {
        {"yellow_trips table", "SELECT pg_relation_size('yellow_trips')"},
        {"yellow_trips indexes", "SELECT pg_indexes_size('yellow_trips')"},
        {"yellow_trips total", "SELECT pg_total_relation_size('yellow_trips')"},
        {"taxi_zones total", "SELECT pg_total_relation_size('taxi_zones')"},
    };
    printf("\n| PostgreSQL | Size |\n|---|---|\n");
    cJSON *pg = cJSON_AddObjectToObject(out, "postgres_bytes");
    for (size_t i = 0; i < sizeof q / sizeof q[0]; i++) {
        char *v = taxi_pg_value(e->conn, q[i][1]);
        double b = v ? atof(v) : -1;
        free(v);
        printf("| %s | %.1f MiB |\n", q[i][0], b / 1048576.0);
        cJSON_AddNumberToObject(pg, q[i][0], b);
    }
}

int taxi_memory_run(struct taxi_env *e)
{
    printf("\nMemory: the store on disk\n");
    cJSON *m = cJSON_AddObjectToObject(e->report, "memory");
    if (store_stats(e, m))
        return 1;

    /* A fresh serve: idle means nothing asked yet. */
    taxi_serve_stop(e);
    if (taxi_serve_start(e, 60))
        return 1;
    cJSON *rss = cJSON_AddArrayToObject(m, "serve_rss");
    printf("\nstraum-serve's resident set (RssAnon/RssFile: /proc/PID/status; Anonymous, Pss:\n"
           "smaps_rollup; VmHWM: the peak)\n\n"
           "| straum-serve | VmRSS | RssAnon | RssFile | Anonymous | Pss | VmHWM |\n"
           "|---|---|---|---|---|---|---|\n");
    rss_row(e, rss, "idle, just started");
    struct http_client c;
    char err[256];
    if (http_client_open(&c, e->url, err, sizeof err) != 0) {
        fprintf(stderr, "taxi: %s\n", err);
        return 1;
    }
    for (int i = 0; i < TAXI_NASKS; i++)
        if (ask_ok(&c, TAXI_ASKS[i].ask, TAXI_ASKS[i].params)) {
            http_client_close(&c);
            return 1;
        }
    rss_row(e, rss, "after the ten asks");
    /* Every hour bucket of both views, the fares' value counts included. */
    static const char *const sweep[] = {
        "SELECT bucket, trips FROM trips WHERE bucket >= $1 AND bucket < $2 GROUP BY bucket",
        "SELECT bucket, median_fare FROM trips WHERE bucket >= $1 AND bucket < $2 GROUP BY bucket",
        ("SELECT bucket, trips, tips, avg_distance FROM dropoffs "
         "WHERE bucket >= $1 AND bucket < $2 GROUP BY bucket"),
    };
    int asked = 0;
    for (int d = 0; d < 182; d++) {
        time_t t0 = 1704067200 + (time_t)d * 86400, t1 = t0 + 86400;
        char from[16], to[16];
        struct tm tm;
        strftime(from, sizeof from, "%Y-%m-%d", gmtime_r(&t0, &tm));
        strftime(to, sizeof to, "%Y-%m-%d", gmtime_r(&t1, &tm));
        const char *params[] = {from, to, NULL};
        for (int s = 0; s < 3; s++, asked++)
            if (ask_ok(&c, sweep[s], params)) {
                http_client_close(&c);
                return 1;
            }
    }
    http_client_close(&c);
    char label[96];
    snprintf(label, sizeof label, "after a sweep of every hour bucket (%d asks)", asked);
    rss_row(e, rss, label);

    printf("\nstraum-ingest: the initial load peaked at %.1f MiB (ru_maxrss); the following\n"
           "ingest holds %.1f MiB now (VmRSS; RssAnon %.1f MiB)\n",
           mib((double)e->ingest_peak_kib), mib((double)taxi_proc_kib(e->ingest_pid, "VmRSS")),
           mib((double)taxi_proc_kib(e->ingest_pid, "RssAnon")));
    cJSON_AddNumberToObject(m, "ingest_load_peak_rss_kib", (double)e->ingest_peak_kib);
    cJSON_AddNumberToObject(m, "ingest_following_rss_kib",
                            (double)taxi_proc_kib(e->ingest_pid, "VmRSS"));
    pg_sizes(e, m);
    return 0;
}
