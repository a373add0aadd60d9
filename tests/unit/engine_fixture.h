/* engine_fixture.h -- an engine over the store fixture's rides view filled
 * with its generated rides (store_fixture.h fixture_ride), the cells-only
 * reference engine over the same store, and asks whose failure, or whose
 * difference from the reference's, fails the test. Header only, for the
 * engine's unit tests. */
#ifndef STRAUM_TESTS_ENGINE_FIXTURE_H
#define STRAUM_TESTS_ENGINE_FIXTURE_H

#include "engine/engine.h"
#include "tests/unit/store_fixture.h"

/* n rides from seed, committed in dir (fixture_create), the engine over
 * them; fixture_remove(dir) after engine_close. */
static inline struct engine *fixture_rides_engine(char dir[64], uint64_t seed, int n)
{
    struct store *s = fixture_create(dir);
    struct store_error err;
    for (int i = 0; i < n; i++) {
        struct ride r = fixture_ride(&seed);
        fixture_apply(s, &r, +1);
    }
    cr_assert_eq(store_commit(s, &(struct store_position){.lsn = 1}, &err), 0, "%s",
                 err.message);
    store_close(s);
    struct engine *e = engine_open(dir, &(struct engine_limits){0}, &err);
    cr_assert_not_null(e, "%s", err.message);
    return e;
}

/* The answer to text into *out (buf_free it), its stats into *stats (NULL:
 * none). */
static inline void fixture_ask(struct engine *e, const char *text, struct buf *out,
                               struct ask_stats *stats)
{
    struct ask_request req = {.ask = text, .stats = stats};
    struct ask_error err = {0};
    *out = (struct buf){0};
    cr_assert_eq(engine_ask(e, &req, out, &err), 0, "%s: %s %s", text, err.code, err.message);
}

/* The cells-only engine over dir (engine_limits.cells_only: it folds no
 * rollup and keeps no source), the reference the engine's ways are
 * checked against. */
static inline struct engine *fixture_cells_engine(const char *dir)
{
    struct store_error err;
    struct engine *e = engine_open(dir, &(struct engine_limits){.cells_only = true}, &err);
    cr_assert_not_null(e, "%s", err.message);
    return e;
}

/* Asks text of e and of ref, fails the test unless the two answers are
 * one, and returns e's stats. */
static inline struct ask_stats fixture_ask_same(struct engine *e, struct engine *ref,
                                                const char *text)
{
    struct buf a, b;
    struct ask_stats st = {0};
    fixture_ask(e, text, &a, &st);
    fixture_ask(ref, text, &b, NULL);
    cr_assert_str_eq(a.data, b.data, "%s", text);
    buf_free(&a);
    buf_free(&b);
    return st;
}

#endif
