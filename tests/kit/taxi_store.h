/* taxi_store.h -- a small taxi store made through the store API, with no
 * PostgreSQL: bench/taxi_views.sql, deterministic generated trips and the
 * zone table. What the serve tests' fixture (tests/serve/serve_test.c) and
 * the serve-side fuzz targets (tests/fuzz/fuzz_store.c) share; without a
 * test framework, so that each fails its own way on the errors these
 * return. */
#ifndef STRAUM_TESTS_KIT_TAXI_STORE_H
#define STRAUM_TESTS_KIT_TAXI_STORE_H

#include "store/store.h"

#include <stdint.h>

struct trip {
    int64_t pickup_at;       /* µs */
    int64_t pu, dropoff, payment;
    int64_t fare, tip, dist; /* cents */
};

/* Trip i of a set that starts at start_us and spans days days: pickup at
 * a whole second, payment types 0..5, zones 1..12, fares -3.00 to 76.99.
 * The same i gives the same trip on every run (splitmix64 of i). */
struct trip taxi_store_trip(int i, int64_t start_us, int days);

/* Applies one trip to every view of an open store: sign +1 adds it, -1
 * takes it away. 0, or -1 with err set (a view reading a column the trips
 * do not have, or the store's own error). */
int taxi_store_apply(struct store *s, const struct trip *t, int sign, struct store_error *err);

/* Makes the store in dir (an empty directory): the views of views_text,
 * trips 0 to ntrips - 1 of taxi_store_trip(i, start_us, days), the zone
 * table (zones 1 to 10 as Manhattan, Queens and Brooklyn in turn; 11 and
 * 12 not in it), committed at pos. 0, or -1 with err set. */
int taxi_store_make(const char *dir, const char *views_text, int ntrips, int64_t start_us,
                    int days, const struct store_position *pos, struct store_error *err);

#endif
