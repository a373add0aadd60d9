/* test_serve_growth.c -- straum-serve answers right while data.mdb grows
 * far past the size it had when serve opened it (SPEC.md §4.5, "One map
 * per process").
 *
 * The store is made by a writer whose map is 4 MiB (STRAUM_STORE_MAX_MAP_MB),
 * so the file records a 4 MiB map; straum-serve opens it with eight worker
 * threads, and eight client threads ask it flat out, each on its own
 * connection, four asks of the taxi benchmark in turn (sums, averages, a
 * median, groups by borough). Meanwhile straum-ingest follows batches of
 * inserted trips that grow data.mdb past four times that recorded map: a
 * process that adopted the recorded size and then a grown one with
 * mdb_env_set_mapsize would unmap what its other threads are reading.
 *
 * Each batch is one source transaction, and ingest applies whole ones, so
 * every answer must equal PostgreSQL's answer to the same ask at one of the
 * states the database went through (taken after each batch's commit, while
 * only this test writes). Every ask must answer 200, serve must be alive at
 * the end, and, caught up, every cell equals PostgreSQL's. The ASan tree
 * runs this too: a read through an unmapped page is a crash there. */
#include "tests/e2e/oracle.h"
#include "tests/e2e/taxi_db.h"
#include "tests/kit/answer.h"
#include "tests/kit/taxi_asks.h"
#include "tests/serve/serve_test.h"

#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

enum {
    INITIAL_TRIPS = 2000,
    BATCH = 50000,     /* trips per source transaction: about 2.5 MiB of store */
    MAX_BATCHES = 40,  /* the store is past GROWN_BYTES long before */
    MAP_MB = 4,        /* the map the creating writer records in data.mdb */
    THREADS = 8,       /* serve's workers, and as many clients */
    CATCH_UP_S = 600,  /* bound on ingest catching up (ASan, a loaded machine) */
    /* Bound on one answer. Sixteen sanitized threads on two shared cores,
     * beside ingest applying 50,000-row batches, have taken more than 10 s
     * for an ask over every segment: this test is about the answers, not
     * their time (bench/ measures that). */
    ANSWER_MS = 120000,
};
#define GROWN_BYTES ((off_t)4 * MAP_MB << 20) /* four times the recorded map */

/* The asks, by their index in TAXI_ASKS. */
static const int ASKS[] = {3, 4, 9, 2};
#define NASKS ((int)(sizeof ASKS / sizeof ASKS[0]))

/* PostgreSQL's answers after each state: want[state][ask]. */
static struct answer want[MAX_BATCHES + 1][NASKS];
static int nstates;

/* The distinct answers one client saw, in order (a repeat of the previous
 * answer to the same ask is counted, not kept). */
struct seen {
    int ask;
    char *body;
};

struct client {
    int port;
    atomic_bool *stop;
    struct seen *seen;
    size_t nseen, cap;
    long answers;
    int64_t slowest_ns;
    char failure[512];
};

static char *ask_body(int a)
{
    const struct taxi_ask *t = &TAXI_ASKS[ASKS[a]];
    char *body = malloc(4096);
    int n = snprintf(body, 4096, "{\"ask\": \"%s\", \"params\": [", t->ask);
    for (int i = 0; t->params[i]; i++)
        n += snprintf(body + n, 4096 - (size_t)n, "%s\"%s\"", i ? ", " : "", t->params[i]);
    snprintf(body + n, 4096 - (size_t)n, "]}");
    return body;
}

/* A keep-alive connection to the port; -1 on failure (no Criterion assert:
 * clients run on threads of their own). */
static int client_connect(int port)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port),
                            .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof a) != 0) {
        if (fd >= 0)
            close(fd);
        return -1;
    }
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    return fd;
}

static void *client_thread(void *arg)
{
    struct client *c = arg;
    char *bodies[NASKS], *last[NASKS] = {0};
    for (int a = 0; a < NASKS; a++)
        bodies[a] = ask_body(a);
    int fd = -1;
    for (long i = 0; !atomic_load(c->stop); i++) {
        int a = (int)(i % NASKS);
        if (fd < 0 && (fd = client_connect(c->port)) < 0) {
            snprintf(c->failure, sizeof c->failure, "connecting to straum-serve: %s",
                     strerror(errno));
            break;
        }
        struct hc_response r;
        struct timespec t0, t1;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        hc_request_within(fd, "POST", "/ask", NULL, bodies[a], strlen(bodies[a]), ANSWER_MS, &r);
        clock_gettime(CLOCK_MONOTONIC, &t1);
        int64_t took = (t1.tv_sec - t0.tv_sec) * 1000000000LL + (t1.tv_nsec - t0.tv_nsec);
        if (took > c->slowest_ns)
            c->slowest_ns = took;
        if (r.status != 200) {
            snprintf(c->failure, sizeof c->failure, "ask %s: status %d after %.1f s: %s",
                     TAXI_ASKS[ASKS[a]].name, r.status, (double)took / 1e9,
                     r.body ? r.body : "(no answer)");
            hc_free(&r);
            break;
        }
        c->answers++;
        if (!last[a] || strcmp(last[a], r.body) != 0) {
            if (c->nseen == c->cap) {
                c->cap = c->cap ? 2 * c->cap : 64;
                c->seen = realloc(c->seen, c->cap * sizeof *c->seen);
            }
            c->seen[c->nseen++] = (struct seen){a, strdup(r.body)};
            last[a] = c->seen[c->nseen - 1].body;
        }
        if (r.closed) {
            close(fd);
            fd = -1;
        }
        hc_free(&r);
    }
    if (fd >= 0)
        close(fd);
    for (int a = 0; a < NASKS; a++)
        free(bodies[a]);
    return NULL;
}

/* PostgreSQL's answers to the asks now, as state nstates. */
static void take_state(PGconn *pg)
{
    cr_assert_leq(nstates, MAX_BATCHES);
    for (int a = 0; a < NASKS; a++) {
        PGresult *res = PQexec(pg, TAXI_ASKS[ASKS[a]].postgres_sql);
        cr_assert_eq(PQresultStatus(res), PGRES_TUPLES_OK, "%s", PQerrorMessage(pg));
        cr_assert_eq(answer_from_pg(res, &want[nstates][a]), 0);
        PQclear(res);
    }
    nstates++;
}

/* Whether json, an answer to ask a, equals PostgreSQL's at some state. */
static bool matches_a_state(int a, const char *json, char *why, size_t whylen)
{
    struct answer got;
    if (answer_from_json(json, &got, why, whylen) != 0)
        return false;
    bool found = false;
    for (int s = 0; !found && s < nstates; s++)
        found = answer_equal(&want[s][a], &got, why, whylen);
    answer_free(&got);
    return found;
}

static off_t data_bytes(const char *store)
{
    char path[128];
    struct stat st;
    snprintf(path, sizeof path, "%s/data.mdb", store);
    return stat(path, &st) == 0 ? st.st_size : 0;
}

static pid_t serve_spawn(const char *store, int port)
{
    char listen[64], threads[16];
    snprintf(listen, sizeof listen, "127.0.0.1:%d", port);
    snprintf(threads, sizeof threads, "%d", THREADS);
    pid_t pid = fork();
    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        /* No time budget per ask: this test is about answers while the
         * file grows, and eight sanitized clients flat out on a loaded
         * machine can stretch an ask past the default budget into a 503. */
        execl(STRAUM_SERVE_BIN, STRAUM_SERVE_BIN, "--store", store, "--listen", listen,
              "--threads", threads, "--ask-timeout", "0", (char *)NULL);
        _exit(127);
    }
    for (int i = 0; i < 500 && !hc_listening(port); i++) /* until it listens, 10 s */
        usleep(20000);
    cr_assert(hc_listening(port), "straum-serve on port %d did not come up", port);
    return pid;
}

Test(serve_growth, answers_stay_right_while_data_mdb_grows_under_eight_threads, .timeout = 1500)
{
    struct taxi_db db;
    taxi_db_create(&db, NULL, INITIAL_TRIPS);
    /* The store's file records a MAP_MB map: what a process that adopts
     * the recorded size would map, and have to grow. */
    char map_mb[16];
    snprintf(map_mb, sizeof map_mb, "%d", MAP_MB);
    setenv("STRAUM_STORE_MAX_MAP_MB", map_mb, 1);
    char log[8192];
    int rc = taxi_ingest_once(&db, log, sizeof log);
    unsetenv("STRAUM_STORE_MAX_MAP_MB");
    cr_assert_eq(rc, 0, "%s", log);
    take_state(db.pg);
    off_t at_open = data_bytes(db.store);
    cr_assert(at_open > 0 && at_open < (off_t)MAP_MB << 20, "data.mdb is %lld bytes",
              (long long)at_open);

    int port = hc_free_port();
    pid_t serve = serve_spawn(db.store, port);
    taxi_ingest_start(&db, NULL);
    atomic_bool stop = false;
    struct client clients[THREADS];
    pthread_t threads[THREADS];
    for (int i = 0; i < THREADS; i++) {
        clients[i] = (struct client){.port = port, .stop = &stop};
        cr_assert_eq(pthread_create(&threads[i], NULL, client_thread, &clients[i]), 0);
    }

    /* Batches until data.mdb is GROWN_BYTES, each state's answers taken
     * right after its commit. */
    int batches = 0;
    while (data_bytes(db.store) < GROWN_BYTES) {
        cr_assert_lt(batches, MAX_BATCHES, "data.mdb is %lld bytes after %d batches, not %lld",
                     (long long)data_bytes(db.store), batches, (long long)GROWN_BYTES);
        taxi_db_add_trips(&db, BATCH, (double)(batches + 1) / (MAX_BATCHES + 2));
        take_state(db.pg);
        batches++;
        /* Let ingest keep near: growth is what this test is about. */
        uint64_t target = oracle_committed_lsn(db.pg);
        cr_assert(oracle_wait_position(db.store, target, CATCH_UP_S * 1000),
                  "batch %d: the store did not catch up within %d s", batches, CATCH_UP_S);
    }
    off_t grown = data_bytes(db.store);
    /* The clients keep asking at the last state for a moment more. */
    long before = 0;
    for (int i = 0; i < THREADS; i++)
        before += clients[i].answers;
    for (int waited = 0; waited < 30000; waited += 50) {
        long now = 0;
        for (int i = 0; i < THREADS; i++)
            now += clients[i].answers;
        if (now >= before + 4 * THREADS * NASKS)
            break;
        usleep(50000);
    }
    atomic_store(&stop, true);
    for (int i = 0; i < THREADS; i++)
        pthread_join(threads[i], NULL);

    int status;
    cr_assert_eq(waitpid(serve, &status, WNOHANG), 0,
                 "straum-serve died while the store grew (status %d)", status);
    long answers = 0, distinct = 0;
    int64_t slowest_ns = 0;
    for (int i = 0; i < THREADS; i++) {
        struct client *c = &clients[i];
        cr_assert_eq(c->failure[0], '\0', "client %d: %s", i, c->failure);
        answers += c->answers;
        slowest_ns = c->slowest_ns > slowest_ns ? c->slowest_ns : slowest_ns;
        distinct += (long)c->nseen;
        for (size_t j = 0; j < c->nseen; j++) {
            char why[1024] = "";
            cr_assert(matches_a_state(c->seen[j].ask, c->seen[j].body, why, sizeof why),
                      "client %d, ask %s: an answer PostgreSQL never gave (%d states; last "
                      "difference: %s): %s", i, TAXI_ASKS[ASKS[c->seen[j].ask]].name, nstates,
                      why, c->seen[j].body);
            free(c->seen[j].body);
        }
        free(c->seen);
    }
    cr_assert_gt(distinct, (long)THREADS * NASKS,
                 "the clients saw the store change (%ld distinct answers)", distinct);
    fprintf(stderr,
            "serve_growth: %ld answers (%ld distinct) by %d threads, all PostgreSQL's, while "
            "data.mdb grew from %lld to %lld bytes in %d batches; the slowest took %.2f s\n",
            answers, distinct, THREADS, (long long)at_open, (long long)grown, batches,
            (double)slowest_ns / 1e9);

    char diff[4096];
    rc = oracle_compare(db.pg, db.store, diff, sizeof diff);
    cr_assert_eq(rc, 0, "after the growth: %s", diff);
    kill(serve, SIGTERM);
    waitpid(serve, NULL, 0);
    taxi_ingest_stop(&db);
    for (int s = 0; s < nstates; s++)
        for (int a = 0; a < NASKS; a++)
            answer_free(&want[s][a]);
    taxi_db_destroy(&db);
}
