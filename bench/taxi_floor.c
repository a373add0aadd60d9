/* taxi_floor.c -- the floor of a logical follower: what PostgreSQL alone
 * takes to decode and send changes, received by pg_recvlogical through
 * the same plugin, publication and options as straum-ingest (pgoutput
 * protocol 2, binary, streaming) from a slot made before them. No
 * follower of the logical stream can apply changes sooner than they
 * arrive, so the stream mode compares ingest's catch-up on a backlog with
 * this; the wal mode reads its walsender's CPU through taxi_slot_pid. */
#include "bench/taxi_bench.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#define PG_BIN "/usr/lib/postgresql/15/bin/"

pid_t taxi_slot_pid(PGconn *c, const char *slot)
{
    char sql[200];
    snprintf(sql, sizeof sql,
             "SELECT coalesce(active_pid, 0) FROM pg_replication_slots WHERE slot_name = '%s'",
             slot);
    PGresult *r = PQexec(c, sql);
    pid_t pid = PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) == 1
                    ? (pid_t)atoi(PQgetvalue(r, 0, 0))
                    : 0;
    PQclear(r);
    return pid;
}

int64_t taxi_floor_ns(struct taxi_env *e, const char *slot, uint64_t end_lsn,
                      double *sender_cpu_s)
{
    char port[16], endpos[32], log[1200];
    snprintf(port, sizeof port, "%d", pgtmp_port(&e->pg));
    snprintf(endpos, sizeof endpos, "%X/%X", (unsigned)(end_lsn >> 32), (unsigned)end_lsn);
    snprintf(log, sizeof log, "%s/pg_recvlogical.log", e->work);
    char *argv[] = {PG_BIN "pg_recvlogical", "-h", "127.0.0.1", "-p", port, "-U", "postgres",
                    "-d", "postgres", "--slot", (char *)slot, "--start", "--no-loop", "-E",
                    endpos, "-o", "proto_version=2", "-o", "publication_names=straum", "-o",
                    "binary=true", "-o", "streaming=on", "-f", "/dev/null", NULL};
    int64_t t0 = taxi_now_ns();
    pid_t pid = taxi_spawn(argv, log);
    if (pid < 0)
        return -1;
    pid_t sender = 0;
    *sender_cpu_s = -1;
    for (;;) {
        siginfo_t info = {0};
        if (waitid(P_PID, (id_t)pid, &info, WEXITED | WNOHANG | WNOWAIT) || info.si_pid)
            break; /* WNOWAIT: waitpid below reaps it */
        if (!sender)
            sender = taxi_slot_pid(e->conn, slot);
        double cpu = sender ? taxi_proc_cpu_s(sender) : -1;
        if (cpu >= 0)
            *sender_cpu_s = cpu;
        usleep(1000);
    }
    int status = 0;
    pid_t r = waitpid(pid, &status, 0);
    int64_t t = taxi_now_ns() - t0;
    taxi_track_child(pid, false);
    if (r != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        fprintf(stderr, "taxi: pg_recvlogical failed (status %d; see %s)\n", status, log);
        return -1;
    }
    return t;
}
