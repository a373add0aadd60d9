/* test_ingest_pace.c -- when a follower's group of transactions may be
 * stored (ingest/pace.c pace_commit_due, pace_group_ready): the group
 * commit's spacing follows the last commit that stored transactions, so
 * that a busy stream's commits stay apart, and a commit of the position
 * alone (an idle follower's, every keepalive the server's WAL end moved)
 * holds no transaction back; behind a backlog groups grow, a group begun
 * behind one keeps its bounds (its cache budget too) until stored, and a
 * follower's first group there is not stored after one transaction, and
 * a backlog's tail joins the group that read most of it; an idle
 * stream's group is stored at once. */
#include "ingest/internal.h"
#include "store_fixture.h"

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

/* A follower's first group, no commit timed yet. Behind a backlog it was
 * due at once (spaced from no commit by no commit's time): each phase of
 * `taxi wal` stored its first transaction of 10,000 rows alone, in a
 * commit of 0.3 to 0.6 s. */
Test(ingest_pace, a_first_group_behind_a_backlog_grows)
{
    char dir[64];
    struct store *s = fixture_create(dir);
    uint64_t far = GROUP_COMMIT_BEHIND_BYTES + 1;
    struct pace_group g = {0};
    pace_applying(&g, s, far);
    g.dirty = true; /* its transaction applied whole */
    int64_t first = g.first_applied;
    cr_assert_gt(first, 0);
    cr_assert_eq(pace_commit_due(&g, INTERVAL_US, far), first + GROUP_COMMIT_BEHIND_MAX_US);
    cr_assert_not(pace_group_ready(&g, first + GROUP_COMMIT_MAX_US, INTERVAL_US, far, false));
    cr_assert(pace_group_ready(&g, first + GROUP_COMMIT_BEHIND_MAX_US, INTERVAL_US, far, false));
    /* Not behind: the first group is as fresh as the interval allows. */
    struct pace_group h = {0};
    pace_applying(&h, s, 0);
    h.dirty = true;
    cr_assert_eq(pace_commit_due(&h, INTERVAL_US, 0), h.first_applied + INTERVAL_US);
    store_close(s);
    fixture_remove(dir);
}

/* A backlog's last 16 MiB: the server no longer far ahead, the group the
 * backlog began was cut short at the usual spacing, and the WAL left made
 * a group and a commit of its own (by the debug log, 220,000 and then
 * 70,000 deleted trips, two commits of 0.55 s, where one group was due).
 * The group keeps the backlog's bounds until stored; the next one does
 * not. */
Test(ingest_pace, a_group_begun_behind_a_backlog_keeps_its_bounds)
{
    char dir[64];
    struct store *s = fixture_create(dir);
    const size_t loads = (size_t)96 << 20; /* a budget of its own: a load's, say */
    store_set_cache_bytes(s, loads);
    /* near: 8 MiB left of 16, too much for a tail (the next test) */
    uint64_t far = GROUP_COMMIT_BEHIND_BYTES + 1, near = 8 << 20;
    struct pace_group g = {.last_commit_us = 700000};
    g.last_store = g.last_batch_store = now_usec();
    int64_t from = g.last_batch_store;
    pace_applying(&g, s, far);
    g.dirty = true;
    g.batch.txns = 1;
    pace_applying(&g, s, near); /* its next transactions: the backlog's end */
    cr_assert_not(pace_group_ready(&g, from + GROUP_COMMIT_MAX_US, INTERVAL_US, near, false));
    cr_assert_eq(pace_group_rows(&g, near), GROUP_COMMIT_BEHIND_ROWS);
    cr_assert(pace_group_ready(&g, from + GROUP_COMMIT_RATIO * 700000, INTERVAL_US, near, false));
    cr_assert(pace_group_ready(&g, from, INTERVAL_US, near, true), "idle: stored at once");
    cr_assert_eq(store_cache_bytes(s), GROUP_COMMIT_BEHIND_CACHE_BYTES, "a backlog's cache budget");

    struct ingest_options opt = {0};
    struct store_position pos = {1000, 0, now_usec(), 0};
    char err[512];
    cr_assert_eq(pace_commit(&g, s, &pos, &opt, err, sizeof err), 0, "%s", err);
    pace_applying(&g, s, near); /* the next group: caught up */
    g.dirty = true;
    cr_assert_eq(pace_group_rows(&g, near), GROUP_COMMIT_ROWS);
    cr_assert_eq(store_cache_bytes(s), loads, "the budget it had, again");
    g.last_commit_us = 700000; /* as costly as the backlog's */
    int64_t due = pace_commit_due(&g, INTERVAL_US, near);
    cr_assert_eq(due, g.last_batch_store + GROUP_COMMIT_MAX_US, "due %lld us after the commit",
                 (long long)(due - g.last_batch_store));
    store_close(s);
    fixture_remove(dir);
}

/* A backlog a little longer than one group: the update phase of `taxi
 * wal` at full scale, read in 5.0 s as one group, in 6.8 to 7.3 s when
 * its apply passed the 4 s and its last rows made a group of their own.
 * The rest joins the group that read four times as much of it; a server
 * that writes as fast as the follower reads keeps the usual bounds. */
Test(ingest_pace, a_backlogs_tail_joins_the_group_that_read_most_of_it)
{
    char dir[64];
    struct store *s = fixture_create(dir);
    const uint64_t mib = 1 << 20;
    struct pace_group g = {0};
    pace_applying(&g, s, 900 * mib);
    g.dirty = true;
    int64_t first = g.first_applied, most = GROUP_COMMIT_BEHIND_MAX_US;
    /* Shrunk by 800 MiB, 100 left: the tail joins, far behind or not. */
    uint64_t lefts[] = {100 * mib, 8 * mib, 0};
    for (int i = 0; i < 3; i++) {
        cr_assert_eq(pace_commit_due(&g, INTERVAL_US, lefts[i]), first + most + most / 2);
        cr_assert_not(pace_group_ready(&g, first + most, INTERVAL_US, lefts[i], false));
        cr_assert(pace_group_ready(&g, first + most + most / 2, INTERVAL_US, lefts[i], false));
        cr_assert_eq(pace_group_rows(&g, lefts[i]), GROUP_COMMIT_BEHIND_ROWS * 3 / 2);
        cr_assert(pace_group_ready(&g, first, INTERVAL_US, lefts[i], true), "idle: at once");
    }
    /* Shrunk by 600 MiB, 300 left: a group of its own after all. */
    cr_assert_eq(pace_commit_due(&g, INTERVAL_US, 300 * mib), first + most);
    cr_assert(pace_group_ready(&g, first + most, INTERVAL_US, 300 * mib, false));
    cr_assert_eq(pace_group_rows(&g, 300 * mib), GROUP_COMMIT_BEHIND_ROWS);
    /* A server writing as fast as the follower reads, or faster. */
    struct pace_group h = {0};
    pace_applying(&h, s, 100 * mib);
    h.dirty = true;
    cr_assert_eq(pace_commit_due(&h, INTERVAL_US, 100 * mib), h.first_applied + most);
    cr_assert_eq(pace_commit_due(&h, INTERVAL_US, 120 * mib), h.first_applied + most);
    cr_assert_eq(pace_group_rows(&h, 120 * mib), GROUP_COMMIT_BEHIND_ROWS);
    /* Not a backlog's group: the usual bounds, whatever shrank. */
    struct pace_group k = {0};
    pace_applying(&k, s, 8 * mib);
    k.dirty = true;
    cr_assert_eq(pace_commit_due(&k, INTERVAL_US, 0), k.first_applied + INTERVAL_US);
    cr_assert_eq(pace_group_rows(&k, 0), GROUP_COMMIT_ROWS);
    /* A group begun caught up that a burst put far behind, read again:
     * a backlog's bounds, but no tail of one to wait for. */
    pace_applying(&k, s, 40 * mib);
    cr_assert_eq(pace_commit_due(&k, INTERVAL_US, 0), k.first_applied + most);
    cr_assert_eq(pace_group_rows(&k, 0), GROUP_COMMIT_BEHIND_ROWS);
    store_close(s);
    fixture_remove(dir);
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
    cr_assert_eq(pace_commit_due(&g, INTERVAL_US, far), now + GROUP_COMMIT_RATIO * 700000,
                 "a commit timed: spaced by its time");
    g.rows = GROUP_COMMIT_ROWS;
    cr_assert(pace_group_ready(&g, now, INTERVAL_US, near, false), "rows bound a group");
    cr_assert_not(pace_group_ready(&g, now, INTERVAL_US, far, false));
    g.rows = GROUP_COMMIT_BEHIND_ROWS;
    cr_assert(pace_group_ready(&g, now, INTERVAL_US, far, false));
}
