/* test_store_process.c -- the store across processes: readers see whole
 * batches only and never block the writer; a writer killed with SIGKILL at
 * any moment leaves a store that opens, verifies and holds exactly its last
 * committed batch and position.
 *
 * Every batch adds ROWS rows and sets the position to the batch number, so a
 * snapshot is consistent exactly when each width of each view totals
 * position * ROWS rows. */
#include "tests/unit/store_fixture.h"

#include <errno.h>
#include <lmdb.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <time.h>

enum { ROWS = 50 };

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* One batch, without Criterion asserts (it runs in forked children). */
static int write_batch(struct store *s, uint64_t *rng, uint64_t lsn)
{
    struct store_error err;
    for (int i = 0; i < ROWS; i++) {
        struct ride r = fixture_ride(rng);
        for (int v = 0; v < store_views(s)->nviews; v++) {
            struct fixture_delta fd;
            fixture_delta(s, v, &r, 1, &fd);
            if (store_apply(s, &fd.d, &err))
                return -1;
        }
    }
    return store_commit(s, &(struct store_position){.lsn = lsn}, &err);
}

/* Totals rows of every width of every view; -1 if they disagree. */
static int64_t consistent_total(struct store *s, struct store_read *r)
{
    int64_t total = -1;
    for (int v = 0; v < store_views(s)->nviews; v++)
        for (int w = 0; w < store_views(s)->views[v].nwidths; w++) {
            int64_t t = fixture_total_rows(r, v, w);
            if (total >= 0 && t != total)
                return -1;
            total = t;
        }
    return total;
}

static uint64_t snapshot_position(struct store_read *r)
{
    struct store_catalog cat;
    struct store_error err;
    cr_assert_eq(store_read_catalog(r, &cat, &err), 0, "%s", err.message);
    return cat.position.lsn;
}

/* The reader child: reports "checked distinct held_before held_after" or an error. */
static void reader_child(const char *dir, int fd)
{
    struct store *s;
    struct store_error err;
    char msg[256];
    if (store_open(dir, STORE_READ_ONLY, &s, &err)) {
        dprintf(fd, "error open: %s\n", err.message);
        _exit(1);
    }
    /* Hold one snapshot while the writer commits past it: until a fresh
     * snapshot is three commits further (polled, at most 10 s). */
    struct store_read *held;
    store_read_begin(s, &held, &err);
    uint64_t held_lsn = snapshot_position(held);
    int64_t held_total = consistent_total(s, held);
    for (int64_t end = now_ms() + 10000; now_ms() < end; usleep(1000)) {
        struct store_read *fresh;
        if (store_read_begin(s, &fresh, &err)) {
            dprintf(fd, "error begin: %s\n", err.message);
            _exit(1);
        }
        bool moved = snapshot_position(fresh) >= held_lsn + 3;
        store_read_end(fresh);
        if (moved)
            break;
    }
    if (consistent_total(s, held) != held_total || snapshot_position(held) != held_lsn) {
        dprintf(fd, "error: a held snapshot changed\n");
        _exit(1);
    }
    store_read_end(held);
    int checked = 0, distinct = 0;
    uint64_t last = UINT64_MAX, after_hold = 0;
    int64_t until = now_ms() + 1000;
    while (now_ms() < until) {
        struct store_read *r;
        if (store_read_begin(s, &r, &err)) {
            dprintf(fd, "error begin: %s\n", err.message);
            _exit(1);
        }
        uint64_t lsn = snapshot_position(r);
        int64_t total = consistent_total(s, r);
        store_read_end(r);
        if (total != (int64_t)lsn * ROWS) {
            snprintf(msg, sizeof msg, "error: position %llu but %lld rows",
                     (unsigned long long)lsn, (long long)total);
            dprintf(fd, "%s\n", msg);
            _exit(1);
        }
        if (checked++ == 0)
            after_hold = lsn;
        distinct += lsn != last;
        last = lsn;
    }
    dprintf(fd, "%d %d %llu %llu\n", checked, distinct, (unsigned long long)held_lsn,
            (unsigned long long)after_hold);
    store_close(s);
    _exit(0);
}

Test(store_process, readers_see_whole_batches_and_never_block_the_writer, .timeout = 60)
{
    char dir[64];
    struct store *s = fixture_create(dir);
    struct store_error err;
    uint64_t rng = 11, lsn = 0;
    cr_assert_eq(store_commit(s, &(struct store_position){.lsn = 0}, &err), 0, "%s", err.message);
    int fds[2];
    cr_assert_eq(pipe(fds), 0);
    pid_t pid = fork();
    if (pid == 0) {
        close(fds[0]);
        reader_child(dir, fds[1]);
    }
    close(fds[1]);
    int64_t until = now_ms() + 1700;
    while (now_ms() < until)
        cr_assert_eq(write_batch(s, &rng, ++lsn), 0, "batch %llu", (unsigned long long)lsn);
    char buf[512] = {0};
    ssize_t got = read(fds[0], buf, sizeof buf - 1);
    int status;
    waitpid(pid, &status, 0);
    close(fds[0]);
    cr_assert(got > 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0, "reader: %s", buf);
    int checked, distinct;
    unsigned long long held, after;
    cr_assert_eq(sscanf(buf, "%d %d %llu %llu", &checked, &distinct, &held, &after), 4, "%s", buf);
    cr_assert_geq(checked, 5, "snapshots checked: %d", checked);
    cr_assert_geq(distinct, 3, "the reader saw the writer move on: %d positions", distinct);
    cr_assert_geq(after, held + 3,
                  "the writer committed while a snapshot was held (%llu -> %llu)", held, after);
    store_close(s);
    fixture_remove(dir);
}

/* The writer child: commits forever, reporting each committed position. */
static void writer_child(const char *dir, int fd, uint64_t first, uint64_t seed)
{
    struct store *s;
    struct store_error err;
    if (store_open(dir, STORE_READ_WRITE, &s, &err))
        _exit(3);
    uint64_t rng = seed;
    for (uint64_t lsn = first;; lsn++) {
        if (write_batch(s, &rng, lsn))
            _exit(4);
        if (write(fd, &lsn, sizeof lsn) != sizeof lsn)
            _exit(5);
    }
}

Test(store_process, sigkill_mid_commit_keeps_the_last_whole_batch, .timeout = 120)
{
    char dir[64];
    struct store *s = fixture_create(dir);
    struct store_error err;
    cr_assert_eq(store_commit(s, &(struct store_position){.lsn = 0}, &err), 0);
    store_close(s);
    uint64_t position = 0, rng = 99;
    for (int round = 0; round < 12; round++) {
        int fds[2];
        cr_assert_eq(pipe(fds), 0);
        pid_t pid = fork();
        if (pid == 0) {
            close(fds[0]);
            writer_child(dir, fds[1], position + 1, 1000 + (uint64_t)round);
        }
        close(fds[1]);
        /* The kill lands at a random moment after the round's first commit,
         * whatever the machine's load: a writer slowed by a busy machine
         * (the sanitizer tree beside other tests) still moves on each round. */
        uint64_t reported = position, lsn;
        struct pollfd first = {.fd = fds[0], .events = POLLIN};
        cr_assert_eq(poll(&first, 1, 60000), 1, "round %d: no commit within 60 s", round);
        cr_assert_eq(read(fds[0], &lsn, sizeof lsn), (ssize_t)sizeof lsn,
                     "round %d: the writer died before its first commit", round);
        reported = lsn;
        usleep((useconds_t)(fixture_rand(&rng) % 200000));
        kill(pid, SIGKILL);
        int status;
        waitpid(pid, &status, 0);
        cr_assert(WIFSIGNALED(status), "the writer died on its own: status %d", status);
        while (read(fds[0], &lsn, sizeof lsn) == sizeof lsn)
            reported = lsn;
        close(fds[0]);

        cr_assert_eq(store_open(dir, STORE_READ_WRITE, &s, &err), 0, "round %d: %s", round,
                     err.message);
        struct store_read *r;
        cr_assert_eq(store_read_begin(s, &r, &err), 0);
        uint64_t stored = snapshot_position(r);
        cr_assert(stored == reported || stored == reported + 1,
                  "round %d: the store holds position %llu, the writer last reported %llu",
                  round, (unsigned long long)stored, (unsigned long long)reported);
        cr_assert_eq(consistent_total(s, r), (int64_t)stored * ROWS,
                     "round %d: exactly the committed batches", round);
        for (int v = 0; v < store_views(s)->nviews; v++)
            for (int w = 0; w < store_views(s)->views[v].nwidths; w++) {
                struct store_segment_iter it;
                struct store_segment seg;
                cr_assert_eq(store_segments_begin(r, v, w, INT64_MIN, INT64_MAX, &it, &err), 0);
                while (store_segments_next(&it, &seg, &err) == 1)
                    cr_assert_eq(store_verify_segment(r, &seg, &err), 0, "%s", err.message);
                store_segments_end(&it);
            }
        store_read_end(r);
        store_close(s);
        position = stored;
    }
    cr_assert_geq(position, 12, "each round committed at least once");
    fixture_remove(dir);
}

Test(store_process, other_format_versions_are_refused)
{
    char dir[64];
    struct store *s = fixture_create(dir);
    store_close(s);
    /* Rewrite the catalog's version behind the store's back. */
    MDB_env *env;
    MDB_txn *txn;
    MDB_dbi dbi;
    cr_assert_eq(mdb_env_create(&env), 0);
    mdb_env_set_maxdbs(env, 8);
    cr_assert_eq(mdb_env_open(env, dir, 0, 0644), 0);
    cr_assert_eq(mdb_txn_begin(env, NULL, 0, &txn), 0);
    cr_assert_eq(mdb_dbi_open(txn, "catalog", 0, &dbi), 0);
    uint32_t version = STORE_FORMAT_VERSION + 1;
    MDB_val k = {14, "format_version"}, v = {4, &version};
    cr_assert_eq(mdb_put(txn, dbi, &k, &v, 0), 0);
    cr_assert_eq(mdb_txn_commit(txn), 0);
    mdb_env_close(env);
    struct store_error err;
    cr_assert_neq(store_open(dir, STORE_READ_ONLY, &s, &err), 0);
    char want[96];
    snprintf(want, sizeof want, "has format version %d; this build reads version %d",
             STORE_FORMAT_VERSION + 1, STORE_FORMAT_VERSION);
    cr_assert(strstr(err.message, want) != NULL, "%s", err.message);
    fixture_remove(dir);

    /* A store of the version before lacks the dense database: refused for
     * its version, not as "not a Straum store". */
    s = fixture_create(dir);
    store_close(s);
    cr_assert_eq(mdb_env_create(&env), 0);
    mdb_env_set_maxdbs(env, 8);
    cr_assert_eq(mdb_env_open(env, dir, 0, 0644), 0);
    cr_assert_eq(mdb_txn_begin(env, NULL, 0, &txn), 0);
    MDB_dbi dense;
    cr_assert_eq(mdb_dbi_open(txn, "dense", 0, &dense), 0);
    cr_assert_eq(mdb_drop(txn, dense, 1), 0);
    cr_assert_eq(mdb_dbi_open(txn, "catalog", 0, &dbi), 0);
    version = STORE_FORMAT_VERSION - 1;
    cr_assert_eq(mdb_put(txn, dbi, &k, &v, 0), 0);
    cr_assert_eq(mdb_txn_commit(txn), 0);
    mdb_env_close(env);
    cr_assert_neq(store_open(dir, STORE_READ_ONLY, &s, &err), 0);
    snprintf(want, sizeof want, "has format version %d; this build reads version %d",
             STORE_FORMAT_VERSION - 1, STORE_FORMAT_VERSION);
    cr_assert(strstr(err.message, want) != NULL, "%s", err.message);
    fixture_remove(dir);
    cr_assert_neq(store_open("/nonexistent-straum", STORE_READ_ONLY, &s, &err), 0);
    cr_assert(strstr(err.message, "no store at /nonexistent-straum") != NULL, "%s", err.message);
}

Test(store_process, a_full_map_fails_cleanly_and_loses_nothing, .timeout = 60)
{
    char dir[64];
    setenv("STRAUM_STORE_MAX_MAP_MB", "1", 1);
    struct store *s = fixture_create(dir);
    struct store_error err;
    uint64_t rng = 5, lsn = 0;
    int rc = 0;
    while (rc == 0 && lsn < 10000)
        rc = write_batch(s, &rng, ++lsn);
    cr_assert_neq(rc, 0, "a 1 MiB map fills up");
    store_close(s);
    cr_assert_eq(store_open(dir, STORE_READ_ONLY, &s, &err), 0, "%s", err.message);
    struct store_read *r;
    cr_assert_eq(store_read_begin(s, &r, &err), 0);
    uint64_t stored = snapshot_position(r);
    cr_assert_eq(stored, lsn - 1, "every batch before the failing one is there");
    cr_assert_eq(consistent_total(s, r), (int64_t)stored * ROWS);
    store_read_end(r);
    store_close(s);
    unsetenv("STRAUM_STORE_MAX_MAP_MB");
    fixture_remove(dir);
}
