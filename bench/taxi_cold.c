/* taxi_cold.c -- `taxi cold-start`: how soon straum-serve answers after
 * exec. Repeatedly starts it over the loaded store and times, from just
 * before fork/exec, the first 200 of GET /readyz (polled on new
 * connections) and the first answered ask ("Trips"), with the page cache
 * warm and, where the machine lets us drop it (root, writable
 * /proc/sys/vm/drop_caches), cold. Beside it: the initial load's time, what
 * a design that rebuilds from PostgreSQL pays at every start. */
#include "tests/kit/taxi_asks.h"
#include "bench/taxi_bench.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define COLD_RUNS 3

/* Drops the page cache; false when the machine does not allow it. */
static bool drop_caches(void)
{
    sync();
    int fd = open("/proc/sys/vm/drop_caches", O_WRONLY);
    if (fd < 0)
        return false;
    bool ok = write(fd, "3\n", 2) == 2;
    close(fd);
    return ok;
}

/* One start: fills ready_ns and ask_ns. Returns 0 or -1. */
static int one_start(struct taxi_env *e, int64_t *ready_ns, int64_t *ask_ns)
{
    char log[1200], listen[64];
    snprintf(log, sizeof log, "%s/serve.log", e->work);
    snprintf(listen, sizeof listen, "127.0.0.1:%d", e->port);
    char *argv[] = {e->serve_bin, "--store", e->store, "--listen", listen, NULL};
    if (taxi_touch_store(e))
        fprintf(stderr, "taxi: the store's position did not move (is straum-ingest following?)\n");
    int64_t t0 = taxi_now_ns();
    e->serve_pid = taxi_spawn(argv, log);
    if (e->serve_pid <= 0)
        return -1;
    struct http_response resp = {0};
    char err[256];
    int64_t deadline = t0 + 60000000000LL;
    *ready_ns = 0;
    while (taxi_now_ns() < deadline) {
        struct http_client c;
        int rc = http_client_open(&c, e->url, err, sizeof err);
        if (rc == 0 && http_request(&c, "GET", "/readyz", NULL, NULL, 0, &resp, err, sizeof err) == 0 &&
            resp.status == 200) {
            *ready_ns = taxi_now_ns() - t0;
            http_client_close(&c);
            break;
        }
        http_client_close(&c);
        if (waitpid(e->serve_pid, NULL, WNOHANG) == e->serve_pid) {
            taxi_track_child(e->serve_pid, false);
            e->serve_pid = 0;
            fprintf(stderr, "taxi: straum-serve exited (log %s)\n", log);
            http_response_free(&resp);
            return -1;
        }
        usleep(200);
    }
    if (!*ready_ns) {
        http_response_free(&resp);
        return -1;
    }
    struct http_client c;
    int rc = -1;
    if (http_client_open(&c, e->url, err, sizeof err) == 0 &&
        taxi_post_ask(&c, TAXI_ASKS[0].ask, TAXI_ASKS[0].params, TAXI_TZ, &resp, err,
                      sizeof err) == 0 &&
        resp.status == 200) {
        *ask_ns = taxi_now_ns() - t0;
        rc = 0;
    }
    http_client_close(&c);
    http_response_free(&resp);
    taxi_serve_stop(e);
    return rc;
}

static void summarize(cJSON *obj, const char *label, int64_t *ready, int64_t *ask, int n)
{
    char t1[32], t2[32], t3[32], t4[32];
    int64_t rmax = 0, amax = 0;
    for (int i = 0; i < n; i++) {
        rmax = ready[i] > rmax ? ready[i] : rmax;
        amax = ask[i] > amax ? ask[i] : amax;
    }
    int64_t rmed = taxi_median(ready, n), amed = taxi_median(ask, n);
    printf("| %s | %d | %s | %s | %s | %s |\n", label, n, taxi_format_ns(rmed, t1, sizeof t1),
           taxi_format_ns(rmax, t2, sizeof t2), taxi_format_ns(amed, t3, sizeof t3),
           taxi_format_ns(amax, t4, sizeof t4));
    cJSON_AddNumberToObject(obj, "starts", n);
    cJSON_AddNumberToObject(obj, "ready_median_ms", (double)rmed / 1e6);
    cJSON_AddNumberToObject(obj, "ready_max_ms", (double)rmax / 1e6);
    cJSON_AddNumberToObject(obj, "first_ask_median_ms", (double)amed / 1e6);
    cJSON_AddNumberToObject(obj, "first_ask_max_ms", (double)amax / 1e6);
}

int taxi_cold_run(struct taxi_env *e)
{
    int n = e->o->restarts;
    printf("\nCold start: exec of straum-serve to the first 200 of /readyz and to the first\n"
           "answered ask (\"Trips\"), %d warm starts and %d with the page cache dropped\n",
           n, COLD_RUNS);
    if (e->serve_pid > 0)
        taxi_serve_stop(e);
    int64_t *ready = calloc((size_t)n, sizeof *ready), *ask = calloc((size_t)n, sizeof *ask);
    int rc = 0;
    for (int i = 0; i < n && rc == 0; i++)
        rc = one_start(e, &ready[i], &ask[i]);
    if (rc) {
        free(ready);
        free(ask);
        return 1;
    }
    cJSON *cs = cJSON_AddObjectToObject(e->report, "cold_start");
    printf("\n| Page cache | Starts | Ready (median) | Ready (max) | First ask (median) | "
           "First ask (max) |\n|---|---|---|---|---|---|\n");
    summarize(cJSON_AddObjectToObject(cs, "warm"), "warm", ready, ask, n);
    int64_t cready[COLD_RUNS], cask[COLD_RUNS];
    bool can_drop = drop_caches();
    if (can_drop) {
        for (int i = 0; i < COLD_RUNS && rc == 0; i++) {
            drop_caches();
            rc = one_start(e, &cready[i], &cask[i]);
        }
        if (rc == 0)
            summarize(cJSON_AddObjectToObject(cs, "cold"), "cold (dropped)", cready, cask,
                      COLD_RUNS);
    } else {
        printf("| cold | - | not available (cannot write /proc/sys/vm/drop_caches) | | | |\n");
        cJSON_AddStringToObject(cs, "cold", "not available");
    }
    char t1[32];
    printf("\nBeside it: straum-ingest built the store from PostgreSQL in %s (the initial\n"
           "load, paid once; a design that rebuilds in memory pays it at every start).\n",
           taxi_format_ns((int64_t)(e->ingest_load_s * 1e9), t1, sizeof t1));
    cJSON_AddNumberToObject(cs, "initial_load_s", e->ingest_load_s);
    free(ready);
    free(ask);
    if (rc)
        return 1;
    /* Later modes expect a running serve. */
    return taxi_serve_start(e, 60) ? 1 : 0;
}
