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
#include "tests/e2e/follower.h"
#include "tests/e2e/oracle.h"
#include "tests/e2e/taxi_db.h"
#include "tests/kit/pgtmp.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/* ---- SQL ------------------------------------------------------------------------------ */

static int count_of(PGconn *pg, const char *sql)
{
    char v[32];
    oracle_value(pg, v, sizeof v, "%s", sql);
    return atoi(v);
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
    PGconn *s = oracle_connect(pgtmp_conninfo(&p->standby));
    char v[16];
    oracle_value(s, v, sizeof v, "SELECT pg_is_in_recovery()");
    cr_assert_str_eq(v, "t", "the standby is in recovery");
    PQfinish(s);

    /* The taxi tables on the primary, without the publication and replica
     * identity logical mode needs: the physical mode needs neither. */
    taxi_db_create(&p->db, pgtmp_conninfo(&p->primary), trips);
    oracle_execf(p->db.pg,
                 "DROP PUBLICATION straum; ALTER TABLE yellow_trips REPLICA IDENTITY DEFAULT; "
                 "ALTER TABLE taxi_zones REPLICA IDENTITY DEFAULT");
    /* Room on every page, so that updates of measures are HOT; the bucket
     * column and a key indexed, so that updates of them are not. */
    oracle_execf(p->db.pg, "ALTER TABLE yellow_trips SET (fillfactor = 70)");
    oracle_execf(p->db.pg, "VACUUM FULL yellow_trips");
    oracle_execf(p->db.pg, "CREATE INDEX trips_pickup ON yellow_trips (pickup_at);"
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
        p->standby_pg = oracle_connect(pgtmp_conninfo(&p->standby));
    for (int waited = 0;; waited += 10) {
        replayed = oracle_lsn(p->standby_pg, "SELECT pg_last_wal_replay_lsn()");
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
        p->standby_pg = oracle_connect(p->standby_conninfo);
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
    oracle_value(p->standby_pg, v, sizeof v,
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

/* straum-ingest run --wal physical on the standby's database
 * (follower.h), its log /tmp/straum-standby-log-*. */
static void follower_on_standby(struct follower *f, struct pair *p)
{
    char views[4096];
    snprintf(views, sizeof views, "%s/bench/taxi_views.sql", STRAUM_SOURCE_DIR);
    follower_init(f, "standby", p->standby_conninfo, views, p->db.store, p->db.slot);
}

/* A run with --exit-when-caught-up (and extra, when not NULL): it ends
 * once its store holds what the standby had replayed when it started. Its
 * wait status; its log lines in out. */
static int run_caught_up(struct follower *f, const char *extra, const char *when, char *out,
                          size_t cap)
{
    const char *const args[] = {extra, NULL};
    return follower_run(f, args, 60000, when, out, cap);
}

/* The same, asserting a clean exit. */
static void follower_once(struct follower *f, const char *extra, const char *when)
{
    char out[16384];
    int status = run_caught_up(f, extra, when, out, sizeof out);
    cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0,
              "%s: ingest --exit-when-caught-up failed (%s)\n--- its log:\n%s", when,
              follower_status_text(status), follower_log_tail(f));
}

/* Waits until the running follower's store reaches lsn. */
static void wait_position(struct follower *f, uint64_t lsn, const char *when)
{
    follower_wait_position(f, lsn, 60000, when);
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
                  (unsigned)replayed, follower_log_tail(f));
    char diff[4096];
    int rc = oracle_compare(p->standby_pg, f->store, diff, sizeof diff);
    cr_assert_eq(rc, 0, "%s: the store differs from the standby: %s\n--- ingest's log:\n%s", when,
                 diff, follower_log_tail(f));
}

/* ---- Changes on the primary ------------------------------------------------------------------ */

/* Inserts, HOT updates of measures, updates of keys, of the bucket and of
 * the primary key, deletes, a transaction with savepoints rolled back to,
 * an aborted one, dim changes (attributes, a row added and one deleted, a
 * key changed), and a CHECKPOINT between them, so that a later restart
 * reads from a redo pointer past the load's. */
static void rows_and_dims(PGconn *pg, long long base)
{
    taxi_insert_trips(pg, base, 400);
    for (int i = 0; i < 3; i++)
        oracle_execf(pg,
                     "INSERT INTO yellow_trips SELECT " TAXI_TRIP_OF_G
                     " FROM (SELECT %lld::bigint AS g) x",
                     base + 1000 + i);
    oracle_execf(
        pg, "UPDATE yellow_trips SET fare_amount = fare_amount + 1.5, tip_amount = tip_amount * 2 "
            "WHERE id %% 10 = 0");
    oracle_execf(pg, "UPDATE yellow_trips SET pu_location_id = 1 + (id * 11) %% 265, "
                     "payment_type = (payment_type + 1) %% 6 WHERE id %% 13 = 0");
    oracle_execf(pg, "CHECKPOINT");
    oracle_execf(pg, "UPDATE yellow_trips SET pickup_at = pickup_at + interval '3 hours 7 minutes' "
                     "WHERE id %% 17 = 0");
    oracle_execf(pg,
                 "UPDATE yellow_trips SET id = id + 20000000 WHERE id %% 19 = 0 AND id < 20000000");
    oracle_execf(pg, "DELETE FROM yellow_trips WHERE id %% 23 = 0");
    oracle_execf(
        pg,
        "BEGIN;"
        "INSERT INTO yellow_trips SELECT " TAXI_TRIP_OF_G " FROM generate_series(%lld, %lld) g;"
        "SAVEPOINT a;"
        "INSERT INTO yellow_trips SELECT " TAXI_TRIP_OF_G " FROM generate_series(%lld, %lld) g;"
        "UPDATE yellow_trips SET fare_amount = 99.99 WHERE id BETWEEN %lld AND %lld;"
        "DELETE FROM yellow_trips WHERE id BETWEEN 200 AND 260;"
        "ROLLBACK TO a;"
        "SAVEPOINT b;"
        "UPDATE yellow_trips SET tip_amount = 7.77 WHERE id BETWEEN %lld AND %lld;"
        "RELEASE b;"
        "COMMIT",
        base + 2000, base + 2019, base + 2020, base + 2039, base + 2000, base + 2009, base + 2010,
        base + 2015);
    oracle_execf(pg, "BEGIN; UPDATE yellow_trips SET fare_amount = 0; DELETE FROM yellow_trips "
                     "WHERE id %% 2 = 0; UPDATE taxi_zones SET borough = 'Nowhere'; ROLLBACK");
    oracle_execf(pg, "UPDATE taxi_zones SET borough = 'Queens' WHERE location_id IN (4, 13, 48)");
    oracle_execf(pg,
                 "BEGIN; INSERT INTO taxi_zones VALUES (%lld, 'Nowhere', 'New zone', 'Boro Zone');"
                 "DELETE FROM taxi_zones WHERE location_id = 100;"
                 "UPDATE taxi_zones SET location_id = location_id + 1000 WHERE location_id = 101;"
                 "COMMIT",
                 300 + base / 100000);
}

/* TRUNCATE of the fact table in a transaction of its own (a new, empty
 * file the follower takes from the standby's catalog once replayed), then
 * rows into the new file, in transactions of their own, and a CHECKPOINT. */
/* Returns the WAL's insert position just past the TRUNCATE's commit. */
static uint64_t truncate_and_refill(PGconn *pg, long long base)
{
    oracle_execf(pg, "CHECKPOINT");
    oracle_execf(pg, "TRUNCATE yellow_trips");
    uint64_t truncated = oracle_lsn(pg, "SELECT pg_current_wal_insert_lsn()");
    taxi_insert_trips(pg, base, 500);
    taxi_insert_trips(pg, base + 1000, 300);
    oracle_execf(pg, "UPDATE yellow_trips SET fare_amount = fare_amount - 2 WHERE id %% 3 = 0");
    oracle_execf(pg, "DELETE FROM yellow_trips WHERE id %% 7 = 0");
    oracle_execf(pg, "CHECKPOINT");
    return truncated;
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
    follower_on_standby(&f, &p);

    follower_once(&f, NULL, "the load from the standby");
    cr_assert_eq(taxi_log_count(f.log, "created physical slot"), 1, "%s", follower_log_tail(&f));
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
                 follower_log_tail(&f));

    uint64_t before = oracle_store_position(f.store);
    uint64_t truncated = truncate_and_refill(p.db.pg, 400000);
    wait_replayed(&p, "after TRUNCATE and inserts");
    char out[16384];
    int status = run_caught_up(&f, NULL, "starting after a TRUNCATE", out, sizeof out);
    cr_assert(WIFEXITED(status) && WEXITSTATUS(status) != 0,
              "a TRUNCATE made while ingest was stopped must stop it (%s)\n%s",
              follower_status_text(status), out);
    cr_assert(strstr(out, "yellow_trips") && strstr(out, "--rebuild"),
              "the message names the table and --rebuild:\n%s", out);
    /* The refusal comes at the TRUNCATE's commit: the position may have
     * moved over the records before it (the CHECKPOINT's), never past. */
    uint64_t again = oracle_store_position(f.store);
    cr_assert(again >= before && again < truncated,
              "the refused store's position %X/%08X passed the TRUNCATE", (unsigned)(again >> 32),
              (unsigned)again);
    follower_once(&f, "--rebuild", "--rebuild after a TRUNCATE");
    cr_assert_eq(taxi_log_count(f.log, "created physical slot"), 2, "%s", follower_log_tail(&f));
    check(&f, &p, "after --rebuild");

    taxi_insert_trips(p.db.pg, 500000, 200);
    oracle_execf(p.db.pg, "UPDATE yellow_trips SET tip_amount = 1 WHERE id %% 5 = 0");
    oracle_execf(p.db.pg, "CHECKPOINT");
    oracle_execf(p.db.pg, "DELETE FROM yellow_trips WHERE id %% 11 = 0");
    wait_replayed(&p, "after changes following --rebuild");
    follower_once(&f, NULL, "resuming after --rebuild");
    check(&f, &p, "after changes following --rebuild");
    cr_assert_eq(taxi_log_count(f.log, "snapshot loaded"), 2, "%s", follower_log_tail(&f));
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
    follower_on_standby(&f, &p);
    follower_start(&f);
    check(&f, &p, "after the load from the standby");
    assert_slot_on_standby(&p, f.slot);
    /* Ingest's walsender is the standby's, not the primary's. */
    cr_assert_eq(count_of(p.standby_pg, "SELECT count(*) FROM pg_stat_replication"), 1,
                 "the standby streams to ingest");

    /* Changes one after another, ingest reading them as the standby
     * replays them; no wait between them but the last. */
    for (int round = 0; round < 12; round++) {
        long long base = 1000000 + round * 10000LL;
        taxi_insert_trips(p.db.pg, base, 100);
        oracle_execf(p.db.pg,
                     "UPDATE yellow_trips SET fare_amount = fare_amount + 0.25 "
                     "WHERE id %% 31 = %d",
                     round);
        oracle_execf(p.db.pg,
                     "UPDATE yellow_trips SET do_location_id = 1 + (id * %d) %% 263 "
                     "WHERE id %% 37 = %d",
                     round + 3, round);
        oracle_execf(p.db.pg, "DELETE FROM yellow_trips WHERE id BETWEEN %lld AND %lld", base + 10,
                     base + 19);
        oracle_execf(p.db.pg,
                     "BEGIN; INSERT INTO yellow_trips SELECT " TAXI_TRIP_OF_G
                     " FROM generate_series(%lld, %lld) g; SAVEPOINT s; "
                     "DELETE FROM yellow_trips WHERE id %% 5 = 0; ROLLBACK TO s; "
                     "UPDATE taxi_zones SET zone = zone || '.' WHERE location_id = %d; COMMIT",
                     base + 500, base + 509, 1 + round * 7);
        if (round % 4 == 3)
            oracle_execf(p.db.pg, "CHECKPOINT");
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
    cr_assert_eq(taxi_log_count(f.log, "snapshot loaded"), 1, "%s", follower_log_tail(&f));
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
    follower_on_standby(&f, &p);
    follower_start(&f);
    check(&f, &p, "after the load from the standby");

    truncate_and_refill(p.db.pg, 600000);
    check(&f, &p, "after TRUNCATE and inserts, replayed late");

    oracle_execf(p.db.pg, "ALTER TABLE yellow_trips ADD COLUMN note text");
    oracle_execf(p.db.pg, "INSERT INTO yellow_trips SELECT " TAXI_TRIP_OF_G ", 'noted' "
                          "FROM generate_series(700000, 700099) g");
    wait_replayed(&p, "after a column was added");
    check(&f, &p, "after a column was added and rows inserted with it");
    /* Read after the replay: the new layout, not the old one (whose
     * attribute count would refuse the new rows). */
    cr_assert_eq(taxi_log_count(f.log, "has 13 attributes now"), 1, "%s", follower_log_tail(&f));
    cr_assert_eq(taxi_log_count(f.log, "snapshot loaded"), 1, "%s", follower_log_tail(&f));
    follower_end(&f);
    pair_end(&p);
}
