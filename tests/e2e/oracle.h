/* oracle.h -- PostgreSQL as the oracle of a store: every cell of every
 * width, every value count and every dim projection the store holds must
 * equal what the view's own SQL computes over the raw tables. */
#ifndef STRAUM_TESTS_ORACLE_H
#define STRAUM_TESTS_ORACLE_H

#include "store/store.h"

#include <libpq-fe.h>
#include <stdbool.h>

/* Compares the store at dir (opened read-only here) with PostgreSQL through
 * pg. Returns 0 when equal; otherwise -1 with the first difference in diff. */
int oracle_compare(PGconn *pg, const char *store_dir, char *diff, size_t difflen);

/* The store's position (LSN), or 0 if it cannot be read. */
uint64_t oracle_store_position(const char *store_dir);

/* Delta blocks the store at dir holds, over every view and width. */
int oracle_delta_blocks(const char *store_dir);
/* The delta blocks of a store, and its segments whose deltas hold more
 * cells than their base (store_set_inline_fold_bytes). */
struct oracle_deltas {
    int blocks;
    int past_base;
};
struct oracle_deltas oracle_deltas(const char *store_dir);

/* Folds every delta block of the store at dir into its base (opens it as
 * the writer: ingest must not run). */
void oracle_compact(const char *store_dir);

/* pg_current_wal_lsn(): where PostgreSQL's WAL is written to now. */
uint64_t oracle_current_lsn(PGconn *pg);

/* The target of a catch-up wait: an LSN at or past the end of every
 * transaction committed before the call, in WAL that is flushed, so a
 * walsender sends all of it. A commit made with synchronous_commit off (the
 * test cluster's default, and so pgbench's) is visible before its WAL is
 * written, and pg_current_wal_lsn() alone may stand below it. Commits a
 * transaction of its own that writes WAL, synchronously, whose flush
 * carries every earlier commit with it. */
uint64_t oracle_committed_lsn(PGconn *pg);

/* Waits until the store's position reaches lsn; false after timeout_ms. */
bool oracle_wait_position(const char *store_dir, uint64_t lsn, int timeout_ms);

/* Runs a statement (or several); aborts the test with the error otherwise. */
void oracle_exec(PGconn *pg, const char *sql);

/* oracle_exec of a statement formatted by printf (at most 16 KiB; longer
 * aborts the test). */
void oracle_execf(PGconn *pg, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* The first value of a query's first row as text, into out ("" for NULL);
 * aborts the test when the query fails or returns no row. */
void oracle_value(PGconn *pg, char *out, size_t cap, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* The LSN ("X/X") a query returns first, or 0 when it is not one. */
uint64_t oracle_lsn(PGconn *pg, const char *sql);

/* A connection to conninfo; aborts the test when it fails. */
PGconn *oracle_connect(const char *conninfo);

#endif
