/* taxi_db.h -- a taxi database for tests and a straum-ingest process to
 * follow it: a fresh database with the benchmark's tables, the real zone
 * table, generated trips and the publication; ingest started, stopped and
 * killed as a child process. */
#ifndef STRAUM_TESTS_TAXI_DB_H
#define STRAUM_TESTS_TAXI_DB_H

#include <libpq-fe.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

struct taxi_db {
    char conninfo[512];
    char store[64];       /* a fresh temp dir */
    char slot[64];
    PGconn *pg;
    pid_t ingest;         /* 0 when not running */
    uint64_t next_id;
    /* Ingest runs at --nice 0 unless this is set (its default is 10): a
     * test bounds how long ingest takes to catch up, and at nice 10 on a
     * machine that runs other work at nice 0 ingest gets a tenth of their
     * share of the CPU, so a loaded CI machine (an ASan tree beside other
     * builds) starves it past any bound. Set for the test of the default. */
    bool default_nice;
};

/* Creates the database (on the cluster of conninfo, or the shared test
 * cluster when NULL), loads zones and `trips` generated trips, publishes
 * both tables with REPLICA IDENTITY FULL. */
void taxi_db_create(struct taxi_db *db, const char *cluster_conninfo, int trips);
void taxi_db_destroy(struct taxi_db *db);

/* A trip whose every column is a function of its id g (NULLs in some), so
 * that the same rows go in whichever way they are inserted: the select list
 * of an INSERT INTO yellow_trips over a g, for printf-formatted SQL
 * (oracle_execf, taxi_exec): its % are doubled. */
#define TAXI_TRIP_OF_G                                                                             \
    "g, 1 + g %% 2, timestamptz '2024-02-01 00:00:00+00' + (g %% 4000) * interval '37 minutes', "  \
    "timestamptz '2024-02-01 00:00:00+00' + (g %% 4000) * interval '37 minutes' + interval "       \
    "'19 minutes', CASE WHEN g %% 11 = 0 THEN NULL ELSE 1 + g %% 4 END, (g %% 900) / 37.0, "       \
    "1 + (g * 7) %% 270, 1 + (g * 13) %% 265, g %% 6, CASE WHEN g %% 29 = 0 THEN NULL ELSE "       \
    "round(((g %% 700) - 40) / 9.0, 2) END, (g %% 300) / 100.0, (g %% 500) / 10.0"

/* Trips first..first+n-1 (TAXI_TRIP_OF_G) in one INSERT ... SELECT over
 * generate_series; fails the test on an error. */
void taxi_insert_trips(PGconn *pg, long long first, int n);

/* Inserts n more generated trips. */
void taxi_db_add_trips(struct taxi_db *db, int n, double seed);

/* Starts straum-ingest run on the database (extra args appended). */
/* straum-ingest run on the database (--exit-when-caught-up when once, then
 * extra, NULL-terminated), its stderr on err_fd unless -1; not tracked in
 * db->ingest. */
pid_t taxi_ingest_spawn(struct taxi_db *db, const char *const *extra, bool once, int err_fd);
void taxi_ingest_start(struct taxi_db *db, const char *const *extra);
/* SIGTERM and wait: asserts a clean exit. */
void taxi_ingest_stop(struct taxi_db *db);
/* SIGKILL and wait. */
void taxi_ingest_kill(struct taxi_db *db);
/* Runs straum-ingest with --exit-when-caught-up and waits; returns its exit
 * status, stderr captured into log (if not NULL). */
int taxi_ingest_once(struct taxi_db *db, char *log, size_t loglen);
/* The same with extra arguments (NULL-terminated). */
int taxi_ingest_once_with(struct taxi_db *db, const char *const *extra, char *log, size_t loglen);

/* Runs straum-ingest plan against db's database and the taxi views;
 * returns its exit status, stdout and stderr in out. */
int taxi_plan(struct taxi_db *db, char *out, size_t len);
/* The same with another views file. */
int taxi_plan_views(struct taxi_db *db, const char *views, char *out, size_t len);

/* One random committed change batch (deterministic sequence); returns a
 * short description of what it did. */
const char *taxi_random_batch(struct taxi_db *db);

/* A file of the source tree (relpath under it), malloc'd and NUL-ended;
 * fails the test when it cannot be read. */
char *taxi_read_source(const char *relpath);

/* Runs printf-formatted SQL; fails the test on an error. */
void taxi_exec(PGconn *pg, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* How many times text occurs in a log file (its first MiB); 0 when the file
 * cannot be read. For waits on log lines, e.g. a retry's. */
int taxi_log_count(const char *path, const char *text);

/* Waits until the store holds everything committed so far, then asserts
 * every cell, value count and projection equals PostgreSQL's. */
void taxi_check(struct taxi_db *db, const char *when);

/* The slot's confirmed_flush_lsn: never past the store's position. */
uint64_t taxi_slot_confirmed(struct taxi_db *db);

#endif
