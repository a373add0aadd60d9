/* chaos.h -- the crash-and-restart chaos run shared by the bounded test
 * (test_chaos.c) and the soak (chaos_soak.c, run by bench/chaos).
 *
 * On a PostgreSQL cluster of its own (so it may restart it), a writer thread
 * changes the fact and dim tables in random transactions while the main
 * thread SIGKILLs straum-ingest at random moments and restarts it,
 * restarts PostgreSQL (a fast shutdown, then a crash of the postmaster, in
 * turn), and SIGKILLs and restarts two straum-serve replicas; an asker
 * thread keeps asking through both. Every answer must be a well-formed 200,
 * or a connection error while its replica is down; the totals it answers
 * must be those of some committed state of PostgreSQL. At quiet points and
 * at the end every ask of a fixed set, asked through both replicas, equals
 * PostgreSQL's answer, every cell equals the oracle's and straum-dump verify
 * passes. Any violation fails the Criterion test that called chaos_run. */
#ifndef STRAUM_TESTS_E2E_CHAOS_H
#define STRAUM_TESTS_E2E_CHAOS_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

struct chaos_knobs {
    int seconds;         /* how long the chaos runs, before the final checks */
    int ingest_kills;    /* SIGKILLs of straum-ingest: the first in the middle of
                            its first load, the others one at a random moment
                            of each equal slice of the run */
    int pg_restarts;     /* PostgreSQL restarts, spread over the run; every
                            second one is a crash (kill -9 of the postmaster) */
    int replica_kill_ms; /* mean time between SIGKILLs of a serve replica; 0: none */
    int quiet_checks;    /* comparisons with PostgreSQL during the run, with
                            the writer paused (the final one comes on top) */
    int trips;           /* trips in the database before the chaos begins */
    int writer_sleep_ms; /* the writer sleeps up to this long between transactions */
    uint64_t seed;       /* the writer's and the scheduler's random choices */
    bool verbose;        /* one line per event on stderr; the logs of ingest,
                            serve and the writer (each commit's totals and WAL
                            position) stay in /tmp/straum-chaos-*, with a copy
                            of the store at the first wrong total */
};

struct chaos_report {
    double seconds;            /* the whole run, setup to the last check */
    int ingest_kills, pg_restarts, pg_crashes, replica_kills, quiet_checks;
    long txns_committed;       /* COMMIT answered OK */
    long txns_rolled_back;     /* rolled back on purpose */
    long txns_interrupted;     /* cut off by a PostgreSQL restart */
    long txns_refused;         /* a statement failed (a duplicate key): rolled back */
    long asks_answered;        /* 200s received during the chaos */
    long asks_checked;         /* of which totals matched a committed state */
    long asks_failed_in_kill;  /* connection errors while the replica was down */
    long positions_checked;    /* /readyz positions, never going backwards */
    long fixed_asks_compared;  /* fixed-set answers equal to PostgreSQL's */
    long trips_at_end;
    uint64_t store_bytes;      /* data.mdb at the end */
    uint64_t compact_bytes;    /* a compacted copy of it (straum-dump copy) */
};

/* Runs the chaos with these knobs; fails the calling Criterion test on the
 * first wrong answer, lost or doubled row, verify failure or hang. */
void chaos_run(const struct chaos_knobs *k, struct chaos_report *r);

/* Prints the knobs and the figures, one "name value" per line. */
void chaos_print(FILE *out, const struct chaos_knobs *k, const struct chaos_report *r);

#endif
