/* test_engine_groups.c -- the group limit counts the groups an ask holds at
 * once (engine_limits.max_groups, SPEC.md §6.1), not the rows of its
 * answer. An ask grouped by time settles each bin as the scan passes it and
 * its group map forgets the settled ones, so a series longer than the limit
 * is answered; an ask that must hold every group to the end is refused.
 * Over the store fixture's rides view: NRIDES rides, one an hour, each in
 * a zone of its own, so that grouped by hour and zone, or by zone alone,
 * the answer has NRIDES rows. */
#include "engine/engine.h"
#include "tests/unit/store_fixture.h"

#include <criterion/criterion.h>

#define HOUR_US (3600LL * 1000000LL)
#define JAN1 (1704067200LL * 1000000LL)

/* More rides than the limit, and the limit past the 4,096 settled groups
 * at which the map forgets them (exec.c SETTLED_MAP_FORGET). */
enum { NRIDES = 9000, MAX_GROUPS = 6000 };

static struct engine *rides_engine(char dir[64])
{
    struct store *s = fixture_create(dir);
    struct store_error err;
    for (int i = 0; i < NRIDES; i++) {
        struct ride r = {.at = JAN1 + i * HOUR_US + HOUR_US / 2, .zone = 1000 + i,
                         .kind = i % 5, .fare = 100 + i % 7, .dist = 1.0};
        fixture_apply(s, &r, +1);
    }
    cr_assert_eq(store_commit(s, &(struct store_position){.lsn = 1}, &err), 0, "%s",
                 err.message);
    store_close(s);
    struct engine *e = engine_open(dir, &(struct engine_limits){.max_groups = MAX_GROUPS}, &err);
    cr_assert_not_null(e, "%s", err.message);
    return e;
}

/* The number of rows of a JSON answer ("rows":[[...],[...]]). */
static int answer_rows(const struct buf *b)
{
    const char *p = strstr(b->data, "\"rows\":[");
    cr_assert_not_null(p, "%.*s", (int)b->len, b->data);
    int n = 0;
    for (p += 8; *p; p++)
        n += p[0] == '[';
    return n;
}

Test(engine_groups, a_series_longer_than_the_limit_is_answered)
{
    char dir[64];
    struct engine *e = rides_engine(dir);
    struct ask_stats stats = {0};
    struct ask_request req = {
        .ask = "SELECT bucket, zone, n, median FROM rides GROUP BY bucket, zone",
        .stats = &stats,
    };
    struct buf out = {0};
    struct ask_error aerr = {0};
    int rc = engine_ask(e, &req, &out, &aerr);
    cr_assert_eq(rc, 0, "%s %s (status %d)", aerr.code, aerr.message, aerr.status);
    cr_assert_eq(answer_rows(&out), NRIDES);
    cr_assert_gt(stats.map_emptied, 0, "the map forgot settled groups");
    /* The first and the last hour, each its ride's. */
    cr_assert(strstr(out.data, "[\"2024-01-01T00:00:00+00:00\",1000,1,\"1.00\"]") != NULL, "%.160s",
              out.data);
    cr_assert(strstr(out.data, "[\"2025-01-09T23:00:00+00:00\",9999,1,\"1.04\"]") != NULL,
              "%s", out.data + out.len - 200);
    buf_free(&out);
    engine_close(e);
    fixture_remove(dir);
}

Test(engine_groups, groups_held_to_the_end_past_the_limit_are_refused)
{
    char dir[64];
    struct engine *e = rides_engine(dir);
    struct ask_request req = {.ask = "SELECT zone, n FROM rides GROUP BY zone"};
    struct buf out = {0};
    struct ask_error aerr = {0};
    cr_assert_eq(engine_ask(e, &req, &out, &aerr), -1);
    cr_assert_eq(aerr.status, 422);
    cr_assert_str_eq(aerr.code, "too_many_groups");
    cr_assert(strstr(aerr.message, "6000") != NULL, "%s", aerr.message);
    buf_free(&out);
    /* Within the limit, the same ask answers. */
    req.ask = "SELECT zone, n FROM rides WHERE zone < 6000 GROUP BY zone";
    cr_assert_eq(engine_ask(e, &req, &out, &aerr), 0, "%s %s", aerr.code, aerr.message);
    cr_assert_eq(answer_rows(&out), 5000);
    buf_free(&out);
    engine_close(e);
    fixture_remove(dir);
}

/* The zone of row r of the rides in the top-rows ask below, in its order:
 * median fare (100 + i % 7 cents) descending among those under 1.06, then
 * kind ("k" + i % 5) descending, then bucket (i) ascending. */
static int cmp_top_ride(const void *pa, const void *pb)
{
    int a = *(const int *)pa, b = *(const int *)pb;
    if (a % 7 != b % 7)
        return b % 7 - a % 7;
    if (a % 5 != b % 5)
        return b % 5 - a % 5;
    return a - b;
}

/* An ask with LIMIT over a series keeps its top rows as the bins settle
 * and lets the others go (answer.c, "Top rows kept while the scan goes"):
 * it holds a few rows' memory, not the series', and answers the rows the
 * whole series ordered would, ties broken by a text key compared by its
 * text and then by bucket. */
Test(engine_groups, the_top_rows_of_a_series_hold_their_rows_not_the_series)
{
    char dir[64];
    struct engine *e = rides_engine(dir);
    struct ask_stats whole = {0}, top = {0};
    struct buf out = {0};
    struct ask_error aerr = {0};
    struct ask_request req = {
        .ask = "SELECT bucket, kind, zone, n, median FROM rides GROUP BY bucket, kind, zone",
        .stats = &whole,
    };
    cr_assert_eq(engine_ask(e, &req, &out, &aerr), 0, "%s %s", aerr.code, aerr.message);
    cr_assert_eq(answer_rows(&out), NRIDES);
    out.len = 0;
    req = (struct ask_request){
        .ask = "SELECT bucket, kind, zone, n, median FROM rides GROUP BY bucket, kind, zone "
               "HAVING median < 1.06 ORDER BY median DESC, kind DESC LIMIT 6 OFFSET 2",
        .stats = &top,
    };
    cr_assert_eq(engine_ask(e, &req, &out, &aerr), 0, "%s %s", aerr.code, aerr.message);
    cr_assert_eq(answer_rows(&out), 6, "%s", out.data);
    static int order[NRIDES];
    int n = 0;
    for (int i = 0; i < NRIDES; i++)
        if (i % 7 != 6)
            order[n++] = i;
    qsort(order, (size_t)n, sizeof *order, cmp_top_ride);
    const char *at = out.data;
    for (int r = 2; r < 8; r++) {
        char row[64];
        snprintf(row, sizeof row, "\"k%d\",%d,1,\"1.%02d\"]", order[r] % 5, 1000 + order[r],
                 order[r] % 7);
        const char *found = strstr(at, row);
        cr_assert_not_null(found, "row %d (%s) not after %.80s: %s", r, row, at, out.data);
        at = found + strlen(row);
    }
    cr_assert_lt(top.scratch_peak * 8, whole.scratch_peak,
                 "the top rows held %zu bytes, the whole series %zu", top.scratch_peak,
                 whole.scratch_peak);
    buf_free(&out);
    engine_close(e);
    fixture_remove(dir);
}
