/* env.c -- opening, creating and closing the LMDB environment; the catalog;
 * read transactions.
 *
 * Readers use MDB_NOTLS so that a read transaction belongs to the store_read
 * handle, not to a thread: handles are pooled, reset on end and renewed on
 * begin, which costs no allocation and no lock-table slot per ask.
 *
 * Every process maps data.mdb once, at open, over STORE_MAP_BYTES of address
 * space (a writer over its size limit, never more than that), and never maps
 * it again: LMDB's mdb_env_set_mapsize unmaps the memory that every read
 * transaction of the process points into, so calling it while another thread
 * reads crashes that thread (found by tests/unit/test_store_growth.c: eight
 * reader threads and a writer growing the file past the size the readers
 * opened at). A writer's limit is at most STORE_MAP_BYTES, so a reader's map
 * always covers every page a writer can write, and MDB_MAP_RESIZED cannot
 * happen (SPEC.md §4.5). */
#include "store/internal.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>


static int64_t now_usec(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

/* A whole number from the environment variable name; false when it is
 * unset or not one. */
static bool env_number(const char *name, unsigned long long *out)
{
    const char *s = getenv(name);
    char *end;
    if (!s || !*s)
        return false;
    *out = strtoull(s, &end, 10);
    return *end == '\0';
}

/* STRAUM_STORE_INLINE_FOLD_BYTES sets store_set_inline_fold_bytes for a
 * writer: tests use 0 to make every base large at the small scales they
 * run. Unset or not a number: 2 MiB. */
static size_t inline_fold_from_env(void)
{
    unsigned long long bytes;
    return env_number("STRAUM_STORE_INLINE_FOLD_BYTES", &bytes) ? (size_t)bytes
                                                                : (size_t)2 << 20;
}

/* The map the environment variable `name` asks for, in MiB, when it is
 * below STORE_MAP_BYTES; else STORE_MAP_BYTES. */
static size_t map_from_env(const char *name)
{
    unsigned long long mb;
    if (env_number(name, &mb) && mb > 0 && mb < STORE_MAP_BYTES >> 20)
        return (size_t)mb << 20;
    return STORE_MAP_BYTES;
}

/* STRAUM_STORE_READER_MAP_MB lowers a reader's map below STORE_MAP_BYTES:
 * the ThreadSanitizer tests set it, whose address space cannot hold a
 * writer's and a reader's 1 TiB maps at once (their stores stay small). */
static size_t reader_map_from_env(void) { return map_from_env("STRAUM_STORE_READER_MAP_MB"); }

static size_t max_map_from_env(void)
{
    /* STRAUM_STORE_MAX_MAP_MB caps a writer's map: tests use it to simulate
     * a full disk without filling one. It cannot raise the cap past
     * STORE_MAP_BYTES, the map a reader has unless the tests lower it. */
    return map_from_env("STRAUM_STORE_MAX_MAP_MB");
}

/* A process that dies inside a read transaction (a straum-serve replica
 * SIGKILLed or OOM-killed mid-ask) leaves its LMDB reader slot taken, at
 * that snapshot: LMDB then reuses no page freed after it, so data.mdb grows
 * with every commit and never stops (found by tests/e2e/test_chaos.c: a
 * store of 2 MiB of data reached 400 MiB within a minute after one replica
 * kill), and the slots of dead processes add up towards MDB_READERS_FULL.
 * mdb_reader_check frees the slots whose process is gone (LMDB tells by the
 * lock each reader process holds on lock.mdb). */
static void clear_dead_readers(struct store *s)
{
    int dead = 0;
    mdb_reader_check(s->env, &dead);
}

static int open_env(struct store *s, const char *dir, struct store_error *err)
{
    int rc = mdb_env_create(&s->env);
    if (rc)
        return store_lmdb_error(err, rc, "creating the LMDB environment");
    mdb_env_set_maxdbs(s->env, 8);
    mdb_env_set_maxreaders(s->env, 1024);
    /* The one map of this process: a reader's covers any store a writer
     * can make; a writer's is its size limit, reached with MDB_MAP_FULL.
     * Address space, not memory: pages come in as they are read, and the
     * file grows only by the pages written (no MDB_WRITEMAP, so LMDB never
     * extends data.mdb to the map size). */
    s->max_map_size = s->mode == STORE_READ_ONLY ? reader_map_from_env() : max_map_from_env();
    s->map_size = s->max_map_size;
    if ((rc = mdb_env_set_mapsize(s->env, s->map_size)))
        return store_lmdb_error(err, rc, "setting the map size");
    unsigned flags = MDB_NOTLS | (s->mode == STORE_READ_ONLY ? MDB_RDONLY : 0);
    rc = mdb_env_open(s->env, dir, flags, 0644);
    if (rc == ENOENT)
        return store_fail(err, "no store at %s (run straum-ingest to create one)", dir);
    if (rc)
        return store_lmdb_error(err, rc, dir);
    MDB_envinfo info;
    mdb_env_info(s->env, &info);
    s->map_size = info.me_mapsize;
    int fd;
    struct stat st;
    if (mdb_env_get_fd(s->env, &fd) || fstat(fd, &st))
        return store_fail(err, "reading the identity of %s/data.mdb failed", dir);
    s->data_dev = st.st_dev;
    s->data_ino = st.st_ino;
    clear_dead_readers(s);
    return 0;
}

/* How often a reading process looks at data.mdb's identity on disk. A
 * stat per snapshot walked the path on every ask, 7% of a light ask's
 * server time under load; once a millisecond, a snapshot begun 1 ms after
 * a replacement still sees it, and a replacement (a rebuild, a restore)
 * takes far longer than that to make. */
#define IDENTITY_STAT_US 1000

int64_t store_monotonic_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

/* Whether the directory holds another store than the one this handle
 * opened, seen from the snapshot txn: data.mdb gone or another file (a
 * rebuild unlinks it and makes a new one; a restore renames one in), or
 * another catalog id in the file this handle maps (a copy written over it
 * in place). A stat at most every IDENTITY_STAT_US (its finding kept for
 * good: a replaced store stays replaced) and one catalog read per
 * snapshot. */
static bool store_replaced(struct store *s, MDB_txn *txn)
{
    if (atomic_load(&s->replaced))
        return true;
    int64_t now = store_monotonic_us(); /* a clock set back must not stop the stats */
    if (now - atomic_load(&s->identity_seen_us) >= IDENTITY_STAT_US) {
        struct stat st;
        if (stat(s->data_path, &st))
            return true; /* not kept: a failure other than a file gone may pass */
        if (st.st_dev != s->data_dev || st.st_ino != s->data_ino) {
            atomic_store(&s->replaced, true);
            return true;
        }
        atomic_store(&s->identity_seen_us, now);
    }
    if (!s->has_id)
        return false;
    MDB_val k = {sizeof CATALOG_ID - 1, CATALOG_ID}, v;
    return mdb_get(txn, s->catalog, &k, &v) || v.mv_size != STORE_ID_BYTES ||
           memcmp(v.mv_data, s->id, STORE_ID_BYTES) != 0;
}

int store_txn_begin(struct store *s, unsigned flags, MDB_txn **txn, struct store_error *err)
{
    /* The writer clears dead readers too, at most once a second: a replica
     * killed and never started again must not pin the store either. */
    static _Atomic int64_t last_clear;
    int64_t now = now_usec();
    if (!(flags & MDB_RDONLY) && now - atomic_load(&last_clear) >= 1000000) {
        atomic_store(&last_clear, now);
        clear_dead_readers(s);
    }
    int rc = mdb_txn_begin(s->env, NULL, flags, txn);
    if (rc == MDB_MAP_RESIZED) /* a writer with a map larger than ours (another build) */
        return store_fail(err, "the store at %s has grown past the %.0f GiB this process "
                               "mapped at open; open it again",
                          s->dir, (double)s->map_size / (1 << 30));
    return rc ? store_lmdb_error(err, rc, "beginning a transaction") : 0;
}

/* Opens the named databases from `first` on (0: all; 1: all but the
 * catalog, which an open reads first, so that a store of another format
 * version, which may lack some, is refused for its version). */
static int open_dbis(struct store *s, MDB_txn *txn, bool create, size_t first,
                     struct store_error *err)
{
    static const char *const names[] = {"catalog", "dict", "dictrev", "dense", "seg",
                                        "values"};
    MDB_dbi *dbis[] = {&s->catalog, &s->dict, &s->dictrev, &s->dense, &s->seg, &s->values};
    for (size_t i = first; i < sizeof names / sizeof names[0]; i++) {
        int rc = mdb_dbi_open(txn, names[i], create ? MDB_CREATE : 0, dbis[i]);
        if (rc == MDB_NOTFOUND)
            return store_fail(err, "%s is not a Straum store (no %s database)", s->dir,
                              names[i]);
        if (rc)
            return store_lmdb_error(err, rc, "opening a named database");
    }
    return 0;
}

static int catalog_get(MDB_txn *txn, struct store *s, const char *key, MDB_val *val)
{
    MDB_val k = {strlen(key), (void *)key};
    return mdb_get(txn, s->catalog, &k, val);
}

static int catalog_put(MDB_txn *txn, struct store *s, const char *key, const void *data,
                       size_t len)
{
    MDB_val k = {strlen(key), (void *)key}, v = {len, (void *)data};
    return mdb_put(txn, s->catalog, &k, &v, 0);
}

/* Reads the version and the views; refuses what this build cannot read. */
static int load_catalog(struct store *s, MDB_txn *txn, struct store_error *err)
{
    MDB_val v;
    int rc = catalog_get(txn, s, CATALOG_VERSION, &v);
    if (rc == MDB_NOTFOUND || (rc == 0 && v.mv_size != 4))
        return store_fail(err, "%s is not a Straum store (no format version)", s->dir);
    if (rc)
        return store_lmdb_error(err, rc, "reading the catalog");
    uint32_t version;
    memcpy(&version, v.mv_data, 4);
    if (version != STORE_FORMAT_VERSION)
        return store_fail(err, "the store at %s has format version %u; this build reads "
                               "version %d (rebuild the store with straum-ingest)",
                          s->dir, version, STORE_FORMAT_VERSION);
    if ((rc = catalog_get(txn, s, CATALOG_VIEWS, &v)))
        return store_lmdb_error(err, rc, "reading the views from the catalog");
    char *text = malloc(v.mv_size + 1);
    if (!text)
        return store_fail(err, "out of memory");
    memcpy(text, v.mv_data, v.mv_size);
    text[v.mv_size] = '\0';
    struct sql_error serr;
    s->views = sql_parse_views(text, &serr);
    free(text);
    if (!s->views) {
        char buf[300];
        return store_fail(err, "the catalog's views do not parse: %s",
                          sql_error_format(&serr, buf, sizeof buf));
    }
    if (catalog_get(txn, s, CATALOG_ID, &v) == 0 && v.mv_size == STORE_ID_BYTES) {
        memcpy(s->id, v.mv_data, STORE_ID_BYTES);
        s->has_id = true;
    }
    if (dense_check_views(s->views, err))
        return -1;
    if ((rc = catalog_get(txn, s, CATALOG_TYPES, &v)))
        return store_lmdb_error(err, rc, "reading the column types from the catalog");
    return types_decode(s->views, v.mv_data, v.mv_size, &s->types, err);
}

static struct store *store_alloc(const char *dir, enum store_mode mode)
{
    struct store *s = calloc(1, sizeof *s);
    if (!s)
        return NULL;
    s->dir = strdup(dir);
    s->mode = mode;
    size_t n = strlen(dir) + sizeof "/data.mdb";
    if ((s->data_path = malloc(n)))
        snprintf(s->data_path, n, "%s/data.mdb", dir);
    s->cache_bytes = STORE_CACHE_BYTES;
    s->inline_fold_bytes = inline_fold_from_env();
    s->fold_budget_us = STORE_FOLD_AFTER_COMMIT_US;
    pthread_mutex_init(&s->read_lock, NULL);
    if (!s->dir || !s->data_path) {
        free(s->dir);
        free(s->data_path);
        free(s);
        return NULL;
    }
    return s;
}

static int write_new_catalog(struct store *s, MDB_txn *txn, const char *views_text,
                             struct store_error *err)
{
    uint32_t version = STORE_FORMAT_VERSION;
    int64_t created = now_usec();
    uint8_t pos[32];
    position_encode(&(struct store_position){0}, pos);
    size_t need = types_encode(s->views, s->types, NULL, 0);
    uint8_t *types = malloc(need ? need : 1);
    if (!types)
        return store_fail(err, "out of memory");
    types_encode(s->views, s->types, types, need);
    int rc = catalog_put(txn, s, CATALOG_VERSION, &version, 4);
    if (!rc)
        rc = catalog_put(txn, s, CATALOG_VIEWS, views_text, strlen(views_text));
    if (!rc)
        rc = catalog_put(txn, s, CATALOG_CREATED, &created, 8);
    if (!rc)
        rc = catalog_put(txn, s, CATALOG_POSITION, pos, sizeof pos);
    if (!rc)
        rc = catalog_put(txn, s, CATALOG_TYPES, types, need);
    /* The store's identity: random, so that a store made again in the same
     * directory (--rebuild) is told from the one a reader opened. */
    if (!rc && getrandom(s->id, sizeof s->id, 0) == (ssize_t)sizeof s->id) {
        s->has_id = true;
        rc = catalog_put(txn, s, CATALOG_ID, s->id, sizeof s->id);
    }
    free(types);
    return rc ? store_lmdb_error(err, rc, "writing the catalog") : 0;
}

static int copy_types(struct store *s, const struct store_view_types *types,
                      struct store_error *err)
{
    s->types = calloc((size_t)s->views->nviews, sizeof *s->types);
    if (!s->types)
        return store_fail(err, "out of memory");
    for (int v = 0; v < s->views->nviews; v++) {
        int n = s->views->views[v].nfact_columns;
        s->types[v] = calloc((size_t)n + 1, sizeof **s->types);
        if (!s->types[v])
            return store_fail(err, "out of memory");
        memcpy(s->types[v], types[v].fact, sizeof **s->types * (size_t)n);
    }
    return 0;
}

int store_create(const char *dir, const char *views_text, const struct store_view_types *types,
                 struct store **out, struct store_error *err)
{
    struct sql_error serr;
    struct store *s = store_alloc(dir, STORE_READ_WRITE);
    if (!s)
        return store_fail(err, "out of memory");
    if (mkdir(dir, 0755) && errno != EEXIST) {
        store_fail(err, "cannot create %s: %s", dir, strerror(errno));
        goto fail;
    }
    struct stat st;
    char path[4096];
    snprintf(path, sizeof path, "%s/data.mdb", dir);
    if (stat(path, &st) == 0) {
        store_fail(err, "%s already holds a store", dir);
        goto fail;
    }
    if (!(s->views = sql_parse_views(views_text, &serr))) {
        char buf[300];
        store_fail(err, "%s", sql_error_format(&serr, buf, sizeof buf));
        goto fail;
    }
    if (dense_check_views(s->views, err) || copy_types(s, types, err) || open_env(s, dir, err))
        goto fail;
    MDB_txn *txn;
    if (store_txn_begin(s, 0, &txn, err))
        goto fail;
    if (open_dbis(s, txn, true, 0, err) || write_new_catalog(s, txn, views_text, err)) {
        mdb_txn_abort(txn);
        goto fail;
    }
    int rc = mdb_txn_commit(txn);
    if (rc) {
        store_lmdb_error(err, rc, "committing the new store");
        goto fail;
    }
    if (pending_new(s, err))
        goto fail;
    *out = s;
    return 0;
fail:
    store_close(s);
    return -1;
}

int store_open(const char *dir, enum store_mode mode, struct store **out,
               struct store_error *err)
{
    struct store *s = store_alloc(dir, mode);
    if (!s)
        return store_fail(err, "out of memory");
    MDB_txn *txn;
    if (open_env(s, dir, err))
        goto fail;
    /* A writer SIGKILLed inside mdb_txn_commit, after its meta page was
     * written but before it published the new transaction id in lock.mdb,
     * leaves a commit that is on disk but that read transactions do not see
     * yet: LMDB publishes it when the next writer takes the write lock. So
     * ingest takes it once before reading its position; otherwise it would
     * resume from the older position and apply again, on top of the newer
     * state, the transactions that commit already holds (found by
     * tests/e2e/test_chaos.c: rows doubled after an ingest kill). */
    if (mode == STORE_READ_WRITE) {
        if (store_txn_begin(s, 0, &txn, err))
            goto fail;
        mdb_txn_abort(txn);
    }
    if (store_txn_begin(s, MDB_RDONLY, &txn, err))
        goto fail;
    int rc = mdb_dbi_open(txn, "catalog", 0, &s->catalog);
    if (rc == MDB_NOTFOUND)
        store_fail(err, "%s is not a Straum store (no catalog database)", s->dir);
    else if (rc)
        store_lmdb_error(err, rc, "opening a named database");
    rc = rc || load_catalog(s, txn, err) || open_dbis(s, txn, false, 1, err);
    /* DBI handles opened in a read transaction stay valid after commit. */
    if (rc) {
        mdb_txn_abort(txn);
        goto fail;
    }
    mdb_txn_commit(txn);
    if (mode == STORE_READ_WRITE && pending_new(s, err))
        goto fail;
    *out = s;
    return 0;
fail:
    store_close(s);
    return -1;
}

void store_close(struct store *s)
{
    if (!s)
        return;
    pending_free(s);
    while (s->free_reads) {
        struct store_read *r = s->free_reads;
        s->free_reads = r->next_free;
        mdb_txn_abort(r->txn);
        free(r);
    }
    if (s->env)
        mdb_env_close(s->env);
    if (s->views) {
        types_free(s->views, s->types);
        sql_view_list_free(s->views);
    }
    pthread_mutex_destroy(&s->read_lock);
    free(s->dir);
    free(s->data_path);
    free(s);
}

const struct sql_view_list *store_views(const struct store *s) { return s->views; }
const struct store_column_type *store_fact_types(const struct store *s, int view)
{
    return s->types[view];
}
const char *store_dir(const struct store *s) { return s->dir; }

int store_read_begin(struct store *s, struct store_read **out, struct store_error *err)
{
    pthread_mutex_lock(&s->read_lock);
    struct store_read *r = s->free_reads;
    if (r)
        s->free_reads = r->next_free;
    pthread_mutex_unlock(&s->read_lock);
    if (r && mdb_txn_renew(r->txn)) {
        mdb_txn_abort(r->txn); /* a renew that failed: start afresh */
        free(r);
        r = NULL;
    }
    if (!r) {
        r = calloc(1, sizeof *r);
        if (!r)
            return store_fail(err, "out of memory");
        r->s = s;
        if (store_txn_begin(s, MDB_RDONLY, &r->txn, err)) {
            free(r);
            return -1;
        }
    }
    if (store_replaced(s, r->txn)) {
        store_read_end(r);
        store_fail(err, "the store at %s was replaced (rebuilt or restored) after this process "
                        "opened it; restart this process to read the new one",
                   s->dir);
        err->kind = STORE_ERR_REPLACED;
        return -1;
    }
    *out = r;
    return 0;
}

uint64_t store_read_snapshot_id(const struct store_read *r) { return mdb_txn_id(r->txn); }

void store_read_end(struct store_read *r)
{
    if (!r)
        return;
    struct store *s = r->s;
    mdb_txn_reset(r->txn);
    pthread_mutex_lock(&s->read_lock);
    r->next_free = s->free_reads;
    s->free_reads = r;
    pthread_mutex_unlock(&s->read_lock);
}

int store_read_catalog(struct store_read *r, struct store_catalog *out, struct store_error *err)
{
    struct store *s = r->s;
    MDB_val v;
    memset(out, 0, sizeof *out);
    int rc = catalog_get(r->txn, s, CATALOG_VERSION, &v);
    if (rc || v.mv_size != 4)
        return store_fail(err, "the catalog has no format version");
    memcpy(&out->format_version, v.mv_data, 4);
    if (catalog_get(r->txn, s, CATALOG_CREATED, &v) == 0 && v.mv_size == 8)
        memcpy(&out->created_at, v.mv_data, 8);
    if ((rc = catalog_get(r->txn, s, CATALOG_POSITION, &v)) || v.mv_size != 32)
        return store_fail(err, "the catalog has no position");
    position_decode(v.mv_data, &out->position);
    if ((rc = catalog_get(r->txn, s, CATALOG_VIEWS, &v)))
        return store_lmdb_error(err, rc, "reading the views");
    out->views_text = v.mv_data; /* not NUL-terminated in the map */
    out->views_len = v.mv_size;
    return 0;
}

/* Writes the position inside the writer's transaction. */
int store_put_position(struct store *s, MDB_txn *txn, const struct store_position *pos)
{
    uint8_t buf[32];
    position_encode(pos, buf);
    return catalog_put(txn, s, CATALOG_POSITION, buf, sizeof buf);
}
