/* taxi_bench.h -- what the benchmark modes (asks, cold-start, memory,
 * transactions, stream, wal, all) share: the options every mode takes, the environment
 * taxi_setup.c builds (a throwaway PostgreSQL loaded with generated trips,
 * a store built by straum-ingest, the following ingest and straum-serve as
 * children), process helpers (taxi_proc.c) and the JSON report and plots
 * (taxi_report.c). */
#ifndef STRAUM_BENCH_TAXI_BENCH_H
#define STRAUM_BENCH_TAXI_BENCH_H

#include "bench/taxi.h"
#include "tests/kit/pgtmp.h"

#include <cjson/cJSON.h>
#include <libpq-fe.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#define TAXI_FULL_SCALE 20332093LL
#define TAXI_TZ "America/New_York"

struct taxi_opts {
    long long trips;
    bool warehouse;        /* the warehouse workload (taxi warehouse), not the trips */
    bool wide;             /* the trips under the wide view (taxi wide) */
    long long tasks;       /* warehouse: tasks generated (--tasks) */
    unsigned long long seed;
    const char *json_file; /* --json FILE */
    const char *results_file; /* --results FILE: bench/RESULTS.json, each mode's object replaced */
    const char *plot_dir;  /* --plot DIR */
    const char *bin_dir;   /* straum-ingest, straum-serve, straum-dump, taxi_gen */
    const char *src_dir;   /* bench/taxi_views.sql, bench/taxi_schema.sql, zones */
    const char *work_dir;  /* --keep-data DIR: kept; else a temp dir, removed */
    bool check_only;       /* asks: compare answers, no timing */
    bool skip_asks;        /* all: the other modes only */
    int trials;            /* asks: interleaved trials per side (3) */
    double min_seconds;    /* asks: per trial (1 s, split over trials) */
    int restarts;          /* cold-start: warm restarts (10) */
    const char *txn_sizes; /* transactions: "1000,10000,100000,1000000" */
    const char *factors;   /* scaling: "1,2,4" */
    int random_count;      /* random: generated asks timed (1000) */
    int random_check;      /* random: of them checked against PostgreSQL (100) */
    bool no_duckdb;        /* random: no DuckDB column for the slowest */
    bool pg_listen;        /* straum-serve with --pg-listen too (pg-time) */
    double load_seconds;   /* stream: pgbench's -T per script and phase (60) */
    const char *scripts;   /* stream: "measure,key,bucket,insert,delete,mixed,txn10" */
    int clients;           /* stream: pgbench's -c (8) */
    long long wal_rows;    /* wal: trips changed per phase (1,000,000) */
    bool wal_physical;     /* --wal physical (warehouse, wide): the setup's
                              straum-ingest follows the physical WAL */
    int argc;
    char **argv;
};

struct taxi_env {
    struct taxi_opts *o;
    struct pgtmp pg;
    bool pg_up;
    PGconn *conn; /* session time zone America/New_York */
    char work[1024], store[1100], views[1100], url[64];
    char ingest_bin[1100], serve_bin[1100], dump_bin[1100], gen_bin[1100];
    int port;
    int pg_port;  /* straum-serve's --pg-listen port; 0: none */
    pid_t ingest_pid, serve_pid;
    int64_t serve_exec_ns; /* taxi_now_ns() at straum-serve's last exec by taxi_serve_start */
    int ingest_metrics_port; /* the following ingest's --metrics-listen; 0: none */
    const char *ingest_nice; /* its --nice; NULL: straum-ingest's default */
    /* Figures of the setup. */
    double load_pg_s, index_s, copy_out_s, ingest_load_s;
    long ingest_peak_kib; /* VmHWM of the initial load */
    cJSON *report;        /* the --json document */
    char load_key[128];   /* the load mode's key in --results: "load", or "load --asks LIST" */
};

/* Parses the options every mode takes (argv[0] is the mode). Returns 0, or
 * 2 after printing usage. */
int taxi_opts_parse(struct taxi_opts *o, int argc, char **argv, const char *mode);

/* Starts PostgreSQL, loads it, builds the store, starts the following
 * ingest and (when with_serve) straum-serve. Installs cleanup for exit and
 * SIGINT/SIGTERM. Returns 0, or -1 after printing why. */
int taxi_setup(struct taxi_env *e, struct taxi_opts *o, bool with_serve);
/* Stops every child, PostgreSQL, removes the work dir unless kept. */
void taxi_teardown(struct taxi_env *e);

/* Starts straum-serve on e->port; waits for /readyz 200 (timeout_s).
 * Returns 0 or -1. */
int taxi_serve_start(struct taxi_env *e, double timeout_s);
void taxi_serve_stop(struct taxi_env *e);
/* Starts the following straum-ingest (log in the work dir). */
int taxi_ingest_follow(struct taxi_env *e);
void taxi_ingest_stop(struct taxi_env *e);

/* The applied source position (catalog) of the store at store_dir, or 0
 * on error. */
uint64_t taxi_store_lsn(const char *store_dir);
/* Polls the store's catalog until its position passes lsn: the time it
 * did (taxi_now_ns), or 0 after timeout_s. */
int64_t taxi_wait_store_lsn(struct taxi_env *e, uint64_t lsn, double timeout_s);
/* A little WAL (pg_logical_emit_message), waited for in the store: the
 * idle following ingest then stores a fresh contact time. 0 or -1. */
int taxi_touch_store(struct taxi_env *e);
/* Parses "X/Y" (0 for NULL or anything else). */
uint64_t taxi_parse_lsn(const char *s);
/* PostgreSQL's WAL insert position, or 0 (printed). */
uint64_t taxi_insert_lsn(PGconn *c);

/* One-row one-column query; returns a malloc'd string or NULL (printed). */
char *taxi_pg_value(PGconn *c, const char *sql);
/* A command; returns 0 or -1 (printed). */
int taxi_pg_exec(PGconn *c, const char *sql);

/* ---- The logical floor (taxi_floor.c) ------------------------------------ */

/* The pid of the walsender holding a slot, or 0 while none does. */
pid_t taxi_slot_pid(PGconn *c, const char *slot);
/* pg_recvlogical receiving a pgoutput slot to end_lsn with straum-ingest's
 * publication and options: the nanoseconds from exec to its exit, or -1
 * after printing why; *sender_cpu_s, its walsender's CPU seconds (read
 * every ms while it runs; -1 if never read). */
int64_t taxi_floor_ns(struct taxi_env *e, const char *slot, uint64_t end_lsn,
                      double *sender_cpu_s);

/* ---- Processes (taxi_proc.c) --------------------------------------------- */

/* fork/exec argv with stdout and stderr to log (appended; NULL: inherit).
 * Returns the pid, or -1. */
pid_t taxi_spawn(char *const *argv, const char *log);
/* The same with stdout to out (stderr to log; NULL: inherit). */
pid_t taxi_spawn_out(char *const *argv, const char *out, const char *log);
/* SIGTERM, then SIGKILL after timeout_s; reaps. */
void taxi_stop_pid(pid_t pid, double timeout_s);
/* A field of /proc/PID/status in KiB ("VmRSS", "RssAnon", ...), or -1. */
long taxi_proc_kib(pid_t pid, const char *field);
/* User plus system CPU seconds of a running process (/proc/PID/stat), or -1. */
double taxi_proc_cpu_s(pid_t pid);
/* The same to the nanosecond: the time its threads ran, summed over
 * /proc/PID/task/TID/schedstat (a thread that ended is not counted), or
 * -1. For spans of a few ms, where clock ticks (10 ms) say nothing. */
double taxi_proc_run_s(pid_t pid);
/* The CPU seconds every core of the machine has spent busy since boot
 * (/proc/stat: all but idle and iowait), or -1. */
double taxi_machine_busy_s(void);
/* A field of /proc/PID/smaps_rollup in KiB, or -1. */
long taxi_smaps_kib(pid_t pid, const char *field);
/* A free loopback TCP port, or -1. */
int taxi_free_port(void);
/* Registers a child to kill if the program is interrupted; 0 unregisters. */
void taxi_track_child(pid_t pid, bool on);
void taxi_install_signals(const char *remove_dir);

/* `straum-dump --json stats` of the store, parsed (taxi_memory.c); NULL
 * after printing why. */
cJSON *taxi_dump_stats(struct taxi_env *e);

/* ---- wrk (taxi_load.c) -------------------------------------------------- */

/* A wrk script POSTing the chosen asks (asks[i] for TAXI_ASKS[i]) in turn (each wrk thread its own
 * turn), its last output line the figures taxi_wrk_parse reads. 0 or -1. */
int taxi_wrk_script(const char *path, const bool *asks);
struct taxi_wrk_figures {
    long long requests, duration_us, bytes, connect, read, write, status, timeout;
    long long p50_us, p90_us, p99_us, p999_us, max_us;
};
/* The figures from wrk's output at path: 0, or -1 when it has none. */
int taxi_wrk_parse(const char *path, struct taxi_wrk_figures *w);

/* ---- Report (taxi_report.c) ---------------------------------------------- */

/* The root object with machine, versions and command line. */
cJSON *taxi_report_new(struct taxi_env *e);
/* Records each mode's figures into o->results_file and writes the whole
 * report to o->json_file, each if given. Returns 0, or -1 after printing
 * why. */
int taxi_report_write(struct taxi_env *e);
/* Runs gnuplot on DIR/name.gp if gnuplot is installed; prints a note if not. */
void taxi_plot(const char *dir, const char *name, const char *script);

/* ---- Modes --------------------------------------------------------------- */

/* Checks ask a (number i of its list, for the message) over http against
 * its SQL in e->conn's session time zone (the ask in TAXI_TZ; timestamps
 * compare as instants). Returns its row count, or -1 after printing both
 * answers (taxi_bench_asks.c). */
int taxi_check_ask(struct taxi_env *e, const struct taxi_ask *a, int i, struct http_client *http);

int taxi_asks_run(struct taxi_env *e);
int taxi_dashboard_run(struct taxi_env *e);
int taxi_random_run(struct taxi_env *e);
int taxi_cold_run(struct taxi_env *e);
int taxi_memory_run(struct taxi_env *e);
int taxi_txn_run(struct taxi_env *e);
int taxi_warehouse_run(struct taxi_env *e);
int taxi_wide_run(struct taxi_env *e);
int taxi_stream_run(struct taxi_env *e);
int taxi_wal_run(struct taxi_env *e);

#endif
