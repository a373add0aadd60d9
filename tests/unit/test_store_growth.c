/* test_store_growth.c -- a store whose data.mdb grows far past the size it
 * had when a reader opened it, while eight reader threads of that one
 * process read flat out, as straum-serve's workers do (SPEC.md §4.5).
 *
 * A writer child commits batches of ROWS rides and TEXTS long dictionary
 * texts, so the file grows by about 1 MiB a batch to 80 MiB, past the
 * 64 MiB map LMDB gives a reader that adopts the size the file records, and
 * sets the position to the batch number. Every reader
 * snapshot must total position * ROWS rows in every view and width, and
 * find the last batch's texts byte for byte. Nothing may crash (the ASan
 * tree runs this too). */
#include "tests/unit/store_fixture.h"

#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/wait.h>
#include <time.h>

enum { ROWS = 20, TEXTS = 64, TEXT_BYTES = 16 << 10, BATCHES = 80, THREADS = 8 };

/* The text number i of batch b, TEXT_BYTES long, into buf. */
static void batch_text(uint64_t b, int i, char *buf)
{
    int n = snprintf(buf, TEXT_BYTES, "batch %llu text %d ", (unsigned long long)b, i);
    for (int j = n; j < TEXT_BYTES; j++)
        buf[j] = (char)('a' + (j * 7 + (int)b + i) % 26);
}

static void writer_child(const char *dir, int fd)
{
    struct store *s;
    struct store_error err;
    if (store_open(dir, STORE_READ_WRITE, &s, &err)) {
        dprintf(fd, "error open: %s\n", err.message);
        _exit(1);
    }
    int kind = fixture_fact_index(&store_views(s)->views[0], "kind");
    char *text = malloc(TEXT_BYTES);
    uint64_t rng = 3;
    for (uint64_t b = 1; b <= BATCHES; b++) {
        for (int i = 0; i < ROWS; i++) {
            struct ride r = fixture_ride(&rng);
            for (int v = 0; v < store_views(s)->nviews; v++) {
                struct fixture_delta fd;
                fixture_delta(s, v, &r, 1, &fd);
                if (store_apply(s, &fd.d, &err))
                    goto fail;
            }
        }
        for (int i = 0; i < TEXTS; i++) {
            int64_t id;
            batch_text(b, i, text);
            if (store_dict_intern(s, 0, kind, text, TEXT_BYTES, &id, &err))
                goto fail;
        }
        if (store_commit(s, &(struct store_position){.lsn = b}, &err))
            goto fail;
    }
    uint64_t bytes, map;
    store_size(s, &bytes, &map, &err);
    dprintf(fd, "ok %llu\n", (unsigned long long)bytes);
    free(text);
    store_close(s);
    _exit(0);
fail:
    dprintf(fd, "error: %s\n", err.message);
    _exit(1);
}

struct reader_state {
    struct store *s;
    atomic_bool *stop;
    long snapshots;
    uint64_t last_lsn;
    char failure[400];
};

/* Rows of count 0 over every segment of a view and width; -1 on an error.
 * No Criterion asserts: it runs on reader threads. */
static int64_t total_rows(struct store_read *r, int view, int width)
{
    struct store_segment_iter it;
    struct store_segment seg;
    struct store_error err;
    struct format_error ferr;
    int64_t total = 0, rows[4096];
    if (store_segments_begin(r, view, width, INT64_MIN, INT64_MAX, &it, &err))
        return -1;
    it.merged = true; /* whole cells */
    int rc;
    while ((rc = store_segments_next(&it, &seg, &err)) == 1) {
        int col = format_block_find(&seg.block, STORE_ROLE_COUNT, 0);
        uint32_t n = seg.block.info.ncells;
        if (col < 0 || n >= 4096 || format_block_decode(&seg.block, col, rows, &ferr)) {
            rc = -1;
            break;
        }
        for (uint32_t i = 0; i < n; i++)
            total += rows[i];
    }
    store_segments_end(&it);
    return rc ? -1 : total;
}

/* One snapshot checked; false with st->failure set when it is wrong. */
static bool check_snapshot(struct reader_state *st, char *text)
{
    struct store_read *r;
    struct store_error err;
    struct store_catalog cat;
    if (store_read_begin(st->s, &r, &err)) {
        snprintf(st->failure, sizeof st->failure, "begin: %s", err.message);
        return false;
    }
    bool ok = store_read_catalog(r, &cat, &err) == 0;
    uint64_t lsn = ok ? cat.position.lsn : 0;
    for (int v = 0; ok && v < store_views(st->s)->nviews; v++)
        for (int w = 0; ok && w < store_views(st->s)->views[v].nwidths; w++) {
            int64_t t = total_rows(r, v, w);
            if (t != (int64_t)lsn * ROWS) {
                snprintf(st->failure, sizeof st->failure,
                         "position %llu, view %d width %d: %lld rows, not %lld",
                         (unsigned long long)lsn, v, w, (long long)t, (long long)lsn * ROWS);
                ok = false;
            }
        }
    int kind = fixture_fact_index(&store_views(st->s)->views[0], "kind");
    for (int i = 0; ok && lsn > 0 && i < TEXTS; i += 9) {
        int64_t id;
        const char *got;
        size_t len;
        batch_text(lsn, i, text);
        if (store_dict_find(r, 0, kind, text, TEXT_BYTES, &id) != 0 ||
            store_dict_lookup(r, 0, kind, id, &got, &len) != 0 || len != TEXT_BYTES ||
            memcmp(got, text, len) != 0) {
            snprintf(st->failure, sizeof st->failure, "position %llu: text %d not read back",
                     (unsigned long long)lsn, i);
            ok = false;
        }
    }
    store_read_end(r);
    st->snapshots++;
    st->last_lsn = lsn;
    return ok;
}

static void *reader_thread(void *arg)
{
    struct reader_state *st = arg;
    char *text = malloc(TEXT_BYTES);
    while (!atomic_load(st->stop) && check_snapshot(st, text))
        ;
    free(text);
    return NULL;
}

Test(store_growth, readers_keep_answering_while_the_map_grows_many_times, .timeout = 120)
{
    char dir[64];
    struct store *w = fixture_create(dir);
    struct store_error err;
    cr_assert_eq(store_commit(w, &(struct store_position){.lsn = 0}, &err), 0, "%s", err.message);
    store_close(w);

    struct store *s;
    cr_assert_eq(store_open(dir, STORE_READ_ONLY, &s, &err), 0, "%s", err.message);
    int fds[2];
    cr_assert_eq(pipe(fds), 0);
    pid_t pid = fork();
    if (pid == 0) {
        close(fds[0]);
        writer_child(dir, fds[1]);
    }
    close(fds[1]);
    atomic_bool stop = false;
    struct reader_state st[THREADS];
    pthread_t threads[THREADS];
    for (int i = 0; i < THREADS; i++) {
        st[i] = (struct reader_state){.s = s, .stop = &stop};
        cr_assert_eq(pthread_create(&threads[i], NULL, reader_thread, &st[i]), 0);
    }
    char buf[512] = {0};
    ssize_t got = read(fds[0], buf, sizeof buf - 1); /* the writer's verdict, at its exit */
    int status;
    waitpid(pid, &status, 0);
    close(fds[0]);
    atomic_store(&stop, true);
    for (int i = 0; i < THREADS; i++)
        pthread_join(threads[i], NULL);
    cr_assert(got > 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0, "writer: %s", buf);
    unsigned long long file_bytes = 0;
    cr_assert_eq(sscanf(buf, "ok %llu", &file_bytes), 1, "%s", buf);
    cr_assert_gt(file_bytes, (uint64_t)72 << 20, "data.mdb grew past 64 MiB: %llu bytes",
                 file_bytes);
    long snapshots = 0;
    for (int i = 0; i < THREADS; i++) {
        cr_assert_eq(st[i].failure[0], '\0', "reader %d: %s", i, st[i].failure);
        snapshots += st[i].snapshots;
    }
    cr_assert_geq(snapshots, THREADS * 5, "snapshots checked: %ld", snapshots);
    /* Once the writer is done, every reader sees its last batch. */
    char *text = malloc(TEXT_BYTES);
    struct reader_state last = {.s = s, .stop = &stop};
    cr_assert(check_snapshot(&last, text), "%s", last.failure);
    cr_assert_eq(last.last_lsn, BATCHES);
    free(text);
    store_close(s);
    fixture_remove(dir);
}
