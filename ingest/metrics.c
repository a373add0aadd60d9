/* metrics.c -- straum-ingest's counters and their Prometheus text, served
 * by libmicrohttpd on --metrics-listen (metrics.h). SPEC.md "Logs and
 * metrics" lists every series. */
#include "ingest/metrics.h"
#include "ingest/internal.h"
#include "base/listen.h"

#include <microhttpd.h>
#include <pthread.h>
#include <netdb.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>

/* Upper bounds of the commit duration buckets, ns; +Inf follows. */
static const int64_t bucket_ns[] = {
    500000, 1000000, 2500000, 5000000, 10000000, 25000000, 50000000, 100000000,
    250000000, 500000000, 1000000000, 2500000000, 5000000000, 10000000000,
};
static const char *const bucket_le[] = {
    "0.0005", "0.001", "0.0025", "0.005", "0.01", "0.025", "0.05", "0.1",
    "0.25", "0.5", "1", "2.5", "5", "10",
};
#define NBUCKETS ((int)(sizeof bucket_ns / sizeof bucket_ns[0]) + 1)

static const char *const state_names[INGEST_NSTATES] = {
    "starting", "snapshot", "following", "reconnecting",
};
static const char *const change_names[NCHANGES] = {"insert", "update", "delete", "truncate"};

/* Static storage: zero is a valid initial value for these atomics. */
static struct {
    atomic_int state;
    atomic_uint_fast64_t applied_lsn, source_lsn;
    /* The stored position's four fields (a scrape may read them torn
     * between two commits: each is a figure of one or the other). */
    atomic_uint_fast64_t pos_lsn, pos_bytes_behind;
    atomic_int_fast64_t pos_commit_time, pos_contact_time;
    atomic_uint_fast64_t txns, changes[NCHANGES];
    atomic_uint_fast64_t snapshot_rows, reconnects, spool_bytes;
    atomic_uint_fast64_t commit_buckets[NBUCKETS], commit_sum_ns;
    atomic_uint_fast64_t commit_failures;
    atomic_int fold_pending;
} M;

#define ADD(a, n) atomic_fetch_add_explicit(&(a), (n), memory_order_relaxed)
#define SET(a, v) atomic_store_explicit(&(a), (v), memory_order_relaxed)
#define GET(a) atomic_load_explicit(&(a), memory_order_relaxed)

void imetrics_state(enum ingest_state state) { SET(M.state, (int)state); }
void imetrics_applied_lsn(uint64_t lsn) { SET(M.applied_lsn, lsn); }
void imetrics_source_lsn(uint64_t lsn) { SET(M.source_lsn, lsn); }
void imetrics_snapshot_rows(uint64_t n) { ADD(M.snapshot_rows, n); }
void imetrics_reconnect(void) { ADD(M.reconnects, 1); }

/* The load's phase changes a few times per load and are read per
 * scrape: a lock costs nothing there. Rows change per batch: an atomic. */
static struct {
    pthread_mutex_t lock;
    char phase[16];
    int64_t estimated;
    atomic_int_fast64_t rows;
} L = {.lock = PTHREAD_MUTEX_INITIALIZER};

void imetrics_load(const char *table, const char *phase, int64_t rows, double estimated)
{
    pthread_mutex_lock(&L.lock);
    snprintf(L.phase, sizeof L.phase, "%s", table && phase ? phase : "");
    L.estimated = estimated >= 0 ? (int64_t)estimated : -1;
    SET(L.rows, rows);
    pthread_mutex_unlock(&L.lock);
}

void imetrics_load_rows(int64_t rows) { SET(L.rows, rows); }
void imetrics_spool_bytes(uint64_t bytes) { SET(M.spool_bytes, bytes); }
void imetrics_fold_pending(bool pending) { SET(M.fold_pending, pending ? 1 : 0); }

void imetrics_position(const struct store_position *pos)
{
    SET(M.pos_lsn, pos->lsn);
    SET(M.pos_commit_time, pos->commit_time);
    SET(M.pos_contact_time, pos->contact_time);
    SET(M.pos_bytes_behind, pos->bytes_behind);
}

static void imetrics_batch_stored(const struct ingest_batch *b)
{
    if (b->txns)
        ADD(M.txns, b->txns);
    for (int k = 0; k < NCHANGES; k++)
        if (b->changes[k])
            ADD(M.changes[k], b->changes[k]);
}

typedef int (*commit_fn)(struct store *st, const struct store_position *pos,
                         struct store_error *err);

static int timed_commit(commit_fn commit, struct store *st, const struct store_position *pos,
                        const struct ingest_batch *batch, struct store_error *err)
{
    int64_t t0 = mono_ns();
    if (commit(st, pos, err)) {
        ADD(M.commit_failures, 1);
        return -1;
    }
    int64_t ns = mono_ns() - t0;
    int b = 0;
    while (b < NBUCKETS - 1 && ns > bucket_ns[b])
        b++;
    ADD(M.commit_buckets[b], 1);
    ADD(M.commit_sum_ns, (uint_fast64_t)ns);
    if (batch)
        imetrics_batch_stored(batch);
    /* Last, and released: a scrape that reads this position (acquire)
     * sees the counts above. */
    atomic_store_explicit(&M.pos_commit_time, pos->commit_time, memory_order_relaxed);
    atomic_store_explicit(&M.pos_contact_time, pos->contact_time, memory_order_relaxed);
    atomic_store_explicit(&M.pos_bytes_behind, pos->bytes_behind, memory_order_relaxed);
    atomic_store_explicit(&M.pos_lsn, pos->lsn, memory_order_release);
    struct logfmt_line l;
    if (logfmt_begin(&l, LOGFMT_DEBUG, "store commit")) {
        char lsn[32];
        logfmt_str(&l, "lsn", lsn_text(pos->lsn, lsn));
        logfmt_int(&l, "dur_us", ns / 1000);
        logfmt_end(&l);
    }
    return 0;
}

int ingest_store_commit(struct store *st, const struct store_position *pos,
                        const struct ingest_batch *batch, struct store_error *err)
{
    return timed_commit(store_commit, st, pos, batch, err);
}

int ingest_store_commit_cold(struct store *st, const struct store_position *pos,
                             struct store_error *err)
{
    return timed_commit(store_commit_cold, st, pos, NULL, err);
}

/* ---- Exposition ------------------------------------------------------------ */

struct text {
    char *data;
    size_t len, cap;
    bool failed;
};

static void put(struct text *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put(struct text *t, const char *fmt, ...)
{
    if (t->failed)
        return;
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        int n = vsnprintf(t->data ? t->data + t->len : NULL, t->data ? t->cap - t->len : 0, fmt,
                          ap);
        va_end(ap);
        if (n < 0) {
            t->failed = true;
            return;
        }
        if (t->data && t->len + (size_t)n < t->cap) {
            t->len += (size_t)n;
            return;
        }
        size_t cap = t->cap ? t->cap : 4096;
        while (cap <= t->len + (size_t)n)
            cap *= 2;
        char *d = realloc(t->data, cap);
        if (!d) {
            t->failed = true;
            return;
        }
        t->data = d;
        t->cap = cap;
    }
}

static void head(struct text *t, const char *name, const char *type, const char *help)
{
    put(t, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

static void seconds(struct text *t, const char *name, int64_t us)
{
    put(t, "%s %lld.%06lld\n", name, (long long)(us / 1000000), (long long)(us % 1000000));
}

char *imetrics_text(const char *store_dir, int64_t now_us)
{
    struct text t = {0};
    int state = GET(M.state);
    head(&t, "straum_ingest_state", "gauge", "1 for the follower's state now, 0 for the others.");
    for (int s = 0; s < INGEST_NSTATES; s++)
        put(&t, "straum_ingest_state{state=\"%s\"} %d\n", state_names[s], s == state);

    /* The position first (acquire): the counts read after it include
     * every batch stored up to it. */
    struct store_position pos;
    pos.lsn = atomic_load_explicit(&M.pos_lsn, memory_order_acquire);
    pos.commit_time = GET(M.pos_commit_time);
    pos.contact_time = GET(M.pos_contact_time);
    pos.bytes_behind = GET(M.pos_bytes_behind);
    uint64_t applied = GET(M.applied_lsn), source = GET(M.source_lsn);
    head(&t, "straum_store_position_lsn", "gauge",
         "LSN of the last PostgreSQL commit the store holds (0: not loaded yet).");
    put(&t, "straum_store_position_lsn %llu\n", (unsigned long long)pos.lsn);
    head(&t, "straum_ingest_position_lsn", "gauge",
         "LSN the follower has reached: the end of the last transaction applied, stored or "
         "about to be (at most one group commit ahead of the store), or the store's when "
         "further.");
    put(&t, "straum_ingest_position_lsn %llu\n",
        (unsigned long long)(applied > pos.lsn ? applied : pos.lsn));
    if (source) {
        head(&t, "straum_ingest_source_lsn", "gauge",
             "The source's WAL end as the replication stream last reported it.");
        put(&t, "straum_ingest_source_lsn %llu\n", (unsigned long long)source);
        head(&t, "straum_ingest_lag_bytes", "gauge",
             "Bytes of WAL between the source's WAL end and the store's position.");
        put(&t, "straum_ingest_lag_bytes %llu\n",
            (unsigned long long)(source > pos.lsn ? source - pos.lsn : 0));
    }
    int64_t lag = store_lag_usec(&pos, now_us);
    if (pos.lsn && lag >= 0) {
        head(&t, "straum_store_lag_seconds", "gauge",
             "How far the store trails PostgreSQL (the figure straum-serve's /readyz reports).");
        seconds(&t, "straum_store_lag_seconds", lag);
    }

    head(&t, "straum_ingest_transactions_total", "counter",
         "Source transactions applied and stored since start.");
    put(&t, "straum_ingest_transactions_total %llu\n", (unsigned long long)GET(M.txns));
    head(&t, "straum_ingest_changes_total", "counter",
         "Row changes applied and stored since start, by kind (truncate: one per table).");
    for (int k = 0; k < NCHANGES; k++)
        put(&t, "straum_ingest_changes_total{kind=\"%s\"} %llu\n", change_names[k],
            (unsigned long long)GET(M.changes[k]));
    head(&t, "straum_ingest_snapshot_rows_total", "counter",
         "Rows read by the initial load since start.");
    put(&t, "straum_ingest_snapshot_rows_total %llu\n", (unsigned long long)GET(M.snapshot_rows));
    pthread_mutex_lock(&L.lock);
    if (L.phase[0]) {
        head(&t, "straum_ingest_load_phase", "gauge",
             "The initial load running now (one table at a time; the log names it): 1 for its "
             "phase (loading: read and applied in one pass; reading: one scan set aside by time "
             "partition; applying: the partitions set aside); absent when no load runs.");
        put(&t, "straum_ingest_load_phase{phase=\"%s\"} 1\n", L.phase);
        head(&t, "straum_ingest_load_rows", "gauge", "Rows of the load's current phase so far.");
        put(&t, "straum_ingest_load_rows %lld\n", (long long)GET(L.rows));
        if (L.estimated >= 0) {
            head(&t, "straum_ingest_load_rows_estimated", "gauge",
                 "Rows the table being loaded holds by PostgreSQL's statistics "
                 "(pg_class.reltuples).");
            put(&t, "straum_ingest_load_rows_estimated %lld\n", (long long)L.estimated);
        }
    }
    pthread_mutex_unlock(&L.lock);
    head(&t, "straum_ingest_spool_bytes", "gauge",
         "Bytes streamed transactions hold in their spools (memory, then a temporary file).");
    put(&t, "straum_ingest_spool_bytes %llu\n", (unsigned long long)GET(M.spool_bytes));
    head(&t, "straum_ingest_fold_pending", "gauge",
         "1 while delta blocks may wait to be folded into their bases (the fold runs once "
         "the stream is idle), 0 once the fold found none left heavy enough to fold.");
    put(&t, "straum_ingest_fold_pending %d\n", GET(M.fold_pending));
    head(&t, "straum_ingest_reconnects_total", "counter",
         "Times the follower connected again after a lost connection or a full disk.");
    put(&t, "straum_ingest_reconnects_total %llu\n", (unsigned long long)GET(M.reconnects));

    uint64_t counts[NBUCKETS], total = 0;
    for (int b = 0; b < NBUCKETS; b++)
        total += counts[b] = GET(M.commit_buckets[b]);
    head(&t, "straum_store_commits_total", "counter", "Store write transactions committed.");
    put(&t, "straum_store_commits_total %llu\n", (unsigned long long)total);
    head(&t, "straum_store_commit_failures_total", "counter",
         "Store commits that failed and wrote nothing (no space, the size limit); every retry "
         "counts.");
    put(&t, "straum_store_commit_failures_total %llu\n",
        (unsigned long long)GET(M.commit_failures));
    head(&t, "straum_store_commit_duration_seconds", "histogram",
         "Time one store commit took (encoding and writing the batch).");
    uint64_t cum = 0;
    for (int b = 0; b < NBUCKETS; b++) {
        cum += counts[b];
        put(&t, "straum_store_commit_duration_seconds_bucket{le=\"%s\"} %llu\n",
            b < NBUCKETS - 1 ? bucket_le[b] : "+Inf", (unsigned long long)cum);
    }
    uint64_t sum = GET(M.commit_sum_ns);
    put(&t, "straum_store_commit_duration_seconds_sum %llu.%09llu\n",
        (unsigned long long)(sum / 1000000000u), (unsigned long long)(sum % 1000000000u));
    put(&t, "straum_store_commit_duration_seconds_count %llu\n", (unsigned long long)total);

    char path[4096];
    struct stat sb;
    snprintf(path, sizeof path, "%s/data.mdb", store_dir);
    if (stat(path, &sb) == 0) {
        head(&t, "straum_store_data_bytes", "gauge", "Size of the store's data.mdb file.");
        put(&t, "straum_store_data_bytes %lld\n", (long long)sb.st_size);
    }
    if (t.failed) {
        free(t.data);
        return NULL;
    }
    return t.data;
}

/* ---- The server ------------------------------------------------------------- */

struct imetrics_server {
    struct MHD_Daemon *d;
    char *store_dir;
};

static enum MHD_Result reply(struct MHD_Connection *c, unsigned status, char *body,
                             bool owned, const char *type)
{
    struct MHD_Response *r =
        owned ? MHD_create_response_from_buffer_with_free_callback(strlen(body), body, free)
              : MHD_create_response_from_buffer(strlen(body), body, MHD_RESPMEM_PERSISTENT);
    if (!r) {
        if (owned)
            free(body);
        return MHD_NO;
    }
    MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, type);
    if (status == 405)
        MHD_add_response_header(r, MHD_HTTP_HEADER_ALLOW, "GET, HEAD");
    enum MHD_Result rc = MHD_queue_response(c, status, r);
    MHD_destroy_response(r);
    return rc;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url,
                                  const char *method, const char *version,
                                  const char *upload_data, size_t *upload_size, void **state)
{
    (void)version;
    (void)upload_data;
    struct imetrics_server *s = cls;
    static char seen;
    if (!*state) { /* headers only: answer on the second call */
        *state = &seen;
        return MHD_YES;
    }
    *upload_size = 0; /* a body is ignored */
    bool known = !strcmp(url, "/metrics") || !strcmp(url, "/healthz");
    if (!known)
        return reply(c, 404, "not found\n", false, "text/plain; charset=utf-8");
    if (strcmp(method, "GET") && strcmp(method, "HEAD"))
        return reply(c, 405, "method not allowed\n", false, "text/plain; charset=utf-8");
    if (!strcmp(url, "/healthz"))
        return reply(c, 200, "ok\n", false, "text/plain; charset=utf-8");
    char *text = imetrics_text(s->store_dir, now_usec());
    if (!text)
        return reply(c, 500, "out of memory\n", false, "text/plain; charset=utf-8");
    return reply(c, 200, text, true, "text/plain; version=0.0.4; charset=utf-8");
}

static void on_mhd_log(void *cls, const char *fmt, va_list ap)
{
    (void)cls;
    logfmt_vfrom(LOGFMT_WARN, "libmicrohttpd", fmt, ap);
}

struct imetrics_server *imetrics_serve(const char *listen, const char *store_dir, char *err,
                                       size_t errlen)
{
    struct sockaddr_storage ss;
    socklen_t sslen;
    if (listen_parse("--metrics-listen", listen, &ss, &sslen, err, errlen) != 0)
        return NULL;
    struct imetrics_server *s = calloc(1, sizeof *s);
    if (!s || !(s->store_dir = strdup(store_dir))) {
        free(s);
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_ERROR_LOG;
    if (ss.ss_family == AF_INET6)
        flags |= MHD_USE_IPv6;
    s->d = MHD_start_daemon(flags, 0, NULL, NULL, on_request, s,
                            MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&ss,
                            MHD_OPTION_CONNECTION_LIMIT, (unsigned)64,
                            MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)10,
                            MHD_OPTION_EXTERNAL_LOGGER, on_mhd_log, NULL,
                            MHD_OPTION_END);
    if (!s->d) {
        snprintf(err, errlen, "--metrics-listen %s: cannot listen there (in use, or not an "
                              "address of this machine)", listen);
        imetrics_stop(s);
        return NULL;
    }
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(s->d, MHD_DAEMON_INFO_BIND_PORT);
    struct logfmt_line l;
    if (logfmt_begin(&l, LOGFMT_INFO, "metrics listening")) {
        char host[NI_MAXHOST] = "?", port[NI_MAXSERV] = "?", addr[NI_MAXHOST + NI_MAXSERV + 4];
        getnameinfo((struct sockaddr *)&ss, sslen, host, sizeof host, port, sizeof port,
                    NI_NUMERICHOST | NI_NUMERICSERV);
        if (info)
            snprintf(port, sizeof port, "%u", (unsigned)info->port);
        snprintf(addr, sizeof addr, strchr(host, ':') ? "[%s]:%s" : "%s:%s", host, port);
        logfmt_str(&l, "addr", addr);
        logfmt_end(&l);
    }
    return s;
}

void imetrics_stop(struct imetrics_server *s)
{
    if (!s)
        return;
    if (s->d)
        MHD_stop_daemon(s->d);
    free(s->store_dir);
    free(s);
}
