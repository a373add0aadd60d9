/* pace.c -- what both followers (stream.c for logical decoding, physical.c
 * for the physical WAL) do between transactions: the group of transactions
 * applied and its store commit, how far apart group commits go, and
 * folding delta blocks once the stream is idle. One place, so the two keep
 * the same rhythm and say the same. (Both read the server through
 * receiver.c.) */
#include "ingest/internal.h"

#include <string.h>

/* A store write failed for want of space, and none has succeeded since:
 * the next commit that does says so. Ingest runs one follower a process. */
static bool waiting_for_room;

void pace_begin(struct pace_group *g)
{
    g->compact = true;
    imetrics_fold_pending(true);
}

/* Behind a backlog: the lag is the backlog's, and groups may grow. */
static bool far_behind(uint64_t behind) { return behind > GROUP_COMMIT_BEHIND_BYTES; }

void pace_applying(struct pace_group *g, struct store *st, uint64_t behind)
{
    if (!g->first_applied) {
        g->first_applied = now_usec();
        g->first_behind = behind;
    }
    if (!g->backlog && far_behind(behind)) {
        g->backlog = true;
        g->usual_cache_bytes = store_cache_bytes(st);
        store_set_cache_bytes(st, GROUP_COMMIT_BEHIND_CACHE_BYTES);
    }
}

/* Whether the group keeps a backlog's bounds: the server is far ahead now,
 * or was while the group took a transaction (internal.h, "Behind"). */
static bool group_behind(const struct pace_group *g, uint64_t behind)
{
    return far_behind(behind) || (g->dirty && g->backlog);
}

/* Whether the rest of a backlog joins the group that read most of it
 * (internal.h, "The tail"): the group began far behind, and what the
 * server holds unread shrank since by GROUP_COMMIT_TAIL_RATIO times what
 * is left. A server writing as fast as the follower reads shrinks nothing;
 * a group begun caught up has no backlog's tail to wait for. */
static bool tail_joins(const struct pace_group *g, uint64_t behind)
{
    return g->backlog && far_behind(g->first_behind) && g->first_behind >= behind &&
           g->first_behind - behind >= GROUP_COMMIT_TAIL_RATIO * behind;
}

/* A backlog's bound, half again when its tail joins the group. */
static int64_t with_tail(const struct pace_group *g, uint64_t behind, int64_t bound)
{
    return tail_joins(g, behind) ? bound + bound / 2 : bound;
}

int pace_failed(struct pace_group *g, const struct store_error *serr,
                const struct ingest_options *opt, char *err, size_t errlen)
{
    char lsn[32];
    lsn_text(g->stored_lsn, lsn);
    g->failure = serr->kind;
    /* One message whatever stopped the commit; what to do depends on it. */
    const char *todo;
    switch (serr->kind) {
    case STORE_ERR_LIMIT:
        todo = opt->max_store_bytes
                   ? "Raise --max-store-size and start straum-ingest again: it resumes from"
                   : "Raise STRAUM_STORE_MAX_MAP_MB (or unset it) and start straum-ingest "
                     "again: it resumes from";
        break;
    case STORE_ERR_NO_SPACE:
        waiting_for_room = true;
        todo = opt->exit_when_caught_up
                   ? "Make room for data.mdb, then run straum-ingest again: it resumes from"
                   : "Make room for data.mdb: straum-ingest retries by itself and resumes from";
        break;
    default:
        error_fmt(err, errlen, "%s", serr->message);
        return -1;
    }
    error_fmt(err, errlen,
              "%s. Nothing of the batch was written: the store keeps its last commit (%s), "
              "straum-serve goes on serving it and the slot keeps every change since. %s %s",
              serr->message, lsn, todo, lsn);
    return -1;
}

int pace_commit(struct pace_group *g, struct store *st, const struct store_position *pos,
                const struct ingest_options *opt, char *err, size_t errlen)
{
    struct store_error serr;
    int64_t t0 = now_usec();
    /* Said before the position moves, so that a scrape that sees the new
     * position sees the deltas it wrote pending too. */
    if (g->dirty)
        imetrics_fold_pending(true);
    /* Behind a backlog the next group follows at once and takes the same
     * memory again: kept, not faulted in afresh; given back once a group
     * catches up, or the stream idles (pace_fold_slice). */
    store_set_keep_heap(st, g->backlog);
    if (ingest_store_commit(st, pos, &g->batch, &serr))
        return pace_failed(g, &serr, opt, err, errlen);
    int64_t t1 = now_usec();
    bool held_txns = g->batch.txns > 0;
    if (held_txns)
        g->last_commit_us = t1 - t0;
    struct logfmt_line l;
    if (g->batch.txns && logfmt_begin(&l, LOGFMT_DEBUG, "applied")) {
        char text[32];
        logfmt_str(&l, "lsn", lsn_text(pos->lsn, text));
        logfmt_int(&l, "txns", (int64_t)g->batch.txns);
        logfmt_int(&l, "rows", g->rows);
        logfmt_int(&l, "inserts", (int64_t)g->batch.changes[CHANGE_INSERT]);
        logfmt_int(&l, "updates", (int64_t)g->batch.changes[CHANGE_UPDATE]);
        logfmt_int(&l, "deletes", (int64_t)g->batch.changes[CHANGE_DELETE]);
        if (g->first_applied) /* 0: its transactions changed nothing followed */
            logfmt_printf(&l, "txn_ms", "%.3f", (double)(t1 - g->first_applied) / 1e3);
        logfmt_printf(&l, "commit_ms", "%.3f", (double)(t1 - t0) / 1e3);
        logfmt_end(&l);
    }
    if (waiting_for_room) {
        char text[32];
        log_info("the store at %s has room again; resumed at %s", store_dir(st),
                 lsn_text(pos->lsn, text));
        waiting_for_room = false;
    }
    g->batch = (struct ingest_batch){0};
    g->compact |= g->dirty;
    if (g->dirty) { /* the next group starts afresh */
        g->first_applied = 0;
        if (g->backlog)
            store_set_cache_bytes(st, g->usual_cache_bytes);
        g->backlog = false;
    }
    g->stored_lsn = pos->lsn;
    g->dirty = false;
    g->rows = 0;
    g->last_store = now_usec();
    if (held_txns)
        g->last_batch_store = g->last_store;
    return 0;
}

/* The spacing after a commit of last_commit_us (0: none timed yet), behind
 * a backlog or not. */
static int64_t spacing(int64_t commit_interval_us, int64_t last_commit_us, bool backlog)
{
    int64_t most = backlog ? GROUP_COMMIT_BEHIND_MAX_US : GROUP_COMMIT_MAX_US;
    /* With no commit timed yet a backlog's group may take the most: spaced
     * by no commit's time, a follower's first group behind one would hold
     * one transaction and pay a whole commit's per-segment cost for it. */
    int64_t spaced = backlog && !last_commit_us ? most : GROUP_COMMIT_RATIO * last_commit_us;
    if (spaced > most)
        spaced = most;
    return spaced > commit_interval_us ? spaced : commit_interval_us;
}

int64_t pace_group_interval(int64_t commit_interval_us, int64_t last_commit_us, uint64_t behind)
{
    return spacing(commit_interval_us, last_commit_us, far_behind(behind));
}

int64_t pace_group_rows(const struct pace_group *g, uint64_t behind)
{
    return group_behind(g, behind) ? with_tail(g, behind, GROUP_COMMIT_BEHIND_ROWS)
                                   : GROUP_COMMIT_ROWS;
}

int64_t pace_commit_due(const struct pace_group *g, int64_t commit_interval_us, uint64_t behind)
{
    /* A follower's first group counts from its first transaction. */
    int64_t from = g->last_batch_store ? g->last_batch_store : g->first_applied;
    int64_t every = spacing(commit_interval_us, g->last_commit_us, group_behind(g, behind));
    return from + with_tail(g, behind, every);
}

bool pace_group_ready(const struct pace_group *g, int64_t now, int64_t commit_interval_us,
                      uint64_t behind, bool idle)
{
    return g->dirty && (idle || g->rows >= pace_group_rows(g, behind) ||
                        now >= pace_commit_due(g, commit_interval_us, behind));
}

static bool frames_wait(void *rx) { return receiver_waiting(rx); }

int pace_fold_slice(struct store *st, struct receiver *rx, bool *more,
                    struct store_error *serr)
{
    int left;
    int64_t t0 = now_usec();
    store_set_keep_heap(st, false); /* idle: what a backlog's groups kept goes back */
    if (store_compact_until(st, FOLD_SLICE_US, false, frames_wait, rx, &left, serr))
        return -1;
    /* A transaction that arrives meanwhile waits for the segment being
     * folded: the debug log says how long a slice held the follower. */
    struct logfmt_line l;
    if (logfmt_begin(&l, LOGFMT_DEBUG, "folded")) {
        logfmt_int(&l, "segments_left", left);
        logfmt_printf(&l, "slice_ms", "%.3f", (double)(now_usec() - t0) / 1e3);
        logfmt_end(&l);
    }
    *more = left > 0;
    imetrics_fold_pending(*more);
    return 0;
}
