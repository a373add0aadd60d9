/* tsan_receiver.c -- the stream read ahead (ingest/receiver.c) under
 * ThreadSanitizer: its thread reading a walsender played over loopback
 * (tests/kit/fake_walsender.h) while this thread takes frames, sends
 * feedback through the same connection and asks whether the stream ended;
 * then a stop with frames still queued. Every frame is checked in order,
 * byte for byte; exit 0 when all are right, TSan's own exit code (66) on a
 * race. */
#include "ingest/internal.h"
#include "tests/kit/fake_walsender.h"
#include "tests/tsan/tsan_fail.h"

#include <string.h>
#include <unistd.h>

enum { FRAMES = 30000 };

/* Starts the walsender and a receiver on a replication connection to it. */
static struct receiver *follow(struct fake_walsender *w, PGconn **c)
{
    char err[600];
    fake_walsender_start(w);
    if (!(*c = fake_walsender_connect(w, err, sizeof err)))
        tsan_fail("connecting: %s", err);
    struct receiver *rx = receiver_start(*c, RECEIVER_MAX_BYTES, err, sizeof err);
    if (!rx)
        tsan_fail("%s", err);
    return rx;
}

static void follow_to_the_end(void)
{
    struct fake_walsender w = {.nframes = FRAMES};
    PGconn *c;
    struct receiver *rx = follow(&w, &c);
    char err[600];
    unsigned char want[512];
    int i = 0, rc;
    char *buf;
    size_t len;
    while ((rc = receiver_next(rx, 1000, &buf, &len, err, sizeof err)) >= 0) {
        if (rc == 0)
            continue;
        size_t n = fake_walsender_frame_len(&w, i);
        fake_walsender_frame_fill(want, n, i);
        if (i >= FRAMES || len != n || memcmp(buf, want, n))
            tsan_fail("frame %d is not the one sent", i);
        PQfreemem(buf);
        if (i % 50 == 0 && receiver_send(rx, FAKE_FEEDBACK, 16, err, sizeof err))
            tsan_fail("feedback: %s", err);
        if (i % 1000 == 0)
            (void)receiver_ended(rx);
        i++;
    }
    if (i != FRAMES)
        tsan_fail("%d frames of %d before the end", i, FRAMES);
    receiver_stop(rx);
    PQfinish(c);
    fake_walsender_join(&w);
    if (atomic_load(&w.feedback) != FRAMES / 50 || atomic_load(&w.bad_feedback))
        tsan_fail("%d feedback messages of %d arrived whole", atomic_load(&w.feedback),
                  FRAMES / 50);
}

static void stop_with_frames_queued(void)
{
    struct fake_walsender w = {.nframes = FRAMES, .hold = true};
    PGconn *c;
    struct receiver *rx = follow(&w, &c);
    char err[600];
    char *buf;
    size_t len;
    int rc;
    while ((rc = receiver_next(rx, 1000, &buf, &len, err, sizeof err)) == 0)
        ;
    if (rc < 0)
        tsan_fail("%s", err);
    PQfreemem(buf);
    while (atomic_load(&w.sent) < 100000)
        usleep(1000);
    receiver_stop(rx);
    PQfinish(c);
    fake_walsender_join(&w);
}

int main(void)
{
    follow_to_the_end();
    stop_with_frames_queued();
    return 0;
}
