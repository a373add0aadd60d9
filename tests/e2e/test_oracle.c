/* Tests of the oracle's own promises, on which every e2e check rests. */
#include <stdio.h>

#include <criterion/criterion.h>
#include <libpq-fe.h>

#include "tests/e2e/oracle.h"
#include "tests/pg/pgtest.h"

static uint64_t lsn_of(PGconn *pg, const char *sql)
{
    PGresult *r = PQexec(pg, sql);
    cr_assert_eq(PQresultStatus(r), PGRES_TUPLES_OK, "%s: %s", sql, PQerrorMessage(pg));
    unsigned hi = 0, lo = 0;
    sscanf(PQgetvalue(r, 0, 0), "%X/%X", &hi, &lo);
    PQclear(r);
    return (uint64_t)hi << 32 | lo;
}

/* The test cluster commits asynchronously (pgtmp: synchronous_commit off),
 * as pgbench's sessions do: a commit is visible to queries before the WAL
 * writer writes it out, and the walsender sends only flushed WAL. A catch-up
 * target below such a commit lets a check compare a store that lacks it
 * with PostgreSQL that shows it. */
Test(oracle, committed_lsn_covers_asynchronous_commits, .timeout = 120)
{
    char conninfo[1024];
    cr_assert_eq(pgtest_new_db(conninfo, sizeof conninfo), 0);
    PGconn *writer = PQconnectdb(conninfo), *checker = PQconnectdb(conninfo);
    cr_assert_eq(PQstatus(writer), CONNECTION_OK, "%s", PQerrorMessage(writer));
    cr_assert_eq(PQstatus(checker), CONNECTION_OK, "%s", PQerrorMessage(checker));
    oracle_exec(writer, "CREATE TABLE t (x int); SET synchronous_commit = off");
    for (int i = 0; i < 50; i++) {
        oracle_exec(writer, "INSERT INTO t VALUES (1)");
        /* The insert position after the commit is at or past its end. */
        uint64_t commit_end = lsn_of(writer, "SELECT pg_current_wal_insert_lsn()");
        uint64_t target = oracle_committed_lsn(checker);
        cr_assert_geq(target, commit_end, "commit %d: target %llX below the commit's end %llX", i,
                      (unsigned long long)target, (unsigned long long)commit_end);
        cr_assert_geq(lsn_of(checker, "SELECT pg_current_wal_flush_lsn()"), commit_end,
                      "commit %d is flushed, so a walsender can send it", i);
    }
    PQfinish(writer);
    PQfinish(checker);
}
