/* follower.h -- `straum-ingest run --wal physical` as a child process of a
 * test: started, stopped (SIGTERM), killed (SIGKILL) and waited for, with
 * the output of every run appended to one log file whose end goes into
 * failure messages. Every wait is bounded and fails the test (criterion)
 * when its bound passes. */
#ifndef STRAUM_TESTS_FOLLOWER_H
#define STRAUM_TESTS_FOLLOWER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct follower {
    const char *conninfo, *store, *slot; /* borrowed: must outlive the follower */
    char views[4096];
    char log[64];
    off_t run_from; /* where the current (or last) run's lines begin */
    pid_t pid;      /* 0 when not running */
};

/* Makes f follow conninfo through slot into store, with the views file
 * views (copied); creates its log, /tmp/straum-<name>-log-XXXXXX. */
void follower_init(struct follower *f, const char *name, const char *conninfo, const char *views,
                   const char *store, const char *slot);

/* Starts ingest (asserting it is not running): --exit-when-caught-up when
 * once, then the NULL-terminated arguments extra (NULL for none). */
void follower_spawn(struct follower *f, bool once, const char *const *extra);

/* follower_spawn(f, false, NULL). */
void follower_start(struct follower *f);

/* Waits (bounded by timeout_ms) for the running follower to exit; its wait
 * status. when names the wait in the failure message. */
int follower_wait_exit(struct follower *f, int timeout_ms, const char *when);

/* A run with --exit-when-caught-up (extra appended, as for
 * follower_spawn), waited for within timeout_ms: its wait status, its log
 * lines in out. */
int follower_run(struct follower *f, const char *const *extra, int timeout_ms, const char *when,
                 char *out, size_t cap);

/* SIGTERM: asserts a clean stop, exit status 0, within 30 s. */
void follower_stop(struct follower *f);

/* SIGKILL, and reaped. */
void follower_kill(struct follower *f);

/* Kills the follower if it runs and removes its log. */
void follower_end(struct follower *f);

/* Fails the test at once when the running follower has exited. */
void follower_assert_running(struct follower *f, const char *when);

/* Waits until the store's position reaches lsn, while the follower runs;
 * fails the test when it exits or after timeout_ms. */
void follower_wait_position(struct follower *f, uint64_t lsn, int timeout_ms, const char *when);

/* The log from byte `from` on, its last cap-1 bytes when longer. */
void follower_log_text(const struct follower *f, off_t from, char *out, size_t cap);

/* The end of the whole log, for failure messages (a static buffer). */
const char *follower_log_tail(const struct follower *f);

/* A wait status as text: "exit status N", "killed by signal N" (a static
 * buffer). */
const char *follower_status_text(int status);

#endif
