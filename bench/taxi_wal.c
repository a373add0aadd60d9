/* taxi_wal.c -- `taxi wal`: how fast straum-ingest reads the WAL PostgreSQL
 * writes, by the physical WAL (`--wal physical`, SPEC.md §5.4) and by
 * logical decoding, against the time PostgreSQL took to write it.
 *
 * After the setup (the trips loaded, the logical store built and its slot
 * made), full_page_writes goes back on (the physical follower rebuilds pages
 * from their images), autovacuum off and the checkpoint interval to an hour,
 * so that each phase writes only its own records; a second store is loaded
 * by `run --wal physical` on a physical slot of its own. Four phases then
 * each change --rows trips (1,000,000 by default):
 *
 *   copy    new trips by COPY, in transactions of 250,000 rows;
 *   insert  new trips by INSERT ... SELECT, in transactions of 10,000 rows
 *           (read from a temporary table, which writes no WAL);
 *   update  fare_amount + 0.01 of loaded trips, 10,000 rows a transaction;
 *   delete  other loaded trips, 10,000 rows a transaction.
 *
 * Per phase, on one writer connection with synchronous_commit on:
 *   1. CHECKPOINT, then each store caught up (`run --exit-when-caught-up`),
 *      which moves each slot past it: a physical slot's restart point is
 *      the redo pointer of a checkpoint the follower has read, so without
 *      one per phase each backlog would hold every phase before it. Then
 *      STARTUP_RUNS more catch-ups with nothing to read, whose medians are
 *      what a run costs besides reading;
 *   2. the phase, both ingests stopped: the time PostgreSQL took (first
 *      statement to last commit) and its backend's CPU seconds, the WAL it
 *      wrote (the insert positions' difference), its records and full-page
 *      images (pg_stat_wal's counters, the writer's statistics flushed
 *      before each reading);
 *   3. each store catches up on that backlog. Its read time runs from the
 *      first "streaming" line of its log (connected, the slot started) to
 *      its exit, less the same with nothing to read; exec to exit is
 *      reported beside it. Ingest's CPU seconds come from wait4, the
 *      walsender's from /proc/PID/stat, read every 2 ms while ingest runs
 *      (the last reading before ingest exits; the slot's active_pid names
 *      the walsender), each less an empty run's.
 *
 * At the end each store answers the ten asks through a straum-serve of its
 * own, every answer equal to PostgreSQL's: each WAL brought every row
 * changed. */
#include "tests/kit/taxi_asks.h"
#include "bench/taxi_bench.h"

#include "store/store.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define PHYSICAL_SLOT "straum_physical"
#define COPY_TXN_ROWS 250000LL
#define TXN_ROWS 10000LL
#define STARTUP_RUNS 3
#define SAMPLE_US 2000
#define CATCH_UP_TIMEOUT_S 3600

/* One way of reading: its store, slot and log. */
struct side {
    const char *name; /* "physical", "logical" */
    bool physical;
    char store[1100], log[1100];
    const char *slot;
};

/* One run of `run --exit-when-caught-up`. */
struct catch_up {
    int64_t wall_ns;     /* exec to exit */
    int64_t stream_ns;   /* from its log's first "streaming" line to its exit */
    double cpu_s;        /* ingest's user + system */
    double sender_cpu_s; /* its walsender's, the last reading; 0 if none was read */
    long hwm_kib;
};

/* A side's figures for one phase. */
struct side_figures {
    struct catch_up startup; /* medians of the empty catch-ups */
    struct catch_up backlog;
    double read_s;           /* the backlog's stream_ns less the empty runs' */
    uint64_t slot_start;     /* where the slot stood before the backlog run */
};

enum phase_kind { PHASE_COPY, PHASE_INSERT, PHASE_UPDATE, PHASE_DELETE };

struct phase {
    enum phase_kind kind;
    const char *name, *what;
    long long txn_rows;
    /* figures */
    long long rows, txns;
    uint64_t lsn0, lsn1;
    long long records, fpi;
    double pg_s;
    double pg_cpu_s;         /* the writer's backend, user + system */
    struct side_figures side[2];
};

/* ---- PostgreSQL ------------------------------------------------------------------ */

static int exec_ok(PGconn *c, const char *sql, long long *tuples)
{
    PGresult *r = PQexec(c, sql);
    ExecStatusType st = PQresultStatus(r);
    if (st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK) {
        fprintf(stderr, "taxi: %.200s: %s", sql, PQerrorMessage(c));
        PQclear(r);
        return -1;
    }
    if (tuples)
        *tuples = atoll(PQcmdTuples(r));
    PQclear(r);
    return 0;
}

/* COPY ... FROM STDIN fed from len bytes of text rows. Returns rows, or -1. */
static long long copy_bytes(PGconn *c, const char *sql, const char *buf, size_t len)
{
    PGresult *r = PQexec(c, sql);
    if (PQresultStatus(r) != PGRES_COPY_IN) {
        fprintf(stderr, "taxi: %s: %s", sql, PQerrorMessage(c));
        PQclear(r);
        return -1;
    }
    PQclear(r);
    bool ok = true;
    for (size_t off = 0; off < len && ok;) {
        size_t n = len - off < (1 << 18) ? len - off : (1 << 18);
        ok = PQputCopyData(c, buf + off, (int)n) == 1;
        off += n;
    }
    PQputCopyEnd(c, ok ? NULL : "taxi: feeding COPY failed");
    long long rows = -1;
    r = PQgetResult(c);
    if (PQresultStatus(r) == PGRES_COMMAND_OK)
        rows = atoll(PQcmdTuples(r));
    else
        fprintf(stderr, "taxi: %s: %s", sql, PQerrorMessage(c));
    PQclear(r);
    while ((r = PQgetResult(c)))
        PQclear(r);
    return rows;
}

/* The insert position and pg_stat_wal's counters, read on the writer's own
 * connection after flushing its statistics: a backend flushes them at most
 * once a second otherwise, and a phase ends within that second.
 * pg_stat_force_next_flush makes the backend flush when it goes idle, which
 * is before it answers. (pg_waldump --stats over the same range counts the
 * same records.) */
static int wal_counters(PGconn *w, uint64_t *lsn, long long *records, long long *fpi)
{
    if (exec_ok(w, "SELECT pg_stat_force_next_flush()", NULL))
        return -1;
    PGresult *r = PQexec(w, "SELECT pg_current_wal_insert_lsn(), wal_records, wal_fpi "
                            "FROM pg_stat_wal");
    if (PQresultStatus(r) != PGRES_TUPLES_OK || PQntuples(r) != 1) {
        fprintf(stderr, "taxi: reading pg_stat_wal: %s", PQerrorMessage(w));
        PQclear(r);
        return -1;
    }
    *lsn = taxi_parse_lsn(PQgetvalue(r, 0, 0));
    *records = atoll(PQgetvalue(r, 0, 1));
    *fpi = atoll(PQgetvalue(r, 0, 2));
    PQclear(r);
    return *lsn ? 0 : -1;
}

static uint64_t slot_restart(PGconn *c, const char *slot)
{
    char sql[200];
    snprintf(sql, sizeof sql,
             "SELECT restart_lsn FROM pg_replication_slots WHERE slot_name = '%s'", slot);
    char *v = taxi_pg_value(c, sql);
    uint64_t lsn = taxi_parse_lsn(v);
    free(v);
    return lsn;
}

/* Waits until no walsender holds the slot: the one of the last run exits
 * after its ingest, and a START_REPLICATION before it did would be refused
 * and retried after a backoff, which the next run's time would hold. */
static int wait_slot_free(PGconn *c, const char *slot)
{
    int64_t deadline = taxi_now_ns() + 30 * 1000000000LL;
    while (taxi_slot_pid(c, slot)) {
        if (taxi_now_ns() > deadline) {
            fprintf(stderr, "taxi: the slot %s is still held after 30 s\n", slot);
            return -1;
        }
        usleep(1000);
    }
    return 0;
}

/* ---- straum-ingest ----------------------------------------------------------------- */

static long file_size(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return 0;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fclose(f);
    return n < 0 ? 0 : n;
}

static int64_t realtime_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* The time (Unix ns) of the first line from offset on in ingest's log that
 * says it began streaming ("streaming the physical WAL from", "streaming
 * from"), or 0. Its lines begin "ts=2024-01-17T09:30:00.123Z", UTC. */
static int64_t first_streaming_ns(const char *log, long offset)
{
    FILE *f = fopen(log, "r");
    if (!f)
        return 0;
    fseek(f, offset, SEEK_SET);
    char line[2048];
    int64_t at = 0;
    while (!at && fgets(line, sizeof line, f)) {
        struct tm tm = {0};
        int ms = 0;
        if (!strstr(line, "msg=\"streaming ") ||
            sscanf(line, "ts=%d-%d-%dT%d:%d:%d.%dZ", &tm.tm_year, &tm.tm_mon, &tm.tm_mday,
                   &tm.tm_hour, &tm.tm_min, &tm.tm_sec, &ms) != 7)
            continue;
        tm.tm_year -= 1900;
        tm.tm_mon -= 1;
        at = (int64_t)timegm(&tm) * 1000000000 + (int64_t)ms * 1000000;
    }
    fclose(f);
    return at;
}

/* `run --exit-when-caught-up` on a side's store (loading it when it is
 * new), timed from exec to exit. 0, or -1 after printing why. */
static int catch_up(struct taxi_env *e, const struct side *s, struct catch_up *c)
{
    memset(c, 0, sizeof *c);
    if (wait_slot_free(e->conn, s->slot))
        return -1;
    char *argv[24] = {e->ingest_bin, "run", "--source", (char *)pgtmp_conninfo(&e->pg),
                      "--views", e->views, "--store", (char *)s->store,
                      "--exit-when-caught-up", "--slot", (char *)s->slot,
                      /* PostgreSQL runs at nice 0: so does ingest, or the
                       * scheduler's share, not ingest, sets the ratio. */
                      "--nice", "0", NULL};
    int n = 13;
    if (s->physical) {
        argv[n++] = "--wal";
        argv[n++] = "physical";
    }
    argv[n] = NULL;
    long log_at = file_size(s->log);
    int64_t t0 = taxi_now_ns();
    pid_t pid = taxi_spawn(argv, s->log);
    if (pid < 0)
        return -1;
    pid_t sender = 0;
    int64_t deadline = t0 + CATCH_UP_TIMEOUT_S * 1000000000LL;
    for (;;) {
        siginfo_t info = {0};
        if (waitid(P_PID, (id_t)pid, &info, WEXITED | WNOHANG | WNOWAIT) || info.si_pid)
            break; /* WNOWAIT: the exit stays for wait4 and its rusage */
        if (!sender)
            sender = taxi_slot_pid(e->conn, s->slot);
        double cpu = sender ? taxi_proc_cpu_s(sender) : -1;
        if (cpu >= 0)
            c->sender_cpu_s = cpu;
        if (taxi_now_ns() > deadline) {
            fprintf(stderr, "taxi: %s ingest did not catch up within %d s\n", s->name,
                    CATCH_UP_TIMEOUT_S);
            kill(pid, SIGKILL);
        }
        usleep(SAMPLE_US);
    }
    int status = 0;
    struct rusage ru;
    pid_t r = wait4(pid, &status, 0, &ru);
    c->wall_ns = taxi_now_ns() - t0;
    int64_t exit_at = realtime_ns();
    taxi_track_child(pid, false);
    if (r != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        fprintf(stderr, "taxi: straum-ingest run%s --exit-when-caught-up failed (status %d; "
                        "see %s)\n", s->physical ? " --wal physical" : "", status, s->log);
        return -1;
    }
    c->cpu_s = (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 +
               (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
    c->hwm_kib = ru.ru_maxrss;
    /* Its start (exec, views, store, catalog, connections) is no part of
     * reading; from the streaming line on, the run reads and applies. */
    int64_t streaming = first_streaming_ns(s->log, log_at);
    if (!streaming) {
        fprintf(stderr, "taxi: no \"streaming\" line in %s for this run\n", s->log);
        return -1;
    }
    c->stream_ns = exit_at - streaming;
    return 0;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median_of(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* Catches a side up once (which also moves its slot past the checkpoint
 * just taken), then STARTUP_RUNS times with nothing to read: the median of
 * each figure is the start-up a backlog run also pays. */
static int startup(struct taxi_env *e, const struct side *s, struct catch_up *out)
{
    struct catch_up c;
    if (catch_up(e, s, &c))
        return -1;
    double wall[STARTUP_RUNS], stream[STARTUP_RUNS], cpu[STARTUP_RUNS], sender[STARTUP_RUNS];
    for (int i = 0; i < STARTUP_RUNS; i++) {
        if (catch_up(e, s, &c))
            return -1;
        wall[i] = (double)c.wall_ns;
        stream[i] = (double)c.stream_ns;
        cpu[i] = c.cpu_s;
        sender[i] = c.sender_cpu_s;
    }
    out->wall_ns = (int64_t)median_of(wall, STARTUP_RUNS);
    out->stream_ns = (int64_t)median_of(stream, STARTUP_RUNS);
    out->cpu_s = median_of(cpu, STARTUP_RUNS);
    out->sender_cpu_s = median_of(sender, STARTUP_RUNS);
    return 0;
}

/* ---- The phases -------------------------------------------------------------------- */

struct wal_data {
    char *copy_rows;    /* the copy phase's rows, COPY text */
    size_t copy_len;
    size_t *copy_cuts;  /* byte offset of every COPY_TXN_ROWS-th row, and the end */
    int ncopy;
    long long maxid;    /* the largest id loaded */
};

/* taxi_gen's rows (count from first_id, seed) into memory. */
static char *generate(struct taxi_env *e, long long count, long long first_id,
                      unsigned long long seed, size_t *len)
{
    char path[1200], log[1200], trips[32], first[32], seeds[32];
    snprintf(path, sizeof path, "%s/wal_rows.tsv", e->work);
    snprintf(log, sizeof log, "%s/setup.log", e->work);
    snprintf(trips, sizeof trips, "%lld", count);
    snprintf(first, sizeof first, "%lld", first_id);
    snprintf(seeds, sizeof seeds, "%llu", seed);
    unlink(path);
    char *argv[] = {e->gen_bin, "--trips", trips, "--seed", seeds, "--first-id", first, NULL};
    pid_t pid = taxi_spawn_out(argv, path, log);
    int status = 0;
    if (pid < 0 || waitpid(pid, &status, 0) != pid)
        return NULL;
    taxi_track_child(pid, false);
    FILE *f = fopen(path, "rb");
    if (!f || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        fprintf(stderr, "taxi: taxi_gen failed (status %d)\n", status);
        if (f)
            fclose(f);
        return NULL;
    }
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = malloc((size_t)n + 1);
    if (buf && fread(buf, 1, (size_t)n, f) != (size_t)n) {
        free(buf);
        buf = NULL;
    }
    fclose(f);
    unlink(path);
    if (buf) {
        buf[n] = '\0';
        *len = (size_t)n;
    }
    return buf;
}

/* The rows the copy and insert phases add, made before any phase: their
 * making is no part of PostgreSQL's time. The insert phase's rows wait in a
 * temporary table on the writer's connection (its reads write no WAL),
 * indexed by id so that each transaction reads its 10,000. */
static int prepare(struct taxi_env *e, PGconn *w, struct wal_data *d)
{
    long long rows = e->o->wal_rows;
    char *v = taxi_pg_value(e->conn, "SELECT max(id) FROM yellow_trips");
    d->maxid = v ? atoll(v) : 0;
    free(v);
    if (d->maxid < 2 * rows) {
        fprintf(stderr, "taxi wal: the update and delete phases change trips 1 to %lld; only "
                        "%lld are loaded (--trips at least twice --rows)\n", 2 * rows, d->maxid);
        return -1;
    }
    if (!(d->copy_rows = generate(e, rows, d->maxid + 1, e->o->seed + 1, &d->copy_len)))
        return -1;
    d->ncopy = (int)((rows + COPY_TXN_ROWS - 1) / COPY_TXN_ROWS);
    d->copy_cuts = calloc((size_t)d->ncopy + 1, sizeof *d->copy_cuts);
    if (!d->copy_cuts)
        return -1;
    long long line = 0;
    int cut = 1;
    for (size_t i = 0; i < d->copy_len && cut < d->ncopy; i++)
        if (d->copy_rows[i] == '\n' && ++line % COPY_TXN_ROWS == 0)
            d->copy_cuts[cut++] = i + 1;
    d->copy_cuts[d->ncopy] = d->copy_len;

    size_t len = 0;
    char *stage = generate(e, rows, d->maxid + rows + 1, e->o->seed + 2, &len);
    if (!stage)
        return -1;
    long long staged = -1;
    if (exec_ok(w, "SET temp_buffers = '1GB'", NULL) == 0 &&
        exec_ok(w, "CREATE TEMP TABLE wal_stage (LIKE yellow_trips)", NULL) == 0)
        staged = copy_bytes(w, "COPY wal_stage FROM STDIN", stage, len);
    free(stage);
    if (staged != rows || exec_ok(w, "CREATE INDEX ON wal_stage (id)", NULL) ||
        exec_ok(w, "ANALYZE wal_stage", NULL))
        return -1;
    return 0;
}

/* Runs the phase's statements on w. 0, or -1 after printing why. */
static int run_phase(struct taxi_env *e, PGconn *w, const struct wal_data *d, struct phase *p)
{
    long long rows = e->o->wal_rows;
    p->rows = 0;
    p->txns = 0;
    if (p->kind == PHASE_COPY) {
        for (int i = 0; i < d->ncopy; i++) {
            long long n = copy_bytes(w, "COPY yellow_trips FROM STDIN",
                                     d->copy_rows + d->copy_cuts[i],
                                     d->copy_cuts[i + 1] - d->copy_cuts[i]);
            if (n < 0)
                return -1;
            p->rows += n;
            p->txns++;
        }
    } else {
        for (long long a = 0; a < rows; a += p->txn_rows) {
            long long b = a + p->txn_rows < rows ? a + p->txn_rows : rows, n = 0;
            char sql[300];
            if (p->kind == PHASE_INSERT)
                snprintf(sql, sizeof sql,
                         "INSERT INTO yellow_trips SELECT * FROM wal_stage "
                         "WHERE id > %lld AND id <= %lld",
                         d->maxid + rows + a, d->maxid + rows + b);
            else if (p->kind == PHASE_UPDATE)
                snprintf(sql, sizeof sql,
                         "UPDATE yellow_trips SET fare_amount = fare_amount + 0.01 "
                         "WHERE id > %lld AND id <= %lld", a, b);
            else
                snprintf(sql, sizeof sql,
                         "DELETE FROM yellow_trips WHERE id > %lld AND id <= %lld", rows + a,
                         rows + b);
            if (exec_ok(w, sql, &n))
                return -1;
            p->rows += n;
            p->txns++;
        }
    }
    if (p->rows != rows) {
        fprintf(stderr, "taxi wal: the %s phase changed %lld rows, not %lld\n", p->name, p->rows,
                rows);
        return -1;
    }
    return 0;
}

static int one_phase(struct taxi_env *e, PGconn *w, const struct wal_data *d, struct side *sides,
                     struct phase *p)
{
    if (taxi_pg_exec(e->conn, "CHECKPOINT"))
        return -1;
    for (int s = 0; s < 2; s++)
        if (startup(e, &sides[s], &p->side[s].startup))
            return -1;
    long long rec0, fpi0, rec1, fpi1;
    if (wal_counters(w, &p->lsn0, &rec0, &fpi0))
        return -1;
    /* On a machine whose cores other work shares, the backend's CPU
     * seconds compare where its wall time measures the scheduler's share. */
    pid_t backend = (pid_t)PQbackendPID(w);
    double cpu0 = taxi_proc_cpu_s(backend);
    int64_t t0 = taxi_now_ns();
    if (run_phase(e, w, d, p))
        return -1;
    p->pg_s = (double)(taxi_now_ns() - t0) / 1e9;
    p->pg_cpu_s = taxi_proc_cpu_s(backend) - cpu0;
    if (wal_counters(w, &p->lsn1, &rec1, &fpi1))
        return -1;
    p->records = rec1 - rec0;
    p->fpi = fpi1 - fpi0;
    for (int s = 0; s < 2; s++) {
        struct side_figures *f = &p->side[s];
        f->slot_start = slot_restart(e->conn, sides[s].slot);
        if (catch_up(e, &sides[s], &f->backlog))
            return -1;
        uint64_t at = taxi_store_lsn(sides[s].store);
        if (at < p->lsn1) {
            fprintf(stderr, "taxi wal: the %s store stands at %X/%X after catching up, before "
                            "the phase's end %X/%X\n", sides[s].name, (unsigned)(at >> 32),
                    (unsigned)at, (unsigned)(p->lsn1 >> 32), (unsigned)p->lsn1);
            return -1;
        }
        /* From the streaming line to the exit, less the same with nothing
         * to read (telling the store's position, the last commit, closing);
         * a backlog shorter than that spread counts as a millisecond. */
        f->read_s = (double)(f->backlog.stream_ns - f->startup.stream_ns) / 1e9;
        if (f->read_s < 0.001)
            f->read_s = 0.001;
    }
    return 0;
}

/* ---- Checking the stores ------------------------------------------------------------- */

/* A straum-serve on a store of its own (--max-lag 0: the store is not
 * followed meanwhile), the ten asks checked against PostgreSQL. */
static int check_store(struct taxi_env *e, const struct side *s)
{
    int port = taxi_free_port();
    char listen[64], url[64], log[1200];
    snprintf(listen, sizeof listen, "127.0.0.1:%d", port);
    snprintf(url, sizeof url, "http://127.0.0.1:%d", port);
    snprintf(log, sizeof log, "%s/serve-wal-%s.log", e->work, s->name);
    char *argv[] = {e->serve_bin, "--store", (char *)s->store, "--listen", listen,
                    "--max-lag", "0", NULL};
    pid_t pid = taxi_spawn(argv, log);
    if (pid < 0)
        return -1;
    struct http_client http;
    struct http_response resp = {0};
    char err[512];
    int rc = -1;
    int64_t deadline = taxi_now_ns() + 60 * 1000000000LL;
    while (rc && taxi_now_ns() < deadline) {
        if (http_client_open(&http, url, err, sizeof err) == 0 &&
            http_request(&http, "GET", "/readyz", NULL, NULL, 0, &resp, err, sizeof err) == 0 &&
            resp.status == 200) {
            rc = 0;
            break;
        }
        http_client_close(&http);
        usleep(5000);
    }
    http_response_free(&resp);
    if (rc) {
        fprintf(stderr, "taxi: straum-serve on the %s store not ready (see %s)\n", s->name, log);
        taxi_stop_pid(pid, 10);
        return -1;
    }
    for (int i = 0; rc == 0 && i < TAXI_NASKS; i++)
        if (taxi_check_ask(e, &TAXI_ASKS[i], i, &http) < 0) {
            fprintf(stderr, "taxi wal: the %s store's answer to %s differs from PostgreSQL's\n",
                    s->name, TAXI_ASKS[i].name);
            rc = -1;
        }
    http_client_close(&http);
    taxi_stop_pid(pid, 10);
    return rc;
}

/* ---- Report ------------------------------------------------------------------------ */

static void add_side(cJSON *j, const struct side_figures *f, double mib, long long rows,
                     double pg_s, double pg_cpu_s)
{
    double cpu = f->backlog.cpu_s - f->startup.cpu_s;
    cJSON_AddNumberToObject(j, "catch_up_s", (double)f->backlog.wall_ns / 1e9);
    cJSON_AddNumberToObject(j, "startup_s", (double)f->startup.wall_ns / 1e9);
    cJSON_AddNumberToObject(j, "streaming_to_exit_s", (double)f->backlog.stream_ns / 1e9);
    cJSON_AddNumberToObject(j, "idle_streaming_to_exit_s", (double)f->startup.stream_ns / 1e9);
    cJSON_AddNumberToObject(j, "read_s", f->read_s);
    cJSON_AddNumberToObject(j, "read_mib_per_s", mib / f->read_s);
    cJSON_AddNumberToObject(j, "rows_per_s", (double)rows / f->read_s);
    cJSON_AddNumberToObject(j, "against_postgres", pg_s / f->read_s);
    cJSON_AddNumberToObject(j, "ingest_cpu_s", cpu);
    cJSON_AddNumberToObject(j, "against_postgres_cpu", pg_cpu_s / (cpu > 0.01 ? cpu : 0.01));
    cJSON_AddNumberToObject(j, "walsender_cpu_s",
                            f->backlog.sender_cpu_s - f->startup.sender_cpu_s);
    cJSON_AddNumberToObject(j, "ingest_hwm_kib", (double)f->backlog.hwm_kib);
}

static cJSON *phase_json(const struct phase *p, bool one)
{
    cJSON *j = cJSON_CreateObject();
    double mib = (double)(p->lsn1 - p->lsn0) / 1048576.0;
    cJSON_AddStringToObject(j, "phase", p->name);
    cJSON_AddStringToObject(j, "what", p->what);
    cJSON_AddNumberToObject(j, "rows", (double)p->rows);
    cJSON_AddNumberToObject(j, "transactions", (double)p->txns);
    cJSON_AddNumberToObject(j, "wal_bytes", (double)(p->lsn1 - p->lsn0));
    cJSON_AddNumberToObject(j, "wal_records", (double)p->records);
    cJSON_AddNumberToObject(j, "wal_fpi", (double)p->fpi);
    cJSON_AddNumberToObject(j, "postgres_s", p->pg_s);
    cJSON_AddNumberToObject(j, "postgres_cpu_s", p->pg_cpu_s);
    for (int s = 0; s < 2; s++) {
        cJSON *sj = cJSON_AddObjectToObject(j, s == 0 ? "physical" : "logical");
        add_side(sj, &p->side[s], mib, p->rows, p->pg_s, p->pg_cpu_s);
        if (!one)
            continue;
        /* What the run read before the phase began: from the slot's
         * restart point (a checkpoint's redo pointer, physically). */
        cJSON_AddNumberToObject(sj, "slot_behind_bytes",
                                p->side[s].slot_start < p->lsn0
                                    ? (double)(p->lsn0 - p->side[s].slot_start)
                                    : 0);
    }
    return j;
}

static void print_phase(const struct phase *p, const char *name)
{
    char t[32], r[32], f[32];
    double mib = (double)(p->lsn1 - p->lsn0) / 1048576.0;
    printf("  %-7s %9.1f MiB, %s records, %s images, PostgreSQL %s (its CPU %.2f s)", name, mib,
           taxi_format_count(p->records, r, sizeof r), taxi_format_count(p->fpi, f, sizeof f),
           taxi_format_ns((int64_t)(p->pg_s * 1e9), t, sizeof t), p->pg_cpu_s);
    for (int s = 0; s < 2; s++) {
        const struct side_figures *x = &p->side[s];
        char a[32], b[32];
        char c[32], d[32];
        printf(";\n          %-8s read %s (exec to exit %s, streaming to exit %s, idle %s), "
               "%.0f MiB/s, %.0f rows/s, %.2fx PostgreSQL; ingest CPU %.2f s, walsender CPU "
               "%.2f s",
               s == 0 ? "physical" : "logical",
               taxi_format_ns((int64_t)(x->read_s * 1e9), a, sizeof a),
               taxi_format_ns(x->backlog.wall_ns, b, sizeof b),
               taxi_format_ns(x->backlog.stream_ns, c, sizeof c),
               taxi_format_ns(x->startup.stream_ns, d, sizeof d), mib / x->read_s,
               (double)p->rows / x->read_s, p->pg_s / x->read_s,
               x->backlog.cpu_s - x->startup.cpu_s,
               x->backlog.sender_cpu_s - x->startup.sender_cpu_s);
    }
    printf("\n");
    fflush(stdout);
}

/* ---- The mode --------------------------------------------------------------------- */

/* The 1-minute load average: this machine's other work competes for the
 * two cores, and the report says how much there was. */
static double loadavg(void)
{
    double v = -1;
    FILE *f = fopen("/proc/loadavg", "r");
    if (f) {
        if (fscanf(f, "%lf", &v) != 1)
            v = -1;
        fclose(f);
    }
    return v;
}

/* Server settings for the phases, set for the whole cluster. Returns 0 once
 * a checkpoint has recorded full_page_writes on: the checkpointer applies
 * the setting when it reads the reload, which the postmaster passes on
 * after pg_reload_conf returns. */
static int settings_for_phases(struct taxi_env *e)
{
    if (taxi_pg_exec(e->conn, "ALTER SYSTEM SET full_page_writes = on") ||
        taxi_pg_exec(e->conn, "ALTER SYSTEM SET autovacuum = off") ||
        taxi_pg_exec(e->conn, "ALTER SYSTEM SET checkpoint_timeout = '1h'") ||
        taxi_pg_exec(e->conn, "SELECT pg_reload_conf()"))
        return -1;
    for (int i = 0; i < 100; i++) {
        usleep(100000);
        if (taxi_pg_exec(e->conn, "CHECKPOINT"))
            return -1;
        char *v = taxi_pg_value(e->conn, "SELECT full_page_writes FROM pg_control_checkpoint()");
        bool on = v && v[0] == 't';
        free(v);
        if (on)
            return 0;
    }
    fprintf(stderr, "taxi wal: full_page_writes is still off at the last checkpoint\n");
    return -1;
}

int taxi_wal_run(struct taxi_env *e)
{
    long long rows = e->o->wal_rows;
    char n1[32];
    printf("\nWAL: four phases of %s trips changed; straum-ingest stopped during each, then\n"
           "catching up on its backlog by the physical WAL and by logical decoding\n",
           taxi_format_count(rows, n1, sizeof n1));
    /* The machine quiet but for PostgreSQL and the ingest being timed. */
    taxi_serve_stop(e);
    taxi_ingest_stop(e);
    if (settings_for_phases(e))
        return 1;

    struct side sides[2] = {{.name = "physical", .physical = true, .slot = PHYSICAL_SLOT},
                            {.name = "logical", .physical = false, .slot = "straum"}};
    snprintf(sides[0].store, sizeof sides[0].store, "%s/store-physical", e->work);
    snprintf(sides[1].store, sizeof sides[1].store, "%s", e->store);
    for (int s = 0; s < 2; s++)
        snprintf(sides[s].log, sizeof sides[s].log, "%s/ingest-wal-%s.log", e->work,
                 sides[s].name);

    struct catch_up load;
    if (catch_up(e, &sides[0], &load)) {
        fprintf(stderr, "taxi wal: the physical store's load failed\n");
        return 1;
    }
    char t[32];
    printf("  physical store loaded by run --wal physical in %s (peak RSS %ld MiB)\n",
           taxi_format_ns(load.wall_ns, t, sizeof t), load.hwm_kib / 1024);

    PGconn *w = PQconnectdb(pgtmp_conninfo(&e->pg));
    if (PQstatus(w) != CONNECTION_OK) {
        fprintf(stderr, "taxi: %s", PQerrorMessage(w));
        PQfinish(w);
        return 1;
    }
    struct wal_data d = {0};
    int rc = 0;
    /* PostgreSQL's default, each commit flushed (pgtmp turns it off). */
    if (exec_ok(w, "SET synchronous_commit = on", NULL) || prepare(e, w, &d))
        rc = 1;

    struct phase phases[4] = {
        {.kind = PHASE_COPY, .name = "copy", .txn_rows = COPY_TXN_ROWS,
         .what = "COPY of new trips, 250,000 rows a transaction"},
        {.kind = PHASE_INSERT, .name = "insert", .txn_rows = TXN_ROWS,
         .what = "INSERT ... SELECT of new trips, 10,000 rows a transaction"},
        {.kind = PHASE_UPDATE, .name = "update", .txn_rows = TXN_ROWS,
         .what = "UPDATE of loaded trips' fare_amount, 10,000 rows a transaction"},
        {.kind = PHASE_DELETE, .name = "delete", .txn_rows = TXN_ROWS,
         .what = "DELETE of other loaded trips, 10,000 rows a transaction"},
    };
    double load_before = loadavg();
    for (int i = 0; i < 4 && rc == 0; i++) {
        if (one_phase(e, w, &d, sides, &phases[i])) {
            fprintf(stderr, "taxi wal: the %s phase failed (logs in %s)\n", phases[i].name,
                    e->work);
            rc = 1;
            break;
        }
        print_phase(&phases[i], phases[i].name);
    }
    PQfinish(w);
    free(d.copy_rows);
    free(d.copy_cuts);
    if (rc)
        return rc;

    /* All four phases as one: sums, and ratios of the sums. */
    struct phase all = {.name = "all", .what = "the four phases"};
    all.lsn0 = phases[0].lsn0;
    all.lsn1 = phases[0].lsn0;
    for (int i = 0; i < 4; i++) {
        const struct phase *p = &phases[i];
        all.lsn1 += p->lsn1 - p->lsn0;
        all.rows += p->rows;
        all.txns += p->txns;
        all.records += p->records;
        all.fpi += p->fpi;
        all.pg_s += p->pg_s;
        all.pg_cpu_s += p->pg_cpu_s;
        for (int s = 0; s < 2; s++) {
            struct side_figures *a = &all.side[s];
            const struct side_figures *x = &p->side[s];
            a->read_s += x->read_s;
            a->backlog.wall_ns += x->backlog.wall_ns;
            a->backlog.stream_ns += x->backlog.stream_ns;
            a->startup.stream_ns += x->startup.stream_ns;
            a->backlog.cpu_s += x->backlog.cpu_s;
            a->backlog.sender_cpu_s += x->backlog.sender_cpu_s;
            a->startup.wall_ns += x->startup.wall_ns;
            a->startup.cpu_s += x->startup.cpu_s;
            a->startup.sender_cpu_s += x->startup.sender_cpu_s;
            if (x->backlog.hwm_kib > a->backlog.hwm_kib)
                a->backlog.hwm_kib = x->backlog.hwm_kib;
        }
    }
    print_phase(&all, "all");
    double load_after = loadavg();

    printf("  checking both stores' answers against PostgreSQL\n");
    fflush(stdout);
    for (int s = 0; s < 2; s++)
        if (check_store(e, &sides[s]))
            return 1;
    printf("  the ten asks equal PostgreSQL's on both stores\n");

    cJSON *wj = cJSON_AddObjectToObject(e->report, "wal");
    cJSON_AddNumberToObject(wj, "rows_per_phase", (double)rows);
    cJSON_AddNumberToObject(wj, "copy_transaction_rows", (double)COPY_TXN_ROWS);
    cJSON_AddNumberToObject(wj, "transaction_rows", (double)TXN_ROWS);
    cJSON_AddNumberToObject(wj, "startup_runs", STARTUP_RUNS);
    cJSON_AddStringToObject(wj, "wal_level", "logical");
    cJSON_AddNumberToObject(wj, "physical_load_s", (double)load.wall_ns / 1e9);
    cJSON_AddNumberToObject(wj, "physical_load_hwm_kib", (double)load.hwm_kib);
    cJSON_AddNumberToObject(wj, "asks_checked_per_store", TAXI_NASKS);
    cJSON_AddNumberToObject(wj, "loadavg_1m_before", load_before);
    cJSON_AddNumberToObject(wj, "loadavg_1m_after", load_after);
    cJSON *arr = cJSON_AddArrayToObject(wj, "phases");
    for (int i = 0; i < 4; i++)
        cJSON_AddItemToArray(arr, phase_json(&phases[i], true));
    cJSON_AddItemToObject(wj, "all", phase_json(&all, false));
    return 0;
}
