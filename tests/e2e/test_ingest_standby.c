/* test_ingest_standby.c -- `straum-ingest run --wal physical` following a
 * hot standby (cascading replication, SPEC.md §5.4 and §8.3): the
 * physical slot, the load's snapshot and the catalog all on the standby,
 * which replays a primary of the test's own; every change is made on the
 * primary.
 *
 * A standby is not a primary with a different address: it sends WAL it
 * has received before replaying it (so the catalog may stand behind the
 * WAL ingest reads, and ingest must wait for replay before it asks), it
 * has no insert position (its end is pg_last_wal_replay_lsn()), its
 * snapshots come from the transactions replay reports running, and a
 * slot made there reserves WAL from the standby's last restart point,
 * not the primary's last checkpoint. Each case loads from the standby,
 * changes the primary, waits until the standby replayed the changes, and
 * compares the store with the standby's GROUP BY over the raw tables
 * (oracle.h), which then equals the primary's. The primary keeps no slot
 * and serves one walsender, the standby's.
 *
 * Every wait is on an event (an LSN replayed or stored, a process's exit),
 * bounded; a failure shows the oracle's first difference and the end of
 * ingest's log. */
#include "tests/e2e/oracle.h"
#include "tests/e2e/taxi_db.h"
#include "tests/kit/pgtmp.h"

#include <criterion/criterion.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

/* ---- SQL ------------------------------------------------------------------------------ */

static void sqlf(PGconn *pg, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void sqlf(PGconn *pg, const char *fmt, ...)
{
    char sql[8192];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(sql, sizeof sql, fmt, ap);
    va_end(ap);
    cr_assert_lt(n, (int)sizeof sql, "statement too long for the test's buffer");
    oracle_exec(pg, sql);
}

/* The first value of a query's first row as text, into out ("" for NULL). */
static void value_of(PGconn *pg, char *out, size_t cap, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void value_of(PGconn *pg, char *out, size_t cap, const char *fmt, ...)
{
    char sql[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(sql, sizeof sql, fmt, ap);
    va_end(ap);
    PGresult *r = PQexec(pg, sql);
    cr_assert_eq(PQresultStatus(r), PGRES_TUPLES_OK, "%s: %s", sql, PQerrorMessage(pg));
    cr_assert_geq(PQntuples(r), 1, "%s: no row", sql);
    snprintf(out, cap, "%s", PQgetisnull(r, 0, 0) ? "" : PQgetvalue(r, 0, 0));
    PQclear(r);
}

static int count_of(PGconn *pg, const char *sql)
{
    char v[32];
    value_of(pg, v, sizeof v, "%s", sql);
    return atoi(v);
}

static uint64_t lsn_of(PGconn *pg, const char *sql)
{
    char v[64];
    value_of(pg, v, sizeof v, "%s", sql);
    unsigned hi = 0, lo = 0;
    if (sscanf(v, "%X/%X", &hi, &lo) != 2)
        return 0;
    return (uint64_t)hi << 32 | lo;
}

static PGconn *connect_to(const char *conninfo)
{
    PGconn *c = PQconnectdb(conninfo);
    cr_assert_eq(PQstatus(c), CONNECTION_OK, "%s", PQerrorMessage(c));
    return c;
}

/* A trip whose every column is a function of its id g (NULLs in some).
 * For sqlf. */
#define TRIP_OF_G                                                                                  \
    "g, 1 + g %% 2, timestamptz '2024-02-01 00:00:00+00' + (g %% 4000) * interval '37 minutes', "  \
    "timestamptz '2024-02-01 00:00:00+00' + (g %% 4000) * interval '37 minutes' + interval "       \
    "'19 minutes', CASE WHEN g %% 11 = 0 THEN NULL ELSE 1 + g %% 4 END, (g %% 900) / 37.0, "       \
    "1 + (g * 7) %% 270, 1 + (g * 13) %% 265, g %% 6, CASE WHEN g %% 29 = 0 THEN NULL ELSE "       \
    "round(((g %% 700) - 40) / 9.0, 2) END, (g %% 300) / 100.0, (g %% 500) / 10.0"

static void insert_trips(PGconn *pg, long long first, int n)
{
    sqlf(pg, "INSERT INTO yellow_trips SELECT " TRIP_OF_G " FROM generate_series(%lld::bigint, "
             "%lld::bigint) g", first, first + n - 1);
}

/* ---- A primary, its hot standby and a taxi database on both ------------------------------- */

struct pair {
    struct pgtmp primary, standby;
    struct taxi_db db;        /* db.pg and db.conninfo: the primary's */
    char standby_conninfo[512];
    PGconn *standby_pg;       /* the standby: its postgres database, then the taxi one */
    bool standby_on_db;
    uint64_t replayed;        /* the standby's replay position at the last wait */
};

/* wal_level replica, the level of most production primaries, and the one
 * the physical WAL needs at least; the standby gets the same settings (a
 * hot standby refuses smaller limits than its primary's), and
 * standby_extra when not NULL. On the standby hot_standby_feedback keeps
 * the primary from vacuuming away rows the load's snapshot still reads,
 * which replay would otherwise cancel it for after
 * max_standby_streaming_delay. */
static void pair_start(struct pair *p, int trips, const char *standby_extra)
{
    static const char *const primary_settings[] = {"wal_level=replica", NULL};
    const char *const standby_settings[] = {"wal_level=replica", "hot_standby=on",
                                            "hot_standby_feedback=on", standby_extra, NULL};
    struct pgtmp_options po = {.settings = primary_settings};
    struct pgtmp_options so = {.settings = standby_settings};
    char err[2048];
    memset(p, 0, sizeof *p);
    cr_assert_eq(pgtmp_start(&p->primary, &po, err, sizeof err), 0, "%s", err);
    cr_assert_eq(pgtmp_start_standby(&p->primary, &p->standby, &so, err, sizeof err), 0, "%s",
                 err);
    PGconn *s = connect_to(pgtmp_conninfo(&p->standby));
    char v[16];
    value_of(s, v, sizeof v, "SELECT pg_is_in_recovery()");
    cr_assert_str_eq(v, "t", "the standby is in recovery");
    PQfinish(s);

    /* The taxi tables on the primary, without the publication and replica
     * identity logical mode needs: the physical mode needs neither. */
    taxi_db_create(&p->db, pgtmp_conninfo(&p->primary), trips);
    sqlf(p->db.pg, "DROP PUBLICATION straum; ALTER TABLE yellow_trips REPLICA IDENTITY DEFAULT; "
                   "ALTER TABLE taxi_zones REPLICA IDENTITY DEFAULT");
    /* Room on every page, so that updates of measures are HOT; the bucket
     * column and a key indexed, so that updates of them are not. */
    sqlf(p->db.pg, "ALTER TABLE yellow_trips SET (fillfactor = 70)");
    sqlf(p->db.pg, "VACUUM FULL yellow_trips");
    sqlf(p->db.pg, "CREATE INDEX trips_pickup ON yellow_trips (pickup_at);"
                   "CREATE INDEX trips_pu ON yellow_trips (pu_location_id)");
    const char *dbname = strstr(p->db.conninfo, "dbname=");
    cr_assert_not_null(dbname);
    snprintf(p->standby_conninfo, sizeof p->standby_conninfo, "%s %s",
             pgtmp_conninfo(&p->standby), dbname);
}

/* Waits until the standby replayed every transaction committed on the
 * primary so far; returns the standby's replay position then. The
 * database made on the primary exists on the standby only once its WAL is
 * replayed, so the standby is connected to here the first time. */
static uint64_t wait_replayed(struct pair *p, const char *when)
{
    uint64_t target = oracle_committed_lsn(p->db.pg), replayed = 0;
    if (!p->standby_pg)
        p->standby_pg = connect_to(pgtmp_conninfo(&p->standby));
    for (int waited = 0;; waited += 10) {
        replayed = lsn_of(p->standby_pg, "SELECT pg_last_wal_replay_lsn()");
        if (replayed >= target)
            break;
        cr_assert_lt(waited, 60000,
                     "%s: the standby did not replay %X/%08X within 60 s (it is at %X/%08X)",
                     when, (unsigned)(target >> 32), (unsigned)target,
                     (unsigned)(replayed >> 32), (unsigned)replayed);
        usleep(10000);
    }
    if (!p->standby_on_db) {
        PQfinish(p->standby_pg);
        p->standby_pg = connect_to(p->standby_conninfo);
        p->standby_on_db = true;
    }
    p->replayed = replayed;
    return replayed;
}

/* The slot is the standby's: the primary has none at all, and one
 * walsender (the standby's). */
static void assert_slot_on_standby(struct pair *p, const char *slot)
{
    char v[32];
    value_of(p->standby_pg, v, sizeof v,
             "SELECT slot_type FROM pg_replication_slots WHERE slot_name = '%s'", slot);
    cr_assert_str_eq(v, "physical", "the standby holds the physical slot %s", slot);
    cr_assert_eq(count_of(p->db.pg, "SELECT count(*) FROM pg_replication_slots"), 0,
                 "the primary holds no slot");
    cr_assert_eq(count_of(p->db.pg, "SELECT count(*) FROM pg_stat_replication"), 1,
                 "the primary streams to the standby only");
}

static void pair_end(struct pair *p)
{
    PQfinish(p->standby_pg);
    taxi_db_destroy(&p->db);
    /* The standby first: stopped after its primary it would retry the
     * connection until its own stop. */
    pgtmp_stop(&p->standby);
    pgtmp_stop(&p->primary);
}

/* ---- The follower -------------------------------------------------------------------------- */

/* straum-ingest run --wal physical on the standby's database; every run's
 * output goes to one log file, appended. */
struct follower {
    const char *conninfo, *store, *slot;
    char views[4096];
    char log[64];
    off_t run_from; /* where the current (or last) run's lines begin */
    pid_t pid;      /* 0 when not running */
};

static void follower_init(struct follower *f, struct pair *p)
{
    memset(f, 0, sizeof *f);
    f->conninfo = p->standby_conninfo;
    f->store = p->db.store;
    f->slot = p->db.slot;
    snprintf(f->views, sizeof f->views, "%s/bench/taxi_views.sql", STRAUM_SOURCE_DIR);
    snprintf(f->log, sizeof f->log, "/tmp/straum-standby-log-XXXXXX");
    int fd = mkstemp(f->log);
    cr_assert_geq(fd, 0);
    close(fd);
}

static void log_text(const struct follower *f, off_t from, char *out, size_t cap)
{
    out[0] = '\0';
    int fd = open(f->log, O_RDONLY);
    if (fd < 0)
        return;
    off_t size = lseek(fd, 0, SEEK_END);
    if (size - from > (off_t)cap - 1)
        from = size - ((off_t)cap - 1);
    ssize_t n = pread(fd, out, cap - 1, from);
    out[n > 0 ? n : 0] = '\0';
    close(fd);
}

static const char *log_tail(const struct follower *f)
{
    static char tail[6000];
    log_text(f, 0, tail, sizeof tail);
    return tail;
}

/* Starts ingest; once: with --exit-when-caught-up; extra: one more
 * argument, or NULL. */
static void follower_spawn(struct follower *f, bool once, const char *extra)
{
    cr_assert_eq(f->pid, 0, "ingest already running");
    const char *argv[] = {STRAUM_INGEST_BIN, "run", "--wal", "physical", "--source", f->conninfo,
                          "--views", f->views, "--store", f->store, "--slot", f->slot,
                          /* nice 0: ingest's default of 10 starves it on a busy test machine */
                          "--commit-interval", "5ms", "--nice", "0",
                          once ? "--exit-when-caught-up" : extra, once ? extra : NULL, NULL};
    struct stat st;
    f->run_from = stat(f->log, &st) == 0 ? st.st_size : 0;
    int fd = open(f->log, O_WRONLY | O_APPEND);
    cr_assert_geq(fd, 0);
    pid_t pid = fork();
    cr_assert_geq(pid, 0);
    if (pid == 0) {
        /* A failed assertion ends the test without cleanup: the follower
         * must not outlive it. */
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        dup2(fd, 1);
        dup2(fd, 2);
        execv(argv[0], (char *const *)argv);
        _exit(127);
    }
    close(fd);
    f->pid = pid;
}

static const char *status_text(int status)
{
    static char s[64];
    if (WIFEXITED(status))
        snprintf(s, sizeof s, "exit status %d", WEXITSTATUS(status));
    else if (WIFSIGNALED(status))
        snprintf(s, sizeof s, "killed by signal %d", WTERMSIG(status));
    else
        snprintf(s, sizeof s, "status %d", status);
    return s;
}

static int follower_wait_exit(struct follower *f, int timeout_ms, const char *when)
{
    int status = 0;
    for (int waited = 0; waitpid(f->pid, &status, WNOHANG) != f->pid; waited += 20) {
        cr_assert_lt(waited, timeout_ms, "%s: ingest did not exit within %d s\n--- its log:\n%s",
                     when, timeout_ms / 1000, log_tail(f));
        usleep(20000);
    }
    f->pid = 0;
    return status;
}

/* A run with --exit-when-caught-up (and extra, when not NULL): it ends
 * once its store holds what the standby had replayed when it started. Its
 * wait status; its log lines in out. */
static int follower_run(struct follower *f, const char *extra, const char *when, char *out,
                        size_t cap)
{
    follower_spawn(f, true, extra);
    int status = follower_wait_exit(f, 60000, when);
    log_text(f, f->run_from, out, cap);
    return status;
}

/* The same, asserting a clean exit. */
static void follower_once(struct follower *f, const char *extra, const char *when)
{
    char out[16384];
    int status = follower_run(f, extra, when, out, sizeof out);
    cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0,
              "%s: ingest --exit-when-caught-up failed (%s)\n--- its log:\n%s", when,
              status_text(status), log_tail(f));
}

/* SIGTERM: a clean stop, exit status 0. */
static void follower_stop(struct follower *f)
{
    kill(f->pid, SIGTERM);
    int status = follower_wait_exit(f, 30000, "stopping on SIGTERM");
    cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0,
              "ingest did not stop cleanly on SIGTERM (%s)\n--- its log:\n%s",
              status_text(status), log_tail(f));
}

static void follower_end(struct follower *f)
{
    if (f->pid) {
        kill(f->pid, SIGKILL);
        waitpid(f->pid, NULL, 0);
        f->pid = 0;
    }
    unlink(f->log);
}

/* Waits until the running follower's store reaches lsn. */
static void wait_position(struct follower *f, uint64_t lsn, const char *when)
{
    for (int waited = 0; oracle_store_position(f->store) < lsn; waited += 20) {
        int status;
        if (waitpid(f->pid, &status, WNOHANG) == f->pid) {
            f->pid = 0;
            cr_assert_fail("%s: ingest exited (%s)\n--- its log:\n%s", when,
                           status_text(status), log_tail(f));
        }
        uint64_t at = oracle_store_position(f->store);
        cr_assert_lt(waited, 60000,
                     "%s: the store did not reach %X/%08X within 60 s (it is at %X/%08X)\n"
                     "--- ingest's log:\n%s",
                     when, (unsigned)(lsn >> 32), (unsigned)lsn, (unsigned)(at >> 32),
                     (unsigned)at, log_tail(f));
        usleep(20000);
    }
}

/* The store against the standby's answers. With ingest running: once the
 * standby replayed everything the primary committed and the store reached
 * the standby's replay position. With ingest stopped: its store must hold
 * the replay position of the last wait, which its last run started after
 * (a run that exits when caught up reads up to the standby's replay
 * position at its start). */
static void check(struct follower *f, struct pair *p, const char *when)
{
    uint64_t replayed = p->replayed;
    if (f->pid) {
        replayed = wait_replayed(p, when);
        wait_position(f, replayed, when);
    }
    uint64_t at = oracle_store_position(f->store);
    cr_assert_geq(at, replayed,
                  "%s: the store's position %X/%08X is behind the standby's replay %X/%08X\n"
                  "--- ingest's log:\n%s",
                  when, (unsigned)(at >> 32), (unsigned)at, (unsigned)(replayed >> 32),
                  (unsigned)replayed, log_tail(f));
    char diff[4096];
    int rc = oracle_compare(p->standby_pg, f->store, diff, sizeof diff);
    cr_assert_eq(rc, 0, "%s: the store differs from the standby: %s\n--- ingest's log:\n%s", when,
                 diff, log_tail(f));
}

/* ---- Changes on the primary ------------------------------------------------------------------ */

/* Inserts, HOT updates of measures, updates of keys, of the bucket and of
 * the primary key, deletes, a transaction with savepoints rolled back to,
 * an aborted one, dim changes (attributes, a row added and one deleted, a
 * key changed), and a CHECKPOINT between them, so that a later restart
 * reads from a redo pointer past the load's. */
static void rows_and_dims(PGconn *pg, long long base)
{
    insert_trips(pg, base, 400);
    for (int i = 0; i < 3; i++)
        sqlf(pg, "INSERT INTO yellow_trips SELECT " TRIP_OF_G " FROM (SELECT %lld::bigint AS g) x",
             base + 1000 + i);
    sqlf(pg, "UPDATE yellow_trips SET fare_amount = fare_amount + 1.5, tip_amount = tip_amount * 2 "
             "WHERE id %% 10 = 0");
    sqlf(pg, "UPDATE yellow_trips SET pu_location_id = 1 + (id * 11) %% 265, "
             "payment_type = (payment_type + 1) %% 6 WHERE id %% 13 = 0");
    sqlf(pg, "CHECKPOINT");
    sqlf(pg, "UPDATE yellow_trips SET pickup_at = pickup_at + interval '3 hours 7 minutes' "
             "WHERE id %% 17 = 0");
    sqlf(pg, "UPDATE yellow_trips SET id = id + 20000000 WHERE id %% 19 = 0 AND id < 20000000");
    sqlf(pg, "DELETE FROM yellow_trips WHERE id %% 23 = 0");
    sqlf(pg, "BEGIN;"
             "INSERT INTO yellow_trips SELECT " TRIP_OF_G " FROM generate_series(%lld, %lld) g;"
             "SAVEPOINT a;"
             "INSERT INTO yellow_trips SELECT " TRIP_OF_G " FROM generate_series(%lld, %lld) g;"
             "UPDATE yellow_trips SET fare_amount = 99.99 WHERE id BETWEEN %lld AND %lld;"
             "DELETE FROM yellow_trips WHERE id BETWEEN 200 AND 260;"
             "ROLLBACK TO a;"
             "SAVEPOINT b;"
             "UPDATE yellow_trips SET tip_amount = 7.77 WHERE id BETWEEN %lld AND %lld;"
             "RELEASE b;"
             "COMMIT",
         base + 2000, base + 2019, base + 2020, base + 2039, base + 2000, base + 2009,
         base + 2010, base + 2015);
    sqlf(pg, "BEGIN; UPDATE yellow_trips SET fare_amount = 0; DELETE FROM yellow_trips "
             "WHERE id %% 2 = 0; UPDATE taxi_zones SET borough = 'Nowhere'; ROLLBACK");
    sqlf(pg, "UPDATE taxi_zones SET borough = 'Queens' WHERE location_id IN (4, 13, 48)");
    sqlf(pg, "BEGIN; INSERT INTO taxi_zones VALUES (%lld, 'Nowhere', 'New zone', 'Boro Zone');"
             "DELETE FROM taxi_zones WHERE location_id = 100;"
             "UPDATE taxi_zones SET location_id = location_id + 1000 WHERE location_id = 101;"
             "COMMIT",
         300 + base / 100000);
}

/* TRUNCATE of the fact table in a transaction of its own (a new, empty
 * file the follower takes from the standby's catalog once replayed), then
 * rows into the new file, in transactions of their own, and a CHECKPOINT. */
static void truncate_and_refill(PGconn *pg, long long base)
{
    sqlf(pg, "CHECKPOINT");
    sqlf(pg, "TRUNCATE yellow_trips");
    insert_trips(pg, base, 500);
    insert_trips(pg, base + 1000, 300);
    sqlf(pg, "UPDATE yellow_trips SET fare_amount = fare_amount - 2 WHERE id %% 3 = 0");
    sqlf(pg, "DELETE FROM yellow_trips WHERE id %% 7 = 0");
    sqlf(pg, "CHECKPOINT");
}

/* ---- 1. Runs that exit when caught up, resumed after changes -------------------------------- */

/* Loaded from the standby, then resumed from the standby's slot after the
 * primary changed. A TRUNCATE made while ingest is stopped is refused at
 * the next start, as on a primary (SPEC.md §5.4 invariant 5: the changes
 * to the old file between the store's position and the TRUNCATE cannot
 * be told apart once the catalog names the new file); --rebuild drops the
 * standby's slot, makes it again and loads again, and the store resumes
 * from there. */
Test(ingest_standby, resumes_after_changes_on_the_primary, .timeout = 180)
{
    struct pair p;
    pair_start(&p, 4000, NULL);
    wait_replayed(&p, "before the load");
    struct follower f;
    follower_init(&f, &p);

    follower_once(&f, NULL, "the load from the standby");
    cr_assert_eq(taxi_log_count(f.log, "created physical slot"), 1, "%s", log_tail(&f));
    assert_slot_on_standby(&p, f.slot);
    check(&f, &p, "after the load from the standby");

    rows_and_dims(p.db.pg, 100000);
    wait_replayed(&p, "after rows and dims changed");
    follower_once(&f, NULL, "resuming after rows and dims changed");
    check(&f, &p, "after rows and dims changed on the primary");
    rows_and_dims(p.db.pg, 200000);
    wait_replayed(&p, "after rows and dims changed again");
    follower_once(&f, NULL, "resuming after rows and dims changed again");
    check(&f, &p, "after rows and dims changed on the primary again");
    /* Every run after the first resumed from the slot: one load only. */
    cr_assert_eq(taxi_log_count(f.log, "snapshot loaded"), 1, "the later runs resume:\n%s",
                 log_tail(&f));

    uint64_t before = oracle_store_position(f.store);
    truncate_and_refill(p.db.pg, 400000);
    wait_replayed(&p, "after TRUNCATE and inserts");
    char out[16384];
    int status = follower_run(&f, NULL, "starting after a TRUNCATE", out, sizeof out);
    cr_assert(WIFEXITED(status) && WEXITSTATUS(status) != 0,
              "a TRUNCATE made while ingest was stopped must stop it (%s)\n%s",
              status_text(status), out);
    cr_assert(strstr(out, "yellow_trips") && strstr(out, "--rebuild"),
              "the message names the table and --rebuild:\n%s", out);
    cr_assert_eq(oracle_store_position(f.store), before, "the refused store is unchanged");
    follower_once(&f, "--rebuild", "--rebuild after a TRUNCATE");
    cr_assert_eq(taxi_log_count(f.log, "created physical slot"), 2, "%s", log_tail(&f));
    check(&f, &p, "after --rebuild");

    insert_trips(p.db.pg, 500000, 200);
    sqlf(p.db.pg, "UPDATE yellow_trips SET tip_amount = 1 WHERE id %% 5 = 0");
    sqlf(p.db.pg, "CHECKPOINT");
    sqlf(p.db.pg, "DELETE FROM yellow_trips WHERE id %% 11 = 0");
    wait_replayed(&p, "after changes following --rebuild");
    follower_once(&f, NULL, "resuming after --rebuild");
    check(&f, &p, "after changes following --rebuild");
    cr_assert_eq(taxi_log_count(f.log, "snapshot loaded"), 2, "%s", log_tail(&f));
    assert_slot_on_standby(&p, f.slot);
    follower_end(&f);
    pair_end(&p);
}

/* ---- 2. Following continuously while the primary changes ------------------------------------ */

Test(ingest_standby, follows_while_the_primary_changes, .timeout = 180)
{
    struct pair p;
    pair_start(&p, 4000, NULL);
    wait_replayed(&p, "before the load");
    struct follower f;
    follower_init(&f, &p);
    follower_spawn(&f, false, NULL);
    check(&f, &p, "after the load from the standby");
    assert_slot_on_standby(&p, f.slot);
    /* Ingest's walsender is the standby's, not the primary's. */
    cr_assert_eq(count_of(p.standby_pg, "SELECT count(*) FROM pg_stat_replication"), 1,
                 "the standby streams to ingest");

    /* Changes one after another, ingest reading them as the standby
     * replays them; no wait between them but the last. */
    for (int round = 0; round < 12; round++) {
        long long base = 1000000 + round * 10000LL;
        insert_trips(p.db.pg, base, 100);
        sqlf(p.db.pg, "UPDATE yellow_trips SET fare_amount = fare_amount + 0.25 "
                      "WHERE id %% 31 = %d", round);
        sqlf(p.db.pg, "UPDATE yellow_trips SET do_location_id = 1 + (id * %d) %% 263 "
                      "WHERE id %% 37 = %d", round + 3, round);
        sqlf(p.db.pg, "DELETE FROM yellow_trips WHERE id BETWEEN %lld AND %lld", base + 10,
             base + 19);
        sqlf(p.db.pg, "BEGIN; INSERT INTO yellow_trips SELECT " TRIP_OF_G
                      " FROM generate_series(%lld, %lld) g; SAVEPOINT s; "
                      "DELETE FROM yellow_trips WHERE id %% 5 = 0; ROLLBACK TO s; "
                      "UPDATE taxi_zones SET zone = zone || '.' WHERE location_id = %d; COMMIT",
             base + 500, base + 509, 1 + round * 7);
        if (round % 4 == 3)
            sqlf(p.db.pg, "CHECKPOINT");
        if (round == 5)
            check(&f, &p, "in the middle of the changes");
        if (round == 8)
            truncate_and_refill(p.db.pg, 2000000);
    }
    rows_and_dims(p.db.pg, 3000000);

    /* Stopped once its store holds the standby's replay position. */
    uint64_t replayed = wait_replayed(&p, "after the changes");
    wait_position(&f, replayed, "after the changes");
    follower_stop(&f);
    check(&f, &p, "after the changes, stopped");
    cr_assert_eq(taxi_log_count(f.log, "snapshot loaded"), 1, "%s", log_tail(&f));
    follower_end(&f);
    pair_end(&p);
}

/* ---- 3. The catalog is read once the standby replayed ------------------------------------- */

/* recovery_min_apply_delay holds every commit back on the standby while
 * its WAL is received at once, and a standby's walsender sends what it
 * received: ingest reads each commit 300 ms before the standby's catalog
 * shows it. The questions it asks the catalog at a commit must wait for
 * the replay: at a TRUNCATE the table's new file (read too early, the
 * old file is named and the TRUNCATE looks like a rewrite, which stops
 * ingest); at an ALTER TABLE the table's columns (read too early, a
 * column added goes unnoticed, and ingest follows on with the old
 * layout, and the new rows' attribute count refuses them). A column
 * added is read into the layout and followed on. */
Test(ingest_standby, catalog_read_after_replay, .timeout = 180)
{
    struct pair p;
    pair_start(&p, 3000, "recovery_min_apply_delay=300ms");
    wait_replayed(&p, "before the load");
    struct follower f;
    follower_init(&f, &p);
    follower_spawn(&f, false, NULL);
    check(&f, &p, "after the load from the standby");

    truncate_and_refill(p.db.pg, 600000);
    check(&f, &p, "after TRUNCATE and inserts, replayed late");

    sqlf(p.db.pg, "ALTER TABLE yellow_trips ADD COLUMN note text");
    sqlf(p.db.pg, "INSERT INTO yellow_trips SELECT " TRIP_OF_G ", 'noted' "
                  "FROM generate_series(700000, 700099) g");
    wait_replayed(&p, "after a column was added");
    check(&f, &p, "after a column was added and rows inserted with it");
    /* Read after the replay: the new layout, not the old one (whose
     * attribute count would refuse the new rows). */
    cr_assert_eq(taxi_log_count(f.log, "has 13 attributes now"), 1, "%s", log_tail(&f));
    cr_assert_eq(taxi_log_count(f.log, "snapshot loaded"), 1, "%s", log_tail(&f));
    follower_end(&f);
    pair_end(&p);
}
