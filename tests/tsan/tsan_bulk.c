/* tsan_bulk.c -- the bulk load's threads under ThreadSanitizer: a store
 * loaded a day at a time (store_hand_off_cold drains the staged rows and
 * encodes cold segments on other threads while the next day is staged),
 * then its answers checked exactly against the rows put. Exit 0 when the
 * answers are right; TSan makes any race an exit of its own (66). */
#include "engine/engine.h"
#include "tests/tsan/tsan_store.h"

enum { NROWS = 60000 }; /* 26 days of rows 37 s apart: 25 hand-offs */

int main(void)
{
    char dir[64];
    tsan_make_store(dir, NROWS);
    struct store_error err;
    struct engine *e = engine_open(dir, NULL, &err);
    if (!e)
        tsan_fail("%s", err.message);
    struct ask_request req = {
        .ask = "SELECT n, v FROM t WHERE bucket >= '2024-01-01 00:00:00+00' AND "
               "bucket < '2024-03-01 00:00:00+00'"};
    struct buf out = {0};
    struct ask_error aerr;
    if (engine_ask(e, &req, &out, &aerr))
        tsan_fail("%s", aerr.message);
    long long sum = 0;
    for (int i = 0; i < NROWS; i++)
        sum += i % 1000;
    char want[96];
    snprintf(want, sizeof want, "\"rows\":[[%d,%lld]]", NROWS, sum);
    buf_put(&out, "", 1);
    if (!strstr(out.data, want))
        tsan_fail("%s, want %s", out.data, want);
    buf_free(&out);
    engine_close(e);
    tsan_remove_store(dir);
    printf("tsan_bulk: %d rows loaded in bulk mode, answers exact\n", NROWS);
    return 0;
}
