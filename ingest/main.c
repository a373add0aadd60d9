/* main.c -- the straum-ingest command line. */
#include "base/duration.h"
#include "base/logfmt.h"
#include "base/size.h"
#include "ingest/ingest.h"
#include "store/store.h"

#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char usage[] =
    "usage: straum-ingest plan --source CONNINFO --views FILE [--publication NAME]\n"
    "                          [--wal logical|physical]\n"
    "       straum-ingest run --source CONNINFO --views FILE --store DIR [options]\n"
    "\n"
    "plan   prints the SQL to run once on PostgreSQL (publication, replica identity)\n"
    "       and checks the server's settings; exits 1 when something needs fixing.\n"
    "run    loads a consistent snapshot into a new store, then follows the\n"
    "       database by logical decoding (or, with --wal physical, its physical\n"
    "       WAL) until SIGTERM or SIGINT.\n"
    "\n"
    "  --source CONNINFO      libpq connection string or URI; PG* variables apply\n"
    "  --views FILE           the CREATE VIEW statements\n"
    "  --store DIR            the store directory\n"
    "  --slot NAME            replication slot (default straum)\n"
    "  --publication NAME     publication (default straum)\n"
    "  --wal MODE             logical (default) or physical: a physical slot, heap\n"
    "                         WAL decoded by Straum; wal_level = replica is enough;\n"
    "                         the pages it rebuilds take at most 4 GiB\n"
    "                         (STRAUM_MIRROR_MAX_MB), a row at most 256 MiB\n"
    "  --commit-interval DUR  group commit interval (default 5ms; at least 4x the last\n"
    "                         commit's time, up to 500ms, so a backlog commits less often;\n"
    "                         200,000 rows at most; behind by more than 16 MiB of WAL, up\n"
    "                         to 4s and 1,000,000 rows, cells decoded in 2x256 MiB, else\n"
    "                         2x64 MiB; half again, at most 6s and 1,500,000 rows, to take\n"
    "                         a backlog's last fifth; at once when nothing came for 5ms);\n"
    "                         the stream is read ahead meanwhile, at most 64 MiB\n"
    "                         (262,144 messages) waiting to be applied, 8 MiB of\n"
    "                         the physical WAL\n"
    "  --max-lag DUR          lag considered healthy (default 10s; for /readyz)\n"
    "  --rebuild              drop the store and load again (views changed)\n"
    "  --exit-when-caught-up  stop once the server's current WAL is applied\n"
    "  --snapshot-batch ROWS  rows per time partition of a large fact table while\n"
    "                         loading (default 500000)\n"
    "  --progress-interval DUR  while loading, an info line every DUR with the\n"
    "                         table, rows of the estimated total, rows a second and\n"
    "                         time left (default 5s; 0: none); a terminal also gets\n"
    "                         a one-line bar\n"
    "  --max-store-size SIZE  cap on the store's data.mdb (e.g. 512MiB, 20GiB); a\n"
    "                         commit that does not fit stops ingest with the store at\n"
    "                         its last commit (default and most: 1TiB)\n"
    "  --metrics-listen ADDR  serve GET /metrics (Prometheus text: position, lag,\n"
    "                         transactions and changes applied, commits and their\n"
    "                         latency, spool, reconnects, state, data.mdb size) and\n"
    "                         GET /healthz on host:port, [v6addr]:port or :port\n"
    "                         (loopback), e.g. 127.0.0.1:9187 (default: none)\n"
    "  --log-level LEVEL      debug, info, warn or error (default info): logfmt lines\n"
    "                         on stderr; debug adds a line per store commit and\n"
    "                         per slice of the idle fold\n"
    "  --nice N               lower ingest's CPU priority by N (0 to 19, default 10),\n"
    "                         so that straum-serve on the same machine answers first\n"
    "  --help, --version\n"
    "DUR is digits with an optional fraction and a unit: us, ms, s, m or h (a bare\n"
    "number is milliseconds), e.g. 250us, 1.5s, 2h; more than 2^63-1 us is refused.\n";

/* Transparent huge pages for the follower's heap. A batch takes hundreds of
 * MiB afresh (overlay cells, hash tables, value-count runs, spools) and lets
 * them go at its commit; touched 4 KiB at a time, each page's first write
 * was a fault of its own: 18% of ingest's CPU in `taxi wal`'s delete phase
 * (perf, on a virtual machine, where a fault costs more). glibc
 * (2.35 on) asks the kernel for huge pages for what malloc maps when the
 * tunable glibc.malloc.hugetlb is 1, and reads tunables only as a process
 * starts, so `run` sets it and executes itself again, once: a
 * GLIBC_TUNABLES that names glibc.malloc.hugetlb already (this second
 * start, or an operator's choice, =0 to turn it off) is left as it is,
 * and other tunables given are kept. Nothing is done where the kernel
 * gives no huge pages (transparent_hugepage "never"), and a failed exec
 * goes on as before. The cost is memory held in 2 MiB pieces: SPEC.md §5
 * "Huge pages for the heap" has both measures. */
static void exec_with_huge_pages(char **argv)
{
#if defined(__linux__) && defined(__GLIBC__)
    static const char tunable[] = "glibc.malloc.hugetlb";
    const char *given = getenv("GLIBC_TUNABLES");
    if (given && strstr(given, tunable))
        return;
    FILE *f = fopen("/sys/kernel/mm/transparent_hugepage/enabled", "r");
    char modes[128] = "";
    bool got = f && fgets(modes, sizeof modes, f);
    if (f)
        fclose(f);
    if (!got || strstr(modes, "[never]"))
        return;
    char value[4096];
    int n = snprintf(value, sizeof value, "%s%s%s=1", given ? given : "", given ? ":" : "",
                     tunable);
    if (n < 0 || (size_t)n >= sizeof value || setenv("GLIBC_TUNABLES", value, 1))
        return;
    execv("/proc/self/exe", argv);
    /* not executed: the heap stays as it is */
    if (given)
        setenv("GLIBC_TUNABLES", given, 1);
    else
        unsetenv("GLIBC_TUNABLES");
#else
    (void)argv;
#endif
}

static void on_signal(int sig)
{
    (void)sig;
    ingest_request_stop();
}

int main(int argc, char **argv)
{
    if (argc >= 2 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
        fputs(usage, stdout);
        return 0;
    }
    if (argc >= 2 && !strcmp(argv[1], "--version")) {
        puts("straum-ingest " STRAUM_VERSION);
        return 0;
    }
    if (argc < 2 || (strcmp(argv[1], "plan") && strcmp(argv[1], "run"))) {
        fputs(usage, stderr);
        return 2;
    }
    bool run = !strcmp(argv[1], "run");
    long nice_by = 10;
    struct ingest_options opt = {.source = "", .slot = "straum", .publication = "straum",
                                 .commit_interval_us = 5000, .max_lag_us = 10000000,
                                 .progress_interval_us = 5000000};
    for (int i = 2; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        bool takes = strcmp(a, "--rebuild") && strcmp(a, "--exit-when-caught-up") &&
                     strcmp(a, "--help");
        if (takes && !v) {
            fprintf(stderr, "straum-ingest: %s needs a value (see --help)\n", a);
            return 2;
        }
        if (!strcmp(a, "--help")) {
            fputs(usage, stdout);
            return 0;
        } else if (!strcmp(a, "--source"))
            opt.source = v;
        else if (!strcmp(a, "--views"))
            opt.views_path = v;
        else if (!strcmp(a, "--store"))
            opt.store_dir = v;
        else if (!strcmp(a, "--slot"))
            opt.slot = v;
        else if (!strcmp(a, "--publication"))
            opt.publication = v;
        else if (!strcmp(a, "--wal")) {
            if (strcmp(v, "logical") && strcmp(v, "physical")) {
                fprintf(stderr, "straum-ingest: --wal %s: give logical or physical\n", v);
                return 2;
            }
            opt.wal_physical = !strcmp(v, "physical");
        }
        else if (!strcmp(a, "--rebuild"))
            opt.rebuild = true;
        else if (!strcmp(a, "--exit-when-caught-up"))
            opt.exit_when_caught_up = true;
        else if (!strcmp(a, "--metrics-listen"))
            opt.metrics_listen = v;
        else if (!strcmp(a, "--log-level")) {
            enum logfmt_level level;
            if (logfmt_parse_level(v, &level)) {
                fprintf(stderr, "straum-ingest: --log-level %s: give debug, info, warn or "
                                "error\n", v);
                return 2;
            }
            logfmt_set_level(level);
        }
        else if (!strcmp(a, "--snapshot-batch"))
            opt.snapshot_batch_rows = atoll(v);
        else if (!strcmp(a, "--nice")) {
            char *end;
            nice_by = strtol(v, &end, 10);
            if (end == v || *end || nice_by < 0 || nice_by > 19) {
                fprintf(stderr, "straum-ingest: --nice %s: give 0 to 19\n", v);
                return 2;
            }
        }
        else if (!strcmp(a, "--max-store-size")) {
            if (size_parse(v, &opt.max_store_bytes) || opt.max_store_bytes < (1u << 20)) {
                fprintf(stderr, "straum-ingest: --max-store-size %s: give a size of at least "
                                "1MiB, such as 512MiB or 20GiB\n", v);
                return 2;
            }
        }
        else if ((!strcmp(a, "--commit-interval") && duration_parse(v, &opt.commit_interval_us) == 0) ||
                 (!strcmp(a, "--max-lag") && duration_parse(v, &opt.max_lag_us) == 0) ||
                 (!strcmp(a, "--progress-interval") &&
                  duration_parse(v, &opt.progress_interval_us) == 0))
            ;
        else {
            fprintf(stderr, "straum-ingest: unknown or bad option %s%s%s (see --help)\n", a,
                    takes ? " " : "", takes ? v : "");
            return 2;
        }
        if (takes)
            i++;
    }
    if (!opt.views_path || (run && !opt.store_dir)) {
        fprintf(stderr, "straum-ingest: %s needs --views%s (see --help)\n", argv[1],
                run ? " and --store" : "");
        return 2;
    }
    if (!run) {
        int rc = ingest_plan(&opt, stdout);
        return rc < 0 ? 2 : rc;
    }
    exec_with_huge_pages(argv);
    /* Asks wait for no one: on a machine shared with straum-serve, ingest
     * (a transaction's apply, a fold) yields the CPU to them. */
    errno = 0; /* nice() adds to the niceness, capped at 19; -1 may be a niceness */
    if (nice_by && nice((int)nice_by) == -1 && errno)
        fprintf(stderr, "straum-ingest: --nice %ld: %s (going on at the same priority)\n",
                nice_by, strerror(errno));
    struct sigaction sa = {.sa_handler = on_signal};
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);
    /* A file size limit (ulimit -f) must fail a write with EFBIG, which the
     * store reports as a full store, not kill the follower mid-commit. */
    signal(SIGXFSZ, SIG_IGN);
    return ingest_run(&opt) == 0 ? 0 : 1;
}
