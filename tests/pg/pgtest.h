/* pgtest: the PostgreSQL a Criterion test talks to.
 *
 * Under tools/test.sh every test binary runs inside `straum-pgtmp run`, so all
 * tests share one cluster named by $STRAUM_TEST_PG. Run standalone, each test
 * process (Criterion runs every test in its own) starts a cluster on first
 * use and stops it at exit, about two seconds per test. Tests that
 * share a cluster should work in their own database (pgtest_new_db) and use
 * unique replication slot names, since ctest and Criterion run in parallel.
 */
#ifndef STRAUM_TESTS_PG_PGTEST_H
#define STRAUM_TESTS_PG_PGTEST_H

#include <stddef.h>

#include <libpq-fe.h>

/* libpq conninfo of the test cluster, or NULL (reason printed to stderr) if
 * no cluster could be started. */
const char *pgtest_conninfo(void);

/* Connects to pgtest_conninfo() with `extra` appended (e.g.
 * "replication=database"; NULL for none). Returns NULL, with the reason
 * printed to stderr, on failure. The caller PQfinish()es it. */
PGconn *pgtest_connect(const char *extra);

/* Creates a fresh, uniquely named database and writes a conninfo for it to
 * out. Returns 0, or -1 with the reason printed to stderr. */
int pgtest_new_db(char *out, size_t outlen);

#endif
