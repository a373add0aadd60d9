/* receiver.c -- the replication connection read on a thread of its own.
 *
 * Why: a follower that reads the stream itself stops reading while it
 * applies and commits, the socket's buffers fill within milliseconds, and
 * the walsender waits with them; its decoding and the follower's work then
 * take turns instead of overlapping. Under a backlog of single-row inserts
 * (`taxi stream`, 2,000,000 trips) straum-ingest spent 4.8 CPU seconds and
 * the walsender 4.5 over an apply of 11.6 s, where pg_recvlogical alone
 * received the same stream in 5.9 s.
 *
 * Invariants:
 * 1. Frames come out in the order the server sent them; the end of the
 *    stream (or its error) comes after every frame before it.
 * 2. The queue holds at most RECEIVER_MAX_FRAMES frames, and takes none
 *    while it holds max_bytes (receiver_start) or more: then the thread
 *    stops reading, and the server waits as it did before. Beside the
 *    queue, each side holds at most one batch (below).
 * 3. The connection is used under one lock by both threads: the thread
 *    reads (PQgetCopyData, PQconsumeInput), the follower sends feedback
 *    (receiver_send). libpq allows one thread at a time on a connection.
 *    Neither holds the lock while it waits.
 * 4. The thread takes no signal: SIGTERM and SIGINT reach the follower's
 *    thread, as they did when it was the only one. */
#include "ingest/internal.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

struct frame {
    char *buf; /* libpq's, freed with PQfreemem */
    int len;
};

/* Frames move between the threads in batches of at most BATCH_FRAMES and
 * about BATCH_BYTES (a batch ends after the frame that crosses it): one
 * lock and at most one wake-up a batch rather than a frame. Handed over
 * one at a time, a follower faster than the walsender sleeps and is woken
 * for every frame (ingest's CPU for a backlog of 391,671 single-row
 * updates was 14.2 s that way, at full scale). A batch also leaves as soon
 * as libpq holds no whole frame more, so a lone transaction waits for
 * nothing. */
#define BATCH_FRAMES 256
#define BATCH_BYTES ((size_t)1 << 20)

/* While the stream is busy the thread waits for COALESCE_BYTES to arrive
 * (SO_RCVLOWAT, which poll honours) or COALESCE_US to pass, whichever
 * comes first, rather than for the first byte. Why: a walsender flushes
 * every message as it decodes it, so a thread woken by the first byte
 * took one poll and one recv per transaction or two: under a backlog of
 * single-row inserts a third of ingest's CPU, on the cores the walsender
 * needs. The stream counts as busy when the last wait was short (at most
 * twice COALESCE_US) and frames followed it; a wait that brings nothing,
 * or a long one, goes back to waking on the first byte, so a lone
 * transaction after a quiet spell is not held. 32 KiB is some hundred
 * single-row transactions of pgoutput; 1 ms is what a busy stream's
 * transactions may wait at most, well inside a group commit's 5 ms. */
#define COALESCE_BYTES (32 * 1024)
#define COALESCE_US 1000

struct batch {
    struct frame f[BATCH_FRAMES];
    int n, at;
    size_t bytes;
};

struct receiver {
    PGconn *c;
    pthread_t thread;
    pthread_mutex_t conn_lock; /* invariant 3 */
    pthread_mutex_t lock;      /* the queue below */
    pthread_cond_t filled, drained;
    struct frame *ring;        /* RECEIVER_MAX_FRAMES entries */
    size_t max_bytes;          /* invariant 2 */
    size_t head, count, bytes;
    bool taker_waits, reader_waits;
    bool ended;                /* no frame follows the ones queued */
    char end_message[512];     /* why it ended: the server's or libpq's words */
    atomic_bool stopping;
    atomic_uint_fast64_t waits; /* polls for the server (receiver_waits) */
    int wake;                  /* eventfd: receiver_stop wakes the thread's poll */
    struct batch in;           /* the thread's: read, not yet queued */
    struct batch out;          /* the follower's: taken from the queue, not yet handed out */
};

static void batch_free(struct batch *b)
{
    for (int i = b->at; i < b->n; i++)
        PQfreemem(b->f[i].buf);
    b->n = b->at = 0;
    b->bytes = 0;
}

/* Queues the thread's batch, waiting while the queue has no room for it
 * (invariant 2); with why, the stream's end after it. False when stopping
 * meanwhile (the batch stays for receiver_stop to free). */
static bool queue_batch(struct receiver *r, const char *why)
{
    struct batch *b = &r->in;
    pthread_mutex_lock(&r->lock);
    while (b->n && (r->count + (size_t)b->n > RECEIVER_MAX_FRAMES ||
                    r->bytes >= r->max_bytes) && !atomic_load(&r->stopping)) {
        r->reader_waits = true;
        pthread_cond_wait(&r->drained, &r->lock);
    }
    r->reader_waits = false;
    bool stopping = atomic_load(&r->stopping);
    if (!stopping) {
        for (int i = 0; i < b->n; i++)
            r->ring[(r->head + r->count++) % RECEIVER_MAX_FRAMES] = b->f[i];
        r->bytes += b->bytes;
        b->n = 0;
        b->bytes = 0;
        if (why) {
            snprintf(r->end_message, sizeof r->end_message, "%s", why);
            r->ended = true;
        }
        if (r->taker_waits)
            pthread_cond_signal(&r->filled);
    }
    pthread_mutex_unlock(&r->lock);
    return !stopping;
}

/* Sets the socket's SO_RCVLOWAT to bytes when *now differs. A failure
 * leaves the socket waking on the first byte, as it did: nothing but
 * wake-ups is lost. */
static void set_lowat(int fd, int bytes, int *now)
{
    if (*now == bytes)
        return;
    if (setsockopt(fd, SOL_SOCKET, SO_RCVLOWAT, &bytes, sizeof bytes) == 0)
        *now = bytes;
}

static void *receive(void *arg)
{
    struct receiver *r = arg;
    char why[sizeof r->end_message];
    int64_t waited_us = INT64_MAX; /* the last wait's length */
    int frames = 0;                /* frames read since it */
    int lowat = 1;                 /* the socket's SO_RCVLOWAT */
    while (!atomic_load(&r->stopping)) {
        char *buf = NULL;
        pthread_mutex_lock(&r->conn_lock);
        int n = PQgetCopyData(r->c, &buf, 1);
        if (n < 0)
            snprintf(why, sizeof why, "%s", PQerrorMessage(r->c));
        pthread_mutex_unlock(&r->conn_lock);
        if (n > 0) {
            frames++;
            struct batch *b = &r->in;
            b->f[b->n++] = (struct frame){buf, n};
            b->bytes += (size_t)n;
            if ((b->n == BATCH_FRAMES || b->bytes >= BATCH_BYTES) && !queue_batch(r, NULL))
                break;
            continue;
        }
        if (n < 0) {
            queue_batch(r, why);
            break;
        }
        /* No whole frame more: what came goes to the follower before the
         * thread waits for the server. */
        if (r->in.n && !queue_batch(r, NULL))
            break;
        /* Busy: the last wait was short and brought frames. */
        bool busy = frames > 0 && waited_us <= 2 * COALESCE_US;
        int fd = PQsocket(r->c);
        set_lowat(fd, busy ? COALESCE_BYTES : 1, &lowat);
        struct pollfd p[2] = {{fd, POLLIN, 0}, {r->wake, POLLIN, 0}};
        atomic_fetch_add(&r->waits, 1);
        int64_t t0 = mono_ns();
        int rc = poll(p, 2, busy ? COALESCE_US / 1000 : -1);
        waited_us = (mono_ns() - t0) / 1000;
        frames = 0;
        if (rc < 0 && errno != EINTR) {
            snprintf(why, sizeof why, "waiting for the server: %s", strerror(errno));
            queue_batch(r, why);
            break;
        }
        if ((rc > 0 && p[0].revents) || rc == 0) { /* readable, or waited the most: what is there */
            pthread_mutex_lock(&r->conn_lock);
            int ok = PQconsumeInput(r->c);
            if (!ok)
                snprintf(why, sizeof why, "reading from the server: %s", PQerrorMessage(r->c));
            pthread_mutex_unlock(&r->conn_lock);
            if (!ok) {
                queue_batch(r, why);
                break;
            }
        }
    }
    return NULL;
}

bool receiver_waiting(struct receiver *r)
{
    if (!r)
        return false;
    if (r->out.at < r->out.n)
        return true;
    pthread_mutex_lock(&r->lock);
    bool waiting = r->count > 0;
    pthread_mutex_unlock(&r->lock);
    return waiting;
}

uint64_t receiver_waits(struct receiver *r) { return atomic_load(&r->waits); }

struct receiver *receiver_start(PGconn *c, size_t max_bytes, char *err, size_t errlen)
{
    struct receiver *r = calloc(1, sizeof *r);
    if (r)
        r->ring = malloc(RECEIVER_MAX_FRAMES * sizeof *r->ring);
    if (!r || !r->ring) {
        free(r);
        error_fmt(err, errlen, "out of memory starting the replication receiver");
        return NULL;
    }
    r->c = c;
    r->max_bytes = max_bytes;
    r->wake = eventfd(0, EFD_CLOEXEC);
    if (r->wake < 0) {
        free(r->ring);
        free(r);
        error_fmt(err, errlen, "cannot start the replication receiver: eventfd: %s",
                  strerror(errno));
        return NULL;
    }
    atomic_init(&r->stopping, false);
    atomic_init(&r->waits, 0);
    pthread_mutex_init(&r->conn_lock, NULL);
    pthread_mutex_init(&r->lock, NULL);
    pthread_cond_init(&r->filled, NULL);
    pthread_cond_init(&r->drained, NULL);
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old); /* invariant 4: the thread inherits it */
    int rc = pthread_create(&r->thread, NULL, receive, r);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (rc) {
        pthread_mutex_destroy(&r->conn_lock);
        pthread_mutex_destroy(&r->lock);
        pthread_cond_destroy(&r->filled);
        pthread_cond_destroy(&r->drained);
        close(r->wake);
        free(r->ring);
        free(r);
        error_fmt(err, errlen, "cannot start the replication receiver thread: %s", strerror(rc));
        return NULL;
    }
    return r;
}

/* Moves a batch from the queue to the follower's side, waiting up to
 * timeout_ms for one. Called with the follower's batch empty. */
static void take_batch(struct receiver *r, int timeout_ms)
{
    struct batch *b = &r->out;
    b->n = b->at = 0;
    pthread_mutex_lock(&r->lock);
    if (r->count == 0 && !r->ended && timeout_ms > 0) {
        struct timespec until;
        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_nsec += (long)timeout_ms * 1000000L;
        until.tv_sec += until.tv_nsec / 1000000000L;
        until.tv_nsec %= 1000000000L;
        r->taker_waits = true;
        while (r->count == 0 && !r->ended &&
               pthread_cond_timedwait(&r->filled, &r->lock, &until) == 0)
            ;
        r->taker_waits = false;
    }
    size_t bytes = 0;
    while (r->count > 0 && b->n < BATCH_FRAMES && bytes < BATCH_BYTES) {
        struct frame f = r->ring[r->head];
        r->head = (r->head + 1) % RECEIVER_MAX_FRAMES;
        r->count--;
        bytes += (size_t)f.len;
        b->f[b->n++] = f;
    }
    r->bytes -= bytes;
    if (b->n && r->reader_waits)
        pthread_cond_signal(&r->drained);
    pthread_mutex_unlock(&r->lock);
}

int receiver_next(struct receiver *r, int timeout_ms, char **buf, size_t *len, char *err,
                  size_t errlen)
{
    struct batch *b = &r->out;
    if (b->at == b->n)
        take_batch(r, timeout_ms);
    if (b->at < b->n) {
        *buf = b->f[b->at].buf;
        *len = (size_t)b->f[b->at].len;
        b->at++;
        return 1;
    }
    pthread_mutex_lock(&r->lock);
    bool ended = r->ended && r->count == 0;
    if (ended)
        error_fmt(err, errlen, "%s", r->end_message);
    pthread_mutex_unlock(&r->lock);
    return ended ? -1 : 0;
}

int receiver_send(struct receiver *r, const void *msg, size_t len, char *err, size_t errlen)
{
    pthread_mutex_lock(&r->conn_lock);
    int rc = PQputCopyData(r->c, msg, (int)len) == 1 && PQflush(r->c) == 0 ? 0 : -1;
    if (rc)
        error_fmt(err, errlen, "%s", PQerrorMessage(r->c));
    pthread_mutex_unlock(&r->conn_lock);
    return rc;
}

bool receiver_ended(struct receiver *r)
{
    pthread_mutex_lock(&r->lock);
    bool ended = r->ended;
    pthread_mutex_unlock(&r->lock);
    return ended;
}

void receiver_stop(struct receiver *r)
{
    if (!r)
        return;
    pthread_mutex_lock(&r->lock);
    atomic_store(&r->stopping, true);
    pthread_cond_broadcast(&r->drained);
    pthread_mutex_unlock(&r->lock);
    uint64_t one = 1;
    (void)!write(r->wake, &one, sizeof one);
    pthread_join(r->thread, NULL);
    close(r->wake);
    for (size_t i = 0; i < r->count; i++)
        PQfreemem(r->ring[(r->head + i) % RECEIVER_MAX_FRAMES].buf);
    batch_free(&r->in);
    batch_free(&r->out);
    pthread_mutex_destroy(&r->conn_lock);
    pthread_mutex_destroy(&r->lock);
    pthread_cond_destroy(&r->filled);
    pthread_cond_destroy(&r->drained);
    free(r->ring);
    free(r);
}
