/* test_ingest_receiver.c -- the replication stream read ahead on a thread
 * of its own (ingest/receiver.c) against a walsender played by this test
 * over loopback (tests/kit/fake_walsender.h): every frame comes out once, in
 * order, byte for byte, and the stream's end only after them; feedback
 * sent from the follower's side while frames pour in reaches the server
 * whole; a follower that takes nothing lets the thread read at most its
 * bound ahead (logical decoding's and the physical WAL's), after which the
 * server is the one waiting; a busy stream wakes the thread once per many
 * frames; and stopping with frames still queued frees them (ASan's leak
 * check). */
#include "ingest/internal.h"
#include "tests/kit/fake_walsender.h"

#include <criterion/criterion.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

/* Starts the walsender and a receiver on a replication connection to it. */
static struct receiver *follow(struct fake_walsender *w, PGconn **c)
{
    char err[300];
    fake_walsender_start(w);
    *c = fake_walsender_connect(w, err, sizeof err);
    cr_assert_not_null(*c, "%s", err);
    struct receiver *rx = receiver_start(*c, RECEIVER_MAX_BYTES, err, sizeof err);
    cr_assert_not_null(rx, "%s", err);
    return rx;
}

/* Takes frames until the end: each the next in order, byte for byte. */
static int take_all(struct receiver *rx, const struct fake_walsender *w, int from, bool send_feedback)
{
    char err[600];
    int i = from;
    for (;;) {
        char *buf;
        size_t len;
        int rc = receiver_next(rx, 1000, &buf, &len, err, sizeof err);
        if (rc < 0)
            break;
        if (rc == 0)
            continue;
        cr_assert_lt(i, w->nframes, "a frame past the last one sent");
        cr_assert_eq(len, fake_walsender_frame_len(w, i), "frame %d", i);
        unsigned char *want = malloc(len);
        fake_walsender_frame_fill(want, len, i);
        cr_assert(memcmp(buf, want, len) == 0, "frame %d differs", i);
        free(want);
        PQfreemem(buf);
        if (send_feedback && i % 100 == 0)
            cr_assert_eq(receiver_send(rx, FAKE_FEEDBACK, 16, err, sizeof err), 0, "%s",
                         err);
        i++;
    }
    return i;
}

Test(ingest_receiver, frames_come_in_order_then_the_end_and_feedback_goes_out_meanwhile)
{
    struct fake_walsender w = {.nframes = 20000};
    PGconn *c;
    struct receiver *rx = follow(&w, &c);
    char err[300];
    int got = take_all(rx, &w, 0, true);
    cr_assert_eq(got, w.nframes, "every frame, then the end");
    cr_assert(receiver_ended(rx));
    char *buf;
    size_t len;
    cr_assert_eq(receiver_next(rx, 0, &buf, &len, err, sizeof err), -1, "the end stays");
    receiver_stop(rx);
    PQfinish(c);
    fake_walsender_join(&w);
    cr_assert_eq(atomic_load(&w.feedback), w.nframes / 100);
    cr_assert_not(atomic_load(&w.bad_feedback), "a feedback message arrived cut or mixed");
}

/* receiver_waiting, what an idle compaction stops for: true once a frame
 * has arrived and until the last one is taken. */
Test(ingest_receiver, waiting_says_whether_a_frame_is_there_to_take, .timeout = 60)
{
    cr_assert_not(receiver_waiting(NULL));
    struct fake_walsender w = {.nframes = 3, .hold = true};
    PGconn *c;
    struct receiver *rx = follow(&w, &c);
    while (!receiver_waiting(rx))
        usleep(1000); /* until the first frame is read: the test's timeout bounds it */
    char err[300], *buf;
    size_t len;
    for (int i = 0; i < w.nframes;) {
        int rc = receiver_next(rx, 1000, &buf, &len, err, sizeof err);
        cr_assert_geq(rc, 0, "%s", err);
        if (rc == 1) {
            PQfreemem(buf);
            i++;
        }
    }
    cr_assert_not(receiver_waiting(rx), "every frame taken, the stream held open");
    receiver_stop(rx);
    PQfinish(c);
    fake_walsender_join(&w);
}

/* The kernel's buffers on both sides of the loopback are pinned at
 * SOCKET_BUF (Linux keeps twice what is set): left to the machine's TCP
 * autotuning, the receiving side alone may grow to tcp_rmem's maximum,
 * 32 MiB on some hosts, and what the server got to send would measure the
 * host, not the thread's bound. */
#define SOCKET_BUF (512 << 10)

/* A follower that takes nothing lets the thread read max_bytes ahead, and
 * no more: then the server waits. Frames of 128 KiB, as a physical
 * walsender sends them, 96 MiB of them: half as much again as the larger
 * bound. */
static void reads_at_most_ahead(size_t max_bytes)
{
    struct fake_walsender w = {.nframes = 768, .frame_bytes = 128 << 10, .hold = true,
                               .sndbuf = SOCKET_BUF};
    char err[300];
    fake_walsender_start(&w);
    PGconn *c = fake_walsender_connect(&w, err, sizeof err);
    cr_assert_not_null(c, "%s", err);
    int rcvbuf = SOCKET_BUF;
    cr_assert_eq(setsockopt(PQsocket(c), SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof rcvbuf), 0);
    struct receiver *rx = receiver_start(c, max_bytes, err, sizeof err);
    cr_assert_not_null(rx, "%s", err);
    /* Nothing taken: the server sends until the thread stops reading and
     * the sockets fill, then waits. */
    while (!atomic_load(&w.blocked) || atomic_load(&w.sent) < max_bytes) {
        cr_assert_lt(atomic_load(&w.sent), (size_t)w.nframes * w.frame_bytes,
                     "the server sent everything: nothing bounds the thread");
        usleep(1000);
    }
    size_t ahead = atomic_load(&w.sent);
    /* The bound, the batch that crossed it (BATCH_BYTES and a frame),
     * libpq's buffer (a frame) and the kernel's on both sides (twice
     * SOCKET_BUF each): under 8 MiB past the bound. */
    cr_assert_leq(ahead, max_bytes + ((size_t)8 << 20), "%zu bytes read ahead",
                  ahead);
    /* Taking frames lets the server go on: all of them arrive in order. */
    char *buf;
    size_t len;
    int i = 0;
    while (i < w.nframes) {
        int rc = receiver_next(rx, 1000, &buf, &len, err, sizeof err);
        cr_assert_geq(rc, 0, "%s", err);
        if (rc == 0)
            continue;
        cr_assert_eq(len, w.frame_bytes);
        int n;
        memcpy(&n, buf, sizeof n);
        cr_assert_eq(n, i);
        PQfreemem(buf);
        i++;
    }
    receiver_stop(rx);
    PQfinish(c);
    fake_walsender_join(&w);
}

Test(ingest_receiver, reads_at_most_its_bound_ahead_then_the_server_waits, .timeout = 120)
{
    reads_at_most_ahead(RECEIVER_MAX_BYTES);
}

/* The physical WAL's bound (RECEIVER_PHYSICAL_MAX_BYTES), an eighth of
 * logical decoding's: a receiver reading to the larger bound fails it. */
Test(ingest_receiver, a_physical_stream_reads_ahead_to_its_own_bound, .timeout = 120)
{
    reads_at_most_ahead(RECEIVER_PHYSICAL_MAX_BYTES);
}

/* A walsender decoding a backlog sends a frame every few microseconds,
 * each flushed on its own. Woken by each one's first byte the thread
 * polled and read once per frame or two; it waits for a batch instead
 * (receiver.c COALESCE_BYTES, COALESCE_US), so its wake-ups are a small
 * fraction of the frames, and every frame still comes, in order. */
Test(ingest_receiver, a_busy_stream_wakes_the_thread_once_per_many_frames, .timeout = 60)
{
    struct fake_walsender w = {.nframes = 10000, .frame_bytes = 100, .pace_us = 50};
    PGconn *c;
    struct receiver *rx = follow(&w, &c);
    int got = take_all(rx, &w, 0, false);
    cr_assert_eq(got, w.nframes, "every frame, then the end");
    uint64_t waits = receiver_waits(rx);
    receiver_stop(rx);
    PQfinish(c);
    fake_walsender_join(&w);
    cr_assert_lt(waits, (uint64_t)w.nframes / 5, "%" PRIu64 " waits for %d frames", waits,
                 w.nframes);
}

Test(ingest_receiver, stopping_with_frames_queued_frees_them)
{
    struct fake_walsender w = {.nframes = 5000, .hold = true};
    PGconn *c;
    struct receiver *rx = follow(&w, &c);
    char err[300], *buf;
    size_t len;
    int rc;
    while ((rc = receiver_next(rx, 1000, &buf, &len, err, sizeof err)) == 0)
        ;
    cr_assert_eq(rc, 1);
    PQfreemem(buf);
    size_t total = 0;
    for (int i = 0; i < w.nframes; i++)
        total += fake_walsender_frame_len(&w, i);
    while (atomic_load(&w.sent) < total)
        usleep(1000); /* every frame in the sockets or the queue, none taken but the first */
    receiver_stop(rx); /* frames still queued, the thread waiting on the socket */
    PQfinish(c);
    fake_walsender_join(&w);
}
