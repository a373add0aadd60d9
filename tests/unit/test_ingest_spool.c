/* test_ingest_spool.c -- the spool (ingest/spool.c) against a list of the
 * messages appended: every message comes back once, in order, byte for
 * byte, whether it stayed in memory, went to the file with a memory part
 * or went there alone (larger than the memory part); across replays, more
 * appends and resets; a callback's non-zero return stops the replay; a
 * file cut short is an error, not a short replay. */
#include "ingest/spool.h"

#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static uint64_t rng_state;

static uint32_t rnd(uint32_t n)
{
    rng_state = rng_state * 6364136223846793005ULL + 1442695040888963407ULL;
    return (uint32_t)((rng_state >> 33) % n);
}

struct expect {
    uint8_t **msgs;
    size_t *lens;
    size_t n, next;
    size_t stop_at; /* return 7 at this message; SIZE_MAX for never */
};

static int check_msg(void *ctx, const uint8_t *msg, size_t len)
{
    struct expect *e = ctx;
    cr_assert_lt(e->next, e->n, "more messages than appended");
    cr_assert_eq(len, e->lens[e->next], "message %zu: %zu bytes, want %zu", e->next, len,
                 e->lens[e->next]);
    cr_assert_eq(memcmp(msg, e->msgs[e->next], len), 0, "message %zu differs", e->next);
    return e->next++ == e->stop_at ? 7 : 0;
}

/* Appends n random messages of up to max bytes (each byte derived from the
 * message's number and offset), remembering them. */
static void append_some(struct spool *s, struct expect *e, size_t n, uint32_t max)
{
    e->msgs = realloc(e->msgs, sizeof *e->msgs * (e->n + n));
    e->lens = realloc(e->lens, sizeof *e->lens * (e->n + n));
    cr_assert(e->msgs && e->lens);
    for (size_t i = 0; i < n; i++) {
        size_t len = rnd(8) == 0 ? 0 : rnd(max + 1);
        uint8_t *m = malloc(len + 1);
        cr_assert_not_null(m);
        for (size_t k = 0; k < len; k++)
            m[k] = (uint8_t)(e->n * 31 + k * 7 + rnd(3));
        char err[200];
        cr_assert_eq(spool_append(s, m, len, err, sizeof err), 0, "%s", err);
        e->msgs[e->n] = m;
        e->lens[e->n++] = len;
    }
}

static void replay_all(struct spool *s, struct expect *e)
{
    char err[200];
    e->next = 0;
    e->stop_at = SIZE_MAX;
    cr_assert_eq(spool_replay(s, check_msg, e, err, sizeof err), 0, "%s", err);
    cr_assert_eq(e->next, e->n, "replayed %zu of %zu messages", e->next, e->n);
}

static void forget(struct expect *e)
{
    for (size_t i = 0; i < e->n; i++)
        free(e->msgs[i]);
    free(e->msgs);
    free(e->lens);
    memset(e, 0, sizeof *e);
}

Test(spool, messages_come_back_in_order_through_memory_and_file)
{
    rng_state = 1;
    /* Memory parts of 1 KiB, 64 KiB and the default; messages up to 3x the
     * part, so some go to the file alone. */
    size_t parts[] = {1024, 64 << 10, 0};
    for (size_t p = 0; p < 3; p++) {
        struct spool s = {.memory_bytes = parts[p]};
        struct expect e = {0};
        uint32_t max = parts[p] ? (uint32_t)parts[p] * 3 : 300000;
        append_some(&s, &e, 400, max);
        cr_assert_eq(s.count, 400);
        uint64_t bytes = 0;
        for (size_t i = 0; i < e.n; i++)
            bytes += 4 + e.lens[i];
        cr_assert_eq(spool_bytes(&s), bytes);
        if (parts[p])
            cr_assert_not_null(s.file, "a spool past its memory part has a file");
        replay_all(&s, &e);
        /* Appending after a replay continues the same sequence. */
        append_some(&s, &e, 100, max);
        replay_all(&s, &e);
        forget(&e);
        /* A reset spool starts over. */
        spool_reset(&s);
        cr_assert_eq(spool_bytes(&s), 0);
        append_some(&s, &e, 50, max);
        replay_all(&s, &e);
        forget(&e);
        spool_free(&s);
    }
}

Test(spool, a_non_zero_return_stops_the_replay)
{
    rng_state = 2;
    struct spool s = {.memory_bytes = 512};
    struct expect e = {0};
    append_some(&s, &e, 200, 300);
    char err[200];
    size_t stops[] = {0, 3, 150, 199}; /* in the file and in the memory part */
    for (size_t i = 0; i < 4; i++) {
        e.next = 0;
        e.stop_at = stops[i];
        cr_assert_eq(spool_replay(&s, check_msg, &e, err, sizeof err), 7);
        cr_assert_eq(e.next, stops[i] + 1);
    }
    forget(&e);
    spool_free(&s);
}

Test(spool, a_cut_file_is_an_error)
{
    rng_state = 3;
    struct spool s = {.memory_bytes = 256};
    struct expect e = {0};
    append_some(&s, &e, 100, 200);
    cr_assert_not_null(s.file);
    cr_assert_eq(ftruncate(fileno(s.file), (off_t)(s.file_bytes - 3)), 0);
    e.stop_at = SIZE_MAX;
    char err[200] = "";
    cr_assert_eq(spool_replay(&s, check_msg, &e, err, sizeof err), -1);
    cr_assert_str_eq(err, "spool: the temporary file is shorter than what was written to it");
    /* The file as long as counted, but its last message cut. */
    s.file_bytes -= 3;
    e.next = 0;
    cr_assert_eq(spool_replay(&s, check_msg, &e, err, sizeof err), -1);
    cr_assert_str_eq(err, "spool: the temporary file ends inside a message");
    forget(&e);
    spool_free(&s);
}

/* The file goes where TMPDIR says (tmpfile(3) alone would put it in /tmp
 * whatever TMPDIR is), unlinked; a TMPDIR that cannot take it is an error
 * that names it, and the messages in memory are still there. */
Test(spool, the_file_is_made_in_tmpdir)
{
    char dir[] = "/tmp/straum-spool-test-XXXXXX";
    cr_assert_not_null(mkdtemp(dir));
    cr_assert_eq(setenv("TMPDIR", dir, 1), 0);
    struct spool s = {.memory_bytes = 64};
    struct expect e = {0};
    rng_state = 3;
    append_some(&s, &e, 40, 30);
    cr_assert_not_null(s.file, "40 messages overflow a 64-byte memory part");
    char fd_path[64], target[4096];
    snprintf(fd_path, sizeof fd_path, "/proc/self/fd/%d", fileno(s.file));
    ssize_t n = readlink(fd_path, target, sizeof target - 1);
    cr_assert_gt(n, 0);
    target[n] = '\0';
    cr_assert(strncmp(target, dir, strlen(dir)) == 0 && strstr(target, "(deleted)"),
              "the spool file is %s, not an unlinked file in %s", target, dir);
    replay_all(&s, &e);
    spool_free(&s);
    forget(&e);
    cr_assert_eq(rmdir(dir), 0, "nothing is left in TMPDIR");

    cr_assert_eq(setenv("TMPDIR", "/nonexistent/straum", 1), 0);
    struct spool t = {.memory_bytes = 64};
    uint8_t msg[40] = {1, 2, 3};
    char err[300];
    cr_assert_eq(spool_append(&t, msg, sizeof msg, err, sizeof err), 0, "%s", err);
    cr_assert_eq(spool_append(&t, msg, sizeof msg, err, sizeof err), -1);
    cr_assert(strstr(err, "/nonexistent/straum") && strstr(err, "TMPDIR"), "%s", err);
    unsetenv("TMPDIR");
    spool_free(&t);
}

/* A follower keeps one dropped spool's memory for the next transaction:
 * the next spool takes the same memory, empty, and works as a new one; a
 * second spool dropped while one is kept is freed (ASan: no leak). */
Test(spool, memory_is_kept_for_the_next_transaction)
{
    struct spool spare = {0}, a = {0}, b = {0};
    struct expect e = {0};
    rng_state = 5;
    append_some(&a, &e, 50, 100);
    forget(&e);
    append_some(&b, &e, 5, 10);
    forget(&e);
    uint8_t *kept = a.mem;
    cr_assert_not_null(kept);
    spool_recycle(&a, &spare);
    cr_assert_eq(spare.mem, kept);
    cr_assert_null(a.mem);
    spool_recycle(&b, &spare); /* one is kept already: b's is freed */
    cr_assert_eq(spare.mem, kept);
    struct spool c = {0};
    spool_reuse(&c, &spare);
    cr_assert_eq(c.mem, kept);
    cr_assert_null(spare.mem);
    cr_assert_eq(spool_bytes(&c), 0, "the next spool starts empty");
    append_some(&c, &e, 20, 50);
    replay_all(&c, &e);
    forget(&e);
    spool_free(&c);
    spool_free(&spare);
}
