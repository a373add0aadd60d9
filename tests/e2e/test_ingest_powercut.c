/* test_ingest_powercut.c -- the store survives a power cut: losing every
 * write after its last fsync, not only the process (kill -9 keeps the page
 * cache).
 *
 * straum-ingest follows random change batches with powercut_shim.so
 * preloaded (see there): beside data.mdb it keeps data.mdb.synced, the file
 * as of its last sync. At a random moment ingest is killed and the synced
 * file put in data.mdb's place, lock.mdb removed, as a reboot would find
 * them. Then the store must open and verify (straum-dump verify), hold a
 * position no older than the last one it had caught up to, and a restarted
 * ingest must catch up to exactly PostgreSQL's cells: nothing lost, nothing
 * applied twice. CUTS cuts in a row on one store, of three kinds in turn:
 * inside a sync the shim holds (writes not yet durable), right after a
 * commit ingest made under the shim (so some cut must keep it: the shadow
 * follows every sync, not only its first copy), and at a random moment. */
#include "tests/e2e/oracle.h"
#include "tests/e2e/taxi_db.h"

#include <criterion/criterion.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

enum { CUTS = 20 };

static bool same_file(const char *a, const char *b)
{
    FILE *fa = fopen(a, "rb"), *fb = fopen(b, "rb");
    bool same = fa && fb;
    while (same) {
        int ca = fgetc(fa), cb = fgetc(fb);
        same = ca == cb;
        if (ca == EOF || cb == EOF)
            break;
    }
    if (fa)
        fclose(fa);
    if (fb)
        fclose(fb);
    return same;
}

Test(ingest_powercut, the_store_survives_losing_every_write_after_its_last_sync,
     .timeout = 600)
{
    struct taxi_db db;
    taxi_db_create(&db, NULL, 2000);
    char log[8192];
    cr_assert_eq(taxi_ingest_once(&db, log, sizeof log), 0, "%s", log);
    char data[256], synced[256], partial[256], unsynced[256], lockf[256], cmd[1024];
    snprintf(data, sizeof data, "%s/data.mdb", db.store);
    snprintf(synced, sizeof synced, "%s/data.mdb.synced", db.store);
    snprintf(partial, sizeof partial, "%s/data.mdb.synced.partial", db.store);
    snprintf(unsynced, sizeof unsynced, "%s/data.mdb.unsynced", db.store);
    snprintf(lockf, sizeof lockf, "%s/lock.mdb", db.store);
    uint64_t caught_up = oracle_store_position(db.store);
    unsigned seed = (unsigned)time(NULL);
    srand(seed);
    /* survived: cuts after which the store verified, held its synced
     * position and caught up to PostgreSQL; shadowed: cuts after ingest
     * opened the store; dropped: of those, cuts that lost writes the page
     * cache held; advanced: cuts that kept commits made since ingest
     * started (the shadow follows syncs, not only its first copy). */
    int survived = 0, dropped = 0, shadowed = 0, advanced = 0;
    const char *asan = getenv("ASAN_OPTIONS");
    char *asan_saved = asan ? strdup(asan) : NULL, asan_shim[512];
    /* The shim is not sanitized: the ASan runtime need not come first. */
    snprintf(asan_shim, sizeof asan_shim, "%s%sverify_asan_link_order=0",
             asan_saved ? asan_saved : "", asan_saved ? ":" : "");
    for (int cut = 0; cut < CUTS; cut++) {
        /* Odd cuts come while a sync holds writes not yet durable (the
         * shim's slow flush, data.mdb.unsynced present); cuts 2, 6, 10 ...
         * once a commit made under the shim is visible; the rest at a
         * random moment. */
        bool in_flush = cut % 2 == 1, after_commit = cut % 4 == 2;
        unlink(unsynced);
        setenv("LD_PRELOAD", POWERCUT_SHIM, 1);
        setenv("STRAUM_POWERCUT", "1", 1);
        if (in_flush)
            setenv("STRAUM_POWERCUT_HOLD_US", "200000", 1);
        setenv("ASAN_OPTIONS", asan_shim, 1);
        taxi_ingest_start(&db, NULL);
        unsetenv("LD_PRELOAD");
        unsetenv("STRAUM_POWERCUT");
        unsetenv("STRAUM_POWERCUT_HOLD_US");
        if (asan_saved)
            setenv("ASAN_OPTIONS", asan_saved, 1);
        else
            unsetenv("ASAN_OPTIONS");
        const char *what = taxi_random_batch(&db);
        if (rand() % 2)
            taxi_random_batch(&db);
        /* The cut: inside a held flush (waited for, 30 s at most), once a
         * commit is visible, or at a random moment while ingest applies
         * the changes. */
        if (in_flush) {
            struct stat m;
            for (int i = 0; i < 30000 && stat(unsynced, &m) != 0; i++)
                usleep(1000);
            cr_assert_eq(stat(unsynced, &m), 0,
                         "cut %d: ingest never synced writes within 30 s", cut);
        } else if (after_commit) {
            /* A random batch may change no row (a delete of a zone that is
             * gone): these inserts always make a commit to wait for. A
             * commit readers see has had its pages synced and its meta page
             * written through LMDB's O_DSYNC descriptor, so the shadow holds
             * it. */
            taxi_db_add_trips(&db, 20, (double)cut / CUTS);
            uint64_t target = oracle_committed_lsn(db.pg);
            cr_assert(oracle_wait_position(db.store, target, 120 * 1000),
                      "cut %d: ingest did not commit the changes within 120 s", cut);
        } else {
            usleep((useconds_t)(50000 + rand() % 400000));
        }
        taxi_ingest_kill(&db);
        unlink(unsynced);
        struct stat st;
        if (stat(synced, &st) == 0) { /* else cut before ingest opened the store */
            shadowed++;
            dropped += !same_file(data, synced);
            cr_assert_eq(rename(synced, data), 0);
        }
        unlink(partial); /* a shadow the cut caught being copied: never used */
        unlink(lockf);

        snprintf(cmd, sizeof cmd, "%s --store %s verify 2>&1", STRAUM_DUMP_BIN, db.store);
        FILE *p = popen(cmd, "r");
        cr_assert_not_null(p);
        size_t got = fread(log, 1, sizeof log - 1, p);
        log[got] = '\0';
        cr_assert_eq(pclose(p), 0,
                     "cut %d (seed %u, %s; %d cuts survived): straum-dump verify failed:\n%s",
                     cut, seed, what, survived, log);
        uint64_t at = oracle_store_position(db.store);
        cr_assert_geq(at, caught_up,
                      "cut %d (seed %u; %d cuts survived): the store went back past a synced "
                      "commit", cut, seed, survived);
        advanced += at > caught_up;
        int rc = taxi_ingest_once(&db, log, sizeof log);
        cr_assert_eq(rc, 0, "cut %d (seed %u; %d cuts survived): the restart failed:\n%s", cut,
                     seed, survived, log);
        char when[160];
        snprintf(when, sizeof when, "after cut %d (seed %u, %s; %d cuts survived)", cut, seed,
                 what, survived);
        taxi_check(&db, when);
        caught_up = oracle_store_position(db.store);
        survived++;
    }
    free(asan_saved);
    fprintf(stderr,
            "ingest_powercut: %d of %d cuts survived (seed %u): %d after ingest opened the "
            "store, %d of them dropping unsynced writes, %d keeping commits made since ingest "
            "started\n",
            survived, CUTS, seed, shadowed, dropped, advanced);
    cr_assert_eq(survived, CUTS);
    cr_assert_geq(shadowed, CUTS / 2, "most cuts come after ingest opened the store");
    cr_assert_gt(advanced, 0, "no cut kept a commit made under the shim: the shadow never "
                              "followed a sync");
    cr_assert_gt(dropped, 0, "no cut came while ingest had unsynced writes: the test cut "
                             "nothing");
    taxi_db_destroy(&db);
}
