/* fuzz_store.c -- builds the serve-side fuzz targets' taxi store (see
 * fuzz_store.h) through the store API, as ingest would. */
#include "tests/fuzz/fuzz_store.h"

#include "store/store.h"
#include "tests/kit/taxi_store.h"
#include "tests/unit/source_file.h"

#include <ftw.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

_Noreturn void fuzz_fail(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "FUZZ FINDING: ");
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n");
    va_end(ap);
    abort();
}

/* Applies trips from..from+n-1, each sign times (1 adds, -1 takes away). */
static void apply_trips(struct store *s, int from, int n, int sign)
{
    struct store_error err;
    for (int i = from; i < from + n; i++) {
        struct trip t = taxi_store_trip(i, FUZZ_START_US, FUZZ_DAYS);
        if (taxi_store_apply(s, &t, sign, &err))
            fuzz_fail("applying trip %d: %s", i, err.message);
    }
}

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)flag;
    (void)ftw;
    return remove(path);
}

void fuzz_remove_tree(const char *dir) { nftw(dir, rm_entry, 8, FTW_DEPTH | FTW_PHYS); }

static char fuzz_dir[256];

static void remove_store(void)
{
    if (fuzz_dir[0])
        fuzz_remove_tree(fuzz_dir);
}

const char *fuzz_store_make(int trips)
{
    const char *tmp = getenv("TMPDIR");
    snprintf(fuzz_dir, sizeof fuzz_dir, "%s/straum-fuzz-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(fuzz_dir))
        fuzz_fail("mkdtemp %s failed", fuzz_dir);
    atexit(remove_store);

    char *views_text = read_source_file("bench/taxi_views.sql");
    if (!views_text)
        fuzz_fail("cannot read bench/taxi_views.sql under %s", STRAUM_SOURCE_DIR);
    /* A position, so /readyz and /metrics have one; lag is not checked
     * (the servers run with --max-lag 0). */
    struct store_position pos = {.lsn = 0x16B3748, .commit_time = FUZZ_START_US,
                                 .contact_time = FUZZ_START_US, .bytes_behind = 0};
    struct store_error err;
    if (taxi_store_make(fuzz_dir, views_text, trips, FUZZ_START_US, FUZZ_DAYS, &pos, &err))
        fuzz_fail("making the store: %s", err.message);
    free(views_text);
    return fuzz_dir;
}

void fuzz_store_add_deltas(const char *dir, int trips, int commits, int each)
{
    struct store *s;
    struct store_error err;
    if (store_open(dir, STORE_READ_WRITE, &s, &err))
        fuzz_fail("store_open read-write: %s", err.message);
    /* Every base takes deltas, however small (SPEC.md §4.4). */
    store_set_inline_fold_bytes(s, 0);
    for (int c = 0; c < commits; c++) {
        apply_trips(s, trips + c * each, each, 1); /* new trips */
        apply_trips(s, c * 2, 2, -1);              /* two of the first load's gone */
        struct store_position pos = {.lsn = 0x16B3748 + 1 + (uint64_t)c,
                                     .commit_time = FUZZ_START_US,
                                     .contact_time = FUZZ_START_US};
        if (store_commit(s, &pos, &err))
            fuzz_fail("store_commit: %s", err.message);
    }
    store_close(s);
}
