/* test_ingest_disk.c -- straum-ingest on a store that cannot grow.
 *
 * Two ways a store fills up, each driven until it happens while ingest
 * follows a taxi database taking batches of inserted trips:
 *
 *   ingest_disk        --max-store-size caps data.mdb. Ingest stops with a
 *                      message naming the store, the limit and what to do;
 *                      the store verifies and equals PostgreSQL at its
 *                      position (straum-serve's count and the oracle, with
 *                      the batches after it rolled back); the slot is not
 *                      confirmed past it; a restart with the same limit
 *                      stops the same way; one with a larger limit catches
 *                      up and equals PostgreSQL.
 *   ingest_disk_tmpfs  a small tmpfs mounted on the store, filled with a
 *                      ballast file: ingest says the filesystem is full and
 *                      keeps retrying; the same checks; the ballast removed,
 *                      it catches up by itself. Mounting needs privileges
 *                      (CAP_SYS_ADMIN): where it is refused the test reports
 *                      itself skipped, and CMake registers it as its own
 *                      test so that a skip is never counted as a pass.
 *
 * Each batch is one source transaction of trips with ids above a known
 * one, so the store's trip count says which batches it holds, and
 * PostgreSQL "at the store's position" is the database with the later
 * batches deleted inside a transaction that is rolled back. A store that
 * is full may still take a commit later (LMDB reuses pages once no reader
 * holds them), so once full each case adds a batch far larger than the
 * room left: nothing can get past it until the room is made. */
#include "tests/e2e/oracle.h"
#include "tests/e2e/taxi_db.h"
#include "tests/serve/serve_test.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define INITIAL_TRIPS 2000
#define BATCH 2000
#define HUGE_BATCH 100000 /* several MiB of pages: never fits the room left */
#define MAX_BATCHES 40

/* ---- Processes ------------------------------------------------------------------ */

/* straum-ingest run on the database, stderr appended to log; --exit-when-
 * caught-up when once. extra is NULL-terminated. */
static pid_t ingest_spawn(struct taxi_db *db, const char *log, bool once, const char *const *extra)
{
    int fd = open(log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    cr_assert_geq(fd, 0, "%s: %s", log, strerror(errno));
    pid_t pid = taxi_ingest_spawn(db, extra, once, fd);
    close(fd);
    return pid;
}

/* The exit status of pid, or -1 when it still runs after timeout_ms. */
static int wait_exit(pid_t pid, int timeout_ms)
{
    int status;
    for (int waited = 0;; waited += 50) {
        pid_t got = waitpid(pid, &status, WNOHANG);
        if (got == pid)
            return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
        if (waited >= timeout_ms)
            return -1;
        usleep(50000);
    }
}

/* Runs straum-ingest once (until caught up) with stderr into a fresh log,
 * returned in out; its exit status. */
static int ingest_once(struct taxi_db *db, const char *const *extra, char *out, size_t len)
{
    char log[] = "/tmp/straum-disk-log-XXXXXX";
    int fd = mkstemp(log);
    cr_assert_geq(fd, 0);
    close(fd);
    int rc = wait_exit(ingest_spawn(db, log, true, extra), 300000);
    FILE *f = fopen(log, "r");
    size_t n = f ? fread(out, 1, len - 1, f) : 0;
    out[n] = '\0';
    if (f)
        fclose(f);
    unlink(log);
    return rc;
}

static bool file_has(const char *path, const char *needle)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return false;
    static char buf[1 << 20];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    buf[n] = '\0';
    fclose(f);
    return strstr(buf, needle) != NULL;
}

/* The last line of a log containing needle, for messages. */
static void log_line(const char *path, const char *needle, char *out, size_t len)
{
    out[0] = '\0';
    FILE *f = fopen(path, "r");
    char line[4096];
    while (f && fgets(line, sizeof line, f))
        if (strstr(line, needle))
            snprintf(out, len, "%s", line);
    if (f)
        fclose(f);
}

/* straum-dump verify: its exit status, its output in out. */
static int dump_verify(const char *store, char *out, size_t len)
{
    char cmd[4400];
    snprintf(cmd, sizeof cmd, "%s --store %s verify 2>&1", STRAUM_DUMP_BIN, store);
    FILE *p = popen(cmd, "r");
    cr_assert_not_null(p);
    size_t n = fread(out, 1, len - 1, p);
    out[n] = '\0';
    int status = pclose(p);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

static pid_t serve_spawn(const char *store, int port)
{
    char listen[64];
    snprintf(listen, sizeof listen, "127.0.0.1:%d", port);
    pid_t pid = fork();
    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        int null = open("/dev/null", O_WRONLY);
        dup2(null, 2);
        execl(STRAUM_SERVE_BIN, STRAUM_SERVE_BIN, "--store", store, "--listen", listen,
              "--threads", "2", (char *)NULL);
        _exit(127);
    }
    for (int i = 0; i < 250; i++) { /* until it listens */
        bool up = hc_listening(port);
        if (up)
            return pid;
        usleep(20000);
    }
    cr_assert_fail("straum-serve on port %d did not come up", port);
    return pid;
}

/* Every trip the store holds, as straum-serve answers it. */
static int64_t serve_trips(int port)
{
    static const char body[] =
        "{\"ask\": \"SELECT trips FROM trips WHERE bucket >= $1 AND bucket < $2\","
        " \"params\": [\"2000-01-01\", \"2030-01-01\"]}";
    struct hc_response r;
    hc_once(port, "POST", "/ask", "Content-Type: application/json\r\n", body, &r);
    cr_assert_eq(r.status, 200, "status %d: %s", r.status, r.body ? r.body : "");
    const char *rows = strstr(r.body, "\"rows\":[[");
    cr_assert_not_null(rows, "%s", r.body);
    int64_t n = atoll(rows + 9);
    hc_free(&r);
    return n;
}

/* ---- The store at its position --------------------------------------------------- */

struct batches {
    uint64_t after_id[MAX_BATCHES + 1]; /* batch k holds the ids above after_id[k] */
    int64_t trips[MAX_BATCHES + 1];     /* the store's count with batches 0..k-1 */
    int n;
};

static void add_batch(struct taxi_db *db, struct batches *b, int trips)
{
    cr_assert_lt(b->n, MAX_BATCHES, "the store never filled up in %d batches", MAX_BATCHES);
    if (b->n == 0)
        b->trips[0] = INITIAL_TRIPS;
    b->after_id[b->n] = db->next_id;
    taxi_db_add_trips(db, trips, (double)(b->n + 1) / (MAX_BATCHES + 2));
    b->n++;
    b->trips[b->n] = b->trips[b->n - 1] + trips;
}

/* The store a full disk left: it verifies, holds whole batches only (its
 * trip count, through straum-serve), equals PostgreSQL with the batches it
 * does not hold rolled back, and the slot is not confirmed past it.
 * Returns how many batches it holds. */
static int check_store_at_position(struct taxi_db *db, const struct batches *b, int port,
                                   const char *when)
{
    char out[8192];
    int rc = dump_verify(db->store, out, sizeof out);
    cr_assert_eq(rc, 0, "%s: straum-dump verify exited %d:\n%s", when, rc, out);
    uint64_t stored = oracle_store_position(db->store), confirmed = taxi_slot_confirmed(db);
    cr_assert_neq(stored, 0, "%s: the store has a position", when);
    cr_assert_leq(confirmed, stored, "%s: the slot confirmed %llX, past the store's %llX", when,
                  (unsigned long long)confirmed, (unsigned long long)stored);
    int64_t trips = serve_trips(port);
    int held = 0;
    while (held < b->n && b->trips[held] < trips)
        held++;
    cr_assert_eq(trips, b->trips[held],
                 "%s: the store holds %lld trips, not a whole number of batches", when,
                 (long long)trips);
    char sql[128], diff[4096];
    oracle_exec(db->pg, "BEGIN");
    snprintf(sql, sizeof sql, "DELETE FROM yellow_trips WHERE id > %llu",
             (unsigned long long)(held < b->n ? b->after_id[held] : UINT64_MAX >> 1));
    oracle_exec(db->pg, sql);
    rc = oracle_compare(db->pg, db->store, diff, sizeof diff);
    oracle_exec(db->pg, "ROLLBACK");
    cr_assert_eq(rc, 0, "%s: the store differs from PostgreSQL at its position (%d batches): %s",
                 when, held, diff);
    return held;
}

/* ---- The size limit --------------------------------------------------------------------- */

Test(ingest_disk, a_size_limit_stops_ingest_and_a_larger_one_resumes, .timeout = 600)
{
    struct taxi_db db;
    taxi_db_create(&db, NULL, INITIAL_TRIPS);
    const char *const limited[] = {"--max-store-size", "2MiB", NULL};
    char out[8192];
    cr_assert_eq(ingest_once(&db, limited, out, sizeof out), 0, "%s", out);
    int port = hc_free_port();
    pid_t serve = serve_spawn(db.store, port);
    cr_assert_eq(serve_trips(port), INITIAL_TRIPS);

    char log[128];
    snprintf(log, sizeof log, "%s.log", db.store);
    db.ingest = ingest_spawn(&db, log, false, limited);
    struct batches b = {0};
    int status = -1;
    while (status < 0) {
        add_batch(&db, &b, BATCH);
        status = wait_exit(db.ingest, 300);
    }
    db.ingest = 0;
    char line[4096];
    log_line(log, "level=error", line, sizeof line);
    cr_assert_eq(status, 1, "ingest exits 1 at the limit (%d): %s", status, line);
    cr_assert(strstr(line, db.store) && strstr(line, "size limit of 2 MiB") &&
                  strstr(line, "Raise --max-store-size") && strstr(line, "resumes from"),
              "the message names the store, the limit and what to do: %s", line);
    int held = check_store_at_position(&db, &b, port, "at the size limit");
    cr_assert(held > 0 && held < b.n, "some batches fit before the limit, not all (%d of %d)",
              held, b.n);

    /* Restarted with the same limit it stops the same way: at the huge
     * batch at the latest, with whole batches only. */
    add_batch(&db, &b, HUGE_BATCH);
    cr_assert_eq(ingest_once(&db, limited, out, sizeof out), 1, "%s", out);
    cr_assert(strstr(out, "size limit of 2 MiB"), "%s", out);
    int again = check_store_at_position(&db, &b, port, "after a restart at the limit");
    cr_assert(again >= held && again < b.n, "after a restart: %d batches of %d, before %d",
              again, b.n, held);
    /* A limit below what the store holds is refused before anything else. */
    const char *const tiny[] = {"--max-store-size", "1MiB", NULL};
    cr_assert_eq(ingest_once(&db, tiny, out, sizeof out), 1, "%s", out);
    cr_assert(strstr(out, "already holds") && strstr(out, "give a larger --max-store-size"),
              "%s", out);

    const char *const larger[] = {"--max-store-size", "64MiB", NULL};
    db.ingest = ingest_spawn(&db, log, false, larger);
    taxi_check(&db, "after the limit was raised");
    PGresult *r = PQexec(db.pg, "SELECT count(*) FROM yellow_trips");
    int64_t want = atoll(PQgetvalue(r, 0, 0));
    PQclear(r);
    cr_assert_eq(serve_trips(port), want, "straum-serve sees the store grown past the old map");
    taxi_ingest_stop(&db);
    cr_assert_eq(dump_verify(db.store, out, sizeof out), 0, "%s", out);
    kill(serve, SIGTERM);
    waitpid(serve, NULL, 0);
    unlink(log);
    taxi_db_destroy(&db);
}

/* ---- A full filesystem ------------------------------------------------------------------- */

#define TMPFS_BYTES (16u << 20)
#define ROOM_LEFT (1u << 20) /* what the ballast leaves the store to grow into */

/* Makes room_left the free space of the filesystem of dir with a ballast
 * file there (written, so tmpfs counts it). */
static void fill_up(const char *dir, const char *ballast, uint64_t room_left)
{
    struct statvfs v;
    cr_assert_eq(statvfs(dir, &v), 0);
    uint64_t avail = (uint64_t)v.f_bavail * v.f_frsize;
    cr_assert_gt(avail, room_left, "%s has only %llu bytes free", dir, (unsigned long long)avail);
    int fd = open(ballast, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    cr_assert_geq(fd, 0);
    static char zeros[1 << 16];
    for (uint64_t left = avail - room_left; left > 0;) {
        size_t n = left < sizeof zeros ? (size_t)left : sizeof zeros;
        ssize_t w = write(fd, zeros, n);
        cr_assert_gt(w, 0, "writing the ballast: %s", strerror(errno));
        left -= (uint64_t)w;
    }
    close(fd);
}

Test(ingest_disk_tmpfs, a_full_filesystem_waits_for_room_and_resumes_by_itself, .timeout = 600)
{
    /* A mount namespace of this test's own: the tmpfs goes away with it,
     * whatever happens to the test. */
    if (unshare(CLONE_NEWNS) != 0 || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0)
        cr_skip("a small filesystem needs a private mount namespace, refused here (%s): this "
                "case did not run", strerror(errno));
    struct taxi_db db;
    taxi_db_create(&db, NULL, INITIAL_TRIPS);
    char opts[64];
    snprintf(opts, sizeof opts, "size=%u,mode=0755", TMPFS_BYTES);
    if (mount("straum-test", db.store, "tmpfs", MS_NOSUID | MS_NODEV, opts) != 0) {
        int e = errno;
        taxi_db_destroy(&db);
        cr_skip("mounting a tmpfs is refused here (%s): this case did not run", strerror(e));
    }
    char out[8192];
    cr_assert_eq(ingest_once(&db, NULL, out, sizeof out), 0, "%s", out);
    char ballast[128], log[128];
    snprintf(ballast, sizeof ballast, "%s/ballast", db.store);
    snprintf(log, sizeof log, "%s.log", db.store); /* beside the tmpfs, not in it */
    fill_up(db.store, ballast, ROOM_LEFT);
    int port = hc_free_port();
    pid_t serve = serve_spawn(db.store, port);

    int metrics_port = hc_free_port();
    char metrics_addr[32];
    snprintf(metrics_addr, sizeof metrics_addr, "127.0.0.1:%d", metrics_port);
    const char *const with_metrics[] = {"--metrics-listen", metrics_addr, NULL};
    db.ingest = ingest_spawn(&db, log, false, with_metrics);
    struct batches b = {0};
    bool full = false;
    while (!full) {
        add_batch(&db, &b, BATCH);
        for (int i = 0; i < 10 && !(full = file_has(log, "its filesystem has")); i++)
            usleep(100000);
        cr_assert_eq(wait_exit(db.ingest, 0), -1, "ingest keeps running on a full disk");
    }
    add_batch(&db, &b, HUGE_BATCH);
    char line[4096];
    log_line(log, "its filesystem has", line, sizeof line);
    cr_assert(strstr(line, db.store) && strstr(line, "No space left on device") &&
                  strstr(line, "MiB free") && strstr(line, "Make room for data.mdb") &&
                  strstr(line, "retries by itself"),
              "the message names the store, the space and what to do: %s", line);
    int held = check_store_at_position(&db, &b, port, "on a full filesystem");
    cr_assert_lt(held, b.n, "the huge batch does not fit");
    /* Two more retries (their "next try in" lines), waited for with a bound:
     * still nothing half-written. */
    int tries = taxi_log_count(log, "next try in");
    for (int waited = 0; taxi_log_count(log, "next try in") < tries + 2 && waited < 60000; waited += 100)
        usleep(100000);
    cr_assert_geq(taxi_log_count(log, "next try in"), tries + 2, "no two retries in 60 s");
    cr_assert_eq(wait_exit(db.ingest, 0), -1, "ingest waits for room");
    /* A retry may fit a smaller group of the batches than the commit that
     * failed; never fewer than before, never the huge one, never part of one. */
    int again = check_store_at_position(&db, &b, port, "after retries on a full filesystem");
    cr_assert(again >= held && again < b.n, "after retries: %d batches of %d, before %d", again,
              b.n, held);
    cr_assert(file_has(log, "next try in"), "ingest says when it tries again");
    /* An operator sees it on /metrics too. */
    struct hc_response m;
    hc_once(metrics_port, "GET", "/metrics", NULL, NULL, &m);
    cr_assert_eq(m.status, 200);
    const char *failures = strstr(m.body, "\nstraum_store_commit_failures_total ");
    cr_assert(failures && atoll(failures + 36) >= 1, "failed commits counted:\n%s", m.body);
    hc_free(&m);

    cr_assert_eq(unlink(ballast), 0);
    taxi_check(&db, "after room was made on the filesystem");
    cr_assert(file_has(log, "has room again"), "ingest says it resumed");
    PGresult *r = PQexec(db.pg, "SELECT count(*) FROM yellow_trips");
    int64_t want = atoll(PQgetvalue(r, 0, 0));
    PQclear(r);
    cr_assert_eq(serve_trips(port), want);
    taxi_ingest_stop(&db);
    cr_assert_eq(dump_verify(db.store, out, sizeof out), 0, "%s", out);
    kill(serve, SIGTERM);
    waitpid(serve, NULL, 0);
    umount2(db.store, MNT_DETACH);
    unlink(log);
    taxi_db_destroy(&db);
}
