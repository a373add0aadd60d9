/* pace.c -- what both followers (stream.c for logical decoding, physical.c
 * for the physical WAL) do between transactions: how far apart group
 * commits go, folding delta blocks once the stream is idle, and waiting for
 * the server's socket. One place, so the two keep the same rhythm. */
#include "ingest/internal.h"

#include <errno.h>
#include <poll.h>
#include <string.h>

int64_t pace_group_interval(int64_t commit_interval_us, int64_t last_commit_us)
{
    int64_t spaced = GROUP_COMMIT_RATIO * last_commit_us;
    if (spaced > GROUP_COMMIT_MAX_US)
        spaced = GROUP_COMMIT_MAX_US;
    return spaced > commit_interval_us ? spaced : commit_interval_us;
}

int pace_fold_slice(struct store *st, bool *more, struct store_error *serr)
{
    int left;
    if (store_compact(st, FOLD_SLICE_US, false, &left, serr))
        return -1;
    *more = left > 0;
    return 0;
}

int pace_wait_socket(PGconn *c, int timeout_ms, char *err, size_t errlen)
{
    struct pollfd p = {PQsocket(c), POLLIN, 0};
    int rc = poll(&p, 1, timeout_ms);
    if (rc < 0 && errno != EINTR)
        return error_fmt(err, errlen, "waiting for the server: %s", strerror(errno));
    if (rc > 0 && !PQconsumeInput(c))
        return error_fmt(err, errlen, "reading from the server: %s", PQerrorMessage(c));
    return 0;
}
