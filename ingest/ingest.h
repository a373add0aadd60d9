/* ingest.h -- the front door of straum-ingest: plan the PostgreSQL side, and
 * follow a database into a store (snapshot, then logical decoding forever).
 *
 * SPEC.md "The follower" describes the guarantees: the store's position is
 * the end LSN of the last source transaction applied, written in the same
 * LMDB transaction as its cells, and the slot is never told a position the
 * store does not hold. */
#ifndef STRAUM_INGEST_H
#define STRAUM_INGEST_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

struct ingest_options {
    const char *source;          /* libpq conninfo or URI; "" uses PG* variables */
    const char *views_path;      /* the CREATE VIEW file */
    const char *store_dir;
    const char *slot;            /* default "straum" */
    const char *publication;     /* default "straum" */
    int64_t commit_interval_us;  /* group commit: default 5 ms */
    int64_t max_lag_us;          /* reported lag bound (informational here) */
    bool rebuild;                /* drop the store and the slot, start over */
    bool exit_when_caught_up;    /* stop once the stream reaches the server's WAL end
                                    (tests, benchmarks); normally run forever */
    int64_t snapshot_batch_rows; /* rows per time partition while loading; default 500k */
    int64_t progress_interval_us; /* a load's progress line every this; 0: none
                                     (ingest/progress.h) */
    uint64_t max_store_bytes;    /* cap on data.mdb; 0: none (SPEC.md "Disk full") */
    bool wal_physical;           /* --wal physical: follow a physical slot and
                                    decode the heap WAL (ingest/physical.c)
                                    instead of logical decoding */
    const char *metrics_listen;  /* "host:port" for GET /metrics and /healthz; NULL: none */
};

/* Prints the SQL an administrator runs once (publication, replica identity)
 * and a check list of the server's settings to out (with wal_physical, no
 * SQL: physical mode's checks only). Returns 0 when the
 * source is ready, 1 when something needs doing (still printed), -1 on an
 * error (message on stderr): a missing table or column, an unsupported type. */
int ingest_plan(const struct ingest_options *opt, FILE *out);

/* Snapshot if the store is new, then stream until SIGTERM/SIGINT (or caught
 * up, with exit_when_caught_up). Returns 0 on a clean stop, -1 after
 * printing why it stopped. */
int ingest_run(const struct ingest_options *opt);

/* Asks a running ingest_run (in this process) to finish its batch, commit
 * and return: what SIGTERM and SIGINT do. Async-signal-safe. */
void ingest_request_stop(void);

#endif
