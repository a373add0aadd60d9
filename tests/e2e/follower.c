/* follower.c -- straum-ingest as a child process of a test (follower.h). */
#include "tests/e2e/follower.h"
#include "tests/e2e/oracle.h"

#include <criterion/criterion.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

void follower_init(struct follower *f, const char *name, const char *conninfo, const char *views,
                   const char *store, const char *slot)
{
    memset(f, 0, sizeof *f);
    f->conninfo = conninfo;
    snprintf(f->views, sizeof f->views, "%s", views);
    f->store = store;
    f->slot = slot;
    snprintf(f->log, sizeof f->log, "/tmp/straum-%s-log-XXXXXX", name);
    int fd = mkstemp(f->log);
    cr_assert_geq(fd, 0);
    close(fd);
}

static off_t log_size(const struct follower *f)
{
    struct stat st;
    return stat(f->log, &st) == 0 ? st.st_size : 0;
}

void follower_log_text(const struct follower *f, off_t from, char *out, size_t cap)
{
    out[0] = '\0';
    int fd = open(f->log, O_RDONLY);
    if (fd < 0)
        return;
    off_t size = lseek(fd, 0, SEEK_END);
    if (size - from > (off_t)cap - 1)
        from = size - ((off_t)cap - 1);
    ssize_t n = pread(fd, out, cap - 1, from);
    out[n > 0 ? n : 0] = '\0';
    close(fd);
}

const char *follower_log_tail(const struct follower *f)
{
    static char tail[6000];
    follower_log_text(f, 0, tail, sizeof tail);
    return tail;
}

const char *follower_status_text(int status)
{
    static char s[64];
    if (WIFEXITED(status))
        snprintf(s, sizeof s, "exit status %d", WEXITSTATUS(status));
    else if (WIFSIGNALED(status))
        snprintf(s, sizeof s, "killed by signal %d", WTERMSIG(status));
    else
        snprintf(s, sizeof s, "status %d", status);
    return s;
}

void follower_spawn(struct follower *f, bool once, const char *const *extra)
{
    cr_assert_eq(f->pid, 0, "ingest already running");
    const char *argv[40] = {STRAUM_INGEST_BIN, "run", "--wal", "physical", "--source", f->conninfo,
                            "--views", f->views, "--store", f->store, "--slot", f->slot,
                            /* nice 0: ingest's default of 10 starves it on a busy test machine */
                            "--commit-interval", "5ms", "--nice", "0"};
    int n = 16;
    if (once)
        argv[n++] = "--exit-when-caught-up";
    for (int i = 0; extra && extra[i] && n < 38; i++)
        argv[n++] = extra[i];
    argv[n] = NULL;
    f->run_from = log_size(f);
    int fd = open(f->log, O_WRONLY | O_APPEND);
    cr_assert_geq(fd, 0);
    pid_t pid = fork();
    cr_assert_geq(pid, 0);
    if (pid == 0) {
        /* A failed assertion ends the test without cleanup: the follower
         * must not outlive it. */
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        dup2(fd, 1);
        dup2(fd, 2);
        execv(argv[0], (char *const *)argv);
        _exit(127);
    }
    close(fd);
    f->pid = pid;
}

void follower_start(struct follower *f)
{
    follower_spawn(f, false, NULL);
}

int follower_wait_exit(struct follower *f, int timeout_ms, const char *when)
{
    int status = 0;
    for (int waited = 0; waitpid(f->pid, &status, WNOHANG) != f->pid; waited += 20) {
        cr_assert_lt(waited, timeout_ms, "%s: ingest did not exit within %d s\n--- its log:\n%s",
                     when, timeout_ms / 1000, follower_log_tail(f));
        usleep(20000);
    }
    f->pid = 0;
    return status;
}

int follower_run(struct follower *f, const char *const *extra, int timeout_ms, const char *when,
                 char *out, size_t cap)
{
    follower_spawn(f, true, extra);
    int status = follower_wait_exit(f, timeout_ms, when);
    follower_log_text(f, f->run_from, out, cap);
    return status;
}

void follower_stop(struct follower *f)
{
    kill(f->pid, SIGTERM);
    int status = follower_wait_exit(f, 30000, "stopping on SIGTERM");
    cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0,
              "ingest did not stop cleanly on SIGTERM (%s)\n--- its log:\n%s",
              follower_status_text(status), follower_log_tail(f));
}

void follower_kill(struct follower *f)
{
    kill(f->pid, SIGKILL);
    waitpid(f->pid, NULL, 0);
    f->pid = 0;
}

void follower_end(struct follower *f)
{
    if (f->pid)
        follower_kill(f);
    unlink(f->log);
}

void follower_assert_running(struct follower *f, const char *when)
{
    int status;
    if (f->pid && waitpid(f->pid, &status, WNOHANG) == f->pid) {
        f->pid = 0;
        cr_assert_fail("%s: ingest exited (%s)\n--- its log:\n%s", when,
                       follower_status_text(status), follower_log_tail(f));
    }
}

void follower_wait_position(struct follower *f, uint64_t lsn, int timeout_ms, const char *when)
{
    for (int waited = 0; oracle_store_position(f->store) < lsn; waited += 20) {
        follower_assert_running(f, when);
        uint64_t at = oracle_store_position(f->store);
        cr_assert_lt(waited, timeout_ms,
                     "%s: the store did not reach %X/%08X within %d s (it is at %X/%08X)\n"
                     "--- ingest's log:\n%s",
                     when, (unsigned)(lsn >> 32), (unsigned)lsn, timeout_ms / 1000,
                     (unsigned)(at >> 32), (unsigned)at, follower_log_tail(f));
        usleep(20000);
    }
}
