/* engine_check.h -- an ask answered by the engine in process (no HTTP in
 * between) against the same question in SQL over the raw tables, for the
 * differential tests (test_serve_asks.c, test_warehouse.c). Every function
 * fails the running Criterion test with the ask, the SQL and the first
 * difference; none returns an error. */
#ifndef STRAUM_TESTS_ENGINE_CHECK_H
#define STRAUM_TESTS_ENGINE_CHECK_H

#include "engine/engine.h"
#include "tests/kit/answer.h"

#include <libpq-fe.h>

/* The engine's JSON for an ask (parameters as strings), byte for byte;
 * malloc'd. The ask must answer. */
char *straum_json(struct engine *e, const char *ask, int nparams, const char *const *params,
                  const char *tz);
/* The engine's answer to an ask, parsed. */
void straum_answer(struct engine *e, const char *ask, int nparams, const char *const *params,
                   const char *tz, struct answer *out);
/* PostgreSQL's answer to sql (in pg's session time zone). */
void pg_answer(PGconn *pg, const char *sql, struct answer *out);
/* Asserts want equals got (rows as sets: tests/kit/answer.h), what naming
 * the ask; frees both. */
void compare_answers(const char *what, struct answer *want, struct answer *got);
/* PostgreSQL's answer to sql against the engine's to ask, in time zone tz. */
void check_ask(struct engine *e, PGconn *pg, const char *sql, const char *ask, int nparams,
               const char *const *params, const char *tz, const char *what);

#endif
