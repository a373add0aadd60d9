/* pgtest: one PostgreSQL per test process, shared or private (see pgtest.h). */
#include "tests/pg/pgtest.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/kit/pgtmp.h"

static struct pgtmp own_cluster;
static int own_started;

static void stop_own_cluster(void)
{
    pgtmp_stop(&own_cluster);
}

const char *pgtest_conninfo(void)
{
    const char *env = getenv("STRAUM_TEST_PG");
    if (env != NULL && *env != '\0')
        return env;
    if (!own_started) {
        char err[4096];
        if (pgtmp_start(&own_cluster, NULL, err, sizeof err) != 0) {
            fprintf(stderr, "pgtest: no PostgreSQL for tests: %s\n", err);
            return NULL;
        }
        own_started = 1;
        atexit(stop_own_cluster);
    }
    return pgtmp_conninfo(&own_cluster);
}

PGconn *pgtest_connect(const char *extra)
{
    const char *base = pgtest_conninfo();
    if (base == NULL)
        return NULL;
    char ci[1024];
    int n = snprintf(ci, sizeof ci, "%s %s", base, extra ? extra : "");
    if (n < 0 || (size_t)n >= sizeof ci) {
        fprintf(stderr, "pgtest: conninfo too long\n");
        return NULL;
    }
    PGconn *conn = PQconnectdb(ci);
    if (PQstatus(conn) != CONNECTION_OK) {
        fprintf(stderr, "pgtest: cannot connect with \"%s\": %s", ci, PQerrorMessage(conn));
        PQfinish(conn);
        return NULL;
    }
    return conn;
}

/* Databases are never dropped: the cluster is thrown away after the run. */
int pgtest_new_db(char *out, size_t outlen)
{
    static unsigned counter;
    char name[64], sql[128];
    snprintf(name, sizeof name, "t_%ld_%u", (long)getpid(), counter++);
    snprintf(sql, sizeof sql, "CREATE DATABASE %s", name);
    PGconn *conn = pgtest_connect(NULL);
    if (conn == NULL)
        return -1;
    PGresult *res = PQexec(conn, sql);
    int ok = PQresultStatus(res) == PGRES_COMMAND_OK;
    if (!ok)
        fprintf(stderr, "pgtest: %s: %s", sql, PQerrorMessage(conn));
    PQclear(res);
    PQfinish(conn);
    int n = ok ? snprintf(out, outlen, "%s dbname=%s", pgtest_conninfo(), name) : -1;
    return (n < 0 || (size_t)n >= outlen) ? -1 : 0;
}
