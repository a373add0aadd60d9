/* progress.h -- how far an initial load is, told while it runs.
 *
 * A load of a large table runs for minutes (half an hour for a billion
 * rows). While it runs, ingest says how far it is three ways (SPEC.md §5
 * "Progress"):
 *   - an info log line every --progress-interval (default 5 s): the table,
 *     the phase, rows of the estimated total, rows a second, time left;
 *   - a one-line bar, redrawn five times a second, when stderr is a
 *     terminal (and only then: a log file gets no carriage returns);
 *   - the same figures in /metrics (ingest/metrics.h).
 *
 * The estimate is pg_class.reltuples (fresh after ANALYZE or autovacuum;
 * absent for a table never analyzed, when no total or time left is told).
 *
 * Phases: a table read and applied in one pass (whole, or in time
 * partitions by index range) is LOADING; a table read in one scan and set
 * aside by time partition first is READING, then APPLYING the partitions.
 * Each phase counts rows from 0 to the table's rows, and time left is that
 * phase's: the APPLYING that follows a READING is not foreseen.
 *
 * Cost: callers count rows in batches (LOAD_PROGRESS_BATCH) and tick only
 * then, so the clock is read once per batch, never per row. */
#ifndef STRAUM_INGEST_PROGRESS_H
#define STRAUM_INGEST_PROGRESS_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

enum load_phase { LOAD_LOADING, LOAD_READING, LOAD_APPLYING };

/* Rows a caller counts before it tells the progress (and ticks). */
enum { LOAD_PROGRESS_BATCH = 65536 };

struct load_progress {
    const char *table;              /* schema-qualified, for lines and metrics */
    double estimated;               /* reltuples; < 0 when unknown */
    int64_t interval_us;            /* between log lines; 0: no lines */
    bool tty;                       /* stderr is a terminal: draw the bar */
    atomic_int phase;               /* enum load_phase */
    atomic_int_fast64_t rows;       /* the phase's rows so far (any thread adds) */
    int64_t phase_started;          /* µs, when the phase began */
    atomic_int_fast64_t next_line;  /* µs, when the next log line is due */
    atomic_int_fast64_t next_bar;   /* µs, when the bar is next redrawn */
    atomic_flag printing;           /* one thread prints at a time */
};

/* Starts telling the load of one table. Never fails. */
void load_progress_begin(struct load_progress *p, const char *table, double estimated,
                         int64_t interval_us, bool tty);

/* A new phase: its rows count from 0, its rate and time left from now. */
void load_progress_phase(struct load_progress *p, enum load_phase phase);

/* n more rows of the current phase; then a line and the bar if due. Safe
 * from any thread (readers of a split scan count their own rows). */
void load_progress_add(struct load_progress *p, int64_t n);

/* The table is loaded: the bar is finished with a newline (on a terminal)
 * and the metrics' phase becomes done. */
void load_progress_end(struct load_progress *p);

#endif
