/* taxi_db.c -- see taxi_db.h. */
#include "tests/e2e/taxi_db.h"

#include "tests/e2e/oracle.h"
#include "tests/pg/pgtest.h"

#include <criterion/criterion.h>
#include <fcntl.h>
#include <ftw.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

char *taxi_read_source(const char *relpath)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", STRAUM_SOURCE_DIR, relpath);
    FILE *f = fopen(path, "rb");
    cr_assert_not_null(f, "cannot read %s", path);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = malloc((size_t)n + 1);
    cr_assert_eq(fread(buf, 1, (size_t)n, f), (size_t)n);
    buf[n] = '\0';
    fclose(f);
    return buf;
}

static void copy_zones(PGconn *pg)
{
    PGresult *r = PQexec(pg, "COPY taxi_zones FROM STDIN (FORMAT csv, HEADER true)");
    cr_assert_eq(PQresultStatus(r), PGRES_COPY_IN, "%s", PQerrorMessage(pg));
    PQclear(r);
    char *csv = taxi_read_source("bench/data/taxi_zone_lookup.csv");
    cr_assert_eq(PQputCopyData(pg, csv, (int)strlen(csv)), 1);
    cr_assert_eq(PQputCopyEnd(pg, NULL), 1);
    r = PQgetResult(pg);
    cr_assert_eq(PQresultStatus(r), PGRES_COMMAND_OK, "%s", PQerrorMessage(pg));
    PQclear(r);
    free(csv);
}

static void new_database(const char *cluster, char *out, size_t len)
{
    if (!cluster) {
        cr_assert_eq(pgtest_new_db(out, len), 0);
        return;
    }
    PGconn *c = PQconnectdb(cluster);
    cr_assert_eq(PQstatus(c), CONNECTION_OK, "%s", PQerrorMessage(c));
    char sql[128], name[64];
    snprintf(name, sizeof name, "taxi_%d_%ld", getpid(), (long)time(NULL));
    snprintf(sql, sizeof sql, "CREATE DATABASE %s", name);
    oracle_exec(c, sql);
    PQfinish(c);
    snprintf(out, len, "%s dbname=%s", cluster, name);
}

void taxi_db_create(struct taxi_db *db, const char *cluster_conninfo, int trips)
{
    memset(db, 0, sizeof *db);
    new_database(cluster_conninfo, db->conninfo, sizeof db->conninfo);
    db->pg = PQconnectdb(db->conninfo);
    cr_assert_eq(PQstatus(db->pg), CONNECTION_OK, "%s", PQerrorMessage(db->pg));
    /* Commits must survive a server crash in the restart tests. */
    oracle_exec(db->pg, "SET synchronous_commit = on");
    char *schema = taxi_read_source("bench/taxi_schema.sql");
    char *gen = taxi_read_source("bench/taxi_generate.sql");
    oracle_exec(db->pg, schema);
    oracle_exec(db->pg, gen);
    free(schema);
    free(gen);
    copy_zones(db->pg);
    db->next_id = 1;
    taxi_db_add_trips(db, trips, 0.42);
    oracle_exec(db->pg, "ALTER TABLE yellow_trips REPLICA IDENTITY FULL;"
                        "ALTER TABLE taxi_zones REPLICA IDENTITY FULL;"
                        "CREATE PUBLICATION straum FOR TABLE yellow_trips, taxi_zones");
    snprintf(db->slot, sizeof db->slot, "straum_%d_%ld", getpid(), (long)(time(NULL) % 100000));
    strcpy(db->store, "/tmp/straum-ingest-XXXXXX");
    cr_assert_not_null(mkdtemp(db->store));
}

int taxi_plan(struct taxi_db *db, char *out, size_t len)
{
    char views[1024];
    snprintf(views, sizeof views, "%s/bench/taxi_views.sql", STRAUM_SOURCE_DIR);
    return taxi_plan_views(db, views, out, len);
}

int taxi_plan_views(struct taxi_db *db, const char *views, char *out, size_t len)
{
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "%s plan --source '%s' --views '%s' 2>&1", STRAUM_INGEST_BIN,
             db->conninfo, views);
    FILE *p = popen(cmd, "r");
    cr_assert_not_null(p);
    size_t n = fread(out, 1, len - 1, p);
    out[n] = '\0';
    return WEXITSTATUS(pclose(p));
}

void taxi_db_add_trips(struct taxi_db *db, int n, double seed)
{
    char sql[256];
    snprintf(sql, sizeof sql, "SELECT straum_generate_trips(%d, %f, %llu)", n, seed,
             (unsigned long long)db->next_id);
    oracle_exec(db->pg, sql);
    db->next_id += (uint64_t)n + 1;
}

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)flag;
    (void)ftw;
    return remove(path);
}

void taxi_db_destroy(struct taxi_db *db)
{
    if (db->ingest)
        taxi_ingest_kill(db);
    char sql[160];
    snprintf(sql, sizeof sql,
             "SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots "
             "WHERE slot_name = '%s'", db->slot);
    PQclear(PQexec(db->pg, sql));
    PQfinish(db->pg);
    nftw(db->store, rm_entry, 8, FTW_DEPTH | FTW_PHYS);
}

pid_t taxi_ingest_spawn(struct taxi_db *db, const char *const *extra, bool once, int err_fd)
{
    char views[4096];
    snprintf(views, sizeof views, "%s/bench/taxi_views.sql", STRAUM_SOURCE_DIR);
    const char *argv[32] = {STRAUM_INGEST_BIN, "run", "--source", db->conninfo, "--views", views,
                            "--store", db->store, "--slot", db->slot, "--commit-interval", "5ms"};
    int n = 12;
    if (!db->default_nice) { /* see taxi_db.h */
        argv[n++] = "--nice";
        argv[n++] = "0";
    }
    if (once)
        argv[n++] = "--exit-when-caught-up";
    for (int i = 0; extra && extra[i] && n < 30; i++)
        argv[n++] = extra[i];
    argv[n] = NULL;
    pid_t pid = fork();
    cr_assert_geq(pid, 0);
    if (pid == 0) {
        /* A failed assertion ends the test process without cleanup: the
         * follower must not outlive it. */
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (err_fd >= 0)
            dup2(err_fd, 2);
        execv(argv[0], (char *const *)argv);
        _exit(127);
    }
    return pid;
}

void taxi_ingest_start(struct taxi_db *db, const char *const *extra)
{
    cr_assert_eq(db->ingest, 0, "ingest already running");
    db->ingest = taxi_ingest_spawn(db, extra, false, -1);
}

void taxi_ingest_stop(struct taxi_db *db)
{
    int status;
    kill(db->ingest, SIGTERM);
    waitpid(db->ingest, &status, 0);
    db->ingest = 0;
    cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0,
              "straum-ingest did not stop cleanly on SIGTERM (status %d)", status);
}

void taxi_ingest_kill(struct taxi_db *db)
{
    kill(db->ingest, SIGKILL);
    waitpid(db->ingest, NULL, 0);
    db->ingest = 0;
}

int taxi_ingest_once(struct taxi_db *db, char *log, size_t loglen)
{
    return taxi_ingest_once_with(db, NULL, log, loglen);
}

int taxi_ingest_once_with(struct taxi_db *db, const char *const *extra, char *log, size_t loglen)
{
    char path[] = "/tmp/straum-ingest-log-XXXXXX";
    int fd = mkstemp(path);
    cr_assert_geq(fd, 0);
    pid_t pid = taxi_ingest_spawn(db, extra, true, fd);
    int status;
    waitpid(pid, &status, 0);
    if (log) {
        lseek(fd, 0, SEEK_SET);
        ssize_t n = read(fd, log, loglen - 1);
        log[n > 0 ? n : 0] = '\0';
    }
    close(fd);
    unlink(path);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

void taxi_check(struct taxi_db *db, const char *when)
{
    uint64_t target = oracle_committed_lsn(db->pg);
    if (db->ingest)
        cr_assert(oracle_wait_position(db->store, target, 60000),
                  "%s: the store did not catch up with PostgreSQL within 60 s", when);
    char diff[4096];
    int rc = oracle_compare(db->pg, db->store, diff, sizeof diff);
    cr_assert_eq(rc, 0, "%s: %s", when, diff);
}

/* ---- Random change batches ---------------------------------------------------- */

static uint64_t rng = 12345;

static int rnd(int n)
{
    rng = rng * 6364136223846793005ULL + 1442695040888963407ULL;
    return (int)((rng >> 33) % (uint64_t)n);
}

void taxi_exec(PGconn *pg, const char *fmt, ...)
{
    char sql[4096];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(sql, sizeof sql, fmt, ap);
    va_end(ap);
    oracle_exec(pg, sql);
}

void taxi_insert_trips(PGconn *pg, long long first, int n)
{
    oracle_execf(pg,
                 "INSERT INTO yellow_trips SELECT " TAXI_TRIP_OF_G
                 " FROM generate_series(%lld::bigint, %lld::bigint) g",
                 first, first + n - 1);
}

/* One random committed change batch; returns what it did. */
const char *taxi_random_batch(struct taxi_db *db)
{
    PGconn *pg = db->pg;
    int lo = 1 + rnd((int)db->next_id), hi = lo + 20 + rnd(200);
    switch (rnd(12)) {
    case 0:
        taxi_db_add_trips(db, 50 + rnd(300), (double)rnd(1000) / 1000.0);
        return "inserts";
    case 1:
        taxi_exec(pg, "UPDATE yellow_trips SET pu_location_id = 1 + (id * 7) %% 270, "
                     "payment_type = (id %% 6) WHERE id BETWEEN %d AND %d", lo, hi);
        return "key updates";
    case 2:
        taxi_exec(pg, "UPDATE yellow_trips SET fare_amount = fare_amount * 2 - 3.15, "
                     "tip_amount = tip_amount + 0.5, trip_distance = trip_distance + 1 "
                     "WHERE id BETWEEN %d AND %d", lo, hi);
        return "measure updates";
    case 3:
        taxi_exec(pg, "UPDATE yellow_trips SET pickup_at = pickup_at + interval '%d minutes' "
                     "WHERE id BETWEEN %d AND %d", 7 + rnd(5000), lo, hi);
        return "bucket updates";
    case 4:
        taxi_exec(pg, "DELETE FROM yellow_trips WHERE id BETWEEN %d AND %d", lo, hi);
        return "deletes";
    case 5:
        taxi_exec(pg, "UPDATE taxi_zones SET zone = zone || ' (renamed)' WHERE location_id = %d;"
                     "UPDATE taxi_zones SET borough = 'Queens' WHERE location_id = %d",
                 1 + rnd(265), 1 + rnd(265));
        return "zone rename and borough move";
    case 6:
        taxi_exec(pg, "DELETE FROM taxi_zones WHERE location_id = %d", 1 + rnd(265));
        return "zone delete";
    case 7:
        taxi_exec(pg, "INSERT INTO taxi_zones VALUES (%d, 'Nowhere', 'New zone', 'Boro Zone') "
                     "ON CONFLICT (location_id) DO UPDATE SET borough = 'Staten Island'",
                 260 + rnd(45));
        return "zone insert or upsert";
    case 8:
        taxi_exec(pg, "UPDATE yellow_trips SET fare_amount = NULL WHERE id BETWEEN %d AND %d;"
                     "UPDATE yellow_trips SET pu_location_id = NULL, payment_type = NULL "
                     "WHERE id BETWEEN %d AND %d", lo, lo + 10, hi, hi + 10);
        return "NULLs";
    case 9:
        taxi_exec(pg, "BEGIN; DELETE FROM yellow_trips WHERE id < %d; "
                     "UPDATE taxi_zones SET location_id = location_id + 1000 WHERE location_id = %d;"
                     "COMMIT", lo, 1 + rnd(265));
        return "multi-statement transaction with a dim key change";
    case 10:
        taxi_exec(pg, "BEGIN; INSERT INTO yellow_trips SELECT id + 5000000, vendor_id, pickup_at, "
                     "dropoff_at, passenger_count, trip_distance, pu_location_id, do_location_id, "
                     "payment_type, fare_amount, tip_amount, total_amount FROM yellow_trips "
                     "WHERE id BETWEEN %d AND %d ON CONFLICT DO NOTHING; SAVEPOINT s; "
                     "DELETE FROM yellow_trips; "
                     "ROLLBACK TO s; UPDATE yellow_trips SET payment_type = 4 WHERE id = %d; "
                     "COMMIT", lo, hi, lo);
        return "a rolled-back subtransaction";
    default:
        taxi_exec(pg, "BEGIN; DELETE FROM yellow_trips; UPDATE taxi_zones SET borough = NULL; "
                     "ROLLBACK");
        return "a rolled-back transaction";
    }
}

uint64_t taxi_slot_confirmed(struct taxi_db *db)
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

int taxi_log_count(const char *path, const char *text)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return 0;
    char *buf = malloc((1 << 20) + 1);
    cr_assert_not_null(buf);
    size_t n = fread(buf, 1, 1 << 20, f);
    buf[n] = '\0';
    fclose(f);
    int count = 0;
    for (const char *at = strstr(buf, text); at; at = strstr(at + 1, text))
        count++;
    free(buf);
    return count;
}
