/* straum-pgtmp: run a command next to a throwaway PostgreSQL 15 cluster.
 *
 *   straum-pgtmp run [--shared-buffers SIZE] [-c name=value]... -- CMD [ARGS...]
 *
 * tools/test.sh wraps ctest in it so every test binary shares one cluster
 * (via $STRAUM_TEST_PG) instead of each starting its own. The cluster is
 * removed when CMD ends, when we are interrupted, or (via the pgtmp reaper)
 * when we are killed.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/kit/pgtmp.h"

#define MAX_SETTINGS 64

static volatile sig_atomic_t got_signal;

static void on_signal(int sig)
{
    got_signal = sig;
}

static int usage(void)
{
    fprintf(stderr,
            "usage: straum-pgtmp run [--shared-buffers SIZE] [-c name=value]... -- CMD [ARGS...]\n"
            "Starts a throwaway PostgreSQL cluster, runs CMD with STRAUM_TEST_PG (a libpq\n"
            "conninfo) and PGHOST/PGPORT/PGUSER/PGDATABASE set, then removes the cluster.\n"
            "Exits with CMD's status.\n");
    return 2;
}

/* Parses the options between "run" and "--"; returns the index of CMD. */
static int parse_args(int argc, char **argv, struct pgtmp_options *opt, const char **settings)
{
    int nset = 0;
    if (argc < 2 || strcmp(argv[1], "run") != 0)
        return -1;
    for (int i = 2; i < argc; i++) {
        if (strcmp(argv[i], "--") == 0)
            return i + 1 < argc ? i + 1 : -1;
        if (i + 1 >= argc)
            return -1;
        if (strcmp(argv[i], "--shared-buffers") == 0)
            opt->shared_buffers = argv[++i];
        else if (strcmp(argv[i], "-c") == 0 && nset < MAX_SETTINGS)
            settings[nset++] = argv[++i];
        else
            return -1;
    }
    return -1;
}

static int export_env(const struct pgtmp *pg)
{
    char port[16];
    snprintf(port, sizeof port, "%d", pgtmp_port(pg));
    return setenv("STRAUM_TEST_PG", pgtmp_conninfo(pg), 1) | setenv("PGHOST", "127.0.0.1", 1) |
           setenv("PGPORT", port, 1) | setenv("PGUSER", "postgres", 1) |
           setenv("PGDATABASE", "postgres", 1);
}

/* Waits for CMD, passing SIGINT/SIGTERM/SIGHUP on to it; a second signal
 * kills it, so a hung CMD cannot keep the cluster around. */
static int wait_child(pid_t child)
{
    int status, forwarded = 0;
    for (;;) {
        if (got_signal) {
            kill(child, forwarded ? SIGKILL : got_signal);
            forwarded = 1;
            got_signal = 0;
        }
        if (waitpid(child, &status, 0) >= 0)
            break;
        if (errno != EINTR)
            return 1;
    }
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

int main(int argc, char **argv)
{
    struct pgtmp_options opt = {0};
    const char *settings[MAX_SETTINGS + 1] = {0};
    int cmd = parse_args(argc, argv, &opt, settings);
    if (cmd < 0)
        return usage();
    opt.settings = settings;

    struct pgtmp pg;
    char err[4096];
    if (pgtmp_start(&pg, &opt, err, sizeof err) != 0) {
        fprintf(stderr, "straum-pgtmp: %s\n", err);
        return 1;
    }
    if (export_env(&pg) != 0) {
        fprintf(stderr, "straum-pgtmp: setenv: %s\n", strerror(errno));
        pgtmp_stop(&pg);
        return 1;
    }
    struct sigaction sa = {.sa_handler = on_signal};
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGHUP, &sa, NULL);

    pid_t parent = getpid();
    pid_t child = fork();
    if (child == 0) {
        /* If we are SIGKILLed, CMD must not run on against a dead cluster. */
        prctl(PR_SET_PDEATHSIG, SIGTERM);
        if (getppid() != parent)
            _exit(1);
        signal(SIGINT, SIG_DFL);
        signal(SIGTERM, SIG_DFL);
        signal(SIGHUP, SIG_DFL);
        execvp(argv[cmd], argv + cmd);
        fprintf(stderr, "straum-pgtmp: cannot run %s: %s\n", argv[cmd], strerror(errno));
        _exit(127);
    }
    int rc = child < 0 ? 1 : wait_child(child);
    if (child < 0)
        fprintf(stderr, "straum-pgtmp: fork: %s\n", strerror(errno));
    pgtmp_stop(&pg);
    return rc;
}
