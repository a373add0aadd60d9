/* taxi_stream.c -- `taxi stream`: the changes a busy primary makes, as
 * pgbench sends them (the files of bench/stream: single-row updates of a measure,
 * of a key and of the bucket column, single-row inserts and deletes, a mix
 * of them, and transactions of ten updates), each from --clients clients
 * for --load-seconds, with synchronous_commit on as in the transactions
 * mode. Per script, on one setup:
 *
 *   0. the store settled: ingest following, until its idle fold has
 *      folded the delta blocks the store holds (/metrics
 *      straum_ingest_fold_pending 0), so that each script's apply starts
 *      from the same kind of store and folds only its own deltas;
 *   1. the backlog: straum-ingest stopped, a pgoutput slot made for the
 *      floor, pgbench runs (PostgreSQL's transactions a second);
 *   2. the floor: pg_recvlogical receives that backlog through the same
 *      plugin, publication and options as ingest (pgoutput protocol 2,
 *      binary, streaming) to the end LSN, timed from exec to its exit, and
 *      its walsender's CPU seconds (the decoding, which both pay);
 *   3. the apply: straum-ingest started on it, timed from exec until the
 *      store's position reaches the end LSN; its CPU seconds and its
 *      walsender's (on a busy machine CPU seconds compare where wall
 *      times mostly measure the scheduler's share), VmHWM, and
 *      from its /metrics the source transactions and LMDB commits;
 *   4. beside the load: pgbench again with ingest following, its lag
 *      sampled every second (the time since the first transaction the
 *      store does not hold committed, 0 once it holds all that was
 *      written: lag_now), the lag when the load
 *      ends and the catch-up after it, LMDB commits meanwhile;
 *      Beside it, the lag of ingest's walsender (how far it has read and
 *      decoded the WAL: pg_stat_replication.sent_lsn against PostgreSQL's
 *      insert position sampled every SAMPLE_EVERY_MS), which no receiver
 *      can beat: the part of the lag that is the machine's, not ingest's;
 *   5. through 4, a client asks a light ask (trips per hour of one day), a
 *      percentile ask (the median fare per hour of one day) and GET
 *      /healthz (the same HTTP path, no engine work: the scheduler's part
 *      of a request's time) in turn, ASK_EVERY_MS apart; their p99 against
 *      the same client's on the idle setup before the first script.
 *
 * The trips' ids past the loaded ones come from the sequence
 * taxi_stream_ids (inserts); an id picked at random that a delete took
 * away changes nothing. The store is PostgreSQL's as of each end LSN
 * (tests/e2e/test_ingest_stream.c checks that at small scale). */
#include "tests/kit/taxi_asks.h"
#include "bench/taxi_bench.h"

#include "store/store.h"

#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define LIGHT_ASK 8      /* "Trips per hour, one day" */
#define PERCENTILE_ASK 6 /* "Median fare per hour, one day" */
#define HEALTH_PROBE 255 /* GET /healthz: the same HTTP path with no engine work */
#define ASK_EVERY_MS 50  /* a dashboard's pace, not a load of its own */
#define SAMPLE_EVERY_MS 100 /* PostgreSQL's insert position, for the walsender's lag */
#define IDLE_SECONDS 10
#define MAX_ASKS (1 << 20)
#define FLOOR_SLOT "taxi_stream_floor"
#define PG_BIN "/usr/lib/postgresql/15/bin/"

struct script {
    const char *name;
    const char *files; /* pgbench -f arguments, space-separated, in bench/stream */
    const char *what;
};

static const struct script SCRIPTS[] = {
    {"measure", "measure.sql", "UPDATE of a measure (fare + 0.01) of one trip"},
    {"key", "key.sql", "UPDATE of a key (pickup zone) of one trip"},
    {"bucket", "bucket.sql", "UPDATE of the bucket column (pickup moved by hours) of one trip"},
    {"insert", "insert.sql", "INSERT of one trip"},
    {"delete", "delete.sql", "DELETE of one trip"},
    {"mixed", "measure.sql@4 key.sql@1 bucket.sql@1 insert.sql@2 delete.sql@1",
     "the five, weighted 4:1:1:2:1"},
    {"txn10", "txn10.sql", "ten UPDATEs of a measure in one transaction"},
};
#define NSCRIPTS ((int)(sizeof SCRIPTS / sizeof SCRIPTS[0]))

/* ---- The asking client ------------------------------------------------------ */

struct asker {
    const char *url;
    atomic_bool stop;
    int64_t *start, *dur;
    unsigned char *which; /* LIGHT_ASK, PERCENTILE_ASK or HEALTH_PROBE */
    int n;
    bool failed;
};

static void *asker_main(void *arg)
{
    struct asker *a = arg;
    struct http_client c;
    struct http_response resp = {0};
    char err[256];
    if (http_client_open(&c, a->url, err, sizeof err) != 0) {
        a->failed = true;
        return NULL;
    }
    int64_t next = taxi_now_ns();
    while (!atomic_load(&a->stop) && a->n < MAX_ASKS) {
        static const int turn[] = {LIGHT_ASK, PERCENTILE_ASK, HEALTH_PROBE};
        int k = turn[a->n % 3];
        int64_t t0 = taxi_now_ns();
        int rc = k == HEALTH_PROBE
                     ? http_request(&c, "GET", "/healthz", NULL, NULL, 0, &resp, err, sizeof err)
                     : taxi_post_ask(&c, TAXI_ASKS[k].ask, TAXI_ASKS[k].params, TAXI_TZ, &resp,
                                     err, sizeof err);
        if (rc != 0 || resp.status != 200) {
            fprintf(stderr, "taxi: an ask failed: %s %d\n", err, resp.status);
            a->failed = true;
            break;
        }
        a->start[a->n] = t0;
        a->dur[a->n] = taxi_now_ns() - t0;
        a->which[a->n] = (unsigned char)k;
        a->n++;
        next += ASK_EVERY_MS * 1000000LL;
        int64_t wait = next - taxi_now_ns();
        if (wait > 0)
            usleep((useconds_t)(wait / 1000));
        else
            next = taxi_now_ns();
    }
    http_client_close(&c);
    http_response_free(&resp);
    return NULL;
}

static int asker_start(struct asker *a, pthread_t *th, const char *url)
{
    a->url = url;
    atomic_store(&a->stop, false);
    a->n = 0;
    a->failed = false;
    return pthread_create(th, NULL, asker_main, a);
}

static void asker_stop(struct asker *a, pthread_t th)
{
    atomic_store(&a->stop, true);
    pthread_join(th, NULL);
}

/* The p99 of ask `which` among the asks so far. */
static int64_t asks_p99(const struct asker *a, int which)
{
    int64_t *d = malloc(sizeof(int64_t) * (size_t)(a->n + 1));
    int m = 0;
    for (int i = 0; d && i < a->n; i++)
        if (a->which[i] == which)
            d[m++] = a->dur[i];
    taxi_sort_ns(d, m);
    int64_t p = taxi_sorted_p99(d, m);
    free(d);
    return p;
}

/* ---- PostgreSQL and the store ------------------------------------------------- */

/* The store's position, read through s (opened read-only by the caller). */
static int store_position(struct store *s, struct store_position *pos)
{
    struct store_read *r;
    struct store_error err;
    struct store_catalog cat;
    if (store_read_begin(s, &r, &err))
        return -1;
    int rc = store_read_catalog(r, &cat, &err);
    store_read_end(r);
    if (rc == 0)
        *pos = cat.position;
    return rc;
}

static int64_t unix_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

/* A counter of ingest's /metrics ("straum_store_commits_total"), or -1. */
static double ingest_metric(struct taxi_env *e, const char *name)
{
    char url[64], err[256];
    snprintf(url, sizeof url, "http://127.0.0.1:%d", e->ingest_metrics_port);
    struct http_client c;
    struct http_response resp = {0};
    double v = -1;
    if (http_client_open(&c, url, err, sizeof err) == 0) {
        if (http_request(&c, "GET", "/metrics", NULL, NULL, 0, &resp, err, sizeof err) == 0 &&
            resp.status == 200) {
            size_t n = strlen(name);
            for (const char *p = resp.body; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL)
                if (!strncmp(p, name, n) && p[n] == ' ') {
                    v = atof(p + n + 1);
                    break;
                }
        }
        http_client_close(&c);
    }
    http_response_free(&resp);
    return v;
}

/* Waits (bounded) until ingest's /metrics answers with the series `name`
 * in [lo, hi], asking every poll_us. 0, or -1 past timeout_s. */
static int wait_metric(struct taxi_env *e, const char *name, double lo, double hi,
                       double timeout_s, useconds_t poll_us)
{
    int64_t deadline = taxi_now_ns() + (int64_t)(timeout_s * 1e9);
    while (taxi_now_ns() < deadline) {
        double v = ingest_metric(e, name); /* -1 while it does not answer */
        if (v >= lo && v <= hi)
            return 0;
        usleep(poll_us);
    }
    return -1;
}

/* Ingest's /metrics answers: it listens once started. */
static int wait_metrics(struct taxi_env *e, double timeout_s)
{
    return wait_metric(e, "straum_store_commits_total", 0, INFINITY, timeout_s, 2000);
}

/* The walsender's pid serving a slot, or 0 while none is. */
/* ---- pgbench and pg_recvlogical ------------------------------------------------ */

/* Starts pgbench on script s for the load seconds; its stdout to out. */
static pid_t pgbench_start(struct taxi_env *e, const struct script *s, long long maxid,
                           const char *out)
{
    char clients[16], seconds[32], define[64], log[1200];
    snprintf(clients, sizeof clients, "%d", e->o->clients);
    snprintf(seconds, sizeof seconds, "%.0f", e->o->load_seconds);
    snprintf(define, sizeof define, "maxid=%lld", maxid);
    snprintf(log, sizeof log, "%s/pgbench.log", e->work);
    char *argv[40];
    static char files[8][1200];
    int n = 0, nf = 0;
    argv[n++] = PG_BIN "pgbench";
    argv[n++] = "-n"; /* no vacuum of pgbench's own tables */
    argv[n++] = "-c";
    argv[n++] = clients;
    argv[n++] = "-j";
    argv[n++] = "2";
    argv[n++] = "-T";
    argv[n++] = seconds;
    argv[n++] = "-D";
    argv[n++] = define;
    const char *p = s->files;
    while (*p && nf < 8) {
        size_t len = strcspn(p, " ");
        snprintf(files[nf], sizeof files[nf], "%s/bench/stream/%.*s", e->o->src_dir, (int)len, p);
        argv[n++] = "-f";
        argv[n++] = files[nf++];
        p += len;
        while (*p == ' ')
            p++;
    }
    argv[n++] = (char *)pgtmp_conninfo(&e->pg);
    argv[n] = NULL;
    /* As in the transactions mode: PostgreSQL's default, each commit
     * flushed (pgtmp turns it off for speed). */
    setenv("PGOPTIONS", "-c synchronous_commit=on", 1);
    pid_t pid = taxi_spawn_out(argv, out, log);
    unsetenv("PGOPTIONS");
    return pid;
}

/* Waits for pgbench; reads its transactions and tps from out. 0 or -1. */
static int pgbench_wait(pid_t pid, const char *out, long long *txns, double *tps)
{
    int status = 0;
    if (waitpid(pid, &status, 0) != pid)
        return -1;
    taxi_track_child(pid, false);
    FILE *f = fopen(out, "r");
    if (!f)
        return -1;
    char line[512];
    *txns = -1;
    *tps = -1;
    while (fgets(line, sizeof line, f)) {
        const char *k = "number of transactions actually processed: ";
        if (!strncmp(line, k, strlen(k)))
            *txns = atoll(line + strlen(k));
        if (!strncmp(line, "tps = ", 6))
            *tps = atof(line + 6);
    }
    fclose(f);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 || *txns < 0 || *tps < 0) {
        fprintf(stderr, "taxi: pgbench failed (status %d; see %s and pgbench.log)\n", status, out);
        return -1;
    }
    return 0;
}

/* ---- One script ---------------------------------------------------------------- */

struct stream_result {
    const struct script *s;
    long long txns;
    double tps;
    int64_t settle;          /* 0.: the idle fold of what the store held before */
    int64_t floor, apply;
    double apply_txns, apply_commits, apply_cpu_s;
    double floor_sender_cpu_s, apply_sender_cpu_s; /* the walsenders' CPU */
    long apply_hwm_kib;
    /* beside the load */
    long long txns2;
    double tps2;
    double lag_max_s, lag_end_s;
    double sender_lag_max_s, sender_lag_end_s; /* its walsender's, to SAMPLE_EVERY_MS */
    int64_t catchup;
    double commits2, txns_applied2;
    double cpu2_s;
    double sender2_cpu_s, machine2_busy_s, load2_s; /* beside: the walsender's CPU, the
                                                      machine's busy CPU, over the load */
    int64_t light_p99, pct_p99, health_p99;
    int asks;
};

/* PostgreSQL's insert position through the load, every SAMPLE_EVERY_MS. */
struct lsn_samples {
    struct lsn_sample {
        int64_t at; /* taxi_now_ns() */
        uint64_t lsn;
    } *s;
    int n, cap;
};

static void samples_add(struct lsn_samples *h, int64_t at, uint64_t lsn)
{
    if (h->n == h->cap) {
        int cap = h->cap ? 2 * h->cap : 1024;
        struct lsn_sample *s = realloc(h->s, sizeof *s * (size_t)cap);
        if (!s)
            return; /* a sample fewer: the lag reads coarser, not wrong */
        h->s = s;
        h->cap = cap;
    }
    h->s[h->n++] = (struct lsn_sample){at, lsn};
}

/* How far behind a reader at `pos` is: 0 when pos has reached the last
 * insert position sampled, else the time since the first sample past pos
 * (the WAL at pos was written before it, after the one before it: a lower
 * bound, short by at most SAMPLE_EVERY_MS). */
static double samples_lag(const struct lsn_samples *h, uint64_t pos, int64_t now)
{
    if (h->n == 0 || pos >= h->s[h->n - 1].lsn)
        return 0;
    int lo = 0, hi = h->n - 1; /* the first sample with lsn > pos */
    while (lo < hi) {
        int mid = lo + (hi - lo) / 2;
        if (h->s[mid].lsn > pos)
            hi = mid;
        else
            lo = mid + 1;
    }
    return (double)(now - h->s[lo].at) / 1e9;
}

/* How far behind the WAL the walsender `sender` is (samples_lag of the
 * position it has read and decoded to), or 0 without one. */
static double sender_lag(struct taxi_env *e, pid_t sender, const struct lsn_samples *h)
{
    if (!sender)
        return 0;
    char sql[120];
    snprintf(sql, sizeof sql, "SELECT sent_lsn FROM pg_stat_replication WHERE pid = %d",
             (int)sender);
    char *v = taxi_pg_value(e->conn, sql);
    uint64_t lsn = v ? taxi_parse_lsn(v) : 0;
    free(v);
    return samples_lag(h, lsn, taxi_now_ns());
}

/* How far behind the store is: 0 when it holds all that was written, else
 * the time since the first transaction it does not hold committed. That
 * one committed after the last one the store holds, and not before the
 * load began at load_start_us (the store's last commit may be the
 * backlog's, from before the floor and the apply). */
static double lag_now(struct taxi_env *e, struct store *st, int64_t load_start_us)
{
    struct store_position pos;
    if (store_position(st, &pos))
        return -1;
    if (pos.lsn >= taxi_insert_lsn(e->conn))
        return 0;
    int64_t since = pos.commit_time > load_start_us ? pos.commit_time : load_start_us;
    double lag = (double)(unix_us() - since) / 1e6;
    return lag < 0 ? 0 : lag;
}

static int run_script(struct taxi_env *e, const struct script *s, long long maxid,
                      struct asker *a, struct stream_result *r)
{
    char out[1200];
    snprintf(out, sizeof out, "%s/pgbench.out", e->work);
    r->s = s;

    /* 0. The store settled: ingest's idle fold has folded the delta blocks
     * the store holds (the last script's, or the load's), as it does on a
     * primary that pauses. Else the apply below would fold another
     * script's deltas as its own commits reach their segments: work the
     * floor never does, and none of this script's. */
    int64_t t_settle = taxi_now_ns();
    if (wait_metric(e, "straum_ingest_fold_pending", 0, 0, 600, 50000)) {
        fprintf(stderr, "taxi: %s: straum-ingest's idle fold did not end within 600 s\n",
                s->name);
        return -1;
    }
    r->settle = taxi_now_ns() - t_settle;

    /* 1. The backlog, ingest stopped, the floor's slot made before it. */
    taxi_ingest_stop(e);
    if (taxi_pg_exec(e->conn, "SELECT pg_create_logical_replication_slot('" FLOOR_SLOT
                              "', 'pgoutput')"))
        return -1;
    pid_t pb = pgbench_start(e, s, maxid, out);
    if (pb < 0 || pgbench_wait(pb, out, &r->txns, &r->tps))
        return -1;
    uint64_t end = taxi_insert_lsn(e->conn);

    /* 2. The floor. */
    r->floor = taxi_floor_ns(e, FLOOR_SLOT, end, &r->floor_sender_cpu_s);
    taxi_pg_exec(e->conn, "SELECT pg_drop_replication_slot('" FLOOR_SLOT "')");
    if (r->floor < 0)
        return -1;

    /* 3. The apply of the backlog alone. */
    int64_t t0 = taxi_now_ns();
    if (taxi_ingest_follow(e))
        return -1;
    int64_t done = taxi_wait_store_lsn(e, end - 1, 3600);
    if (!done) {
        fprintf(stderr, "taxi: %s: straum-ingest did not apply the backlog within an hour\n",
                s->name);
        return -1;
    }
    r->apply = done - t0;
    r->apply_cpu_s = taxi_proc_cpu_s(e->ingest_pid);
    pid_t sender = taxi_slot_pid(e->conn, "straum"); /* started with this ingest */
    r->apply_sender_cpu_s = sender ? taxi_proc_cpu_s(sender) : -1;
    r->apply_hwm_kib = taxi_proc_kib(e->ingest_pid, "VmHWM");
    if (wait_metrics(e, 10))
        return -1;
    r->apply_txns = ingest_metric(e, "straum_ingest_transactions_total");
    r->apply_commits = ingest_metric(e, "straum_store_commits_total");

    /* 4. Beside the load, asked meanwhile (5). */
    struct store *st;
    struct store_error serr;
    if (store_open(e->store, STORE_READ_ONLY, &st, &serr))
        return -1;
    double commits0 = ingest_metric(e, "straum_store_commits_total");
    double txns0 = ingest_metric(e, "straum_ingest_transactions_total");
    double cpu0 = taxi_proc_cpu_s(e->ingest_pid);
    double sender0 = sender ? taxi_proc_cpu_s(sender) : -1;
    pthread_t th;
    if (asker_start(a, &th, e->url)) {
        store_close(st);
        return -1;
    }
    int64_t load_start_us = unix_us(), load_start = taxi_now_ns();
    double busy0 = taxi_machine_busy_s();
    pb = pgbench_start(e, s, maxid, out);
    int rc = pb < 0 ? -1 : 0;
    int64_t next = load_start + 1000000000LL, next_sample = load_start;
    struct lsn_samples hist = {0};
    r->lag_max_s = r->sender_lag_max_s = 0;
    for (;;) {
        siginfo_t info = {0};
        if (rc || waitid(P_PID, (id_t)pb, &info, WEXITED | WNOHANG | WNOWAIT) || info.si_pid)
            break; /* WNOWAIT: the exit stays for pgbench_wait */
        int64_t now = taxi_now_ns();
        if (now >= next_sample) {
            samples_add(&hist, now, taxi_insert_lsn(e->conn));
            next_sample += SAMPLE_EVERY_MS * 1000000LL;
        }
        if (now >= next) {
            double lag = lag_now(e, st, load_start_us);
            if (lag > r->lag_max_s)
                r->lag_max_s = lag;
            lag = sender_lag(e, sender, &hist);
            if (lag > r->sender_lag_max_s)
                r->sender_lag_max_s = lag;
            next += 1000000000LL;
        }
        usleep(10000);
    }
    if (rc == 0)
        rc = pgbench_wait(pb, out, &r->txns2, &r->tps2);
    int64_t load_end = taxi_now_ns();
    double busy1 = taxi_machine_busy_s(), sender1 = sender ? taxi_proc_cpu_s(sender) : -1;
    r->load2_s = (double)(load_end - load_start) / 1e9;
    r->machine2_busy_s = busy0 >= 0 && busy1 >= 0 ? busy1 - busy0 : -1;
    r->sender2_cpu_s = sender0 >= 0 && sender1 >= 0 ? sender1 - sender0 : -1;
    uint64_t end2 = taxi_insert_lsn(e->conn);
    samples_add(&hist, taxi_now_ns(), end2);
    r->lag_end_s = lag_now(e, st, load_start_us);
    if (r->lag_end_s > r->lag_max_s)
        r->lag_max_s = r->lag_end_s;
    r->sender_lag_end_s = sender_lag(e, sender, &hist);
    if (r->sender_lag_end_s > r->sender_lag_max_s)
        r->sender_lag_max_s = r->sender_lag_end_s;
    free(hist.s);
    int64_t caught = rc == 0 ? taxi_wait_store_lsn(e, end2 - 1, 3600) : 0;
    asker_stop(a, th);
    store_close(st);
    if (!caught || a->failed)
        return -1;
    r->catchup = caught - load_end;
    r->commits2 = ingest_metric(e, "straum_store_commits_total") - commits0;
    r->txns_applied2 = ingest_metric(e, "straum_ingest_transactions_total") - txns0;
    r->cpu2_s = taxi_proc_cpu_s(e->ingest_pid) - cpu0;
    r->light_p99 = asks_p99(a, LIGHT_ASK);
    r->pct_p99 = asks_p99(a, PERCENTILE_ASK);
    r->health_p99 = asks_p99(a, HEALTH_PROBE);
    r->asks = a->n;
    return 0;
}

static cJSON *result_json(const struct stream_result *r)
{
    cJSON *j = cJSON_CreateObject();
    cJSON_AddStringToObject(j, "script", r->s->name);
    cJSON_AddStringToObject(j, "what", r->s->what);
    cJSON_AddNumberToObject(j, "settle_s", (double)r->settle / 1e9);
    cJSON_AddNumberToObject(j, "backlog_txns", (double)r->txns);
    cJSON_AddNumberToObject(j, "postgres_tps", r->tps);
    cJSON_AddNumberToObject(j, "pg_recvlogical_s", (double)r->floor / 1e9);
    cJSON_AddNumberToObject(j, "apply_s", (double)r->apply / 1e9);
    cJSON_AddNumberToObject(j, "apply_vs_floor", (double)r->apply / (double)r->floor);
    cJSON_AddNumberToObject(j, "apply_txns_per_s", r->apply_txns / ((double)r->apply / 1e9));
    cJSON_AddNumberToObject(j, "apply_lmdb_commits_per_s",
                            r->apply_commits / ((double)r->apply / 1e9));
    cJSON_AddNumberToObject(j, "apply_txns_per_lmdb_commit",
                            r->apply_commits > 0 ? r->apply_txns / r->apply_commits : 0);
    cJSON_AddNumberToObject(j, "apply_cpu_s_per_1000_txns",
                            r->apply_txns > 0 ? r->apply_cpu_s / r->apply_txns * 1000 : 0);
    cJSON_AddNumberToObject(j, "ingest_hwm_kib", (double)r->apply_hwm_kib);
    cJSON_AddNumberToObject(j, "apply_ingest_cpu_s", r->apply_cpu_s);
    cJSON_AddNumberToObject(j, "floor_walsender_cpu_s", r->floor_sender_cpu_s);
    cJSON_AddNumberToObject(j, "apply_walsender_cpu_s", r->apply_sender_cpu_s);
    cJSON_AddNumberToObject(j, "beside_txns", (double)r->txns2);
    cJSON_AddNumberToObject(j, "beside_postgres_tps", r->tps2);
    cJSON_AddNumberToObject(j, "beside_lag_max_s", r->lag_max_s);
    cJSON_AddNumberToObject(j, "beside_lag_end_s", r->lag_end_s);
    cJSON_AddNumberToObject(j, "beside_walsender_lag_max_s", r->sender_lag_max_s);
    cJSON_AddNumberToObject(j, "beside_walsender_lag_end_s", r->sender_lag_end_s);
    cJSON_AddNumberToObject(j, "beside_catchup_s", (double)r->catchup / 1e9);
    cJSON_AddNumberToObject(j, "beside_txns_per_lmdb_commit",
                            r->commits2 > 0 ? r->txns_applied2 / r->commits2 : 0);
    cJSON_AddNumberToObject(j, "beside_cpu_s_per_1000_txns",
                            r->txns_applied2 > 0 ? r->cpu2_s / r->txns_applied2 * 1000 : 0);
    cJSON_AddNumberToObject(j, "beside_load_s", r->load2_s);
    cJSON_AddNumberToObject(j, "beside_walsender_cpu_s", r->sender2_cpu_s);
    cJSON_AddNumberToObject(j, "beside_machine_busy_cpu_s", r->machine2_busy_s);
    cJSON_AddNumberToObject(j, "light_ask_p99_ms", (double)r->light_p99 / 1e6);
    cJSON_AddNumberToObject(j, "percentile_ask_p99_ms", (double)r->pct_p99 / 1e6);
    cJSON_AddNumberToObject(j, "healthz_p99_ms", (double)r->health_p99 / 1e6);
    cJSON_AddNumberToObject(j, "asks_meanwhile", r->asks);
    return j;
}

static bool selected(const char *list, const char *name)
{
    size_t n = strlen(name);
    for (const char *p = list; *p;) {
        size_t len = strcspn(p, ",");
        if (len == n && !strncmp(p, name, n))
            return true;
        p += len;
        if (*p == ',')
            p++;
    }
    return false;
}

int taxi_stream_run(struct taxi_env *e)
{
    printf("\nStream: pgbench scripts of small transactions from %d clients for %.0f s each,\n"
           "synchronous_commit on; the backlog applied alone, then ingest beside the load\n",
           e->o->clients, e->o->load_seconds);
    for (const char *p = e->o->scripts; *p;) {
        size_t len = strcspn(p, ",");
        bool known = false;
        for (int i = 0; i < NSCRIPTS; i++)
            known |= strlen(SCRIPTS[i].name) == len && !strncmp(SCRIPTS[i].name, p, len);
        if (!known) {
            fprintf(stderr, "taxi stream: no script \"%.*s\" (measure, key, bucket, insert, "
                            "delete, mixed, txn10)\n", (int)len, p);
            return 2;
        }
        p += len;
        if (*p == ',')
            p++;
    }
    char *maxv = taxi_pg_value(e->conn, "SELECT max(id) FROM yellow_trips");
    long long maxid = maxv ? atoll(maxv) : 0;
    free(maxv);
    char sql[200];
    snprintf(sql, sizeof sql, "CREATE SEQUENCE IF NOT EXISTS taxi_stream_ids START %lld",
             maxid + 1);
    if (maxid < 1 || taxi_pg_exec(e->conn, sql))
        return 1;
    /* The following ingest again, with /metrics. */
    taxi_ingest_stop(e);
    e->ingest_metrics_port = taxi_free_port();
    /* The floor (pg_recvlogical) and PostgreSQL run at nice 0: so does
     * ingest here, or a busy machine's scheduler, not ingest, would set
     * the ratio. */
    e->ingest_nice = "0";
    if (taxi_ingest_follow(e) || wait_metrics(e, 30) || taxi_touch_store(e))
        return 1;

    struct asker a = {0};
    a.start = malloc(sizeof(int64_t) * MAX_ASKS);
    a.dur = malloc(sizeof(int64_t) * MAX_ASKS);
    a.which = malloc(MAX_ASKS);
    if (!a.start || !a.dur || !a.which)
        return 1;
    pthread_t th;
    if (asker_start(&a, &th, e->url))
        return 1;
    usleep(IDLE_SECONDS * 1000000);
    asker_stop(&a, th);
    if (a.failed || a.n < 2) {
        fprintf(stderr, "taxi: the idle asks failed\n");
        return 1;
    }
    int64_t idle_light = asks_p99(&a, LIGHT_ASK), idle_pct = asks_p99(&a, PERCENTILE_ASK);
    int64_t idle_health = asks_p99(&a, HEALTH_PROBE);
    char t1[32], t2[32], t3[32], t4[32], t5[32], t6[32], t8[32];
    printf("  idle asks, one every %d ms for %d s: p99 light %s, percentile %s, /healthz %s\n",
           ASK_EVERY_MS, IDLE_SECONDS, taxi_format_ns(idle_light, t1, sizeof t1),
           taxi_format_ns(idle_pct, t2, sizeof t2), taxi_format_ns(idle_health, t3, sizeof t3));
    fflush(stdout);
    cJSON *sj = cJSON_AddObjectToObject(e->report, "stream");
    cJSON_AddNumberToObject(sj, "load_seconds", e->o->load_seconds);
    cJSON_AddNumberToObject(sj, "clients", e->o->clients);
    cJSON_AddStringToObject(sj, "synchronous_commit", "on");
    cJSON_AddNumberToObject(sj, "ask_every_ms", ASK_EVERY_MS);
    cJSON_AddNumberToObject(sj, "ingest_nice", 0);
    cJSON_AddNumberToObject(sj, "idle_light_ask_p99_ms", (double)idle_light / 1e6);
    cJSON_AddNumberToObject(sj, "idle_percentile_ask_p99_ms", (double)idle_pct / 1e6);
    cJSON_AddNumberToObject(sj, "idle_healthz_p99_ms", (double)idle_health / 1e6);
    cJSON *arr = cJSON_AddArrayToObject(sj, "scripts");

    struct stream_result res[NSCRIPTS];
    int nres = 0, rc = 0;
    for (int i = 0; i < NSCRIPTS && rc == 0; i++) {
        if (!selected(e->o->scripts, SCRIPTS[i].name))
            continue;
        struct stream_result *r = &res[nres];
        memset(r, 0, sizeof *r);
        if (run_script(e, &SCRIPTS[i], maxid, &a, r)) {
            fprintf(stderr, "taxi: stream script %s failed (logs in %s)\n", SCRIPTS[i].name,
                    e->work);
            rc = 1;
            break;
        }
        char t7[32];
        printf("  %-8s settled in %s; %s txns at %.0f/s; pg_recvlogical %s, apply %s (%.2fx), "
               "%.0f txns per LMDB commit, %.2f CPU s per 1000 (ingest %.2f s, its walsender %.2f s, the floor's "
               "%.2f s); beside: lag max %.2f s, at end %.2f s (its walsender's %.2f s, "
               "%.2f s), caught up %s after; p99 light %s, percentile %s, /healthz %s\n",
               r->s->name, taxi_format_ns(r->settle, t7, sizeof t7),
               taxi_format_count(r->txns, t1, sizeof t1), r->tps,
               taxi_format_ns(r->floor, t2, sizeof t2), taxi_format_ns(r->apply, t3, sizeof t3),
               (double)r->apply / (double)r->floor,
               r->apply_commits > 0 ? r->apply_txns / r->apply_commits : 0,
               r->apply_txns > 0 ? r->apply_cpu_s / r->apply_txns * 1000 : 0, r->apply_cpu_s,
               r->apply_sender_cpu_s, r->floor_sender_cpu_s, r->lag_max_s,
               r->lag_end_s, r->sender_lag_max_s, r->sender_lag_end_s,
               taxi_format_ns(r->catchup, t4, sizeof t4),
               taxi_format_ns(r->light_p99, t5, sizeof t5),
               taxi_format_ns(r->pct_p99, t6, sizeof t6),
               taxi_format_ns(r->health_p99, t8, sizeof t8));
        fflush(stdout);
        cJSON_AddItemToArray(arr, result_json(r));
        nres++;
    }
    free(a.start);
    free(a.dur);
    free(a.which);
    return rc;
}
