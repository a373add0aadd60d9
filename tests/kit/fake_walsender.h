/* fake_walsender.h -- a walsender played over loopback, for the tests of
 * the stream read ahead (ingest/receiver.c): it answers a libpq
 * replication connection's startup (SSL and GSS requests refused, trust),
 * takes START_REPLICATION with a CopyBothResponse, then sends numbered
 * CopyData frames and CopyDone, reading the client's CopyData meanwhile
 * (each must be the 16 bytes FAKE_FEEDBACK). On a thread of its own; no
 * Criterion (a broken exchange aborts), so ThreadSanitizer programs use it
 * too. */
#ifndef STRAUM_TESTS_KIT_FAKE_WALSENDER_H
#define STRAUM_TESTS_KIT_FAKE_WALSENDER_H

#include <libpq-fe.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>

#define FAKE_FEEDBACK "feedback-message"

struct fake_walsender {
    /* Set before fake_walsender_start. */
    int nframes;             /* frames to send, then CopyDone (unless hold) */
    size_t frame_bytes;      /* 0: lengths of 5 to 304 bytes by the frame's number */
    bool hold;               /* after the frames, keep the stream open */
    int pace_us;             /* 0, or each frame sent this long after the one
                                before it, as a walsender decoding a backlog
                                sends (a spin, not a sleep: the pace is the
                                sender's, whatever the scheduler does) */
    int sndbuf;              /* 0, or the server socket's SO_SNDBUF: what the
                                kernel holds on the sending side is then this
                                machine's tuning no longer */
    /* Read while it runs. */
    atomic_size_t sent;      /* frame payload bytes the kernel took, whole frames */
    atomic_bool blocked;     /* the last send waited 200 ms for room in vain */
    atomic_int feedback;     /* CopyData messages received from the client */
    atomic_bool bad_feedback; /* one was not FAKE_FEEDBACK */
    /* Its own. */
    int listen_fd, port;
    pthread_t thread;
    atomic_bool quit;
};

/* Frame i's payload length and bytes (its number, then bytes that follow
 * from it): what the client must receive. */
size_t fake_walsender_frame_len(const struct fake_walsender *w, int i);
void fake_walsender_frame_fill(unsigned char *p, size_t len, int i);

/* Listens on a free loopback port and starts the thread, which serves one
 * connection. Aborts when it cannot. */
void fake_walsender_start(struct fake_walsender *w);

/* A libpq replication connection to it, in COPY BOTH mode; NULL with
 * libpq's message in err. */
PGconn *fake_walsender_connect(const struct fake_walsender *w, char *err, size_t errlen);

/* Stops the thread once the client has closed (or nothing is left to read)
 * and joins it. */
void fake_walsender_join(struct fake_walsender *w);

#endif
