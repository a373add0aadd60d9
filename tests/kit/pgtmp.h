/* pgtmp: throwaway PostgreSQL 15 clusters for tests and benchmarks.
 *
 * Each cluster lives in its own mkdtemp directory, listens on a free loopback
 * port with trust auth and wal_level=logical, and is removed again however
 * the process ends: a "reaper" child holds one end of a pipe and tears the
 * cluster down when the pipe reaches EOF, i.e. when every process holding the
 * write end has exited or called pgtmp_stop. Note that fork() copies the
 * write end (the pipe is CLOEXEC, so exec'd children such as Criterion's
 * workers do not): a cluster lives until the owner AND all its forked,
 * non-exec'd children are gone, unless the owner calls pgtmp_stop.
 *
 * As root the server runs as the "postgres" user via runuser(1), because
 * PostgreSQL refuses to run as root.
 *
 * Durability is traded for speed (fsync and synchronous_commit off): a
 * test that kills the postmaster and expects recent commits to survive
 * must commit with SET synchronous_commit = on. full_page_writes stays on:
 * the physical WAL's follower rebuilds heap pages from the images (the
 * benchmarks turn it off in their settings).
 */
#ifndef STRAUM_KIT_PGTMP_H
#define STRAUM_KIT_PGTMP_H

#include <stddef.h>
#include <sys/types.h>

/* Own limit so this header needs no POSIX feature macros. */
#define PGTMP_PATH_MAX 4096

struct pgtmp_options {
    /* shared_buffers value, e.g. "2GB"; NULL means "128MB". */
    const char *shared_buffers;
    /* Extra server settings as "name=value" strings, NULL-terminated;
     * NULL for none. Values are quoted for postgresql.conf by pgtmp. */
    const char *const *settings;
    /* Seconds to wait for the server to accept connections; 0 means 30. */
    int start_timeout_s;
};

/* Fields are private; use the accessors below. */
struct pgtmp {
    char dir[PGTMP_PATH_MAX];     /* temp dir: data/, server.log, socket */
    char datadir[PGTMP_PATH_MAX]; /* dir/data */
    char bindir[PGTMP_PATH_MAX];  /* PostgreSQL server binaries */
    char logfile[PGTMP_PATH_MAX]; /* server log (pg_ctl -l) */
    char cmdlog[PGTMP_PATH_MAX];  /* output of initdb / pg_ctl */
    char runuser[64];             /* runuser(1) path when as_postgres */
    char conninfo[128];
    int port;
    int start_timeout_s;
    int active;      /* temp dir exists and is ours to remove */
    int as_postgres; /* run server commands via runuser -u postgres */
    uid_t pg_uid;
    gid_t pg_gid;
    pid_t owner;   /* process that called pgtmp_start */
    pid_t reaper;  /* 0 once waited for */
    int reaper_fd; /* write end of the reaper pipe; -1 when closed */
};

/* Creates and starts a fresh cluster. opt may be NULL for defaults. On
 * failure returns -1 with a message in err and leaves nothing behind;
 * pgtmp_stop is then a no-op. Returns 0 on success. */
int pgtmp_start(struct pgtmp *pg, const struct pgtmp_options *opt, char *err, size_t errlen);

/* Creates and starts a hot standby of primary (which must run, at
 * wal_level replica or logical): a base backup of it taken by
 * pg_basebackup -R (WAL streamed with it, so nothing needs archiving) into
 * a temp dir of its own, started on another free loopback port, then
 * following primary by streaming replication, read-only queries allowed
 * (hot_standby is on by default). opt is applied as by pgtmp_start and
 * should be primary's: a hot standby refuses to start with a smaller
 * max_connections, max_prepared_transactions, max_wal_senders, ... than
 * its primary. Removed however the process ends, like any cluster; stop it
 * (pgtmp_stop) before primary, or it logs reconnection attempts until it
 * is stopped. Returns 0, or -1 with a message in err and nothing left. */
int pgtmp_start_standby(const struct pgtmp *primary, struct pgtmp *standby,
                        const struct pgtmp_options *opt, char *err, size_t errlen);

/* Fast clean shutdown, removes the temp dir, and waits for the reaper.
 * Called from a forked child (not the owner) it only drops the child's hold
 * on the cluster. Idempotent. */
void pgtmp_stop(struct pgtmp *pg);

/* Stops (fast) and starts the same data dir on the same port, e.g. to test
 * reconnects; after a crash (a test SIGKILLed the postmaster) it just starts
 * it again, through crash recovery. Owner only. Returns 0, or -1 with a
 * message in err. */
int pgtmp_restart(struct pgtmp *pg, char *err, size_t errlen);

/* libpq keyword/value string:
 * "host=127.0.0.1 port=N user=postgres dbname=postgres". */
const char *pgtmp_conninfo(const struct pgtmp *pg);
int pgtmp_port(const struct pgtmp *pg);
/* The cluster's data directory (inside the temp dir). */
const char *pgtmp_datadir(const struct pgtmp *pg);
/* The temp dir holding data dir, server log and unix socket. */
const char *pgtmp_dir(const struct pgtmp *pg);
/* Path of the server log, for diagnosing test failures. */
const char *pgtmp_logfile(const struct pgtmp *pg);
/* PID of the running postmaster (from postmaster.pid), or -1. Lets tests
 * crash the server deliberately (kill -9) to exercise recovery paths. */
pid_t pgtmp_postmaster_pid(const struct pgtmp *pg);

#endif
