/* taxi_duckdb.c -- `taxi duckdb`: DuckDB beside PostgreSQL (DESIGN.md §6).
 * Runs bench/duckdb/taxi_duckdb.mjs with node (found on PATH), giving it
 * this build's taxi_gen and the source dir; every other option goes to the
 * script (--trips, --seed, --pg CONNINFO, --runs, --threads, --json, ...;
 * `taxi duckdb --help` lists them). The script installs @duckdb/node-api
 * into a cache directory outside the repository the first time. */
#include "bench/taxi.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int taxi_duckdb_main(int argc, char **argv)
{
    const char *src = STRAUM_SOURCE_DIR, *bin = NULL;
    bool gen_given = false;
    char **args = calloc((size_t)argc + 8, sizeof *args);
    if (!args)
        return 2;
    int n = 2; /* node, the script */
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--source-dir") && i + 1 < argc)
            src = argv[++i];
        else if (!strcmp(argv[i], "--bin") && i + 1 < argc)
            bin = argv[++i];
        else {
            gen_given |= !strcmp(argv[i], "--gen");
            args[n++] = argv[i];
        }
    }
    char node[PATH_MAX], script[PATH_MAX + 32], gen[PATH_MAX], exe[PATH_MAX];
    if (!taxi_find_on_path("node", node, sizeof node)) {
        fprintf(stderr, "taxi duckdb: node is not on PATH; install Node.js (18 or later) and npm,\n"
                        "or run %s/bench/duckdb/taxi_duckdb.mjs with a node of your own\n",
                src);
        free(args);
        return 2;
    }
    snprintf(script, sizeof script, "%.*s/bench/duckdb/taxi_duckdb.mjs", PATH_MAX - 1, src);
    if (!bin) { /* taxi_gen beside this taxi */
        ssize_t len = readlink("/proc/self/exe", exe, sizeof exe - 1);
        exe[len > 0 ? len : 0] = '\0';
        char *slash = strrchr(exe, '/');
        if (slash)
            *slash = '\0';
        bin = len > 0 && slash ? exe : ".";
    }
    if ((size_t)snprintf(gen, sizeof gen, "%.*s/taxi_gen", PATH_MAX - 16, bin) >= sizeof gen) {
        fprintf(stderr, "taxi duckdb: --bin too long\n");
        free(args);
        return 2;
    }
    args[0] = node;
    args[1] = script;
    args[n++] = "--source-dir";
    args[n++] = (char *)src;
    if (!gen_given) {
        args[n++] = "--gen";
        args[n++] = gen;
    }
    args[n] = NULL;
    fflush(stdout);
    execv(node, args);
    fprintf(stderr, "taxi duckdb: cannot run %s: %s\n", node, strerror(errno));
    free(args);
    return 2;
}
