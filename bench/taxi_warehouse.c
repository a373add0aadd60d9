/* taxi_warehouse.c -- `taxi warehouse`: the warehouse workload of seed 000
 * ("A warehouse's tables"), set up by taxi_setup.c from
 * bench/warehouse_schema.sql and bench/warehouse_views.sql at --tasks
 * (the seed's 13,116,878 by default), with the asks and changes of
 * tests/kit/warehouse.h. Reports what the seed reports:
 *   - the store: cells per view and width, bytes per cell, the file on disk
 *     (picks holds counts, a FILTER count and sums; picks_full adds a max
 *     and a percentile_cont, so the difference is what those two cost);
 *   - serve: ready time (exec to /readyz 200 on the loaded store) and its
 *     anonymous RSS after start, after every ask (the peak) and at the end;
 *   - the seed's asks, each checked equal to PostgreSQL's, PostgreSQL run
 *     twice (first, second), Straum's client median over keep-alive;
 *   - 200 generated asks, each Straum's median of 5, the first 50 checked
 *     and timed in PostgreSQL too: p50, p90, p99, max, the slowest five;
 *   - the seed's seven changes, each one transaction timed from COMMIT's
 *     return until the store's position passes the WAL position taken just
 *     before COMMIT, the seed's asks checked again after each; beside it
 *     the CPU seconds straum-ingest and its walsender (PostgreSQL's logical
 *     decoding) spent from BEGIN to applied (schedstat), which say
 *     whose work the time is. */
#include "bench/taxi_bench.h"
#include "tests/kit/answer.h"
#include "tests/kit/taxi_asks.h"
#include "tests/kit/warehouse.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { WH_GENERATED = 200, WH_GENERATED_CHECKED = 50, WH_SLOWEST = 5 };

/* The seed ask i as the taxi asks' struct (same fields). */
static struct taxi_ask as_taxi_ask(const struct warehouse_ask *w)
{
    struct taxi_ask a = {w->name, w->postgres_sql, w->ask, {0}};
    for (int p = 0; p < 3 && w->params[p]; p++)
        a.params[p] = w->params[p];
    return a;
}

/* PostgreSQL's time for one run of sql in ns, or -1 (printed). */
static int64_t pg_once(PGconn *c, const char *sql)
{
    int64_t t0 = taxi_now_ns();
    PGresult *r = PQexec(c, sql);
    int64_t t = taxi_now_ns() - t0;
    bool ok = PQresultStatus(r) == PGRES_TUPLES_OK;
    if (!ok)
        fprintf(stderr, "taxi: %s\n%s", sql, PQerrorMessage(c));
    PQclear(r);
    return ok ? t : -1;
}

static long anon_kib(struct taxi_env *e) { return taxi_proc_kib(e->serve_pid, "RssAnon"); }

/* Straum's median of n runs of an ask (no parameters) in time zone tz, in
 * ns; -1 (printed) when it is not answered. */
static int64_t straum_median(struct http_client *c, const char *ask, const char *tz, int n)
{
    int64_t v[16];
    const char *none[] = {NULL};
    for (int i = 0; i < n && i < 16; i++) {
        struct http_response resp = {0};
        char err[256];
        int64_t t0 = taxi_now_ns();
        int rc = taxi_post_ask(c, ask, none, tz, &resp, err, sizeof err);
        v[i] = taxi_now_ns() - t0;
        if (rc || resp.status != 200) {
            fprintf(stderr, "taxi: %s: %s\n", ask, rc ? err : resp.body);
            http_response_free(&resp);
            return -1;
        }
        http_response_free(&resp);
    }
    return taxi_median(v, n);
}

/* Whether the generated ask g answers as PostgreSQL does (printed when not). */
static bool generated_equal(struct taxi_env *e, struct http_client *c,
                            const struct warehouse_gen *g, int64_t *pg_ns)
{
    char set[64];
    snprintf(set, sizeof set, "SET TIME ZONE '%s'", g->tz);
    if (taxi_pg_exec(e->conn, set))
        return false;
    int64_t t0 = taxi_now_ns();
    PGresult *r = PQexec(e->conn, g->sql);
    *pg_ns = taxi_now_ns() - t0;
    struct answer want = {0}, got = {0};
    bool ok = PQresultStatus(r) == PGRES_TUPLES_OK && answer_from_pg(r, &want) == 0;
    PQclear(r);
    struct http_response resp = {0};
    char err[512], why[1024] = "";
    const char *none[] = {NULL};
    ok = ok && taxi_post_ask(c, g->ask, none, g->tz, &resp, err, sizeof err) == 0 &&
         resp.status == 200 && answer_from_json(resp.body, &got, err, sizeof err) == 0;
    bool equal = ok && answer_equal(&want, &got, why, sizeof why);
    if (!equal)
        printf("  generated ask DIFFERS or failed: %s\n  SQL: %s\n  %s\n", g->ask, g->sql,
               why[0] ? why : resp.body ? resp.body : err);
    http_response_free(&resp);
    answer_free(&want);
    answer_free(&got);
    taxi_pg_exec(e->conn, "SET TIME ZONE 'UTC'");
    return equal;
}

static int store_section(struct taxi_env *e, cJSON *w)
{
    cJSON *stats = taxi_dump_stats(e);
    if (!stats)
        return -1;
    printf("\n| View | Width | Cells | Bytes | Bytes/cell |\n|---|---|---|---|---|\n");
    cJSON *v;
    cJSON_ArrayForEach(v, cJSON_GetObjectItem(stats, "views"))
    {
        cJSON *wd;
        cJSON_ArrayForEach(wd, cJSON_GetObjectItem(v, "widths"))
        {
            char a[32], b[32];
            double cells = cJSON_GetNumberValue(cJSON_GetObjectItem(wd, "cells")),
                   bytes = cJSON_GetNumberValue(cJSON_GetObjectItem(wd, "bytes"));
            printf("| %s | %s | %s | %s | %.1f |\n",
                   cJSON_GetStringValue(cJSON_GetObjectItem(v, "name")),
                   cJSON_GetStringValue(cJSON_GetObjectItem(wd, "width")),
                   taxi_format_count((long long)cells, a, sizeof a),
                   taxi_format_count((long long)bytes, b, sizeof b),
                   cJSON_GetNumberValue(cJSON_GetObjectItem(wd, "bytes_per_cell")));
        }
    }
    printf("Store file: %.1f MiB\n",
           cJSON_GetNumberValue(cJSON_GetObjectItem(stats, "file_bytes")) / 1048576.0);
    cJSON_AddItemToObject(w, "store", stats);
    return 0;
}

static int seed_asks(struct taxi_env *e, struct http_client *http, cJSON *w, long *peak)
{
    printf("\n| Ask | Rows | PostgreSQL, first | PostgreSQL, second | Straum |\n"
           "|---|---|---|---|---|\n");
    cJSON *arr = cJSON_AddArrayToObject(w, "asks");
    for (int i = 0; i < WAREHOUSE_NASKS; i++) {
        struct taxi_ask a = as_taxi_ask(&WAREHOUSE_ASKS[i]);
        int rows = taxi_check_ask(e, &a, i, http);
        if (rows < 0)
            return -1;
        int64_t first = pg_once(e->conn, a.postgres_sql), second = pg_once(e->conn, a.postgres_sql);
        struct taxi_latency lat;
        char err[512];
        if (first < 0 || second < 0 ||
            taxi_time_ask(http, &a, e->o->min_seconds, &lat, err, sizeof err)) {
            fprintf(stderr, "taxi: %s: %s\n", a.name, err);
            return -1;
        }
        long anon = anon_kib(e);
        if (anon > *peak)
            *peak = anon;
        char t1[32], t2[32], t3[32];
        printf("| %s | %d | %s | %s | %s |\n", a.name, rows, taxi_format_ns(first, t1, sizeof t1),
               taxi_format_ns(second, t2, sizeof t2), taxi_format_ns(lat.median_ns, t3, sizeof t3));
        fflush(stdout);
        cJSON *j = cJSON_CreateObject();
        cJSON_AddStringToObject(j, "ask", a.name);
        cJSON_AddNumberToObject(j, "rows", rows);
        cJSON_AddBoolToObject(j, "equal", true);
        cJSON_AddNumberToObject(j, "postgres_first_ms", (double)first / 1e6);
        cJSON_AddNumberToObject(j, "postgres_second_ms", (double)second / 1e6);
        cJSON_AddNumberToObject(j, "straum_median_us", (double)lat.median_ns / 1e3);
        cJSON_AddNumberToObject(j, "straum_p99_us", (double)lat.p99_ns / 1e3);
        cJSON_AddItemToArray(arr, j);
    }
    return 0;
}

static int generated_asks(struct taxi_env *e, struct http_client *http, cJSON *w, long *peak)
{
    static struct warehouse_gen gens[WH_GENERATED];
    int64_t ns[WH_GENERATED], sorted[WH_GENERATED], pg_ns[WH_GENERATED];
    uint64_t state = 2026;
    int differ = 0;
    for (int i = 0; i < WH_GENERATED; i++) {
        warehouse_generate_ask(&state, &gens[i]);
        pg_ns[i] = -1;
        if (i < WH_GENERATED_CHECKED && !generated_equal(e, http, &gens[i], &pg_ns[i]))
            differ++;
        ns[i] = straum_median(http, gens[i].ask, gens[i].tz, 5);
        if (ns[i] < 0)
            return -1;
        long anon = anon_kib(e);
        if (anon > *peak)
            *peak = anon;
    }
    memcpy(sorted, ns, sizeof ns);
    taxi_sort_ns(sorted, WH_GENERATED);
    char a[32], b[32], c[32], d[32];
    printf("\n%d generated asks (the first %d checked: %d differ): p50 %s, p90 %s, p99 %s, "
           "max %s\n",
           WH_GENERATED, WH_GENERATED_CHECKED, differ,
           taxi_format_ns(sorted[WH_GENERATED / 2], a, sizeof a),
           taxi_format_ns(sorted[WH_GENERATED * 9 / 10], b, sizeof b),
           taxi_format_ns(taxi_sorted_p99(sorted, WH_GENERATED), c, sizeof c),
           taxi_format_ns(sorted[WH_GENERATED - 1], d, sizeof d));
    cJSON *g = cJSON_AddObjectToObject(w, "generated");
    cJSON_AddNumberToObject(g, "asks", WH_GENERATED);
    cJSON_AddNumberToObject(g, "checked", WH_GENERATED_CHECKED);
    cJSON_AddNumberToObject(g, "differ", differ);
    cJSON_AddNumberToObject(g, "p50_us", (double)sorted[WH_GENERATED / 2] / 1e3);
    cJSON_AddNumberToObject(g, "p90_us", (double)sorted[WH_GENERATED * 9 / 10] / 1e3);
    cJSON_AddNumberToObject(g, "p99_us", (double)taxi_sorted_p99(sorted, WH_GENERATED) / 1e3);
    cJSON_AddNumberToObject(g, "max_us", (double)sorted[WH_GENERATED - 1] / 1e3);
    cJSON *slow = cJSON_AddArrayToObject(g, "slowest");
    bool taken[WH_GENERATED] = {0};
    for (int k = 0; k < WH_SLOWEST; k++) {
        int m = -1;
        for (int i = 0; i < WH_GENERATED; i++)
            if (!taken[i] && (m < 0 || ns[i] > ns[m]))
                m = i;
        taken[m] = true;
        printf("  %s  %s\n", taxi_format_ns(ns[m], a, sizeof a), gens[m].ask);
        cJSON *j = cJSON_CreateObject();
        cJSON_AddStringToObject(j, "ask", gens[m].ask);
        cJSON_AddNumberToObject(j, "straum_us", (double)ns[m] / 1e3);
        if (pg_ns[m] >= 0)
            cJSON_AddNumberToObject(j, "postgres_ms", (double)pg_ns[m] / 1e6);
        cJSON_AddItemToArray(slow, j);
    }
    return differ ? -1 : 0;
}

static int changes(struct taxi_env *e, struct http_client *http, cJSON *w)
{
    printf("\n| Change | Rows | Applied | Ingest CPU | Its walsender's CPU | Asks equal |\n"
           "|---|---|---|---|---|---|\n");
    cJSON *arr = cJSON_AddArrayToObject(w, "changes");
    /* pgtmp turns synchronous_commit off; the commit is flushed here at
     * once, as a primary's would be (taxi_txn.c). */
    if (taxi_pg_exec(e->conn, "SET synchronous_commit = on"))
        return -1;
    pid_t sender = taxi_slot_pid(e->conn, "straum"); /* the following ingest's walsender */
    for (int c = 0; c < WAREHOUSE_NCHANGES; c++) {
        const struct warehouse_change *ch = &WAREHOUSE_CHANGES[c];
        double ingest_cpu0 = taxi_proc_run_s(e->ingest_pid), sender_cpu0 = taxi_proc_run_s(sender);
        if (taxi_pg_exec(e->conn, "BEGIN"))
            return -1;
        PGresult *r = PQexec(e->conn, ch->sql);
        if (PQresultStatus(r) != PGRES_COMMAND_OK) {
            fprintf(stderr, "taxi: %s: %s", ch->name, PQerrorMessage(e->conn));
            PQclear(r);
            return -1;
        }
        long long rows = atoll(PQcmdTuples(r));
        PQclear(r);
        uint64_t lsn = taxi_insert_lsn(e->conn);
        if (taxi_pg_exec(e->conn, "COMMIT"))
            return -1;
        int64_t commit = taxi_now_ns(), applied = taxi_wait_store_lsn(e, lsn, 600);
        if (!applied) {
            fprintf(stderr, "taxi: %s: not applied within 600 s\n", ch->name);
            return -1;
        }
        double ingest_cpu = taxi_proc_run_s(e->ingest_pid) - ingest_cpu0,
               sender_cpu = taxi_proc_run_s(sender) - sender_cpu0;
        bool equal = true;
        for (int i = 0; i < WAREHOUSE_NASKS && equal; i++) {
            struct taxi_ask a = as_taxi_ask(&WAREHOUSE_ASKS[i]);
            equal = taxi_check_ask(e, &a, i, http) >= 0;
        }
        char t[32], n[32];
        printf("| %s | %s | %s | %.3f s | %.3f s | %s |\n", ch->name,
               taxi_format_count(rows, n, sizeof n), taxi_format_ns(applied - commit, t, sizeof t),
               ingest_cpu, sender_cpu, equal ? "yes" : "NO");
        fflush(stdout);
        cJSON *j = cJSON_CreateObject();
        cJSON_AddStringToObject(j, "change", ch->name);
        cJSON_AddNumberToObject(j, "rows", (double)rows);
        cJSON_AddNumberToObject(j, "applied_ms", (double)(applied - commit) / 1e6);
        cJSON_AddNumberToObject(j, "ingest_cpu_s", ingest_cpu);
        cJSON_AddNumberToObject(j, "walsender_cpu_s", sender_cpu);
        cJSON_AddBoolToObject(j, "asks_equal", equal);
        cJSON_AddItemToArray(arr, j);
        if (!equal)
            return -1;
    }
    return 0;
}

int taxi_warehouse_run(struct taxi_env *e)
{
    cJSON *w = cJSON_AddObjectToObject(e->report, "warehouse");
    printf("\nWarehouse: the store\n");
    if (store_section(e, w))
        return 1;
    /* Ready time on the loaded store: exec to /readyz 200 (not the store's
     * touch before the exec, which waits for ingest's next commit). */
    taxi_serve_stop(e);
    if (taxi_serve_start(e, 60))
        return 1;
    double ready_ms = (double)(taxi_now_ns() - e->serve_exec_ns) / 1e6;
    long start_anon = anon_kib(e), peak = start_anon;
    printf("straum-serve ready in %.1f ms, anonymous RSS %.1f MiB\n", ready_ms,
           (double)start_anon / 1024);
    cJSON_AddNumberToObject(w, "serve_ready_ms", ready_ms);
    cJSON_AddNumberToObject(w, "serve_rss_anon_start_kib", (double)start_anon);

    struct http_client http;
    char err[512];
    if (http_client_open(&http, e->url, err, sizeof err) != 0) {
        fprintf(stderr, "taxi: %s\n", err);
        return 2;
    }
    int rc = seed_asks(e, &http, w, &peak) || generated_asks(e, &http, w, &peak) ||
             changes(e, &http, w);
    long end_anon = anon_kib(e);
    if (end_anon > peak)
        peak = end_anon;
    printf("straum-serve anonymous RSS: peak %.1f MiB, at the end %.1f MiB\n",
           (double)peak / 1024, (double)end_anon / 1024);
    cJSON_AddNumberToObject(w, "serve_rss_anon_peak_kib", (double)peak);
    cJSON_AddNumberToObject(w, "serve_rss_anon_end_kib", (double)end_anon);
    http_client_close(&http);
    return rc ? 1 : 0;
}
