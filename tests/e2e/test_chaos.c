/* test_chaos.c -- the crash-and-restart chaos test, bounded in time for the
 * test command (the soak runs the same chaos for longer: bench/chaos).
 *
 * For 90 s of chaos a writer changes the fact and dim tables in random
 * transactions while straum-ingest is SIGKILLed at 24 random moments (the
 * first in the middle of its first load), PostgreSQL is restarted twice
 * (once a fast shutdown, once a crash), and two straum-serve replicas are
 * SIGKILLed every few seconds while a client asks through both. No answer
 * may be wrong; at the end every fixed ask equals PostgreSQL, every cell
 * equals the oracle's, and straum-dump verify passes. STRAUM_CHAOS_SEED
 * replays another seed; STRAUM_CHAOS_VERBOSE=1 prints each event. */
#include "tests/e2e/chaos.h"

#include <criterion/criterion.h>
#include <stdlib.h>

Test(chaos, kills_and_restarts_lose_and_double_nothing, .timeout = 1740)
{
    const char *seed = getenv("STRAUM_CHAOS_SEED"), *verbose = getenv("STRAUM_CHAOS_VERBOSE");
    struct chaos_knobs k = {
        .seconds = 90,
        .ingest_kills = 24,
        .pg_restarts = 2,
        .replica_kill_ms = 3000,
        .quiet_checks = 2,
        .trips = 3000,
        .writer_sleep_ms = 30,
        .seed = seed && *seed ? strtoull(seed, NULL, 10) : 20240817,
        .verbose = verbose && *verbose == '1',
    };
    struct chaos_report r;
    chaos_run(&k, &r);
    chaos_print(stderr, &k, &r);
    cr_assert_geq(r.ingest_kills, 20);
    cr_assert_eq(r.pg_restarts, 2);
    cr_assert_geq(r.replica_kills, 10);
    cr_assert_eq(r.quiet_checks, 3);
    cr_assert_gt(r.asks_checked, 100, "the client kept asking through the chaos");
    cr_assert_gt(r.txns_committed, 100, "the writer kept writing through the chaos");
}
