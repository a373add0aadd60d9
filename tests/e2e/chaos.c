/* chaos.c -- see chaos.h.
 *
 * Three threads. The main one schedules the faults and runs the checks: it
 * alone forks, restarts PostgreSQL and asserts (Criterion's assertions
 * belong to the test's thread). The writer changes the tables; the asker
 * asks through both replicas. Those two never assert: they record the first
 * violation, which the main thread turns into the test's failure.
 *
 * Why the asker's totals can be checked while everything moves: the writer
 * is PostgreSQL's only writer, and before each COMMIT it reads the count
 * and the sum of fares its transaction leaves behind. A store holds whole
 * source transactions, so every total a replica answers must be one of
 * those states; a lost, doubled or half-applied transaction answers a total
 * PostgreSQL never had. */
#include "tests/e2e/chaos.h"

#include "tests/kit/answer.h"
#include "tests/kit/http_client.h"
#include "tests/kit/taxi_asks.h"
#include "tests/e2e/oracle.h"
#include "tests/e2e/taxi_db.h"
#include "tests/kit/pgtmp.h"

#include <cjson/cJSON.h>
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

enum { REPLICAS = 2 };

/* Past this many trips the writer deletes the older half, so a long soak
 * keeps a table of the same size. */
#define MAX_TRIPS 40000

/* The time zone the fixed asks are asked in (and PostgreSQL's session). */
#define ASK_TZ "America/New_York"

/* ---- The fixed asks ----------------------------------------------------------- */

/* Compared with PostgreSQL at every quiet point, besides the ten benchmark
 * asks: buckets of each width re-binned, dim conditions (the writer renames,
 * moves and deletes zones), NOT IN, <>, IS NULL and every measure kind. */
static const struct taxi_ask EXTRA_ASKS[] = {
    {"Trips and fares per day and borough, two weeks",
     "SELECT date_bin('1 day', t.pickup_at, timestamptz 'epoch'), z.borough, count(*), "
     "sum(t.fare_amount) FROM yellow_trips t "
     "LEFT JOIN taxi_zones z ON z.location_id = t.pu_location_id "
     "WHERE t.pickup_at >= '2024-02-01' AND t.pickup_at < '2024-02-15' GROUP BY 1, 2",
     "SELECT date_bin('1 day', bucket) AS day, borough, trips, fare FROM trips "
     "WHERE bucket >= $1 AND bucket < $2 GROUP BY day, borough",
     {"2024-02-01", "2024-02-15", 0}},
    {"Weekly payment mix",
     "SELECT date_bin('7 days', pickup_at, timestamptz 'epoch'), payment_type, count(*), "
     "avg(fare_amount), percentile_disc(0.5) WITHIN GROUP (ORDER BY fare_amount) "
     "FROM yellow_trips WHERE pickup_at >= '2024-01-01' AND pickup_at < '2024-07-01' "
     "GROUP BY 1, 2",
     "SELECT date_bin('7 days', bucket) AS week, payment_type, trips, avg_fare, median_fare "
     "FROM trips WHERE bucket >= $1 AND bucket < $2 GROUP BY week, payment_type",
     {"2024-01-01", "2024-07-01", 0}},
    {"Dropoff zones in two boroughs",
     "SELECT t.do_location_id, count(*), sum(t.tip_amount), avg(t.trip_distance) "
     "FROM yellow_trips t LEFT JOIN taxi_zones z ON z.location_id = t.do_location_id "
     "WHERE z.borough IN ('Manhattan', 'Queens') GROUP BY 1",
     "SELECT do_location_id, trips, tips, avg_distance FROM dropoffs "
     "WHERE bucket >= $1 AND bucket < $2 AND borough IN ('Manhattan', 'Queens') "
     "GROUP BY do_location_id",
     {TAXI_ALL_FROM, TAXI_ALL_TO, 0}},
    {"Fares where the zone is unknown",
     "SELECT t.payment_type, count(*), percentile_disc(0.5) WITHIN GROUP (ORDER BY "
     "t.fare_amount), percentile_disc(0.99) WITHIN GROUP (ORDER BY t.fare_amount) "
     "FROM yellow_trips t LEFT JOIN taxi_zones z ON z.location_id = t.pu_location_id "
     "WHERE z.borough IS NULL GROUP BY 1",
     "SELECT payment_type, trips, median_fare, p99_fare FROM trips "
     "WHERE bucket >= $1 AND bucket < $2 AND borough IS NULL GROUP BY payment_type",
     {TAXI_ALL_FROM, TAXI_ALL_TO, 0}},
    {"Hours of a day by borough, no cash, one zone left out",
     "SELECT date_bin('1 hour', t.pickup_at, timestamptz 'epoch'), z.borough, count(*), "
     "avg(t.fare_amount) FROM yellow_trips t "
     "LEFT JOIN taxi_zones z ON z.location_id = t.pu_location_id "
     "WHERE t.pickup_at >= '2024-03-05' AND t.pickup_at < '2024-03-06' "
     "AND t.payment_type NOT IN (2) AND t.pu_location_id <> 132 GROUP BY 1, 2",
     "SELECT date_bin('1 hour', bucket) AS h, borough, trips, avg_fare FROM trips "
     "WHERE bucket >= $1 AND bucket < $2 AND payment_type NOT IN (2) "
     "AND pu_location_id <> 132 GROUP BY h, borough",
     {"2024-03-05", "2024-03-06", 0}},
    {"Card and cash in Manhattan",
     "SELECT t.payment_type, count(*), sum(t.fare_amount) FROM yellow_trips t "
     "LEFT JOIN taxi_zones z ON z.location_id = t.pu_location_id "
     "WHERE t.pickup_at >= '2024-01-01' AND t.pickup_at < '2024-07-01' "
     "AND t.payment_type IN (1, 2) AND z.borough = 'Manhattan' GROUP BY 1",
     "SELECT payment_type, trips, fare FROM trips WHERE bucket >= $1 AND bucket < $2 "
     "AND payment_type IN (1, 2) AND borough = $3 GROUP BY payment_type",
     {"2024-01-01", "2024-07-01", "Manhattan", 0}},
};

enum { NEXTRA = (int)(sizeof EXTRA_ASKS / sizeof EXTRA_ASKS[0]), NFIXED = TAXI_NASKS + NEXTRA };

static const struct taxi_ask *fixed_ask(int i)
{
    return i < TAXI_NASKS ? &TAXI_ASKS[i] : &EXTRA_ASKS[i - TAXI_NASKS];
}

/* The totals the asker checks against the writer's history, per view. */
static const char *const TOTAL_ASKS[] = {
    "SELECT trips, fare FROM trips WHERE bucket >= $1 AND bucket < $2",
    "SELECT trips, fare FROM dropoffs WHERE bucket >= $1 AND bucket < $2",
};

/* ---- State -------------------------------------------------------------------- */

struct replica {
    int port;
    pid_t pid;             /* 0 while down */
    atomic_bool down;      /* set before the SIGKILL, cleared once the new one answers */
    atomic_uint kills;     /* a request spanning a kill may fail */
    double restart_at;     /* chaos time to start it again; < 0: none pending */
    char log[96];
};

/* Hashes of the states (count|sum of fares) PostgreSQL committed, or was
 * about to commit: an open-addressing set of 64-bit FNV-1a hashes. */
struct history {
    pthread_mutex_t mu;
    uint64_t *slot;
    size_t cap, n;
};

struct chaos {
    const struct chaos_knobs *k;
    struct chaos_report *rep;
    struct pgtmp pg;
    struct taxi_db db;
    char dir[64];            /* logs */
    char ingest_log[96];
    char views[4096];
    double ingest_started;   /* now_s() when the running ingest started */
    double ingest_restart_at; /* chaos time; < 0: none pending */
    struct replica replicas[REPLICAS];
    char *fixed_bodies[NFIXED], *total_bodies[2];
    struct history hist;
    uint64_t rng;            /* the scheduler's */
    double t0;               /* chaos time = now_s() - t0 - paused_us / 1e6 */
    atomic_llong paused_us;  /* restarts and checks: the faults' clock stops */

    pthread_t writer, asker;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool pause_wanted, writer_paused;
    atomic_bool stop_writer, stop_asker, failed;
    char failure[4096];
    uint64_t writer_rng, next_id;
    int64_t trips_now;
    int kind;                /* of the writer's transaction, for its log */
    FILE *writer_log;        /* verbose only */

    atomic_long committed, rolled_back, interrupted, refused;
    atomic_long answered, checked, failed_in_kill, positions;
};

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static double chaos_time(const struct chaos *c)
{
    return now_s() - c->t0 - (double)atomic_load(&c->paused_us) / 1e6;
}

static uint64_t next_rand(uint64_t *s)
{
    *s = *s * 6364136223846793005ULL + 1442695040888963407ULL;
    return *s >> 33;
}

static int rnd(uint64_t *s, int n)
{
    return (int)(next_rand(s) % (uint64_t)n);
}

static double uniform(uint64_t *s, double lo, double hi)
{
    return lo + (hi - lo) * (double)(next_rand(s) % 1000000) / 1e6;
}

static void sleep_s(double s)
{
    if (s > 0)
        usleep((useconds_t)(s * 1e6));
}

static void say(const struct chaos *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void say(const struct chaos *c, const char *fmt, ...)
{
    if (!c->k->verbose)
        return;
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "chaos %7.1f s: ", c->t0 > 0 ? chaos_time(c) : 0.0);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

/* Records the first violation seen by a thread that may not assert. */
static void fail_later(struct chaos *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void fail_later(struct chaos *c, const char *fmt, ...)
{
    pthread_mutex_lock(&c->mu);
    if (!atomic_load(&c->failed)) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(c->failure, sizeof c->failure, fmt, ap);
        va_end(ap);
        atomic_store(&c->failed, true);
    }
    pthread_mutex_unlock(&c->mu);
}

/* The last bytes of a log, for failure messages. */
static void log_tail(const char *path, char *out, size_t len)
{
    out[0] = '\0';
    int fd = open(path, O_RDONLY);
    if (fd < 0)
        return;
    off_t end = lseek(fd, 0, SEEK_END);
    off_t from = end > (off_t)len - 1 ? end - (off_t)len + 1 : 0;
    ssize_t n = pread(fd, out, len - 1, from);
    out[n > 0 ? n : 0] = '\0';
    close(fd);
}

/* ---- The history of committed states ------------------------------------------- */

static uint64_t state_hash(int64_t count, const char *fare)
{
    char key[96];
    snprintf(key, sizeof key, "%" PRId64 "|%s", count, fare ? fare : "NULL");
    uint64_t h = 1469598103934665603ULL;
    for (const char *p = key; *p; p++)
        h = (h ^ (uint8_t)*p) * 1099511628211ULL;
    return h ? h : 1; /* 0 marks an empty slot */
}

static bool history_find(struct history *h, uint64_t x, size_t *at)
{
    size_t i = (size_t)x & (h->cap - 1);
    while (h->slot[i] && h->slot[i] != x)
        i = (i + 1) & (h->cap - 1);
    *at = i;
    return h->slot[i] == x;
}

static void history_add(struct history *h, int64_t count, const char *fare)
{
    uint64_t x = state_hash(count, fare);
    pthread_mutex_lock(&h->mu);
    if (2 * (h->n + 1) > h->cap) {
        struct history bigger = {.cap = h->cap ? h->cap * 2 : 1024};
        bigger.slot = calloc(bigger.cap, sizeof *bigger.slot);
        for (size_t i = 0; i < h->cap; i++) {
            size_t at;
            if (h->slot[i] && !history_find(&bigger, h->slot[i], &at))
                bigger.slot[at] = h->slot[i];
        }
        free(h->slot);
        h->slot = bigger.slot;
        h->cap = bigger.cap;
    }
    size_t at;
    if (!history_find(h, x, &at)) {
        h->slot[at] = x;
        h->n++;
    }
    pthread_mutex_unlock(&h->mu);
}

static bool history_has(struct history *h, int64_t count, const char *fare)
{
    uint64_t x = state_hash(count, fare);
    pthread_mutex_lock(&h->mu);
    size_t at;
    bool found = h->cap && history_find(h, x, &at);
    pthread_mutex_unlock(&h->mu);
    return found;
}

/* The count and the sum of fares, as the total asks answer them. */
static bool pg_state(PGconn *pg, int64_t *count, char *fare, size_t len)
{
    PGresult *r = PQexec(pg, "SELECT count(*), sum(fare_amount) FROM yellow_trips");
    bool ok = PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) == 1;
    if (ok) {
        *count = strtoll(PQgetvalue(r, 0, 0), NULL, 10);
        snprintf(fare, len, "%s", PQgetisnull(r, 0, 1) ? "NULL" : PQgetvalue(r, 0, 1));
    }
    PQclear(r);
    return ok;
}

/* ---- The writer ------------------------------------------------------------------- */

enum txn_result { TXN_COMMITTED, TXN_ROLLED_BACK, TXN_INTERRUPTED, TXN_REFUSED };

/* One statement; false when it failed. */
static bool step(PGconn *pg, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static bool step(PGconn *pg, const char *fmt, ...)
{
    char sql[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(sql, sizeof sql, fmt, ap);
    va_end(ap);
    PGresult *r = PQexec(pg, sql);
    ExecStatusType s = PQresultStatus(r);
    PQclear(r);
    return s == PGRES_COMMAND_OK || s == PGRES_TUPLES_OK;
}

static bool insert_trips(struct chaos *c, PGconn *pg, int n)
{
    double seed = (double)rnd(&c->writer_rng, 2000) / 1000.0 - 1.0;
    bool ok = step(pg, "SELECT straum_generate_trips(%d, %f, %" PRIu64 ")", n, seed, c->next_id);
    c->next_id += (uint64_t)n + 1;
    return ok;
}

/* The statements of one random transaction (BEGIN already sent); sets
 * *rollback when it is one to roll back. False when a statement failed. */
static bool random_changes(struct chaos *c, PGconn *pg, bool *rollback)
{
    uint64_t *rs = &c->writer_rng;
    int lo = 1 + rnd(rs, (int)c->next_id), hi = lo + 20 + rnd(rs, 200);
    int zone = 1 + rnd(rs, 265);
    c->kind = -1;
    if (c->trips_now > MAX_TRIPS)
        return step(pg, "DELETE FROM yellow_trips WHERE id < (SELECT percentile_disc(0.5) "
                        "WITHIN GROUP (ORDER BY id) FROM yellow_trips)");
    int kind = c->kind = rnd(rs, 1000);
    if (kind < 170)
        return insert_trips(c, pg, 20 + rnd(rs, 400));
    if (kind < 280)
        return step(pg, "UPDATE yellow_trips SET pu_location_id = 1 + (id * 7) %% 270, "
                        "payment_type = (id %% 6) WHERE id BETWEEN %d AND %d", lo, hi);
    if (kind < 370)
        return step(pg, "UPDATE yellow_trips SET fare_amount = fare_amount * 2 - 3.15, "
                        "tip_amount = tip_amount + 0.5, trip_distance = trip_distance + 1 "
                        "WHERE id BETWEEN %d AND %d AND fare_amount < 10000", lo, hi);
    if (kind < 450)
        return step(pg, "UPDATE yellow_trips SET pickup_at = pickup_at + interval '%d minutes' "
                        "WHERE id BETWEEN %d AND %d", 7 + rnd(rs, 5000) - 2500, lo, hi);
    if (kind < 570)
        return step(pg, "DELETE FROM yellow_trips WHERE id BETWEEN %d AND %d", lo, hi);
    if (kind < 630)
        return step(pg, "UPDATE taxi_zones SET zone = zone || ' (renamed)' WHERE location_id = %d;"
                        "UPDATE taxi_zones SET borough = 'Queens' WHERE location_id = %d",
                    zone, 1 + rnd(rs, 265));
    if (kind < 670)
        return step(pg, "DELETE FROM taxi_zones WHERE location_id = %d", zone);
    if (kind < 720)
        return step(pg, "INSERT INTO taxi_zones VALUES (%d, 'Nowhere', 'New zone', 'Boro Zone') "
                        "ON CONFLICT (location_id) DO UPDATE SET borough = 'Staten Island'",
                    260 + rnd(rs, 45));
    if (kind < 775)
        return step(pg, "UPDATE yellow_trips SET fare_amount = NULL WHERE id BETWEEN %d AND %d;"
                        "UPDATE yellow_trips SET pu_location_id = NULL, payment_type = NULL "
                        "WHERE id BETWEEN %d AND %d", lo, lo + 10, hi, hi + 10);
    if (kind < 840) /* a dim key change beside fact changes */
        return step(pg, "DELETE FROM yellow_trips WHERE id BETWEEN %d AND %d", lo, lo + 40) &&
               step(pg, "UPDATE taxi_zones SET location_id = location_id + 1000 "
                        "WHERE location_id = %d", zone) &&
               insert_trips(c, pg, 30);
    if (kind < 900) /* a subtransaction rolled back */
        return insert_trips(c, pg, 40) && step(pg, "SAVEPOINT s") &&
               step(pg, "DELETE FROM yellow_trips WHERE id BETWEEN %d AND %d;"
                        "UPDATE taxi_zones SET borough = NULL", lo, lo + 400) &&
               step(pg, "ROLLBACK TO s") &&
               step(pg, "UPDATE yellow_trips SET payment_type = 4 WHERE id = %d", lo);
    if (kind < 955) { /* the whole transaction rolled back */
        *rollback = true;
        return step(pg, "DELETE FROM yellow_trips WHERE id BETWEEN %d AND %d", lo, lo + 1000) &&
               step(pg, "UPDATE taxi_zones SET borough = NULL");
    }
    /* Past logical_decoding_work_mem (64 kB: a few hundred rows), a
     * transaction is streamed before its commit; these stay near a thousand
     * rows so the WAL they make is applied within the run on two cores. */
    if (kind < 975)
        return rnd(rs, 2) ? insert_trips(c, pg, 800 + rnd(rs, 800))
                          : step(pg, "UPDATE yellow_trips SET tip_amount = tip_amount + 0.01 "
                                     "WHERE id BETWEEN %d AND %d", lo, lo + 1500);
    if (kind < 983) { /* streamed, then aborted */
        *rollback = true;
        return insert_trips(c, pg, 800 + rnd(rs, 800)) &&
               step(pg, "UPDATE yellow_trips SET fare_amount = 1 WHERE id BETWEEN %d AND %d",
                    lo, lo + 1000);
    }
    if (kind < 992) /* streamed, with a rolled-back subtransaction in it */
        return insert_trips(c, pg, 600) && step(pg, "SAVEPOINT big") &&
               insert_trips(c, pg, 600) && step(pg, "ROLLBACK TO big") &&
               step(pg, "DELETE FROM yellow_trips WHERE id BETWEEN %d AND %d", lo, hi);
    if (kind < 995) /* the fact table truncated, then filled again in one transaction */
        return step(pg, "TRUNCATE yellow_trips") && insert_trips(c, pg, 500 + rnd(rs, 1500));
    if (kind < 998) /* the zones truncated and loaded again */
        return step(pg, "TRUNCATE taxi_zones") &&
               step(pg, "INSERT INTO taxi_zones SELECT * FROM chaos_zones");
    return step(pg, "TRUNCATE yellow_trips, taxi_zones") &&
           step(pg, "INSERT INTO taxi_zones SELECT * FROM chaos_zones WHERE location_id %% 2 = 0") &&
           insert_trips(c, pg, 300);
}

static enum txn_result lost_or_refused(PGconn *pg)
{
    if (PQstatus(pg) != CONNECTION_OK)
        return TXN_INTERRUPTED;
    step(pg, "ROLLBACK");
    return PQstatus(pg) == CONNECTION_OK ? TXN_REFUSED : TXN_INTERRUPTED;
}

static enum txn_result writer_txn(struct chaos *c, PGconn *pg)
{
    if (!step(pg, "BEGIN"))
        return lost_or_refused(pg);
    bool rollback = false;
    if (!random_changes(c, pg, &rollback))
        return lost_or_refused(pg);
    if (rollback)
        return step(pg, "ROLLBACK") ? TXN_ROLLED_BACK : TXN_INTERRUPTED;
    /* The state this transaction leaves, recorded before COMMIT: a replica
     * may answer it as soon as the commit is durable, before COMMIT returns
     * here. A commit cut off by a restart leaves a state that may never
     * have been; it only makes the check a little weaker. */
    int64_t count;
    char fare[64];
    if (!pg_state(pg, &count, fare, sizeof fare))
        return lost_or_refused(pg);
    history_add(&c->hist, count, fare);
    c->trips_now = count;
    if (!step(pg, "COMMIT"))
        return lost_or_refused(pg);
    if (c->writer_log) /* verbose: what each commit left, to set against the store's position */
        fprintf(c->writer_log, "kind %d: %" PRId64 " trips, fares %s, WAL at %" PRIX64 " after\n",
                c->kind, count, fare, oracle_current_lsn(pg));
    return TXN_COMMITTED;
}

/* Waits while the main thread wants the writer paused; false once told to stop. */
static bool writer_may_go(struct chaos *c)
{
    pthread_mutex_lock(&c->mu);
    while (c->pause_wanted && !atomic_load(&c->stop_writer)) {
        c->writer_paused = true;
        pthread_cond_broadcast(&c->cv);
        pthread_cond_wait(&c->cv, &c->mu);
    }
    c->writer_paused = false;
    pthread_mutex_unlock(&c->mu);
    return !atomic_load(&c->stop_writer);
}

/* The server's notices ("terminating connection due to unexpected
 * postmaster exit") are what this test does on purpose. */
static void quiet_notices(void *arg, const char *message)
{
    (void)arg;
    (void)message;
}

static void *writer_main(void *arg)
{
    struct chaos *c = arg;
    PGconn *pg = PQconnectdb(c->db.conninfo);
    PQsetNoticeProcessor(pg, quiet_notices, NULL);
    bool session_ready = false;
    while (writer_may_go(c)) {
        if (PQstatus(pg) != CONNECTION_OK) {
            PQreset(pg);
            session_ready = false;
            if (PQstatus(pg) != CONNECTION_OK) {
                usleep(100000); /* PostgreSQL is restarting */
                continue;
            }
        }
        /* Commits must survive the postmaster's crash: the cluster runs with
         * synchronous_commit off. */
        if (!session_ready && !(session_ready = step(pg, "SET synchronous_commit = on")))
            continue;
        switch (writer_txn(c, pg)) {
        case TXN_COMMITTED:
            atomic_fetch_add(&c->committed, 1);
            break;
        case TXN_ROLLED_BACK:
            atomic_fetch_add(&c->rolled_back, 1);
            break;
        case TXN_INTERRUPTED:
            atomic_fetch_add(&c->interrupted, 1);
            break;
        case TXN_REFUSED:
            atomic_fetch_add(&c->refused, 1);
            break;
        }
        if (c->k->writer_sleep_ms > 0)
            usleep((useconds_t)rnd(&c->writer_rng, c->k->writer_sleep_ms) * 1000);
    }
    PQfinish(pg);
    return NULL;
}

static void writer_pause(struct chaos *c)
{
    pthread_mutex_lock(&c->mu);
    c->pause_wanted = true;
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += 120;
    int rc = 0;
    while (!c->writer_paused && rc != ETIMEDOUT)
        rc = pthread_cond_timedwait(&c->cv, &c->mu, &until);
    bool paused = c->writer_paused;
    pthread_mutex_unlock(&c->mu);
    cr_assert(paused, "the writer did not pause within 120 s (a hung PostgreSQL statement?)");
}

static void writer_resume(struct chaos *c)
{
    pthread_mutex_lock(&c->mu);
    c->pause_wanted = false;
    pthread_cond_broadcast(&c->cv);
    pthread_mutex_unlock(&c->mu);
}

/* ---- The asker -------------------------------------------------------------------- */

static char *ask_body(const char *ask, const char *const *params)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "ask", ask);
    cJSON *p = cJSON_AddArrayToObject(o, "params");
    for (int i = 0; params[i]; i++)
        cJSON_AddItemToArray(p, cJSON_CreateString(params[i]));
    cJSON_AddStringToObject(o, "time_zone", ASK_TZ);
    char *s = cJSON_PrintUnformatted(o);
    cJSON_Delete(o);
    return s;
}

/* A total ask's answer: one row, a count and a sum (a string, or null). */
static bool parse_total(const char *json, int64_t *count, char *fare, size_t len)
{
    cJSON *o = cJSON_Parse(json);
    cJSON *rows = cJSON_GetObjectItemCaseSensitive(o, "rows");
    cJSON *row = cJSON_IsArray(rows) && cJSON_GetArraySize(rows) == 1 ? cJSON_GetArrayItem(rows, 0)
                                                                      : NULL;
    cJSON *n = row ? cJSON_GetArrayItem(row, 0) : NULL, *f = row ? cJSON_GetArrayItem(row, 1) : NULL;
    bool ok = cJSON_IsNumber(n) && (cJSON_IsString(f) || cJSON_IsNull(f));
    if (ok) {
        *count = (int64_t)n->valuedouble;
        snprintf(fare, len, "%s", cJSON_IsNull(f) ? "NULL" : f->valuestring);
    }
    cJSON_Delete(o);
    return ok;
}

/* "X/Y" from /readyz's body, or 0. */
static uint64_t parse_position(const char *json)
{
    const char *p = strstr(json, "\"position\":\"");
    unsigned hi, lo;
    if (!p || sscanf(p + 12, "%X/%X", &hi, &lo) != 2)
        return 0;
    return (uint64_t)hi << 32 | lo;
}

/* A total no committed state had: what the replica says next, for the
 * failure message (is the store wrong, or was it a moment?). */
static void wrong_total(struct chaos *c, struct http_client *cl, int i, int total, int64_t count,
                        const char *fare)
{
    char after[1024] = "", err[256];
    size_t used = 0;
    struct http_response resp = {0};
    for (int again = 0; again < 3; again++) {
        const char *body = again < 2 ? c->total_bodies[total] : NULL;
        if (http_request(cl, body ? "POST" : "GET", body ? "/ask" : "/readyz", "application/json",
                         body, body ? strlen(body) : 0, &resp, err, sizeof err) == 0)
            used += (size_t)snprintf(after + used, sizeof after - used, " %d %.200s;", resp.status,
                                     resp.body);
        else
            used += (size_t)snprintf(after + used, sizeof after - used, " %s;", err);
        if (used >= sizeof after)
            break;
    }
    http_response_free(&resp);
    if (c->k->verbose) { /* the store as it is now, for a look (straum-dump cells) */
        char cmd[4096];
        snprintf(cmd, sizeof cmd, "%s --store %s copy %s/wrong-store >> %s/wrong-store.txt 2>&1",
                 STRAUM_DUMP_BIN, c->db.store, c->dir, c->dir);
        if (system(cmd) != 0)
            fprintf(stderr, "chaos: could not copy the store\n");
    }
    fail_later(c, "at %.1f s of chaos, replica %d answered %" PRId64 " trips, fares %s (%s "
                  "view): no state PostgreSQL committed had that total (rows lost, doubled or "
                  "half a transaction). Asked again, then /readyz:%s", chaos_time(c), i, count,
               fare, total ? "dropoffs" : "trips", after);
}

/* One ask of the asker; what must hold of its answer is checked here. */
static void ask_once(struct chaos *c, struct http_client *cl, int i, uint64_t *rs,
                     struct http_response *resp, uint64_t *last_position)
{
    struct replica *r = &c->replicas[i];
    unsigned kills = atomic_load(&r->kills);
    bool down = atomic_load(&r->down);
    int what = rnd(rs, 20), total = -1, fixed = -1;
    const char *path = "/ask", *body = NULL;
    if (what < 9) {
        total = what % 2;
        body = c->total_bodies[total];
    } else if (what < 19) {
        fixed = rnd(rs, NFIXED);
        body = c->fixed_bodies[fixed];
    } else {
        path = "/readyz";
    }
    char err[512];
    int rc = http_request(cl, body ? "POST" : "GET", path, "application/json", body,
                          body ? strlen(body) : 0, resp, err, sizeof err);
    if (rc != 0) {
        if (down || atomic_load(&r->down) || atomic_load(&r->kills) != kills)
            atomic_fetch_add(&c->failed_in_kill, 1);
        else
            fail_later(c, "replica %d (port %d) was up, yet %s failed: %s", i, r->port, path, err);
        usleep(2000); /* it is down: do not spin on refused connections */
        return;
    }
    if (resp->status != 200) {
        fail_later(c, "replica %d answered %d to %s %s: %s", i, resp->status, path,
                   body ? body : "", resp->body);
        return;
    }
    if (total >= 0) {
        int64_t count;
        char fare[64];
        if (!parse_total(resp->body, &count, fare, sizeof fare))
            fail_later(c, "replica %d: a malformed total: %s", i, resp->body);
        else if (!history_has(&c->hist, count, fare))
            wrong_total(c, cl, i, total, count, fare);
        else
            atomic_fetch_add(&c->checked, 1);
    } else if (fixed >= 0) {
        struct answer a;
        char why[256];
        if (answer_from_json(resp->body, &a, why, sizeof why) != 0)
            fail_later(c, "replica %d: a malformed answer to %s: %s: %s", i,
                       fixed_ask(fixed)->name, why, resp->body);
        else
            answer_free(&a);
    } else {
        /* Requests follow one another, so each reads a store at least as
         * new as the one before, whichever replica answers. */
        uint64_t pos = parse_position(resp->body);
        if (pos == 0)
            fail_later(c, "replica %d: /readyz without a position: %s", i, resp->body);
        else if (pos < *last_position)
            fail_later(c, "replica %d answered position %" PRIX64 " after %" PRIX64
                          " was answered: the store went back", i, pos, *last_position);
        else
            atomic_fetch_add(&c->positions, 1);
        if (pos > *last_position)
            *last_position = pos;
    }
    atomic_fetch_add(&c->answered, 1);
}

static void *asker_main(void *arg)
{
    struct chaos *c = arg;
    struct http_client cl[REPLICAS];
    for (int i = 0; i < REPLICAS; i++) {
        char url[64], err[256];
        snprintf(url, sizeof url, "http://127.0.0.1:%d", c->replicas[i].port);
        /* A failed connect leaves the client set up: the next request connects. */
        http_client_open(&cl[i], url, err, sizeof err);
    }
    struct http_response resp = {0};
    uint64_t rs = c->k->seed ^ 0x5eed5eedULL, last_position = 0;
    while (!atomic_load(&c->stop_asker)) {
        int i = rnd(&rs, REPLICAS);
        ask_once(c, &cl[i], i, &rs, &resp, &last_position);
        usleep((useconds_t)rnd(&rs, 3000));
    }
    for (int i = 0; i < REPLICAS; i++)
        http_client_close(&cl[i]);
    http_response_free(&resp);
    return NULL;
}

/* ---- Processes ------------------------------------------------------------------------ */

static pid_t spawn(const char *const *argv, const char *log)
{
    pid_t pid = fork();
    cr_assert_geq(pid, 0, "fork: %s", strerror(errno));
    if (pid == 0) {
        /* A failed assertion ends the test without cleanup: no child may outlive it. */
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        int fd = open(log, O_WRONLY | O_APPEND | O_CREAT, 0644);
        if (fd >= 0) {
            dup2(fd, 1);
            dup2(fd, 2);
        }
        execv(argv[0], (char *const *)argv);
        _exit(127);
    }
    return pid;
}

/* A line in ingest's log between its processes' own. */
static void ingest_note(struct chaos *c, const char *what)
{
    FILE *f = fopen(c->ingest_log, "a");
    if (f) {
        fprintf(f, "chaos %.1f s: straum-ingest pid %d %s\n", c->t0 > 0 ? chaos_time(c) : 0.0,
                (int)c->db.ingest, what);
        fclose(f);
    }
}

static void ingest_start(struct chaos *c)
{
    const char *argv[] = {STRAUM_INGEST_BIN, "run", "--source", c->db.conninfo, "--views",
                          c->views, "--store", c->db.store, "--slot", c->db.slot,
                          "--commit-interval", "5ms", "--nice", "0", NULL};
    /* --nice 0: the quiet checks bound ingest's catch-up, which at its
     * default nice 10 a loaded machine starves (tests/e2e/taxi_db.h). */
    c->db.ingest = spawn(argv, c->ingest_log);
    c->ingest_started = now_s();
    ingest_note(c, "started");
    c->ingest_restart_at = -1;
}

/* Ingest never stops by itself here: not on a kill, not on a restart of
 * PostgreSQL. */
static void ingest_assert_alive(struct chaos *c)
{
    int status;
    if (c->db.ingest == 0 || waitpid(c->db.ingest, &status, WNOHANG) != c->db.ingest)
        return;
    ingest_note(c, "stopped by itself");
    c->db.ingest = 0;
    char tail[3000];
    log_tail(c->ingest_log, tail, sizeof tail);
    cr_assert_fail("straum-ingest stopped by itself (%s %d); its log ends:\n%s",
                   WIFEXITED(status) ? "exit status" : "signal",
                   WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status), tail);
}

static uint64_t slot_confirmed(struct chaos *c)
{
    char sql[256];
    snprintf(sql, sizeof sql,
             "SELECT confirmed_flush_lsn FROM pg_replication_slots WHERE slot_name = '%s'",
             c->db.slot);
    PGresult *r = PQexec(c->db.pg, sql);
    cr_assert_eq(PQresultStatus(r), PGRES_TUPLES_OK, "%s", PQerrorMessage(c->db.pg));
    unsigned hi = 0, lo = 0;
    if (PQntuples(r) == 1 && !PQgetisnull(r, 0, 0))
        sscanf(PQgetvalue(r, 0, 0), "%X/%X", &hi, &lo);
    PQclear(r);
    return (uint64_t)hi << 32 | lo;
}

/* The slot is never told a position the store does not hold. */
static void check_slot(struct chaos *c, const char *when)
{
    uint64_t confirmed = slot_confirmed(c), stored = oracle_store_position(c->db.store);
    cr_assert_leq(confirmed, stored, "%s: the slot confirmed %" PRIX64 ", past the store's %" PRIX64,
                  when, confirmed, stored);
}

static void ingest_kill(struct chaos *c)
{
    ingest_note(c, "killed");
    taxi_ingest_kill(&c->db);
    c->rep->ingest_kills++;
    c->ingest_restart_at = chaos_time(c) + uniform(&c->rng, 0, 0.5);
    check_slot(c, "after a kill -9 of ingest");
    say(c, "ingest killed (%d)", c->rep->ingest_kills);
}

static bool healthy(int port)
{
    char url[64], err[256];
    snprintf(url, sizeof url, "http://127.0.0.1:%d", port);
    struct http_client cl;
    struct http_response resp = {0};
    bool ok = http_client_open(&cl, url, err, sizeof err) == 0 &&
              http_request(&cl, "GET", "/healthz", NULL, NULL, 0, &resp, err, sizeof err) == 0 &&
              resp.status == 200;
    http_client_close(&cl);
    http_response_free(&resp);
    return ok;
}

static void replica_start(struct chaos *c, int i)
{
    struct replica *r = &c->replicas[i];
    char listen[64];
    snprintf(listen, sizeof listen, "127.0.0.1:%d", r->port);
    const char *argv[] = {STRAUM_SERVE_BIN, "--store", c->db.store, "--listen", listen,
                          "--threads", "2", "--max-lag", "0", NULL};
    for (int attempt = 0; attempt < 10; attempt++) {
        pid_t pid = spawn(argv, r->log);
        for (int j = 0; j < 1500; j++) { /* 30 s: a sanitized build starts slowly */
            int status;
            if (waitpid(pid, &status, WNOHANG) == pid) {
                pid = 0; /* the port was not free yet: try again */
                break;
            }
            if (healthy(r->port)) {
                r->pid = pid;
                r->restart_at = -1;
                atomic_store(&r->down, false);
                return;
            }
            usleep(20000);
        }
        if (pid) {
            kill(pid, SIGKILL);
            waitpid(pid, NULL, 0);
            break;
        }
        usleep(200000);
    }
    char tail[2000];
    log_tail(r->log, tail, sizeof tail);
    cr_assert_fail("straum-serve replica %d on port %d did not come up; its log ends:\n%s", i,
                   r->port, tail);
}

static void replica_kill(struct chaos *c, int i)
{
    struct replica *r = &c->replicas[i];
    atomic_store(&r->down, true);
    atomic_fetch_add(&r->kills, 1);
    kill(r->pid, SIGKILL);
    waitpid(r->pid, NULL, 0);
    r->pid = 0;
    r->restart_at = chaos_time(c) + uniform(&c->rng, 0, 0.6);
    c->rep->replica_kills++;
    say(c, "replica %d killed (%d)", i, c->rep->replica_kills);
}

static void replica_stop(struct chaos *c, int i)
{
    struct replica *r = &c->replicas[i];
    int status;
    kill(r->pid, SIGTERM);
    waitpid(r->pid, &status, 0);
    r->pid = 0;
    char tail[2000];
    log_tail(r->log, tail, sizeof tail);
    cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0,
              "straum-serve replica %d did not stop cleanly on SIGTERM (status %d):\n%s", i,
              status, tail);
}

static int free_port(void)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof a;
    cr_assert_eq(bind(fd, (struct sockaddr *)&a, sizeof a), 0);
    getsockname(fd, (struct sockaddr *)&a, &len);
    close(fd);
    return ntohs(a.sin_port);
}

/* Whatever a kill left down comes up again now. */
static void all_up(struct chaos *c)
{
    if (c->db.ingest == 0)
        ingest_start(c);
    for (int i = 0; i < REPLICAS; i++)
        if (c->replicas[i].pid == 0)
            replica_start(c, i);
}

/* ---- PostgreSQL --------------------------------------------------------------------- */

static void pg_restart(struct chaos *c, bool crash)
{
    /* Ingest retries a lost connection while following, but exits when it
     * cannot connect at all on start: a supervisor's business, not this
     * test's. So a restart comes once a started ingest is past connecting. */
    if (c->db.ingest)
        sleep_s(c->ingest_started + 2.0 - now_s());
    char err[1024];
    if (crash) {
        pid_t pm = pgtmp_postmaster_pid(&c->pg);
        cr_assert_gt(pm, 0, "no postmaster to crash");
        kill(pm, SIGKILL);
        /* Gone, or pgtmp_restart would try a clean stop of it first. */
        for (int i = 0; i < 500 && pgtmp_postmaster_pid(&c->pg) > 0; i++)
            usleep(20000);
        cr_assert_leq(pgtmp_postmaster_pid(&c->pg), 0, "the postmaster survived SIGKILL");
    }
    cr_assert_eq(pgtmp_restart(&c->pg, err, sizeof err), 0, "%s", err);
    PQreset(c->db.pg);
    cr_assert_eq(PQstatus(c->db.pg), CONNECTION_OK, "%s", PQerrorMessage(c->db.pg));
    oracle_exec(c->db.pg, "SET synchronous_commit = on");
    c->rep->pg_restarts++;
    c->rep->pg_crashes += crash;
}

/* ---- Checks ---------------------------------------------------------------------------- */

static void dump_verify(struct chaos *c, const char *when)
{
    char cmd[4096], out[4096];
    snprintf(cmd, sizeof cmd, "%s --store %s verify 2>&1", STRAUM_DUMP_BIN, c->db.store);
    FILE *p = popen(cmd, "r");
    cr_assert_not_null(p);
    size_t n = fread(out, 1, sizeof out - 1, p);
    out[n] = '\0';
    int status = pclose(p);
    cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0 && strncmp(out, "ok:", 3) == 0,
              "%s: straum-dump verify failed (status %d):\n%s", when, status, out);
}

/* Every fixed ask through both replicas equals PostgreSQL's answer. */
static void compare_fixed_asks(struct chaos *c, const char *when)
{
    oracle_exec(c->db.pg, "SET TIME ZONE '" ASK_TZ "'");
    struct http_client cl[REPLICAS];
    struct http_response resp = {0};
    char err[512];
    for (int i = 0; i < REPLICAS; i++) {
        char url[64];
        snprintf(url, sizeof url, "http://127.0.0.1:%d", c->replicas[i].port);
        cr_assert_eq(http_client_open(&cl[i], url, err, sizeof err), 0, "%s", err);
    }
    for (int a = 0; a < NFIXED; a++) {
        const struct taxi_ask *ask = fixed_ask(a);
        PGresult *res = PQexec(c->db.pg, ask->postgres_sql);
        cr_assert_eq(PQresultStatus(res), PGRES_TUPLES_OK, "%s\n%s", ask->postgres_sql,
                     PQerrorMessage(c->db.pg));
        struct answer want;
        cr_assert_eq(answer_from_pg(res, &want), 0);
        PQclear(res);
        for (int i = 0; i < REPLICAS; i++) {
            int rc = http_request(&cl[i], "POST", "/ask", "application/json", c->fixed_bodies[a],
                                  strlen(c->fixed_bodies[a]), &resp, err, sizeof err);
            cr_assert_eq(rc, 0, "%s: replica %d, %s: %s", when, i, ask->name, err);
            cr_assert_eq(resp.status, 200, "%s: replica %d, %s: %d %s", when, i, ask->name,
                         resp.status, resp.body);
            struct answer got;
            char why[1024];
            cr_assert_eq(answer_from_json(resp.body, &got, why, sizeof why), 0, "%s: %s", why,
                         resp.body);
            bool equal = answer_equal(&want, &got, why, sizeof why);
            answer_free(&got);
            cr_assert(equal, "%s: replica %d, \"%s\" differs from PostgreSQL: %s", when, i,
                      ask->name, why);
            c->rep->fixed_asks_compared++;
        }
        answer_free(&want);
    }
    for (int i = 0; i < REPLICAS; i++)
        http_client_close(&cl[i]);
    http_response_free(&resp);
    oracle_exec(c->db.pg, "RESET TIME ZONE");
}

/* With the writer paused and everything up: once the store holds all
 * PostgreSQL committed, the fixed asks, every cell and verify. */
static void quiet_check(struct chaos *c, const char *when)
{
    double began = now_s();
    all_up(c);
    bool writing = !atomic_load(&c->stop_writer);
    if (writing)
        writer_pause(c);
    double paused = now_s();
    uint64_t target = oracle_committed_lsn(c->db.pg);
    /* Bounded by progress, not by the clock alone: on a loaded machine (the
     * ASan tree beside other builds) ingest may get a few per cent of a
     * core and take minutes, still moving; a store whose position stands
     * still for STALL_S while behind is stuck. CATCH_UP_S caps the whole. */
    enum { STALL_S = 120, CATCH_UP_S = 400 };
    uint64_t at = oracle_store_position(c->db.store);
    double deadline = now_s() + CATCH_UP_S, stalled_after = now_s() + STALL_S,
           next_say = now_s() + 1;
    while (at < target) {
        ingest_assert_alive(c);
        if (now_s() >= next_say) {
            next_say += 1;
            say(c, "%s: the store is %" PRIu64 " kB behind PostgreSQL", when,
                (target - at) / 1024);
        }
        cr_assert_lt(now_s(), stalled_after, "%s: the store's position stood still for %d s, "
                     "behind PostgreSQL (at %" PRIX64 ", PostgreSQL at %" PRIX64 ")",
                     when, STALL_S, at, target);
        cr_assert_lt(now_s(), deadline, "%s: the store did not catch up with PostgreSQL within "
                                        "%d s (at %" PRIX64 ", PostgreSQL at %" PRIX64 ")",
                     when, CATCH_UP_S, at, target);
        usleep(20000);
        uint64_t now_at = oracle_store_position(c->db.store);
        if (now_at > at)
            stalled_after = now_s() + STALL_S;
        at = now_at;
    }
    double caught_up = now_s();
    compare_fixed_asks(c, when);
    double asked = now_s();
    char diff[4096];
    int rc = oracle_compare(c->db.pg, c->db.store, diff, sizeof diff);
    cr_assert_eq(rc, 0, "%s: a cell differs from PostgreSQL: %s", when, diff);
    double compared = now_s();
    dump_verify(c, when);
    check_slot(c, when);
    c->rep->quiet_checks++;
    if (writing)
        writer_resume(c);
    say(c, "%s passed in %.1f s: writer paused %.1f, caught up %.1f, asks %.1f, cells %.1f, "
           "verify %.1f", when, now_s() - began, paused - began, caught_up - paused,
        asked - caught_up, compared - asked, now_s() - compared);
}

/* The store holds about what a compacted copy of it holds: every replica
 * killed mid-ask left a reader slot at its snapshot, and until stale slots
 * were cleared (store/env.c) each pinned every page freed after it, so
 * data.mdb grew by megabytes a second for good. A store may outgrow its
 * copy by the pages a few snapshots keep, never by hundreds of MiB. */
static void check_store_size(struct chaos *c)
{
    char cmd[4096], out[4096], copy[128], path[4096];
    snprintf(copy, sizeof copy, "%s/compact", c->dir);
    snprintf(cmd, sizeof cmd, "%s --store %s copy %s 2>&1", STRAUM_DUMP_BIN, c->db.store, copy);
    FILE *p = popen(cmd, "r");
    cr_assert_not_null(p);
    size_t n = fread(out, 1, sizeof out - 1, p);
    out[n] = '\0';
    int status = pclose(p);
    cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "straum-dump copy failed:\n%s", out);
    /* "copied DIR (N bytes) to COPY (M bytes)" */
    unsigned long long to = 0;
    const char *last = strrchr(out, '(');
    cr_assert(last && sscanf(last + 1, "%llu", &to) == 1, "straum-dump copy said: %s", out);
    snprintf(path, sizeof path, "%s/data.mdb", c->db.store);
    struct stat st;
    cr_assert_eq(stat(path, &st), 0);
    c->rep->store_bytes = (uint64_t)st.st_size;
    c->rep->compact_bytes = to;
    cr_assert_leq(c->rep->store_bytes, 8 * c->rep->compact_bytes + (64u << 20),
                  "data.mdb is %.1f MiB for %.1f MiB of data (a compacted copy): freed pages "
                  "are not being reused (a reader slot left pinned?)",
                  (double)c->rep->store_bytes / (1 << 20), (double)to / (1 << 20));
    snprintf(path, sizeof path, "%s/data.mdb", copy);
    unlink(path);
    snprintf(path, sizeof path, "%s/lock.mdb", copy);
    unlink(path);
    rmdir(copy);
}

/* ---- The run ------------------------------------------------------------------------ */

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)flag;
    (void)ftw;
    return remove(path);
}

static void setup(struct chaos *c)
{
    /* Transactions over 64 kB arrive streamed, in pieces before their
     * commit: kills then land in the middle of spooled transactions too. */
    static const char *const settings[] = {"logical_decoding_work_mem=64kB", NULL};
    struct pgtmp_options o = {.settings = settings};
    char err[1024];
    cr_assert_eq(pgtmp_start(&c->pg, &o, err, sizeof err), 0, "%s", err);
    taxi_db_create(&c->db, pgtmp_conninfo(&c->pg), c->k->trips);
    /* Kept outside the publication: what the zones are loaded again from. */
    oracle_exec(c->db.pg, "CREATE TABLE chaos_zones AS SELECT * FROM taxi_zones");
    c->next_id = c->db.next_id;
    snprintf(c->views, sizeof c->views, "%s/bench/taxi_views.sql", STRAUM_SOURCE_DIR);
    strcpy(c->dir, "/tmp/straum-chaos-XXXXXX");
    cr_assert_not_null(mkdtemp(c->dir));
    snprintf(c->ingest_log, sizeof c->ingest_log, "%s/ingest.log", c->dir);
    if (c->k->verbose) {
        char path[128];
        snprintf(path, sizeof path, "%s/writer.log", c->dir);
        c->writer_log = fopen(path, "w");
        cr_assert_not_null(c->writer_log);
        setvbuf(c->writer_log, NULL, _IOLBF, 0);
    }
    for (int i = 0; i < REPLICAS; i++) {
        struct replica *r = &c->replicas[i];
        r->port = free_port();
        r->restart_at = -1;
        snprintf(r->log, sizeof r->log, "%s/serve-%d.log", c->dir, i);
    }
    for (int a = 0; a < NFIXED; a++)
        c->fixed_bodies[a] = ask_body(fixed_ask(a)->ask, fixed_ask(a)->params);
    for (int t = 0; t < 2; t++)
        c->total_bodies[t] = ask_body(TOTAL_ASKS[t], (const char *const[]){TAXI_ALL_FROM,
                                                                            TAXI_ALL_TO, NULL});
    int64_t count;
    char fare[64];
    cr_assert(pg_state(c->db.pg, &count, fare, sizeof fare));
    history_add(&c->hist, count, fare);
    c->trips_now = count;
}

/* The first load, with a kill in the middle of it: a store never fully
 * loaded is loaded again from scratch. The writer is already writing. */
static void first_load(struct chaos *c)
{
    ingest_start(c);
    sleep_s(uniform(&c->rng, 0.05, 0.4));
    ingest_note(c, "killed");
    taxi_ingest_kill(&c->db);
    c->rep->ingest_kills++;
    ingest_start(c);
    double deadline = now_s() + 180;
    while (oracle_store_position(c->db.store) == 0) {
        ingest_assert_alive(c);
        cr_assert_lt(now_s(), deadline, "the first load did not finish within 180 s");
        usleep(20000);
    }
}

/* The faults, in chaos time (which stops during restarts and checks). */
static void run_faults(struct chaos *c)
{
    const struct chaos_knobs *k = c->k;
    int kills_left = k->ingest_kills - c->rep->ingest_kills;
    double slot = kills_left > 0 ? k->seconds / (double)kills_left : 1e9;
    int next_kill = 0, next_restart = 0, next_check = 0;
    double kill_at = uniform(&c->rng, 0, slot);
    double replica_at = k->replica_kill_ms > 0
                            ? uniform(&c->rng, 0.2, 2.0 * k->replica_kill_ms / 1000.0)
                            : 1e18;
    for (;;) {
        double t = chaos_time(c);
        if (atomic_load(&c->failed))
            cr_assert_fail("%s", c->failure);
        ingest_assert_alive(c);
        if (c->db.ingest == 0 && c->ingest_restart_at >= 0 && t >= c->ingest_restart_at) {
            ingest_start(c);
            say(c, "ingest started again");
        }
        for (int i = 0; i < REPLICAS; i++)
            if (c->replicas[i].pid == 0 && c->replicas[i].restart_at >= 0 &&
                t >= c->replicas[i].restart_at) {
                replica_start(c, i);
                say(c, "replica %d started again", i);
            }
        if (next_kill < kills_left && t >= kill_at) {
            if (c->db.ingest) {
                ingest_kill(c);
                next_kill++;
                kill_at = slot * next_kill + uniform(&c->rng, 0, slot);
            } else {
                kill_at = t + 0.3; /* still down from the last kill */
            }
        }
        if (t >= replica_at) {
            int i = rnd(&c->rng, REPLICAS);
            if (c->replicas[i].pid == 0)
                i = 1 - i;
            if (c->replicas[i].pid)
                replica_kill(c, i);
            replica_at = t + uniform(&c->rng, 0.2, 2.0 * k->replica_kill_ms / 1000.0);
        }
        if (next_restart < k->pg_restarts &&
            t >= k->seconds * (next_restart + 0.5) / k->pg_restarts) {
            double began = now_s();
            bool crash = next_restart % 2 == 1;
            pg_restart(c, crash);
            next_restart++;
            atomic_fetch_add(&c->paused_us, (long long)((now_s() - began) * 1e6));
            say(c, "PostgreSQL %s and started again in %.1f s",
                crash ? "crashed (kill -9 of the postmaster)" : "stopped (fast)", now_s() - began);
        }
        if (next_check < k->quiet_checks && t >= k->seconds * (next_check + 1.0) / (k->quiet_checks + 1)) {
            double began = now_s();
            char when[64];
            snprintf(when, sizeof when, "quiet check %d of %d", next_check + 1, k->quiet_checks);
            say(c, "%s", when);
            quiet_check(c, when);
            next_check++;
            atomic_fetch_add(&c->paused_us, (long long)((now_s() - began) * 1e6));
        }
        if (t >= k->seconds && next_kill >= kills_left && next_restart >= k->pg_restarts &&
            next_check >= k->quiet_checks)
            break;
        usleep(5000);
    }
}

static void finish(struct chaos *c)
{
    atomic_store(&c->stop_writer, true);
    writer_resume(c);
    pthread_join(c->writer, NULL);
    quiet_check(c, "at the end");
    atomic_store(&c->stop_asker, true);
    pthread_join(c->asker, NULL);
    if (atomic_load(&c->failed))
        cr_assert_fail("%s", c->failure);
    int status;
    kill(c->db.ingest, SIGTERM);
    waitpid(c->db.ingest, &status, 0);
    c->db.ingest = 0;
    char tail[3000];
    log_tail(c->ingest_log, tail, sizeof tail);
    cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0,
              "straum-ingest did not stop cleanly on SIGTERM (status %d):\n%s", status, tail);
    dump_verify(c, "after ingest stopped");
    check_slot(c, "after ingest stopped");
    for (int i = 0; i < REPLICAS; i++)
        replica_stop(c, i);
    int64_t count;
    char fare[64];
    cr_assert(pg_state(c->db.pg, &count, fare, sizeof fare));
    c->rep->trips_at_end = count;
    check_store_size(c);
}

void chaos_run(const struct chaos_knobs *k, struct chaos_report *rep)
{
    struct chaos *c = calloc(1, sizeof *c);
    cr_assert_not_null(c);
    memset(rep, 0, sizeof *rep);
    c->k = k;
    c->rep = rep;
    c->rng = k->seed * 2654435761ULL + 1;
    c->writer_rng = k->seed;
    c->ingest_restart_at = -1;
    pthread_mutex_init(&c->mu, NULL);
    pthread_cond_init(&c->cv, NULL);
    pthread_mutex_init(&c->hist.mu, NULL);
    double began = now_s();

    setup(c);
    cr_assert_eq(pthread_create(&c->writer, NULL, writer_main, c), 0);
    first_load(c);
    for (int i = 0; i < REPLICAS; i++)
        replica_start(c, i);
    cr_assert_eq(pthread_create(&c->asker, NULL, asker_main, c), 0);
    c->t0 = now_s();
    say(c, "the first load is in; the chaos begins");
    run_faults(c);
    finish(c);

    rep->seconds = now_s() - began;
    rep->txns_committed = atomic_load(&c->committed);
    rep->txns_rolled_back = atomic_load(&c->rolled_back);
    rep->txns_interrupted = atomic_load(&c->interrupted);
    rep->txns_refused = atomic_load(&c->refused);
    rep->asks_answered = atomic_load(&c->answered);
    rep->asks_checked = atomic_load(&c->checked);
    rep->asks_failed_in_kill = atomic_load(&c->failed_in_kill);
    rep->positions_checked = atomic_load(&c->positions);

    taxi_db_destroy(&c->db);
    pgtmp_stop(&c->pg);
    if (k->verbose) /* the logs stay for a look */
        fprintf(stderr, "chaos: the logs of ingest and serve are in %s\n", c->dir);
    else
        nftw(c->dir, rm_entry, 8, FTW_DEPTH | FTW_PHYS);
    for (int a = 0; a < NFIXED; a++)
        cJSON_free(c->fixed_bodies[a]);
    for (int t = 0; t < 2; t++)
        cJSON_free(c->total_bodies[t]);
    if (c->writer_log)
        fclose(c->writer_log);
    free(c->hist.slot);
    pthread_mutex_destroy(&c->hist.mu);
    pthread_cond_destroy(&c->cv);
    pthread_mutex_destroy(&c->mu);
    free(c);
}

void chaos_print(FILE *out, const struct chaos_knobs *k, const struct chaos_report *r)
{
    fprintf(out,
            "chaos: seed %" PRIu64 ", %d s of chaos, %.1f s in all\n"
            "  straum-ingest SIGKILLs survived  %d\n"
            "  PostgreSQL restarts              %d (%d of them crashes)\n"
            "  serve replica SIGKILLs           %d\n"
            "  asks answered (200)              %ld, of which %ld totals matched a committed state\n"
            "  asks failed while a replica was down  %ld\n"
            "  /readyz positions, never backwards    %ld\n"
            "  quiet checks passed              %d (fixed-set answers equal to PostgreSQL: %ld)\n"
            "  transactions                     %ld committed, %ld rolled back, %ld cut off by "
            "restarts, %ld refused\n"
            "  trips at the end                 %ld; data.mdb %.1f MiB, compacted %.1f MiB\n",
            k->seed, k->seconds, r->seconds, r->ingest_kills, r->pg_restarts, r->pg_crashes,
            r->replica_kills, r->asks_answered, r->asks_checked, r->asks_failed_in_kill,
            r->positions_checked, r->quiet_checks, r->fixed_asks_compared, r->txns_committed,
            r->txns_rolled_back, r->txns_interrupted, r->txns_refused, r->trips_at_end,
            (double)r->store_bytes / (1 << 20), (double)r->compact_bytes / (1 << 20));
}
