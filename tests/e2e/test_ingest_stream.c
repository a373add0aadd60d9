/* test_ingest_stream.c -- the benchmark's streams of small transactions
 * (bench/stream, as `taxi stream` sends them) at small scale: each script
 * run by pgbench for a few seconds from four clients while ingest follows
 * and a client asks straum-serve a light and a percentile ask back to back
 * (every answer a 200), then every cell, value count and projection equal
 * to PostgreSQL's GROUP BY (taxi_check, the e2e follower test's checker);
 * and the mixed script once more with straum-ingest SIGKILLed while the
 * stream runs and started again, then equal again: whole transactions
 * only, each applied once. */
#include "tests/e2e/oracle.h"
#include "tests/e2e/taxi_db.h"
#include "tests/serve/serve_test.h"

#include <criterion/criterion.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define TRIPS 20000
#define SECONDS "3" /* each script's pgbench -T */

/* ---- The asking client ---------------------------------------------------------- */

struct asker {
    int port;
    atomic_bool stop;
    atomic_long answered;
    char failure[512];
};

static void *asker_main(void *arg)
{
    static const char *const ASKS[] = {
        "{\"ask\": \"SELECT bucket, trips FROM trips WHERE bucket >= $1 AND bucket < $2 "
        "GROUP BY bucket\", \"params\": [\"2024-01-17\", \"2024-01-18\"]}",
        "{\"ask\": \"SELECT bucket, median_fare FROM trips WHERE bucket >= $1 AND bucket < $2 "
        "GROUP BY bucket\", \"params\": [\"2024-01-17\", \"2024-01-18\"]}",
    };
    struct asker *a = arg;
    int fd = hc_connect(a->port);
    for (long i = 0; !atomic_load(&a->stop) && !a->failure[0]; i++) {
        const char *body = ASKS[i % 2];
        struct hc_response r;
        hc_request(fd, "POST", "/ask", "Content-Type: application/json\r\n", body, strlen(body),
                   &r);
        if (r.status == 0) { /* no response: the kept-alive connection went; once more */
            hc_free(&r);
            close(fd);
            fd = hc_connect(a->port);
            hc_request(fd, "POST", "/ask", "Content-Type: application/json\r\n", body,
                       strlen(body), &r);
        }
        if (r.status != 200)
            snprintf(a->failure, sizeof a->failure, "ask %ld: status %d: %s", i, r.status,
                     r.body ? r.body : "");
        else
            atomic_fetch_add(&a->answered, 1);
        if (r.closed) {
            close(fd);
            fd = hc_connect(a->port);
        }
        hc_free(&r);
    }
    close(fd);
    return NULL;
}

/* ---- pgbench ---------------------------------------------------------------------- */

static const char *pg_bindir(void)
{
    const char *env = getenv("STRAUM_PG_BINDIR");
    return env && *env ? env : "/usr/lib/postgresql/15/bin";
}

/* Starts pgbench on the script files (space-separated, of bench/stream,
 * each with an optional @weight) for `seconds` from four clients. */
static pid_t pgbench_start(struct taxi_db *db, const char *files, const char *seconds)
{
    static char paths[8][1024];
    char bin[1024], define[64];
    snprintf(bin, sizeof bin, "%s/pgbench", pg_bindir());
    snprintf(define, sizeof define, "maxid=%llu", (unsigned long long)db->next_id - 1);
    const char *argv[40] = {bin, "-n", "-c", "4", "-j", "2", "-T", seconds, "-D", define};
    int n = 10, nf = 0;
    for (const char *p = files; *p && nf < 8;) {
        size_t len = strcspn(p, " ");
        snprintf(paths[nf], sizeof paths[nf], "%s/bench/stream/%.*s", STRAUM_SOURCE_DIR,
                 (int)len, p);
        argv[n++] = "-f";
        argv[n++] = paths[nf++];
        p += len;
        while (*p == ' ')
            p++;
    }
    argv[n++] = db->conninfo;
    argv[n] = NULL;
    pid_t pid = fork();
    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        int null = open("/dev/null", O_WRONLY);
        dup2(null, 1);
        execv(bin, (char *const *)argv);
        _exit(127);
    }
    cr_assert_gt(pid, 0);
    return pid;
}

static void pgbench_wait(pid_t pid, const char *files)
{
    int status = 0;
    cr_assert_eq(waitpid(pid, &status, 0), pid);
    cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "pgbench -f %s: status %d", files,
              status);
}

/* Waits until PostgreSQL has written `bytes` of WAL past `from`; false
 * after timeout_ms. */
static bool wal_past(PGconn *pg, uint64_t from, uint64_t bytes, int timeout_ms)
{
    for (int i = 0;; i++) {
        if (oracle_current_lsn(pg) >= from + bytes)
            return true;
        if (i >= timeout_ms / 10)
            return false;
        usleep(10000);
    }
}

/* ---- The test ------------------------------------------------------------------- */

/* taxi_check, after waiting up to 300 s for the store to hold all that
 * PostgreSQL wrote (taxi_check's own wait is 60 s): in the ASan tree on a
 * busy machine a stream's backlog takes longer than that to apply. */
static void check_caught_up(struct taxi_db *db, const char *when)
{
    cr_assert(oracle_wait_position(db->store, oracle_committed_lsn(db->pg), 300000),
              "%s: the store did not catch up with PostgreSQL within 300 s", when);
    taxi_check(db, when);
}

static const char *const SCRIPTS[] = {
    "measure.sql", "key.sql", "bucket.sql", "insert.sql", "delete.sql",
    "measure.sql@4 key.sql@1 bucket.sql@1 insert.sql@2 delete.sql@1", "txn10.sql",
};

Test(ingest_stream, pgbench_streams_then_equal_postgresql_and_after_a_kill, .timeout = 1800)
{
    struct taxi_db db;
    taxi_db_create(&db, NULL, TRIPS);
    taxi_exec(db.pg, "CREATE SEQUENCE taxi_stream_ids START %llu",
              (unsigned long long)db.next_id);
    taxi_ingest_start(&db, NULL);
    check_caught_up(&db, "after the snapshot");
    int port = hc_free_port();
    pid_t serve = fixture_spawn_serve(db.store, port);
    /* Static: a failed assertion leaves the test while the asker still runs. */
    static struct asker a;
    a.port = port;
    pthread_t th;
    cr_assert_eq(pthread_create(&th, NULL, asker_main, &a), 0);

    for (size_t i = 0; i < sizeof SCRIPTS / sizeof SCRIPTS[0]; i++) {
        uint64_t before = oracle_current_lsn(db.pg);
        pgbench_wait(pgbench_start(&db, SCRIPTS[i], SECONDS), SCRIPTS[i]);
        cr_assert(wal_past(db.pg, before, 16384, 0), "pgbench -f %s wrote its changes",
                  SCRIPTS[i]);
        check_caught_up(&db, SCRIPTS[i]);
        cr_assert_eq(a.failure[0], '\0', "%s: %s", SCRIPTS[i], a.failure);
    }

    /* The mixed stream again, ingest killed once it has stored some of it
     * (a position past 32 KiB of the stream's WAL) while pgbench runs on. */
    const char *mixed = SCRIPTS[5];
    uint64_t start = oracle_current_lsn(db.pg);
    pid_t pb = pgbench_start(&db, mixed, "10");
    cr_assert(wal_past(db.pg, start, 32768, 10000), "the mixed stream wrote nothing");
    cr_assert(oracle_wait_position(db.store, start + 32768, 30000),
              "the store did not follow the stream");
    int status = 0;
    cr_assert_eq(waitpid(pb, &status, WNOHANG), 0, "the stream was still running at the kill");
    taxi_ingest_kill(&db);
    taxi_ingest_start(&db, NULL);
    pgbench_wait(pb, mixed);
    check_caught_up(&db, "the mixed stream, ingest killed in the middle");

    atomic_store(&a.stop, true);
    pthread_join(th, NULL);
    cr_assert_eq(a.failure[0], '\0', "%s", a.failure);
    cr_assert_gt(atomic_load(&a.answered), 10, "asks answered during the streams");
    kill(serve, SIGTERM);
    waitpid(serve, NULL, 0);
    taxi_db_destroy(&db);
}
