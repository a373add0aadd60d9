/* main.c -- the straum-serve command line: options into struct
 * serve_options, signals, then serve_run (serve/http.c) does the rest. */
#include "base/duration.h"
#include "base/logfmt.h"
#include "base/size.h"
#include "serve/serve.h"
#include "store/store.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

static const char usage[] =
    "usage: straum-serve --store DIR [options]\n"
    "\n"
    "Answers asks over HTTP and the PostgreSQL protocol from a Straum store (read-only;\n"
    "straum-ingest writes it).\n"
    "\n"
    "  --store DIR          the store directory (required)\n"
    "  --listen ADDR        host:port, [v6addr]:port or :port (loopback)\n"
    "                       (default " SERVE_DEFAULT_LISTEN "; port 0 picks a free one)\n"
    "  --pg-listen ADDR     also speak the PostgreSQL protocol 3.0 there (e.g.\n"
    "                       127.0.0.1:5433; same address forms and loopback rule); alone,\n"
    "                       without --listen, HTTP is not served. psql \"host=... port=...\"\n"
    "                       with any user and database name; no TLS (sslmode=disable or\n"
    "                       prefer); with --token-file the token is the password\n"
    "                       (SCRAM-SHA-256), without it loopback clients are trusted\n"
    "  --pg-idle-timeout DUR  close PostgreSQL connections idle that long between\n"
    "                       messages (default 10m; 0 never). A startup exchange or a\n"
    "                       message begun must be whole within 30 s; messages are at most\n"
    "                       1 MiB, 1000 prepared statements and 1000 portals per\n"
    "                       connection; HTTP and PostgreSQL connections together at most\n"
    "                       10000\n"
    "  --threads N          worker threads of each protocol, 1 to 1024 (default: the\n"
    "                       number of CPUs); a PostgreSQL worker busy on one connection\n"
    "                       over 5 ms is replaced meanwhile\n"
    "  --max-lag DUR        /readyz answers 503 when the store trails PostgreSQL by more\n"
    "                       (default 10s; 0 never fails on lag, e.g. for a shipped copy)\n"
    "  --token-file F       require \"Authorization: Bearer <token>\" on /ask, /views and\n"
    "                       /metrics, and the token as the PostgreSQL password; the\n"
    "                       token is the file's content, trimmed; a file its group or\n"
    "                       others may read is refused (chmod 600)\n"
    "  --public-metrics     /metrics without the token (/healthz, /readyz always are)\n"
    "  --reuse-port         SO_REUSEPORT: several straum-serve processes share the port\n"
    "  --public             allow a non-loopback address without --token-file\n"
    "  --max-body BYTES     largest /ask body (default 1MiB; K, M, G, T suffixes,\n"
    "                       KiB or KB alike: powers of 1024)\n"
    "  --max-groups N       groups an ask may hold at once; past them 422 too_many_groups\n"
    "                       (default 1000000)\n"
    "  --ask-memory BYTES   scratch memory per ask (its groups, value counts, decoded\n"
    "                       columns, answer rows); past it 422 ask_memory at once, other\n"
    "                       asks unaffected (default 1GiB)\n"
    "  --ask-timeout DUR    time budget per ask, checked as it scans; 503 beyond it\n"
    "                       (default 10s; 0: none)\n"
    "  --ask-cache N        compiled asks kept, the least recently asked evicted past it\n"
    "                       (default 4096)\n"
    "  --ask-cache-bytes BYTES  their memory, texts and compiled forms (default 8MiB)\n"
    "  --log-level LEVEL    debug, info, warn or error (default info): logfmt lines on\n"
    "                       stderr; debug adds one line per request (path, status,\n"
    "                       and for asks view and dur_us)\n"
    "  --help, --version\n"
    "\n"
    "DUR is digits with an optional fraction and a unit: us, ms, s, m or h (a bare\n"
    "number is milliseconds, as in straum-ingest), e.g. 250us, 1.5s, 2h; more than\n"
    "2^63-1 us is refused. SIGTERM or SIGINT: stop accepting, finish requests in flight, exit 0.\n"
    "\n"
    "Routes: POST /ask {\"ask\": \"SELECT ...\", \"params\": [...], \"time_zone\": \"...\"},\n"
    "GET /views, /healthz, /readyz, /metrics.\n"
    "HTTP limits: a request line at most 8192 bytes (414 beyond), a request head whole\n"
    "within 30 s of the connection's start and a request within 30 s of its first byte,\n"
    "headers at most 16 KiB (431); bytes that are not HTTP/1.x get 400 (505 for other\n"
    "HTTP versions) and a closed connection at once.\n";

static void on_signal(int sig)
{
    (void)sig;
    serve_request_stop();
}

static int parse_int(const char *s, int lo, int hi, int *out)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (end == s || *end || errno || v < lo || v > hi)
        return -1;
    *out = (int)v;
    return 0;
}

int main(int argc, char **argv)
{
    struct serve_options o = {.pg_idle_timeout_s = SERVE_DEFAULT_PG_IDLE_S,
                              .max_lag_us = SERVE_DEFAULT_MAX_LAG_US,
                              .max_body = SERVE_DEFAULT_MAX_BODY};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            fputs(usage, stdout);
            return 0;
        }
        if (!strcmp(a, "--version")) {
            puts("straum-serve " STRAUM_VERSION);
            return 0;
        }
        if (!strcmp(a, "--reuse-port")) {
            o.reuse_port = true;
            continue;
        }
        if (!strcmp(a, "--public")) {
            o.public_bind = true;
            continue;
        }
        if (!strcmp(a, "--public-metrics")) {
            o.public_metrics = true;
            continue;
        }
        /* Every other option takes a value: "--opt value" or "--opt=value". */
        char name[32];
        const char *v;
        const char *eq = strchr(a, '=');
        if (eq && (size_t)(eq - a) < sizeof name) {
            memcpy(name, a, (size_t)(eq - a));
            name[eq - a] = '\0';
            v = eq + 1;
        } else {
            snprintf(name, sizeof name, "%s", a);
            if (i + 1 >= argc) {
                fprintf(stderr, "straum-serve: %s needs a value (see --help)\n", a);
                return 2;
            }
            v = argv[++i];
        }
        bool ok = true;
        if (!strcmp(name, "--store"))
            o.store_dir = v;
        else if (!strcmp(name, "--listen"))
            o.listen = v;
        else if (!strcmp(name, "--pg-listen"))
            o.pg_listen = v;
        else if (!strcmp(name, "--pg-idle-timeout")) {
            int64_t us;
            ok = duration_parse(v, &us) == 0 && us / 1000000 <= 86400 * 365;
            o.pg_idle_timeout_s = ok ? (unsigned)((us + 999999) / 1000000) : 0;
        }
        else if (!strcmp(name, "--token-file"))
            o.token_file = v;
        else if (!strcmp(name, "--threads"))
            ok = parse_int(v, 1, 1024, &o.threads) == 0;
        else if (!strcmp(name, "--max-lag"))
            ok = duration_parse(v, &o.max_lag_us) == 0;
        else if (!strcmp(name, "--ask-timeout")) {
            ok = duration_parse(v, &o.ask_timeout_us) == 0;
            if (ok && o.ask_timeout_us == 0)
                o.ask_timeout_us = -1; /* 0 on the command line: no budget */
        }
        else if (!strcmp(name, "--ask-cache"))
            ok = parse_int(v, 1, 1000000000, &o.ask_cache) == 0;
        else if (!strcmp(name, "--ask-cache-bytes")) {
            uint64_t bytes;
            ok = size_parse(v, &bytes) == 0 && bytes > 0;
            if (ok)
                o.ask_cache_bytes = (size_t)bytes;
        }
        else if (!strcmp(name, "--ask-memory")) {
            uint64_t bytes; /* 64 KiB to 1 TiB */
            ok = size_parse(v, &bytes) == 0 && bytes >= (64u << 10) && bytes <= (1ULL << 40);
            if (ok)
                o.ask_memory = (size_t)bytes;
        }
        else if (!strcmp(name, "--max-body")) {
            uint64_t bytes; /* 1 byte to 1 TiB */
            ok = size_parse(v, &bytes) == 0 && bytes >= 1 && bytes <= (1ULL << 40);
            if (ok)
                o.max_body = (size_t)bytes;
        }
        else if (!strcmp(name, "--log-level")) {
            enum logfmt_level level;
            ok = logfmt_parse_level(v, &level) == 0;
            if (ok)
                logfmt_set_level(level);
        } else if (!strcmp(name, "--max-groups"))
            ok = parse_int(v, 1, 1000000000, &o.max_groups) == 0;
        else {
            fprintf(stderr, "straum-serve: unknown option %s (see --help)\n", name);
            return 2;
        }
        if (!ok) {
            fprintf(stderr, "straum-serve: bad value for %s: %s (see --help)\n", name, v);
            return 2;
        }
    }
    if (!o.store_dir) {
        fprintf(stderr, "straum-serve: --store DIR is required (see --help)\n");
        return 2;
    }
    char err[600];
    if (serve_check_options(&o, err, sizeof err) != 0) {
        fprintf(stderr, "straum-serve: %s\n", err);
        return 2;
    }

    /* Up to 10,000 connections need as many descriptors: raise the soft
     * limit toward the hard one. */
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < 10240) {
        rl.rlim_cur = rl.rlim_max == RLIM_INFINITY || rl.rlim_max > 10240 ? 10240 : rl.rlim_max;
        setrlimit(RLIMIT_NOFILE, &rl);
    }
    struct sigaction sa = {.sa_handler = on_signal};
    sigemptyset(&sa.sa_mask);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);
    return serve_run(&o);
}
