/* taxi_setup.c -- the setup every benchmark mode shares: options; a
 * throwaway PostgreSQL 15 (pgtmp, shared_buffers 2GB) with the schema, the
 * real zones and taxi_gen's trips loaded by COPY FROM STDIN, indexed and
 * analyzed after the load; PostgreSQL's own binary COPY of the columns the
 * views read (the yardstick of the initial load); straum-ingest plan's SQL
 * applied; the initial load by straum-ingest (timed, its peak RSS kept);
 * then the following ingest and straum-serve as children, all stopped at
 * exit or on SIGINT/SIGTERM. */
#include "bench/taxi_bench.h"

#include "store/store.h"
#include "tests/kit/warehouse.h"

#include <errno.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef STRAUM_SOURCE_DIR
#define STRAUM_SOURCE_DIR "."
#endif

static int opts_usage(const char *mode)
{
    fprintf(stderr,
            "usage: taxi %s [--trips N | --tasks N] [--seed S] [--json FILE] [--results FILE] [--plot DIR]\n"
            "       [--keep-data DIR]\n"
            "       [--bin DIR] [--source-dir DIR] [--check-only] [--trials N] [--seconds S]\n"
            "       [--restarts N] [--sizes N,N,...] [--factors N,N,...] [--skip-asks]\n"
            "       [--count N] [--check N] [--no-duckdb]\n"
            "       [--load-seconds S] [--scripts LIST] [--clients N] [--rows N]\n"
            "       [--wal logical|physical]\n"
            "  --trips N        trips generated (default the full scale, 20,332,093)\n"
            "  --tasks N        warehouse: tasks generated (default the seed's 13,116,878),\n"
            "                   groups and locations in the seed's ratios\n"
            "  --seed S         the generator's seed (default 42)\n"
            "  --json FILE      every figure, the machine and versions as JSON\n"
            "  --results FILE   replace the objects of the modes run in FILE (bench/RESULTS.json;\n"
            "                   bench/render_results.py renders bench/RESULTS.md from it)\n"
            "  --plot DIR       PNG charts drawn with gnuplot (if installed)\n"
            "  --keep-data DIR  work dir (store, logs) kept after the run\n"
            "  --bin DIR        straum-ingest, straum-serve, straum-dump, taxi_gen (default:\n"
            "                   beside this program)\n"
            "  --source-dir DIR the repository (bench/taxi_views.sql, the zones)\n"
            "  --check-only     asks: compare every answer with PostgreSQL's, no timing\n"
            "  --trials N       asks: interleaved trials per side (3)\n"
            "  --seconds S      asks: seconds of back-to-back requests per side (1, over\n"
            "                   the trials; at least one request per trial)\n"
            "  --restarts N     cold-start: warm restarts (10)\n"
            "  --sizes LIST     transactions: rows changed (1000,10000,100000,1000000)\n"
            "  --factors LIST   scaling: multiples of --trips, each its own setup (1,2,4)\n"
            "  --skip-asks      all: every mode but asks\n"
            "  --count N        random: generated asks timed (1000)\n"
            "  --check N        random: of them checked against PostgreSQL, the slowest\n"
            "                   first (100)\n"
            "  --no-duckdb      random: the slowest beside PostgreSQL only\n"
            "  --list           random: print the asks and their SQL; set nothing up\n"
            "  --url URL        random: ask a straum-serve that runs already, no setup\n"
            "                   (--pg CONNINFO its PostgreSQL, for --check; --serve-pid PID\n"
            "                   its process, for the RSS)\n"
            "  --load-seconds S stream: seconds of pgbench per script and phase (60)\n"
            "  --scripts LIST   stream: the scripts run (measure,key,bucket,insert,delete,\n"
            "                   mixed,txn10)\n"
            "  --clients N      stream: pgbench clients (8)\n"
            "  --rows N         wal: trips changed per phase (1,000,000); the update and\n"
            "                   delete phases change loaded trips, so --trips is at least\n"
            "                   twice it\n"
            "  --wal MODE       warehouse, wide: logical (default) or physical: straum-ingest\n"
            "                   loads and follows by the physical WAL (full_page_writes on\n"
            "                   through the setup); figures recorded under MODE-physical\n",
            mode);
    return 2;
}

int taxi_opts_parse(struct taxi_opts *o, int argc, char **argv, const char *mode)
{
    memset(o, 0, sizeof *o);
    o->trips = TAXI_FULL_SCALE;
    o->warehouse = !strcmp(mode, "warehouse");
    o->wide = !strcmp(mode, "wide");
    o->tasks = WAREHOUSE_FULL_TASKS;
    o->seed = 42;
    o->trials = 3;
    o->min_seconds = 1.0;
    o->restarts = 10;
    o->txn_sizes = "1000,10000,100000,1000000";
    o->random_count = 1000;
    o->random_check = 100;
    o->load_seconds = 60;
    o->scripts = "measure,key,bucket,insert,delete,mixed,txn10";
    o->clients = 8;
    o->wal_rows = 1000000;
    o->src_dir = STRAUM_SOURCE_DIR;
    o->argc = argc;
    o->argv = argv;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--check-only") || !strcmp(a, "--skip-asks")) {
            *(a[2] == 'c' ? &o->check_only : &o->skip_asks) = true;
            continue;
        }
        if (!strcmp(a, "--no-duckdb")) {
            o->no_duckdb = true;
            continue;
        }
        if (!strcmp(a, "--help") || i + 1 >= argc)
            return opts_usage(mode);
        const char *v = argv[++i];
        if (!strcmp(a, "--trips"))
            o->trips = atoll(v);
        else if (!strcmp(a, "--tasks"))
            o->tasks = atoll(v);
        else if (!strcmp(a, "--seed"))
            o->seed = strtoull(v, NULL, 10);
        else if (!strcmp(a, "--json"))
            o->json_file = v;
        else if (!strcmp(a, "--results"))
            o->results_file = v;
        else if (!strcmp(a, "--plot"))
            o->plot_dir = v;
        else if (!strcmp(a, "--keep-data"))
            o->work_dir = v;
        else if (!strcmp(a, "--bin"))
            o->bin_dir = v;
        else if (!strcmp(a, "--source-dir"))
            o->src_dir = v;
        else if (!strcmp(a, "--trials"))
            o->trials = atoi(v);
        else if (!strcmp(a, "--seconds"))
            o->min_seconds = atof(v);
        else if (!strcmp(a, "--restarts"))
            o->restarts = atoi(v);
        else if (!strcmp(a, "--sizes"))
            o->txn_sizes = v;
        else if (!strcmp(a, "--factors"))
            o->factors = v;
        else if (!strcmp(a, "--count"))
            o->random_count = atoi(v);
        else if (!strcmp(a, "--check"))
            o->random_check = atoi(v);
        else if (!strcmp(a, "--load-seconds"))
            o->load_seconds = atof(v);
        else if (!strcmp(a, "--scripts"))
            o->scripts = v;
        else if (!strcmp(a, "--clients"))
            o->clients = atoi(v);
        else if (!strcmp(a, "--rows"))
            o->wal_rows = atoll(v);
        else if (!strcmp(a, "--wal") && (!strcmp(v, "physical") || !strcmp(v, "logical")))
            o->wal_physical = v[0] == 'p';
        else
            return opts_usage(mode);
    }
    if (o->trips < 1 || o->tasks < 1 || o->trials < 1 || o->restarts < 1 || o->min_seconds < 0 ||
        o->random_count < 1 || o->random_check < 0 ||
        o->load_seconds < 1 || o->clients < 1 || o->wal_rows < 1)
        return opts_usage(mode);
    /* The modes whose figures are all the following ingest's: the others
     * time pgoutput's own floor (stream: pg_recvlogical on the
     * publication), or, wal, run both WALs already. */
    if (o->wal_physical && strcmp(mode, "warehouse") && strcmp(mode, "wide")) {
        fprintf(stderr, "taxi %s: --wal physical is taken by the warehouse and wide modes "
                        "(taxi wal follows by both WALs)\n", mode);
        return 2;
    }
    if (!strcmp(mode, "wal") && o->trips < 2 * o->wal_rows) {
        fprintf(stderr, "taxi wal: the update and delete phases change loaded trips 1 to %lld: "
                        "--trips %lld is fewer\n", 2 * o->wal_rows, o->trips);
        return 2;
    }
    if (o->results_file && o->check_only) {
        fprintf(stderr, "taxi %s: --results records timed figures, and --check-only times "
                        "nothing; leave one out\n", mode);
        return 2;
    }
    return 0;
}

/* ---- PostgreSQL helpers --------------------------------------------------- */

char *taxi_pg_value(PGconn *c, const char *sql)
{
    PGresult *r = PQexec(c, sql);
    if (PQresultStatus(r) != PGRES_TUPLES_OK || PQntuples(r) < 1) {
        fprintf(stderr, "taxi: %s: %s", sql, PQerrorMessage(c));
        PQclear(r);
        return NULL;
    }
    char *v = strdup(PQgetvalue(r, 0, 0));
    PQclear(r);
    return v;
}

int taxi_pg_exec(PGconn *c, const char *sql)
{
    PGresult *r = PQexec(c, sql);
    ExecStatusType st = PQresultStatus(r);
    PQclear(r);
    if (st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK) {
        fprintf(stderr, "taxi: %.200s: %s", sql, PQerrorMessage(c));
        return -1;
    }
    return 0;
}

uint64_t taxi_parse_lsn(const char *s)
{
    unsigned long hi = 0, lo = 0;
    if (!s || sscanf(s, "%lx/%lx", &hi, &lo) != 2)
        return 0;
    return ((uint64_t)hi << 32) | (uint64_t)lo;
}

uint64_t taxi_insert_lsn(PGconn *c)
{
    char *v = taxi_pg_value(c, "SELECT pg_current_wal_insert_lsn()");
    uint64_t lsn = taxi_parse_lsn(v);
    free(v);
    return lsn;
}

static char *read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = malloc((size_t)n + 1);
    if (buf && fread(buf, 1, (size_t)n, f) != (size_t)n) {
        free(buf);
        buf = NULL;
    }
    fclose(f);
    if (buf) {
        buf[n] = '\0';
        if (len)
            *len = (size_t)n;
    }
    return buf;
}

/* COPY table FROM STDIN, fed from fd until EOF. Returns rows or -1. */
static long long copy_in_fd(PGconn *c, const char *sql, int fd)
{
    PGresult *r = PQexec(c, sql);
    if (PQresultStatus(r) != PGRES_COPY_IN) {
        fprintf(stderr, "taxi: %s: %s", sql, PQerrorMessage(c));
        PQclear(r);
        return -1;
    }
    PQclear(r);
    static char buf[1 << 18];
    ssize_t n;
    int ok = 1;
    while ((n = read(fd, buf, sizeof buf)) > 0 || (n < 0 && errno == EINTR))
        if (n > 0 && PQputCopyData(c, buf, (int)n) != 1) {
            ok = 0;
            break;
        }
    PQputCopyEnd(c, ok ? NULL : "taxi: feeding COPY failed");
    r = PQgetResult(c);
    long long rows = -1;
    if (PQresultStatus(r) == PGRES_COMMAND_OK)
        rows = atoll(PQcmdTuples(r));
    else
        fprintf(stderr, "taxi: %s: %s", sql, PQerrorMessage(c));
    PQclear(r);
    while ((r = PQgetResult(c)))
        PQclear(r);
    return rows;
}

/* PostgreSQL's own binary COPY of the fact columns the views read: seconds,
 * or a negative value on error. */
static double copy_out_seconds(PGconn *c, bool warehouse)
{
    const char *sql =
        warehouse ? "COPY (SELECT created_at, organization_id, live, group_id, location_id, "
                    "status, quantity, pick_seconds FROM tasks) TO STDOUT (FORMAT binary)"
                  : "COPY (SELECT pickup_at, pu_location_id, do_location_id, payment_type, "
                    "fare_amount, tip_amount, trip_distance FROM yellow_trips) "
                    "TO STDOUT (FORMAT binary)";
    int64_t t0 = taxi_now_ns();
    PGresult *r = PQexec(c, sql);
    if (PQresultStatus(r) != PGRES_COPY_OUT) {
        fprintf(stderr, "taxi: %s: %s", sql, PQerrorMessage(c));
        PQclear(r);
        return -1;
    }
    PQclear(r);
    char *buf;
    int n;
    while ((n = PQgetCopyData(c, &buf, 0)) > 0)
        PQfreemem(buf);
    r = PQgetResult(c);
    bool ok = PQresultStatus(r) == PGRES_COMMAND_OK;
    PQclear(r);
    return ok ? (double)(taxi_now_ns() - t0) / 1e9 : -1;
}

/* ---- Store position ------------------------------------------------------- */

/* The position in the catalog of the open store s; -1 when it cannot be
 * read. */
static int catalog_lsn(struct store *s, uint64_t *lsn)
{
    struct store_error err;
    struct store_read *r;
    if (store_read_begin(s, &r, &err) != 0)
        return -1;
    struct store_catalog cat;
    int rc = store_read_catalog(r, &cat, &err);
    if (rc == 0)
        *lsn = cat.position.lsn;
    store_read_end(r);
    return rc == 0 ? 0 : -1;
}

uint64_t taxi_store_lsn(const char *store_dir)
{
    struct store *s;
    struct store_error err;
    uint64_t lsn = 0;
    if (store_open(store_dir, STORE_READ_ONLY, &s, &err) != 0)
        return 0;
    if (catalog_lsn(s, &lsn) != 0)
        lsn = 0;
    store_close(s);
    return lsn;
}

/* Polls the store's position until it passes lsn; returns when, or 0. The
 * store stays open between polls (reopened after a failed read). */
int64_t taxi_wait_store_lsn(struct taxi_env *e, uint64_t lsn, double timeout_s)
{
    struct store *s = NULL;
    struct store_error err;
    int64_t deadline = taxi_now_ns() + (int64_t)(timeout_s * 1e9);
    while (taxi_now_ns() < deadline) {
        if (!s && store_open(e->store, STORE_READ_ONLY, &s, &err) != 0)
            s = NULL;
        uint64_t pos = 0;
        if (s && catalog_lsn(s, &pos) != 0) {
            store_close(s);
            s = NULL;
        }
        if (pos > lsn) {
            int64_t t = taxi_now_ns();
            store_close(s);
            return t;
        }
        usleep(500);
    }
    if (s)
        store_close(s);
    return 0;
}

/* Makes PostgreSQL write a little WAL and waits until the store's position
 * passes it: an idle following ingest then stores a fresh contact time,
 * which /readyz's lag check reads (straum-ingest stores its position on an
 * idle keepalive only when the server's WAL end moved). */
int taxi_touch_store(struct taxi_env *e)
{
    uint64_t lsn = taxi_insert_lsn(e->conn);
    if (!lsn || taxi_pg_exec(e->conn, "SELECT pg_logical_emit_message(false, 'taxi', 'tick')"))
        return -1;
    return taxi_wait_store_lsn(e, lsn, 60) ? 0 : -1;
}

/* ---- Children ----------------------------------------------------------- */

/* Appends `--wal physical` to straum-ingest's argv at n when the run
 * follows the physical WAL, and the NULL after; the new count. */
static int wal_args(const struct taxi_env *e, char **argv, int n)
{
    if (e->o->wal_physical) {
        argv[n++] = "--wal";
        argv[n++] = "physical";
    }
    argv[n] = NULL;
    return n;
}

int taxi_ingest_follow(struct taxi_env *e)
{
    char log[1200];
    snprintf(log, sizeof log, "%s/ingest.log", e->work);
    char metrics[64];
    snprintf(metrics, sizeof metrics, "127.0.0.1:%d", e->ingest_metrics_port);
    char *argv[16] = {e->ingest_bin, "run", "--source", (char *)pgtmp_conninfo(&e->pg),
                      "--views", e->views, "--store", e->store, NULL};
    int n = 8;
    if (e->ingest_metrics_port) {
        argv[n++] = "--metrics-listen";
        argv[n++] = metrics;
    }
    if (e->ingest_nice) {
        argv[n++] = "--nice";
        argv[n++] = (char *)e->ingest_nice;
    }
    n = wal_args(e, argv, n);
    e->ingest_pid = taxi_spawn(argv, log);
    return e->ingest_pid > 0 ? 0 : -1;
}

void taxi_ingest_stop(struct taxi_env *e)
{
    taxi_stop_pid(e->ingest_pid, 30);
    e->ingest_pid = 0;
}

int taxi_serve_start(struct taxi_env *e, double timeout_s)
{
    char log[1200], listen[64], pg_listen[64];
    snprintf(log, sizeof log, "%s/serve.log", e->work);
    snprintf(listen, sizeof listen, "127.0.0.1:%d", e->port);
    snprintf(pg_listen, sizeof pg_listen, "127.0.0.1:%d", e->pg_port);
    char *argv[] = {e->serve_bin, "--store", e->store, "--listen", listen,
                    e->pg_port ? "--pg-listen" : NULL, pg_listen, NULL};
    if (e->ingest_pid > 0 && taxi_touch_store(e))
        fprintf(stderr, "taxi: the store's position did not move (is straum-ingest following?)\n");
    e->serve_exec_ns = taxi_now_ns();
    e->serve_pid = taxi_spawn(argv, log);
    if (e->serve_pid <= 0)
        return -1;
    int64_t deadline = taxi_now_ns() + (int64_t)(timeout_s * 1e9);
    struct http_response resp = {0};
    char err[256];
    while (taxi_now_ns() < deadline) {
        struct http_client c;
        if (http_client_open(&c, e->url, err, sizeof err) == 0 &&
            http_request(&c, "GET", "/readyz", NULL, NULL, 0, &resp, err, sizeof err) == 0 &&
            resp.status == 200) {
            http_client_close(&c);
            http_response_free(&resp);
            return 0;
        }
        http_client_close(&c);
        if (waitpid(e->serve_pid, NULL, WNOHANG) == e->serve_pid) {
            fprintf(stderr, "taxi: straum-serve exited (log: %s)\n", log);
            taxi_track_child(e->serve_pid, false);
            e->serve_pid = 0;
            http_response_free(&resp);
            return -1;
        }
        usleep(1000);
    }
    fprintf(stderr, "taxi: straum-serve not ready after %.0f s (log: %s): %d %s\n", timeout_s, log,
            resp.status, resp.body ? resp.body : "");
    http_response_free(&resp);
    return -1;
}

void taxi_serve_stop(struct taxi_env *e)
{
    taxi_stop_pid(e->serve_pid, 10);
    e->serve_pid = 0;
}

/* ---- Setup ---------------------------------------------------------------- */

static struct taxi_env *cleanup_env;

static void at_exit_cleanup(void)
{
    if (cleanup_env)
        taxi_teardown(cleanup_env);
}

void taxi_teardown(struct taxi_env *e)
{
    if (e->serve_pid > 0)
        taxi_serve_stop(e);
    if (e->ingest_pid > 0)
        taxi_ingest_stop(e);
    if (e->conn) {
        PQfinish(e->conn);
        e->conn = NULL;
    }
    if (e->pg_up) {
        pgtmp_stop(&e->pg);
        e->pg_up = false;
    }
    if (e->work[0] && !e->o->work_dir) {
        char *argv[] = {"/bin/rm", "-rf", e->work, NULL};
        pid_t p = taxi_spawn(argv, NULL);
        if (p > 0) {
            waitpid(p, NULL, 0);
            taxi_track_child(p, false);
        }
        e->work[0] = '\0';
    }
    if (e->report) {
        cJSON_Delete(e->report);
        e->report = NULL;
    }
    cleanup_env = NULL;
}

static void progress(const char *what, int64_t t0)
{
    char t[32];
    printf("  %-58s %s\n", what, taxi_format_ns(taxi_now_ns() - t0, t, sizeof t));
    fflush(stdout);
}

static void paths(struct taxi_env *e, struct taxi_opts *o)
{
    char exe[1024] = ".";
    const char *bin = o->bin_dir;
    if (!bin) {
        ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
        if (n > 0) {
            exe[n] = '\0';
            bin = dirname(exe);
        } else
            bin = ".";
    }
    snprintf(e->ingest_bin, sizeof e->ingest_bin, "%s/straum-ingest", bin);
    snprintf(e->serve_bin, sizeof e->serve_bin, "%s/straum-serve", bin);
    snprintf(e->dump_bin, sizeof e->dump_bin, "%s/straum-dump", bin);
    snprintf(e->gen_bin, sizeof e->gen_bin, "%s/taxi_gen", bin);
    snprintf(e->views, sizeof e->views, "%s/bench/%s_views.sql", o->src_dir,
             o->warehouse ? "warehouse" : o->wide ? "taxi_wide" : "taxi");
}

static int load_trips(struct taxi_env *e)
{
    int fds[2];
    if (pipe(fds) != 0)
        return -1;
    char trips[32], seed[32];
    snprintf(trips, sizeof trips, "%lld", e->o->trips);
    snprintf(seed, sizeof seed, "%llu", e->o->seed);
    pid_t pid = fork();
    if (pid < 0)
        return -1;
    if (pid == 0) {
        dup2(fds[1], 1);
        close(fds[0]);
        close(fds[1]);
        char *argv[] = {e->gen_bin, "--trips", trips, "--seed", seed, NULL};
        execv(argv[0], argv);
        fprintf(stderr, "taxi: exec %s: %s\n", argv[0], strerror(errno));
        _exit(127);
    }
    taxi_track_child(pid, true);
    close(fds[1]);
    long long rows = copy_in_fd(e->conn, "COPY yellow_trips FROM STDIN", fds[0]);
    close(fds[0]);
    int status = 0;
    waitpid(pid, &status, 0);
    taxi_track_child(pid, false);
    if (rows != e->o->trips || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        fprintf(stderr, "taxi: loading trips: %lld rows of %lld (taxi_gen status %d)\n", rows,
                e->o->trips, status);
        return -1;
    }
    return 0;
}

/* Runs the SQL file bench/NAME of the source tree. 0 or -1 (printed). */
static int run_source_sql(struct taxi_env *e, const char *name)
{
    char path[1200];
    snprintf(path, sizeof path, "%s/bench/%s", e->o->src_dir, name);
    char *sql = read_file(path, NULL);
    if (!sql) {
        fprintf(stderr, "taxi: cannot read %s\n", path);
        return -1;
    }
    int rc = taxi_pg_exec(e->conn, sql);
    free(sql);
    return rc;
}

/* The trips: the schema, the real zones, generated trips by COPY, the
 * index on pickup_at. 0 or -1 (printed). */
static int load_taxi(struct taxi_env *e, long long *zones)
{
    /* The schema, and the test-sized generator the wide mode's streamed
     * commits call (straum_generate_trips). */
    if (run_source_sql(e, "taxi_schema.sql") || run_source_sql(e, "taxi_generate.sql"))
        return -1;
    char path[1200];
    snprintf(path, sizeof path, "%s/bench/data/taxi_zone_lookup.csv", e->o->src_dir);
    FILE *zf = fopen(path, "r");
    if (!zf) {
        fprintf(stderr, "taxi: cannot read %s\n", path);
        return -1;
    }
    *zones = copy_in_fd(e->conn, "COPY taxi_zones FROM STDIN (FORMAT csv, HEADER)", fileno(zf));
    fclose(zf);
    if (*zones < 0)
        return -1;

    int64_t t0 = taxi_now_ns();
    if (load_trips(e))
        return -1;
    e->load_pg_s = (double)(taxi_now_ns() - t0) / 1e9;
    progress("trips generated and loaded (COPY FROM STDIN)", t0);
    t0 = taxi_now_ns();
    if (taxi_pg_exec(e->conn, "CREATE INDEX ON yellow_trips (pickup_at)") ||
        taxi_pg_exec(e->conn, "VACUUM ANALYZE yellow_trips") ||
        taxi_pg_exec(e->conn, "VACUUM ANALYZE taxi_zones"))
        return -1;
    e->index_s = (double)(taxi_now_ns() - t0) / 1e9;
    progress("index on pickup_at, VACUUM ANALYZE", t0);
    return 0;
}

/* The warehouse: the schema and its generator (bench/warehouse_schema.sql,
 * in PostgreSQL itself), the index on created_at built after the rows.
 * 0 or -1 (printed). */
static int load_warehouse(struct taxi_env *e)
{
    if (run_source_sql(e, "warehouse_schema.sql") ||
        taxi_pg_exec(e->conn, "DROP INDEX tasks_created_at"))
        return -1;
    struct warehouse_scale scale = warehouse_scale(e->o->tasks);
    char gen[256];
    warehouse_generate_sql(&scale, gen, sizeof gen);
    int64_t t0 = taxi_now_ns();
    if (taxi_pg_exec(e->conn, gen))
        return -1;
    e->load_pg_s = (double)(taxi_now_ns() - t0) / 1e9;
    progress("tasks, groups and locations generated (INSERT ... SELECT)", t0);
    t0 = taxi_now_ns();
    if (taxi_pg_exec(e->conn, "CREATE INDEX tasks_created_at ON tasks (created_at)") ||
        taxi_pg_exec(e->conn, "VACUUM ANALYZE tasks") ||
        taxi_pg_exec(e->conn, "VACUUM ANALYZE task_groups") ||
        taxi_pg_exec(e->conn, "VACUUM ANALYZE storage_locations"))
        return -1;
    e->index_s = (double)(taxi_now_ns() - t0) / 1e9;
    progress("index on created_at, VACUUM ANALYZE", t0);
    return 0;
}

static int apply_plan(struct taxi_env *e)
{
    char out[1200], log[1200];
    snprintf(out, sizeof out, "%s/plan.sql", e->work);
    snprintf(log, sizeof log, "%s/setup.log", e->work);
    char *argv[9] = {e->ingest_bin, "plan", "--source", (char *)pgtmp_conninfo(&e->pg), "--views",
                     e->views};
    wal_args(e, argv, 6);
    pid_t pid = taxi_spawn_out(argv, out, log);
    int status = 0;
    if (pid < 0 || waitpid(pid, &status, 0) != pid)
        return -1;
    taxi_track_child(pid, false);
    if (!WIFEXITED(status) || WEXITSTATUS(status) > 1) {
        fprintf(stderr, "taxi: straum-ingest plan failed (see %s)\n", log);
        return -1;
    }
    char *sql = read_file(out, NULL);
    if (!sql)
        return -1;
    /* Drop the comment lines; run the rest. */
    char *clean = calloc(strlen(sql) + 2, 1); /* + a last newline */
    if (!clean) {
        free(sql);
        return -1;
    }
    size_t o = 0;
    for (char *line = strtok(sql, "\n"); line; line = strtok(NULL, "\n"))
        if (strncmp(line, "--", 2)) {
            o += (size_t)sprintf(clean + o, "%s\n", line);
        }
    int rc = o ? taxi_pg_exec(e->conn, clean) : 0; /* physical: nothing to set up */
    free(sql);
    free(clean);
    return rc;
}

/* The initial load: straum-ingest run --exit-when-caught-up, timed, with
 * its peak RSS from wait4's rusage. */
static int initial_load(struct taxi_env *e)
{
    char log[1200];
    snprintf(log, sizeof log, "%s/ingest.log", e->work);
    char *argv[12] = {e->ingest_bin, "run", "--source", (char *)pgtmp_conninfo(&e->pg), "--views",
                      e->views, "--store", e->store, "--exit-when-caught-up"};
    wal_args(e, argv, 9);
    int64_t t0 = taxi_now_ns();
    pid_t pid = taxi_spawn(argv, log);
    if (pid < 0)
        return -1;
    int status = 0;
    struct rusage ru;
    if (wait4(pid, &status, 0, &ru) != pid)
        return -1;
    taxi_track_child(pid, false);
    e->ingest_load_s = (double)(taxi_now_ns() - t0) / 1e9;
    e->ingest_peak_kib = ru.ru_maxrss;
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        fprintf(stderr, "taxi: the initial load failed (see %s)\n", log);
        return -1;
    }
    return 0;
}

int taxi_setup(struct taxi_env *e, struct taxi_opts *o, bool with_serve)
{
    memset(e, 0, sizeof *e);
    e->o = o;
    paths(e, o);
    if (o->work_dir) {
        mkdir(o->work_dir, 0755);
        snprintf(e->work, sizeof e->work, "%s", o->work_dir);
    } else {
        char tmpl[] = "/tmp/straum-taxi.XXXXXX";
        if (!mkdtemp(tmpl)) {
            perror("taxi: mkdtemp");
            return -1;
        }
        snprintf(e->work, sizeof e->work, "%s", tmpl);
    }
    snprintf(e->store, sizeof e->store, "%s/store", e->work);
    cleanup_env = e;
    atexit(at_exit_cleanup);
    taxi_install_signals(o->work_dir ? NULL : e->work);
    char n[32];
    if (o->warehouse)
        printf("Setup: %s warehouse tasks, work dir %s\n", taxi_format_count(o->tasks, n, sizeof n),
               e->work);
    else
        printf("Setup: %s trips (seed %llu), work dir %s\n",
               taxi_format_count(o->trips, n, sizeof n), o->seed, e->work);

    int64_t t0 = taxi_now_ns();
    /* Reads run with defaults but shared_buffers; these only speed the load
     * and the index build (full-page images, which the test clusters write
     * for the physical WAL's follower, too). A run by the physical WAL
     * keeps the images: its follower rebuilds pages from them. */
    const char *const settings[] = {"max_wal_size=16GB", "maintenance_work_mem=1GB",
                                    "checkpoint_timeout=30min",
                                    o->wal_physical ? NULL : "full_page_writes=off", NULL};
    struct pgtmp_options po = {.shared_buffers = "2GB", .settings = settings};
    char err[512];
    if (pgtmp_start(&e->pg, &po, err, sizeof err) != 0) {
        fprintf(stderr, "taxi: starting PostgreSQL: %s\n", err);
        return -1;
    }
    e->pg_up = true;
    e->conn = PQconnectdb(pgtmp_conninfo(&e->pg));
    if (PQstatus(e->conn) != CONNECTION_OK) {
        fprintf(stderr, "taxi: %s", PQerrorMessage(e->conn));
        return -1;
    }
    progress("PostgreSQL 15 started (shared_buffers 2GB)", t0);

    long long zones = 0;
    if (o->warehouse ? load_warehouse(e) : load_taxi(e, &zones))
        return -1;

    if (apply_plan(e))
        return -1;
    /* Twice: the first warms the cache, as the ingest's load finds it. */
    t0 = taxi_now_ns();
    double c1 = copy_out_seconds(e->conn, o->warehouse), c2 = copy_out_seconds(e->conn, o->warehouse);
    if (c1 < 0 || c2 < 0)
        return -1;
    e->copy_out_s = c1 < c2 ? c1 : c2;
    progress("PostgreSQL's binary COPY TO STDOUT, twice", t0);

    t0 = taxi_now_ns();
    if (initial_load(e))
        return -1;
    progress("straum-ingest: initial load (--exit-when-caught-up)", t0);
    char t1[32], t2[32];
    printf("  initial load %s, PostgreSQL's own COPY %s: %.2fx; ingest peak RSS %ld MiB\n",
           taxi_format_ns((int64_t)(e->ingest_load_s * 1e9), t1, sizeof t1),
           taxi_format_ns((int64_t)(e->copy_out_s * 1e9), t2, sizeof t2),
           e->ingest_load_s / e->copy_out_s, e->ingest_peak_kib / 1024);

    if (taxi_pg_exec(e->conn, o->warehouse ? "SET TIME ZONE 'UTC'" : "SET TIME ZONE '" TAXI_TZ "'"))
        return -1;
    if (taxi_ingest_follow(e))
        return -1;
    e->port = taxi_free_port();
    snprintf(e->url, sizeof e->url, "http://127.0.0.1:%d", e->port);
    if (o->pg_listen)
        e->pg_port = taxi_free_port();
    if (with_serve) {
        t0 = taxi_now_ns();
        if (taxi_serve_start(e, 60))
            return -1;
        progress("straum-serve ready", t0);
    }
    e->report = taxi_report_new(e);
    cJSON *s = cJSON_AddObjectToObject(e->report, "setup");
    if (o->warehouse) {
        struct warehouse_scale scale = warehouse_scale(o->tasks);
        cJSON_AddNumberToObject(s, "tasks", (double)scale.tasks);
        cJSON_AddNumberToObject(s, "task_groups", (double)scale.groups);
        cJSON_AddNumberToObject(s, "storage_locations", (double)scale.locations);
    } else {
        cJSON_AddNumberToObject(s, "trips", (double)o->trips);
        cJSON_AddNumberToObject(s, "seed", (double)o->seed);
        cJSON_AddNumberToObject(s, "zones", (double)zones);
    }
    cJSON_AddNumberToObject(s, "postgres_load_s", e->load_pg_s);
    cJSON_AddNumberToObject(s, "postgres_index_analyze_s", e->index_s);
    cJSON_AddNumberToObject(s, "postgres_copy_out_binary_s", e->copy_out_s);
    cJSON_AddNumberToObject(s, "ingest_initial_load_s", e->ingest_load_s);
    cJSON_AddNumberToObject(s, "initial_load_vs_copy", e->ingest_load_s / e->copy_out_s);
    cJSON_AddNumberToObject(s, "ingest_load_peak_rss_kib", (double)e->ingest_peak_kib);
    return 0;
}
