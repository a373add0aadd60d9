/* engine_check.c -- see engine_check.h. */
#include "tests/e2e/engine_check.h"

#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

char *straum_json(struct engine *e, const char *ask, int nparams, const char *const *params,
                  const char *tz)
{
    struct ask_value vals[16];
    for (int i = 0; i < nparams; i++)
        vals[i] = (struct ask_value){ASK_STRING, false, params[i], strlen(params[i])};
    struct ask_request req = {.ask = ask, .params = vals, .nparams = nparams, .time_zone = tz};
    struct buf b = {0};
    struct ask_error err;
    int rc = engine_ask(e, &req, &b, &err);
    cr_assert_eq(rc, 0, "%s\n%d %s: %s (line %d, column %d)", ask, err.status, err.code,
                 err.message, err.line, err.column);
    return b.data;
}

void straum_answer(struct engine *e, const char *ask, int nparams, const char *const *params,
                   const char *tz, struct answer *out)
{
    char *json = straum_json(e, ask, nparams, params, tz), why[256];
    cr_assert_eq(answer_from_json(json, out, why, sizeof why), 0, "%s: %s", why, json);
    free(json);
}

void pg_answer(PGconn *pg, const char *sql, struct answer *out)
{
    PGresult *res = PQexec(pg, sql);
    cr_assert_eq(PQresultStatus(res), PGRES_TUPLES_OK, "%s\n%s", sql, PQerrorMessage(pg));
    cr_assert_eq(answer_from_pg(res, out), 0);
    PQclear(res);
}

void compare_answers(const char *what, struct answer *want, struct answer *got)
{
    char why[1024];
    bool equal = answer_equal(want, got, why, sizeof why);
    cr_assert(equal, "%s: %s", what, why);
    answer_free(want);
    answer_free(got);
}

void check_ask(struct engine *e, PGconn *pg, const char *sql, const char *ask, int nparams,
               const char *const *params, const char *tz, const char *what)
{
    struct answer want, got;
    pg_answer(pg, sql, &want);
    straum_answer(e, ask, nparams, params, tz, &got);
    compare_answers(what, &want, &got);
}
