/* test_engine_cancel.c -- ask_request.cancel stops an ask inside its scan:
 * the flag is read where the time budget is (every 1024 cells, between
 * segments), so a set flag fails the ask with "cancelled" before a row or
 * even its columns reach the sink; unset, the same ask answers. Over the
 * small store the ThreadSanitizer programs share (tests/tsan/tsan_store.h:
 * 60,000 rows, some 10,000 hourly cells). */
#include "engine/engine.h"
#include "tests/tsan/tsan_store.h"

#include <criterion/criterion.h>

struct counting_sink {
    int columns, rows;
};

static int count_columns(void *ctx, const struct answer_column *cols, int ncols,
                         struct ask_error *err)
{
    (void)cols, (void)ncols, (void)err;
    ((struct counting_sink *)ctx)->columns++;
    return 0;
}

static int count_row(void *ctx, const struct answer_value *vals, int ncols, struct ask_error *err)
{
    (void)vals, (void)ncols, (void)err;
    ((struct counting_sink *)ctx)->rows++;
    return 0;
}

Test(engine_cancel, a_set_flag_stops_the_scan)
{
    char dir[64];
    tsan_make_store(dir, 60000);
    struct store_error serr;
    struct engine *e = engine_open(dir, NULL, &serr);
    cr_assert_not_null(e, "%s", serr.message);
    /* Grouped by bucket: the scan reads every hourly cell, not a rollup. */
    static const char *const asks[] = {
        "SELECT bucket, k, n, med FROM t WHERE bucket >= '2024-01-01 00:00:00+00' AND "
        "bucket < '2024-02-01 00:00:00+00' GROUP BY bucket, k",
        "SELECT k, n, v FROM t WHERE bucket >= '2024-01-01 00:00:00+00' AND "
        "bucket < '2024-02-01 00:00:00+00' GROUP BY k",
    };
    for (size_t i = 0; i < sizeof asks / sizeof *asks; i++) {
        atomic_bool cancel;
        atomic_init(&cancel, false);
        struct ask_request req = {.ask = asks[i], .cancel = &cancel};
        struct counting_sink counted = {0};
        struct answer_sink sink = {count_columns, count_row, &counted};
        struct ask_error err = {0};
        cr_assert_eq(engine_ask_rows(e, &req, NULL, &sink, &err), 0, "%s", err.message);
        cr_assert_gt(counted.rows, 0, "%s answers rows", asks[i]);

        atomic_store(&cancel, true);
        counted = (struct counting_sink){0};
        err = (struct ask_error){0};
        cr_assert_eq(engine_ask_rows(e, &req, NULL, &sink, &err), -1, "%s: not cancelled", asks[i]);
        cr_assert_str_eq(err.code, "cancelled", "%s: %s", asks[i], err.message);
        cr_assert_eq(counted.columns, 0, "the scan stopped before the answer began");
        cr_assert_eq(counted.rows, 0);
    }
    engine_close(e);
    tsan_remove_store(dir);
}
