/* taxi_duckdb.c -- `taxi duckdb`: DuckDB beside PostgreSQL (DESIGN.md §6).
 * Runs bench/duckdb/taxi_duckdb.mjs with node (found on PATH), giving it
 * this build's taxi_gen and the source dir; every other option goes to the
 * script (--trips, --seed, --pg CONNINFO, --runs, --threads, --json, ...;
 * `taxi duckdb --help` lists them). The script installs @duckdb/node-api
 * into a cache directory outside the repository the first time. With
 * --results FILE (taken here, not passed on) the script runs as a child,
 * and its --json document, without the answers' rows, is recorded as the
 * "duckdb" mode with the command, date and source commit. */
#include "bench/taxi.h"
#include "bench/taxi_results.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* Runs the script (args, NULL-terminated) as a child and records the
 * document it wrote to json as results' "duckdb" mode. Returns the exit
 * status to give. */
static int run_and_record(char **args, const char *json, const char *results, const char *src,
                          int argc, char **argv)
{
    fflush(stdout);
    pid_t pid = fork();
    if (pid < 0) {
        fprintf(stderr, "taxi duckdb: fork: %s\n", strerror(errno));
        return 2;
    }
    if (pid == 0) {
        execv(args[0], args);
        fprintf(stderr, "taxi duckdb: cannot run %s: %s\n", args[0], strerror(errno));
        _exit(2);
    }
    int status;
    while (waitpid(pid, &status, 0) < 0)
        if (errno != EINTR)
            return 2;
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        fprintf(stderr, "taxi duckdb: the script failed; nothing recorded in %s\n", results);
        return WIFEXITED(status) ? WEXITSTATUS(status) : 2;
    }
    cJSON *doc = taxi_json_load(json);
    if (!doc)
        return 2;
    /* The rows of each answer are checked, not figures: left out. */
    cJSON *a;
    cJSON_ArrayForEach(a, cJSON_GetObjectItemCaseSensitive(doc, "asks"))
    {
        cJSON_DeleteItemFromObjectCaseSensitive(a, "answer");
        cJSON_DeleteItemFromObjectCaseSensitive(a, "pg_answer");
    }
    cJSON *cmd = cJSON_AddArrayToObject(doc, "command");
    cJSON_AddItemToArray(cmd, cJSON_CreateString("taxi"));
    for (int i = 0; i < argc; i++)
        cJSON_AddItemToArray(cmd, cJSON_CreateString(argv[i]));
    char buf[128];
    time_t now = time(NULL);
    strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", gmtime(&now));
    cJSON_AddStringToObject(doc, "date", buf);
    taxi_source_commit(src, buf, sizeof buf);
    cJSON_AddStringToObject(doc, "commit", buf);
    int rc = taxi_results_record(results, "duckdb", doc) ? 2 : 0;
    cJSON_Delete(doc);
    return rc;
}

int taxi_duckdb_main(int argc, char **argv)
{
    const char *src = STRAUM_SOURCE_DIR, *bin = NULL, *results = NULL, *json = NULL;
    bool gen_given = false;
    char **args = calloc((size_t)argc + 10, sizeof *args);
    if (!args)
        return 2;
    int n = 2; /* node, the script */
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--source-dir") && i + 1 < argc)
            src = argv[++i];
        else if (!strcmp(argv[i], "--bin") && i + 1 < argc)
            bin = argv[++i];
        else if (!strcmp(argv[i], "--results") && i + 1 < argc)
            results = argv[++i];
        else {
            gen_given |= !strcmp(argv[i], "--gen");
            if (!strcmp(argv[i], "--json") && i + 1 < argc)
                json = argv[i + 1];
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
    char tmp[] = "/tmp/taxi-duckdb-XXXXXX";
    if (results && !json) { /* the document comes through a file of our own */
        int fd = mkstemp(tmp);
        if (fd < 0) {
            fprintf(stderr, "taxi duckdb: cannot make a temporary file: %s\n", strerror(errno));
            free(args);
            return 2;
        }
        close(fd);
        json = tmp;
        args[n++] = "--json";
        args[n++] = tmp;
    }
    args[n] = NULL;
    if (results) {
        int rc = run_and_record(args, json, results, src, argc, argv);
        if (json == tmp)
            unlink(tmp);
        free(args);
        return rc;
    }
    fflush(stdout);
    execv(node, args);
    fprintf(stderr, "taxi duckdb: cannot run %s: %s\n", node, strerror(errno));
    free(args);
    return 2;
}
