/* encoder.c -- a load's segments encoded on another core.
 *
 * During an initial load (bulk mode) the main cost of writing segments is
 * encoding them: rollups, Rice codes, lz4. It is pure work on cellmaps
 * nothing else holds, so between partitions the writer hands the segments
 * the load is done with to an encode job on its own thread and returns to
 * the rows; the next hand-off or commit writes what the job encoded, the
 * caller encoding beside the thread until nothing is left (or, at a
 * hand-off, a segment at a time while the drain runs, the job then left at
 * work for the hand-off after: encode_job_busy, encode_job_help).
 *
 * A job owns its cellmaps from encode_job_new on and frees each as soon as
 * it is encoded (cellmap_encode_consume). Either thread takes the next
 * segment, largest first, by one atomic counter; each writes only its own
 * segments' outputs. Nothing here touches LMDB or the writer's state. */
#include "store/internal.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

struct encode_job {
    struct cellmap **maps;   /* owned until encoded; NULL once freed */
    struct encoded *out;     /* out[i] is maps[i]'s block */
    size_t n;
    atomic_size_t next;      /* the next segment either thread takes */
    atomic_size_t done;      /* segments encoded (or failed) */
    pthread_t thread;
    bool started;
    /* The first failure of the thread [0] and of the helper [1]. */
    int rc[2];
    struct store_error err[2];
};

static int larger_first(const void *a, const void *b)
{
    const struct cellmap *x = *(struct cellmap *const *)a, *y = *(struct cellmap *const *)b;
    return (x->bytes < y->bytes) - (x->bytes > y->bytes);
}

struct encode_job *encode_job_new(struct cellmap **maps, size_t n, struct store_error *err)
{
    struct encode_job *j = calloc(1, sizeof *j);
    if (j)
        j->out = calloc(n + 1, sizeof *j->out);
    if (!j || !j->out) {
        for (size_t i = 0; i < n; i++)
            cellmap_free(maps[i]);
        free(maps);
        if (j)
            free(j);
        store_fail(err, "out of memory");
        return NULL;
    }
    /* Largest first: the two threads then end close together. */
    qsort(maps, n, sizeof *maps, larger_first);
    j->maps = maps;
    j->n = n;
    for (size_t i = 0; i < n; i++) {
        seg_key(j->out[i].key, maps[i]->view_index, maps[i]->width, maps[i]->span_start);
        j->out[i].key_len = SEG_KEY_BYTES;
    }
    atomic_init(&j->next, 0);
    atomic_init(&j->done, 0);
    return j;
}

/* Encodes the next segment if one is left: false when none was, or it
 * failed (then the others are left to encode_job_free). who: 0 the thread,
 * 1 the helper. */
static bool encode_one(struct encode_job *j, int who)
{
    if (j->rc[who])
        return false;
    size_t i = atomic_fetch_add(&j->next, 1);
    if (i >= j->n)
        return false;
    struct cellmap *m = j->maps[i];
    j->maps[i] = NULL;
    int rc = cellmap_encode_consume(m, &j->out[i].block, &j->out[i].len, &j->err[who]);
    cellmap_free(m);
    atomic_fetch_add(&j->done, 1);
    if (rc)
        j->rc[who] = -1;
    return rc == 0;
}

static void encode_some(struct encode_job *j, int who)
{
    while (encode_one(j, who))
        ;
}

static void *encode_thread(void *arg)
{
    encode_some(arg, 0);
    return NULL;
}

void encode_job_start(struct encode_job *j)
{
    /* Without a thread (none could start) encode_job_finish does it all. */
    j->started = j->n > 0 && pthread_create(&j->thread, NULL, encode_thread, j) == 0;
}

bool encode_job_help(struct encode_job *j) { return encode_one(j, 1); }

bool encode_job_busy(const struct encode_job *j)
{
    /* (A thread that failed leaves segments unencoded and looks busy: the
     * job is then left once, and the next settle finishes it and reports
     * the failure.) */
    return j->started && atomic_load(&j->done) < j->n;
}

int encode_job_finish(struct encode_job *j, struct store_error *err)
{
    encode_some(j, 1); /* the caller helps rather than waits; does all without a thread */
    if (j->started) {
        pthread_join(j->thread, NULL);
        j->started = false;
    }
    for (int who = 0; who < 2; who++)
        if (j->rc[who]) {
            *err = j->err[who];
            return -1;
        }
    return 0;
}

const struct encoded *encode_job_blocks(const struct encode_job *j, size_t *n)
{
    *n = j->n;
    return j->out;
}

void encode_job_free(struct encode_job *j)
{
    if (!j)
        return;
    if (j->started)
        pthread_join(j->thread, NULL);
    for (size_t i = 0; i < j->n; i++) {
        cellmap_free(j->maps[i]);
        free(j->out[i].block);
    }
    free(j->maps);
    free(j->out);
    free(j);
}
