/* taxi_txn.c -- `taxi transactions`: one transaction updating the fare of
 * the first N trips (UPDATE yellow_trips SET fare_amount = fare_amount +
 * 0.01 WHERE id <= N), N from 1,000 to 1,000,000, while a client thread
 * asks straum-serve for one day of hour buckets back to back. Per N:
 *   - commit to applied: from COMMIT's return until the store's catalog
 *     position passes the WAL insert position taken inside the transaction
 *     just before COMMIT (so only this commit can move it past);
 *   - the floor: the same UPDATE again with straum-ingest stopped, received
 *     by pg_recvlogical alone (test_decoding, output read from a pipe): from
 *     COMMIT's return until its COMMIT line arrives;
 *   - the longest ask overlapping the apply, against the longest ask of an
 *     idle stretch as long as the apply (this machine's own tail: an idle
 *     server's longest ask over ten seconds is tens of times its median,
 *     and none of it is spent inside straum-serve), and the asks' p99
 *     against the idle p99; the idle median is reported too;
 *   - the following ingest's VmRSS and VmHWM before and after. */
#include "tests/kit/taxi_asks.h"
#include "bench/taxi_bench.h"

#include "store/store.h"

#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define DAY_ASK 8 /* "Trips per hour, one day" */
#define MAX_ASKS (1 << 21)
#define IDLE_SECONDS 15 /* longer than a million rows take to apply */
#define FLOOR_SLOT "taxi_floor"

struct asker {
    const char *url;
    atomic_bool stop;
    int64_t *start, *dur;
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
    const struct taxi_ask *ask = &TAXI_ASKS[DAY_ASK];
    while (!atomic_load(&a->stop) && a->n < MAX_ASKS) {
        int64_t t0 = taxi_now_ns();
        if (taxi_post_ask(&c, ask->ask, ask->params, TAXI_TZ, &resp, err, sizeof err) != 0 ||
            resp.status != 200) {
            a->failed = true;
            break;
        }
        a->start[a->n] = t0;
        a->dur[a->n] = taxi_now_ns() - t0;
        a->n++;
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

/* The durations of the asks overlapping [t0, t1], as a copy (the caller
 * frees *dur). */
static int asks_between(const struct asker *a, int64_t t0, int64_t t1, int64_t **dur)
{
    *dur = malloc(sizeof(int64_t) * (size_t)(a->n + 1));
    int m = 0;
    for (int i = 0; *dur && i < a->n; i++)
        if (a->start[i] + a->dur[i] >= t0 && a->start[i] <= t1)
            (*dur)[m++] = a->dur[i];
    return m;
}

/* What "the longest ask" is with nothing being applied, over len ns: the
 * idle asks (in time order) cut into back-to-back windows of len, and the
 * median of the windows' longest asks; the longest of them all when the
 * idle stretch is shorter than len. A window's longest grows with its
 * length, so only windows as long as the apply compare with it. */
static int64_t idle_longest(const int64_t *start, const int64_t *dur, int n, int64_t len)
{
    int64_t *maxes = malloc(sizeof(int64_t) * (size_t)(n + 1));
    if (!maxes || n == 0) {
        free(maxes);
        return 0;
    }
    int m = 0;
    int64_t end = start[0] + len, cur = 0, all = 0;
    for (int i = 0; i < n; i++) {
        if (start[i] >= end) {
            maxes[m++] = cur; /* a whole window */
            cur = 0;
            end += len * ((start[i] - end) / len + 1);
        }
        if (dur[i] > cur)
            cur = dur[i];
        if (dur[i] > all)
            all = dur[i];
    }
    int64_t r = m ? taxi_median(maxes, m) : all;
    free(maxes);
    return r;
}

/* Updates the first n trips in one transaction. Returns the WAL insert
 * position taken before COMMIT and sets *commit_ns to COMMIT's return;
 * 0 on error. */
static uint64_t update_txn(PGconn *c, long long n, int64_t *commit_ns)
{
    char sql[160];
    snprintf(sql, sizeof sql,
             "UPDATE yellow_trips SET fare_amount = fare_amount + 0.01 WHERE id <= %lld", n);
    if (taxi_pg_exec(c, "BEGIN") || taxi_pg_exec(c, sql))
        return 0;
    uint64_t lsn = taxi_insert_lsn(c);
    if (taxi_pg_exec(c, "COMMIT"))
        return 0;
    *commit_ns = taxi_now_ns();
    return lsn;
}

/* The same transaction received by pg_recvlogical alone. Returns the
 * nanoseconds from COMMIT's return to its COMMIT line, or -1. */
static int64_t floor_ns(struct taxi_env *e, long long n, uint64_t *pre_lsn)
{
    char *cur = taxi_pg_value(e->conn, "SELECT pg_current_wal_lsn()");
    char sql[200];
    snprintf(sql, sizeof sql, "SELECT pg_replication_slot_advance('" FLOOR_SLOT "', '%s')",
             cur ? cur : "0/0");
    free(cur);
    if (taxi_pg_exec(e->conn, sql))
        return -1;
    int fds[2];
    if (pipe(fds))
        return -1;
    char port[16];
    snprintf(port, sizeof port, "%d", pgtmp_port(&e->pg));
    pid_t pid = fork();
    if (pid == 0) {
        dup2(fds[1], 1);
        close(fds[0]);
        close(fds[1]);
        execl("/usr/lib/postgresql/15/bin/pg_recvlogical", "pg_recvlogical", "-h", "127.0.0.1",
              "-p", port, "-U", "postgres", "-d", "postgres", "--slot", FLOOR_SLOT, "--start",
              "-o", "skip-empty-xacts=1", "-o", "include-xids=0", "-f", "-", (char *)NULL);
        _exit(127);
    }
    close(fds[1]);
    if (pid < 0)
        return -1;
    taxi_track_child(pid, true);
    /* Wait until it streams. */
    for (int i = 0; i < 2000; i++) {
        char *act = taxi_pg_value(e->conn, "SELECT active FROM pg_replication_slots "
                                           "WHERE slot_name = '" FLOOR_SLOT "'");
        bool on = act && act[0] == 't';
        free(act);
        if (on)
            break;
        usleep(5000);
    }
    int64_t commit = 0, got = -1;
    *pre_lsn = update_txn(e->conn, n, &commit);
    if (*pre_lsn) {
        /* Scan for a line starting "COMMIT", across reads. */
        static char buf[1 << 16];
        char prev = '\n';
        int match = 0; /* chars of "COMMIT" matched at a line start */
        ssize_t r;
        while (got < 0 && (r = read(fds[0], buf, sizeof buf)) > 0) {
            for (ssize_t i = 0; i < r; i++) {
                char ch = buf[i];
                if (match >= 0 && match < 6 && ch == "COMMIT"[match] &&
                    (match > 0 || prev == '\n'))
                    match++;
                else
                    match = ch == 'C' && prev == '\n' ? 1 : 0;
                if (match == 6) {
                    got = taxi_now_ns() - commit;
                    break;
                }
                prev = ch;
            }
        }
    }
    close(fds[0]);
    taxi_stop_pid(pid, 5);
    return got;
}

int taxi_txn_run(struct taxi_env *e)
{
    printf("\nTransactions: one UPDATE of the first N trips' fares while a client asks for\n"
           "one day of hour buckets back to back\n");
    /* pgtmp turns synchronous_commit off for speed; PostgreSQL's default
     * (on) flushes the commit at once, where off leaves it to the WAL
     * writer (up to 200 ms), which both sides would wait for. */
    if (taxi_pg_exec(e->conn, "SET synchronous_commit = on") ||
        taxi_pg_exec(e->conn, "SELECT pg_create_logical_replication_slot('" FLOOR_SLOT
                              "', 'test_decoding')"))
        return 1;
    struct asker a = {0};
    a.start = malloc(sizeof(int64_t) * MAX_ASKS);
    a.dur = malloc(sizeof(int64_t) * MAX_ASKS);
    pthread_t th;
    /* Idle: the asker alone, kept in time order (see idle_longest). */
    if (asker_start(&a, &th, e->url))
        return 1;
    usleep(IDLE_SECONDS * 1000000);
    asker_stop(&a, th);
    if (a.failed || a.n == 0) {
        fprintf(stderr, "taxi: the idle asks failed\n");
        return 1;
    }
    int n_idle = a.n;
    int64_t *idle_start = malloc(sizeof(int64_t) * (size_t)n_idle);
    int64_t *idle_dur = malloc(sizeof(int64_t) * (size_t)n_idle);
    int64_t *sorted = malloc(sizeof(int64_t) * (size_t)n_idle);
    if (!idle_start || !idle_dur || !sorted)
        return 1;
    memcpy(idle_start, a.start, sizeof(int64_t) * (size_t)n_idle);
    memcpy(idle_dur, a.dur, sizeof(int64_t) * (size_t)n_idle);
    memcpy(sorted, a.dur, sizeof(int64_t) * (size_t)n_idle);
    int64_t idle = taxi_median(sorted, n_idle);
    int64_t idle_p99 = taxi_sorted_p99(sorted, n_idle);
    free(sorted);
    char t1[32], t2[32], t3[32], t4[32], t5[32];
    printf("  idle asks (%d in %d s): median %s, p99 %s, longest %s; following ingest VmRSS "
           "%.1f MiB\n",
           n_idle, IDLE_SECONDS, taxi_format_ns(idle, t1, sizeof t1),
           taxi_format_ns(idle_p99, t2, sizeof t2),
           taxi_format_ns(idle_longest(idle_start, idle_dur, n_idle, INT64_MAX / 2), t3, sizeof t3),
           taxi_proc_kib(e->ingest_pid, "VmRSS") / 1024.0);
    cJSON *tx = cJSON_AddObjectToObject(e->report, "transactions");
    cJSON_AddNumberToObject(tx, "idle_ask_median_ms", (double)idle / 1e6);
    cJSON_AddNumberToObject(tx, "idle_ask_p99_ms", (double)idle_p99 / 1e6);
    cJSON_AddNumberToObject(tx, "idle_seconds", IDLE_SECONDS);
    cJSON *rows_arr = cJSON_AddArrayToObject(tx, "runs");

    struct res {
        long long n;
        int64_t applied, floor, longest, p99, idle_longest;
        long rss0, rss1, hwm0, hwm1;
    } res[16];
    int nres = 0, rc = 0;
    const char *p = e->o->txn_sizes;
    while (*p && nres < 16 && rc == 0) {
        long long n = strtoll(p, (char **)&p, 10);
        if (*p == ',')
            p++;
        if (n <= 0)
            break;
        if (n > e->o->trips)
            n = e->o->trips;
        struct res *r = &res[nres];
        memset(r, 0, sizeof *r);
        r->n = n;
        r->rss0 = taxi_proc_kib(e->ingest_pid, "VmRSS");
        r->hwm0 = taxi_proc_kib(e->ingest_pid, "VmHWM");
        if (asker_start(&a, &th, e->url)) {
            rc = 1;
            break;
        }
        usleep(200000);
        int64_t commit = 0;
        uint64_t pre = update_txn(e->conn, n, &commit);
        int64_t applied = pre ? taxi_wait_store_lsn(e, pre, 600) : 0;
        usleep(100000);
        asker_stop(&a, th);
        if (!applied || a.failed) {
            fprintf(stderr, "taxi: %lld rows: not applied within 600 s or an ask failed\n", n);
            rc = 1;
            break;
        }
        r->applied = applied - commit;
        int64_t *meanwhile;
        int m = asks_between(&a, commit, applied, &meanwhile);
        taxi_sort_ns(meanwhile, m);
        r->longest = m ? meanwhile[m - 1] : 0;
        r->p99 = taxi_sorted_p99(meanwhile, m);
        free(meanwhile);
        r->idle_longest = idle_longest(idle_start, idle_dur, n_idle, r->applied);
        r->rss1 = taxi_proc_kib(e->ingest_pid, "VmRSS");
        r->hwm1 = taxi_proc_kib(e->ingest_pid, "VmHWM");

        /* The floor: the same transaction, straum-ingest stopped. */
        taxi_ingest_stop(e);
        uint64_t floor_lsn = 0;
        r->floor = floor_ns(e, n, &floor_lsn);
        if (taxi_ingest_follow(e) || !floor_lsn || !taxi_wait_store_lsn(e, floor_lsn, 900)) {
            fprintf(stderr, "taxi: straum-ingest did not catch up after the floor run\n");
            rc = 1;
        }
        printf("  %s rows: applied %s after commit; pg_recvlogical alone %s; longest ask %s "
               "(idle, as long: %s); ingest VmRSS %.1f -> %.1f MiB, VmHWM %.1f -> %.1f MiB\n",
               taxi_format_count(n, t1, sizeof t1), taxi_format_ns(r->applied, t2, sizeof t2),
               r->floor > 0 ? taxi_format_ns(r->floor, t3, sizeof t3) : "failed",
               taxi_format_ns(r->longest, t4, sizeof t4),
               taxi_format_ns(r->idle_longest, t5, sizeof t5), r->rss0 / 1024.0,
               r->rss1 / 1024.0, r->hwm0 / 1024.0, r->hwm1 / 1024.0);
        fflush(stdout);
        cJSON *j = cJSON_CreateObject();
        cJSON_AddNumberToObject(j, "rows", (double)n);
        cJSON_AddNumberToObject(j, "commit_to_applied_ms", (double)r->applied / 1e6);
        cJSON_AddNumberToObject(j, "pg_recvlogical_ms", (double)r->floor / 1e6);
        cJSON_AddNumberToObject(j, "longest_ask_ms", (double)r->longest / 1e6);
        cJSON_AddNumberToObject(j, "idle_longest_same_length_ms", (double)r->idle_longest / 1e6);
        cJSON_AddNumberToObject(j, "p99_ask_ms", (double)r->p99 / 1e6);
        cJSON_AddNumberToObject(j, "asks_meanwhile", a.n);
        cJSON_AddNumberToObject(j, "ingest_rss_before_kib", (double)r->rss0);
        cJSON_AddNumberToObject(j, "ingest_rss_after_kib", (double)r->rss1);
        cJSON_AddNumberToObject(j, "ingest_hwm_before_kib", (double)r->hwm0);
        cJSON_AddNumberToObject(j, "ingest_hwm_after_kib", (double)r->hwm1);
        cJSON_AddItemToArray(rows_arr, j);
        nres++;
    }
    free(a.start);
    free(a.dur);
    free(idle_start);
    free(idle_dur);
    taxi_pg_exec(e->conn, "SELECT pg_drop_replication_slot('" FLOOR_SLOT "')");
    printf("\n| Rows changed | Commit to applied | pg_recvlogical alone | Applied / floor | "
           "Longest ask meanwhile | Idle's longest, as long | Ratio | p99 meanwhile (idle %s) | "
           "Longest vs idle median | Ingest VmHWM |\n"
           "|---|---|---|---|---|---|---|---|---|---|\n",
           taxi_format_ns(idle_p99, t5, sizeof t5));
    for (int i = 0; i < nres; i++) {
        struct res *r = &res[i];
        char n[32], ra[32], rb[32], rc2[32], t6[32];
        printf("| %s | %s | %s | %s | %s | %s | %s | %s | %s | %.1f MiB (grew %.1f) |\n",
               taxi_format_count(r->n, n, sizeof n), taxi_format_ns(r->applied, t1, sizeof t1),
               r->floor > 0 ? taxi_format_ns(r->floor, t2, sizeof t2) : "-",
               r->floor > 0 ? taxi_format_ratio((double)r->applied / (double)r->floor, ra, sizeof ra)
                            : "-",
               taxi_format_ns(r->longest, t3, sizeof t3),
               taxi_format_ns(r->idle_longest, t4, sizeof t4),
               taxi_format_ratio((double)r->longest / (double)r->idle_longest, rb, sizeof rb),
               taxi_format_ns(r->p99, t6, sizeof t6),
               taxi_format_ratio((double)r->longest / (double)idle, rc2, sizeof rc2),
               r->hwm1 / 1024.0, (r->hwm1 - r->hwm0) / 1024.0);
    }
    if (e->o->plot_dir && nres) {
        char path[1200];
        snprintf(path, sizeof path, "%s/transactions.dat", e->o->plot_dir);
        FILE *f = fopen(path, "w");
        if (f) {
            for (int i = 0; i < nres; i++)
                fprintf(f, "%lld %.3f %.3f %.3f\n", res[i].n, (double)res[i].applied / 1e6,
                        (double)res[i].floor / 1e6, (double)res[i].longest / 1e6);
            fclose(f);
            taxi_plot(e->o->plot_dir, "transactions",
                      "set terminal pngcairo size 900,600\nset output 'transactions.png'\n"
                      "set title 'One transaction of N rows while asking'\n"
                      "set logscale xy\nset xlabel 'rows changed'\nset ylabel 'ms'\n"
                      "set key top left\n"
                      "plot 'transactions.dat' using 1:2 with linespoints title 'commit to "
                      "applied (Straum)', '' using 1:3 with linespoints title 'pg_recvlogical "
                      "alone', '' using 1:4 with linespoints title 'longest ask meanwhile'\n");
        }
    }
    return rc;
}
