/* engine_fixture.h -- an engine over the store fixture's rides view filled
 * with its generated rides (store_fixture.h fixture_ride), and an ask whose
 * failure fails the test. Header only, for the engine's unit tests. */
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

#endif
