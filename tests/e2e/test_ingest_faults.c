/* test_ingest_faults.c -- straum-ingest survives what production does to it:
 * kill -9 at random moments while streaming (each time restarted), and
 * PostgreSQL restarting under it. At the end every cell equals PostgreSQL,
 * and the slot is never told a position the store does not hold. What it
 * cannot follow -- a dropped slot, publication or table, a table taken out
 * of the publication, a column type whose values would change meaning --
 * stops it with a message saying what happened and what to run, and the
 * store keeps its last consistent state (it verifies, and equals
 * PostgreSQL as it was). */
#include "tests/e2e/oracle.h"
#include "tests/e2e/taxi_db.h"
#include "tests/kit/pgtmp.h"

#include <criterion/criterion.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

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
        uint64_t stored = oracle_store_position(db.store), confirmed = taxi_slot_confirmed(&db);
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

/* Whether the file at path holds text. */
static bool log_has(const char *path, const char *text)
{
    char buf[16384] = "";
    FILE *f = fopen(path, "r");
    if (!f)
        return false;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    buf[n] = '\0';
    fclose(f);
    return strstr(buf, text) != NULL;
}

Test(ingest_faults, postgresql_down_at_start_is_waited_for, .timeout = 300)
{
    struct pgtmp pg;
    char err[512];
    cr_assert_eq(pgtmp_start(&pg, NULL, err, sizeof err), 0, "%s", err);
    struct taxi_db db;
    taxi_db_create(&db, pgtmp_conninfo(&pg), 1000);
    /* Down hard, every commit on disk first (the cluster runs without
     * synchronous commit). */
    taxi_exec(db.pg, "CHECKPOINT");
    pid_t pm = pgtmp_postmaster_pid(&pg);
    cr_assert_gt(pm, 0);
    kill(pm, SIGKILL);
    for (int i = 0; i < 500 && pgtmp_postmaster_pid(&pg) > 0; i++)
        usleep(20000);
    cr_assert_leq(pgtmp_postmaster_pid(&pg), 0, "the postmaster survived SIGKILL");

    char log[128];
    snprintf(log, sizeof log, "%s.log", db.store);
    int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    cr_assert_geq(fd, 0);
    db.ingest = taxi_ingest_spawn(&db, NULL, false, fd);
    close(fd);
    for (int i = 0; i < 100 && !log_has(log, "does not answer yet"); i++)
        usleep(50000);
    cr_assert(log_has(log, "does not answer yet"), "ingest says it waits for PostgreSQL");
    /* A retry (its own line), waited for with a bound: still running. */
    for (int i = 0; i < 600 && taxi_log_count(log, "does not answer yet") < 2; i++)
        usleep(50000);
    cr_assert_geq(taxi_log_count(log, "does not answer yet"), 2, "no retry in 30 s");
    cr_assert_eq(waitpid(db.ingest, NULL, WNOHANG), 0, "ingest waits instead of exiting");

    cr_assert_eq(pgtmp_restart(&pg, err, sizeof err), 0, "%s", err);
    PQreset(db.pg);
    cr_assert_eq(PQstatus(db.pg), CONNECTION_OK, "%s", PQerrorMessage(db.pg));
    taxi_exec(db.pg, "SET synchronous_commit = on");
    taxi_random_batch(&db);
    taxi_check(&db, "after PostgreSQL came up under a waiting ingest");
    taxi_ingest_stop(&db);

    /* What waiting cannot fix is reported at once: no such database. */
    struct taxi_db bad = db;
    const char *wrong_db = " dbname=straum_no_such_db";
    cr_assert_lt(strlen(db.conninfo) + strlen(wrong_db), sizeof bad.conninfo);
    strcat(bad.conninfo, wrong_db);
    fd = open(log, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    cr_assert_geq(fd, 0);
    pid_t pid = taxi_ingest_spawn(&bad, NULL, false, fd);
    close(fd);
    int status = 0, waited = 0;
    while (waitpid(pid, &status, WNOHANG) == 0 && waited++ < 200)
        usleep(50000);
    cr_assert_lt(waited, 200, "ingest must not wait for a database that does not exist");
    cr_assert(WIFEXITED(status) && WEXITSTATUS(status) != 0, "status %d", status);
    cr_assert(log_has(log, "straum_no_such_db") && !log_has(log, "does not answer yet"),
              "the error names the database, and nothing was retried");
    unlink(log);
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
    char out[8192];
    cr_assert_eq(taxi_plan(&db, out, sizeof out), 2, "%s", out);
    cr_assert(strstr(out, "column \"fare_amount\" does not exist in table \"public\".\"yellow_trips\""),
              "%s", out);
    taxi_exec(db.pg, "ALTER TABLE yellow_trips RENAME COLUMN fare TO fare_amount;"
                     "ALTER TABLE yellow_trips REPLICA IDENTITY DEFAULT");
    cr_assert_eq(taxi_plan(&db, out, sizeof out), 1, "%s", out);
    cr_assert(strstr(out, "CREATE PUBLICATION \"straum\" FOR TABLE \"public\".\"yellow_trips\", "
                          "\"public\".\"taxi_zones\";"), "%s", out);
    cr_assert(strstr(out, "FIX  \"public\".\"yellow_trips\" has REPLICA IDENTITY FULL"), "%s", out);
    cr_assert(strstr(out, "ok   wal_level = logical"), "%s", out);
    taxi_db_destroy(&db);
}

/* plan with a view whose FILTER holds the constant filter. */
static int plan_filter(struct taxi_db *db, const char *filter, char *out, size_t len)
{
    char path[] = "/tmp/straum-views-XXXXXX";
    int fd = mkstemp(path);
    cr_assert_geq(fd, 0);
    FILE *f = fdopen(fd, "w");
    fprintf(f,
            "CREATE VIEW picky WITH (buckets = '1 hour') AS\n"
            "SELECT date_bin('1 hour', t.pickup_at, timestamptz 'epoch') AS bucket,\n"
            "       count(*) FILTER (WHERE %s) AS n\n"
            "FROM public.yellow_trips AS t\n"
            "GROUP BY 1;\n",
            filter);
    fclose(f);
    int rc = taxi_plan_views(db, path, out, len);
    unlink(path);
    return rc;
}

/* A FILTER constant goes through PostgreSQL's input rules for its column
 * (store_code_of_value): one PostgreSQL refuses, or one no stored value
 * equals, fails plan naming the view, the column, and the constant's line
 * and column; the forms PostgreSQL reads pass. */
Test(ingest_faults, plan_refuses_a_bad_filter_constant_with_its_place, .timeout = 120)
{
    struct taxi_db db;
    taxi_db_create(&db, NULL, 10);
    char out[8192];
    cr_assert_eq(plan_filter(&db, "t.payment_type = 'yes'", out, sizeof out), 2, "%s", out);
    cr_assert(strstr(out, "view \"picky\": FILTER on \"payment_type\" at line 3, column 48: "
                          "\"yes\" is not a smallint"),
              "%s", out);
    cr_assert_eq(plan_filter(&db, "t.fare_amount > 1.005", out, sizeof out), 2, "%s", out);
    cr_assert(strstr(out, "FILTER on \"fare_amount\" at line 3, column 47: 1.005 has more "
                          "decimals than the column keeps (2)"),
              "%s", out);
    int rc = plan_filter(&db, "t.payment_type IN (1, ' 2 ') AND t.fare_amount > 1e1", out,
                         sizeof out);
    cr_assert(rc != 2 && !strstr(out, "FILTER"), "%d %s", rc, out);
    taxi_db_destroy(&db);
}

/* straum-ingest plan --wal physical against db with the taxi views; its
 * exit status, stdout and stderr in out. */
static int plan_physical(struct taxi_db *db, char *out, size_t len)
{
    char cmd[2048];
    snprintf(cmd, sizeof cmd,
             "%s plan --wal physical --source '%s' --views '%s/bench/taxi_views.sql' 2>&1",
             STRAUM_INGEST_BIN, db->conninfo, STRAUM_SOURCE_DIR);
    FILE *p = popen(cmd, "r");
    cr_assert_not_null(p);
    size_t n = fread(out, 1, len - 1, p);
    out[n] = '\0';
    return WEXITSTATUS(pclose(p));
}

/* plan --wal physical checks what following the physical WAL needs, not
 * logical decoding's publication and replica identity: the shared
 * cluster (wal_level = logical, full_page_writes on, a superuser) is ready
 * with neither. What run --wal physical refuses at its start, plan shows
 * as a fix and run stops on, with the statement to run: an unlogged
 * table, a column added with a default its old rows do not store, a
 * partitioned table (whose partitions the message names). */
Test(ingest_faults, plan_and_run_wal_physical_refuse_what_the_wal_lacks, .timeout = 180)
{
    struct taxi_db db;
    taxi_db_create(&db, NULL, 10);
    taxi_exec(db.pg, "DROP PUBLICATION straum;"
                     "ALTER TABLE yellow_trips REPLICA IDENTITY DEFAULT;"
                     "ALTER TABLE taxi_zones REPLICA IDENTITY DEFAULT");
    char out[8192], log[8192];
    cr_assert_eq(plan_physical(&db, out, sizeof out), 0, "%s", out);
    cr_assert(strstr(out, "no publication and no replica identity to set up") &&
                  !strstr(out, "CREATE PUBLICATION") && !strstr(out, "FIX") &&
                  strstr(out, "ok   wal_level = logical") &&
                  strstr(out, "ok   full_page_writes = on") &&
                  strstr(out, "ok   \"public\".\"yellow_trips\" is a permanent table") &&
                  strstr(out, "ok   every table's rows decode from the WAL") &&
                  strstr(out, "Ready: straum-ingest run can start."),
              "%s", out);

    taxi_exec(db.pg, "ALTER TABLE yellow_trips SET UNLOGGED");
    cr_assert_eq(plan_physical(&db, out, sizeof out), 1, "%s", out);
    cr_assert(strstr(out, "FIX  \"public\".\"yellow_trips\" is a permanent table (not unlogged): "
                          "an unlogged table's changes are not in the WAL: ALTER TABLE "
                          "\"public\".\"yellow_trips\" SET LOGGED"),
              "%s", out);
    const char *physical[] = {"--wal", "physical", NULL};
    cr_assert_neq(taxi_ingest_once_with(&db, physical, log, sizeof log), 0, "%s", log);
    cr_assert(strstr(log, "\\\"public\\\".\\\"yellow_trips\\\" is unlogged") &&
                  strstr(log, "SET LOGGED"),
              "%s", log);

    /* A column added with a DEFAULT leaves the older rows without it
     * (atthasmissing): one the views do not read is taken as NULL there and
     * never used; one they read is refused until VACUUM FULL writes it
     * into every row. */
    taxi_exec(db.pg, "ALTER TABLE yellow_trips SET LOGGED;"
                     "ALTER TABLE yellow_trips ADD COLUMN note int DEFAULT 7");
    cr_assert_eq(plan_physical(&db, out, sizeof out), 0, "%s", out);
    taxi_exec(db.pg, "ALTER TABLE yellow_trips DROP COLUMN tip_amount;"
                     "ALTER TABLE yellow_trips ADD COLUMN tip_amount numeric(9,2) DEFAULT 1");
    cr_assert_eq(plan_physical(&db, out, sizeof out), 1, "%s", out);
    cr_assert(strstr(out, "FIX  every table's rows decode from the WAL") &&
                  strstr(out, "tip_amount") && strstr(out, "VACUUM FULL"),
              "%s", out);
    taxi_exec(db.pg, "VACUUM FULL yellow_trips");
    cr_assert_eq(plan_physical(&db, out, sizeof out), 0, "%s", out);

    taxi_exec(db.pg, "ALTER TABLE yellow_trips RENAME TO trips_plain;"
                     "CREATE TABLE yellow_trips (LIKE trips_plain) PARTITION BY RANGE (pickup_at);"
                     "CREATE TABLE trips_q1 PARTITION OF yellow_trips"
                     " FOR VALUES FROM ('2024-01-01') TO ('2024-04-01');"
                     "CREATE TABLE trips_rest PARTITION OF yellow_trips DEFAULT;"
                     "INSERT INTO yellow_trips SELECT * FROM trips_plain");
    cr_assert_eq(plan_physical(&db, out, sizeof out), 1, "%s", out);
    cr_assert(strstr(out, "FIX  \"public\".\"yellow_trips\" is a plain table, not partitioned") &&
                  strstr(out, "--wal logical"),
              "%s", out);
    cr_assert_neq(taxi_ingest_once_with(&db, physical, log, sizeof log), 0, "%s", log);
    cr_assert(strstr(log, "is partitioned") && strstr(log, "public.trips_q1, public.trips_rest") &&
                  strstr(log, "--wal logical"),
              "%s", log);
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

/* A row the store cannot hold stops the initial load in the middle of its
 * COPY with a message naming what is wrong. (The COPY still sending used to
 * leave libpq in COPY state, and ingest waited for its result forever.) */
Test(ingest_faults, a_row_the_store_cannot_hold_stops_the_load_mid_copy, .timeout = 120)
{
    struct taxi_db db;
    taxi_db_create(&db, NULL, 2000);
    /* Unconstrained numeric: Straum keeps 6 decimals, and every fare has 7. */
    taxi_exec(db.pg, "ALTER TABLE yellow_trips ALTER COLUMN fare_amount TYPE numeric;"
                     "UPDATE yellow_trips SET fare_amount = fare_amount + 0.0000001");
    char log[8192];
    int rc = taxi_ingest_once(&db, log, sizeof log);
    cr_assert_neq(rc, 0, "%s", log);
    cr_assert(strstr(log, "more than 6 decimals"), "%s", log);
    taxi_db_destroy(&db);
}

/* ---- Upstream changes Straum cannot follow ------------------------------------------ */

/* A following straum-ingest (as taxi_ingest_start) with stderr into log. */
static void ingest_start_logged(struct taxi_db *db, const char *log)
{
    char views[4096];
    snprintf(views, sizeof views, "%s/bench/taxi_views.sql", STRAUM_SOURCE_DIR);
    int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    cr_assert_geq(fd, 0);
    pid_t pid = fork();
    cr_assert_geq(pid, 0);
    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        dup2(fd, 2);
        execl(STRAUM_INGEST_BIN, STRAUM_INGEST_BIN, "run", "--source", db->conninfo, "--views",
              views, "--store", db->store, "--slot", db->slot, "--commit-interval", "5ms",
              (char *)NULL);
        _exit(127);
    }
    close(fd);
    db->ingest = pid;
}

/* Waits for the following ingest to stop by itself; its exit status. */
static int ingest_wait_stop(struct taxi_db *db, int timeout_s)
{
    int status = 0;
    pid_t got = 0;
    for (int i = 0; i < timeout_s * 10 && (got = waitpid(db->ingest, &status, WNOHANG)) == 0; i++)
        usleep(100000);
    cr_assert_eq(got, db->ingest, "ingest did not stop within %d s", timeout_s);
    db->ingest = 0;
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

/* Log lines are logfmt: quotes inside msg="..." come escaped. */
static void unescape_quotes(char *s)
{
    char *o = s;
    for (; *s; s++)
        if (!(s[0] == '\\' && s[1] == '"'))
            *o++ = *s;
    *o = '\0';
}

static void read_text(const char *path, char *out, size_t len)
{
    FILE *f = fopen(path, "r");
    size_t n = f ? fread(out, 1, len - 1, f) : 0;
    out[n] = '\0';
    if (f)
        fclose(f);
    unescape_quotes(out);
}

/* The store verifies, and equals PostgreSQL once restore (SQL undoing the
 * upstream change, run inside a transaction rolled back afterwards) has
 * put back what the store last saw. */
static void check_last_state(struct taxi_db *db, const char *restore, const char *when)
{
    char cmd[4400], out[8192], diff[4096];
    snprintf(cmd, sizeof cmd, "%s --store %s verify 2>&1", STRAUM_DUMP_BIN, db->store);
    FILE *p = popen(cmd, "r");
    size_t n = fread(out, 1, sizeof out - 1, p);
    out[n] = '\0';
    int status = pclose(p);
    cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "%s: straum-dump verify: %s", when,
              out);
    oracle_exec(db->pg, "BEGIN");
    if (restore)
        oracle_exec(db->pg, restore);
    int rc = oracle_compare(db->pg, db->store, diff, sizeof diff);
    oracle_exec(db->pg, "ROLLBACK");
    cr_assert_eq(rc, 0, "%s: the store is not PostgreSQL's last state it saw: %s", when, diff);
}

struct upstream_case {
    const char *name;
    const char *before;   /* SQL run before the change (a copy to restore from), or NULL */
    const char *change;   /* what happens upstream */
    const char *after;    /* a change made after it, which must not reach the store, or NULL */
    const char *restore;  /* undoes change and after, in a transaction rolled back */
    const char *says[5];  /* in the message of the follower that stops; NULL-ended */
    const char *restart;  /* in the message of a restart */
};

static void upstream_change_stops_ingest(const struct upstream_case *c)
{
    struct taxi_db db;
    taxi_db_create(&db, NULL, 300);
    char log[8192], path[128];
    cr_assert_eq(taxi_ingest_once(&db, log, sizeof log), 0, "%s", log);
    snprintf(path, sizeof path, "%s.log", db.store);
    ingest_start_logged(&db, path);
    for (int b = 0; b < 3; b++)
        taxi_random_batch(&db);
    taxi_check(&db, c->name);
    if (c->before)
        taxi_exec(db.pg, "%s", c->before);
    taxi_exec(db.pg, "%s", c->change);
    if (c->after)
        taxi_exec(db.pg, "%s", c->after);
    int status = ingest_wait_stop(&db, 30);
    read_text(path, log, sizeof log);
    cr_assert_eq(status, 1, "%s: ingest exits 1 (status %d): %s", c->name, status, log);
    const char *line = strstr(log, "level=error");
    cr_assert_not_null(line, "%s: an error line: %s", c->name, log);
    for (int i = 0; c->says[i]; i++)
        cr_assert(strstr(line, c->says[i]), "%s: the message says \"%s\": %s", c->name,
                  c->says[i], line);
    check_last_state(&db, c->restore, c->name);
    /* Restarted, it refuses the same way and changes nothing. */
    cr_assert_eq(taxi_ingest_once(&db, log, sizeof log), 1, "%s: %s", c->name, log);
    unescape_quotes(log);
    cr_assert(strstr(log, c->restart) && strstr(log, "--rebuild"), "%s, restarted: %s", c->name,
              log);
    check_last_state(&db, c->restore, c->name);
    unlink(path);
    taxi_db_destroy(&db);
}

Test(ingest_faults, a_dropped_publication_stops_ingest_with_what_to_run, .timeout = 180)
{
    static const struct upstream_case c = {
        "a dropped publication", NULL, "DROP PUBLICATION straum",
        "SELECT straum_generate_trips(50, 0.7, 8000000)",
        "DELETE FROM yellow_trips WHERE id > 8000000",
        {"the publication \"straum\" does not exist any more", "lost to Straum",
         "keeps serving its state as of", "rerun with --rebuild"},
        "the publication \"straum\" does not exist any more"};
    upstream_change_stops_ingest(&c);
}

Test(ingest_faults, a_dropped_publication_then_rebuild_follows_again, .timeout = 180)
{
    /* What the message says to run works. */
    struct taxi_db db;
    taxi_db_create(&db, NULL, 300);
    char log[8192];
    cr_assert_eq(taxi_ingest_once(&db, log, sizeof log), 0, "%s", log);
    taxi_exec(db.pg, "DROP PUBLICATION straum");
    taxi_db_add_trips(&db, 40, 0.2);
    cr_assert_eq(taxi_ingest_once(&db, log, sizeof log), 1, "%s", log);
    taxi_exec(db.pg, "CREATE PUBLICATION straum FOR TABLE yellow_trips, taxi_zones");
    const char *const rebuild[] = {"--rebuild", NULL};
    cr_assert_eq(taxi_ingest_once_with(&db, rebuild, log, sizeof log), 0, "%s", log);
    taxi_ingest_start(&db, NULL);
    taxi_random_batch(&db);
    taxi_check(&db, "rebuilt after the publication came back");
    taxi_ingest_stop(&db);
    taxi_db_destroy(&db);
}

Test(ingest_faults, a_dropped_fact_table_stops_ingest_with_what_to_run, .timeout = 180)
{
    static const struct upstream_case c = {
        "a dropped fact table", "CREATE TABLE trips_saved AS TABLE yellow_trips",
        "DROP TABLE yellow_trips", NULL, "ALTER TABLE trips_saved RENAME TO yellow_trips",
        {"table \"public\".\"yellow_trips\" was dropped upstream",
         "as the fact table of view \"trips\"", "keeps serving its state as of",
         "rerun with --rebuild"},
        "table \"public\".\"yellow_trips\" does not exist"};
    upstream_change_stops_ingest(&c);
}

Test(ingest_faults, a_dropped_dim_table_stops_ingest_with_what_to_run, .timeout = 180)
{
    static const struct upstream_case c = {
        "a dropped dim table", "CREATE TABLE zones_saved AS TABLE taxi_zones",
        "DROP TABLE taxi_zones", NULL, "ALTER TABLE zones_saved RENAME TO taxi_zones",
        {"table \"public\".\"taxi_zones\" was dropped upstream", "as a dim of view \"trips\"",
         "keeps serving its state as of", "rerun with --rebuild"},
        "table \"public\".\"taxi_zones\" does not exist"};
    upstream_change_stops_ingest(&c);
}

Test(ingest_faults, a_table_taken_out_of_the_publication_stops_ingest, .timeout = 180)
{
    static const struct upstream_case c = {
        "a table out of the publication",
        "CREATE TABLE taxi_zones_orig AS SELECT zone FROM taxi_zones WHERE location_id = 1",
        "ALTER PUBLICATION straum DROP TABLE taxi_zones",
        "UPDATE taxi_zones SET zone = 'Unseen' WHERE location_id = 1",
        "UPDATE taxi_zones t SET zone = z.zone FROM (SELECT zone FROM taxi_zones_orig) z "
        "WHERE t.location_id = 1",
        {"table \"public\".\"taxi_zones\" is not in the publication \"straum\" any more",
         "ALTER PUBLICATION \"straum\" ADD TABLE \"public\".\"taxi_zones\"",
         "rerun with --rebuild"},
        "is not in the publication \"straum\" any more"};
    upstream_change_stops_ingest(&c);
}
