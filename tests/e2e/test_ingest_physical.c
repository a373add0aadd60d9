/* test_ingest_physical.c -- `straum-ingest run --wal physical` against a
 * real PostgreSQL: a physical replication slot, a load made to fit it, then
 * the followed tables' heap WAL decoded into the store (SPEC.md §5.4).
 *
 * The oracle is logical mode's (oracle.h): after each step, once the
 * store's position has reached everything committed so far, every cell,
 * value count and dim projection equals PostgreSQL's GROUP BY over the raw
 * tables. Most servers run at wal_level = replica, whose WAL says less than
 * logical's (no top-level xid on a subtransaction's first record, updates
 * that borrow the old row's prefix and suffix), so every case runs on a
 * cluster of its own at that level; the core case runs on the shared
 * cluster too, at logical, whose WAL is a superset. The taxi tables lose
 * their publication and replica identity first: the mode needs neither,
 * and nothing may lean on them.
 *
 * Every wait is on an event (the store's position, a log line, the slot, a
 * process's exit), bounded; a failure shows the oracle's first difference
 * and the end of ingest's log. */
#include "ingest/pgwal.h"
#include "tests/e2e/follower.h"
#include "tests/e2e/oracle.h"
#include "tests/e2e/taxi_db.h"
#include "tests/e2e/walfiles.h"
#include "tests/kit/pgtmp.h"
#include "tests/kit/sanitizer.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* ---- SQL ------------------------------------------------------------------------------ */

/* Trips first..first+n-1 by COPY FROM STDIN (heap multi-inserts). */
static void copy_trips(PGconn *pg, long long first, int n)
{
    PGresult *r = PQexec(pg, "COPY yellow_trips FROM STDIN");
    cr_assert_eq(PQresultStatus(r), PGRES_COPY_IN, "%s", PQerrorMessage(pg));
    PQclear(r);
    for (long long id = first; id < first + n; id++) {
        char line[512], fare[32], passengers[8];
        int day = 1 + (int)(id % 28), hour = (int)(id % 24), minute = (int)((id * 7) % 60);
        if (id % 13 == 0)
            snprintf(fare, sizeof fare, "\\N");
        else
            snprintf(fare, sizeof fare, "%s%d.%02d", id % 80 < 5 ? "-" : "",
                     (int)(id % 80 < 5 ? 5 - id % 80 : id % 80 - 5), (int)(id % 100));
        if (id % 9 == 0)
            snprintf(passengers, sizeof passengers, "\\N");
        else
            snprintf(passengers, sizeof passengers, "%d", 1 + (int)(id % 3));
        int len = snprintf(line, sizeof line,
                           "%lld\t%d\t2024-03-%02d %02d:%02d:00+00\t2024-03-%02d %02d:%02d:30+00\t%s"
                           "\t%d.%02d\t%d\t%d\t%d\t%s\t%d.%02d\t%d.00\n",
                           id, 1 + (int)(id % 2), day, hour, minute, day, hour, minute, passengers,
                           (int)(id % 17), (int)(id % 100), 1 + (int)((id * 5) % 266),
                           1 + (int)((id * 3) % 263), (int)(id % 5), fare, (int)(id % 4),
                           (int)(id % 100), (int)(id % 90));
        cr_assert_eq(PQputCopyData(pg, line, len), 1, "%s", PQerrorMessage(pg));
    }
    cr_assert_eq(PQputCopyEnd(pg, NULL), 1, "%s", PQerrorMessage(pg));
    r = PQgetResult(pg);
    cr_assert_eq(PQresultStatus(r), PGRES_COMMAND_OK, "%s", PQerrorMessage(pg));
    PQclear(r);
    while ((r = PQgetResult(pg)))
        PQclear(r);
}

/* ---- The follower ------------------------------------------------------------------------ */

/* A run with --exit-when-caught-up (extra appended): its exit status (128 +
 * the signal when killed), its log lines in out. */
static int follower_once(struct follower *f, const char *const *extra, char *out, size_t cap)
{
    int status = follower_run(f, extra, 120000, "a run with --exit-when-caught-up", out, cap);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

/* How long a catch-up may take: the store's apply under AddressSanitizer
 * is several times slower (-O1, every access checked), and a restart
 * re-reads the WAL since a checkpoint. */
#define CATCH_UP_MS (UNDER_ASAN ? 240000 : 60000)

/* Waits until the store's position reaches lsn, while the follower runs. */
static void wait_position(struct follower *f, uint64_t lsn, const char *when)
{
    follower_wait_position(f, lsn, CATCH_UP_MS, when);
}

/* Waits until the follower's current run has logged text; false after
 * timeout_ms (or at once when it exited). */
static bool wait_log(struct follower *f, const char *text, int timeout_ms)
{
    static char buf[1 << 16];
    for (int waited = 0; waited < timeout_ms; waited += 20) {
        follower_log_text(f, f->run_from, buf, sizeof buf);
        if (strstr(buf, text))
            return true;
        int status;
        if (f->pid && waitpid(f->pid, &status, WNOHANG) == f->pid) {
            f->pid = 0;
            cr_assert_fail("ingest exited (%s) before logging \"%s\"\n--- its log:\n%s",
                           follower_status_text(status), text, follower_log_tail(f));
        }
        usleep(20000);
    }
    return false;
}

/* Waits until everything committed so far is in the store (when the
 * follower runs), then asserts the store equals PostgreSQL's answers. */
static void check(struct follower *f, PGconn *pg, const char *when)
{
    uint64_t target = oracle_committed_lsn(pg);
    if (f->pid)
        wait_position(f, target, when);
    char diff[4096];
    int rc = oracle_compare(pg, f->store, diff, sizeof diff);
    cr_assert_eq(rc, 0, "%s: the store differs from PostgreSQL: %s\n--- ingest's log:\n%s", when,
                 diff, follower_log_tail(f));
}

static void wait_slot(struct follower *f, PGconn *pg)
{
    for (int waited = 0;; waited += 20) {
        char n[16];
        oracle_value(pg, n, sizeof n,
                     "SELECT count(*) FROM pg_replication_slots WHERE slot_name = '%s'", f->slot);
        if (atoi(n) > 0)
            return;
        follower_assert_running(f, "waiting for the slot");
        cr_assert_lt(waited, 60000, "no slot %s after 60 s\n--- ingest's log:\n%s", f->slot,
                     follower_log_tail(f));
        usleep(20000);
    }
}

/* ---- Clusters and databases --------------------------------------------------------------- */

/* A cluster of the test's own at wal_level = replica (the level of most
 * production servers), removed at the test's end however it ends. */
static struct pgtmp replica;

static const char *replica_cluster(void)
{
    static const char *const settings[] = {"wal_level=replica", NULL};
    struct pgtmp_options o = {.settings = settings};
    char err[1024];
    cr_assert_eq(pgtmp_start(&replica, &o, err, sizeof err), 0, "%s", err);
    PGconn *c = oracle_connect(pgtmp_conninfo(&replica));
    char v[32];
    oracle_value(c, v, sizeof v, "SHOW wal_level");
    cr_assert_str_eq(v, "replica");
    PQfinish(c);
    return pgtmp_conninfo(&replica);
}

static void views_path(char *out, size_t cap)
{
    snprintf(out, cap, "%s/bench/taxi_views.sql", STRAUM_SOURCE_DIR);
}

/* The taxi database (trips generated trips, the real zones) on cluster
 * (NULL: the shared one), without the publication and replica identity
 * logical mode needs; f follows it with the benchmark's views. */
static void taxi_physical(struct taxi_db *db, const char *cluster, int trips, struct follower *f)
{
    taxi_db_create(db, cluster, trips);
    oracle_execf(db->pg,
                 "DROP PUBLICATION straum; ALTER TABLE yellow_trips REPLICA IDENTITY DEFAULT; "
                 "ALTER TABLE taxi_zones REPLICA IDENTITY DEFAULT");
    char views[4096];
    views_path(views, sizeof views);
    follower_init(f, "physical", db->conninfo, views, db->store, db->slot);
}

static void taxi_end(struct taxi_db *db, struct follower *f)
{
    follower_end(f);
    taxi_db_destroy(db);
}

static long long hot_updates(PGconn *pg)
{
    char v[32];
    oracle_exec(pg, "SELECT pg_stat_force_next_flush()");
    oracle_value(pg, v, sizeof v,
                 "SELECT n_tup_hot_upd FROM pg_stat_user_tables WHERE relname = 'yellow_trips'");
    return atoll(v);
}

/* ---- 1. The core: load, then every kind of change ------------------------------------------ */

static void core(const char *cluster)
{
    struct taxi_db db;
    struct follower f;
    taxi_physical(&db, cluster, 3000, &f);
    PGconn *pg = db.pg;
    /* Room on every page, so that measure updates are HOT; the bucket
     * column and a key indexed, so that updates of them are not. */
    oracle_execf(pg, "ALTER TABLE yellow_trips SET (fillfactor = 70)");
    oracle_execf(pg, "VACUUM FULL yellow_trips");
    oracle_execf(pg, "CREATE INDEX trips_pickup ON yellow_trips (pickup_at);"
                     "CREATE INDEX trips_pu ON yellow_trips (pu_location_id)");

    follower_start(&f);
    check(&f, pg, "after the load");
    char v[64];
    oracle_value(pg, v, sizeof v,
                 "SELECT slot_type FROM pg_replication_slots WHERE slot_name = '%s'", db.slot);
    cr_assert_str_eq(v, "physical", "the slot %s is %s", db.slot, v);

    /* Inserts: single rows, one INSERT ... SELECT, one COPY. */
    for (int i = 0; i < 3; i++)
        oracle_execf(pg,
                     "INSERT INTO yellow_trips SELECT " TAXI_TRIP_OF_G
                     " FROM (SELECT %d::bigint AS g) x",
                     100000 + i);
    check(&f, pg, "after single-row inserts");
    taxi_insert_trips(pg, 101000, 500);
    check(&f, pg, "after INSERT ... SELECT generate_series");
    copy_trips(pg, 102000, 300);
    check(&f, pg, "after COPY FROM STDIN");

    /* Updates: measures (HOT), then keys and the bucket (not HOT). */
    oracle_execf(pg, "CHECKPOINT");
    long long hot = hot_updates(pg);
    oracle_execf(
        pg, "UPDATE yellow_trips SET fare_amount = fare_amount + 1.5, tip_amount = tip_amount * 2 "
            "WHERE id %% 10 = 0");
    oracle_execf(
        pg, "UPDATE yellow_trips SET payment_type = (payment_type + 1) %% 6 WHERE id %% 14 = 0");
    long long hot_now = hot;
    for (int i = 0; i < 100 && (hot_now = hot_updates(pg)) <= hot; i++)
        usleep(50000);
    cr_assert_gt(hot_now, hot, "the measure updates were HOT updates");
    check(&f, pg, "after HOT updates of measures and of a key");
    oracle_execf(
        pg, "UPDATE yellow_trips SET pu_location_id = 1 + (id * 11) %% 265 WHERE id %% 13 = 0");
    check(&f, pg, "after non-HOT updates of an indexed key");
    oracle_execf(pg, "UPDATE yellow_trips SET pickup_at = pickup_at + interval '3 hours 7 minutes' "
                     "WHERE id %% 17 = 0");
    check(&f, pg, "after non-HOT updates of the bucket column");
    oracle_execf(pg, "UPDATE yellow_trips SET id = id + 20000000 WHERE id %% 19 = 0");
    check(&f, pg, "after updates of the primary key");
    oracle_execf(pg, "DELETE FROM yellow_trips WHERE id %% 23 = 0");
    check(&f, pg, "after deletes");
    /* VACUUM prunes the dead rows and frees their line pointers, which the
     * inserts and updates after it take again: the mirror must have freed
     * them as PostgreSQL did. */
    oracle_execf(pg, "VACUUM yellow_trips");
    oracle_execf(pg, "UPDATE yellow_trips SET fare_amount = fare_amount - 0.25 WHERE id %% 29 = 0");
    taxi_insert_trips(pg, 7000000, 200);
    check(&f, pg, "after VACUUM, then updates and inserts into the space it freed");
    oracle_execf(pg, "CHECKPOINT");

    /* Savepoints: what was rolled back to must not apply, released ones
     * must; d is released into c, which is rolled back, so d goes too. */
    oracle_execf(
        pg,
        "BEGIN;"
        "INSERT INTO yellow_trips SELECT " TAXI_TRIP_OF_G " FROM generate_series(300000, 300019) g;"
        "SAVEPOINT a;"
        "INSERT INTO yellow_trips SELECT " TAXI_TRIP_OF_G " FROM generate_series(300020, 300039) g;"
        "UPDATE yellow_trips SET fare_amount = 99.99 WHERE id BETWEEN 300000 AND 300009;"
        "SAVEPOINT b;"
        "DELETE FROM yellow_trips WHERE id BETWEEN 300010 AND 300014;"
        "UPDATE yellow_trips SET pu_location_id = 4 WHERE id BETWEEN 100 AND 140;"
        "RELEASE b;"
        "SAVEPOINT c;"
        "INSERT INTO yellow_trips SELECT " TAXI_TRIP_OF_G " FROM generate_series(300040, 300059) g;"
        "UPDATE yellow_trips SET fare_amount = -1 WHERE id BETWEEN 300020 AND 300029;"
        "DELETE FROM yellow_trips WHERE id BETWEEN 200 AND 260;"
        "SAVEPOINT d;"
        "UPDATE yellow_trips SET payment_type = 5 WHERE id BETWEEN 1 AND 400;"
        "RELEASE d;"
        "ROLLBACK TO c;"
        "RELEASE a;"
        "SAVEPOINT e;"
        "DELETE FROM yellow_trips;"
        "ROLLBACK TO e;"
        "UPDATE yellow_trips SET tip_amount = 7.77 WHERE id BETWEEN 300030 AND 300035;"
        "COMMIT");
    check(&f, pg, "after a transaction with savepoints rolled back to and released");
    /* 150 subtransactions, every third rolled back: past 64 of them the
     * server logs their owner in an XLOG_XACT_ASSIGNMENT record, and at
     * wal_level replica the spools they made before it are appended to
     * their owner's, out of LSN order. The top-level transaction and each
     * subtransaction rename one zone in turn, and the top-level one last:
     * the zone ends with that name only if the dim's changes are applied
     * in LSN order (applied spool by spool, the subtransactions' last
     * spools would come after it). */
    oracle_execf(pg, "DO $$ BEGIN FOR i IN 0..149 LOOP "
                     "UPDATE taxi_zones SET borough = 'Top ' || i WHERE location_id = 7;"
                     "BEGIN "
                     "INSERT INTO yellow_trips SELECT " TAXI_TRIP_OF_G
                     " FROM (SELECT 310000 + i AS g) x;"
                     "UPDATE yellow_trips SET fare_amount = fare_amount + 1 WHERE id = 500 + i;"
                     "UPDATE taxi_zones SET borough = 'Sub ' || i WHERE location_id = 7;"
                     "IF i %% 3 = 0 THEN RAISE EXCEPTION 'rolled back'; END IF;"
                     "EXCEPTION WHEN raise_exception THEN NULL; END; END LOOP;"
                     "UPDATE taxi_zones SET borough = 'Top, last' WHERE location_id = 7; END $$");
    check(&f, pg, "after 150 subtransactions, a third rolled back");

    /* Aborted transactions: by ROLLBACK, and by an error. */
    oracle_execf(pg, "BEGIN;"
                     "INSERT INTO yellow_trips SELECT " TAXI_TRIP_OF_G
                     " FROM generate_series(320000, 320099) g;"
                     "UPDATE yellow_trips SET fare_amount = 0;"
                     "DELETE FROM yellow_trips WHERE id %% 2 = 0;"
                     "UPDATE taxi_zones SET borough = 'Nowhere';"
                     "ROLLBACK");
    char failing[2048];
    snprintf(failing, sizeof failing,
             "BEGIN; INSERT INTO yellow_trips SELECT " TAXI_TRIP_OF_G
             " FROM generate_series(321000, "
             "321049) g; INSERT INTO yellow_trips SELECT * FROM yellow_trips LIMIT 1");
    PGresult *r = PQexec(pg, failing);
    cr_assert_eq(PQresultStatus(r), PGRES_FATAL_ERROR, "a duplicate key fails the transaction");
    PQclear(r);
    oracle_execf(pg, "ROLLBACK");
    check(&f, pg, "after aborted transactions");

    /* Two-phase commit: nothing applies at PREPARE; COMMIT PREPARED (from
     * another connection) applies it, ROLLBACK PREPARED drops it. */
    PGconn *other = oracle_connect(db.conninfo);
    oracle_execf(
        pg,
        "BEGIN;"
        "INSERT INTO yellow_trips SELECT " TAXI_TRIP_OF_G " FROM generate_series(330000, 330029) g;"
        "UPDATE yellow_trips SET fare_amount = fare_amount * 2 WHERE id BETWEEN 300 AND 330;"
        "DELETE FROM yellow_trips WHERE id BETWEEN 331 AND 350;"
        "UPDATE taxi_zones SET zone = 'Prepared zone' WHERE location_id = 43;"
        "PREPARE TRANSACTION 'straum_phys_%d_1'",
        (int)getpid());
    taxi_insert_trips(other, 330100, 5);
    check(&f, pg, "with a transaction prepared but not committed");
    oracle_execf(other, "COMMIT PREPARED 'straum_phys_%d_1'", (int)getpid());
    check(&f, pg, "after COMMIT PREPARED");
    oracle_execf(pg,
                 "BEGIN;"
                 "INSERT INTO yellow_trips SELECT " TAXI_TRIP_OF_G
                 " FROM generate_series(330200, 330229) g;"
                 "DELETE FROM yellow_trips WHERE id BETWEEN 400 AND 450;"
                 "SAVEPOINT s; UPDATE yellow_trips SET pickup_at = pickup_at - interval '1 day' "
                 "WHERE id BETWEEN 451 AND 470; RELEASE s;"
                 "PREPARE TRANSACTION 'straum_phys_%d_2'",
                 (int)getpid());
    oracle_execf(pg, "CHECKPOINT");
    oracle_execf(other, "ROLLBACK PREPARED 'straum_phys_%d_2'", (int)getpid());
    check(&f, pg, "after ROLLBACK PREPARED");
    PQfinish(other);

    /* The dim: attributes changed, a row added, one deleted, a key changed. */
    oracle_execf(pg, "UPDATE taxi_zones SET borough = 'Queens' WHERE location_id IN (4, 13, 48)");
    oracle_execf(pg, "UPDATE taxi_zones SET zone = zone || ' (renamed)' WHERE location_id = 161");
    oracle_execf(pg,
                 "BEGIN; INSERT INTO taxi_zones VALUES (266, 'Nowhere', 'New zone', 'Boro Zone');"
                 "DELETE FROM taxi_zones WHERE location_id = 100;"
                 "UPDATE taxi_zones SET location_id = 1101 WHERE location_id = 101; COMMIT");
    check(&f, pg, "after dim changes");

    /* TRUNCATE, in a transaction of its own, then rows into the new file. */
    oracle_execf(pg, "CHECKPOINT");
    oracle_execf(pg, "TRUNCATE yellow_trips");
    check(&f, pg, "after TRUNCATE of the fact table");
    taxi_insert_trips(pg, 400000, 400);
    copy_trips(pg, 401000, 100);
    oracle_execf(pg, "INSERT INTO yellow_trips SELECT " TAXI_TRIP_OF_G
                     " FROM (SELECT 402000::bigint AS g) x");
    check(&f, pg, "after inserts into the truncated table");
    oracle_execf(pg, "UPDATE yellow_trips SET fare_amount = fare_amount - 2 WHERE id %% 3 = 0;"
                     "DELETE FROM yellow_trips WHERE id %% 7 = 0");
    check(&f, pg, "after changes to the truncated table's new rows");
    oracle_execf(pg, "TRUNCATE taxi_zones");
    oracle_execf(
        pg, "INSERT INTO taxi_zones VALUES (161, 'Manhattan', 'Midtown Center', 'Yellow Zone')");
    check(&f, pg, "after TRUNCATE of the dim and a zone back");

    /* Stopped, changed meanwhile, started again: it resumes, no load. */
    follower_stop(&f);
    taxi_insert_trips(pg, 410000, 50);
    oracle_execf(pg, "UPDATE yellow_trips SET tip_amount = 1 WHERE id %% 5 = 0");
    oracle_execf(pg, "CHECKPOINT");
    oracle_execf(pg, "DELETE FROM yellow_trips WHERE id %% 11 = 0");
    follower_start(&f);
    check(&f, pg, "after a restart");
    cr_assert_eq(taxi_log_count(f.log, "snapshot loaded"), 1, "a restart resumes:\n%s",
                 follower_log_tail(&f));
    follower_stop(&f);
    taxi_end(&db, &f);
}

Test(ingest_physical, every_change_at_wal_level_replica, .timeout = 300)
{
    core(replica_cluster());
    pgtmp_stop(&replica);
}

/* The shared cluster runs at wal_level = logical: its WAL holds more (each
 * subtransaction's first record names its owner, updates carry whole new
 * rows), which the follower must read as well. */
Test(ingest_physical, every_change_at_wal_level_logical, .timeout = 300) { core(NULL); }

/* ---- The follower's heap: huge pages ---------------------------------------------------------- */

/* Whether the kernel gives transparent huge pages (not "never"). */
static bool huge_pages_offered(void)
{
    char modes[128] = "";
    FILE *f = fopen("/sys/kernel/mm/transparent_hugepage/enabled", "r");
    bool got = f && fgets(modes, sizeof modes, f);
    if (f)
        fclose(f);
    return got && !strstr(modes, "[never]");
}

/* Whether a running process has memory advised for huge pages: a mapping
 * whose VmFlags (/proc/PID/smaps) carry "hg" (MADV_HUGEPAGE), which glibc's
 * malloc asks for under glibc.malloc.hugetlb=1. (GLIBC_TUNABLES itself
 * cannot be read back: glibc rewrites the process's copy as it starts.) */
static bool advised_huge(pid_t pid)
{
    char path[64], line[512];
    snprintf(path, sizeof path, "/proc/%d/smaps", (int)pid);
    FILE *f = fopen(path, "r");
    cr_assert_not_null(f, "%s: %s", path, strerror(errno));
    bool hg = false;
    while (!hg && fgets(line, sizeof line, f))
        hg = !strncmp(line, "VmFlags:", 8) && strstr(line, " hg");
    fclose(f);
    return hg;
}

/* Whether the follower, started with GLIBC_TUNABLES `given` (NULL: none),
 * has memory advised for huge pages once it has loaded the store. */
static bool huge_after_start(struct follower *f, PGconn *pg, const char *given)
{
    if (given)
        setenv("GLIBC_TUNABLES", given, 1);
    follower_start(f);
    unsetenv("GLIBC_TUNABLES");
    wait_position(f, oracle_committed_lsn(pg), "waiting for the follower to run");
    bool hg = advised_huge(f->pid);
    follower_stop(f);
    return hg;
}

/* `run` executes itself again with glibc's malloc asking for transparent
 * huge pages (ingest/main.c says why), keeping the tunables an operator
 * gave, and leaving a choice of glibc.malloc.hugetlb to the operator. */
Test(ingest_physical, its_heap_asks_for_huge_pages, .timeout = 300)
{
    struct taxi_db db;
    struct follower f;
    taxi_physical(&db, NULL, 200, &f);
    /* AddressSanitizer's allocator is not glibc's: it takes no tunable */
    bool offered = huge_pages_offered() && !UNDER_ASAN;
    cr_assert_eq(huge_after_start(&f, db.pg, NULL), offered);
    cr_assert_eq(huge_after_start(&f, db.pg, "glibc.malloc.tcache_count=5"), offered,
                 "another tunable given, the huge pages are asked for too");
    cr_assert_not(huge_after_start(&f, db.pg, "glibc.malloc.hugetlb=0"),
                  "glibc.malloc.hugetlb=0 given, no huge pages are asked for");
    check(&f, db.pg, "after three starts");
    taxi_end(&db, &f);
}

/* ---- 2. Transactions open across the load ----------------------------------------------------- */

/* A physical slot exports no snapshot: the load's must line up with the
 * slot's WAL. A transaction that wrote before the slot existed and commits
 * after it must be in the store once, whether the load sees it or the
 * WAL brings it; so must one that commits between the slot and the load's
 * snapshot (the load sees it, and its WAL is read too), and one that began
 * after the slot and commits after the load (only the WAL brings it). */
Test(ingest_physical, transactions_open_across_the_load, .timeout = 300)
{
    struct taxi_db db;
    struct follower f;
    taxi_physical(&db, replica_cluster(), 2000, &f);
    PGconn *open = oracle_connect(db.conninfo), *prepared = oracle_connect(db.conninfo),
           *late = oracle_connect(db.conninfo), *after = oracle_connect(db.conninfo);
    oracle_execf(open,
                 "BEGIN;"
                 "INSERT INTO yellow_trips SELECT " TAXI_TRIP_OF_G
                 " FROM generate_series(700000, 700049) g;"
                 "UPDATE yellow_trips SET fare_amount = fare_amount * 3 WHERE id BETWEEN 10 AND 60;"
                 "DELETE FROM yellow_trips WHERE id BETWEEN 61 AND 90;"
                 "UPDATE taxi_zones SET borough = 'Bronx' WHERE location_id = 4");
    oracle_execf(prepared,
                 "BEGIN;"
                 "INSERT INTO yellow_trips SELECT " TAXI_TRIP_OF_G
                 " FROM generate_series(710000, 710019) g;"
                 "DELETE FROM yellow_trips WHERE id BETWEEN 91 AND 100;"
                 "PREPARE TRANSACTION 'straum_open_%d'",
                 (int)getpid());
    follower_start(&f);
    wait_slot(&f, db.pg);
    oracle_execf(late,
                 "BEGIN;"
                 "INSERT INTO yellow_trips SELECT " TAXI_TRIP_OF_G
                 " FROM generate_series(720000, 720019) g;"
                 "UPDATE yellow_trips SET tip_amount = 1 WHERE id BETWEEN 101 AND 120; COMMIT");
    /* Ingest waits for the transactions older than its slot and says so
     * (SPEC.md §5.4); while it waits, a transaction begins. Were ingest to
     * take its snapshot without waiting, that transaction would simply be
     * one more the WAL brings. */
    bool waits = wait_log(&f, "waiting for transactions that began before the slot", 10000);
    if (waits)
        oracle_execf(after,
                     "BEGIN;"
                     "INSERT INTO yellow_trips SELECT " TAXI_TRIP_OF_G
                     " FROM generate_series(730000, 730019) g;"
                     "UPDATE yellow_trips SET pu_location_id = 7 WHERE id BETWEEN 121 AND 140");
    oracle_execf(open, "COMMIT");
    oracle_execf(db.pg, "COMMIT PREPARED 'straum_open_%d'", (int)getpid());
    cr_assert(wait_log(&f, "snapshot loaded", 60000), "the load did not end\n--- its log:\n%s",
              follower_log_tail(&f));
    if (waits)
        oracle_execf(after, "COMMIT");
    cr_log_info("ingest %s for the transactions older than its slot",
                waits ? "waited" : "did not wait");
    check(&f, db.pg, "after transactions open across the load");
    taxi_insert_trips(db.pg, 740000, 10);
    check(&f, db.pg, "after a later insert");
    follower_stop(&f);
    PQfinish(open);
    PQfinish(prepared);
    PQfinish(late);
    PQfinish(after);
    taxi_end(&db, &f);
    pgtmp_stop(&replica);
}

/* ---- 3. kill -9 while changes stream ---------------------------------------------------------- */

/* Small transactions, one after another on a connection of their own,
 * until told to stop: inserts, updates of measures, keys and the bucket,
 * deletes, dim changes, rolled-back subtransactions and transactions.
 * Errors are kept for the test's thread to report (an assertion here
 * would not stop the test). */
struct stream {
    const char *conninfo;
    pthread_t thread;
    int stop;
    long txns;
    long long next_id;
    char error[1024];
};

static void *stream_main(void *arg)
{
    struct stream *s = arg;
    PGconn *c = PQconnectdb(s->conninfo);
    if (PQstatus(c) != CONNECTION_OK) {
        snprintf(s->error, sizeof s->error, "%s", PQerrorMessage(c));
        PQfinish(c);
        return NULL;
    }
    uint64_t rng = 99991;
    while (!__atomic_load_n(&s->stop, __ATOMIC_ACQUIRE)) {
        rng = rng * 6364136223846793005ULL + 1442695040888963407ULL;
        unsigned r = (unsigned)(rng >> 33);
        /* A row that may exist: a generated trip or one inserted here. */
        long long id = r % 2 ? 2 + (long long)(r / 2 % 3000) : 800000 + (long long)(r / 2 % 5000);
        char sql[4096];
        switch (r % 10) {
        case 0:
        case 1:
            snprintf(sql, sizeof sql,
                     "INSERT INTO yellow_trips SELECT " TAXI_TRIP_OF_G
                     " FROM (SELECT %lld::bigint AS g) x",
                     s->next_id++);
            break;
        case 2:
            snprintf(sql, sizeof sql, "UPDATE yellow_trips SET fare_amount = fare_amount + 0.25 "
                                      "WHERE id = %lld", id);
            break;
        case 3:
            snprintf(sql, sizeof sql, "UPDATE yellow_trips SET pu_location_id = %u, "
                                      "payment_type = %u WHERE id = %lld", 1 + r % 265, r % 6, id);
            break;
        case 4:
            snprintf(sql, sizeof sql, "UPDATE yellow_trips SET pickup_at = pickup_at + "
                                      "interval '%u minutes' WHERE id = %lld", 1 + r % 600, id);
            break;
        case 5:
            snprintf(sql, sizeof sql, "DELETE FROM yellow_trips WHERE id = %lld", id);
            break;
        case 6:
            snprintf(sql, sizeof sql, "UPDATE taxi_zones SET borough = (ARRAY['Queens', 'Bronx', "
                                      "'Brooklyn'])[%u] WHERE location_id = %u", 1 + r % 3,
                     1 + r % 263);
            break;
        case 7:
            snprintf(sql, sizeof sql,
                     "BEGIN; INSERT INTO yellow_trips SELECT " TAXI_TRIP_OF_G
                     " FROM (SELECT %lld::bigint AS g) x; SAVEPOINT s; "
                     "DELETE FROM yellow_trips WHERE id = %lld; ROLLBACK TO s; "
                     "UPDATE yellow_trips SET tip_amount = 2 WHERE id = %lld; "
                     "COMMIT",
                     s->next_id, id, s->next_id);
            s->next_id++;
            break;
        case 8:
            snprintf(sql, sizeof sql, "BEGIN; UPDATE yellow_trips SET fare_amount = 0 WHERE id "
                                      "BETWEEN %lld AND %lld; DELETE FROM yellow_trips WHERE id = "
                                      "%lld; ROLLBACK", id, id + 50, id + 51);
            break;
        default:
            snprintf(sql, sizeof sql,
                     "INSERT INTO yellow_trips SELECT " TAXI_TRIP_OF_G
                     " FROM generate_series(%lld::bigint, %lld::bigint) g",
                     s->next_id, s->next_id + 9);
            s->next_id += 10;
            break;
        }
        PGresult *res = PQexec(c, sql);
        ExecStatusType st = PQresultStatus(res);
        PQclear(res);
        if (st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK) {
            snprintf(s->error, sizeof s->error, "%.600s: %s", sql, PQerrorMessage(c));
            break;
        }
        __atomic_add_fetch(&s->txns, 1, __ATOMIC_RELEASE);
        /* A primary's pace, not a flood: about 500 transactions a second,
         * which a sanitized ingest still follows within the waits. */
        usleep(2000);
    }
    PQfinish(c);
    return NULL;
}

static uint64_t slot_restart_lsn(PGconn *pg, const char *slot)
{
    char sql[256];
    snprintf(sql, sizeof sql,
             "SELECT restart_lsn FROM pg_replication_slots WHERE slot_name = '%s'", slot);
    return oracle_lsn(pg, sql);
}

/* kill -9 of ingest while transactions stream, twelve times, each at a
 * random moment after the store moved on: started again it resumes from
 * its slot, and in the end nothing is lost or doubled. Kills follow a
 * checkpoint (a restart then reads from a later redo pointer);
 * across the third a transaction stays open, begun before the kill and
 * committed after, with a checkpoint in between: the slot must still hold
 * its start. Then PostgreSQL restarts under the running ingest (whose
 * answers to the walsender's pings must let the server shut down), which
 * reconnects and goes on. */
enum { KILLS = 12 };

Test(ingest_physical, kill9_while_transactions_stream, .timeout = 600)
{
    struct taxi_db db;
    struct follower f;
    taxi_physical(&db, replica_cluster(), 3000, &f);
    PGconn *pg = db.pg;
    follower_start(&f);
    check(&f, pg, "after the load");
    uint64_t first_restart = slot_restart_lsn(pg, db.slot);
    struct stream s = {.conninfo = db.conninfo, .next_id = 800000};
    cr_assert_eq(pthread_create(&s.thread, NULL, stream_main, &s), 0);
    PGconn *open = oracle_connect(db.conninfo);
    /* Each kill lands a random 0 to 250 ms after the store moved on: in a
     * group commit, between them, mid-transaction in the stream. The seed
     * is printed with a failure's message through `when`. */
    unsigned seed = (unsigned)time(NULL);
    for (int round = 0; round < KILLS; round++) {
        char when[128];
        snprintf(when, sizeof when, "before kill %d (seed %u)", round + 1, seed);
        /* A checkpoint a round, as a server's checkpoint_timeout makes
         * them: a restart re-reads the WAL since the last one before the
         * store's position, which would otherwise grow round after round
         * (past what a sanitized build re-reads in the waits' time). */
        if (round != 2)
            oracle_execf(pg, "CHECKPOINT");
        if (round == 2) {
            oracle_execf(
                open, "BEGIN;"
                      "INSERT INTO yellow_trips SELECT " TAXI_TRIP_OF_G
                      " FROM generate_series(5000000, 5000099) g;"
                      "UPDATE yellow_trips SET fare_amount = 12.34 WHERE id BETWEEN 1000 AND 1100");
            oracle_execf(pg, "CHECKPOINT");
        }
        /* The store moves on with the stream before each kill. */
        wait_position(&f, oracle_committed_lsn(pg), when);
        cr_assert_eq(s.error[0], '\0', "the stream failed: %s", s.error);
        usleep((useconds_t)(rand_r(&seed) % 250000));
        follower_kill(&f);
        uint64_t at_kill = oracle_committed_lsn(pg);
        if (round == 2) {
            oracle_execf(
                open, "UPDATE yellow_trips SET tip_amount = 3.21 WHERE id BETWEEN 1101 AND 1200");
            oracle_execf(pg, "CHECKPOINT");
        }
        follower_start(&f);
        snprintf(when, sizeof when, "after restart %d", round + 1);
        wait_position(&f, at_kill, when);
        if (round == 2)
            oracle_execf(open, "COMMIT");
    }
    long before_stop = __atomic_load_n(&s.txns, __ATOMIC_ACQUIRE);
    __atomic_store_n(&s.stop, 1, __ATOMIC_RELEASE);
    pthread_join(s.thread, NULL);
    cr_assert_eq(s.error[0], '\0', "the stream failed: %s", s.error);
    cr_assert_gt(before_stop, 100, "the stream ran (%ld transactions)", before_stop);
    check(&f, pg, "after twelve kill -9 under a stream of transactions");
    /* PostgreSQL restarted under a running ingest: it reconnects and
     * resumes from the slot. */
    char err[512];
    cr_assert_eq(pgtmp_restart(&replica, err, sizeof err), 0, "%s", err);
    PQfinish(db.pg);
    db.pg = pg = oracle_connect(db.conninfo);
    PQfinish(open);
    open = NULL;
    taxi_insert_trips(pg, 5200000, 50);
    oracle_execf(pg, "UPDATE yellow_trips SET fare_amount = fare_amount + 1 WHERE id %% 17 = 0");
    check(&f, pg, "after a PostgreSQL restart");
    /* The slot moves on too (feedback once a second, to a checkpoint's redo
     * pointer), or the server would keep its WAL for ever. */
    oracle_execf(pg, "CHECKPOINT");
    taxi_insert_trips(pg, 5100000, 5);
    uint64_t restart = first_restart;
    for (int i = 0; i < 300 && (restart = slot_restart_lsn(pg, db.slot)) <= first_restart; i++)
        usleep(100000);
    cr_assert_gt(restart, first_restart, "the slot's restart_lsn never moved on\n%s",
                 follower_log_tail(&f));
    follower_stop(&f);
    PQfinish(open);
    taxi_end(&db, &f);
    pgtmp_stop(&replica);
}

/* kill -9 as soon as the slot exists: during the load or just after it. A
 * store never fully loaded is loaded again at the next start, a loaded one
 * resumes; either way it ends equal. */
Test(ingest_physical, kill9_during_the_load, .timeout = 300)
{
    struct taxi_db db;
    struct follower f;
    taxi_physical(&db, replica_cluster(), 20000, &f);
    follower_start(&f);
    wait_slot(&f, db.pg);
    taxi_insert_trips(db.pg, 600000, 100);
    follower_kill(&f);
    oracle_execf(db.pg, "DELETE FROM yellow_trips WHERE id %% 9 = 0");
    follower_start(&f);
    check(&f, db.pg, "after a kill -9 during the load");
    taxi_insert_trips(db.pg, 610000, 100);
    check(&f, db.pg, "after inserts past a load killed");
    follower_stop(&f);
    taxi_end(&db, &f);
    pgtmp_stop(&replica);
}

/* ---- 4. Rewrites stop it -------------------------------------------------------------------- */

/* A rewrite moves a table's rows to a new file as page images, not as row
 * changes: ingest cannot follow it and must stop, saying which table and
 * what to run, without applying anything of it. When the rewrite kept the
 * rows (all but the last case), the store's last state is still
 * PostgreSQL's. Started again without --rebuild it refuses again; with
 * --rebuild it loads anew. */
static void rewrite_stops(struct taxi_db *db, struct follower *f, const char *what,
                          const char *sql, bool keeps_rows)
{
    PGconn *pg = db->pg;
    char when[256], log[16384];
    follower_start(f);
    taxi_insert_trips(pg, (long long)db->next_id + 1000000, 20);
    db->next_id += 1000;
    oracle_execf(pg, "UPDATE yellow_trips SET fare_amount = fare_amount + 1 WHERE id %% 50 = 0");
    snprintf(when, sizeof when, "before %s", what);
    check(f, pg, when);
    uint64_t before = oracle_store_position(f->store);
    oracle_exec(pg, sql);
    uint64_t rewritten = oracle_lsn(pg, "SELECT pg_current_wal_insert_lsn()");
    snprintf(when, sizeof when, "after %s", what);
    int status = follower_wait_exit(f, 60000, when);
    follower_log_text(f, f->run_from, log, sizeof log);
    cr_assert(WIFEXITED(status) && WEXITSTATUS(status) != 0,
              "%s: ingest must stop with an error (%s)\n--- its log:\n%s", when,
              follower_status_text(status), log);
    cr_assert(strstr(log, "yellow_trips") && strstr(log, "--rebuild"),
              "%s: the message names the table and --rebuild:\n%s", when, log);
    uint64_t pos = oracle_store_position(f->store);
    cr_assert(pos >= before && pos < rewritten,
              "%s: the store's position %X/%08X is not in [%X/%08X, %X/%08X): the rewrite's "
              "commit must not be passed\n%s",
              when, (unsigned)(pos >> 32), (unsigned)pos, (unsigned)(before >> 32),
              (unsigned)before, (unsigned)(rewritten >> 32), (unsigned)rewritten, log);
    if (keeps_rows) {
        char diff[4096];
        cr_assert_eq(oracle_compare(pg, f->store, diff, sizeof diff), 0,
                     "%s: the store no longer holds its last state: %s\n%s", when, diff, log);
    }
    int rc = follower_once(f, NULL, log, sizeof log);
    cr_assert_neq(rc, 0, "%s: started again without --rebuild it must refuse:\n%s", when, log);
    cr_assert(strstr(log, "yellow_trips") && strstr(log, "--rebuild"), "%s:\n%s", when, log);
    /* The refusal comes at the rewrite's commit: the position may have
     * moved over records before it (no transaction applied), never past. */
    uint64_t again = oracle_store_position(f->store);
    cr_assert(again >= pos && again < rewritten,
              "%s: the refused store's position %X/%08X passed the rewrite's commit", when,
              (unsigned)(again >> 32), (unsigned)again);
    const char *rebuild[] = {"--rebuild", NULL};
    rc = follower_once(f, rebuild, log, sizeof log);
    cr_assert_eq(rc, 0, "%s: --rebuild failed:\n%s", when, log);
    snprintf(when, sizeof when, "after --rebuild following %s", what);
    check(f, pg, when);
}

Test(ingest_physical, rewrites_stop_it_with_a_message, .timeout = 300)
{
    struct taxi_db db;
    struct follower f;
    taxi_physical(&db, replica_cluster(), 2000, &f);
    oracle_execf(db.pg, "CREATE INDEX trips_pickup ON yellow_trips (pickup_at)");
    rewrite_stops(&db, &f, "VACUUM FULL", "VACUUM FULL yellow_trips", true);
    rewrite_stops(&db, &f, "CLUSTER", "CLUSTER yellow_trips USING trips_pickup", true);
    rewrite_stops(&db, &f, "ALTER TABLE ... TYPE",
                  "ALTER TABLE yellow_trips ALTER COLUMN vendor_id TYPE integer", true);
    char truncate_and_insert[2048];
    snprintf(truncate_and_insert, sizeof truncate_and_insert,
             "BEGIN; TRUNCATE yellow_trips; INSERT INTO yellow_trips SELECT " TAXI_TRIP_OF_G
             " FROM generate_series(1, 300) g; COMMIT");
    rewrite_stops(&db, &f, "TRUNCATE and inserts in one transaction", truncate_and_insert,
                  false);
    /* Followed again after the last --rebuild. */
    follower_start(&f);
    taxi_insert_trips(db.pg, 5000, 30);
    check(&f, db.pg, "following after the rebuilds");
    follower_stop(&f);
    taxi_end(&db, &f);
    pgtmp_stop(&replica);
}

/* ---- 5. Long texts: updates that borrow the old row's prefix and suffix ----------------------- */

/* At wal_level = replica an update whose new row lands on the old row's
 * page (and takes no page image) logs only the bytes between the prefix
 * and the suffix it shares with the old row. The texts here are long
 * (1,280 bytes, under the size at which PostgreSQL compresses or moves a
 * value out of line) and come before the columns the view groups and sums
 * by, so a wrong splice shows in every column after it; count(DISTINCT
 * body) puts every text itself in the store. */
static const char notes_views[] =
    "CREATE VIEW notes_by_label WITH (buckets = '1 hour, 1 day') AS\n"
    "SELECT date_bin('1 hour', n.at, timestamptz 'epoch') AS bucket,\n"
    "       n.label AS label,\n"
    "       count(*) AS notes,\n"
    "       sum(n.amount) AS amount,\n"
    "       count(DISTINCT n.body) AS bodies\n"
    "FROM public.notes AS n\n"
    "GROUP BY 1, 2;\n";

/* Heap updates of node in the WAL between from and end that left out both
 * a prefix and a suffix of the new row. */
static int borrowing_updates(PGconn *pg, struct pgwal_relfilenode node, uint64_t from, uint64_t end)
{
    struct walfiles w;
    walfiles_open(&w, pg, from, end);
    struct pgwal_record rec;
    int n = 0;
    while (walfiles_next(&w, &rec)) {
        if (rec.rmid != PGWAL_RM_HEAP || !rec.blocks[0].in_use ||
            rec.blocks[0].node.rel != node.rel || rec.blocks[0].node.db != node.db)
            continue;
        uint8_t op = rec.info & PGWAL_HEAP_OPMASK;
        if (op != PGWAL_HEAP_UPDATE && op != PGWAL_HEAP_HOT_UPDATE)
            continue;
        struct pgwal_heap h;
        char err[256];
        cr_assert_eq(pgwal_heap_parse(&rec, &h, err, sizeof err), 0, "%s", err);
        if (h.prefix_len > 0 && h.suffix_len > 0)
            n++;
    }
    walfiles_close(&w);
    return n;
}

Test(ingest_physical, long_texts_updated_in_the_middle, .timeout = 300)
{
    const char *cluster = replica_cluster();
    PGconn *admin = oracle_connect(cluster);
    oracle_execf(admin, "CREATE DATABASE notes");
    PQfinish(admin);
    char conninfo[512];
    snprintf(conninfo, sizeof conninfo, "%s dbname=notes", cluster);
    PGconn *pg = oracle_connect(conninfo);
    oracle_execf(pg, "SET synchronous_commit = on");
    /* Two rows a page, with room beside them for their new versions. */
    oracle_execf(pg,
                 "CREATE TABLE notes (id int PRIMARY KEY, body text, label text, "
                 "at timestamptz NOT NULL, amount numeric(12,2)) WITH (fillfactor = 40);"
                 "INSERT INTO notes SELECT i, (SELECT string_agg(md5((i * 1000 + j)::text), '') "
                 "FROM generate_series(1, 40) j), 'label ' || (i %% 7), "
                 "timestamptz '2024-01-01 00:00:00+00' + i * interval '13 minutes', i * 1.25 "
                 "FROM generate_series(1, 300) i");
    char views[] = "/tmp/straum-notes-views-XXXXXX", store[] = "/tmp/straum-notes-XXXXXX";
    int fd = mkstemp(views);
    cr_assert_geq(fd, 0);
    cr_assert_eq(write(fd, notes_views, strlen(notes_views)), (ssize_t)strlen(notes_views));
    close(fd);
    cr_assert_not_null(mkdtemp(store));
    struct follower f;
    follower_init(&f, "physical", conninfo, views, store, "straum_notes");
    follower_start(&f);
    check(&f, pg, "after the load");

    oracle_execf(pg, "CHECKPOINT");
    uint64_t redo = oracle_lsn(pg, "SELECT redo_lsn FROM pg_control_checkpoint()");
    char v[64];
    struct pgwal_relfilenode node;
    oracle_value(pg, v, sizeof v, "SELECT oid FROM pg_tablespace WHERE spcname = 'pg_default'");
    node.spc = (uint32_t)strtoul(v, NULL, 10);
    oracle_value(pg, v, sizeof v, "SELECT oid FROM pg_database WHERE datname = current_database()");
    node.db = (uint32_t)strtoul(v, NULL, 10);
    oracle_value(pg, v, sizeof v, "SELECT pg_relation_filenode('notes')");
    node.rel = (uint32_t)strtoul(v, NULL, 10);

    oracle_execf(pg,
                 "UPDATE notes SET body = overlay(body placing 'in the middle, 1' from 600 for 16) "
                 "WHERE id %% 2 = 0");
    check(&f, pg, "after texts changed in their middle");
    oracle_execf(pg, "UPDATE notes SET label = 'relabelled ' || (id %% 3) WHERE id %% 3 = 0");
    check(&f, pg, "after a key after the long text changed");
    oracle_execf(pg, "UPDATE notes SET amount = amount + 0.01, at = at + interval '2 hours' "
                     "WHERE id %% 5 = 0");
    check(&f, pg, "after the bucket and a measure after the long text changed");
    oracle_execf(
        pg, "UPDATE notes SET body = overlay(body placing 'zz' from 2 for 2) WHERE id %% 4 = 1");
    check(&f, pg, "after texts changed near their start");
    oracle_execf(pg, "UPDATE notes SET body = body || ' and a tail' WHERE id %% 6 = 0");
    check(&f, pg, "after texts made longer");
    oracle_execf(pg, "UPDATE notes SET body = left(body, 1000) WHERE id %% 7 = 0");
    check(&f, pg, "after texts made shorter");
    oracle_execf(
        pg, "UPDATE notes SET body = overlay(body placing 'in the middle, 2' from 640 for 16), "
            "amount = amount * 2 WHERE id %% 2 = 0");
    check(&f, pg, "after texts changed in their middle again");
    oracle_committed_lsn(pg);
    uint64_t end = oracle_lsn(pg, "SELECT pg_current_wal_flush_lsn()");
    int borrowing = borrowing_updates(pg, node, redo, end);
    cr_assert_gt(borrowing, 0, "no update in the WAL left out a prefix and a suffix: the case "
                               "tested nothing");

    /* Long texts compressed inline (pglz): their bytes in the WAL are the
     * compressed ones. */
    oracle_execf(
        pg, "UPDATE notes SET body = repeat('compressible ' || id || ' ', 400) WHERE id %% 10 = 0");
    check(&f, pg, "after texts compressed inline");

    /* A text stored out of line (TOAST): the WAL holds only its pointer.
     * Ingest stops, naming the column, and applies nothing of it. */
    oracle_execf(pg, "ALTER TABLE notes ALTER COLUMN body SET STORAGE EXTERNAL");
    check(&f, pg, "after SET STORAGE");
    uint64_t before = oracle_store_position(store);
    oracle_execf(pg, "UPDATE notes SET body = repeat('y', 5000) WHERE id = 7");
    uint64_t toasted = oracle_lsn(pg, "SELECT pg_current_wal_insert_lsn()");
    int status = follower_wait_exit(&f, 60000, "after a text stored out of line");
    char log[16384];
    follower_log_text(&f, f.run_from, log, sizeof log);
    cr_assert(WIFEXITED(status) && WEXITSTATUS(status) != 0,
              "a value out of line must stop ingest (%s)\n%s", follower_status_text(status), log);
    cr_assert(strstr(log, "body") && strstr(log, "TOAST"), "the message names the column:\n%s",
              log);
    uint64_t pos = oracle_store_position(store);
    cr_assert(pos >= before && pos < toasted,
              "the store's position %X/%08X must stay before the update's commit (%X/%08X)\n%s",
              (unsigned)(pos >> 32), (unsigned)pos, (unsigned)(toasted >> 32), (unsigned)toasted,
              log);

    follower_end(&f);
    /* The walsender of the ingest just stopped may not have ended yet: the
     * slot is dropped once it is no longer active. */
    for (int tries = 0;; tries++) {
        PGresult *r = PQexec(pg, "SELECT pg_drop_replication_slot(slot_name) FROM "
                                 "pg_replication_slots WHERE slot_name = 'straum_notes' AND "
                                 "NOT active");
        PQclear(r);
        r = PQexec(pg, "SELECT 1 FROM pg_replication_slots WHERE slot_name = 'straum_notes'");
        bool gone = PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) == 0;
        PQclear(r);
        if (gone)
            break;
        cr_assert_lt(tries, 3000, "the slot straum_notes stays active after ingest stopped");
        usleep(10000);
    }
    PQfinish(pg);
    unlink(views);
    char rm[128];
    snprintf(rm, sizeof rm, "rm -rf %s", store);
    cr_assert_eq(system(rm), 0);
    pgtmp_stop(&replica);
}
