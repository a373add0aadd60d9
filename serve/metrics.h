/* metrics.h -- straum-serve's counters and their Prometheus text, and the
 * lag figure /readyz and /metrics share (store_lag_usec). Private to serve/.
 *
 * Every counter is a C11 atomic bumped with relaxed order: the hot path
 * takes no lock, and a scrape reads each number once (a scrape racing an ask
 * may see its count but not yet its duration, which Prometheus tolerates). */
#ifndef STRAUM_SERVE_METRICS_H
#define STRAUM_SERVE_METRICS_H

#include "engine/engine.h"

#include <stdint.h>

/* Routes, for straum_http_requests_total{path}. Anything else is "other",
 * so a scan of random paths cannot grow the label set. */
enum metrics_path {
    METRICS_PATH_ASK,
    METRICS_PATH_VIEWS,
    METRICS_PATH_HEALTHZ,
    METRICS_PATH_READYZ,
    METRICS_PATH_METRICS,
    METRICS_PATH_OTHER,
    METRICS_NPATHS
};

struct metrics;

/* Counters for these views (names copied); asks naming none of them are
 * counted under view="?". NULL when out of memory. */
struct metrics *metrics_new(const char *const *views, int nviews);
void metrics_free(struct metrics *m);

/* Which view an ask reads, by a cheap scan for its top-level FROM (strings,
 * quoted identifiers and comments skipped; unquoted names folded to lower
 * case): the index of a known view, or nviews for "?". It is a label, not a
 * meaning: the engine alone decides what the ask reads. */
int metrics_view_of(const struct metrics *m, const char *ask);

/* The label of a route, and of a view index (nviews or out of range: "?"). */
const char *metrics_path_name(enum metrics_path path);
const char *metrics_view_name(const struct metrics *m, int view);

/* One answered ask: its view index (or nviews), HTTP status, and the time
 * from the complete body to the answer, in nanoseconds. */
void metrics_ask(struct metrics *m, int view, int status, int64_t ns);

/* One HTTP response that straum-serve itself queued. */
void metrics_http(struct metrics *m, enum metrics_path path, int status);

/* A connection opened (+1) or closed (-1). */
void metrics_connection(struct metrics *m, int delta);

/* The text exposition (version 0.0.4). pos is NULL when the store's
 * position could not be read; then the position and lag gauges are left
 * out. now_us is the wall clock. */
void metrics_write(const struct metrics *m, const struct store_position *pos, int64_t now_us,
                   struct buf *out);

#endif
