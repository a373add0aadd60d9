/* test_ingest_pace.c -- when a follower's group of transactions may be
 * stored (ingest/pace.c pace_commit_due): the group commit's spacing
 * follows the last commit that stored transactions, so that a busy
 * stream's commits stay apart, and a commit of the position alone (an idle
 * follower's, every keepalive the server's WAL end moved) holds no
 * transaction back. */
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
    cr_assert_eq(pace_commit_due(&g, INTERVAL_US), now + GROUP_COMMIT_RATIO * 35000);
    g.last_commit_us = 100; /* a cheap commit: the interval itself */
    cr_assert_eq(pace_commit_due(&g, INTERVAL_US), now + INTERVAL_US);
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
    cr_assert_leq(pace_commit_due(&g, INTERVAL_US), now, "due %lld us from now",
                  (long long)(pace_commit_due(&g, INTERVAL_US) - now));
}
