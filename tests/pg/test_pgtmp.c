/* Tests for the throwaway PostgreSQL harness: that the cluster has what
 * straum-ingest needs (logical decoding, replication connections), that
 * private clusters restart and vanish, that a standby replays its primary,
 * and that a test dying without cleanup still leaves nothing behind. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <criterion/criterion.h>
#include <libpq-fe.h>

#include "tests/pg/pgtest.h"
#include "tests/kit/pgtmp.h"

/* Runs a one-value query and copies the value into out. */
static void query1(PGconn *conn, const char *sql, char *out, size_t outlen)
{
    PGresult *res = PQexec(conn, sql);
    cr_assert_eq(PQresultStatus(res), PGRES_TUPLES_OK, "%s: %s", sql, PQerrorMessage(conn));
    cr_assert_eq(PQntuples(res), 1, "%s returned %d rows", sql, PQntuples(res));
    snprintf(out, outlen, "%s", PQgetvalue(res, 0, 0));
    PQclear(res);
}

static PGconn *connect_or_fail(const char *conninfo)
{
    PGconn *conn = PQconnectdb(conninfo);
    cr_assert_eq(PQstatus(conn), CONNECTION_OK, "connect %s: %s", conninfo, PQerrorMessage(conn));
    return conn;
}

static int path_gone(const char *path)
{
    return access(path, F_OK) != 0 && errno == ENOENT;
}

/* A zombie postmaster (parent not reaping) counts as gone. */
static int process_running(pid_t pid)
{
    char path[64], stat[256] = "";
    snprintf(path, sizeof path, "/proc/%ld/stat", (long)pid);
    FILE *f = fopen(path, "r");
    if (f == NULL)
        return 0;
    size_t n = fread(stat, 1, sizeof stat - 1, f);
    fclose(f);
    stat[n] = '\0';
    const char *paren = strrchr(stat, ')');
    return paren != NULL && paren[1] == ' ' && paren[2] != 'Z';
}

Test(pgtmp, shared_cluster_has_logical_decoding, .timeout = 120)
{
    PGconn *conn = pgtest_connect(NULL);
    cr_assert_not_null(conn, "no test PostgreSQL (see stderr)");
    char v[64], sql[256];
    query1(conn, "SHOW wal_level", v, sizeof v);
    cr_expect_str_eq(v, "logical");
    query1(conn, "SHOW max_replication_slots", v, sizeof v);
    cr_expect_geq(atoi(v), 10, "max_replication_slots = %s", v);
    query1(conn, "SHOW fsync", v, sizeof v);
    cr_expect_str_eq(v, "off");

    /* Unique name: other tests may share this cluster concurrently. */
    snprintf(sql, sizeof sql,
             "SELECT slot_name FROM pg_create_logical_replication_slot('t_slot_%ld', "
             "'pgoutput')",
             (long)getpid());
    query1(conn, sql, v, sizeof v);
    snprintf(sql, sizeof sql, "SELECT pg_drop_replication_slot('%s')", v);
    query1(conn, sql, v, sizeof v);
    PQfinish(conn);
}

Test(pgtmp, replication_connection_identifies_system, .timeout = 120)
{
    PGconn *conn = pgtest_connect("replication=database");
    cr_assert_not_null(conn, "replication connection refused (see stderr)");
    PGresult *res = PQexec(conn, "IDENTIFY_SYSTEM");
    cr_assert_eq(PQresultStatus(res), PGRES_TUPLES_OK, "IDENTIFY_SYSTEM: %s", PQerrorMessage(conn));
    cr_expect_eq(PQntuples(res), 1);
    cr_expect_eq(PQnfields(res), 4);
    cr_expect_str_eq(PQgetvalue(res, 0, 3), "postgres");
    PQclear(res);
    PQfinish(conn);
}

Test(pgtmp, new_db_is_usable, .timeout = 120)
{
    char ci[1024], v[64];
    cr_assert_eq(pgtest_new_db(ci, sizeof ci), 0, "pgtest_new_db failed (see stderr)");
    PGconn *conn = connect_or_fail(ci);
    query1(conn, "SELECT current_database() LIKE 't\\_%'", v, sizeof v);
    cr_expect_str_eq(v, "t");
    PQfinish(conn);
}

Test(pgtmp, private_cluster_restarts_and_vanishes, .timeout = 180)
{
    const char *settings[] = {"work_mem=8MB", "application_name=it's \\ok", NULL};
    struct pgtmp_options opt = {.shared_buffers = "64MB", .settings = settings};
    struct pgtmp pg;
    char err[4096], v[64], dir[PGTMP_PATH_MAX];
    cr_assert_eq(pgtmp_start(&pg, &opt, err, sizeof err), 0, "%s", err);
    snprintf(dir, sizeof dir, "%s", pgtmp_dir(&pg));
    int port = pgtmp_port(&pg);
    pid_t first = pgtmp_postmaster_pid(&pg);
    cr_assert_gt(first, 0);

    PGconn *conn = connect_or_fail(pgtmp_conninfo(&pg));
    query1(conn, "SHOW shared_buffers", v, sizeof v);
    cr_expect_str_eq(v, "64MB");
    query1(conn, "SHOW work_mem", v, sizeof v);
    cr_expect_str_eq(v, "8MB");
    query1(conn, "SHOW application_name", v, sizeof v);
    PQfinish(conn);

    cr_assert_eq(pgtmp_restart(&pg, err, sizeof err), 0, "%s", err);
    cr_expect_eq(pgtmp_port(&pg), port, "restart must keep the port");
    cr_expect_neq(pgtmp_postmaster_pid(&pg), first, "restart must start a new postmaster");

    /* A forked child dropping its copy must not stop the owner's cluster. */
    pid_t child = fork();
    if (child == 0) {
        pgtmp_stop(&pg);
        _exit(0);
    }
    cr_assert_gt(child, 0);
    waitpid(child, NULL, 0);

    conn = connect_or_fail(pgtmp_conninfo(&pg));
    query1(conn, "SELECT 1", v, sizeof v);
    PQfinish(conn);

    pgtmp_stop(&pg);
    cr_expect(path_gone(dir), "%s still exists after pgtmp_stop", dir);
    pgtmp_stop(&pg); /* idempotent */
}

Test(pgtmp, restart_recovers_after_postmaster_crash, .timeout = 180)
{
    struct pgtmp pg;
    char err[4096], v[64];
    cr_assert_eq(pgtmp_start(&pg, NULL, err, sizeof err), 0, "%s", err);
    PGconn *conn = connect_or_fail(pgtmp_conninfo(&pg));
    /* The cluster runs synchronous_commit=off: without this, a commit can
     * still sit in WAL buffers when the postmaster is killed, and be lost. */
    PQclear(PQexec(conn, "SET synchronous_commit = on; CREATE TABLE survives (x int); "
                         "INSERT INTO survives VALUES (42)"));
    PQfinish(conn);

    pid_t pm = pgtmp_postmaster_pid(&pg);
    cr_assert_gt(pm, 0);
    cr_assert_eq(kill(pm, SIGKILL), 0);
    for (int i = 0; i < 100 && pgtmp_postmaster_pid(&pg) > 0; i++)
        usleep(50 * 1000);
    cr_assert_leq(pgtmp_postmaster_pid(&pg), 0, "postmaster survived SIGKILL");

    cr_assert_eq(pgtmp_restart(&pg, err, sizeof err), 0, "%s", err);
    conn = connect_or_fail(pgtmp_conninfo(&pg));
    query1(conn, "SELECT x FROM survives", v, sizeof v);
    cr_expect_str_eq(v, "42");
    PQfinish(conn);
    pgtmp_stop(&pg);
}

Test(pgtmp, bad_setting_fails_cleanly, .timeout = 120)
{
    const char *settings[] = {"no_equals_sign", NULL};
    struct pgtmp_options opt = {.settings = settings};
    struct pgtmp pg;
    char err[4096], dir[PGTMP_PATH_MAX];
    cr_assert_neq(pgtmp_start(&pg, &opt, err, sizeof err), 0);
    cr_expect(strstr(err, "bad setting") != NULL, "unexpected error: %s", err);
    snprintf(dir, sizeof dir, "%s", pgtmp_dir(&pg));
    cr_expect(path_gone(dir), "%s left behind after a failed start", dir);
    pgtmp_stop(&pg); /* no-op after failure */
}

/* A standby made from a private primary: in recovery, on a port and in a
 * dir of its own, replaying what the primary commits, read-only; both
 * removed by pgtmp_stop. */
Test(pgtmp, standby_replays_its_primary_and_vanishes, .timeout = 180)
{
    const char *settings[] = {"wal_level=replica", NULL};
    struct pgtmp_options opt = {.settings = settings};
    struct pgtmp primary, standby;
    char err[4096], v[64], sql[256], dir[PGTMP_PATH_MAX];
    cr_assert_eq(pgtmp_start(&primary, &opt, err, sizeof err), 0, "%s", err);
    cr_assert_eq(pgtmp_start_standby(&primary, &standby, &opt, err, sizeof err), 0, "%s", err);
    snprintf(dir, sizeof dir, "%s", pgtmp_dir(&standby));
    cr_expect_neq(pgtmp_port(&standby), pgtmp_port(&primary));
    cr_expect_str_neq(dir, pgtmp_dir(&primary));

    PGconn *p = connect_or_fail(pgtmp_conninfo(&primary));
    PGconn *s = connect_or_fail(pgtmp_conninfo(&standby));
    query1(s, "SELECT pg_is_in_recovery()", v, sizeof v);
    cr_expect_str_eq(v, "t");
    query1(s, "SHOW port", v, sizeof v);
    cr_expect_eq(atoi(v), pgtmp_port(&standby), "the standby's own port, not the copied one");
    query1(p, "SELECT count(*) FROM pg_stat_replication", v, sizeof v);
    cr_expect_str_eq(v, "1", "the primary streams to the standby");

    /* Committed synchronously: the cluster runs synchronous_commit=off, and
     * an asynchronous commit's record may not be written yet, so
     * pg_current_wal_lsn() could stand below it and the standby would
     * "catch up" without it (seen failing under ASan: no such table). */
    PGresult *made = PQexec(p, "SET synchronous_commit = on; "
                               "CREATE TABLE replayed AS SELECT 42 AS x");
    cr_assert_eq(PQresultStatus(made), PGRES_COMMAND_OK, "%s", PQerrorMessage(p));
    PQclear(made);
    query1(p, "SELECT pg_current_wal_lsn()", v, sizeof v);
    snprintf(sql, sizeof sql, "SELECT pg_last_wal_replay_lsn() >= '%s'", v);
    for (int i = 0; i < 600; i++) {
        query1(s, sql, v, sizeof v);
        if (strcmp(v, "t") == 0)
            break;
        usleep(50 * 1000);
    }
    cr_assert_str_eq(v, "t", "the standby did not replay within 30 s");
    query1(s, "SELECT x FROM replayed", v, sizeof v);
    cr_expect_str_eq(v, "42");
    PGresult *res = PQexec(s, "CREATE TABLE refused (x int)");
    cr_expect_eq(PQresultStatus(res), PGRES_FATAL_ERROR, "a standby is read-only");
    PQclear(res);
    PQfinish(s);
    PQfinish(p);

    pgtmp_stop(&standby);
    cr_expect(path_gone(dir), "%s still exists after pgtmp_stop", dir);
    pgtmp_stop(&primary);
}

/* In a child: start a cluster, report where it lives, then die without
 * pgtmp_stop. Only the reaper can clean up after this. */
static _Noreturn void start_and_die(int wfd, int sig)
{
    struct pgtmp pg;
    char err[4096];
    if (pgtmp_start(&pg, NULL, err, sizeof err) != 0) {
        dprintf(wfd, "!%s", err);
        _exit(1);
    }
    dprintf(wfd, "%ld %s", (long)pgtmp_postmaster_pid(&pg), pgtmp_dir(&pg));
    close(wfd);
    if (sig != 0)
        raise(sig);
    _exit(0);
}

static void check_reaped_after(int sig)
{
    int fds[2];
    cr_assert_eq(pipe(fds), 0);
    pid_t child = fork();
    cr_assert_geq(child, 0);
    if (child == 0) {
        close(fds[0]);
        start_and_die(fds[1], sig);
    }
    close(fds[1]);
    char msg[PGTMP_PATH_MAX + 4200] = "";
    size_t len = 0;
    ssize_t n;
    while ((n = read(fds[0], msg + len, sizeof msg - 1 - len)) > 0)
        len += (size_t)n;
    msg[len] = '\0';
    close(fds[0]);
    waitpid(child, NULL, 0);
    cr_assert(msg[0] != '!' && msg[0] != '\0', "child could not start a cluster: %s", msg + 1);

    long pid = 0;
    char dir[PGTMP_PATH_MAX] = "";
    cr_assert_eq(sscanf(msg, "%ld %4095s", &pid, dir), 2, "bad report: %s", msg);
    for (int i = 0; i < 200 && !(path_gone(dir) && !process_running((pid_t)pid)); i++)
        usleep(100 * 1000);
    cr_expect(path_gone(dir), "reaper did not remove %s within 20 s", dir);
    cr_expect(!process_running((pid_t)pid), "postmaster %ld still running", pid);
}

Test(pgtmp, reaper_cleans_up_after_exit_without_stop, .timeout = 120)
{
    check_reaped_after(0);
}

Test(pgtmp, reaper_cleans_up_after_sigkill, .timeout = 120)
{
    check_reaped_after(SIGKILL);
}
