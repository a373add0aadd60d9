/* pgtmp: throwaway PostgreSQL 15 clusters for tests (see pgtmp.h).
 *
 * Layout of a cluster's temp dir:
 *   data/          the data directory (initdb, or pg_basebackup for a standby)
 *   server.log     postmaster output (pg_ctl -l)
 *   commands.log   output of initdb, pg_basebackup and pg_ctl, quoted in
 *                  error messages
 *   .s.PGSQL.N     unix socket, so local tools need no TCP
 */
#include "tests/kit/pgtmp.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <netinet/in.h>
#include <poll.h>
#include <pwd.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <libpq-fe.h>

#define PGTMP_DEFAULT_TIMEOUT_S 30
#define PGTMP_PORT_ATTEMPTS 5
#define PGTMP_FALLBACK_BINDIR "/usr/lib/postgresql/15/bin"
/* Unix socket paths are limited to 107 bytes; leave room for the name. */
#define PGTMP_MAX_DIR_LEN 80
#define PGTMP_TAIL_BYTES 1500

/* ---- small utilities ---------------------------------------------------- */

/* Formats a message into err and returns -1, so failures read
 * `return set_err(...)`. */
static int set_err(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int set_err(char *err, size_t errlen, const char *fmt, ...)
{
    if (err == NULL || errlen == 0)
        return -1;
    va_list ap;
    va_start(ap, fmt);
    int n = snprintf(err, errlen, "pgtmp: ");
    if (n >= 0 && (size_t)n < errlen)
        vsnprintf(err + n, errlen - (size_t)n, fmt, ap);
    va_end(ap);
    return -1;
}

static int join_path(char *out, size_t outlen, const char *dir, const char *name)
{
    int n = snprintf(out, outlen, "%s/%s", dir, name);
    return (n < 0 || (size_t)n >= outlen) ? -1 : 0;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

/* The last lines of a file, so a failure message shows what the server or
 * initdb said last without the user digging for the log. */
static void file_tail(const char *path, char *out, size_t outlen)
{
    out[0] = '\0';
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        snprintf(out, outlen, "(cannot read %s: %s)", path, strerror(errno));
        return;
    }
    off_t size = lseek(fd, 0, SEEK_END);
    size_t want = outlen - 1 < PGTMP_TAIL_BYTES ? outlen - 1 : PGTMP_TAIL_BYTES;
    off_t from = size > (off_t)want ? size - (off_t)want : 0;
    ssize_t n = size > 0 ? pread(fd, out, want, from) : 0;
    close(fd);
    out[n > 0 ? n : 0] = '\0';
    char *nl = from > 0 ? strchr(out, '\n') : NULL;
    if (nl != NULL)
        memmove(out, nl + 1, strlen(nl + 1) + 1);
}

/* Does the file contain needle anywhere after byte offset `from`? */
static int file_contains_after(const char *path, off_t from, const char *needle)
{
    char buf[8192];
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    ssize_t n = pread(fd, buf, sizeof buf - 1, from);
    close(fd);
    buf[n > 0 ? n : 0] = '\0';
    return strstr(buf, needle) != NULL;
}

static off_t file_size(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 ? st.st_size : 0;
}

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st, (void)flag, (void)ftw;
    remove(path);
    return 0;
}

static void remove_tree(const char *dir)
{
    nftw(dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

/* ---- running server commands -------------------------------------------- */

/* In the forked child: detach stdio from the test (output goes to the
 * commands log), and close every inherited descriptor so the server never
 * holds a test runner's pipes or the reaper pipe open. */
static _Noreturn void exec_child(const char *cwd, char *const argv[], const char *log)
{
    int in = open("/dev/null", O_RDONLY);
    int out = open(log, O_WRONLY | O_CREAT | O_APPEND, 0644);
    if (in < 0 || out < 0 || dup2(in, 0) < 0 || dup2(out, 1) < 0 || dup2(out, 2) < 0)
        _exit(126);
    close_range(3, ~0U, 0);
    if (chdir(cwd) != 0)
        _exit(126);
    execv(argv[0], argv);
    dprintf(2, "pgtmp: cannot execute %s: %s\n", argv[0], strerror(errno));
    _exit(127);
}

/* Runs bindir/<prog> args... as the server's user; returns its exit status,
 * 128+signal if it was killed, or -1 if it could not be started. */
static int run_pg(const struct pgtmp *pg, const char *prog, const char *const args[])
{
    char exe[PGTMP_PATH_MAX];
    char *argv[32];
    size_t n = 0;
    if (join_path(exe, sizeof exe, pg->bindir, prog) != 0)
        return -1;
    if (pg->as_postgres) {
        argv[n++] = (char *)pg->runuser;
        argv[n++] = "-u";
        argv[n++] = "postgres";
        argv[n++] = "--";
    }
    argv[n++] = exe;
    for (size_t i = 0; args[i] != NULL && n < 31; i++)
        argv[n++] = (char *)args[i];
    argv[n] = NULL;

    pid_t pid = fork();
    if (pid < 0)
        return -1;
    if (pid == 0)
        exec_child(pg->dir, argv, pg->cmdlog);
    int status;
    while (waitpid(pid, &status, 0) < 0)
        if (errno != EINTR)
            return -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

static int pg_ctl_stop(const struct pgtmp *pg, const char *mode)
{
    char t[16];
    snprintf(t, sizeof t, "%d", pg->start_timeout_s);
    const char *args[] = {"-D", pg->datadir, "-m", mode, "-w", "-t", t, "-s", "stop", NULL};
    return run_pg(pg, "pg_ctl", args);
}

/* ---- locating binaries and the user ------------------------------------- */

static int has_initdb(const char *bindir)
{
    char p[PGTMP_PATH_MAX];
    return join_path(p, sizeof p, bindir, "initdb") == 0 && access(p, X_OK) == 0;
}

static void pg_config_bindir(char *out, size_t len)
{
    out[0] = '\0';
    FILE *f = popen("pg_config --bindir 2>/dev/null", "re");
    if (f == NULL)
        return;
    if (fgets(out, (int)len, f) == NULL)
        out[0] = '\0';
    out[strcspn(out, "\n")] = '\0';
    pclose(f);
}

static int find_bindir(struct pgtmp *pg, char *err, size_t errlen)
{
    const char *env = getenv("STRAUM_PG_BINDIR");
    char cfg[PGTMP_PATH_MAX];
    if (env != NULL && *env != '\0') {
        if (!has_initdb(env))
            return set_err(err, errlen, "STRAUM_PG_BINDIR=%s has no executable initdb", env);
        snprintf(pg->bindir, sizeof pg->bindir, "%s", env);
        return 0;
    }
    pg_config_bindir(cfg, sizeof cfg);
    const char *dir = cfg[0] != '\0' && has_initdb(cfg) ? cfg : PGTMP_FALLBACK_BINDIR;
    if (!has_initdb(dir))
        return set_err(err, errlen,
                       "PostgreSQL server binaries not found (no initdb under `pg_config "
                       "--bindir` nor %s); install postgresql-15 or set STRAUM_PG_BINDIR",
                       PGTMP_FALLBACK_BINDIR);
    snprintf(pg->bindir, sizeof pg->bindir, "%s", dir);
    return 0;
}

/* PostgreSQL refuses to run as root, so as root every server command runs
 * as "postgres" (runuser needs no password and no tty). */
static int resolve_user(struct pgtmp *pg, char *err, size_t errlen)
{
    if (geteuid() != 0)
        return 0;
    struct passwd *pw = getpwnam("postgres");
    if (pw == NULL)
        return set_err(err, errlen,
                       "running as root but there is no `postgres` user to run "
                       "the server as; install postgresql-15 or run as non-root");
    const char *cands[] = {"/usr/sbin/runuser", "/sbin/runuser", "/usr/bin/runuser"};
    for (size_t i = 0; i < sizeof cands / sizeof cands[0]; i++) {
        if (access(cands[i], X_OK) == 0) {
            snprintf(pg->runuser, sizeof pg->runuser, "%s", cands[i]);
            pg->as_postgres = 1;
            pg->pg_uid = pw->pw_uid;
            pg->pg_gid = pw->pw_gid;
            return 0;
        }
    }
    return set_err(err, errlen, "runuser(1) not found; install util-linux");
}

/* ---- the temp dir --------------------------------------------------------- */

/* The postgres user must be able to reach the temp dir through every parent
 * (a TMPDIR under /root would make initdb fail with a confusing error). */
static int searchable_by(const struct pgtmp *pg, const char *dir)
{
    char path[PGTMP_PATH_MAX];
    snprintf(path, sizeof path, "%s", dir);
    for (char *slash = strrchr(path, '/'); slash != NULL; slash = strrchr(path, '/')) {
        *slash = '\0';
        struct stat st;
        if (stat(path[0] ? path : "/", &st) != 0)
            return 0;
        int ok = (st.st_mode & S_IXOTH) || (st.st_uid == pg->pg_uid && (st.st_mode & S_IXUSR)) ||
                 (st.st_gid == pg->pg_gid && (st.st_mode & S_IXGRP));
        if (!ok)
            return 0;
    }
    return 1;
}

static int make_tempdir(struct pgtmp *pg, char *err, size_t errlen)
{
    const char *base = getenv("TMPDIR");
    if (base == NULL || *base == '\0')
        base = "/tmp";
    int n = snprintf(pg->dir, sizeof pg->dir, "%s/straum-pg.XXXXXX", base);
    if (n < 0 || n > PGTMP_MAX_DIR_LEN)
        return set_err(err, errlen,
                       "TMPDIR=%s is too long for a unix socket path; use a "
                       "shorter TMPDIR such as /tmp",
                       base);
    if (mkdtemp(pg->dir) == NULL)
        return set_err(err, errlen, "cannot create temp dir under %s: %s", base, strerror(errno));
    pg->active = 1;
    if (pg->as_postgres && chown(pg->dir, pg->pg_uid, pg->pg_gid) != 0)
        return set_err(err, errlen, "chown %s to postgres: %s", pg->dir, strerror(errno));
    if (pg->as_postgres && !searchable_by(pg, pg->dir))
        return set_err(err, errlen,
                       "%s is not reachable by user postgres; set TMPDIR to a "
                       "world-searchable directory such as /tmp",
                       base);
    if (join_path(pg->datadir, sizeof pg->datadir, pg->dir, "data") != 0 ||
        join_path(pg->logfile, sizeof pg->logfile, pg->dir, "server.log") != 0 ||
        join_path(pg->cmdlog, sizeof pg->cmdlog, pg->dir, "commands.log") != 0)
        return set_err(err, errlen, "temp dir path too long: %s", pg->dir);
    return 0;
}

/* ---- the reaper ----------------------------------------------------------- */

static volatile sig_atomic_t reap_requested;

static void on_reap_signal(int sig)
{
    (void)sig;
    reap_requested = 1;
}

/* A killed postmaster stays a zombie until init reaps it; that is dead too. */
static int process_alive(pid_t pid)
{
    if (kill(pid, 0) != 0 && errno != EPERM)
        return 0;
    char path[64], stat[256];
    snprintf(path, sizeof path, "/proc/%ld/stat", (long)pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 1;
    ssize_t n = read(fd, stat, sizeof stat - 1);
    close(fd);
    stat[n > 0 ? n : 0] = '\0';
    const char *paren = strrchr(stat, ')');
    return !(paren != NULL && paren[1] == ' ' && paren[2] == 'Z');
}

static int postmaster_alive(const struct pgtmp *pg)
{
    return pgtmp_postmaster_pid(pg) > 0;
}

/* Used when the test is gone: no point in a clean shutdown. */
static void stop_hard(const struct pgtmp *pg)
{
    if (!postmaster_alive(pg))
        return;
    pg_ctl_stop(pg, "immediate");
    pid_t pid = pgtmp_postmaster_pid(pg);
    if (pid <= 0)
        return;
    kill(pid, SIGQUIT);
    for (int i = 0; i < 50 && process_alive(pid); i++)
        sleep_ms(100);
    kill(pid, SIGKILL);
}

/* Blocks until every write end of the pipe is closed (all holders exited or
 * stopped) or the owner sends SIGTERM from pgtmp_stop. SIGTERM stays blocked
 * except inside ppoll, so a signal sent at any time is never missed. */
static void wait_for_release(int rfd, const sigset_t *wait_mask)
{
    char buf[64];
    while (!reap_requested) {
        struct pollfd p = {.fd = rfd, .events = POLLIN};
        int r = ppoll(&p, 1, NULL, wait_mask);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0 || read(rfd, buf, sizeof buf) <= 0)
            return;
    }
}

static _Noreturn void reaper_main(const struct pgtmp *pg, int rfd)
{
    /* Own session: a Ctrl-C or SIGHUP aimed at the test must not kill the
     * reaper before it has cleaned up. */
    setsid();
    signal(SIGINT, SIG_IGN);
    signal(SIGHUP, SIG_IGN);
    signal(SIGQUIT, SIG_IGN);
    signal(SIGPIPE, SIG_IGN);
    signal(SIGCHLD, SIG_DFL);
    struct sigaction sa = {.sa_handler = on_reap_signal};
    sigemptyset(&sa.sa_mask);
    sigaction(SIGTERM, &sa, NULL);
    sigset_t wait_mask;
    sigprocmask(SIG_SETMASK, NULL, &wait_mask);
    sigdelset(&wait_mask, SIGTERM);

    /* Keep only the read end: holding anything else (another cluster's
     * pipe, a test runner's output pipe) could keep that alive. */
    int devnull = open("/dev/null", O_RDWR);
    if (devnull >= 0) {
        dup2(devnull, 0);
        dup2(devnull, 1);
        dup2(devnull, 2);
    }
    if (rfd > 3)
        close_range(3, (unsigned)rfd - 1, 0);
    close_range((unsigned)rfd + 1, ~0U, 0);

    wait_for_release(rfd, &wait_mask);
    stop_hard(pg);
    remove_tree(pg->dir);
    _exit(0);
}

static int spawn_reaper(struct pgtmp *pg, char *err, size_t errlen)
{
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) != 0)
        return set_err(err, errlen, "pipe: %s", strerror(errno));
    /* Block SIGTERM across fork so the reaper inherits it blocked and cannot
     * be killed by pgtmp_stop's SIGTERM before its handler is installed. */
    sigset_t term, old;
    sigemptyset(&term);
    sigaddset(&term, SIGTERM);
    sigprocmask(SIG_BLOCK, &term, &old);
    pid_t pid = fork();
    if (pid == 0) {
        close(fds[1]);
        reaper_main(pg, fds[0]);
    }
    sigprocmask(SIG_SETMASK, &old, NULL);
    close(fds[0]);
    if (pid < 0) {
        close(fds[1]);
        return set_err(err, errlen, "fork: %s", strerror(errno));
    }
    pg->reaper = pid;
    pg->reaper_fd = fds[1];
    return 0;
}

/* Tells the reaper to clean up now (forked children may still hold the pipe)
 * and waits for it. Checks first that it is still our unreaped child, so a
 * recycled pid never gets the signal. */
static void finish_reaper(struct pgtmp *pg)
{
    if (pg->reaper <= 0)
        return;
    pid_t r = waitpid(pg->reaper, NULL, WNOHANG);
    if (r == 0) {
        kill(pg->reaper, SIGTERM);
        while (waitpid(pg->reaper, NULL, 0) < 0 && errno == EINTR)
            ;
    }
    pg->reaper = 0;
}

/* ---- configuring and starting the server ---------------------------------- */

static int write_file(const struct pgtmp *pg, const char *path, const char *mode, const char *text,
                      char *err, size_t errlen)
{
    FILE *f = fopen(path, mode);
    if (f == NULL || fputs(text, f) < 0 || fclose(f) != 0)
        return set_err(err, errlen, "cannot write %s: %s", path, strerror(errno));
    if (pg->as_postgres && chown(path, pg->pg_uid, pg->pg_gid) != 0)
        return set_err(err, errlen, "chown %s: %s", path, strerror(errno));
    return 0;
}

static int valid_setting_name(const char *s, size_t len)
{
    if (len == 0)
        return 0;
    for (size_t i = 0; i < len; i++)
        if (!(s[i] == '_' || s[i] == '.' || (s[i] >= 'a' && s[i] <= 'z') ||
              (s[i] >= 'A' && s[i] <= 'Z') || (s[i] >= '0' && s[i] <= '9')))
            return 0;
    return 1;
}

/* Writes `name = 'value'`, quoting as postgresql.conf expects ('' and \\). */
static void put_setting(FILE *f, const char *name, size_t namelen, const char *value)
{
    fprintf(f, "%.*s = '", (int)namelen, name);
    for (const char *c = value; *c; c++) {
        if (*c == '\'' || *c == '\\')
            fputc(*c, f);
        fputc(*c, f);
    }
    fputs("'\n", f);
}

/* All pgtmp settings live in data/straum.conf (included from
 * postgresql.conf), so a restart reuses them, port included. */
static int write_conf(const struct pgtmp *pg, const struct pgtmp_options *opt, char *err,
                      size_t errlen)
{
    char path[PGTMP_PATH_MAX];
    if (join_path(path, sizeof path, pg->datadir, "straum.conf") != 0)
        return set_err(err, errlen, "path too long");
    FILE *f = fopen(path, "w");
    if (f == NULL)
        return set_err(err, errlen, "cannot write %s: %s", path, strerror(errno));
    const char *sb = opt && opt->shared_buffers ? opt->shared_buffers : "128MB";
    fprintf(f,
            "# Written by pgtmp for a throwaway test cluster: durability off for speed,\n"
            "# logical decoding on for straum-ingest, two-phase commit allowed (its\n"
            "# WAL records are decoded by ingest/pgwal.c; a slot costs a few kB), and\n"
            "# full-page images on: the physical WAL's follower rebuilds pages from them.\n"
            "listen_addresses = '127.0.0.1'\nport = %d\n"
            "wal_level = logical\nmax_replication_slots = 20\nmax_wal_senders = 20\n"
            "max_prepared_transactions = 10\n"
            "fsync = off\nsynchronous_commit = off\nfull_page_writes = on\n",
            pg->port);
    put_setting(f, "unix_socket_directories", strlen("unix_socket_directories"), pg->dir);
    put_setting(f, "shared_buffers", strlen("shared_buffers"), sb);
    for (const char *const *s = opt ? opt->settings : NULL; s && *s; s++) {
        const char *eq = strchr(*s, '=');
        if (eq == NULL || !valid_setting_name(*s, (size_t)(eq - *s))) {
            fclose(f);
            return set_err(err, errlen, "bad setting \"%s\": expected name=value", *s);
        }
        put_setting(f, *s, (size_t)(eq - *s), eq + 1);
    }
    if (fclose(f) != 0)
        return set_err(err, errlen, "cannot write %s: %s", path, strerror(errno));
    if (pg->as_postgres && chown(path, pg->pg_uid, pg->pg_gid) != 0)
        return set_err(err, errlen, "chown %s: %s", path, strerror(errno));
    return 0;
}

static int run_initdb(struct pgtmp *pg, char *err, size_t errlen)
{
    const char *args[] = {"-D", pg->datadir, "-U",         "postgres",  "--auth=trust",
                          "-E", "UTF8",      "--locale=C", "--no-sync", "--no-instructions",
                          NULL};
    int rc = run_pg(pg, "initdb", args);
    if (rc != 0) {
        char tail[PGTMP_TAIL_BYTES + 1];
        file_tail(pg->cmdlog, tail, sizeof tail);
        return set_err(err, errlen, "initdb failed (exit %d):\n%s", rc, tail);
    }
    char conf[PGTMP_PATH_MAX], hba[PGTMP_PATH_MAX];
    if (join_path(conf, sizeof conf, pg->datadir, "postgresql.conf") != 0 ||
        join_path(hba, sizeof hba, pg->datadir, "pg_hba.conf") != 0)
        return set_err(err, errlen, "path too long");
    /* Our own pg_hba so replication over loopback TCP is trusted no matter
     * what initdb's defaults are. */
    static const char hba_text[] = "# pgtmp: throwaway test cluster, trust everything local.\n"
                                   "local all         all              trust\n"
                                   "local replication all              trust\n"
                                   "host  all         all 127.0.0.1/32 trust\n"
                                   "host  replication all 127.0.0.1/32 trust\n";
    if (write_file(pg, hba, "w", hba_text, err, errlen) != 0 ||
        write_file(pg, conf, "a", "\ninclude 'straum.conf'\n", err, errlen) != 0)
        return -1;
    return 0;
}

static int free_port(void)
{
    int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (s < 0)
        return -1;
    struct sockaddr_in a = {
        .sin_family = AF_INET, .sin_port = 0, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof a;
    int port = -1;
    if (bind(s, (struct sockaddr *)&a, sizeof a) == 0 &&
        getsockname(s, (struct sockaddr *)&a, &len) == 0)
        port = ntohs(a.sin_port);
    close(s);
    return port;
}

/* pg_ctl -w already waits for readiness; PQping confirms the TCP listener
 * the tests actually use is up, within the remaining time. */
static int wait_ready(const struct pgtmp *pg, double deadline)
{
    char ci[sizeof pg->conninfo + 32];
    snprintf(ci, sizeof ci, "%s connect_timeout=2", pg->conninfo);
    for (;;) {
        if (PQping(ci) == PQPING_OK)
            return 0;
        if (now_s() > deadline)
            return -1;
        sleep_ms(50);
    }
}

static void fail_with_log(const struct pgtmp *pg, const char *what, char *err, size_t errlen)
{
    char tail[PGTMP_TAIL_BYTES + 1];
    file_tail(pg->logfile, tail, sizeof tail);
    set_err(err, errlen, "%s (port %d); server log:\n%s", what, pg->port, tail);
}

/* Starts the server on pg->port. *bind_failed tells the caller a retry on
 * another port may help (someone grabbed the port after we probed it). */
static int start_server(struct pgtmp *pg, int *bind_failed, char *err, size_t errlen)
{
    char t[16];
    snprintf(t, sizeof t, "%d", pg->start_timeout_s);
    snprintf(pg->conninfo, sizeof pg->conninfo,
             "host=127.0.0.1 port=%d user=postgres dbname=postgres", pg->port);
    off_t log_before = file_size(pg->logfile);
    double deadline = now_s() + pg->start_timeout_s;
    const char *args[] = {"-D", pg->datadir, "-l", pg->logfile, "-w", "-t", t, "-s", "start", NULL};
    int rc = run_pg(pg, "pg_ctl", args);
    *bind_failed = rc != 0 && file_contains_after(pg->logfile, log_before, "could not bind");
    if (rc != 0) {
        fail_with_log(pg, "PostgreSQL did not start", err, errlen);
        return -1;
    }
    if (wait_ready(pg, deadline) != 0) {
        fail_with_log(pg, "PostgreSQL did not accept connections in time", err, errlen);
        return -1;
    }
    return 0;
}

static int start_on_free_port(struct pgtmp *pg, const struct pgtmp_options *opt, char *err,
                              size_t errlen)
{
    for (int attempt = 0; attempt < PGTMP_PORT_ATTEMPTS; attempt++) {
        int bind_failed = 0;
        pg->port = free_port();
        if (pg->port <= 0)
            return set_err(err, errlen, "cannot find a free port on 127.0.0.1: %s",
                           strerror(errno));
        if (write_conf(pg, opt, err, errlen) != 0)
            return -1;
        if (start_server(pg, &bind_failed, err, errlen) == 0)
            return 0;
        if (!bind_failed)
            return -1;
    }
    return -1;
}

/* ---- public API ----------------------------------------------------------- */

int pgtmp_start(struct pgtmp *pg, const struct pgtmp_options *opt, char *err, size_t errlen)
{
    memset(pg, 0, sizeof *pg);
    pg->reaper_fd = -1;
    pg->owner = getpid();
    pg->start_timeout_s =
        opt && opt->start_timeout_s > 0 ? opt->start_timeout_s : PGTMP_DEFAULT_TIMEOUT_S;
    if (find_bindir(pg, err, errlen) != 0 || resolve_user(pg, err, errlen) != 0 ||
        make_tempdir(pg, err, errlen) != 0 || spawn_reaper(pg, err, errlen) != 0 ||
        run_initdb(pg, err, errlen) != 0 || start_on_free_port(pg, opt, err, errlen) != 0) {
        pgtmp_stop(pg);
        return -1;
    }
    return 0;
}

/* pg_basebackup -R into the standby's data dir: a fast checkpoint on the
 * primary (no waiting for a timed one), the WAL streamed beside the copy,
 * no fsync (pgtmp trades durability for speed). -R writes standby.signal
 * and primary_conninfo; the copied straum.conf, the primary's, is written
 * anew by start_on_free_port with the standby's port and socket dir. */
static int run_basebackup(struct pgtmp *standby, const struct pgtmp *primary, char *err,
                          size_t errlen)
{
    char port[16];
    snprintf(port, sizeof port, "%d", primary->port);
    const char *args[] = {"-D",         standby->datadir,   "-h",       "127.0.0.1", "-p",
                          port,         "-U",               "postgres", "-R",        "-X",
                          "stream",     "--checkpoint=fast", "--no-sync", NULL};
    int rc = run_pg(standby, "pg_basebackup", args);
    if (rc != 0) {
        char tail[PGTMP_TAIL_BYTES + 1];
        file_tail(standby->cmdlog, tail, sizeof tail);
        return set_err(err, errlen, "pg_basebackup from port %d failed (exit %d):\n%s",
                       primary->port, rc, tail);
    }
    return 0;
}

int pgtmp_start_standby(const struct pgtmp *primary, struct pgtmp *standby,
                        const struct pgtmp_options *opt, char *err, size_t errlen)
{
    memset(standby, 0, sizeof *standby);
    standby->reaper_fd = -1;
    standby->owner = getpid();
    standby->start_timeout_s =
        opt && opt->start_timeout_s > 0 ? opt->start_timeout_s : PGTMP_DEFAULT_TIMEOUT_S;
    if (!primary->active || !postmaster_alive(primary))
        return set_err(err, errlen, "the primary of a standby must be running");
    /* The primary's binaries (the same major version, which streaming
     * replication requires) and user. */
    snprintf(standby->bindir, sizeof standby->bindir, "%s", primary->bindir);
    snprintf(standby->runuser, sizeof standby->runuser, "%s", primary->runuser);
    standby->as_postgres = primary->as_postgres;
    standby->pg_uid = primary->pg_uid;
    standby->pg_gid = primary->pg_gid;
    if (make_tempdir(standby, err, errlen) != 0 || spawn_reaper(standby, err, errlen) != 0 ||
        run_basebackup(standby, primary, err, errlen) != 0 ||
        start_on_free_port(standby, opt, err, errlen) != 0) {
        pgtmp_stop(standby);
        return -1;
    }
    return 0;
}

void pgtmp_stop(struct pgtmp *pg)
{
    if (pg->owner != getpid()) {
        /* A forked child: drop its hold only; the owner's cluster lives on. */
        if (pg->reaper_fd >= 0)
            close(pg->reaper_fd);
        pg->reaper_fd = -1;
        pg->reaper = 0;
        pg->active = 0;
        return;
    }
    if (!pg->active && pg->reaper_fd < 0 && pg->reaper == 0)
        return;
    if (pg->active && postmaster_alive(pg) && pg_ctl_stop(pg, "fast") != 0)
        stop_hard(pg);
    if (pg->reaper_fd >= 0)
        close(pg->reaper_fd);
    pg->reaper_fd = -1;
    finish_reaper(pg);
    /* The reaper normally removed it; this covers a reaper that was killed. */
    if (pg->active)
        remove_tree(pg->dir);
    pg->active = 0;
}

int pgtmp_restart(struct pgtmp *pg, char *err, size_t errlen)
{
    if (pg->owner != getpid() || !pg->active)
        return set_err(err, errlen, "restart: cluster not running or started by another process");
    int rc = postmaster_alive(pg) ? pg_ctl_stop(pg, "fast") : 0;
    if (rc != 0) {
        char tail[PGTMP_TAIL_BYTES + 1];
        file_tail(pg->cmdlog, tail, sizeof tail);
        return set_err(err, errlen, "pg_ctl stop failed (exit %d):\n%s", rc, tail);
    }
    /* After a crash (a test killed the postmaster) it may linger as a zombie
     * or leave backends exiting; PostgreSQL refuses to start until they are
     * gone, so keep trying until the start timeout. */
    double deadline = now_s() + pg->start_timeout_s;
    for (;;) {
        int bind_failed = 0;
        if (start_server(pg, &bind_failed, err, errlen) == 0)
            return 0;
        if (now_s() > deadline)
            return -1;
        sleep_ms(500);
    }
}

const char *pgtmp_conninfo(const struct pgtmp *pg)
{
    return pg->conninfo;
}
int pgtmp_port(const struct pgtmp *pg)
{
    return pg->port;
}
const char *pgtmp_datadir(const struct pgtmp *pg)
{
    return pg->datadir;
}
const char *pgtmp_dir(const struct pgtmp *pg)
{
    return pg->dir;
}
const char *pgtmp_logfile(const struct pgtmp *pg)
{
    return pg->logfile;
}

pid_t pgtmp_postmaster_pid(const struct pgtmp *pg)
{
    char path[PGTMP_PATH_MAX], line[32] = "";
    if (pg->datadir[0] == '\0' || join_path(path, sizeof path, pg->datadir, "postmaster.pid") != 0)
        return -1;
    FILE *f = fopen(path, "re");
    if (f == NULL)
        return -1;
    if (fgets(line, sizeof line, f) == NULL)
        line[0] = '\0';
    fclose(f);
    long pid = strtol(line, NULL, 10);
    return pid > 0 && process_alive((pid_t)pid) ? (pid_t)pid : -1;
}
