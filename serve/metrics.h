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

struct metrics;

/* Counters for these views (names copied), whose asks naming none of them
 * are counted under view="?", and for these routes, the labels of
 * straum_http_requests_total{path} (the strings are not copied: the route
 * table's, they outlive m), whose responses to any other path are counted under "other"
 * (route nroutes), so that a scan of random paths cannot grow the label
 * set. NULL when out of memory. */
struct metrics *metrics_new(const char *const *views, int nviews, const char *const *routes,
                            int nroutes);
void metrics_free(struct metrics *m);

/* Which view an ask reads, by a cheap scan for its top-level FROM (strings,
 * quoted identifiers and comments skipped; unquoted names folded to lower
 * case): the index of a known view, or nviews for "?". It is a label, not a
 * meaning: the engine alone decides what the ask reads. */
int metrics_view_of(const struct metrics *m, const char *ask);

/* The label of a route index (nroutes or out of range: "other"), and of a
 * view index (nviews or out of range: "?"). */
const char *metrics_route_name(const struct metrics *m, int route);
const char *metrics_view_name(const struct metrics *m, int view);

/* One answered ask: its view index (or nviews), HTTP status, and the time
 * from the complete body to the answer, in nanoseconds. */
void metrics_ask(struct metrics *m, int view, int status, int64_t ns);

/* One HTTP response that straum-serve itself queued, to a route index
 * (nroutes or out of range: "other"). */
void metrics_http(struct metrics *m, int route, int status);

/* A connection opened (+1) or closed (-1), HTTP or PostgreSQL. */
void metrics_connection(struct metrics *m, int delta);
/* Connections open now. */
int64_t metrics_connections_open(const struct metrics *m);

/* The text exposition (version 0.0.4). pos is NULL when the store's
 * position could not be read; then the position and lag gauges are left
 * out. now_us is the wall clock. */
void metrics_write(const struct metrics *m, const struct store_position *pos, int64_t now_us,
                   struct buf *out);

#endif
