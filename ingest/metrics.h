/* metrics.h -- straum-ingest's counters and the --metrics-listen server
 * (GET /metrics, Prometheus text format 0.0.4; GET /healthz). Private to
 * ingest/.
 *
 * The follower is one thread and the server another (libmicrohttpd's own):
 * every figure is a C11 atomic, written with relaxed stores and adds by the
 * follower and read once per scrape, so the apply path never takes a lock
 * nor waits for a scrape. A scrape may see a commit counted before its
 * position moved; Prometheus tolerates that. One follower per process, so
 * the figures are process-wide. */
#ifndef STRAUM_INGEST_METRICS_H
#define STRAUM_INGEST_METRICS_H

#include "store/store.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum ingest_state {
    INGEST_STARTING,      /* connecting, opening the store, before streaming */
    INGEST_SNAPSHOT,      /* the initial load */
    INGEST_FOLLOWING,     /* streaming from the slot */
    INGEST_RECONNECTING,  /* waiting to connect again (lost connection, full disk) */
    INGEST_NSTATES
};

/* Kinds of change, for straum_ingest_changes_total{kind}. */
enum ingest_change { CHANGE_INSERT, CHANGE_UPDATE, CHANGE_DELETE, CHANGE_TRUNCATE, NCHANGES };

/* What a batch applied, counted when the store commit holding it succeeds
 * (a batch rolled back and replayed is counted once). */
struct ingest_batch {
    uint64_t txns;
    uint64_t changes[NCHANGES];
};

void imetrics_state(enum ingest_state state);
/* The end of the last transaction applied (maybe not stored yet). */
void imetrics_applied_lsn(uint64_t lsn);
/* The server's WAL position as last seen on the stream. */
void imetrics_source_lsn(uint64_t lsn);
/* The position the store holds now (after a commit, or read at start). */
void imetrics_position(const struct store_position *pos);
/* Rows of the initial load applied: added in batches (an atomic add per
 * row was 2% of the load's apply). */
void imetrics_snapshot_rows(uint64_t n);
/* The initial load of a table now: its name (the log names it; metrics do
 * not, so a table name needs no escaping), its phase ("loading", "reading",
 * "applying"), rows of that phase so far and the estimated total (< 0
 * unknown); a NULL table: no load runs. */
void imetrics_load(const char *table, const char *phase, int64_t rows, double estimated);
/* Rows of the load's current phase so far (progress.c, per batch). */
void imetrics_load_rows(int64_t rows);
void imetrics_reconnect(void);
/* Bytes streamed transactions hold in their spools now. */
void imetrics_spool_bytes(uint64_t bytes);
/* Whether delta blocks may wait for the idle fold (pace.c). */
void imetrics_fold_pending(bool pending);

/* store_commit, timed and counted (straum_store_commits_total and the
 * commit duration histogram; successful commits only); on success what the
 * batch held (NULL: nothing counted) and then the position are recorded, in
 * that order, so a scrape that sees the position sees the batch counted. */
int ingest_store_commit(struct store *st, const struct store_position *pos,
                        const struct ingest_batch *batch, struct store_error *err);
/* The same with store_commit_cold: a commit between a load's partitions. */
int ingest_store_commit_cold(struct store *st, const struct store_position *pos,
                             struct store_error *err);

/* Starts the metrics server on listen ("host:port", "[v6]:port", ":port"
 * for loopback; port 0 picks one) for the store in store_dir (for
 * data.mdb's size). NULL with a message in err. */
struct imetrics_server;
struct imetrics_server *imetrics_serve(const char *listen, const char *store_dir, char *err,
                                       size_t errlen);
void imetrics_stop(struct imetrics_server *s);

/* The exposition, into a malloc'd NUL-terminated string (NULL when out of
 * memory); now_us is the wall clock. For the server, and for tests. */
char *imetrics_text(const char *store_dir, int64_t now_us);

#endif
