/* test_ingest_pace.c -- when a follower's group of transactions may be
 * stored (ingest/pace.c pace_commit_due, pace_group_ready): the group
 * commit's spacing follows the last commit that stored transactions, so
 * that a busy stream's commits stay apart, and a commit of the position
 * alone (an idle follower's, every keepalive the server's WAL end moved)
 * holds no transaction back; behind a backlog groups grow; an idle
 * stream's group is stored at once. */
#include "ingest/internal.h"

#include <criterion/criterion.h>

#define INTERVAL_US 5000 /* the default --commit-interval */

/* Under a backlog: the next group waits GROUP_COMMIT_RATIO times the last
 * commit's own time after it. */
Test(ingest_pace, a_group_waits_after_the_last_group_stored)
{
    struct pace_group g = {.last_commit_us = 35000};
    int64_t now = 1000000000;
    g.last_store = g.last_batch_store = now;
    cr_assert_eq(pace_commit_due(&g, INTERVAL_US, 0), now + GROUP_COMMIT_RATIO * 35000);
    g.last_commit_us = 100; /* a cheap commit: the interval itself */
    cr_assert_eq(pace_commit_due(&g, INTERVAL_US, 0), now + INTERVAL_US);
}

/* The warehouse's tasks of one day deleted, one transaction seconds after
 * the last: applied in 30 ms of ingest's CPU, it waited 95 ms more for a
 * store commit 10 ms before it that stored the position alone (the
 * server's WAL end had moved with the DELETE), spaced after it as if it
 * had been the last group's 35.6 ms commit (146.4 ms commit to applied). */
Test(ingest_pace, a_position_stored_alone_holds_no_transaction_back)
{
    struct pace_group g = {.last_commit_us = 35600};
    int64_t now = 1000000000;
    g.last_batch_store = now - 12000000; /* the last group, 12 s ago */
    g.last_store = now - 10000;          /* the position alone, 10 ms ago */
    cr_assert_leq(pace_commit_due(&g, INTERVAL_US, 0), now, "due %lld us from now",
                  (long long)(pace_commit_due(&g, INTERVAL_US, 0) - now));
}

/* A backlog's last transactions: applied, nothing else on its way. They
 * waited out the spacing (up to GROUP_COMMIT_MAX_US) behind nothing. */
Test(ingest_pace, an_idle_streams_group_is_stored_at_once)
{
    struct pace_group g = {.last_commit_us = 100000, .dirty = true, .rows = 70000};
    int64_t now = 1000000000;
    g.last_store = g.last_batch_store = now - 1000; /* inside its 400 ms spacing */
    cr_assert_not(pace_group_ready(&g, now, INTERVAL_US, 0, false), "transactions on their way: wait");
    cr_assert(pace_group_ready(&g, now, INTERVAL_US, 0, true), "idle: store now");
    g.dirty = false; /* nothing applied: nothing to store, idle or not */
    cr_assert_not(pace_group_ready(&g, now, INTERVAL_US, 0, true));
}

/* Behind a backlog a commit's per-segment part is paid less often: the
 * spacing may reach GROUP_COMMIT_BEHIND_MAX_US and a group
 * GROUP_COMMIT_BEHIND_ROWS; once caught up, the usual bounds again. */
Test(ingest_pace, behind_a_backlog_groups_grow)
{
    struct pace_group g = {.last_commit_us = 700000, .dirty = true};
    int64_t now = 1000000000;
    uint64_t far = GROUP_COMMIT_BEHIND_BYTES + 1, near = GROUP_COMMIT_BEHIND_BYTES;
    g.last_store = g.last_batch_store = now;
    cr_assert_eq(pace_group_interval(INTERVAL_US, g.last_commit_us, near), GROUP_COMMIT_MAX_US);
    cr_assert_eq(pace_group_interval(INTERVAL_US, g.last_commit_us, far),
                 GROUP_COMMIT_RATIO * 700000);
    cr_assert_eq(pace_group_interval(INTERVAL_US, 5000000, far), GROUP_COMMIT_BEHIND_MAX_US);
    int64_t at = now + GROUP_COMMIT_MAX_US;
    cr_assert(pace_group_ready(&g, at, INTERVAL_US, near, false));
    cr_assert_not(pace_group_ready(&g, at, INTERVAL_US, far, false));
    g.rows = GROUP_COMMIT_ROWS;
    cr_assert(pace_group_ready(&g, now, INTERVAL_US, near, false), "rows bound a group");
    cr_assert_not(pace_group_ready(&g, now, INTERVAL_US, far, false));
    g.rows = GROUP_COMMIT_BEHIND_ROWS;
    cr_assert(pace_group_ready(&g, now, INTERVAL_US, far, false));
}
