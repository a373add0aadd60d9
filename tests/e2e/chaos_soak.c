/* chaos_soak.c -- the chaos of test_chaos.c for as long as asked: a soak,
 * not part of the test command. bench/chaos runs it with --minutes and
 * --seed, which it passes on as STRAUM_CHAOS_MINUTES and STRAUM_CHAOS_SEED
 * (Criterion's workers see the environment, not our arguments). Faults
 * scale with the time: an ingest SIGKILL every 4 s on average, a PostgreSQL
 * restart and a quiet check every minute, a replica SIGKILL every 3 s;
 * STRAUM_CHAOS_INGEST_KILLS, STRAUM_CHAOS_PG_RESTARTS and
 * STRAUM_CHAOS_REPLICA_KILL_MS (0: none) change them, to tell which fault
 * a finding needs. The figures go to stdout and, when STRAUM_CHAOS_REPORT
 * names a file, are appended to it. */
#include "tests/e2e/chaos.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static long env_long(const char *name, long fallback)
{
    const char *s = getenv(name);
    return s && *s ? strtol(s, NULL, 10) : fallback;
}

/* No Criterion timeout: the run is as long as asked, and every wait inside
 * it has a deadline of its own. */
Test(chaos, soak, .timeout = 0)
{
    long minutes = env_long("STRAUM_CHAOS_MINUTES", 10);
    cr_assert_gt(minutes, 0);
    int seconds = (int)(minutes * 60);
    struct chaos_knobs k = {
        .seconds = seconds,
        .ingest_kills = (int)env_long("STRAUM_CHAOS_INGEST_KILLS", seconds / 4 > 20 ? seconds / 4 : 20),
        .pg_restarts = (int)env_long("STRAUM_CHAOS_PG_RESTARTS", minutes > 2 ? minutes : 2),
        .replica_kill_ms = (int)env_long("STRAUM_CHAOS_REPLICA_KILL_MS", 3000),
        .quiet_checks = minutes > 2 ? (int)minutes : 2,
        .trips = (int)env_long("STRAUM_CHAOS_TRIPS", 5000),
        .writer_sleep_ms = 30,
        .seed = (uint64_t)env_long("STRAUM_CHAOS_SEED", (long)time(NULL)),
        .verbose = env_long("STRAUM_CHAOS_VERBOSE", 0) == 1,
    };
    struct chaos_report r;
    chaos_run(&k, &r);
    chaos_print(stdout, &k, &r);
    fflush(stdout);
    const char *report = getenv("STRAUM_CHAOS_REPORT");
    if (report && *report) {
        FILE *f = fopen(report, "a");
        cr_assert_not_null(f, "cannot append to %s", report);
        chaos_print(f, &k, &r);
        fclose(f);
    }
}
