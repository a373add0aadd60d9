/* load.c -- an initial load (bulk mode): the hand-offs that let the
 * drain of one partition's staged rows (staging.c, apply.c) and the
 * encoding of the segments done with run on other cores while the caller
 * stages the next partition.
 *
 * Three parties share a load's segments, one at a time each: the caller's
 * thread (staging, LMDB, the batch's write transaction), the load job
 * (a partition's staged rows drained into the cellmaps, struct load_job)
 * and the encode job (encoder.c: cold segments encoded as bases). The
 * hand-off between them (store_hand_off_cold, load_settle) keeps the
 * writer's invariants 1 and 2 (internal.h): a segment is in one place at a
 * time, and what the encode job encoded is written before an overlay is
 * merged with the store. SPEC.md §4.4 "Initial load: bulk mode". */
#include "store/internal.h"

#include <stdatomic.h>
#include <stdlib.h>

/* Writes what a handed-off job encoded into the batch's transaction and
 * frees the job, the caller encoding beside it until it is done
 * (load_settle, a bulk store_commit). */
static int flush_job(struct store *s, struct store_error *err)
{
    struct pending *p = s->pending;
    struct encode_job *j = p->job;
    if (!j)
        return 0;
    p->job = NULL;
    size_t n;
    const struct encoded *enc = encode_job_blocks(j, &n);
    int rc = encode_job_finish(j, err);
    if (rc == 0 && !p->txn && batch_txn_open(s, err))
        rc = -1;
    for (size_t i = 0; rc == 0 && i < n; i++)
        rc = encoded_put(s, p->txn, &enc[i]);
    encode_job_free(j);
    return rc ? batch_lost(s, rc, err) : 0;
}

/* Takes out of the writer, for an encode job, its dirty segments but
 * those kept hot: into *out (malloc'd), *n of them. An overlay of a stored
 * segment is written as a delta block instead, here on the caller's thread
 * (overlay_spill_delta): merged with the stored base, a segment the load
 * keeps coming back to was decoded and encoded whole at every hand-off and
 * spill, and a load whose key is nearly unique per row (a widest-width
 * segment of millions of cells, past twice the budget) slowed as its
 * segments grew: 13,116,878 warehouse tasks went in at 14,000 rows a
 * second, falling. Its deltas fold into a new base after a commit once
 * they outgrow it (plan_write), so each cell is encoded a few times, not
 * once per hand-off. */
static int detach_dirty(struct store *s, bool keep_hot, struct cellmap ***out, size_t *n,
                        struct store_error *err)
{
    struct pending *p = s->pending;
    struct cellmap **maps = malloc((p->segments.count + 1) * sizeof *maps);
    if (!maps)
        return store_fail(err, "out of memory");
    *n = 0;
    BYTEMAP_EACH(&p->segments, e)
    {
        struct cellmap *m = e->ptr;
        if (!m->dirty || pending_kept_hot(p, m, keep_hot))
            continue;
        bool written = false;
        if ((m->overlay && overlay_spill_delta(s, e, &written, err)) ||
            (!written && overlay_materialize(s, e, err))) { /* a new segment: its overlay is all of it */
            while (*n > 0)
                cellmap_free(maps[--*n]);
            free(maps);
            return -1;
        }
        if (written)
            continue;
        pending_unhold(p, e->ptr);
        maps[(*n)++] = e->ptr;
        bytemap_remove(&p->segments, e);
    }
    *out = maps;
    return 0;
}

/* A load's dirty segments, but for those kept hot, leave the writer for an
 * encode job (encoder.c). Between partitions (keep_hot) the job runs on
 * while the load goes on, and the next hand-off or commit writes it; a
 * bulk store_commit writes it now, the caller encoding beside it. */
int load_hand_off(struct store *s, bool keep_hot, struct store_error *err)
{
    struct pending *p = s->pending;
    struct cellmap **maps = NULL;
    size_t n = 0;
    if (detach_dirty(s, keep_hot, &maps, &n, err) ||
        !(p->job = encode_job_new(maps, n, err)))
        return -1;
    encode_job_start(p->job);
    return keep_hot ? 0 : flush_job(s, err);
}

/* ---- A load's partition, drained beside the next one ---------------------------- */

/* What store_hand_off_cold starts on a thread of its own while the caller
 * stages the next partition: the partition's staged rows drained into the
 * cellmaps. Until the job is joined (load_settle) it alone touches the
 * segments, their cellmaps, the held bytes, the clock and the value
 * deltas: the caller stages into the other staging set, and every writer
 * call that reaches those settles the job first. The job reads no LMDB,
 * whose write transaction belongs to the caller's thread: a late row for a
 * segment the encode job running beside it holds starts an overlay, which
 * the caller merges (overlay_materialize) only after load_settle wrote that job.
 * Every drain on the caller's thread comes after a load_settle too, so it
 * never meets a segment an encode job holds. */
struct load_job {
    struct store *s;
    struct staging **staging;      /* per view: the partition's rows, drained here */
    pthread_t thread;
    bool threaded;              /* false: it ran on the caller's thread */
    atomic_bool drained;        /* the drain is over: a join will not wait */
    int rc;
    struct store_error err;
};

static void *run_load_job(void *arg)
{
    struct load_job *j = arg;
    j->rc = pending_drain_set(j->s, j->staging, &j->err);
    atomic_store(&j->drained, true);
    return NULL;
}

/* Waits for the load job, if one runs, and takes its staging set back
 * (empty) as the spare. */
int load_join(struct pending *p, int nviews, struct store_error *err)
{
    struct load_job *j = p->load;
    if (!j)
        return 0;
    p->load = NULL;
    if (j->threaded)
        pthread_join(j->thread, NULL);
    for (int v = 0; v < nviews; v++)
        if (j->staging[v]) /* drained already, but for a failure */
            staging_clear(j->staging[v]);
    free(p->spare);
    p->spare = j->staging;
    int rc = j->rc;
    if (rc)
        *err = j->err;
    free(j);
    return rc;
}

/* Writes what the encode job beside the load job encoded (the caller
 * helping it finish), then joins the load job. In that order the caller
 * encodes while the drain runs rather than idling on it first (the drain
 * touches neither LMDB nor the job's segments). The drain may have started
 * overlays of segments that job holds: they are merged with the store only
 * after both (no segment is both pending and in a job once settled). A
 * failed write still joins the drain (batch_lost resets the batch). */
int load_settle(struct store *s, struct store_error *err)
{
    return flush_job(s, err) || load_join(s->pending, s->views->nviews, err) ? -1 : 0;
}

/* Starts a load job on the staging set filled since the last one; the
 * writer stages into the spare meanwhile. A segment the job touches is hot
 * at the next hand-off. */
static int start_load(struct store *s, struct store_error *err)
{
    struct pending *p = s->pending;
    struct load_job *j = calloc(1, sizeof *j);
    struct staging **fresh = p->spare ? p->spare : calloc((size_t)s->views->nviews, sizeof *fresh);
    if (!j || !fresh) {
        free(j);
        return store_fail(err, "out of memory");
    }
    j->s = s;
    atomic_init(&j->drained, false);
    j->staging = p->staging;
    p->staging = fresh;
    p->spare = NULL;
    p->committed_clock = p->clock;
    p->bytes_seen = p->bytes;
    p->load = j;
    j->threaded = pthread_create(&j->thread, NULL, run_load_job, j) == 0;
    if (!j->threaded) /* no thread to be had: the same work, now */
        run_load_job(j);
    return 0;
}

int store_hand_off_cold(struct store *s, struct store_error *err)
{
    if (store_need_writer(s, err))
        return -1;
    if (!s->bulk)
        return 0;
    struct pending *p = s->pending;
    /* An encode job still at work on the other core is left to it, with the
     * segments that went cold since, which the next hand-off takes: the
     * caller encodes beside it only while the drain runs, then goes back to
     * its rows (ingest's thread, the busier, spent a fifth of its time
     * waiting out jobs). Once in a row, so that cold segments do not pile
     * up. Otherwise the last job is written first, so that the overlays
     * among the segments handed off now merge with it. */
    bool leave = p->job && encode_job_busy(p->job) && !p->job_left;
    p->job_left = leave;
    while (leave && p->load && !atomic_load(&p->load->drained) && encode_job_help(p->job))
        ;
    int rc = leave ? load_join(p, s->views->nviews, err)
                   : load_settle(s, err) || load_hand_off(s, true, err);
    if (rc || start_load(s, err)) {
        pending_reset(p, s->views);
        return -1;
    }
    return 0;
}
