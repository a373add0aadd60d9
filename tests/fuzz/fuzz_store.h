/* fuzz_store.h -- the small taxi store the serve-side fuzz targets (fuzz_http,
 * fuzz_segment) ask: bench/taxi_views.sql, a few hundred generated trips and
 * the zone table, made through the store API in a temporary directory.
 *
 * It is tests/serve/serve_test.c's fixture (tests/kit/taxi_store.h), failing
 * without Criterion (a fuzz target has no test to fail: it aborts with a
 * message instead), and smaller, so that every ask a fuzzer sends stays
 * cheap. */
#ifndef STRAUM_TESTS_FUZZ_STORE_H
#define STRAUM_TESTS_FUZZ_STORE_H

#include <stdint.h>

/* Trips from FUZZ_START_US over FUZZ_DAYS days: payment types 0..5, zones
 * 1..12 (1..10 in the zone table, as Manhattan, Queens, Brooklyn). Two days
 * fit one span of the hourly width (64 hours), so each width of each view
 * has one segment. */
#define FUZZ_DAYS 2
#define FUZZ_START_US 1704067200000000LL /* 2024-01-01 00:00 UTC */

/* Makes the store of `trips` trips in a fresh directory under $TMPDIR (or
 * /tmp) and returns its path (static storage); the directory is removed at
 * exit. Aborts with a message on any failure. Over about 256 trips a
 * percentile's group turns to serve's dense value window (256 KiB, zeroed),
 * which costs a fuzz target more than the rest of an ask. */
const char *fuzz_store_make(int trips);

/* Commits `commits` small batches to the store at dir made of `trips`
 * trips: each adds `each` new trips and takes away two of the first ones,
 * with every base taking deltas, so each segment holds a base and up to
 * `commits` delta blocks (fuzz_delta). Aborts on any failure. */
void fuzz_store_add_deltas(const char *dir, int trips, int commits, int each);

/* Removes a directory tree (the store, or any scratch directory). */
void fuzz_remove_tree(const char *dir);

/* Prints a message to stderr and aborts: a finding. */
_Noreturn void fuzz_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
