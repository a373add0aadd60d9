/* run.c -- straum-ingest run: open or create the store, load a snapshot when
 * it is new, then follow the slot, reconnecting with backoff when the
 * connection drops. Fatal errors (a dropped slot, a schema change the views
 * cannot follow) stop it with a message saying what to do; the store keeps
 * serving its last consistent state. */
#include "ingest/internal.h"
#include "ingest/metrics.h"

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

volatile int ingest_stop_requested;

void ingest_request_stop(void) { ingest_stop_requested = 1; }

static char *read_file(const char *path, char *err, size_t errlen)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        snprintf(err, errlen, "cannot read %s: %s", path, strerror(errno));
        return NULL;
    }
    char *buf = NULL;
    size_t len = 0, cap = 0;
    for (;;) {
        if (len + 4096 + 1 > cap) {
            cap = cap ? cap * 2 : 8192;
            char *b = realloc(buf, cap);
            if (!b) {
                free(buf);
                fclose(f);
                snprintf(err, errlen, "out of memory");
                return NULL;
            }
            buf = b;
        }
        size_t n = fread(buf + len, 1, 4096, f);
        len += n;
        if (n < 4096)
            break;
    }
    fclose(f);
    buf[len] = '\0';
    return buf;
}

/* Parses the views file, with the file name in front of a positioned error. */
struct sql_view_list *ingest_read_views(const char *path, char **text, char *err, size_t errlen)
{
    *text = read_file(path, err, errlen);
    if (!*text)
        return NULL;
    struct sql_error serr;
    struct sql_view_list *views = sql_parse_views(*text, &serr);
    if (!views) {
        char buf[400];
        snprintf(err, errlen, "%s: %s", path, sql_error_format(&serr, buf, sizeof buf));
        free(*text);
        *text = NULL;
    } else if (rows_check_width(views, err, errlen)) {
        sql_view_list_free(views);
        views = NULL;
        free(*text);
        *text = NULL;
    }
    return views;
}

/* Removes the store's files (never the directory: it may be anything). */
static void wipe_store(const char *dir)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/data.mdb", dir);
    unlink(path);
    snprintf(path, sizeof path, "%s/lock.mdb", dir);
    unlink(path);
}

static bool store_exists(const char *dir)
{
    char path[4096];
    struct stat st;
    snprintf(path, sizeof path, "%s/data.mdb", dir);
    return stat(path, &st) == 0;
}

/* The store's views must be the file's, view for view, and its column
 * types the source's. */
static int check_same(struct store *st, const struct source *src, char *err, size_t errlen)
{
    const struct sql_view_list *have = store_views(st), *want = src->views;
    if (have->nviews != want->nviews) {
        snprintf(err, errlen, "the views file has %d views and the store %d; rerun with "
                              "--rebuild to rebuild the store", want->nviews, have->nviews);
        return -1;
    }
    for (int v = 0; v < want->nviews; v++) {
        if (strcmp(have->views[v].source, want->views[v].source) != 0) {
            snprintf(err, errlen, "view \"%s\" differs from the one the store was built with; "
                                  "rerun with --rebuild to rebuild the store",
                     want->views[v].name);
            return -1;
        }
        const struct store_column_type *a = store_fact_types(st, v), *b = src->view_types[v].fact;
        for (int c = 0; c < want->views[v].nfact_columns; c++)
            if (a[c].type != b[c].type || a[c].scale != b[c].scale) {
                snprintf(err, errlen, "column \"%s\" of view \"%s\" changed type since the store "
                                      "was built; rerun with --rebuild",
                         want->views[v].fact_columns[c].name, want->views[v].name);
                return -1;
            }
    }
    return 0;
}

/* Opens the store, or creates it; *fresh tells whether it needs a load,
 * *stored_lsn the position of one that does not. */
static struct store *open_store(const struct ingest_options *opt, const char *views_text,
                                struct source *src, bool *fresh, uint64_t *stored_lsn,
                                char *err, size_t errlen)
{
    struct store *st = NULL;
    struct store_error serr;
    if (opt->rebuild && store_exists(opt->store_dir)) {
        log_info("--rebuild: removing the store at %s", opt->store_dir);
        wipe_store(opt->store_dir);
    }
    if (store_exists(opt->store_dir)) {
        if (store_open(opt->store_dir, STORE_READ_WRITE, &st, &serr)) {
            snprintf(err, errlen, "%s", serr.message);
            return NULL;
        }
        if (check_same(st, src, err, errlen)) {
            store_close(st);
            return NULL;
        }
        struct store_read *r;
        struct store_catalog cat;
        if (store_read_begin(st, &r, &serr) || store_read_catalog(r, &cat, &serr)) {
            snprintf(err, errlen, "%s", serr.message);
            store_close(st);
            return NULL;
        }
        store_read_end(r);
        if (cat.position.lsn != 0) {
            *fresh = false;
            *stored_lsn = cat.position.lsn;
            return st;
        }
        log_info("the store at %s was never fully loaded; loading it again", opt->store_dir);
        store_close(st);
        wipe_store(opt->store_dir);
    }
    if (store_create(opt->store_dir, views_text, src->view_types, &st, &serr)) {
        snprintf(err, errlen, "%s", serr.message);
        return NULL;
    }
    *fresh = true;
    return st;
}

static void backoff(int64_t *delay_us, int64_t max_us)
{
    struct timespec ts = {*delay_us / 1000000, (*delay_us % 1000000) * 1000};
    while (!ingest_stop_requested && nanosleep(&ts, &ts) && errno == EINTR)
        ;
    *delay_us = *delay_us * 2 > max_us ? max_us : *delay_us * 2;
}

/* Streams, reconnecting with backoff (0.1 s doubling to 5 s) when the
 * connection drops. A full filesystem under the store is waited out
 * instead of ending ingest: each retry streams again from the stored
 * position (1 s doubling to 30 s apart), so room freed by the operator is
 * used within half a minute. */
static int follow(const struct ingest_options *opt, struct source *src, struct store *st,
                  struct physical_start *ps)
{
    int64_t delay = 100000, space_delay = 1000000;
    char err[1024];
    for (;;) {
        err[0] = '\0';
        int rc = opt->wal_physical ? physical_follow(opt, src, st, ps, err, sizeof err)
                                   : stream_follow(opt, src, st, err, sizeof err);
        if (rc == 0)
            return 0;
        if (rc < 0) {
            log_error("%s", err);
            return -1;
        }
        if (ingest_stop_requested)
            return 0;
        imetrics_state(INGEST_RECONNECTING);
        imetrics_reconnect();
        if (rc == 2) {
            log_error("%s (next try in %.0f s)", err, (double)space_delay / 1e6);
            backoff(&space_delay, 30000000);
            continue;
        }
        space_delay = 1000000;
        log_warn("%s; reconnecting in %.1f s", err, (double)delay / 1e6);
        backoff(&delay, 5000000);
    }
}

/* Connects for the start. PostgreSQL not answering yet (the machine's boot
 * order, a restart) is waited for with backoff (1 s doubling to 30 s), as a
 * lost connection is once following; anything else (a bad conninfo, a
 * refused login, no such database) is an error to fix, reported at once.
 * NULL with err; NULL with err empty when a stop was asked meanwhile. */
static PGconn *connect_at_start(const struct ingest_options *opt, char *err, size_t errlen)
{
    int64_t delay = 1000000;
    for (;;) {
        PGconn *c = source_connect(opt->source, false, err, errlen);
        if (c)
            return c;
        PGPing ping = PQping(opt->source);
        if (ping != PQPING_NO_RESPONSE && ping != PQPING_REJECT)
            return NULL;
        log_warn("%s; PostgreSQL does not answer yet, next try in %.0f s", err,
                 (double)delay / 1e6);
        backoff(&delay, 30000000);
        if (ingest_stop_requested) {
            err[0] = '\0';
            return NULL;
        }
    }
}

int ingest_run(const struct ingest_options *opt)
{
    char err[1024], *views_text = NULL;
    struct sql_view_list *views = ingest_read_views(opt->views_path, &views_text, err, sizeof err);
    if (!views) {
        log_error("%s", err);
        return -1;
    }
    struct source src = {0};
    struct physical_start ps = {0};
    struct store *st = NULL;
    struct imetrics_server *ms = NULL;
    int rc = -1;
    PGconn *c = NULL;
    /* Before anything slow, so that a scrape sees a follower starting. */
    if (opt->metrics_listen &&
        !(ms = imetrics_serve(opt->metrics_listen, opt->store_dir, err, sizeof err)))
        goto done;
    c = connect_at_start(opt, err, sizeof err);
    if (!c && !err[0])
        rc = 0; /* stopped while waiting for PostgreSQL */
    if (!c || source_load(c, views, &src, err, sizeof err) ||
        source_compile_filters(&src, err, sizeof err) ||
        (opt->wal_physical && source_load_physical(c, &src, err, sizeof err)))
        goto done;
    bool fresh;
    uint64_t stored_lsn = 0;
    if (!(st = open_store(opt, views_text, &src, &fresh, &stored_lsn, err, sizeof err)))
        goto done;
    /* (physical mode has no publication; physical.c checks its slot) */
    if (!opt->wal_physical && !fresh && upstream_check_slot(c, opt, stored_lsn, err, sizeof err))
        goto done;
    /* A load without the publication would only fail at the first change. */
    if (!opt->wal_physical && fresh && upstream_check(c, &src, opt, false, 0, err, sizeof err))
        goto done;
    PQfinish(c);
    c = NULL;
    struct store_error serr;
    if (opt->max_store_bytes && store_set_max_size(st, opt->max_store_bytes, &serr)) {
        snprintf(err, sizeof err, "%s (--max-store-size): give a larger --max-store-size, or "
                                  "leave it out", serr.message);
        goto done;
    }
    if (fresh)
        imetrics_state(INGEST_SNAPSHOT);
    if (fresh && snapshot_load(opt, &src, st, &ps, err, sizeof err))
        goto done;
    imetrics_state(INGEST_STARTING);
    rc = follow(opt, &src, st, &ps);
    err[0] = '\0';
done:
    if (rc && err[0])
        log_error("%s", err);
    PQfinish(c);
    imetrics_stop(ms); /* before the store closes: a scrape reads data.mdb's size */
    store_close(st);
    source_free(&src);
    physical_start_free(&ps);
    sql_view_list_free(views);
    free(views_text);
    return rc;
}
