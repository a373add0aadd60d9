/* test_ingest_follow.c -- straum-ingest against a real PostgreSQL.
 *
 * For both benchmark views on generated taxi data: after the snapshot and
 * after each of many random committed change batches (inserts; updates of
 * keys, measures and the bucket column; deletes; zone renames, borough moves
 * and deletes; truncates; NULLs; a 100k-row transaction, streamed), every
 * cell of every width and every value count in the store equals PostgreSQL's
 * GROUP BY of the view body at that width. Rolled-back transactions and
 * subtransactions change nothing. */
#include "tests/e2e/oracle.h"
#include "tests/e2e/taxi_db.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

Test(ingest_follow, snapshot_then_random_batches_equal_postgresql, .timeout = 600)
{
    struct taxi_db db;
    taxi_db_create(&db, NULL, 3000);
    /* Tiny decoding memory: large transactions arrive streamed, before
     * their commit, and go through the spool. */
    oracle_exec(db.pg, "DO $$ BEGIN EXECUTE format('ALTER DATABASE %I SET "
                       "logical_decoding_work_mem = ''64kB''', current_database()); END $$");
    char log[8192];
    int rc = taxi_ingest_once(&db, log, sizeof log);
    cr_assert_eq(rc, 0, "first run failed:\n%s", log);
    cr_assert(strstr(log, "snapshot loaded") != NULL, "%s", log);
    taxi_check(&db, "after the snapshot");

    taxi_ingest_start(&db, NULL);
    for (int batch = 0; batch < 30; batch++) {
        char when[128];
        snprintf(when, sizeof when, "after batch %d (%s)", batch, taxi_random_batch(&db));
        taxi_check(&db, when);
    }
    /* A 100k-row transaction: streamed in pieces, spooled, applied whole. */
    taxi_db_add_trips(&db, 100000, 0.77);
    taxi_check(&db, "after a 100k-row transaction");
    taxi_exec(db.pg, "UPDATE yellow_trips SET fare_amount = fare_amount + 1 WHERE id %% 3 = 0");
    taxi_check(&db, "after a large update");
    /* A large transaction streamed and then rolled back changes nothing. */
    taxi_exec(db.pg, "BEGIN; UPDATE yellow_trips SET fare_amount = 0; ROLLBACK");
    taxi_check(&db, "after a large rolled-back transaction");
    taxi_exec(db.pg, "TRUNCATE yellow_trips");
    taxi_check(&db, "after TRUNCATE of the fact table");
    taxi_db_add_trips(&db, 500, 0.11);
    taxi_exec(db.pg, "TRUNCATE taxi_zones");
    taxi_check(&db, "after TRUNCATE of the dim");
    taxi_exec(db.pg, "INSERT INTO taxi_zones VALUES (161, 'Manhattan', 'Midtown Center', 'Yellow Zone')");
    taxi_check(&db, "after a zone comes back");
    taxi_ingest_stop(&db);

    /* Restarted on the same store: resumes, no snapshot. */
    taxi_random_batch(&db);
    rc = taxi_ingest_once(&db, log, sizeof log);
    cr_assert_eq(rc, 0, "restart failed:\n%s", log);
    cr_assert_null(strstr(log, "snapshot loaded"), "a restart resumes: %s", log);
    taxi_check(&db, "after a restart");
    taxi_db_destroy(&db);
}

Test(ingest_follow, views_changed_are_refused_and_rebuild_works, .timeout = 120)
{
    struct taxi_db db;
    taxi_db_create(&db, NULL, 500);
    char log[8192];
    cr_assert_eq(taxi_ingest_once(&db, log, sizeof log), 0, "%s", log);
    /* Another views file on the same store. */
    char views[] = "/tmp/straum-views-XXXXXX";
    int fd = mkstemp(views);
    const char *text = "CREATE VIEW trips WITH (buckets = '1 hour') AS SELECT date_bin('1 hour', "
                       "t.pickup_at, timestamptz 'epoch') AS bucket, count(*) AS trips "
                       "FROM yellow_trips t GROUP BY 1";
    cr_assert_eq(write(fd, text, strlen(text)), (ssize_t)strlen(text));
    close(fd);
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "%s run --source '%s' --views %s --store %s --slot %s "
                              "--exit-when-caught-up 2>&1",
             STRAUM_INGEST_BIN, db.conninfo, views, db.store, db.slot);
    FILE *p = popen(cmd, "r");
    size_t n = fread(log, 1, sizeof log - 1, p);
    log[n] = '\0';
    int status = pclose(p);
    cr_assert_neq(status, 0, "a changed views file must be refused");
    cr_assert(strstr(log, "rerun with --rebuild") != NULL, "%s", log);
    strcat(cmd, " --rebuild");
    char *two = strstr(cmd, " 2>&1 --rebuild");
    memcpy(two, " --rebuild 2>&1", strlen(" --rebuild 2>&1"));
    p = popen(cmd, "r");
    n = fread(log, 1, sizeof log - 1, p);
    log[n] = '\0';
    cr_assert_eq(pclose(p), 0, "%s", log);
    cr_assert(strstr(log, "snapshot loaded") != NULL, "%s", log);
    taxi_check(&db, "after --rebuild with other views");
    unlink(views);
    taxi_db_destroy(&db);
}

/* The rows sequential scans of yellow_trips have read, as PostgreSQL
 * counts them. */
static long long seq_rows_read(PGconn *pg)
{
    PGresult *r = PQexec(pg, "SELECT seq_tup_read FROM pg_stat_user_tables"
                             " WHERE relname = 'yellow_trips'");
    cr_assert(PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) == 1, "%s",
              PQerrorMessage(pg));
    long long n = atoll(PQgetvalue(r, 0, 0));
    PQclear(r);
    return n;
}

/* A fact table larger than --snapshot-batch loads in time partitions: by
 * index range scans when PostgreSQL's statistics say its rows lie in time
 * order, else in one scan set aside by partition, split by ctid range over
 * two connections in the snapshot (ingest/snapshot.c): every row once,
 * whichever half of the table holds it. The halves are sequential scans
 * with a ctid filter, which read through a ring of buffers, not TID range
 * scans, which would evict shared_buffers: each reads the whole table
 * (PostgreSQL counts those rows in seq_tup_read, not a TID range scan's).
 * Some trips without a bucket time land in no cell but must not break
 * either. */
static void load_in_partitions(bool in_time_order)
{
    struct taxi_db db;
    taxi_db_create(&db, NULL, 4000);
    taxi_exec(db.pg, "ALTER TABLE yellow_trips ALTER COLUMN pickup_at DROP NOT NULL;"
                     "UPDATE yellow_trips SET pickup_at = NULL WHERE id %% 97 = 0;"
                     "CREATE INDEX trips_by_time ON yellow_trips (pickup_at)");
    if (in_time_order) {
        taxi_exec(db.pg, "CLUSTER yellow_trips USING trips_by_time");
    } else { /* rewritten in a random order */
        taxi_exec(db.pg, "CREATE TEMP TABLE shuffled AS SELECT * FROM yellow_trips ORDER BY md5(id::text);"
                         "DELETE FROM yellow_trips; INSERT INTO yellow_trips SELECT * FROM shuffled");
        taxi_exec(db.pg, "VACUUM FULL yellow_trips");
    }
    taxi_exec(db.pg, "ANALYZE yellow_trips");
    const char *extra[] = {"--snapshot-batch", "300", NULL};
    char log[16384];
    /* The set-up's own scans counted first (this connection made them). */
    taxi_exec(db.pg, "SELECT pg_stat_force_next_flush()");
    long long read_before = seq_rows_read(db.pg);
    cr_assert_eq(taxi_ingest_once_with(&db, extra, log, sizeof log), 0, "%s", log);
    cr_assert(strstr(log, "yellow_trips\\\": 4000 rows"), "%s", log);
    const char *at = strstr(log, "time partitions of");
    cr_assert(at != NULL, "%s", log);
    while (at > log && at[-1] != 'n') /* back to "in N " */
        at--;
    int nparts = atoi(at + 1);
    if (in_time_order) {
        cr_assert(strstr(log, "stored in time order: an index range scan each"), "%s", log);
        cr_assert_eq(nparts, 14, "%s", log);
    } else {
        cr_assert(strstr(log, "not stored in time order: one scan, set aside by partition") &&
                      strstr(log, "in one scan over two connections: 4000 rows"),
                  "%s", log);
        cr_assert_gt(nparts, 14, "set aside, partitions are a quarter the size: %s", log);
        /* The scan's backends report their counts as they exit. */
        long long read = 0;
        for (int i = 0; i < 100 && (read = seq_rows_read(db.pg) - read_before) < 2 * 4000; i++)
            usleep(50 * 1000);
        cr_assert_geq(read, 2 * 4000, "both halves are sequential scans of the whole table");
    }
    taxi_check(&db, in_time_order ? "after a snapshot by index ranges" : "after a snapshot set aside");
    taxi_db_destroy(&db);
}

Test(ingest_follow, a_snapshot_loaded_by_index_ranges, .timeout = 300) { load_in_partitions(true); }

Test(ingest_follow, a_snapshot_out_of_time_order_set_aside_by_partition, .timeout = 300)
{
    load_in_partitions(false);
}

/* A partitioned fact table. Published as its partitions (the default), its
 * changes would name them, not the table the views read: plan prints the
 * publication WITH (publish_via_partition_root = true) and each
 * partition's REPLICA IDENTITY FULL, and ingest refuses to start and says
 * so. Then: its parent has no pages of its own, so the scan cannot be split
 * by ctid and is one COPY of the parent (which reads every partition), set
 * aside by time partition as any other; the store equals PostgreSQL's
 * answers over it, and its changes follow, rows moving between partitions
 * too. Rows go in out of time order, so that the statistics do not pick
 * index ranges. */
Test(ingest_follow, a_partitioned_table_loads_in_one_scan, .timeout = 300)
{
    struct taxi_db db;
    taxi_db_create(&db, NULL, 4000);
    taxi_exec(db.pg, "ALTER PUBLICATION straum DROP TABLE yellow_trips;"
                     "ALTER TABLE yellow_trips RENAME TO trips_plain;"
                     "CREATE TABLE yellow_trips (LIKE trips_plain INCLUDING DEFAULTS)"
                     " PARTITION BY RANGE (pickup_at);"
                     "CREATE TABLE trips_q1 PARTITION OF yellow_trips"
                     " FOR VALUES FROM ('2024-01-01') TO ('2024-04-01');"
                     "CREATE TABLE trips_rest PARTITION OF yellow_trips DEFAULT;"
                     "INSERT INTO yellow_trips SELECT * FROM trips_plain ORDER BY md5(id::text);"
                     "DROP TABLE trips_plain;"
                     "ALTER TABLE yellow_trips REPLICA IDENTITY FULL;"
                     "ALTER PUBLICATION straum ADD TABLE yellow_trips");
    taxi_exec(db.pg, "ANALYZE yellow_trips");
    char out[8192], log[16384];
    cr_assert_eq(taxi_plan(&db, out, sizeof out), 1, "%s", out);
    cr_assert(strstr(out, "\"public\".\"taxi_zones\" WITH (publish_via_partition_root = true);") &&
                  strstr(out, "ALTER TABLE public.trips_q1 REPLICA IDENTITY FULL;") &&
                  strstr(out, "ALTER TABLE public.trips_rest REPLICA IDENTITY FULL;") &&
                  strstr(out, "FIX  publication \"straum\" holds \"public\".\"yellow_trips\"") &&
                  strstr(out, "FIX  every partition of \"public\".\"yellow_trips\" has REPLICA "
                              "IDENTITY FULL"),
              "%s", out);
    cr_assert_neq(taxi_ingest_once(&db, log, sizeof log), 0, "%s", log);
    cr_assert(strstr(log, "is partitioned") && strstr(log, "publish_via_partition_root = true"),
              "%s", log);
    taxi_exec(db.pg, "ALTER TABLE trips_q1 REPLICA IDENTITY FULL;"
                     "ALTER TABLE trips_rest REPLICA IDENTITY FULL;"
                     "ALTER PUBLICATION straum SET (publish_via_partition_root = true)");
    cr_assert_eq(taxi_plan(&db, out, sizeof out), 0, "%s", out);
    const char *extra[] = {"--snapshot-batch", "300", NULL};
    cr_assert_eq(taxi_ingest_once_with(&db, extra, log, sizeof log), 0, "%s", log);
    cr_assert(strstr(log, "yellow_trips\\\": 4000 rows"), "%s", log);
    cr_assert(strstr(log, "not stored in time order: one scan, set aside by partition") &&
                  strstr(log, "in one scan: 4000 rows"),
              "one COPY, not split: %s", log);
    taxi_check(&db, "after a snapshot of a partitioned table");
    /* Published through the parent (publish_via_partition_root), its
     * changes follow as any table's, rows moving between partitions too. */
    taxi_ingest_start(&db, NULL);
    for (int batch = 0; batch < 6; batch++) {
        char when[160];
        snprintf(when, sizeof when, "after batch %d on a partitioned table (%s)", batch,
                 taxi_random_batch(&db));
        taxi_check(&db, when);
    }
    taxi_exec(db.pg, "UPDATE yellow_trips SET pickup_at = pickup_at + interval '100 days'"
                     " WHERE id %% 5 = 0");
    taxi_check(&db, "after rows moved between partitions");
    taxi_db_destroy(&db);
}

/* A row the store refuses (a time past the year 100000) in a load by index
 * ranges: the apply fails while the reader thread may still be reading;
 * ingest stops it, says why and exits, rather than hanging or going on. */
Test(ingest_follow, a_refused_row_stops_a_ranged_load_cleanly, .timeout = 300)
{
    struct taxi_db db;
    taxi_db_create(&db, NULL, 4000);
    taxi_exec(db.pg, "INSERT INTO yellow_trips SELECT id + 9000000, vendor_id, "
                     "'200000-01-01 00:00:00+00', dropoff_at, passenger_count, trip_distance, "
                     "pu_location_id, do_location_id, payment_type, fare_amount, tip_amount, "
                     "total_amount FROM yellow_trips WHERE id = (SELECT min(id) FROM yellow_trips);"
                     "CREATE INDEX trips_by_time ON yellow_trips (pickup_at)");
    taxi_exec(db.pg, "CLUSTER yellow_trips USING trips_by_time");
    taxi_exec(db.pg, "ANALYZE yellow_trips");
    const char *extra[] = {"--snapshot-batch", "300", NULL};
    char log[16384];
    cr_assert_neq(taxi_ingest_once_with(&db, extra, log, sizeof log), 0, "%s", log);
    cr_assert(strstr(log, "stored in time order: an index range scan each") &&
                  strstr(log, "outside the times a store keeps"),
              "%s", log);
    cr_assert_null(strstr(log, "snapshot loaded"), "%s", log);
    taxi_db_destroy(&db);
}

/* A database that only answers reads writes no WAL; the follower still
 * records that it is in touch, or serve would call an idle source lagging. */
Test(ingest_follow, an_idle_database_keeps_the_contact_time_fresh, .timeout = 120)
{
    struct taxi_db db;
    taxi_db_create(&db, NULL, 100);
    char log[8192];
    cr_assert_eq(taxi_ingest_once(&db, log, sizeof log), 0, "%s", log);
    struct timespec started;
    clock_gettime(CLOCK_REALTIME, &started);
    int64_t started_us = (int64_t)started.tv_sec * 1000000 + started.tv_nsec / 1000;
    db.default_nice = true; /* ingest's own --nice, checked below */
    taxi_ingest_start(&db, NULL);
    /* With nothing to apply, the contact time still moves: wait (bounded)
     * until it is 3 s past the start, each read a fresh snapshot. */
    struct store *s;
    struct store_error err;
    cr_assert_eq(store_open(db.store, STORE_READ_ONLY, &s, &err), 0, "%s", err.message);
    int64_t contact = 0;
    for (int waited = 0; contact < started_us + 3000000 && waited < 30000; waited += 100) {
        struct store_read *r;
        struct store_catalog cat;
        cr_assert_eq(store_read_begin(s, &r, &err), 0);
        cr_assert_eq(store_read_catalog(r, &cat, &err), 0, "%s", err.message);
        contact = cat.position.contact_time;
        store_read_end(r);
        if (contact < started_us + 3000000)
            usleep(100000);
    }
    store_close(s);
    cr_assert_geq(contact, started_us + 3000000,
                  "the last contact is %lld ms after the start, after 30 idle seconds",
                  (long long)((contact - started_us) / 1000));
    /* It runs 10 nicer than started unless told otherwise (--nice): asks come first. */
    char path[64], stat[1024];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)db.ingest);
    FILE *f = fopen(path, "r");
    cr_assert_not_null(f);
    size_t got = fread(stat, 1, sizeof stat - 1, f);
    fclose(f);
    stat[got] = '\0';
    const char *field = strrchr(stat, ')'); /* past the command name */
    int nice = -100;
    cr_assert_not_null(field);
    /* Fields after the name: state ppid pgrp session tty tpgid flags minflt
     * cminflt majflt cmajflt utime stime cutime cstime priority nice. */
    cr_assert_eq(sscanf(field + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %*u %*u %*d %*d %*d %d",
                        &nice), 1, "%s", stat);
    int base = getpriority(PRIO_PROCESS, 0); /* ours, which ingest inherited */
    cr_assert_eq(nice, base + 10 > 19 ? 19 : base + 10, "%s", stat);
    taxi_ingest_stop(&db);
    taxi_db_destroy(&db);
}

/* A store restored from a copy made earlier (straum-dump copy), or any
 * store older than its slot, has lost the changes between its position and
 * the slot's confirmed_flush_lsn: PostgreSQL streams from the slot's
 * position, whatever position ingest asks for. Ingest must refuse it,
 * saying what to run, and change nothing; --rebuild then loads it again. */
Test(ingest_follow, a_store_behind_its_slot_is_refused, .timeout = 300)
{
    struct taxi_db db;
    taxi_db_create(&db, NULL, 500);
    char log[8192];
    cr_assert_eq(taxi_ingest_once(&db, log, sizeof log), 0, "%s", log);
    char backup[] = "/tmp/straum-backup-XXXXXX";
    cr_assert_not_null(mkdtemp(backup));
    struct store *s;
    struct store_error err;
    cr_assert_eq(store_open(db.store, STORE_READ_ONLY, &s, &err), 0, "%s", err.message);
    cr_assert_eq(store_copy(s, backup, &err), 0, "%s", err.message);
    store_close(s);
    uint64_t copied = oracle_store_position(backup);

    taxi_db_add_trips(&db, 200, 0.31);
    cr_assert_eq(taxi_ingest_once(&db, log, sizeof log), 0, "%s", log);
    /* The slot hears of the store's position from ingest's last feedback,
     * which the walsender takes in when it gets to it, after ingest may
     * have exited: wait for it, a bounded while (another run sends it
     * again). */
    for (int i = 0; i < 120 && taxi_slot_confirmed(&db) <= copied; i++) {
        usleep(250000);
        if (i % 20 == 19)
            cr_assert_eq(taxi_ingest_once(&db, log, sizeof log), 0, "%s", log);
    }
    cr_assert_gt(taxi_slot_confirmed(&db), copied, "the slot moved past the copy");

    /* The copy put back in the store's place. */
    char path[256], from[256];
    for (int i = 0; i < 2; i++) {
        const char *name = i ? "lock.mdb" : "data.mdb";
        snprintf(path, sizeof path, "%s/%s", db.store, name);
        snprintf(from, sizeof from, "%s/%s", backup, name);
        unlink(path);
        if (access(from, F_OK) == 0)
            cr_assert_eq(rename(from, path), 0);
    }
    rmdir(backup);
    int rc = taxi_ingest_once(&db, log, sizeof log);
    cr_assert_neq(rc, 0, "a store behind its slot must be refused:\n%s", log);
    cr_assert(strstr(log, "behind the replication slot") && strstr(log, "--rebuild"), "%s", log);
    cr_assert_eq(oracle_store_position(db.store), copied, "the refused store is unchanged");

    const char *rebuild[] = {"--rebuild", NULL};
    cr_assert_eq(taxi_ingest_once_with(&db, rebuild, log, sizeof log), 0, "%s", log);
    taxi_check(&db, "after --rebuild of a store behind its slot");
    taxi_db_destroy(&db);
}
