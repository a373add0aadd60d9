/* taxi_report.c -- the taxi benchmark's --json document (the machine: CPU
 * model, cores, memory; versions: PostgreSQL, Straum, the compiler; the
 * exact command line, the date and the source commit; the modes add their
 * figures), its recording into --results FILE (one object per mode), the
 * mode entry points that set up, run one mode or all of them and tear
 * down, and gnuplot charts for --plot (a note when gnuplot is not
 * installed). */
#include "bench/taxi_bench.h"
#include "bench/taxi_results.h"
#include "tests/kit/taxi_random.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static void first_field(const char *path, const char *key, char *out, size_t len)
{
    out[0] = '\0';
    FILE *f = fopen(path, "r");
    if (!f)
        return;
    char line[512];
    size_t n = strlen(key);
    while (fgets(line, sizeof line, f)) {
        if (!strncmp(line, key, n)) {
            char *v = strchr(line, ':');
            if (!v)
                continue;
            v++;
            while (*v == ' ' || *v == '\t')
                v++;
            v[strcspn(v, "\n")] = '\0';
            snprintf(out, len, "%s", v);
            break;
        }
    }
    fclose(f);
}

cJSON *taxi_report_new(struct taxi_env *e)
{
    cJSON *root = cJSON_CreateObject();
    cJSON *m = cJSON_AddObjectToObject(root, "machine");
    char buf[512];
    first_field("/proc/cpuinfo", "model name", buf, sizeof buf);
    cJSON_AddStringToObject(m, "cpu", buf);
    cJSON_AddNumberToObject(m, "cores", (double)sysconf(_SC_NPROCESSORS_ONLN));
    first_field("/proc/meminfo", "MemTotal", buf, sizeof buf);
    cJSON_AddStringToObject(m, "mem_total", buf);
    cJSON *v = cJSON_AddObjectToObject(root, "versions");
    char *pgv = e->conn ? taxi_pg_value(e->conn, "SHOW server_version") : NULL;
    cJSON_AddStringToObject(v, "postgresql", pgv ? pgv : "?");
    free(pgv);
    cJSON_AddStringToObject(v, "straum", "0.1");
#ifdef __clang__
    cJSON_AddStringToObject(v, "compiler", "clang " __clang_version__);
#elif defined(__GNUC__)
    cJSON_AddStringToObject(v, "compiler", "gcc " __VERSION__);
#endif
#ifdef STRAUM_BUILD
    /* Recorded unless it is the Release build RESULTS.md assumes. */
    if (strncmp(STRAUM_BUILD, "Release ", 8) != 0)
        cJSON_AddStringToObject(v, "build", STRAUM_BUILD);
#endif
    cJSON *cmd = cJSON_AddArrayToObject(root, "command");
    cJSON_AddItemToArray(cmd, cJSON_CreateString("taxi"));
    for (int i = 0; i < e->o->argc; i++)
        cJSON_AddItemToArray(cmd, cJSON_CreateString(e->o->argv[i]));
    time_t now = time(NULL);
    strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", gmtime(&now));
    cJSON_AddStringToObject(root, "date", buf);
    taxi_source_commit(e->o->src_dir, buf, sizeof buf);
    cJSON_AddStringToObject(root, "commit", buf);
    return root;
}

/* The sections a mode adds to the report, and the mode each is recorded
 * under in --results (with a second section of the same mode, if any): a
 * run of `taxi all` records four modes. */
static const struct {
    const char *section, *mode, *also;
} RECORDED[] = {
    {"asks", "asks", NULL},
    {"dashboard", "dashboard", "large"},
    {"random", "random", NULL},
    {"memory", "memory", NULL},
    {"cold_start", "cold-start", NULL},
    {"transactions", "transactions", NULL},
    {"stream", "stream", NULL},
    {"wal", "wal", NULL},
    {"load", "load", NULL},
    {"warehouse", "warehouse", NULL},
    {"wide", "wide", NULL},
    {"pg_time", "pg-time", NULL},
};

/* Records every mode section of the report into o->results_file, each with
 * the report's machine, versions, command, date, commit and setup. */
static int report_record(struct taxi_env *e)
{
    static const char *const HEADER[] = {"machine", "versions", "command", "date", "commit",
                                         "setup"};
    int rc = 0;
    for (size_t i = 0; i < sizeof RECORDED / sizeof RECORDED[0]; i++) {
        const cJSON *sect = cJSON_GetObjectItemCaseSensitive(e->report, RECORDED[i].section);
        if (!sect)
            continue;
        cJSON *run = cJSON_CreateObject();
        for (size_t h = 0; h < sizeof HEADER / sizeof HEADER[0]; h++) {
            const cJSON *v = cJSON_GetObjectItemCaseSensitive(e->report, HEADER[h]);
            if (v)
                cJSON_AddItemToObject(run, HEADER[h], cJSON_Duplicate(v, 1));
        }
        cJSON_AddItemToObject(run, RECORDED[i].section, cJSON_Duplicate(sect, 1));
        const cJSON *also =
            RECORDED[i].also ? cJSON_GetObjectItemCaseSensitive(e->report, RECORDED[i].also) : NULL;
        if (also)
            cJSON_AddItemToObject(run, RECORDED[i].also, cJSON_Duplicate(also, 1));
        char key[160]; /* a run by the physical WAL beside the logical one's */
        snprintf(key, sizeof key, "%s%s",
                 !strcmp(RECORDED[i].section, "load") && e->load_key[0] ? e->load_key
                                                                        : RECORDED[i].mode,
                 e->o->wal_physical ? "-physical" : "");
        if (taxi_results_record(e->o->results_file, key, run))
            rc = -1;
        cJSON_Delete(run);
    }
    return rc;
}

int taxi_report_write(struct taxi_env *e)
{
    if (!e->report)
        return 0;
    if (e->o->results_file && report_record(e))
        return -1;
    if (!e->o->json_file)
        return 0;
    char *s = cJSON_Print(e->report);
    FILE *f = fopen(e->o->json_file, "w");
    if (!s || !f) {
        fprintf(stderr, "taxi: cannot write %s\n", e->o->json_file);
        free(s);
        if (f)
            fclose(f);
        return -1;
    }
    fputs(s, f);
    fputc('\n', f);
    fclose(f);
    free(s);
    printf("Figures written to %s\n", e->o->json_file);
    return 0;
}

void taxi_plot(const char *dir, const char *name, const char *script)
{
    char path[1200];
    snprintf(path, sizeof path, "%s/%s.gp", dir, name);
    FILE *f = fopen(path, "w");
    if (!f) {
        fprintf(stderr, "taxi: cannot write %s\n", path);
        return;
    }
    fputs(script, f);
    fclose(f);
    if (system("command -v gnuplot >/dev/null 2>&1") != 0) {
        printf("  note: gnuplot is not installed (Debian: gnuplot-nox); %s and its data are in %s\n",
               path, dir);
        return;
    }
    char cmd[2600];
    snprintf(cmd, sizeof cmd, "cd '%s' && gnuplot '%s.gp'", dir, name);
    if (system(cmd) != 0)
        printf("  note: gnuplot failed on %s\n", path);
    else
        printf("  plot: %s/%s.png\n", dir, name);
}

/* ---- Mode entry points ---------------------------------------------------- */

static int run_modes(int argc, char **argv, const char *mode, int (*const *runs)(struct taxi_env *),
                     int nruns)
{
    static struct taxi_opts o;
    int rc = taxi_opts_parse(&o, argc, argv, mode);
    if (rc)
        return rc;
    if (o.plot_dir) {
        char cmd[1200];
        snprintf(cmd, sizeof cmd, "mkdir -p '%s'", o.plot_dir);
        if (system(cmd) != 0)
            return 2;
    }
    static struct taxi_env e;
    if (taxi_setup(&e, &o, true) != 0) {
        fprintf(stderr, "taxi: setup failed; logs in %s\n", e.work);
        o.work_dir = e.work; /* keep the logs */
        return 2;
    }
    rc = 0;
    for (int i = 0; i < nruns && rc == 0; i++)
        if (!(o.skip_asks && runs[i] == taxi_asks_run && nruns > 1))
            rc = runs[i](&e);
    if (taxi_report_write(&e))
        rc = rc ? rc : 2;
    taxi_teardown(&e);
    return rc;
}

int taxi_asks_main(int argc, char **argv)
{
    int (*const runs[])(struct taxi_env *) = {taxi_asks_run};
    return run_modes(argc, argv, "asks", runs, 1);
}

int taxi_dashboard_main(int argc, char **argv)
{
    int (*const runs[])(struct taxi_env *) = {taxi_dashboard_run};
    return run_modes(argc, argv, "dashboard", runs, 1);
}

/* `taxi random --list` prints the asks (number, shape, ask, parameters,
 * SQL) and sets nothing up. */
int taxi_random_main(int argc, char **argv)
{
    for (int i = 1; i < argc; i++)
        if (!strcmp(argv[i], "--list")) {
            struct taxi_opts o;
            for (int k = i; k + 1 < argc; k++)
                argv[k] = argv[k + 1];
            if (taxi_opts_parse(&o, argc - 1, argv, "random"))
                return 2;
            for (int n = 0; n < o.random_count; n++) {
                struct taxi_random_ask a;
                char shape[128];
                taxi_random_ask(TAXI_RANDOM_SEED, n, &a);
                printf("%d\t%s\t%s\t", n, taxi_random_shape(&a, shape, sizeof shape), a.ask);
                for (int p = 0; p < a.nparams; p++)
                    printf("%s%s", p ? ", " : "", a.params[p]);
                printf("\t%s\n", a.sql);
            }
            return 0;
        }
    /* --url URL [--pg CONNINFO] [--serve-pid PID]: a straum-serve that is
     * running already (and the PostgreSQL of its trips), no setup. */
    const char *url = NULL, *pg = NULL;
    pid_t serve_pid = 0;
    int n = 1;
    char **rest = calloc((size_t)argc + 1, sizeof *rest);
    if (!rest)
        return 2;
    rest[0] = argv[0];
    for (int i = 1; i < argc; i++) {
        if (i + 1 < argc && !strcmp(argv[i], "--url"))
            url = argv[++i];
        else if (i + 1 < argc && !strcmp(argv[i], "--pg"))
            pg = argv[++i];
        else if (i + 1 < argc && !strcmp(argv[i], "--serve-pid"))
            serve_pid = (pid_t)atoi(argv[++i]);
        else
            rest[n++] = argv[i];
    }
    if (!url) {
        free(rest);
        int (*const runs[])(struct taxi_env *) = {taxi_random_run};
        return run_modes(argc, argv, "random", runs, 1);
    }
    static struct taxi_opts o;
    int parsed = taxi_opts_parse(&o, n, rest, "random");
    free(rest);
    if (parsed)
        return 2;
    o.argc = argc; /* the command as given, --url and all */
    o.argv = argv;
    static struct taxi_env e;
    e.o = &o;
    e.serve_pid = serve_pid;
    snprintf(e.url, sizeof e.url, "%s", url);
    snprintf(e.work, sizeof e.work, "%s", o.work_dir ? o.work_dir : "/tmp");
    char exe[1024];
    ssize_t len = readlink("/proc/self/exe", exe, sizeof exe - 1);
    exe[len > 0 ? len : 0] = '\0';
    char *slash = strrchr(exe, '/');
    if (slash)
        *slash = '\0';
    snprintf(e.gen_bin, sizeof e.gen_bin, "%s/taxi_gen", o.bin_dir ? o.bin_dir : exe);
    if (pg) {
        e.conn = PQconnectdb(pg);
        if (PQstatus(e.conn) != CONNECTION_OK || taxi_pg_exec(e.conn, "SET TIME ZONE '" TAXI_TZ "'")) {
            fprintf(stderr, "taxi random: %s", PQerrorMessage(e.conn));
            PQfinish(e.conn);
            return 2;
        }
    } else
        o.random_check = 0;
    e.report = taxi_report_new(&e);
    cJSON *setup = cJSON_AddObjectToObject(e.report, "setup");
    cJSON_AddNumberToObject(setup, "trips", (double)o.trips);
    cJSON_AddNumberToObject(setup, "seed", (double)o.seed);
    cJSON_AddStringToObject(setup, "url", url);
    int rc = taxi_random_run(&e);
    if (taxi_report_write(&e))
        rc = rc ? rc : 2;
    cJSON_Delete(e.report);
    if (e.conn)
        PQfinish(e.conn);
    return rc;
}

int taxi_cold_main(int argc, char **argv)
{
    int (*const runs[])(struct taxi_env *) = {taxi_cold_run};
    return run_modes(argc, argv, "cold-start", runs, 1);
}

int taxi_memory_main(int argc, char **argv)
{
    int (*const runs[])(struct taxi_env *) = {taxi_memory_run};
    return run_modes(argc, argv, "memory", runs, 1);
}

int taxi_txn_main(int argc, char **argv)
{
    int (*const runs[])(struct taxi_env *) = {taxi_txn_run};
    return run_modes(argc, argv, "transactions", runs, 1);
}

int taxi_warehouse_main(int argc, char **argv)
{
    int (*const runs[])(struct taxi_env *) = {taxi_warehouse_run};
    return run_modes(argc, argv, "warehouse", runs, 1);
}

int taxi_wide_main(int argc, char **argv)
{
    int (*const runs[])(struct taxi_env *) = {taxi_wide_run};
    return run_modes(argc, argv, "wide", runs, 1);
}

int taxi_stream_main(int argc, char **argv)
{
    int (*const runs[])(struct taxi_env *) = {taxi_stream_run};
    return run_modes(argc, argv, "stream", runs, 1);
}

int taxi_wal_main(int argc, char **argv)
{
    int (*const runs[])(struct taxi_env *) = {taxi_wal_run};
    return run_modes(argc, argv, "wal", runs, 1);
}

int taxi_all_main(int argc, char **argv)
{
    int (*const runs[])(struct taxi_env *) = {taxi_asks_run, taxi_dashboard_run,
                                              taxi_memory_run, taxi_cold_run, taxi_txn_run};
    return run_modes(argc, argv, "all", runs, 5);
}
