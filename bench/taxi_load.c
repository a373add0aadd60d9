/* taxi_load.c -- `taxi load`: straum-serve under load on loopback.
 *
 * wrk holds 1,000 kept-alive connections for a bounded time, each POSTing
 * the ten benchmark asks in turn (a Lua script written to the work dir).
 * The mode reports requests/s and the latency percentiles, and fails on any
 * error: a non-2xx answer, a socket error (connect, read, write) or a
 * request past wrk's timeout. Every ask is answered alike before and after.
 *
 * While the load runs, a few slow clients send a request a byte a second
 * and a few half-open ones send half a request, or nothing, and then wait.
 * Each must be dropped by serve's connection timeout (30 s, SPEC.md 6.2)
 * while the load goes on unharmed: that shows they hold no worker, since
 * serve has far fewer threads than they are.
 *
 * The setup is the other modes' (taxi_setup.c), at 200,000 trips unless
 * --trips says otherwise: the figures are serve's, not the data's. */
#include "tests/kit/http_client.h"
#include "tests/kit/taxi_asks.h"
#include "bench/taxi_bench.h"

#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#define SERVE_TIMEOUT_S 30 /* straum-serve's connection timeout */
#define MAX_TRICKLERS 64

struct load_opts {
    int connections, wrk_threads, slow, half_open;
    double duration_s;
    char wrk[1024];
    bool asks[TAXI_NASKS]; /* the asks wrk sends in turn */
};

static int load_usage(void)
{
    fprintf(stderr,
            "usage: taxi load [--connections N] [--duration S] [--wrk-threads N] [--slow N]\n"
            "                 [--half-open N] [--asks LIST] [--wrk PATH] [--trips N]\n"
            "                 [options of every mode]\n"
            "  --connections N  wrk's kept-alive connections (1000)\n"
            "  --duration S     seconds of load (45: past serve's 30 s connection timeout,\n"
            "                   so the slow and half-open clients are dropped during it)\n"
            "  --wrk-threads N  wrk's threads (2)\n"
            "  --slow N         clients sending a request a byte a second (8)\n"
            "  --half-open N    clients sending half a request or nothing, then waiting (8)\n"
            "  --asks LIST      the asks wrk sends in turn, e.g. 1,2,4 (default all ten)\n"
            "  --wrk PATH       the wrk program (default: wrk on PATH; Debian package wrk)\n"
            "  --trips N        trips generated (200,000 here)\n"
            "(taxi asks --help lists the options every mode takes)\n");
    return 2;
}

/* Takes the load options out of argv (the rest go to taxi_opts_parse);
 * 0, or 2 after printing usage. */
static int parse_load_opts(struct load_opts *lo, int *argc, char **argv, bool *trips_given)
{
    *lo = (struct load_opts){.connections = 1000, .wrk_threads = 2, .slow = 8, .half_open = 8,
                             .duration_s = 45};
    for (int i = 0; i < TAXI_NASKS; i++)
        lo->asks[i] = true;
    int out = 1;
    *trips_given = false;
    for (int i = 1; i < *argc; i++) {
        const char *a = argv[i], *v = i + 1 < *argc ? argv[i + 1] : NULL;
        int *num = !strcmp(a, "--connections")   ? &lo->connections
                   : !strcmp(a, "--wrk-threads") ? &lo->wrk_threads
                   : !strcmp(a, "--slow")        ? &lo->slow
                   : !strcmp(a, "--half-open")   ? &lo->half_open
                                                 : NULL;
        if (!strcmp(a, "--help"))
            return load_usage();
        if (num || !strcmp(a, "--duration") || !strcmp(a, "--wrk") || !strcmp(a, "--asks")) {
            if (!v)
                return load_usage();
            if (num)
                *num = atoi(v);
            else if (!strcmp(a, "--duration"))
                lo->duration_s = atof(v);
            else if (!strcmp(a, "--asks")) {
                if (!taxi_parse_ask_list(v, lo->asks, TAXI_NASKS))
                    return load_usage();
            } else
                snprintf(lo->wrk, sizeof lo->wrk, "%s", v);
            i++;
            continue;
        }
        *trips_given |= !strcmp(a, "--trips");
        argv[out++] = argv[i];
    }
    *argc = out;
    argv[out] = NULL;
    if (lo->connections < 1 || lo->wrk_threads < 1 || lo->wrk_threads > lo->connections ||
        lo->slow < 0 || lo->half_open < 0 || lo->slow + lo->half_open > MAX_TRICKLERS ||
        lo->duration_s < 1)
        return load_usage();
    if (!lo->wrk[0] && !taxi_find_on_path("wrk", lo->wrk, sizeof lo->wrk)) {
        fprintf(stderr, "taxi load: wrk is not installed (Debian: apt-get install wrk; "
                        "tools/packages.sh lists it)\n");
        return 2;
    }
    return 0;
}

/* ---- The asks ------------------------------------------------------------------- */

/* {"ask": ..., "params": [...], "time_zone": ...} of ask i; cJSON_free it. */
static char *ask_body(int i)
{
    const struct taxi_ask *a = &TAXI_ASKS[i];
    cJSON *req = cJSON_CreateObject();
    cJSON_AddStringToObject(req, "ask", a->ask);
    cJSON *params = cJSON_AddArrayToObject(req, "params");
    for (int k = 0; a->params[k]; k++)
        cJSON_AddItemToArray(params, cJSON_CreateString(a->params[k]));
    cJSON_AddStringToObject(req, "time_zone", TAXI_TZ);
    char *body = cJSON_PrintUnformatted(req);
    cJSON_Delete(req);
    return body;
}

/* The ten answers as serve gives them now (malloc'd bodies), each 200. */
static int answer_all(struct taxi_env *e, char *answers[TAXI_NASKS])
{
    struct http_client c;
    char err[512];
    if (http_client_open(&c, e->url, err, sizeof err) != 0) {
        fprintf(stderr, "taxi load: %s\n", err);
        return -1;
    }
    struct http_response resp = {0};
    int rc = 0;
    for (int i = 0; i < TAXI_NASKS && rc == 0; i++) {
        rc = taxi_post_ask(&c, TAXI_ASKS[i].ask, TAXI_ASKS[i].params, TAXI_TZ, &resp, err,
                           sizeof err);
        if (rc == 0 && resp.status != 200) {
            snprintf(err, sizeof err, "%s: %d %.300s", TAXI_ASKS[i].name, resp.status,
                     resp.body);
            rc = -1;
        }
        if (rc == 0)
            answers[i] = strdup(resp.body);
        else
            fprintf(stderr, "taxi load: %s\n", err);
    }
    http_response_free(&resp);
    http_client_close(&c);
    return rc;
}

int taxi_wrk_script(const char *path, const bool *asks)
{
    FILE *f = fopen(path, "w");
    if (!f) {
        fprintf(stderr, "taxi: cannot write %s: %s\n", path, strerror(errno));
        return -1;
    }
    fputs("-- The chosen taxi asks in turn, as POST /ask (written by taxi load).\n"
          "local bodies = {\n", f);
    for (int i = 0; i < TAXI_NASKS; i++) {
        if (!asks[i])
            continue;
        char *b = ask_body(i);
        fprintf(f, "  [==[%s]==],\n", b);
        cJSON_free(b);
    }
    fputs("}\n"
          "local headers = {[\"Content-Type\"] = \"application/json\"}\n"
          "local i = 0\n"
          "request = function()\n"
          "  i = i % #bodies + 1\n"
          "  return wrk.format(\"POST\", \"/ask\", headers, bodies[i])\n"
          "end\n"
          "done = function(summary, latency, requests)\n"
          "  local e = summary.errors\n"
          "  io.write(string.format(\"TAXI_LOAD requests=%d duration_us=%d bytes=%d \" ..\n"
          "    \"connect=%d read=%d write=%d status=%d timeout=%d \" ..\n"
          "    \"p50_us=%d p90_us=%d p99_us=%d p999_us=%d max_us=%d\\n\",\n"
          "    summary.requests, summary.duration, summary.bytes, e.connect, e.read, e.write,\n"
          "    e.status, e.timeout, latency:percentile(50), latency:percentile(90),\n"
          "    latency:percentile(99), latency:percentile(99.9), latency.max))\n"
          "end\n",
          f);
    return fclose(f) == 0 ? 0 : -1;
}

int taxi_wrk_parse(const char *path, struct taxi_wrk_figures *w)
{
    FILE *f = fopen(path, "r");
    char line[1024];
    int got = 0;
    while (f && fgets(line, sizeof line, f))
        if (!strncmp(line, "TAXI_LOAD ", 10))
            got = sscanf(line,
                         "TAXI_LOAD requests=%lld duration_us=%lld bytes=%lld connect=%lld "
                         "read=%lld write=%lld status=%lld timeout=%lld p50_us=%lld p90_us=%lld "
                         "p99_us=%lld p999_us=%lld max_us=%lld",
                         &w->requests, &w->duration_us, &w->bytes, &w->connect, &w->read,
                         &w->write, &w->status, &w->timeout, &w->p50_us, &w->p90_us, &w->p99_us,
                         &w->p999_us, &w->max_us);
    if (f)
        fclose(f);
    return got == 13 ? 0 : -1;
}

/* ---- Slow and half-open clients ---------------------------------------------------- */

enum trickle_kind { TRICKLE_SLOW, TRICKLE_HALF, TRICKLE_SILENT };

struct trickler {
    int port, n;
    int fd[MAX_TRICKLERS];
    enum trickle_kind kind[MAX_TRICKLERS];
    double dropped_s[MAX_TRICKLERS]; /* seconds after it connected; < 0 open */
    size_t sent[MAX_TRICKLERS];
    int64_t t0;
    volatile bool stop;
};

static const char slow_request[] =
    "POST /ask HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
    "Content-Length: 100\r\nX-Slow: ";
static const char half_request[] =
    "POST /ask HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 500\r\n\r\n{\"ask\": \"SEL";

static int connect_loopback(int port)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port),
                            .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    if (fd >= 0 && connect(fd, (struct sockaddr *)&a, sizeof a) != 0) {
        close(fd);
        fd = -1;
    }
    return fd;
}

/* True once the server closed fd (end of stream or a reset); whatever it
 * sent first is read and dropped. */
static bool closed_by_server(int fd)
{
    char buf[512];
    for (;;) {
        ssize_t n = recv(fd, buf, sizeof buf, MSG_DONTWAIT);
        if (n > 0)
            continue;
        return n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR);
    }
}

/* Once a second: a byte from every slow client, and who has been dropped. */
static void *trickle(void *arg)
{
    struct trickler *t = arg;
    int open = t->n;
    while (!t->stop && open > 0) {
        double now = (double)(taxi_now_ns() - t->t0) / 1e9;
        for (int i = 0; i < t->n; i++) {
            if (t->dropped_s[i] >= 0)
                continue;
            bool gone = closed_by_server(t->fd[i]);
            if (!gone && t->kind[i] == TRICKLE_SLOW) {
                char c = t->sent[i] < sizeof slow_request - 1 ? slow_request[t->sent[i]] : 'a';
                gone = send(t->fd[i], &c, 1, MSG_NOSIGNAL) != 1;
                t->sent[i]++;
            }
            if (gone) {
                t->dropped_s[i] = now;
                open--;
            }
        }
        for (int ms = 0; ms < 1000 && !t->stop; ms += 50)
            usleep(50000);
    }
    return NULL;
}

static int trickler_open(struct trickler *t, int port, int slow, int half)
{
    memset(t, 0, sizeof *t);
    t->port = port;
    t->t0 = taxi_now_ns();
    for (int i = 0; i < slow + half; i++) {
        int fd = connect_loopback(port);
        if (fd < 0) {
            fprintf(stderr, "taxi load: connecting a slow client: %s\n", strerror(errno));
            return -1;
        }
        t->fd[t->n] = fd;
        t->dropped_s[t->n] = -1;
        /* Half of the half-open ones send half a request, half nothing. */
        t->kind[t->n] = i < slow ? TRICKLE_SLOW : (i - slow) % 2 ? TRICKLE_SILENT : TRICKLE_HALF;
        if (t->kind[t->n] == TRICKLE_HALF)
            send(fd, half_request, sizeof half_request - 1, MSG_NOSIGNAL);
        t->n++;
    }
    return 0;
}

static void trickler_close(struct trickler *t)
{
    for (int i = 0; i < t->n; i++)
        close(t->fd[i]);
}

/* ---- The mode ---------------------------------------------------------------------------- */

static void raise_fd_limit(int need)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) != 0)
        return;
    rlim_t want = (rlim_t)need + 1024;
    if (rl.rlim_cur < want) {
        rl.rlim_cur = rl.rlim_max == RLIM_INFINITY || rl.rlim_max > want ? want : rl.rlim_max;
        setrlimit(RLIMIT_NOFILE, &rl); /* wrk inherits it */
    }
    if (rl.rlim_cur < (rlim_t)need + 64)
        fprintf(stderr, "taxi load: the descriptor limit is %llu, short of %d connections "
                        "(raise the hard limit: ulimit -Hn)\n",
                (unsigned long long)rl.rlim_cur, need);
}

static double ms(long long us) { return (double)us / 1e3; }

static int run_load(struct taxi_env *e, const struct load_opts *lo)
{
    char *before[TAXI_NASKS] = {0}, *after[TAXI_NASKS] = {0};
    char script[1200], out[1200], log[1200];
    snprintf(script, sizeof script, "%s/load.lua", e->work);
    snprintf(out, sizeof out, "%s/wrk.out", e->work);
    snprintf(log, sizeof log, "%s/wrk.log", e->work);
    int rc = answer_all(e, before) || taxi_wrk_script(script, lo->asks) ? 2 : 0;
    if (rc)
        goto done;
    raise_fd_limit(lo->connections + lo->slow + lo->half_open);

    char conns[16], threads[16], dur[32];
    snprintf(conns, sizeof conns, "%d", lo->connections);
    snprintf(threads, sizeof threads, "%d", lo->wrk_threads);
    snprintf(dur, sizeof dur, "%.0fs", lo->duration_s);
    char *argv[] = {(char *)lo->wrk, "-t", threads, "-c", conns, "-d", dur, "--timeout", "5s",
                    "--latency", "-s", script, e->url, NULL};
    printf("\nLoad:\n  wrk -t %s -c %s -d %s --timeout 5s --latency -s %s %s\n", threads, conns, dur,
           script, e->url);
    printf("  asks");
    for (int i = 0; i < TAXI_NASKS; i++)
        if (lo->asks[i])
            printf(" %d", i + 1);
    printf(", with %d slow clients (a byte a second) and %d half-open ones beside it\n",
           lo->slow, lo->half_open);
    fflush(stdout);
    pid_t wrk = taxi_spawn_out(argv, out, log);
    if (wrk < 0) {
        rc = 2;
        goto done;
    }
    sleep(1); /* wrk's connections first */
    struct trickler t;
    pthread_t th;
    bool trickling = trickler_open(&t, e->port, lo->slow, lo->half_open) == 0 &&
                     pthread_create(&th, NULL, trickle, &t) == 0;
    int status = 0;
    waitpid(wrk, &status, 0);
    taxi_track_child(wrk, false);
    if (trickling) {
        t.stop = true;
        pthread_join(th, NULL);
    }
    trickler_close(&t);

    struct taxi_wrk_figures w;
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 || taxi_wrk_parse(out, &w) != 0) {
        fprintf(stderr, "taxi load: wrk failed (status %d; output %s, log %s)\n", status, out,
                log);
        rc = 2;
        goto done;
    }
    double secs = (double)w.duration_us / 1e6;
    long long errors = w.connect + w.read + w.write + w.status + w.timeout;
    char n1[32], n2[32], n3[32];
    printf("\n| Connections | Duration | Requests | Requests/s | p50 | p90 | p99 | p99.9 | max "
           "| Errors |\n|---|---|---|---|---|---|---|---|---|---|\n");
    printf("| %s | %.1f s | %s | %s | %.2f ms | %.2f ms | %.2f ms | %.2f ms | %.1f ms | %lld |\n",
           taxi_format_count(lo->connections, n1, sizeof n1), secs,
           taxi_format_count(w.requests, n2, sizeof n2),
           taxi_format_count((long long)((double)w.requests / secs + 0.5), n3, sizeof n3),
           ms(w.p50_us), ms(w.p90_us), ms(w.p99_us), ms(w.p999_us), ms(w.max_us), errors);
    printf("  errors: connect %lld, read %lld, write %lld, non-2xx %lld, timeout %lld\n",
           w.connect, w.read, w.write, w.status, w.timeout);
    if (errors || w.requests == 0) {
        fprintf(stderr, "taxi load: wrk saw errors (its output: %s)\n", out);
        rc = 1;
    }

    double first = 1e9, last = 0;
    int kept = 0;
    for (int i = 0; trickling && i < t.n; i++) {
        if (t.dropped_s[i] < 0) {
            kept++;
            continue;
        }
        first = t.dropped_s[i] < first ? t.dropped_s[i] : first;
        last = t.dropped_s[i] > last ? t.dropped_s[i] : last;
    }
    if (!trickling) {
        fprintf(stderr, "taxi load: the slow and half-open clients could not start\n");
        rc = rc ? rc : 2;
    } else if (t.n > 0) {
        if (kept == t.n)
            printf("  slow and half-open clients: none of %d dropped (timeout %d s)\n", t.n,
                   SERVE_TIMEOUT_S);
        else
            printf("  slow and half-open clients: %d of %d dropped, %.0f to %.0f s after they "
                   "connected (timeout %d s)\n",
                   t.n - kept, t.n, first, last, SERVE_TIMEOUT_S);
        if (kept || last > SERVE_TIMEOUT_S + 5) {
            fprintf(stderr, "taxi load: %d slow or half-open clients were not dropped within "
                            "%d s%s\n", kept, SERVE_TIMEOUT_S + 5,
                    lo->duration_s < SERVE_TIMEOUT_S + 5 ? " (the load ended first: give "
                                                           "--duration 40 or more)" : "");
            rc = 1;
        }
    }
    if (answer_all(e, after) == 0) {
        for (int i = 0; i < TAXI_NASKS; i++)
            if (strcmp(before[i], after[i]) != 0) {
                fprintf(stderr, "taxi load: %s answered differently after the load\n",
                        TAXI_ASKS[i].name);
                rc = 1;
            }
    } else {
        rc = 1;
    }

    cJSON *j = cJSON_AddObjectToObject(e->report, "load");
    cJSON_AddNumberToObject(j, "connections", lo->connections);
    cJSON *asks = cJSON_AddArrayToObject(j, "asks");
    /* Recorded as "load" for the ten asks in turn, else "load --asks LIST",
     * so a run over some asks keeps the default's figures. */
    size_t kn = (size_t)snprintf(e->load_key, sizeof e->load_key, "load");
    const char *sep = " --asks ";
    bool all = true;
    for (int i = 0; i < TAXI_NASKS; i++)
        all &= lo->asks[i];
    for (int i = 0; i < TAXI_NASKS; i++)
        if (lo->asks[i]) {
            cJSON_AddItemToArray(asks, cJSON_CreateNumber(i + 1));
            if (!all && kn < sizeof e->load_key)
                kn += (size_t)snprintf(e->load_key + kn, sizeof e->load_key - kn, "%s%d", sep,
                                       i + 1);
            sep = ",";
        }
    cJSON_AddNumberToObject(j, "wrk_threads", lo->wrk_threads);
    cJSON_AddNumberToObject(j, "duration_s", secs);
    cJSON_AddNumberToObject(j, "requests", (double)w.requests);
    cJSON_AddNumberToObject(j, "requests_per_s", (double)w.requests / secs);
    cJSON_AddNumberToObject(j, "p50_ms", ms(w.p50_us));
    cJSON_AddNumberToObject(j, "p90_ms", ms(w.p90_us));
    cJSON_AddNumberToObject(j, "p99_ms", ms(w.p99_us));
    cJSON_AddNumberToObject(j, "p999_ms", ms(w.p999_us));
    cJSON_AddNumberToObject(j, "max_ms", ms(w.max_us));
    cJSON *errs = cJSON_AddObjectToObject(j, "errors");
    cJSON_AddNumberToObject(errs, "connect", (double)w.connect);
    cJSON_AddNumberToObject(errs, "read", (double)w.read);
    cJSON_AddNumberToObject(errs, "write", (double)w.write);
    cJSON_AddNumberToObject(errs, "non_2xx", (double)w.status);
    cJSON_AddNumberToObject(errs, "timeout", (double)w.timeout);
    cJSON_AddNumberToObject(j, "slow_clients", lo->slow);
    cJSON_AddNumberToObject(j, "half_open_clients", lo->half_open);
    cJSON_AddNumberToObject(j, "trickle_dropped", trickling ? t.n - kept : 0);
    cJSON_AddNumberToObject(j, "trickle_dropped_after_s_max", last);
done:
    for (int i = 0; i < TAXI_NASKS; i++) {
        free(before[i]);
        free(after[i]);
    }
    return rc;
}

int taxi_load_main(int argc, char **argv)
{
    static struct load_opts lo;
    bool trips_given;
    /* parse_load_opts takes its options out of argv; the report records
     * the command as given. */
    static char *given[256];
    int ngiven = argc < 255 ? argc : 255;
    memcpy(given, argv, sizeof *given * (size_t)ngiven);
    int rc = parse_load_opts(&lo, &argc, argv, &trips_given);
    if (rc)
        return rc;
    static struct taxi_opts o;
    if ((rc = taxi_opts_parse(&o, argc, argv, "load")))
        return rc;
    o.argc = ngiven;
    o.argv = given;
    if (!trips_given)
        o.trips = 200000;
    static struct taxi_env e;
    if (taxi_setup(&e, &o, true) != 0) {
        fprintf(stderr, "taxi: setup failed; logs in %s\n", e.work);
        o.work_dir = e.work; /* keep the logs */
        return 2;
    }
    rc = run_load(&e, &lo);
    if (taxi_report_write(&e))
        rc = rc ? rc : 2;
    if (rc)
        printf("taxi load: failed; wrk's output is kept in %s\n", e.work);
    if (rc)
        o.work_dir = e.work; /* keep wrk's output */
    taxi_teardown(&e);
    return rc;
}
