/* taxi_proc.c -- child processes for the taxi benchmark: spawning with
 * logs, stopping (TERM then KILL), reading a process's memory from
 * /proc/PID/status and smaps_rollup, picking a free loopback port, and the
 * SIGINT/SIGTERM handler that stops every tracked child and removes the
 * work dir (PostgreSQL itself is removed by pgtmp's reaper). */
#include "bench/taxi_bench.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#define MAX_TRACKED 16

static volatile pid_t tracked[MAX_TRACKED];
static char remove_path[1100];

void taxi_track_child(pid_t pid, bool on)
{
    for (int i = 0; i < MAX_TRACKED; i++) {
        if (on && tracked[i] == 0) {
            tracked[i] = pid;
            return;
        }
        if (!on && tracked[i] == pid) {
            tracked[i] = 0;
            return;
        }
    }
}

static void on_signal(int sig)
{
    for (int i = 0; i < MAX_TRACKED; i++)
        if (tracked[i] > 0)
            kill(tracked[i], SIGKILL);
    if (remove_path[0]) {
        pid_t p = fork();
        if (p == 0) {
            char *const argv[] = {"rm", "-rf", remove_path, NULL};
            execvp("rm", argv);
            _exit(127);
        }
        if (p > 0)
            waitpid(p, NULL, 0);
    }
    static const char msg[] = "\ntaxi: interrupted; children stopped\n";
    if (write(2, msg, sizeof msg - 1) < 0) {
        /* nothing to do */
    }
    _exit(128 + sig);
}

void taxi_install_signals(const char *remove_dir)
{
    snprintf(remove_path, sizeof remove_path, "%s", remove_dir ? remove_dir : "");
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);
}

static void redirect(const char *path, int to)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_APPEND, 0644);
    if (fd >= 0) {
        dup2(fd, to);
        close(fd);
    }
}

pid_t taxi_spawn_out(char *const *argv, const char *out, const char *log)
{
    pid_t pid = fork();
    if (pid < 0) {
        fprintf(stderr, "taxi: fork: %s\n", strerror(errno));
        return -1;
    }
    if (pid == 0) {
        /* A session of its own, as each of PostgreSQL's processes takes
         * (its postmaster's children call setsid): under the kernel's
         * autogroup scheduling (sched_autogroup_enabled, Debian's default)
         * a session is one scheduling group, so in taxi's session ingest,
         * serve and pgbench together weighed as much as one PostgreSQL
         * backend, and beside a load that fills the cores ingest's apply
         * had 0.19 of a core where the walsender had 0.31 (perf, `taxi
         * stream`). A child out of taxi's session misses a terminal's
         * Ctrl-C; taxi stops the children it tracks itself (on_signal). */
        setsid();
        if (out)
            redirect(out, 1);
        if (log) {
            redirect(log, 2);
            if (!out)
                dup2(2, 1);
        }
        execv(argv[0], argv);
        fprintf(stderr, "taxi: exec %s: %s\n", argv[0], strerror(errno));
        _exit(127);
    }
    taxi_track_child(pid, true);
    return pid;
}

pid_t taxi_spawn(char *const *argv, const char *log)
{
    return taxi_spawn_out(argv, NULL, log);
}

void taxi_stop_pid(pid_t pid, double timeout_s)
{
    if (pid <= 0)
        return;
    kill(pid, SIGTERM);
    int64_t deadline = taxi_now_ns() + (int64_t)(timeout_s * 1e9);
    for (;;) {
        pid_t r = waitpid(pid, NULL, WNOHANG);
        if (r == pid || (r < 0 && errno == ECHILD))
            break;
        if (taxi_now_ns() > deadline) {
            kill(pid, SIGKILL);
            waitpid(pid, NULL, 0);
            break;
        }
        usleep(10000);
    }
    taxi_track_child(pid, false);
}

static long field_kib(const char *path, const char *field)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    char line[256];
    size_t n = strlen(field);
    long v = -1;
    while (fgets(line, sizeof line, f)) {
        if (!strncmp(line, field, n) && line[n] == ':') {
            v = strtol(line + n + 1, NULL, 10);
            break;
        }
    }
    fclose(f);
    return v;
}

long taxi_proc_kib(pid_t pid, const char *field)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
    return field_kib(path, field);
}

double taxi_proc_cpu_s(pid_t pid)
{
    char path[64], buf[1024];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    /* The command name may hold spaces: fields count from its closing ')'.
     * utime and stime are fields 14 and 15, in clock ticks. */
    char *p = strrchr(buf, ')');
    unsigned long long ut = 0, st = 0;
    if (!p || sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &ut,
                     &st) != 2)
        return -1;
    return (double)(ut + st) / (double)sysconf(_SC_CLK_TCK);
}

double taxi_proc_run_s(pid_t pid)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/task", (int)pid);
    DIR *d = opendir(path);
    if (!d)
        return -1;
    unsigned long long ns = 0;
    for (struct dirent *t; (t = readdir(d));) {
        if (t->d_name[0] == '.')
            continue;
        char stat[320];
        snprintf(stat, sizeof stat, "/proc/%d/task/%s/schedstat", (int)pid, t->d_name);
        FILE *f = fopen(stat, "r");
        unsigned long long run = 0;
        if (f && fscanf(f, "%llu", &run) == 1)
            ns += run; /* a thread gone meanwhile counts nothing */
        if (f)
            fclose(f);
    }
    closedir(d);
    return (double)ns / 1e9;
}

double taxi_machine_busy_s(void)
{
    FILE *f = fopen("/proc/stat", "r");
    unsigned long long v[8] = {0};
    int got = f ? fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1], &v[2],
                         &v[3], &v[4], &v[5], &v[6], &v[7])
                : 0;
    if (f)
        fclose(f);
    if (got != 8)
        return -1;
    /* user, nice, system, irq, softirq, steal: all but idle (3) and iowait (4) */
    return (double)(v[0] + v[1] + v[2] + v[5] + v[6] + v[7]) / (double)sysconf(_SC_CLK_TCK);
}

long taxi_smaps_kib(pid_t pid, const char *field)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/smaps_rollup", (int)pid);
    return field_kib(path, field);
}

int taxi_free_port(void)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0)
        return -1;
    struct sockaddr_in a;
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    int port = -1;
    if (bind(fd, (struct sockaddr *)&a, sizeof a) == 0 &&
        getsockname(fd, (struct sockaddr *)&a, &len) == 0)
        port = ntohs(a.sin_port);
    close(fd);
    return port;
}
