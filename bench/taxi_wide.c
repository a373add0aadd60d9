/* taxi_wide.c -- `taxi wide`: the trips under the seed's wide key
 * (bench/taxi_wide_views.sql; seed 000 "The taxi month under a wide key"),
 * set up by taxi_setup.c as the taxi modes are, with the asks and steps of
 * tests/kit/taxi_asks.h (TAXI_WIDE_*). Reports what the seed reports:
 *   - cells per width (the 15-minute width collapses little: pickup and
 *     dropoff zone together are nearly unique per trip);
 *   - the asks over January, each checked equal to PostgreSQL's and timed
 *     beside it (PostgreSQL's median of three runs, Straum's client median
 *     over keep-alive), every key included; an ask the engine refuses is
 *     reported with its refusal, not timed;
 *   - 200 streamed commits of five new trips each, from the first COMMIT to
 *     the last applied; then a zone renamed, a zone moved to a new key and
 *     a trip in the renamed zone, each one commit timed from COMMIT's return
 *     until the store's position passes the WAL position taken just before
 *     it, every ask but the first checked again after each. */
#include "bench/taxi_bench.h"
#include "tests/kit/taxi_asks.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { WIDE_STREAMED = 200 };

/* One statement as one transaction: the WAL position before COMMIT, and
 * COMMIT's return time in *commit_ns; 0 on error (printed). */
static uint64_t one_commit(struct taxi_env *e, const char *sql, int64_t *commit_ns)
{
    if (taxi_pg_exec(e->conn, "BEGIN") || taxi_pg_exec(e->conn, sql))
        return 0;
    uint64_t lsn = taxi_insert_lsn(e->conn);
    if (taxi_pg_exec(e->conn, "COMMIT"))
        return 0;
    *commit_ns = taxi_now_ns();
    return lsn;
}

/* PostgreSQL's median of three runs of sql, in ns; -1 (printed). */
static int64_t pg_median(PGconn *c, const char *sql)
{
    int64_t v[3];
    for (int i = 0; i < 3; i++) {
        int64_t t0 = taxi_now_ns();
        PGresult *r = PQexec(c, sql);
        v[i] = taxi_now_ns() - t0;
        bool ok = PQresultStatus(r) == PGRES_TUPLES_OK;
        if (!ok)
            fprintf(stderr, "taxi: %s", PQerrorMessage(c));
        PQclear(r);
        if (!ok)
            return -1;
    }
    return taxi_median(v, 3);
}

/* Straum's refusal of an ask, if it refuses it: its status and body into
 * why; 0 when it answers. */
static int refusal(struct http_client *http, const struct taxi_ask *a, char *why, size_t len)
{
    struct http_response resp = {0};
    char err[256];
    int rc = taxi_post_ask(http, a->ask, a->params, TAXI_TZ, &resp, err, sizeof err);
    int status = rc ? -1 : resp.status == 200 ? 0 : resp.status;
    snprintf(why, len, "%d %.200s", resp.status, rc ? err : resp.body ? resp.body : "");
    why[strcspn(why, "\r\n")] = '\0'; /* the body's closing newline */
    http_response_free(&resp);
    return status;
}

static int asks(struct taxi_env *e, struct http_client *http, cJSON *w)
{
    printf("\n| Ask | Groups | PostgreSQL | Straum | PostgreSQL / Straum |\n"
           "|---|---|---|---|---|\n");
    cJSON *arr = cJSON_AddArrayToObject(w, "asks");
    for (int i = 0; i < TAXI_NWIDE_ASKS; i++) {
        const struct taxi_ask *a = &TAXI_WIDE_ASKS[i];
        cJSON *j = cJSON_CreateObject();
        cJSON_AddStringToObject(j, "ask", a->name);
        cJSON_AddItemToArray(arr, j);
        int64_t pg = pg_median(e->conn, a->postgres_sql);
        if (pg < 0)
            return -1;
        cJSON_AddNumberToObject(j, "postgres_median_ms", (double)pg / 1e6);
        char why[512], t1[32], t2[32], r[32];
        int refused = refusal(http, a, why, sizeof why);
        if (refused < 0) {
            fprintf(stderr, "taxi: %s: %s\n", a->name, why);
            return -1;
        }
        if (refused) {
            printf("| %s | | %s | refused: %s | |\n", a->name, taxi_format_ns(pg, t1, sizeof t1),
                   why);
            cJSON_AddStringToObject(j, "refused", why);
            continue;
        }
        int rows = taxi_check_ask(e, a, i, http);
        struct taxi_latency lat;
        if (rows < 0 || taxi_time_ask(http, a, e->o->min_seconds, &lat, why, sizeof why)) {
            fprintf(stderr, "taxi: %s: %s\n", a->name, rows < 0 ? "differs" : why);
            return -1;
        }
        printf("| %s | %d | %s | %s | %s |\n", a->name, rows, taxi_format_ns(pg, t1, sizeof t1),
               taxi_format_ns(lat.median_ns, t2, sizeof t2),
               taxi_format_ratio((double)pg / (double)lat.median_ns, r, sizeof r));
        fflush(stdout);
        cJSON_AddNumberToObject(j, "rows", rows);
        cJSON_AddBoolToObject(j, "equal", true);
        cJSON_AddNumberToObject(j, "straum_median_ms", (double)lat.median_ns / 1e6);
    }
    return 0;
}

/* The asks after the first (every key is checked by `asks`), equal again. */
static bool asks_equal_again(struct taxi_env *e, struct http_client *http)
{
    for (int i = 1; i < TAXI_NWIDE_ASKS; i++)
        if (taxi_check_ask(e, &TAXI_WIDE_ASKS[i], i, http) < 0)
            return false;
    return true;
}

static int steps(struct taxi_env *e, struct http_client *http, cJSON *w)
{
    if (taxi_pg_exec(e->conn, "SET synchronous_commit = on"))
        return -1;
    printf("\n| Step | Commit to applied | Ingest CPU | Its walsender's CPU | Asks equal after |\n"
           "|---|---|---|---|---|\n");
    pid_t sender = taxi_slot_pid(e->conn, "straum"); /* the following ingest's walsender */
    cJSON *arr = cJSON_AddArrayToObject(w, "steps");
    /* 200 commits of five trips each, back to back. */
    int64_t first = 0, commit = 0;
    uint64_t lsn = 0;
    char *max_id = taxi_pg_value(e->conn, "SELECT max(id) FROM yellow_trips");
    long long next = max_id ? atoll(max_id) + 1 : 0;
    free(max_id);
    for (int i = 0; i < WIDE_STREAMED; i++) {
        char sql[160];
        snprintf(sql, sizeof sql, "SELECT straum_generate_trips(5, %f, %lld)",
                 (double)(i % 100) / 100.0, next);
        next += 6;
        if (!(lsn = one_commit(e, sql, &commit)))
            return -1;
        if (i == 0)
            first = commit;
    }
    int64_t applied = taxi_wait_store_lsn(e, lsn, 600);
    if (!applied)
        return -1;
    bool equal = asks_equal_again(e, http);
    char t[32];
    printf("| %d streamed commits, five trips each | %s | | | %s |\n", WIDE_STREAMED,
           taxi_format_ns(applied - first, t, sizeof t), equal ? "yes" : "NO");
    cJSON *j = cJSON_CreateObject();
    cJSON_AddStringToObject(j, "step", "200 streamed commits, five trips each");
    cJSON_AddNumberToObject(j, "applied_ms", (double)(applied - first) / 1e6);
    cJSON_AddBoolToObject(j, "asks_equal", equal);
    cJSON_AddItemToArray(arr, j);
    for (int s = 0; s < TAXI_NWIDE_STEPS && equal; s++) {
        double ingest_cpu0 = taxi_proc_run_s(e->ingest_pid), sender_cpu0 = taxi_proc_run_s(sender);
        if (!(lsn = one_commit(e, TAXI_WIDE_STEPS[s].sql, &commit)) ||
            !(applied = taxi_wait_store_lsn(e, lsn, 600)))
            return -1;
        double ingest_cpu = taxi_proc_run_s(e->ingest_pid) - ingest_cpu0,
               sender_cpu = taxi_proc_run_s(sender) - sender_cpu0;
        equal = asks_equal_again(e, http);
        char c1[32], c2[32];
        printf("| %s | %s | %s | %s | %s |\n", TAXI_WIDE_STEPS[s].name,
               taxi_format_ns(applied - commit, t, sizeof t),
               taxi_format_ns((int64_t)(ingest_cpu * 1e9), c1, sizeof c1),
               taxi_format_ns((int64_t)(sender_cpu * 1e9), c2, sizeof c2), equal ? "yes" : "NO");
        fflush(stdout);
        j = cJSON_CreateObject();
        cJSON_AddStringToObject(j, "step", TAXI_WIDE_STEPS[s].name);
        cJSON_AddNumberToObject(j, "applied_ms", (double)(applied - commit) / 1e6);
        cJSON_AddNumberToObject(j, "ingest_cpu_s", ingest_cpu);
        cJSON_AddNumberToObject(j, "walsender_cpu_s", sender_cpu);
        cJSON_AddBoolToObject(j, "asks_equal", equal);
        cJSON_AddItemToArray(arr, j);
    }
    return equal ? 0 : -1;
}

int taxi_wide_run(struct taxi_env *e)
{
    cJSON *w = cJSON_AddObjectToObject(e->report, "wide");
    cJSON *stats = taxi_dump_stats(e);
    if (!stats)
        return 1;
    printf("\nWide key: cells per width\n\n| Width | Cells |\n|---|---|\n");
    cJSON *v, *wd;
    cJSON_ArrayForEach(v, cJSON_GetObjectItem(stats, "views"))
    cJSON_ArrayForEach(wd, cJSON_GetObjectItem(v, "widths"))
    {
        char n[32];
        printf("| %s | %s |\n", cJSON_GetStringValue(cJSON_GetObjectItem(wd, "width")),
               taxi_format_count((long long)cJSON_GetNumberValue(cJSON_GetObjectItem(wd, "cells")),
                                 n, sizeof n));
    }
    cJSON_AddItemToObject(w, "store", stats);
    struct http_client http;
    char err[512];
    if (http_client_open(&http, e->url, err, sizeof err) != 0) {
        fprintf(stderr, "taxi: %s\n", err);
        return 2;
    }
    int rc = asks(e, &http, w) || steps(e, &http, w);
    http_client_close(&http);
    return rc ? 1 : 0;
}
