/* log.c -- the clocks of ingest: the wall clock it stamps its log lines
 * and lag with, and the monotonic one it times intervals by. The lines
 * themselves are base's logfmt writer (base/logfmt.h, internal.h's log_info
 * and friends): one line per event, "ts=... level=info msg=... key=value",
 * so that journald, a terminal and a log shipper all read it; messages are
 * filled by base/error.h and WAL positions written by base/lsn.h. */
#include "ingest/internal.h"

#include <time.h>

int64_t now_usec(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

int64_t mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

