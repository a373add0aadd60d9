/* metrics.c -- lock-free counters for straum-serve and their Prometheus text
 * exposition (format 0.0.4), plus the lag figure shared with /readyz.
 *
 * Label sets are fixed when the server starts (the store's views, the known
 * routes, the statuses the server sends), so counters live in flat arrays
 * of atomics indexed without a lookup table or a lock, and no client can
 * make the exposition grow. */
#include "serve/metrics.h"

#include <ctype.h>
#include <inttypes.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* Statuses straum-serve sends itself; anything else counts as "other". */
static const int statuses[] = {200, 400, 401, 404, 405, 413, 414, 422, 500, 503, 505};
#define NSTATUS ((int)(sizeof statuses / sizeof statuses[0]) + 1)

/* Upper bounds of the ask duration buckets, ns; +Inf follows. */
static const int64_t bucket_ns[] = {
    50000, 100000, 200000, 500000, 1000000, 2000000, 5000000, 10000000, 50000000,
    100000000, 1000000000,
};
static const char *const bucket_le[] = {
    "5e-05", "0.0001", "0.0002", "0.0005", "0.001", "0.002", "0.005", "0.01", "0.05",
    "0.1", "1",
};
#define NBUCKETS ((int)(sizeof bucket_ns / sizeof bucket_ns[0]) + 1)

/* One view's ask figures. Buckets hold their own counts (not cumulative),
 * so an ask bumps exactly one; the exposition adds them up. */
struct view_metrics {
    atomic_uint_fast64_t asks[NSTATUS];
    atomic_uint_fast64_t buckets[NBUCKETS];
    atomic_uint_fast64_t sum_ns;
};

struct metrics {
    int nviews;
    char **names;                  /* nviews + 1: "?" last */
    struct view_metrics *views;    /* nviews + 1 */
    int nroutes;
    const char **routes;           /* nroutes labels (the strings not owned);
                                      "other" after them */
    atomic_uint_fast64_t (*http)[NSTATUS]; /* nroutes + 1 */
    atomic_int_fast64_t connections;
};

static int status_index(int status)
{
    for (int i = 0; i < NSTATUS - 1; i++)
        if (statuses[i] == status)
            return i;
    return NSTATUS - 1;
}

struct metrics *metrics_new(const char *const *views, int nviews, const char *const *routes,
                            int nroutes)
{
    struct metrics *m = calloc(1, sizeof *m);
    if (!m)
        return NULL;
    m->nviews = nviews < 0 ? 0 : nviews;
    m->names = calloc((size_t)m->nviews + 1, sizeof *m->names);
    m->views = calloc((size_t)m->nviews + 1, sizeof *m->views);
    m->nroutes = nroutes < 0 ? 0 : nroutes;
    m->routes = calloc((size_t)m->nroutes + 1, sizeof *m->routes);
    m->http = calloc((size_t)m->nroutes + 1, sizeof *m->http);
    if (!m->names || !m->views || !m->routes || !m->http)
        goto fail;
    for (int i = 0; i < m->nroutes; i++)
        m->routes[i] = routes[i];
    for (int i = 0; i < m->nviews; i++)
        if (!(m->names[i] = strdup(views[i])))
            goto fail;
    if (!(m->names[m->nviews] = strdup("?")))
        goto fail;
    /* calloc's zero bytes are a valid zero for lock-free atomics, but say
     * so in the language's terms for the ones we read first. */
    for (int v = 0; v <= m->nviews; v++)
        atomic_init(&m->views[v].sum_ns, 0);
    atomic_init(&m->connections, 0);
    return m;
fail:
    metrics_free(m);
    return NULL;
}

void metrics_free(struct metrics *m)
{
    if (!m)
        return;
    if (m->names)
        for (int i = 0; i <= m->nviews; i++)
            free(m->names[i]);
    free(m->names);
    free(m->views);
    free(m->routes);
    free(m->http);
    free(m);
}

/* ---- Which view an ask names --------------------------------------------- */

static bool ident_start(unsigned char c) { return isalpha(c) || c == '_' || c >= 0x80; }
static bool ident_char(unsigned char c) { return isalnum(c) || c == '_' || c == '$' || c >= 0x80; }

int metrics_view_of(const struct metrics *m, const char *ask)
{
    const unsigned char *p = (const unsigned char *)ask;
    while (*p) {
        if (*p == '\'' || *p == '"') { /* a string or quoted identifier: '' and "" escape */
            unsigned char q = *p++;
            while (*p && !(*p == q && p[1] != q))
                p += *p == q ? 2 : 1;
            if (*p)
                p++;
        } else if (p[0] == '-' && p[1] == '-') {
            while (*p && *p != '\n')
                p++;
        } else if (p[0] == '/' && p[1] == '*') {
            p += 2;
            while (*p && !(p[0] == '*' && p[1] == '/'))
                p++;
            if (*p)
                p += 2;
        } else if (ident_start(*p)) {
            const unsigned char *w = p;
            while (ident_char(*p))
                p++;
            if (p - w != 4 || strncasecmp((const char *)w, "from", 4) != 0)
                continue;
            /* FROM: the next token names the view. */
            while (isspace(*p))
                p++;
            char name[128];
            size_t n = 0;
            if (*p == '"') {
                for (p++; *p && n + 1 < sizeof name; p++) {
                    if (*p == '"' && p[1] != '"')
                        break;
                    if (*p == '"')
                        p++;
                    name[n++] = (char)*p;
                }
            } else {
                for (; ident_char(*p) && n + 1 < sizeof name; p++)
                    name[n++] = (char)tolower(*p);
            }
            name[n] = '\0';
            for (int i = 0; i < m->nviews; i++)
                if (strcmp(m->names[i], name) == 0)
                    return i;
            return m->nviews;
        } else {
            p++;
        }
    }
    return m->nviews;
}

const char *metrics_route_name(const struct metrics *m, int route)
{
    return route >= 0 && route < m->nroutes ? m->routes[route] : "other";
}

const char *metrics_view_name(const struct metrics *m, int view)
{
    return m->names[view < 0 || view > m->nviews ? m->nviews : view];
}

/* ---- Counting ------------------------------------------------------------- */

void metrics_ask(struct metrics *m, int view, int status, int64_t ns)
{
    if (view < 0 || view > m->nviews)
        view = m->nviews;
    if (ns < 0)
        ns = 0;
    struct view_metrics *v = &m->views[view];
    atomic_fetch_add_explicit(&v->asks[status_index(status)], 1, memory_order_relaxed);
    int b = 0;
    while (b < NBUCKETS - 1 && ns > bucket_ns[b])
        b++;
    atomic_fetch_add_explicit(&v->buckets[b], 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&v->sum_ns, (uint_fast64_t)ns, memory_order_relaxed);
}

void metrics_http(struct metrics *m, int route, int status)
{
    if (route < 0 || route > m->nroutes)
        route = m->nroutes;
    atomic_fetch_add_explicit(&m->http[route][status_index(status)], 1, memory_order_relaxed);
}

void metrics_connection(struct metrics *m, int delta)
{
    atomic_fetch_add_explicit(&m->connections, delta, memory_order_relaxed);
}

int64_t metrics_connections_open(const struct metrics *m)
{
    return (int64_t)atomic_load_explicit(&((struct metrics *)m)->connections, memory_order_relaxed);
}

/* ---- Exposition ------------------------------------------------------------ */

/* A label value with Prometheus's escapes (\\, \" and \n). */
static void put_label(struct buf *out, const char *s)
{
    for (; *s; s++) {
        if (*s == '\\' || *s == '"')
            buf_put(out, "\\", 1);
        if (*s == '\n')
            buf_puts(out, "\\n");
        else
            buf_put(out, s, 1);
    }
}

static void put_status(struct buf *out, int i)
{
    if (i < NSTATUS - 1)
        buf_printf(out, "%d", statuses[i]);
    else
        buf_puts(out, "other");
}

static uint64_t get(const atomic_uint_fast64_t *a)
{
    return (uint64_t)atomic_load_explicit(a, memory_order_relaxed);
}

void metrics_write(const struct metrics *m, const struct store_position *pos, int64_t now_us,
                   struct buf *out)
{
    buf_puts(out, "# HELP straum_asks_total Asks answered, by view and HTTP status.\n"
                  "# TYPE straum_asks_total counter\n");
    for (int v = 0; v <= m->nviews; v++)
        for (int s = 0; s < NSTATUS; s++) {
            uint64_t n = get(&m->views[v].asks[s]);
            /* Known views always show their 200 line, so dashboards see
             * zeros rather than absent series; the rest appear once used. */
            if (n == 0 && !(s == 0 && v < m->nviews))
                continue;
            buf_puts(out, "straum_asks_total{view=\"");
            put_label(out, m->names[v]);
            buf_puts(out, "\",status=\"");
            put_status(out, s);
            buf_printf(out, "\"} %" PRIu64 "\n", n);
        }

    buf_puts(out, "# HELP straum_ask_duration_seconds Time from a complete /ask body to its "
                  "answer, by view.\n"
                  "# TYPE straum_ask_duration_seconds histogram\n");
    for (int v = 0; v <= m->nviews; v++) {
        uint64_t counts[NBUCKETS], total = 0;
        for (int b = 0; b < NBUCKETS; b++)
            total += counts[b] = get(&m->views[v].buckets[b]);
        if (total == 0 && v == m->nviews)
            continue;
        uint64_t cum = 0;
        for (int b = 0; b < NBUCKETS; b++) {
            cum += counts[b];
            buf_puts(out, "straum_ask_duration_seconds_bucket{view=\"");
            put_label(out, m->names[v]);
            buf_printf(out, "\",le=\"%s\"} %" PRIu64 "\n", b < NBUCKETS - 1 ? bucket_le[b] : "+Inf",
                       cum);
        }
        uint64_t sum = get(&m->views[v].sum_ns);
        buf_puts(out, "straum_ask_duration_seconds_sum{view=\"");
        put_label(out, m->names[v]);
        buf_printf(out, "\"} %" PRIu64 ".%09" PRIu64 "\n", sum / 1000000000u, sum % 1000000000u);
        buf_puts(out, "straum_ask_duration_seconds_count{view=\"");
        put_label(out, m->names[v]);
        buf_printf(out, "\"} %" PRIu64 "\n", total);
    }

    buf_puts(out, "# HELP straum_http_requests_total HTTP responses straum-serve sent, by "
                  "route and status.\n"
                  "# TYPE straum_http_requests_total counter\n");
    for (int p = 0; p <= m->nroutes; p++)
        for (int s = 0; s < NSTATUS; s++) {
            uint64_t n = get(&m->http[p][s]);
            if (n == 0)
                continue;
            buf_puts(out, "straum_http_requests_total{path=\"");
            put_label(out, metrics_route_name(m, p));
            buf_puts(out, "\",status=\"");
            put_status(out, s);
            buf_printf(out, "\"} %" PRIu64 "\n", n);
        }

    int64_t conns = (int64_t)atomic_load_explicit(&m->connections, memory_order_relaxed);
    buf_printf(out, "# HELP straum_open_connections HTTP and PostgreSQL connections open now.\n"
                    "# TYPE straum_open_connections gauge\n"
                    "straum_open_connections %" PRId64 "\n",
               conns < 0 ? 0 : conns);

    if (pos) {
        buf_printf(out, "# HELP straum_store_position_lsn LSN of the last PostgreSQL commit "
                        "the store holds.\n"
                        "# TYPE straum_store_position_lsn gauge\n"
                        "straum_store_position_lsn %" PRIu64 "\n",
                   pos->lsn);
        /* The same figure, under the same name, as straum-ingest's /metrics
         * and straum-dump catalog (store_lag_usec). */
        int64_t lag = store_lag_usec(pos, now_us);
        if (lag >= 0)
            buf_printf(out, "# HELP straum_store_lag_seconds How far the store trails "
                            "PostgreSQL (see /readyz).\n"
                            "# TYPE straum_store_lag_seconds gauge\n"
                            "straum_store_lag_seconds %" PRId64 ".%06" PRId64 "\n",
                       lag / 1000000, lag % 1000000);
    }
}
