/* taxi_shell.c -- `taxi shell`: the benchmark's setup (PostgreSQL with
 * generated trips, straum-ingest following it, straum-serve; taxi_setup.c),
 * then straum-shell connected to that serve, for asking by hand. Everything
 * is stopped and removed when the shell ends. Defaults to 200,000 trips
 * (--trips N for more). */
#include "bench/taxi_bench.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define SHELL_DEFAULT_TRIPS 200000

int taxi_shell_main(int argc, char **argv)
{
    static struct taxi_opts o;
    int rc = taxi_opts_parse(&o, argc, argv, "shell");
    if (rc)
        return rc;
    bool trips_given = false;
    for (int i = 1; i < argc; i++)
        trips_given |= !strcmp(argv[i], "--trips");
    if (!trips_given)
        o.trips = SHELL_DEFAULT_TRIPS;
    static struct taxi_env e;
    if (taxi_setup(&e, &o, true) != 0) {
        fprintf(stderr, "taxi: setup failed; logs in %s\n", e.work);
        o.work_dir = e.work; /* keep the logs */
        taxi_teardown(&e);
        return 2;
    }
    /* straum-shell beside straum-serve. */
    char shell_bin[1100];
    snprintf(shell_bin, sizeof shell_bin, "%s", e.serve_bin);
    char *slash = strrchr(shell_bin, '/');
    snprintf(slash ? slash + 1 : shell_bin, sizeof shell_bin - (size_t)(slash ? slash + 1 - shell_bin : 0),
             "straum-shell");
    printf("\nPostgreSQL: psql '%s' (time zone %s)\nstraum-serve: %s\nstore: %s\n"
           "Try: \\d trips, then\n"
           "  SELECT borough, trips, avg_fare FROM trips WHERE bucket >= '2024-01-01'\n"
           "  AND bucket < '2024-02-01' GROUP BY borough;\n\n",
           pgtmp_conninfo(&e.pg), TAXI_TZ, e.url, e.store);
    fflush(stdout);
    char *shell_argv[] = {shell_bin, "--url", e.url, "--tz", TAXI_TZ, NULL};
    pid_t pid = fork();
    if (pid == 0) {
        signal(SIGINT, SIG_DFL);
        signal(SIGPIPE, SIG_DFL);
        execv(shell_bin, shell_argv);
        fprintf(stderr, "taxi: cannot run %s: %s\n", shell_bin, strerror(errno));
        _exit(127);
    }
    rc = 2;
    if (pid > 0) {
        /* Ctrl-C belongs to the shell while it runs; the setup stays up. */
        struct sigaction ign = {.sa_handler = SIG_IGN}, old;
        sigaction(SIGINT, &ign, &old);
        int st;
        while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
            ;
        sigaction(SIGINT, &old, NULL);
        rc = WIFEXITED(st) ? WEXITSTATUS(st) : 1;
    } else {
        fprintf(stderr, "taxi: fork: %s\n", strerror(errno));
    }
    taxi_teardown(&e);
    return rc;
}
