/* test_ingest_faults.c -- straum-ingest survives what production does to it:
 * kill -9 at random moments while streaming (each time restarted), and
 * PostgreSQL restarting under it. At the end every cell equals PostgreSQL,
 * and the slot is never told a position the store does not hold. */
#include "tests/e2e/oracle.h"
#include "tests/e2e/taxi_db.h"
#include "tests/pg/pgtmp.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static uint64_t slot_confirmed(struct taxi_db *db)
{
    char sql[256];
    snprintf(sql, sizeof sql,
             "SELECT confirmed_flush_lsn FROM pg_replication_slots WHERE slot_name = '%s'",
             db->slot);
    PGresult *r = PQexec(db->pg, sql);
    cr_assert_eq(PQresultStatus(r), PGRES_TUPLES_OK, "%s", PQerrorMessage(db->pg));
    cr_assert_eq(PQntuples(r), 1, "the slot %s exists", db->slot);
    unsigned hi = 0, lo = 0;
    if (!PQgetisnull(r, 0, 0))
        sscanf(PQgetvalue(r, 0, 0), "%X/%X", &hi, &lo);
    PQclear(r);
    return (uint64_t)hi << 32 | lo;
}

Test(ingest_faults, kill_9_while_streaming_loses_and_doubles_nothing, .timeout = 600)
{
    struct taxi_db db;
    taxi_db_create(&db, NULL, 2000);
    char log[8192];
    cr_assert_eq(taxi_ingest_once(&db, log, sizeof log), 0, "%s", log);
    uint64_t seed = 777;
    int kills = 0;
    for (int round = 0; round < 12; round++) {
        taxi_ingest_start(&db, NULL);
        /* Let it reach streaming, then change things and kill it somewhere
         * between receiving, applying and committing. */
        usleep(150000);
        int batches = 1 + (int)(seed % 3);
        for (int b = 0; b < batches; b++) {
            taxi_random_batch(&db);
            taxi_db_add_trips(&db, 300, (double)(seed % 1000) / 1000.0);
            seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
            usleep((useconds_t)((seed >> 33) % 60000));
        }
        taxi_ingest_kill(&db);
        kills++;
        uint64_t stored = oracle_store_position(db.store), confirmed = slot_confirmed(&db);
        cr_assert_leq(confirmed, stored,
                      "round %d: the slot confirmed %llX, past the store's %llX", round,
                      (unsigned long long)confirmed, (unsigned long long)stored);
    }
    cr_assert_geq(kills, 10);
    taxi_ingest_start(&db, NULL);
    taxi_check(&db, "after 12 kill -9 and restarts");
    taxi_ingest_stop(&db);
    taxi_db_destroy(&db);
}

Test(ingest_faults, postgresql_restart_while_following, .timeout = 600)
{
    struct pgtmp pg;
    char err[512];
    cr_assert_eq(pgtmp_start(&pg, NULL, err, sizeof err), 0, "%s", err);
    struct taxi_db db;
    taxi_db_create(&db, pgtmp_conninfo(&pg), 2000);
    taxi_ingest_start(&db, NULL);
    for (int b = 0; b < 3; b++)
        taxi_random_batch(&db);
    taxi_check(&db, "before the restart");
    for (int restart = 0; restart < 2; restart++) {
        cr_assert_eq(pgtmp_restart(&pg, err, sizeof err), 0, "%s", err);
        PQreset(db.pg);
        cr_assert_eq(PQstatus(db.pg), CONNECTION_OK, "%s", PQerrorMessage(db.pg));
        taxi_exec(db.pg, "SET synchronous_commit = on");
        for (int b = 0; b < 3; b++)
            taxi_random_batch(&db);
        char when[64];
        snprintf(when, sizeof when, "after PostgreSQL restart %d", restart + 1);
        taxi_check(&db, when);
    }
    taxi_ingest_stop(&db);
    taxi_db_destroy(&db);
    pgtmp_stop(&pg);
}

Test(ingest_faults, a_dropped_slot_stops_ingest_with_a_clear_message, .timeout = 120)
{
    struct taxi_db db;
    taxi_db_create(&db, NULL, 300);
    char log[8192];
    cr_assert_eq(taxi_ingest_once(&db, log, sizeof log), 0, "%s", log);
    /* The walsender of the ingest that just exited may hold the slot a
     * moment longer: wait until the slot is free, then drop it. */
    for (int i = 0; i < 200; i++) {
        PGresult *r = PQexecParams(db.pg, "SELECT active FROM pg_replication_slots WHERE slot_name = $1",
                                   1, NULL, (const char *const[]){db.slot}, NULL, NULL, 0);
        bool active = PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) == 1 &&
                      strcmp(PQgetvalue(r, 0, 0), "t") == 0;
        PQclear(r);
        if (!active)
            break;
        usleep(50 * 1000);
    }
    taxi_exec(db.pg, "SELECT pg_drop_replication_slot('%s')", db.slot);
    int rc = taxi_ingest_once(&db, log, sizeof log);
    cr_assert_neq(rc, 0);
    cr_assert(strstr(log, "does not exist any more") && strstr(log, "--rebuild"), "%s", log);
    taxi_db_destroy(&db);
}

Test(ingest_faults, plan_names_what_is_missing, .timeout = 120)
{
    struct taxi_db db;
    taxi_db_create(&db, NULL, 10);
    taxi_exec(db.pg, "ALTER TABLE yellow_trips RENAME COLUMN fare_amount TO fare");
    char cmd[2048], out[8192];
    snprintf(cmd, sizeof cmd, "%s plan --source '%s' --views %s/bench/taxi_views.sql 2>&1",
             STRAUM_INGEST_BIN, db.conninfo, STRAUM_SOURCE_DIR);
    FILE *p = popen(cmd, "r");
    size_t n = fread(out, 1, sizeof out - 1, p);
    out[n] = '\0';
    cr_assert_eq(WEXITSTATUS(pclose(p)), 2, "%s", out);
    cr_assert(strstr(out, "column \"fare_amount\" does not exist in table \"public\".\"yellow_trips\""),
              "%s", out);
    taxi_exec(db.pg, "ALTER TABLE yellow_trips RENAME COLUMN fare TO fare_amount;"
                     "ALTER TABLE yellow_trips REPLICA IDENTITY DEFAULT");
    p = popen(cmd, "r");
    n = fread(out, 1, sizeof out - 1, p);
    out[n] = '\0';
    cr_assert_eq(WEXITSTATUS(pclose(p)), 1, "%s", out);
    cr_assert(strstr(out, "CREATE PUBLICATION \"straum\" FOR TABLE \"public\".\"yellow_trips\", "
                          "\"public\".\"taxi_zones\";"), "%s", out);
    cr_assert(strstr(out, "FIX  \"public\".\"yellow_trips\" has REPLICA IDENTITY FULL"), "%s", out);
    cr_assert(strstr(out, "ok   wal_level = logical"), "%s", out);
    taxi_db_destroy(&db);
}

Test(ingest_faults, column_type_changes_are_followed_or_stop_ingest, .timeout = 180)
{
    struct taxi_db db;
    taxi_db_create(&db, NULL, 300);
    char log[8192];
    cr_assert_eq(taxi_ingest_once(&db, log, sizeof log), 0, "%s", log);
    taxi_ingest_start(&db, NULL);
    /* smallint to integer: the same codes, so ingest follows it */
    taxi_exec(db.pg, "ALTER TABLE yellow_trips ALTER COLUMN payment_type TYPE integer");
    taxi_db_add_trips(&db, 50, 0.3);
    taxi_check(&db, "after payment_type became integer");
    /* numeric to double precision: sums would change meaning; ingest stops */
    uint64_t before = oracle_store_position(db.store);
    taxi_exec(db.pg, "ALTER TABLE yellow_trips ALTER COLUMN fare_amount TYPE double precision");
    taxi_db_add_trips(&db, 5, 0.4);
    int status = 0;
    for (int i = 0; i < 300 && waitpid(db.ingest, &status, WNOHANG) == 0; i++)
        usleep(100000);
    cr_assert(WIFEXITED(status) && WEXITSTATUS(status) != 0,
              "ingest stops on a type change it cannot follow (status %d)", status);
    db.ingest = 0;
    cr_assert_geq(oracle_store_position(db.store), before, "the store keeps its last state");
    int rc = taxi_ingest_once(&db, log, sizeof log);
    cr_assert_neq(rc, 0);
    cr_assert(strstr(log, "fare_amount") && strstr(log, "--rebuild"), "%s", log);
    taxi_db_destroy(&db);
}
