/* test_serve_asks.c -- answers equal PostgreSQL's.
 *
 * The ten seed asks (tests/kit/taxi_asks.h) after the snapshot and after
 * streamed changes, with the session time zone America/New_York; then 500+
 * generated asks — random key subsets, conditions, ranges on hour edges
 * across day and week boundaries, grouping by bucket at each width, every
 * measure kind — each compared with the equivalent SQL over the raw tables;
 * and a view whose dim is joined INNER, across deleted, moved and restored
 * zone rows.
 * Rows compare as sets (tests/kit/answer.h): exact decimals digit for digit,
 * timestamps as instants (PostgreSQL and Straum write offsets differently). */
#include "tests/kit/answer.h"
#include "tests/kit/taxi_asks.h"
#include "engine/engine.h"
#include "tests/e2e/engine_check.h"
#include "tests/e2e/oracle.h"
#include "tests/e2e/taxi_db.h"

#include <criterion/criterion.h>
#include <inttypes.h>
#include <stdarg.h>
#include <time.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void check_seed_asks(struct engine *e, PGconn *pg, const char *when)
{
    oracle_exec(pg, "SET TIME ZONE 'America/New_York'");
    for (int i = 0; i < TAXI_NASKS; i++) {
        const struct taxi_ask *a = &TAXI_ASKS[i];
        int n = 0;
        while (a->params[n])
            n++;
        char what[256];
        snprintf(what, sizeof what, "%s, %s", a->name, when);
        check_ask(e, pg, a->postgres_sql, a->ask, n, a->params, "America/New_York", what);
    }
}

Test(serve_asks, the_ten_seed_asks_equal_postgresql, .timeout = 600)
{
    struct taxi_db db;
    taxi_db_create(&db, NULL, 4000);
    char log[8192];
    cr_assert_eq(taxi_ingest_once(&db, log, sizeof log), 0, "%s", log);
    struct store_error serr;
    struct engine *e = engine_open(db.store, NULL, &serr);
    cr_assert_not_null(e, "%s", serr.message);
    check_seed_asks(e, db.pg, "after the snapshot");
    engine_close(e);

    for (int i = 0; i < 8; i++)
        taxi_random_batch(&db);
    cr_assert_eq(taxi_ingest_once(&db, log, sizeof log), 0, "%s", log);
    e = engine_open(db.store, NULL, &serr);
    check_seed_asks(e, db.pg, "after streamed changes");
    engine_close(e);
    taxi_db_destroy(&db);
}

/* Bases that leave their folds to the idle compaction (SPEC.md "Delta
 * blocks"): with every base counted as large, commits keep deltas of up to
 * twice their base's cells. Serve folds them after the base; the answers
 * and every cell equal PostgreSQL's before and after the compaction. */
Test(serve_asks, deltas_past_their_base_equal_postgresql, .timeout = 600)
{
    setenv("STRAUM_STORE_INLINE_FOLD_BYTES", "0", 1); /* straum-ingest inherits it */
    struct taxi_db db;
    taxi_db_create(&db, NULL, 4000);
    char log[8192];
    cr_assert_eq(taxi_ingest_once(&db, log, sizeof log), 0, "%s", log);
    /* Every cell changes (its fares and tips), and new trips add cells. */
    taxi_exec(db.pg, "UPDATE yellow_trips SET fare_amount = fare_amount + 0.01, "
                     "tip_amount = tip_amount + 0.5");
    taxi_db_add_trips(&db, 2000, 0.5);
    taxi_exec(db.pg, "UPDATE yellow_trips SET fare_amount = fare_amount - 0.02 WHERE id %% 3 = 0");
    cr_assert_eq(taxi_ingest_once(&db, log, sizeof log), 0, "%s", log);
    struct oracle_deltas d = oracle_deltas(db.store);
    cr_assert_gt(d.past_base, 0, "no segment's deltas outgrew its base (%d delta blocks)",
                 d.blocks);
    cr_log_info("%d segments with deltas past their base", d.past_base);
    taxi_check(&db, "deltas past their base");
    struct store_error serr;
    struct engine *e = engine_open(db.store, NULL, &serr);
    cr_assert_not_null(e, "%s", serr.message);
    check_seed_asks(e, db.pg, "deltas past their base");
    engine_close(e);
    oracle_compact(db.store);
    cr_assert_eq(oracle_delta_blocks(db.store), 0);
    taxi_check(&db, "after compaction");
    taxi_db_destroy(&db);
    unsetenv("STRAUM_STORE_INLINE_FOLD_BYTES");
}

/* Rollup rows long enough to be lent whole (256 runs and more: a day's or
 * the span's fares) keep their codes encoded until the answer picks one
 * (serve's struct vc_lazy), RICE coded ones read alone from their anchor:
 * percentiles, min and max of such rows, one per group and merged across
 * buckets, after the snapshot and after streamed changes (whose delta
 * blocks make groups merge lazy lists). */
Test(serve_asks, picks_from_long_rollup_rows_equal_postgresql, .timeout = 600)
{
    static const char *const asks[][2] = {
        {"SELECT date_bin('1 day', bucket) AS b, median_fare, p99_fare FROM trips "
         "WHERE bucket >= $1 AND bucket < $2 GROUP BY b",
         "SELECT date_bin('1 day', pickup_at, timestamptz 'epoch'), "
         "percentile_disc(0.5) WITHIN GROUP (ORDER BY fare_amount), "
         "percentile_disc(0.99) WITHIN GROUP (ORDER BY fare_amount) FROM yellow_trips "
         "GROUP BY 1"},
        {"SELECT payment_type, median_fare, p99_fare FROM trips WHERE bucket >= $1 "
         "AND bucket < $2 GROUP BY payment_type",
         "SELECT payment_type, percentile_disc(0.5) WITHIN GROUP (ORDER BY fare_amount), "
         "percentile_disc(0.99) WITHIN GROUP (ORDER BY fare_amount) FROM yellow_trips "
         "GROUP BY 1"},
        {"SELECT median_fare, p99_fare FROM trips WHERE bucket >= $1 AND bucket < $2",
         "SELECT percentile_disc(0.5) WITHIN GROUP (ORDER BY fare_amount), "
         "percentile_disc(0.99) WITHIN GROUP (ORDER BY fare_amount) FROM yellow_trips"},
    };
    const char *params[] = {TAXI_ALL_FROM, TAXI_ALL_TO};
    struct taxi_db db;
    taxi_db_create(&db, NULL, 200000);
    char log[8192];
    for (int round = 0; round < 2; round++) {
        if (round)
            for (int i = 0; i < 4; i++)
                taxi_random_batch(&db);
        cr_assert_eq(taxi_ingest_once(&db, log, sizeof log), 0, "%s", log);
        struct store_error serr;
        struct engine *e = engine_open(db.store, NULL, &serr);
        cr_assert_not_null(e, "%s", serr.message);
        oracle_exec(db.pg, "SET TIME ZONE 'UTC'");
        for (size_t i = 0; i < sizeof asks / sizeof *asks; i++) {
            char what[256];
            snprintf(what, sizeof what, "ask %zu, round %d", i, round);
            check_ask(e, db.pg, asks[i][1], asks[i][0], 2, params, "UTC", what);
        }
        check_seed_asks(e, db.pg, round ? "long rows, after changes" : "long rows");
        engine_close(e);
    }
    taxi_db_destroy(&db);
}

/* Percentiles picked across rollup rows kept by position (SPEC.md §6.1):
 * a New York day's 24 hour rows, a bucket's one row, and bins of 1,100
 * hour rows, past the 1,024 sources a group keeps (the rest merge), after
 * the snapshot and after changes (delta rows take rows away). */
Test(serve_asks, percentiles_picked_across_rollup_rows_equal_postgresql, .timeout = 600)
{
    static const char *const asks[][2] = {
        {"SELECT date_trunc('day', bucket) AS d, median_fare, p99_fare FROM trips "
         "WHERE bucket >= $1 AND bucket < $2 GROUP BY d",
         "SELECT date_trunc('day', pickup_at), "
         "percentile_disc(0.5) WITHIN GROUP (ORDER BY fare_amount), "
         "percentile_disc(0.99) WITHIN GROUP (ORDER BY fare_amount) FROM yellow_trips "
         "GROUP BY 1"},
        {"SELECT date_bin('1100 hours', bucket) AS b, median_fare, p99_fare FROM trips "
         "WHERE bucket >= $1 AND bucket < $2 GROUP BY b",
         "SELECT date_bin('1100 hours', pickup_at, timestamptz 'epoch'), "
         "percentile_disc(0.5) WITHIN GROUP (ORDER BY fare_amount), "
         "percentile_disc(0.99) WITHIN GROUP (ORDER BY fare_amount) FROM yellow_trips "
         "GROUP BY 1"},
        {"SELECT bucket, payment_type, median_fare FROM trips "
         "WHERE bucket >= $1 AND bucket < $2 GROUP BY bucket, payment_type",
         "SELECT date_bin('1 hour', pickup_at, timestamptz 'epoch'), payment_type, "
         "percentile_disc(0.5) WITHIN GROUP (ORDER BY fare_amount) FROM yellow_trips "
         "GROUP BY 1, 2"},
        {"SELECT date_trunc('month', bucket) AS m, payment_type, p99_fare FROM trips "
         "WHERE bucket >= $1 AND bucket < $2 GROUP BY m, payment_type",
         "SELECT date_trunc('month', pickup_at), payment_type, "
         "percentile_disc(0.99) WITHIN GROUP (ORDER BY fare_amount) FROM yellow_trips "
         "GROUP BY 1, 2"},
    };
    const char *params[] = {TAXI_ALL_FROM, TAXI_ALL_TO};
    struct taxi_db db;
    taxi_db_create(&db, NULL, 200000);
    char log[8192];
    for (int round = 0; round < 2; round++) {
        if (round)
            for (int i = 0; i < 6; i++)
                taxi_random_batch(&db);
        cr_assert_eq(taxi_ingest_once(&db, log, sizeof log), 0, "%s", log);
        struct store_error serr;
        struct engine *e = engine_open(db.store, NULL, &serr);
        cr_assert_not_null(e, "%s", serr.message);
        oracle_exec(db.pg, "SET TIME ZONE 'America/New_York'");
        for (size_t i = 0; i < sizeof asks / sizeof *asks; i++) {
            char what[256];
            snprintf(what, sizeof what, "ask %zu, round %d", i, round);
            check_ask(e, db.pg, asks[i][1], asks[i][0], 2, params, "America/New_York", what);
        }
        engine_close(e);
    }
    taxi_db_destroy(&db);
}

/* Writes a views file beside db's store; its path into path. */
static void write_views(const struct taxi_db *db, const char *text, char *path, size_t cap)
{
    snprintf(path, cap, "%s.views.sql", db->store);
    FILE *f = fopen(path, "w");
    cr_assert_not_null(f);
    fputs(text, f);
    fclose(f);
}

/* Catches ingest up with those views and opens an engine on the store. */
static struct engine *ingest_and_open(struct taxi_db *db, const char *views)
{
    char log[8192];
    const char *extra[] = {"--views", views, NULL};
    cr_assert_eq(taxi_ingest_once_with(db, extra, log, sizeof log), 0, "%s", log);
    struct store_error serr;
    struct engine *e = engine_open(db->store, NULL, &serr);
    cr_assert_not_null(e, "%s", serr.message);
    oracle_exec(db->pg, "SET TIME ZONE 'UTC'");
    return e;
}

/* ingest_and_open, and beside it the cells-only reference on the same
 * store (*cells): the engine that never folds rollups, taken aside. */
static struct engine *ingest_and_open_both(struct taxi_db *db, const char *views,
                                           struct engine **cells)
{
    struct engine *e = ingest_and_open(db, views);
    struct engine_limits cells_only = {.cells_only = true};
    struct store_error serr;
    cr_assert_not_null(*cells = engine_open(db->store, &cells_only, &serr), "%s", serr.message);
    return e;
}

/* A percentile of a rollup row lent whole reads its rows only up to its
 * pick when the view counts the same column under the same filter (serve's
 * exec.rows_count): the group's total is then that count. Here with NULL
 * fares (count(*) would be the wrong total), a FILTER, percentile_cont's
 * two picks, a column with no such count and one read by min too (both
 * decode every row), per hour, per day, by payment type (merged lists) and
 * over everything, after the snapshot and after streamed changes. */
static const char PICK_VIEW[] =
    "CREATE VIEW fares WITH (buckets = '1 hour, 1 day') AS\n"
    "SELECT date_bin('1 hour', t.pickup_at, timestamptz 'epoch') AS bucket,\n"
    "       t.payment_type AS payment_type,\n"
    "       count(*) AS trips,\n"
    "       count(t.fare_amount) AS fares,\n"
    "       count(t.tip_amount) FILTER (WHERE t.payment_type = 1) AS card_tips,\n"
    "       percentile_cont(0.5) WITHIN GROUP (ORDER BY t.fare_amount) AS median_fare,\n"
    "       percentile_disc(0.9) WITHIN GROUP (ORDER BY t.fare_amount) AS p90_fare,\n"
    "       percentile_cont(0.25) WITHIN GROUP (ORDER BY t.tip_amount)\n"
    "           FILTER (WHERE t.payment_type = 1) AS card_tip_q1,\n"
    "       percentile_disc(0.5) WITHIN GROUP (ORDER BY t.total_amount) AS median_total,\n"
    "       min(t.trip_distance) AS shortest,\n"
    "       percentile_disc(0.75) WITHIN GROUP (ORDER BY t.trip_distance) AS q3_distance\n"
    "FROM public.yellow_trips AS t\n"
    "GROUP BY 1, 2;\n";

#define PICK_MEASURES_ASK "median_fare, p90_fare, card_tip_q1, median_total, shortest, q3_distance"
#define PICK_MEASURES_SQL                                                                  \
    "percentile_cont(0.5) WITHIN GROUP (ORDER BY fare_amount), "                           \
    "percentile_disc(0.9) WITHIN GROUP (ORDER BY fare_amount), "                           \
    "percentile_cont(0.25) WITHIN GROUP (ORDER BY tip_amount) FILTER (WHERE payment_type = 1), " \
    "percentile_disc(0.5) WITHIN GROUP (ORDER BY total_amount), min(trip_distance), "      \
    "percentile_disc(0.75) WITHIN GROUP (ORDER BY trip_distance)"

static void check_pick_asks(struct taxi_db *db, const char *views, const char *when)
{
    static const char *const asks[][2] = {
        {"SELECT bucket, " PICK_MEASURES_ASK " FROM fares WHERE bucket >= $1 AND bucket < $2 "
         "GROUP BY bucket",
         "SELECT date_bin('1 hour', pickup_at, timestamptz 'epoch'), " PICK_MEASURES_SQL
         " FROM yellow_trips GROUP BY 1"},
        {"SELECT date_bin('1 day', bucket) AS b, " PICK_MEASURES_ASK " FROM fares "
         "WHERE bucket >= $1 AND bucket < $2 GROUP BY b",
         "SELECT date_bin('1 day', pickup_at, timestamptz 'epoch'), " PICK_MEASURES_SQL
         " FROM yellow_trips GROUP BY 1"},
        {"SELECT date_bin('1 day', bucket) AS b, median_fare, card_tip_q1 FROM fares "
         "WHERE bucket >= $1 AND bucket < $2 GROUP BY b",
         "SELECT date_bin('1 day', pickup_at, timestamptz 'epoch'), "
         "percentile_cont(0.5) WITHIN GROUP (ORDER BY fare_amount), "
         "percentile_cont(0.25) WITHIN GROUP (ORDER BY tip_amount) FILTER (WHERE payment_type = 1) "
         "FROM yellow_trips GROUP BY 1"},
        {"SELECT payment_type, " PICK_MEASURES_ASK " FROM fares WHERE bucket >= $1 "
         "AND bucket < $2 GROUP BY payment_type",
         "SELECT payment_type, " PICK_MEASURES_SQL " FROM yellow_trips GROUP BY 1"},
        {"SELECT " PICK_MEASURES_ASK " FROM fares WHERE bucket >= $1 AND bucket < $2",
         "SELECT " PICK_MEASURES_SQL " FROM yellow_trips"},
    };
    struct engine *e = ingest_and_open(db, views);
    const char *params[] = {TAXI_ALL_FROM, TAXI_ALL_TO};
    for (size_t i = 0; i < sizeof asks / sizeof *asks; i++) {
        char what[256];
        snprintf(what, sizeof what, "%s, ask %zu", when, i);
        check_ask(e, db->pg, asks[i][1], asks[i][0], 2, params, "UTC", what);
    }
    engine_close(e);
}

Test(serve_asks, percentiles_that_decode_rows_up_to_their_pick_equal_postgresql, .timeout = 600)
{
    struct taxi_db db;
    taxi_db_create(&db, NULL, 200000);
    char views[96];
    write_views(&db, PICK_VIEW, views, sizeof views);
    taxi_exec(db.pg, "UPDATE yellow_trips SET fare_amount = NULL WHERE id %% 7 = 0");
    check_pick_asks(&db, views, "after the snapshot");
    for (int i = 0; i < 4; i++)
        taxi_random_batch(&db);
    check_pick_asks(&db, views, "after changes");
    remove(views);
    taxi_db_destroy(&db);
}

/* ---- Generated asks --------------------------------------------------------------- */

static uint64_t rng = 2024;

static int rnd(int n)
{
    rng = rng * 6364136223846793005ULL + 1442695040888963407ULL;
    return (int)((rng >> 33) % (uint64_t)n);
}

struct gen {
    char ask[2048], sql[4096];
    const char *params[16];
    char param_buf[16][64];
    int nparams;
    const char *tz;
};

/* Adds a parameter with this text; returns its reference ("$3"). */
static const char *param_str(struct gen *g, const char *text)
{
    static char ref[16];
    snprintf(g->param_buf[g->nparams], sizeof g->param_buf[0], "%s", text);
    g->params[g->nparams] = g->param_buf[g->nparams];
    g->nparams++;
    snprintf(ref, sizeof ref, "$%d", g->nparams);
    return ref;
}

static const char *param_int(struct gen *g, int value)
{
    char text[16];
    snprintf(text, sizeof text, "%d", value);
    return param_str(g, text);
}

static void cat(char *buf, size_t cap, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void cat(char *buf, size_t cap, const char *fmt, ...)
{
    size_t n = strlen(buf);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf + n, cap - n, fmt, ap);
    va_end(ap);
}

/* An ask over trips or dropoffs and the SQL that means the same. */
static void generate(struct gen *g)
{
    memset(g, 0, sizeof *g);
    bool trips = rnd(3) != 0;
    const char *view = trips ? "trips" : "dropoffs";
    const char *zone_col = trips ? "pu_location_id" : "do_location_id";
    static const char *const tzs[] = {"UTC", "America/New_York", "Europe/Amsterdam"};
    g->tz = tzs[rnd(3)];
    /* Range: whole hours between late December and July, in UTC; one ask
     * in six over everything (whole segment spans: the span rollups). */
    int start_h = rnd(24 * 200) - 24 * 10, len_h = 1 + rnd(rnd(2) ? 24 * 10 : 24 * 120);
    if (rnd(6) == 0) {
        start_h = -24 * 365 * 4;
        len_h = 24 * 365 * 8;
    }
    char from[64], to[64];
    int64_t base = 1704067200; /* 2024-01-01 UTC */
    for (int k = 0; k < 2; k++) {
        int64_t t = base + (int64_t)(k ? start_h + len_h : start_h) * 3600;
        time_t tt = (time_t)t;
        struct tm tm;
        gmtime_r(&tt, &tm);
        strftime(k ? to : from, 64, "%Y-%m-%d %H:%M:%S+00", &tm);
    }
    /* Grouping. */
    char sel_ask[512] = "", sel_sql[512] = "", grp_ask[256] = "", grp_sql[256] = "";
    static const char *const widths[] = {"1 hour", "1 day", "7 days"};
    int bucket = rnd(3) == 0 ? rnd(3) : -1;
    if (bucket >= 0) {
        cat(sel_ask, sizeof sel_ask, "date_bin('%s', bucket) AS b, ", widths[bucket]);
        cat(sel_sql, sizeof sel_sql, "date_bin('%s', t.pickup_at, timestamptz 'epoch'), ", widths[bucket]);
        cat(grp_ask, sizeof grp_ask, "b");
        cat(grp_sql, sizeof grp_sql, "1");
    }
    const char *keys_ask[] = {zone_col, "borough", "payment_type"};
    const char *keys_sql[] = {trips ? "t.pu_location_id" : "t.do_location_id", "z.borough", "t.payment_type"};
    int nkeys = trips ? 3 : 2, ngroups = bucket >= 0;
    for (int k = 0; k < nkeys; k++)
        if (rnd(3) == 0) {
            cat(sel_ask, sizeof sel_ask, "%s, ", keys_ask[k]);
            cat(sel_sql, sizeof sel_sql, "%s, ", keys_sql[k]);
            cat(grp_ask, sizeof grp_ask, "%s%s", grp_ask[0] ? ", " : "", keys_ask[k]);
            cat(grp_sql, sizeof grp_sql, "%s%d", grp_sql[0] ? ", " : "", ++ngroups);
        }
    /* Measures: at least one. */
    static const char *const tm_ask[] = {"trips", "fare", "avg_fare", "median_fare", "p99_fare"};
    static const char *const tm_sql[] = {"count(*)", "sum(t.fare_amount)", "avg(t.fare_amount)",
                                         "percentile_disc(0.5) WITHIN GROUP (ORDER BY t.fare_amount)",
                                         "percentile_disc(0.99) WITHIN GROUP (ORDER BY t.fare_amount)"};
    static const char *const dm_ask[] = {"trips", "tips", "avg_distance", "fare"};
    static const char *const dm_sql[] = {"count(*)", "sum(t.tip_amount)", "avg(t.trip_distance)",
                                         "sum(t.fare_amount)"};
    int nm = trips ? 5 : 4, first = rnd(nm);
    for (int m = 0; m < nm; m++)
        if (m == first || rnd(3) == 0) {
            cat(sel_ask, sizeof sel_ask, "%s, ", trips ? tm_ask[m] : dm_ask[m]);
            cat(sel_sql, sizeof sel_sql, "%s, ", trips ? tm_sql[m] : dm_sql[m]);
        }
    sel_ask[strlen(sel_ask) - 2] = '\0';
    sel_sql[strlen(sel_sql) - 2] = '\0';
    /* Range and conditions. */
    snprintf(g->ask, sizeof g->ask, "SELECT %s FROM %s WHERE bucket >= %s", sel_ask, view,
             param_str(g, from));
    cat(g->ask, sizeof g->ask, " AND bucket < %s", param_str(g, to));
    snprintf(g->sql, sizeof g->sql,
             "SELECT %s FROM yellow_trips t LEFT JOIN taxi_zones z ON z.location_id = %s "
             "WHERE t.pickup_at >= '%s' AND t.pickup_at < '%s'",
             sel_sql, keys_sql[0], from, to);
    static const char *const boroughs[] = {"Manhattan", "Queens", "Brooklyn", "Bronx", "Unknown", "Nowhere"};
    if (rnd(3) == 0) { /* a borough condition */
        switch (rnd(4)) {
        case 0: {
            int b = rnd(6);
            cat(g->ask, sizeof g->ask, " AND borough = %s", param_str(g, boroughs[b]));
            cat(g->sql, sizeof g->sql, " AND z.borough = '%s'", boroughs[b]);
            break;
        }
        case 1: {
            int a = rnd(6), b = rnd(6);
            cat(g->ask, sizeof g->ask, " AND borough IN ('%s', '%s')", boroughs[a], boroughs[b]);
            cat(g->sql, sizeof g->sql, " AND z.borough IN ('%s', '%s')", boroughs[a], boroughs[b]);
            break;
        }
        case 2:
            cat(g->ask, sizeof g->ask, " AND borough IS NULL");
            cat(g->sql, sizeof g->sql, " AND z.borough IS NULL");
            break;
        default:
            cat(g->ask, sizeof g->ask, " AND borough <> 'Manhattan'");
            cat(g->sql, sizeof g->sql, " AND z.borough <> 'Manhattan'");
            break;
        }
    }
    if (trips && rnd(3) == 0) { /* a payment type condition */
        int p = rnd(6), q = rnd(6);
        switch (rnd(4)) {
        case 0:
            cat(g->ask, sizeof g->ask, " AND payment_type = %s", param_int(g, p));
            cat(g->sql, sizeof g->sql, " AND t.payment_type = %d", p);
            break;
        case 1:
            cat(g->ask, sizeof g->ask, " AND payment_type IN (%d, %s)", p, param_int(g, q));
            cat(g->sql, sizeof g->sql, " AND t.payment_type IN (%d, %d)", p, q);
            break;
        case 2:
            cat(g->ask, sizeof g->ask, " AND payment_type NOT IN (%d)", p);
            cat(g->sql, sizeof g->sql, " AND t.payment_type NOT IN (%d)", p);
            break;
        default:
            cat(g->ask, sizeof g->ask, " AND payment_type IS NOT NULL");
            cat(g->sql, sizeof g->sql, " AND t.payment_type IS NOT NULL");
            break;
        }
    }
    if (rnd(4) == 0) {
        int z = 1 + rnd(265);
        cat(g->ask, sizeof g->ask, " AND %s <> %d", zone_col, z);
        cat(g->sql, sizeof g->sql, " AND %s <> %d", keys_sql[0], z);
    }
    if (grp_ask[0]) {
        cat(g->ask, sizeof g->ask, " GROUP BY %s", grp_ask);
        cat(g->sql, sizeof g->sql, " GROUP BY %s", grp_sql);
    }
}

Test(serve_asks, five_hundred_generated_asks_equal_postgresql, .timeout = 900)
{
    struct taxi_db db;
    taxi_db_create(&db, NULL, 5000);
    char log[8192];
    cr_assert_eq(taxi_ingest_once(&db, log, sizeof log), 0, "%s", log);
    for (int i = 0; i < 5; i++)
        taxi_random_batch(&db);
    cr_assert_eq(taxi_ingest_once(&db, log, sizeof log), 0, "%s", log);
    /* The batches went in as delta blocks (store.h): the asks below fold
     * them after their bases; the last ones run again once they are
     * compacted. */
    int deltas = oracle_delta_blocks(db.store);
    cr_assert_gt(deltas, 0, "the streamed batches left delta blocks to fold");
    cr_log_info("%d delta blocks to fold", deltas);
    struct store_error serr;
    struct engine *e = engine_open(db.store, NULL, &serr);
    cr_assert_not_null(e, "%s", serr.message);
    /* The same asks read from the cells only: rollups must change nothing,
     * byte for byte (the taxi views sum exact numerics only). */
    struct engine_limits cells = {.cells_only = true};
    struct engine *ce = engine_open(db.store, &cells, &serr);
    cr_assert_not_null(ce, "%s", serr.message);
    for (int i = 0; i < 520; i++) {
        struct gen g;
        generate(&g);
        char set_tz[80];
        snprintf(set_tz, sizeof set_tz, "SET TIME ZONE '%s'", g.tz);
        oracle_exec(db.pg, set_tz);
        struct answer want, got;
        pg_answer(db.pg, g.sql, &want);
        straum_answer(e, g.ask, g.nparams, g.params, g.tz, &got);
        char what[8192];
        snprintf(what, sizeof what, "ask %d (%s) %s [$1=%s $2=%s]\nSQL: %s", i, g.tz, g.ask,
                 g.params[0], g.params[1], g.sql);
        compare_answers(what, &want, &got);
        char *folded = straum_json(e, g.ask, g.nparams, g.params, g.tz);
        char *scanned = straum_json(ce, g.ask, g.nparams, g.params, g.tz);
        cr_assert_str_eq(folded, scanned, "%s", what);
        free(folded);
        free(scanned);
    }
    engine_close(ce);
    engine_close(e);
    oracle_compact(db.store);
    cr_assert_eq(oracle_delta_blocks(db.store), 0);
    cr_assert(!oracle_compare(db.pg, db.store, log, sizeof log), "after compaction: %s", log);
    e = engine_open(db.store, NULL, &serr);
    cr_assert_not_null(e, "%s", serr.message);
    check_seed_asks(e, db.pg, "after compaction");
    engine_close(e);
    taxi_db_destroy(&db);
}

/* ---- A span read whole less what lies outside the range ------------------------
 * The generated trips lie between January 1 and June 30, 2024, in one
 * 64-week span of the views' widest width. A range that holds most of
 * them but not all is read as the span's rows less a cover of the rest
 * (SPEC.md §6.1 "Plan"): each answer equals PostgreSQL's over the raw
 * rows and the cells-only reference's byte for byte, after the snapshot
 * and after streamed changes (delta blocks), and the ask's stats say
 * which ranges were read so; and so for calendar days and weeks in New
 * York, whose buckets are UTC days and weeks less the hours outside them.
 * Beside the benchmark's trips, a view of few
 * keys and a value count of few values, whose span rows keep their value
 * counts at this scale: min, max and distinct counts merge what is taken
 * away, percentiles alone collect it (exec.c take_runs). */

static const char SPAN_VIEW[] =
    "CREATE VIEW parties WITH (buckets = '1 hour, 1 day, 7 days') AS\n"
    "SELECT date_bin('1 hour', t.pickup_at, timestamptz 'epoch') AS bucket,\n"
    "       t.payment_type AS payment_type,\n"
    "       t.vendor_id AS vendor_id,\n"
    "       count(*) AS trips,\n"
    "       sum(t.fare_amount) AS fare,\n"
    "       count(t.passenger_count) AS parties,\n"
    "       min(t.passenger_count) AS fewest,\n"
    "       max(t.passenger_count) AS most,\n"
    "       count(DISTINCT t.passenger_count) AS sizes,\n"
    "       percentile_disc(0.5) WITHIN GROUP (ORDER BY t.passenger_count) AS median_party,\n"
    "       percentile_disc(0.9) WITHIN GROUP (ORDER BY t.passenger_count) AS p90_party\n"
    "FROM public.yellow_trips AS t\n"
    "GROUP BY 1, 2, 3;\n";

static const struct {
    const char *ask, *sql;
    bool edges; /* reads cells, or a key's value counts: takes away at the edges too */
} SPAN_ASKS[] = {
    {"SELECT trips, fare, avg_fare, median_fare, p99_fare FROM trips WHERE %s",
     "SELECT count(*), sum(t.fare_amount), avg(t.fare_amount), "
     "percentile_disc(0.5) WITHIN GROUP (ORDER BY t.fare_amount), "
     "percentile_disc(0.99) WITHIN GROUP (ORDER BY t.fare_amount) FROM yellow_trips t WHERE %s",
     false},
    {"SELECT trips, fare, fewest, most, sizes, median_party FROM parties WHERE %s",
     "SELECT count(*), sum(t.fare_amount), min(t.passenger_count), max(t.passenger_count), "
     "count(DISTINCT t.passenger_count), "
     "percentile_disc(0.5) WITHIN GROUP (ORDER BY t.passenger_count) FROM yellow_trips t "
     "WHERE %s", false},
    {"SELECT payment_type, trips, parties, median_party, p90_party FROM parties WHERE %s "
     "GROUP BY payment_type",
     "SELECT t.payment_type, count(*), count(t.passenger_count), "
     "percentile_disc(0.5) WITHIN GROUP (ORDER BY t.passenger_count), "
     "percentile_disc(0.9) WITHIN GROUP (ORDER BY t.passenger_count) FROM yellow_trips t "
     "WHERE %s GROUP BY 1", true},
    {"SELECT payment_type, vendor_id, trips, fare, most, sizes FROM parties WHERE %s "
     "GROUP BY payment_type, vendor_id",
     "SELECT t.payment_type, t.vendor_id, count(*), sum(t.fare_amount), max(t.passenger_count), "
     "count(DISTINCT t.passenger_count) FROM yellow_trips t WHERE %s GROUP BY 1, 2", true},
    {"SELECT vendor_id, trips, median_party FROM parties WHERE %s AND payment_type <> 2 "
     "GROUP BY vendor_id",
     "SELECT t.vendor_id, count(*), "
     "percentile_disc(0.5) WITHIN GROUP (ORDER BY t.passenger_count) FROM yellow_trips t "
     "WHERE %s AND t.payment_type <> 2 GROUP BY 1", true},
    /* a marginal of counts and sums: taken away at an edge where the key
     * has many values at hand (pickup zones, by borough), not a few */
    {"SELECT borough, trips, fare FROM trips WHERE %s GROUP BY borough",
     "SELECT z.borough, count(*), sum(t.fare_amount) FROM yellow_trips t "
     "LEFT JOIN taxi_zones z ON z.location_id = t.pu_location_id WHERE %s GROUP BY 1", true},
    {"SELECT payment_type, trips, fare FROM parties WHERE %s GROUP BY payment_type",
     "SELECT t.payment_type, count(*), sum(t.fare_amount) FROM yellow_trips t WHERE %s "
     "GROUP BY 1", false},
};

static const struct {
    const char *ask, *sql; /* the range, over the view and over the trips */
    int taken_away;        /* 1: a span less its outside; 2: so at an edge where
                              the ask's rows are costly (SPAN_ASKS.edges) */
} SPAN_RANGES[] = {
    /* both sides inside the rows: 13 hours and two and a half days outside */
    {"bucket >= '2024-01-01 13:00:00+00' AND bucket < '2024-06-28 07:00:00+00'",
     "t.pickup_at >= '2024-01-01 13:00:00+00' AND t.pickup_at < '2024-06-28 07:00:00+00'", 1},
    /* past the last row: that side opens, the other is taken away */
    {"bucket >= '2024-01-03 00:00:00+00' AND bucket < '2024-07-15 00:00:00+00'",
     "t.pickup_at >= '2024-01-03 00:00:00+00' AND t.pickup_at < '2024-07-15 00:00:00+00'", 1},
    /* one side open, off an hour's edge, a day of rows before it */
    {"bucket > '2024-01-02 04:30:00+00'", "t.pickup_at >= '2024-01-02 05:00:00+00'", 1},
    /* two whole weeks (Thursday to Thursday, as the views' weeks run) */
    {"bucket >= '2024-03-07 00:00:00+00' AND bucket < '2024-03-21 00:00:00+00'",
     "t.pickup_at >= '2024-03-07 00:00:00+00' AND t.pickup_at < '2024-03-21 00:00:00+00'",
     0},
    /* six days of a week at the start: the week less a day, where rows are costly */
    {"bucket >= '2024-03-01 00:00:00+00' AND bucket < '2024-03-21 00:00:00+00'",
     "t.pickup_at >= '2024-03-01 00:00:00+00' AND t.pickup_at < '2024-03-21 00:00:00+00'",
     2},
};

/* New York days and weeks: a day is a UTC day less the five (or four)
 * hours before it and plus those after it. */
static const struct {
    const char *ask, *sql;
} CALENDAR_ASKS[] = {
    {"SELECT date_trunc('day', bucket) AS day, borough, trips, median_fare FROM trips "
     "WHERE bucket >= '2024-03-01' AND bucket < '2024-03-15' GROUP BY day, borough",
     "SELECT date_trunc('day', t.pickup_at), z.borough, count(*), "
     "percentile_disc(0.5) WITHIN GROUP (ORDER BY t.fare_amount) FROM yellow_trips t "
     "LEFT JOIN taxi_zones z ON z.location_id = t.pu_location_id "
     "WHERE t.pickup_at >= '2024-03-01' AND t.pickup_at < '2024-03-15' GROUP BY 1, 2"},
    {"SELECT date_trunc('day', bucket) AS day, vendor_id, fewest, most, sizes, median_party "
     "FROM parties WHERE bucket >= '2024-03-01' AND bucket < '2024-03-15' "
     "GROUP BY day, vendor_id",
     "SELECT date_trunc('day', t.pickup_at), t.vendor_id, min(t.passenger_count), "
     "max(t.passenger_count), count(DISTINCT t.passenger_count), "
     "percentile_disc(0.5) WITHIN GROUP (ORDER BY t.passenger_count) FROM yellow_trips t "
     "WHERE t.pickup_at >= '2024-03-01' AND t.pickup_at < '2024-03-15' GROUP BY 1, 2"},
    {"SELECT date_trunc('day', bucket) AS day, payment_type, vendor_id, trips, fare "
     "FROM parties WHERE bucket >= '2024-03-01' AND bucket < '2024-03-15' "
     "GROUP BY day, payment_type, vendor_id",
     "SELECT date_trunc('day', t.pickup_at), t.payment_type, t.vendor_id, count(*), "
     "sum(t.fare_amount) FROM yellow_trips t "
     "WHERE t.pickup_at >= '2024-03-01' AND t.pickup_at < '2024-03-15' GROUP BY 1, 2, 3"},
    {"SELECT date_trunc('week', bucket) AS week, payment_type, trips, fare, p90_party "
     "FROM parties GROUP BY week, payment_type",
     "SELECT date_trunc('week', t.pickup_at), t.payment_type, count(*), sum(t.fare_amount), "
     "percentile_disc(0.9) WITHIN GROUP (ORDER BY t.passenger_count) FROM yellow_trips t "
     "GROUP BY 1, 2"},
    {"SELECT date_trunc('month', bucket) AS month, borough, trips FROM trips "
     "GROUP BY month, borough",
     "SELECT date_trunc('month', t.pickup_at), z.borough, count(*) FROM yellow_trips t "
     "LEFT JOIN taxi_zones z ON z.location_id = t.pu_location_id GROUP BY 1, 2"},
};

/* The ask's answer, with its stats, equal to PostgreSQL's and to the
 * cells-only reference's. */
static void check_span_ask(struct engine *e, struct engine *cells, PGconn *pg, const char *ask,
                           const char *sql, const char *tz, const char *what,
                           struct ask_stats *stats)
{
    struct ask_request req = {.ask = ask, .time_zone = tz, .stats = stats};
    struct buf out = {0};
    struct ask_error err;
    cr_assert_eq(engine_ask(e, &req, &out, &err), 0, "%s: %s", what, err.message);
    struct answer want, got;
    char why[256];
    cr_assert_eq(answer_from_json(out.data, &got, why, sizeof why), 0, "%s", why);
    pg_answer(pg, sql, &want);
    compare_answers(what, &want, &got);
    char *scanned = straum_json(cells, ask, 0, NULL, tz);
    cr_assert_str_eq(out.data, scanned, "%s", what);
    free(scanned);
    buf_free(&out);
}

static void check_span_asks(struct taxi_db *db, const char *views, const char *when)
{
    struct engine *cells, *e = ingest_and_open_both(db, views, &cells);
    for (size_t r = 0; r < sizeof SPAN_RANGES / sizeof *SPAN_RANGES; r++)
        for (size_t a = 0; a < sizeof SPAN_ASKS / sizeof *SPAN_ASKS; a++) {
            char ask[1024], sql[1024], what[2400];
            snprintf(ask, sizeof ask, SPAN_ASKS[a].ask, SPAN_RANGES[r].ask);
            snprintf(sql, sizeof sql, SPAN_ASKS[a].sql, SPAN_RANGES[r].sql);
            snprintf(what, sizeof what, "%s: %s\nSQL: %s", when, ask, sql);
            struct ask_stats stats = {0};
            check_span_ask(e, cells, db->pg, ask, sql, NULL, what, &stats);
            bool expected = SPAN_RANGES[r].taken_away == 2 ? SPAN_ASKS[a].edges
                                                           : SPAN_RANGES[r].taken_away == 1;
            cr_assert_eq(stats.pieces_taken_away > 0, expected,
                         "%s: %u of %u pieces taken away", what, stats.pieces_taken_away,
                         stats.pieces);
        }
    oracle_exec(db->pg, "SET TIME ZONE 'America/New_York'");
    for (size_t a = 0; a < sizeof CALENDAR_ASKS / sizeof *CALENDAR_ASKS; a++) {
        char what[2400];
        snprintf(what, sizeof what, "%s, New York: %s\nSQL: %s", when, CALENDAR_ASKS[a].ask,
                 CALENDAR_ASKS[a].sql);
        struct ask_stats stats = {0};
        check_span_ask(e, cells, db->pg, CALENDAR_ASKS[a].ask, CALENDAR_ASKS[a].sql,
                       "America/New_York", what, &stats);
        cr_assert_gt(stats.pieces_taken_away, 0, "%s: %u pieces, none taken away", what,
                     stats.pieces);
    }
    engine_close(cells);
    engine_close(e);
}

/* The benchmark's views and `parties` over that many trips: check after
 * the snapshot, then after six random batches streamed in (delta blocks
 * among what they leave). */
static void check_before_and_after_changes(int trips,
                                           void (*check)(struct taxi_db *db, const char *views,
                                                         const char *when))
{
    struct taxi_db db;
    taxi_db_create(&db, NULL, trips);
    char *taxi = taxi_read_source("bench/taxi_views.sql"), views[96], *both;
    cr_assert_geq(asprintf(&both, "%s\n%s", taxi, SPAN_VIEW), 0);
    write_views(&db, both, views, sizeof views);
    check(&db, views, "after the snapshot");
    for (int i = 0; i < 6; i++)
        taxi_random_batch(&db);
    const char *extra[] = {"--views", views, NULL};
    char log[8192];
    cr_assert_eq(taxi_ingest_once_with(&db, extra, log, sizeof log), 0, "%s", log);
    cr_assert_gt(oracle_delta_blocks(db.store), 0, "the changes left delta blocks to fold");
    check(&db, views, "after streamed changes");
    remove(views);
    free(both);
    free(taxi);
    taxi_db_destroy(&db);
}

Test(serve_asks, spans_read_whole_less_their_outside_equal_postgresql, .timeout = 600)
{
    check_before_and_after_changes(5000, check_span_asks);
}

/* A range far past the rows on both sides (a dashboard's "all time" as
 * 2000 to 2030) is covered by whole weeks and, at its two far edges, by
 * days and hours that hold no row: each width's walk skips from the one
 * edge to the other, so the ask reads a few segments, not every hour and
 * day segment between (some 70 and 25 here). */
static const struct {
    const char *ask, *sql;
} FAR_ASKS[] = {
    {"SELECT trips FROM trips WHERE bucket >= '2000-01-01' AND bucket < '2030-01-01'",
     "SELECT count(*) FROM yellow_trips"},
    {"SELECT payment_type, trips, fare, avg_fare FROM trips "
     "WHERE bucket >= '2000-01-01' AND bucket < '2030-01-01' GROUP BY payment_type",
     "SELECT payment_type, count(*), sum(fare_amount), avg(fare_amount) FROM yellow_trips "
     "GROUP BY 1"},
    {"SELECT borough, trips, median_fare FROM trips "
     "WHERE bucket >= '2000-01-01 00:30:00+00' AND bucket < '2030-01-01' GROUP BY borough",
     "SELECT z.borough, count(*), percentile_disc(0.5) WITHIN GROUP (ORDER BY t.fare_amount) "
     "FROM yellow_trips t LEFT JOIN taxi_zones z ON z.location_id = t.pu_location_id "
     "GROUP BY 1"},
    {"SELECT trips, tips FROM dropoffs WHERE bucket > '1999-12-31 23:00:00+00' "
     "AND bucket <= '2029-12-31 22:00:00+00'",
     "SELECT count(*), sum(tip_amount) FROM yellow_trips"},
};

static void check_far_asks(struct taxi_db *db, const char *views, const char *when)
{
    struct engine *cells, *e = ingest_and_open_both(db, views, &cells);
    for (size_t a = 0; a < sizeof FAR_ASKS / sizeof *FAR_ASKS; a++) {
        char what[2400];
        snprintf(what, sizeof what, "%s: %s\nSQL: %s", when, FAR_ASKS[a].ask, FAR_ASKS[a].sql);
        struct ask_stats stats = {0};
        check_span_ask(e, cells, db->pg, FAR_ASKS[a].ask, FAR_ASKS[a].sql, NULL, what, &stats);
        cr_assert_leq(stats.segments, 2 * stats.pieces, "%s: %u segments read for %u pieces",
                      what, stats.segments, stats.pieces);
    }
    engine_close(cells);
    engine_close(e);
}

Test(serve_asks, a_range_far_past_the_rows_reads_the_segments_its_pieces_reach, .timeout = 600)
{
    check_before_and_after_changes(5000, check_far_asks);
}

/* ---- Series that settle as they go ------------------------------------------------
 * An ask grouped by hour buckets or bins of hours reads one width in time
 * order, and settles each group once the scan has passed its bin (SPEC.md
 * §6.1 "Settling"): its value-count measures (percentiles, min, max,
 * distinct counts) finished and its value counts let go, and, once the
 * group map holds thousands of settled groups, the map emptied. Bucket by
 * bucket within a segment without deltas, segment by segment where delta
 * blocks follow the base. The answers must equal PostgreSQL's and the
 * cells-only reference's, after the snapshot and after streamed changes,
 * and the groups must have settled; an ask whose pieces lie in several
 * widths (day bins over a range with hours at its edges) must not settle. And an ask refused for its
 * scratch is refused, never answered with a NULL where a value is: under
 * every --ask-memory from nothing up to what it needs, the answer is
 * either 422 ask_memory or the whole one. */

static const struct {
    const char *ask, *sql;
    bool settles;
    bool forgets; /* so many groups that the map forgets settled ones
                     (SETTLED_MAP_FORGET) */
} SERIES_ASKS[] = {
    {"SELECT bucket, pu_location_id, payment_type, trips, fare, avg_fare FROM trips "
     "GROUP BY bucket, pu_location_id, payment_type",
     "SELECT date_bin('1 hour', t.pickup_at, timestamptz 'epoch'), t.pu_location_id, "
     "t.payment_type, count(*), sum(t.fare_amount), avg(t.fare_amount) FROM yellow_trips t "
     "GROUP BY 1, 2, 3", true, true},
    {"SELECT date_bin('3 hours', bucket) AS b, payment_type, trips, fare FROM trips "
     "GROUP BY b, payment_type",
     "SELECT date_bin('3 hours', t.pickup_at, timestamptz 'epoch'), t.payment_type, count(*), "
     "sum(t.fare_amount) FROM yellow_trips t GROUP BY 1, 2", true, true},
    {"SELECT bucket, payment_type, trips, median_fare, p99_fare FROM trips "
     "WHERE bucket >= '2024-01-01 05:00:00+00' AND bucket < '2024-06-20 00:00:00+00' "
     "GROUP BY bucket, payment_type",
     "SELECT date_bin('1 hour', t.pickup_at, timestamptz 'epoch'), t.payment_type, count(*), "
     "percentile_disc(0.5) WITHIN GROUP (ORDER BY t.fare_amount), "
     "percentile_disc(0.99) WITHIN GROUP (ORDER BY t.fare_amount) FROM yellow_trips t "
     "WHERE t.pickup_at >= '2024-01-01 05:00:00+00' AND t.pickup_at < '2024-06-20 00:00:00+00' "
     "GROUP BY 1, 2", true, false},
    {"SELECT date_bin('1 hour', bucket) AS b, payment_type, borough, trips, avg_fare, p99_fare "
     "FROM trips GROUP BY b, payment_type, borough",
     "SELECT date_bin('1 hour', t.pickup_at, timestamptz 'epoch'), t.payment_type, z.borough, "
     "count(*), avg(t.fare_amount), "
     "percentile_disc(0.99) WITHIN GROUP (ORDER BY t.fare_amount) FROM yellow_trips t "
     "LEFT JOIN taxi_zones z ON z.location_id = t.pu_location_id GROUP BY 1, 2, 3", true, false},
    {"SELECT date_bin('3 hours', bucket) AS b, vendor_id, fewest, most, sizes, median_party, "
     "p90_party FROM parties WHERE bucket >= '2024-02-01' AND bucket < '2024-05-01' "
     "GROUP BY b, vendor_id HAVING trips > 1",
     "SELECT date_bin('3 hours', t.pickup_at, timestamptz 'epoch'), t.vendor_id, "
     "min(t.passenger_count), max(t.passenger_count), count(DISTINCT t.passenger_count), "
     "percentile_disc(0.5) WITHIN GROUP (ORDER BY t.passenger_count), "
     "percentile_disc(0.9) WITHIN GROUP (ORDER BY t.passenger_count) FROM yellow_trips t "
     "WHERE t.pickup_at >= '2024-02-01' AND t.pickup_at < '2024-05-01' GROUP BY 1, 2 "
     "HAVING count(*) > 1", true, false},
    {"SELECT bucket, pu_location_id, median_fare FROM trips "
     "WHERE bucket >= '2024-03-01' AND bucket < '2024-04-01' AND payment_type IN (1, 2) "
     "GROUP BY bucket, pu_location_id ORDER BY median_fare DESC, bucket, pu_location_id LIMIT 20",
     "SELECT date_bin('1 hour', t.pickup_at, timestamptz 'epoch') AS b, t.pu_location_id, "
     "percentile_disc(0.5) WITHIN GROUP (ORDER BY t.fare_amount) AS m FROM yellow_trips t "
     "WHERE t.pickup_at >= '2024-03-01' AND t.pickup_at < '2024-04-01' "
     "AND t.payment_type IN (1, 2) GROUP BY 1, 2 ORDER BY m DESC, b, 2 LIMIT 20", true, false},
    /* day bins over a range with hours at its edges: two runs, no settling */
    {"SELECT date_bin('1 day', bucket) AS d, payment_type, median_fare FROM trips "
     "WHERE bucket >= '2024-03-01 06:00:00+00' AND bucket < '2024-03-20 00:00:00+00' "
     "GROUP BY d, payment_type",
     "SELECT date_bin('1 day', date_bin('1 hour', t.pickup_at, timestamptz 'epoch'), "
     "timestamptz 'epoch'), t.payment_type, "
     "percentile_disc(0.5) WITHIN GROUP (ORDER BY t.fare_amount) FROM yellow_trips t "
     "WHERE t.pickup_at >= '2024-03-01 06:00:00+00' AND t.pickup_at < '2024-03-20 00:00:00+00' "
     "GROUP BY 1, 2", false, false},
};

/* Under every --ask-memory up to twice what the ask takes (its peak is read
 * before its answer's text is written), in steps fine enough to fail each
 * of its allocations in turn somewhere, the answer is the whole one or a
 * 422 ask_memory. */
static void check_scratch_refusals(const char *store, const char *ask)
{
    struct store_error serr;
    struct engine *e = engine_open(store, NULL, &serr);
    cr_assert_not_null(e, "%s", serr.message);
    struct ask_stats stats = {0};
    struct ask_request req = {.ask = ask, .stats = &stats};
    struct buf whole = {0}, out = {0};
    struct ask_error err;
    cr_assert_eq(engine_ask(e, &req, &whole, &err), 0, "%s", err.message);
    engine_close(e);
    size_t peak = stats.scratch_peak, refused = 0, answered = 0;
    cr_assert_gt(peak, 0);
    for (size_t limit = 1024; limit <= 2 * peak; limit += limit < 65536 ? 512 : limit / 64) {
        struct engine_limits l = {.ask_memory = limit};
        cr_assert_not_null(e = engine_open(store, &l, &serr), "%s", serr.message);
        req.stats = NULL;
        out.len = 0;
        if (engine_ask(e, &req, &out, &err) == 0) {
            cr_assert_str_eq(out.data, whole.data, "--ask-memory %zu: a different answer", limit);
            answered++;
        } else {
            cr_assert_str_eq(err.code, "ask_memory", "--ask-memory %zu: %s %s", limit, err.code,
                             err.message);
            refused++;
        }
        engine_close(e);
    }
    cr_assert_gt(refused, 0, "no limit refused the ask (peak %zu)", peak);
    cr_assert_gt(answered, 0, "no limit answered the ask (peak %zu)", peak);
    buf_free(&whole);
    buf_free(&out);
}

static void check_series_asks(struct taxi_db *db, const char *views, const char *when)
{
    struct engine *cells, *e = ingest_and_open_both(db, views, &cells);
    for (size_t a = 0; a < sizeof SERIES_ASKS / sizeof *SERIES_ASKS; a++) {
        char what[2400];
        snprintf(what, sizeof what, "%s: %s\nSQL: %s", when, SERIES_ASKS[a].ask,
                 SERIES_ASKS[a].sql);
        struct ask_stats stats = {0};
        check_span_ask(e, cells, db->pg, SERIES_ASKS[a].ask, SERIES_ASKS[a].sql, NULL, what,
                       &stats);
        if (SERIES_ASKS[a].settles)
            cr_assert_gt(stats.groups_settled, 0, "%s: no group settled", what);
        else
            cr_assert_eq(stats.groups_settled, 0, "%s: %u groups settled", what,
                         stats.groups_settled);
        if (SERIES_ASKS[a].forgets)
            cr_assert_gt(stats.map_emptied, 0, "%s: the map never forgot settled groups", what);
    }
    engine_close(cells);
    engine_close(e);
    check_scratch_refusals(db->store, SERIES_ASKS[2].ask);
    check_scratch_refusals(db->store, "SELECT payment_type, fewest, most, sizes, median_party "
                                      "FROM parties GROUP BY payment_type");
}

Test(serve_asks, series_settle_as_they_go_and_equal_postgresql, .timeout = 600)
{
    /* 40,000 trips: three-hour bins by payment type are some 7,000 groups,
     * several cells each, so the map forgets settled groups in mid-scan. */
    check_before_and_after_changes(40000, check_series_asks);
}

/* ---- A dim joined INNER ----------------------------------------------------------
 * The benchmark's views join their zones LEFT, so this is where serve's
 * inner-join filtering meets PostgreSQL: a trip whose zone row is missing
 * is not in the view. Answers after the snapshot, after zone rows are
 * deleted (their trips leave the view), after a zone moves borough, and
 * after the deleted rows come back. */

static const char INNER_VIEW[] =
    "CREATE VIEW zoned WITH (buckets = '1 hour, 1 day') AS\n"
    "SELECT date_bin('1 hour', t.pickup_at, timestamptz 'epoch') AS bucket,\n"
    "       t.pu_location_id AS pu_location_id,\n"
    "       z.borough AS borough,\n"
    "       t.payment_type AS payment_type,\n"
    "       count(*) AS trips,\n"
    "       sum(t.fare_amount) AS fare,\n"
    "       percentile_disc(0.5) WITHIN GROUP (ORDER BY t.fare_amount) AS median_fare\n"
    "FROM public.yellow_trips AS t\n"
    "JOIN public.taxi_zones AS z ON z.location_id = t.pu_location_id\n"
    "GROUP BY 1, 2, 3, 4;\n";

#define INNER_FROM "FROM yellow_trips t JOIN taxi_zones z ON z.location_id = t.pu_location_id "

static const struct {
    const char *ask, *sql, *cond; /* cond: the third parameter, or NULL */
} INNER_ASKS[] = {
    {"SELECT trips, fare, median_fare FROM zoned WHERE bucket >= $1 AND bucket < $2",
     "SELECT count(*), sum(t.fare_amount), "
     "percentile_disc(0.5) WITHIN GROUP (ORDER BY t.fare_amount) " INNER_FROM, NULL},
    {"SELECT borough, trips, fare, median_fare FROM zoned WHERE bucket >= $1 AND bucket < $2 "
     "GROUP BY borough",
     "SELECT z.borough, count(*), sum(t.fare_amount), "
     "percentile_disc(0.5) WITHIN GROUP (ORDER BY t.fare_amount) " INNER_FROM
     "GROUP BY z.borough", NULL},
    {"SELECT trips, fare FROM zoned WHERE bucket >= $1 AND bucket < $2 AND borough = $3",
     "SELECT count(*), sum(t.fare_amount) " INNER_FROM "WHERE z.borough = 'Manhattan'",
     "Manhattan"},
    {"SELECT payment_type, trips FROM zoned WHERE bucket >= $1 AND bucket < $2 "
     "AND borough <> $3 GROUP BY payment_type",
     "SELECT t.payment_type, count(*) " INNER_FROM "WHERE z.borough <> 'Queens' "
     "GROUP BY t.payment_type", "Queens"},
    {"SELECT pu_location_id, trips FROM zoned WHERE bucket >= $1 AND bucket < $2 "
     "AND borough IN ('Brooklyn', 'Bronx') GROUP BY pu_location_id",
     "SELECT t.pu_location_id, count(*) " INNER_FROM
     "WHERE z.borough IN ('Brooklyn', 'Bronx') GROUP BY t.pu_location_id", NULL},
    {"SELECT trips FROM zoned WHERE bucket >= $1 AND bucket < $2 AND borough IS NOT NULL "
     "AND payment_type = 1",
     "SELECT count(*) " INNER_FROM "WHERE z.borough IS NOT NULL AND t.payment_type = 1", NULL},
};

static void check_inner_asks(struct taxi_db *db, const char *views, const char *when)
{
    struct engine *e = ingest_and_open(db, views);
    for (size_t i = 0; i < sizeof INNER_ASKS / sizeof INNER_ASKS[0]; i++) {
        const char *params[] = {TAXI_ALL_FROM, TAXI_ALL_TO, INNER_ASKS[i].cond};
        char what[1024];
        snprintf(what, sizeof what, "%s: %s", when, INNER_ASKS[i].ask);
        check_ask(e, db->pg, INNER_ASKS[i].sql, INNER_ASKS[i].ask, INNER_ASKS[i].cond ? 3 : 2,
                  params, "UTC", what);
    }
    engine_close(e);
}

Test(serve_asks, a_dim_joined_inner_equals_postgresql, .timeout = 600)
{
    struct taxi_db db;
    taxi_db_create(&db, NULL, 4000);
    char views[96];
    write_views(&db, INNER_VIEW, views, sizeof views);
    check_inner_asks(&db, views, "after the snapshot");
    /* Five Manhattan zones' rows go: their trips leave the view. */
    taxi_exec(db.pg, "CREATE TABLE gone AS SELECT * FROM taxi_zones WHERE location_id IN "
                     "(SELECT location_id FROM taxi_zones WHERE borough = 'Manhattan' "
                     "ORDER BY location_id LIMIT 5)");
    taxi_exec(db.pg, "DELETE FROM taxi_zones WHERE location_id IN (SELECT location_id FROM gone)");
    PGresult *res = PQexec(db.pg, "SELECT count(*) FROM yellow_trips WHERE pu_location_id IN "
                                  "(SELECT location_id FROM gone)");
    cr_assert_eq(PQresultStatus(res), PGRES_TUPLES_OK);
    cr_assert_gt(atol(PQgetvalue(res, 0, 0)), 0, "the deleted zones had trips to lose");
    PQclear(res);
    check_inner_asks(&db, views, "after deleting five zones");
    /* A zone moves borough. */
    taxi_exec(db.pg, "UPDATE taxi_zones SET borough = 'Queens' WHERE location_id = "
                     "(SELECT min(location_id) FROM taxi_zones WHERE borough = 'Brooklyn')");
    check_inner_asks(&db, views, "after a zone moved borough");
    taxi_exec(db.pg, "INSERT INTO taxi_zones SELECT * FROM gone");
    check_inner_asks(&db, views, "after the zones came back");
    taxi_exec(db.pg, "DROP TABLE gone");
    remove(views);
    taxi_db_destroy(&db);
}

/* ---- Dashboard time ---------------------------------------------------------------
 * Calendar buckets in a time zone (date_trunc), date_bin at multiples of the
 * finest width that are not declared widths and from other origins, and
 * ranges of any instants (off the buckets' edges, >, <=, BETWEEN, one side
 * or none), generated over the benchmark's trips (hour cells) and a view of
 * 15-minute cells, in zones with DST changes on either side of the year and
 * with half-hour offsets. The oracle is the same question over the raw
 * rows: date_trunc(unit, pickup_at) under the session TimeZone, the range
 * applied to the view's bucket as the view buckets the rows. Where the
 * cells cannot compose the calendar bucket (a bucket starts inside a
 * cell), the ask must be refused with not_composable, and exactly then. */

static const char QUARTERS_VIEW[] =
    "CREATE VIEW quarters WITH (buckets = '15 minutes, 1 hour, 1 day') AS\n"
    "SELECT date_bin('15 minutes', t.pickup_at, timestamptz 'epoch') AS bucket,\n"
    "       t.payment_type AS payment_type,\n"
    "       count(*) AS trips,\n"
    "       sum(t.fare_amount) AS fare,\n"
    "       avg(t.fare_amount) AS avg_fare,\n"
    "       percentile_disc(0.5) WITHIN GROUP (ORDER BY t.fare_amount) AS median_fare\n"
    "FROM public.yellow_trips AS t\n"
    "GROUP BY 1, 2;\n";

/* A view of day cells from UTC midnights: New York's days start inside them. */
static const char DAYS_VIEW[] =
    "CREATE VIEW days WITH (buckets = '1 day') AS\n"
    "SELECT date_bin('1 day', t.pickup_at, timestamptz 'epoch') AS bucket,\n"
    "       count(*) AS trips\n"
    "FROM public.yellow_trips AS t\n"
    "GROUP BY 1;\n";

struct time_ask {
    char ask[2048], sql[4096];
    const char *params[4];
    char param_buf[4][64];
    int nparams;
    const char *tz;
    bool calendar;                 /* date_trunc: composability is checked */
    char unit[16], zone[48];       /* zone: date_trunc's, "" for the session's */
    int64_t finest_us;
    char range_sql[512];           /* the range on the view's bucket, for the check */
};

/* A timestamp of 2024 as the ask and the SQL write it: off the edges (any
 * second) or on them, with an offset or in the ask's zone. */
static void random_instant(char *out, size_t len)
{
    int64_t t = 1704067200 + (int64_t)rnd(366) * 86400 + (int64_t)rnd(86400);
    if (rnd(3) == 0)
        t -= t % 3600; /* on an hour edge */
    else if (rnd(3) == 0)
        t -= t % 900;  /* on a quarter hour */
    time_t tt = (time_t)t;
    struct tm tm;
    gmtime_r(&tt, &tm);
    bool with_offset = rnd(2);
    strftime(out, len, with_offset ? "%Y-%m-%d %H:%M:%S+00" : "%Y-%m-%d %H:%M:%S", &tm);
}

static const char *tparam(struct time_ask *g, const char *text)
{
    static char ref[8][16];
    snprintf(g->param_buf[g->nparams], sizeof g->param_buf[0], "%s", text);
    g->params[g->nparams] = g->param_buf[g->nparams];
    g->nparams++;
    char *r = ref[g->nparams % 8];
    snprintf(r, sizeof ref[0], "$%d", g->nparams);
    return r;
}

static void generate_time_ask(struct time_ask *g)
{
    memset(g, 0, sizeof *g);
    bool quarters = rnd(3) == 0;
    const char *view = quarters ? "quarters" : "trips";
    const char *finest = quarters ? "15 minutes" : "1 hour";
    g->finest_us = quarters ? 900000000LL : 3600000000LL;
    static const char *const tzs[] = {"UTC", "America/New_York", "Europe/London", "Asia/Tokyo",
                                      "Australia/Lord_Howe", "Asia/Kolkata"};
    g->tz = tzs[rnd(6)];
    char sel_ask[512] = "", sel_sql[512] = "", grp_ask[128] = "", grp_sql[128] = "";
    char vb[160]; /* the view's bucket over the raw rows */
    snprintf(vb, sizeof vb, "date_bin('%s', t.pickup_at, timestamptz 'epoch')", finest);
    switch (rnd(5)) {
    case 0: break; /* not by time */
    case 1:
        cat(sel_ask, sizeof sel_ask, "bucket AS \"time\", ");
        cat(sel_sql, sizeof sel_sql, "%s, ", vb);
        snprintf(grp_ask, sizeof grp_ask, "1");
        snprintf(grp_sql, sizeof grp_sql, "1");
        break;
    case 2: { /* date_bin at a multiple, from another origin on an edge */
        static const char *const hour_bins[] = {"2 hours", "3 hours", "6 hours", "1 day",
                                                "2 days", "7 days", "10 days"};
        static const char *const quarter_bins[] = {"30 minutes", "45 minutes", "1 hour",
                                                   "90 minutes", "1 day"};
        const char *w = quarters ? quarter_bins[rnd(5)] : hour_bins[rnd(7)];
        char origin[80] = "";
        if (rnd(2))
            snprintf(origin, sizeof origin, ", '2024-01-0%d %02d:%s+00'", 1 + rnd(9), rnd(24),
                     quarters ? (rnd(2) ? "45" : "15") : "00");
        cat(sel_ask, sizeof sel_ask, "date_bin('%s', bucket%s) AS b, ", w, origin);
        cat(sel_sql, sizeof sel_sql, "date_bin('%s', %s, %s), ", w, vb,
            origin[0] ? origin + 2 : "timestamptz 'epoch'");
        snprintf(grp_ask, sizeof grp_ask, "b");
        snprintf(grp_sql, sizeof grp_sql, "1");
        break;
    }
    default: { /* date_trunc in the ask's zone or a named one */
        static const char *const units[] = {"hour", "day", "week", "month", "quarter", "year"};
        snprintf(g->unit, sizeof g->unit, "%s", units[rnd(6)]);
        if (rnd(3) == 0)
            snprintf(g->zone, sizeof g->zone, "%s", tzs[rnd(6)]);
        g->calendar = true;
        if (g->zone[0]) {
            cat(sel_ask, sizeof sel_ask, "date_trunc('%s', bucket, '%s') AS b, ", g->unit, g->zone);
            cat(sel_sql, sizeof sel_sql, "date_trunc('%s', t.pickup_at, '%s'), ", g->unit, g->zone);
        } else {
            cat(sel_ask, sizeof sel_ask, "date_trunc('%s', bucket) AS b, ", g->unit);
            cat(sel_sql, sizeof sel_sql, "date_trunc('%s', t.pickup_at), ", g->unit);
        }
        snprintf(grp_ask, sizeof grp_ask, "b");
        snprintf(grp_sql, sizeof grp_sql, "1");
        break;
    }
    }
    if (rnd(3) == 0) {
        cat(sel_ask, sizeof sel_ask, "payment_type, ");
        cat(sel_sql, sizeof sel_sql, "t.payment_type, ");
        cat(grp_ask, sizeof grp_ask, "%spayment_type", grp_ask[0] ? ", " : "");
        cat(grp_sql, sizeof grp_sql, "%s%d", grp_sql[0] ? ", " : "", grp_sql[0] ? 2 : 1);
    }
    static const char *const m_ask[] = {"trips", "fare", "avg_fare", "median_fare"};
    static const char *const m_sql[] = {"count(*)", "sum(t.fare_amount)", "avg(t.fare_amount)",
                                        "percentile_disc(0.5) WITHIN GROUP (ORDER BY t.fare_amount)"};
    int first = rnd(4);
    for (int m = 0; m < 4; m++)
        if (m == first || rnd(3) == 0) {
            cat(sel_ask, sizeof sel_ask, "%s, ", m_ask[m]);
            cat(sel_sql, sizeof sel_sql, "%s, ", m_sql[m]);
        }
    sel_ask[strlen(sel_ask) - 2] = '\0';
    sel_sql[strlen(sel_sql) - 2] = '\0';
    snprintf(g->ask, sizeof g->ask, "SELECT %s FROM %s", sel_ask, view);
    snprintf(g->sql, sizeof g->sql, "SELECT %s FROM yellow_trips t", sel_sql);
    /* The range: one of the forms a dashboard writes, or none. */
    char a[64], z[64];
    random_instant(a, sizeof a);
    random_instant(z, sizeof z);
    if (strcmp(a, z) > 0) {
        char t[64];
        snprintf(t, sizeof t, "%s", a);
        snprintf(a, sizeof a, "%s", z);
        snprintf(z, sizeof z, "%s", t);
    }
    static const char *const lower[] = {">=", ">"}, *const upper[] = {"<", "<="};
    const char *lo = lower[rnd(2)], *hi = upper[rnd(2)];
    char where_ask[256] = "", where_sql[512] = "";
    int form = rnd(7);
    if (form == 1 || form == 2) { /* one side */
        const char *op = form == 1 ? lo : hi, *v = form == 1 ? a : z;
        snprintf(where_ask, sizeof where_ask, " WHERE bucket %s %s", op, tparam(g, v));
        snprintf(where_sql, sizeof where_sql, "%s %s '%s'", vb, op, v);
    } else if (form == 3) { /* BETWEEN, as Grafana's macros write it */
        snprintf(where_ask, sizeof where_ask, " WHERE bucket BETWEEN %s", tparam(g, a));
        cat(where_ask, sizeof where_ask, " AND %s", tparam(g, z));
        snprintf(where_sql, sizeof where_sql, "%s BETWEEN '%s' AND '%s'", vb, a, z);
    } else if (form >= 4) {
        snprintf(where_ask, sizeof where_ask, " WHERE bucket %s %s", lo, tparam(g, a));
        cat(where_ask, sizeof where_ask, " AND bucket %s %s", hi, tparam(g, z));
        snprintf(where_sql, sizeof where_sql, "%s %s '%s' AND %s %s '%s'", vb, lo, a, vb, hi, z);
    } /* form 0: all time */
    cat(g->ask, sizeof g->ask, "%s", where_ask);
    if (where_sql[0])
        cat(g->sql, sizeof g->sql, " WHERE %s", where_sql);
    snprintf(g->range_sql, sizeof g->range_sql, "%s", where_sql);
    if (grp_ask[0]) {
        cat(g->ask, sizeof g->ask, " GROUP BY %s", grp_ask);
        cat(g->sql, sizeof g->sql, " GROUP BY %s", grp_sql);
    }
}

/* Whether the cells can compose the ask's calendar buckets, by PostgreSQL:
 * every finest bucket the range reads lies in one calendar bucket. A range
 * open on a side reaches as far as the view's segments of its widest width
 * do: here both views' (64 weeks, and 64 days) run from 2023-12-21 to
 * 2025-03-14, around the data. */
static bool composable(PGconn *pg, const struct time_ask *g)
{
    char sql[2048], trunc_a[256], trunc_b[256];
    const char *zone = g->zone;
    snprintf(trunc_a, sizeof trunc_a, "date_trunc('%s', b%s%s%s)", g->unit,
             zone[0] ? ", '" : "", zone, zone[0] ? "'" : "");
    snprintf(trunc_b, sizeof trunc_b, "date_trunc('%s', b + %lld * interval '1 microsecond' - "
             "interval '1 microsecond'%s%s%s)", g->unit, (long long)g->finest_us,
             zone[0] ? ", '" : "", zone, zone[0] ? "'" : "");
    char range[600];
    snprintf(range, sizeof range, "%s", g->range_sql);
    /* The range's condition is written on the raw rows' bucket expression:
     * here it applies to the bucket starts b. */
    char cond[700] = "";
    if (range[0]) {
        /* Replace each date_bin(...) of the raw rows by b. */
        const char *p = range;
        size_t n = 0;
        while (*p && n + 2 < sizeof cond) {
            if (!strncmp(p, "date_bin(", 9)) {
                const char *e = strstr(p, "'epoch')");
                p = e + 8;
                cond[n++] = 'b';
                continue;
            }
            cond[n++] = *p++;
        }
        cond[n] = '\0';
    }
    snprintf(sql, sizeof sql,
             "SELECT count(*) FROM generate_series(timestamptz '2023-12-21 00:00+00', "
             "timestamptz '2025-03-13 23:59+00', %lld * interval '1 microsecond') AS s(b) "
             "WHERE %s <> %s%s%s",
             (long long)g->finest_us, trunc_a, trunc_b, cond[0] ? " AND " : "", cond);
    PGresult *res = PQexec(pg, sql);
    cr_assert_eq(PQresultStatus(res), PGRES_TUPLES_OK, "%s\n%s", sql, PQerrorMessage(pg));
    bool ok = atoll(PQgetvalue(res, 0, 0)) == 0;
    PQclear(res);
    return ok;
}

Test(serve_asks, six_hundred_dashboard_time_asks_equal_postgresql, .timeout = 900)
{
    struct taxi_db db;
    taxi_db_create(&db, NULL, 6000);
    /* A fifth of the trips in August to January: the DST changes of the
     * autumn too (New York, London, Lord Howe's half hour). */
    taxi_exec(db.pg, "UPDATE yellow_trips SET pickup_at = pickup_at + interval '7 months', "
                     "dropoff_at = dropoff_at + interval '7 months' WHERE id %% 5 = 0");
    char *bench = NULL, views[96];
    {
        char path[512];
        snprintf(path, sizeof path, "%s/bench/taxi_views.sql", STRAUM_SOURCE_DIR);
        FILE *f = fopen(path, "r");
        cr_assert_not_null(f, "%s", path);
        bench = calloc(1, 1 << 16);
        size_t n = fread(bench, 1, (1 << 16) - 1, f);
        fclose(f);
        bench[n] = '\0';
        strcat(bench, "\n");
        strcat(bench, QUARTERS_VIEW);
        strcat(bench, DAYS_VIEW);
    }
    write_views(&db, bench, views, sizeof views);
    free(bench);
    struct engine *e = ingest_and_open(&db, views);
    int refused = 0, answered = 0;
    for (int round = 0; round < 2; round++) {
        if (round) { /* the same after streamed changes */
            engine_close(e);
            for (int i = 0; i < 3; i++)
                taxi_random_batch(&db);
            e = ingest_and_open(&db, views);
        }
        for (int i = 0; i < 320; i++) {
            struct time_ask g;
            generate_time_ask(&g);
            char set_tz[80];
            snprintf(set_tz, sizeof set_tz, "SET TIME ZONE '%s'", g.tz);
            oracle_exec(db.pg, set_tz);
            char what[8192];
            snprintf(what, sizeof what, "round %d, ask %d (%s) %s [$1=%s $2=%s]\nSQL: %s", round,
                     i, g.tz, g.ask, g.nparams > 0 ? g.params[0] : "",
                     g.nparams > 1 ? g.params[1] : "", g.sql);
            if (g.calendar && !composable(db.pg, &g)) {
                struct ask_value vals[4];
                for (int k = 0; k < g.nparams; k++)
                    vals[k] = (struct ask_value){ASK_STRING, false, g.params[k], strlen(g.params[k])};
                struct ask_request req = {.ask = g.ask, .params = vals, .nparams = g.nparams, .time_zone = g.tz};
                struct buf b = {0};
                struct ask_error err;
                cr_assert_eq(engine_ask(e, &req, &b, &err), -1, "answered, not refused: %s\n%s",
                             b.data, what);
                cr_assert_str_eq(err.code, "not_composable", "%s: %s\n%s", err.code, err.message,
                                 what);
                cr_assert_eq(err.status, 422, "%s", what);
                buf_free(&b);
                refused++;
                continue;
            }
            struct answer want, got;
            pg_answer(db.pg, g.sql, &want);
            straum_answer(e, g.ask, g.nparams, g.params, g.tz, &got);
            compare_answers(what, &want, &got);
            answered++;
        }
    }
    cr_log_info("%d dashboard-time asks answered, %d refused as not composable", answered, refused);

    /* The refusal names the reason and the finest width that would serve:
     * New York days over UTC day cells (an hour), Kolkata's over hours (30
     * minutes); UTC days over the same day cells compose. */
    static const struct {
        const char *ask, *tz, *serves;
    } refusals[] = {
        {"SELECT date_trunc('day', bucket) AS d, trips FROM days GROUP BY d", "America/New_York",
         "a view whose finest width divides 1 hour would"},
        {"SELECT date_trunc('day', bucket, 'Asia/Kolkata') AS d, trips FROM trips GROUP BY d",
         "UTC", "a view whose finest width divides 30 minutes would"},
    };
    for (size_t i = 0; i < sizeof refusals / sizeof refusals[0]; i++) {
        struct ask_request req = {.ask = refusals[i].ask, .time_zone = refusals[i].tz};
        struct buf b = {0};
        struct ask_error err;
        cr_assert_eq(engine_ask(e, &req, &b, &err), -1, "%s", b.data);
        cr_assert_str_eq(err.code, "not_composable");
        cr_assert(strstr(err.message, refusals[i].serves) && strstr(err.message, "date_trunc('day'"),
                  "%s", err.message);
        buf_free(&b);
    }
    oracle_exec(db.pg, "SET TIME ZONE 'UTC'");
    check_ask(e, db.pg,
              "SELECT date_trunc('day', t.pickup_at), count(*) FROM yellow_trips t GROUP BY 1",
              "SELECT date_trunc('day', bucket) AS d, trips FROM days GROUP BY d", 0, NULL, "UTC",
              "UTC days over day cells");
    cr_assert_gt(refused, 20, "too few refusals to test them");
    cr_assert_gt(answered, 400);
    engine_close(e);
    remove(views);
    taxi_db_destroy(&db);
}

/* ---- Conditions dashboards write --------------------------------------------------------
 * OR, NOT and parentheses over conditions on keys and dim columns, ranges
 * on integer and text keys (text in C collation, as Straum orders it),
 * BETWEEN, LIKE and ILIKE on a dim column (a zone picker's search box), and
 * HAVING on measures with a top-N ORDER BY and LIMIT, generated over the
 * benchmark's trips and compared with the same SQL over the raw rows;
 * NULL boroughs and payment types follow SQL's three-valued logic. */

struct cond_gen {
    char ask[4096], sql[8192];
};

static void cond_leaf(char *ask, size_t na, char *sql, size_t ns)
{
    static const char *const ops[] = {"=", "<>", "<", "<=", ">", ">="};
    static const char *const patterns[] = {"M%", "%n", "%ee%", "_ueens", "B%x", "%", "EWR",
                                           "Staten_Island", "%a%a%"};
    static const char *const texts[] = {"Bronx", "Brooklyn", "EWR", "M", "Manhattan", "Queens",
                                        "Staten Island", "Unknown", "Z"};
    int op = rnd(6);
    switch (rnd(9)) {
    case 0: {
        int v = rnd(7);
        snprintf(ask, na, "payment_type %s %d", ops[op], v);
        snprintf(sql, ns, "t.payment_type %s %d", ops[op], v);
        break;
    }
    case 1: {
        int a = rnd(6), b = a + rnd(4);
        const char *not = rnd(3) == 0 ? "NOT " : "";
        snprintf(ask, na, "payment_type %sBETWEEN %d AND %d", not, a, b);
        snprintf(sql, ns, "t.payment_type %sBETWEEN %d AND %d", not, a, b);
        break;
    }
    case 2: {
        int v = 1 + rnd(265);
        snprintf(ask, na, "pu_location_id %s %d", ops[op], v);
        snprintf(sql, ns, "t.pu_location_id %s %d", ops[op], v);
        break;
    }
    case 3: {
        const char *v = texts[rnd(9)];
        snprintf(ask, na, "borough %s '%s'", ops[op], v);
        snprintf(sql, ns, "z.borough COLLATE \"C\" %s '%s'", ops[op], v);
        break;
    }
    case 4: {
        const char *a = texts[rnd(9)], *b = texts[rnd(9)];
        snprintf(ask, na, "borough BETWEEN '%s' AND '%s'", a, b);
        snprintf(sql, ns, "z.borough COLLATE \"C\" BETWEEN '%s' AND '%s'", a, b);
        break;
    }
    case 5:
    case 6: {
        const char *p = patterns[rnd(9)], *like = rnd(3) ? "LIKE" : "ILIKE";
        const char *not = rnd(4) == 0 ? "NOT " : "";
        char lowered[32];
        snprintf(lowered, sizeof lowered, "%s", p);
        if (like[0] == 'I')
            for (char *c = lowered; *c; c++)
                *c = (char)(*c >= 'A' && *c <= 'Z' ? *c - 'A' + 'a' : *c);
        snprintf(ask, na, "borough %s%s '%s'", not, like, lowered);
        snprintf(sql, ns, "z.borough %s%s '%s'", not, like, lowered);
        break;
    }
    case 7:
        snprintf(ask, na, "borough IS %sNULL", rnd(2) ? "NOT " : "");
        snprintf(sql, ns, "z.borough IS %sNULL", strstr(ask, "NOT") ? "NOT " : "");
        break;
    default: {
        int a = rnd(6), b = rnd(6);
        const char *not = rnd(3) == 0 ? "NOT " : "";
        snprintf(ask, na, "payment_type %sIN (%d, %d)", not, a, b);
        snprintf(sql, ns, "t.payment_type %sIN (%d, %d)", not, a, b);
        break;
    }
    }
}

/* A random tree of conditions, depth at most d. */
static void cond_tree(int d, char *ask, size_t na, char *sql, size_t ns)
{
    if (d == 0 || rnd(3) == 0) {
        cond_leaf(ask, na, sql, ns);
        return;
    }
    char la[1024], ls[2048], ra[1024], rs[2048];
    cond_tree(d - 1, la, sizeof la, ls, sizeof ls);
    cond_tree(d - 1, ra, sizeof ra, rs, sizeof rs);
    ask[0] = sql[0] = '\0';
    switch (rnd(3)) {
    case 0:
        cat(ask, na, "(%s OR %s)", la, ra);
        cat(sql, ns, "(%s OR %s)", ls, rs);
        break;
    case 1:
        cat(ask, na, "%s AND %s", la, ra);
        cat(sql, ns, "(%s) AND (%s)", ls, rs);
        break;
    default:
        cat(ask, na, "NOT (%s)", la);
        cat(sql, ns, "NOT (%s)", ls);
        break;
    }
}

static void generate_cond_ask(struct cond_gen *g)
{
    memset(g, 0, sizeof *g);
    char sel_ask[256] = "", sel_sql[512] = "", grp_ask[64] = "", grp_sql[64] = "";
    char ord_ask[64] = "", ord_sql[128] = "";
    int ngroup = 0;
    bool by_borough = rnd(2), by_payment = rnd(2);
    if (by_borough) {
        cat(sel_ask, sizeof sel_ask, "borough, ");
        cat(sel_sql, sizeof sel_sql, "z.borough, ");
        cat(grp_ask, sizeof grp_ask, "borough");
        cat(grp_sql, sizeof grp_sql, "%d", ++ngroup);
        cat(ord_ask, sizeof ord_ask, ", borough");
        cat(ord_sql, sizeof ord_sql, ", z.borough COLLATE \"C\"");
    }
    if (by_payment) {
        cat(sel_ask, sizeof sel_ask, "payment_type, ");
        cat(sel_sql, sizeof sel_sql, "t.payment_type, ");
        cat(grp_ask, sizeof grp_ask, "%spayment_type", ngroup ? ", " : "");
        cat(grp_sql, sizeof grp_sql, "%s%d", ngroup ? ", " : "", ngroup + 1);
        ngroup++;
        cat(ord_ask, sizeof ord_ask, ", payment_type");
        cat(ord_sql, sizeof ord_sql, ", t.payment_type");
    }
    cat(sel_ask, sizeof sel_ask, "trips, fare, avg_fare, median_fare");
    cat(sel_sql, sizeof sel_sql, "count(*), sum(t.fare_amount), avg(t.fare_amount), "
                                 "percentile_disc(0.5) WITHIN GROUP (ORDER BY t.fare_amount)");
    char wa[2048], ws[4096];
    cond_tree(3, wa, sizeof wa, ws, sizeof ws);
    bool ranged = rnd(2);
    snprintf(g->ask, sizeof g->ask, "SELECT %s FROM trips WHERE %s%s", sel_ask, wa,
             ranged ? " AND bucket >= '2024-02-01' AND bucket < '2024-05-01'" : "");
    snprintf(g->sql, sizeof g->sql,
             "SELECT %s FROM yellow_trips t LEFT JOIN taxi_zones z ON z.location_id = "
             "t.pu_location_id WHERE (%s)%s",
             sel_sql, ws,
             ranged ? " AND date_bin('1 hour', t.pickup_at, timestamptz 'epoch') >= "
                      "'2024-02-01' AND date_bin('1 hour', t.pickup_at, timestamptz 'epoch') "
                      "< '2024-05-01'"
                    : "");
    if (!ngroup)
        return;
    cat(g->ask, sizeof g->ask, " GROUP BY %s", grp_ask);
    cat(g->sql, sizeof g->sql, " GROUP BY %s", grp_sql);
    if (rnd(2)) {
        static const char *const h_ask[] = {"trips > %d", "avg_fare < %d.5", "median_fare >= '%d'",
                                            "fare > %d00", "NOT trips <= %d",
                                            "(trips < %d OR avg_fare > 20)"};
#define MEDIAN_SQL "percentile_disc(0.5) WITHIN GROUP (ORDER BY t.fare_amount)"
        static const char *const h_sql[] = {"count(*) > %d", "avg(t.fare_amount) < %d.5",
                                            MEDIAN_SQL " >= %d",
                                            "sum(t.fare_amount) > %d00", "NOT count(*) <= %d",
                                            "(count(*) < %d OR avg(t.fare_amount) > 20)"};
        int h = rnd(6), v = 5 + rnd(40);
        char ha[128], hs[256];
        snprintf(ha, sizeof ha, h_ask[h], v);
        snprintf(hs, sizeof hs, h_sql[h], v);
        cat(g->ask, sizeof g->ask, " HAVING %s", ha);
        cat(g->sql, sizeof g->sql, " HAVING %s", hs);
    }
    if (rnd(2)) { /* top N, ties broken by the keys as Straum orders groups */
        int n = 1 + rnd(5);
        cat(g->ask, sizeof g->ask, " ORDER BY trips DESC%s LIMIT %d", ord_ask, n);
        cat(g->sql, sizeof g->sql, " ORDER BY count(*) DESC%s LIMIT %d", ord_sql, n);
    }
}

Test(serve_asks, six_hundred_condition_asks_equal_postgresql, .timeout = 900)
{
    struct taxi_db db;
    taxi_db_create(&db, NULL, 6000);
    char log[8192];
    cr_assert_eq(taxi_ingest_once(&db, log, sizeof log), 0, "%s", log);
    struct store_error serr;
    struct engine *e = engine_open(db.store, NULL, &serr);
    cr_assert_not_null(e, "%s", serr.message);
    oracle_exec(db.pg, "SET TIME ZONE 'UTC'");
    for (int round = 0; round < 2; round++) {
        if (round) { /* after changes, zones renamed and moved */
            engine_close(e);
            for (int i = 0; i < 3; i++)
                taxi_random_batch(&db);
            taxi_exec(db.pg, "UPDATE taxi_zones SET borough = 'Queens' WHERE location_id %% 7 = 0");
            cr_assert_eq(taxi_ingest_once(&db, log, sizeof log), 0, "%s", log);
            e = engine_open(db.store, NULL, &serr);
            cr_assert_not_null(e, "%s", serr.message);
        }
        for (int i = 0; i < 300; i++) {
            struct cond_gen g;
            generate_cond_ask(&g);
            char what[16384];
            snprintf(what, sizeof what, "round %d, ask %d: %s\nSQL: %s", round, i, g.ask, g.sql);
            struct answer want, got;
            pg_answer(db.pg, g.sql, &want);
            straum_answer(e, g.ask, 0, NULL, "UTC", &got);
            compare_answers(what, &want, &got);
        }
    }
    /* HAVING at its edges: each comparison with a group's own value (the
     * card payments'), which = keeps and < drops, exactly. */
    static const char *const ops[] = {"=", "<>", "<", "<=", ">", ">="};
    static const struct {
        const char *ask, *sql;
    } measures[] = {
        {"trips", "count(*)"},
        {"fare", "sum(t.fare_amount)"},
        {"avg_fare", "avg(t.fare_amount)"},
        {"median_fare", "percentile_disc(0.5) WITHIN GROUP (ORDER BY t.fare_amount)"},
    };
    for (size_t m = 0; m < sizeof measures / sizeof measures[0]; m++) {
        char sql[512];
        snprintf(sql, sizeof sql, "SELECT %s FROM yellow_trips t WHERE payment_type = 1",
                 measures[m].sql);
        PGresult *res = PQexec(db.pg, sql);
        cr_assert_eq(PQresultStatus(res), PGRES_TUPLES_OK, "%s", PQerrorMessage(db.pg));
        char edge[128];
        snprintf(edge, sizeof edge, "%s", PQgetvalue(res, 0, 0));
        PQclear(res);
        for (size_t o = 0; o < sizeof ops / sizeof ops[0]; o++) {
            char ask[512], want_sql[1024];
            snprintf(ask, sizeof ask, "SELECT payment_type, %s FROM trips GROUP BY payment_type "
                     "HAVING %s %s $1", measures[m].ask, measures[m].ask, ops[o]);
            snprintf(want_sql, sizeof want_sql, "SELECT t.payment_type, %s FROM yellow_trips t "
                     "GROUP BY 1 HAVING %s %s %s", measures[m].sql, measures[m].sql, ops[o], edge);
            const char *params[] = {edge};
            check_ask(e, db.pg, want_sql, ask, 1, params, "UTC", ask);
        }
    }
    engine_close(e);
    taxi_db_destroy(&db);
}

/* ---- A text key in the fact table ---------------------------------------------------
 * Conditions on a text key of the fact table itself (not a dim column) read
 * its dictionary ids: each distinct text is tested once per ask (the memo by
 * id), a range in byte order (C collation), LIKE and ILIKE with `_` one
 * character (multi-byte ones included). The texts include the empty text,
 * NULL, case pairs, multi-byte letters, the pattern characters themselves
 * and long texts that share a 400-byte prefix (their dictionary ids come
 * from a hash of the rest). Compared after the snapshot and after streamed
 * inserts of new texts (ids that sort between old ones), updates and
 * deletes, with an engine opened before the changes as well as a new one. */
static const char TAG_VIEW[] =
    "CREATE VIEW tagged WITH (buckets = '1 hour, 1 day') AS\n"
    "SELECT date_bin('1 hour', r.at, timestamptz 'epoch') AS bucket,\n"
    "       r.tag AS tag,\n"
    "       count(*) AS n,\n"
    "       sum(r.fare) AS fare\n"
    "FROM public.rides AS r\n"
    "GROUP BY 1, 2;\n";

static const char *const TAG_TEXTS[] = {
    "Alpha", "alpha", "ALPHA", "Beta", "beta_x", "café", "Zürich", "ZÜRICH", "a%b", "a_b", "a\\b",
    "", "M", "Manhattan", "Mz", "Queens", "Staten Island", "zeta", "\xe2\x82\xacuro", "~",
};
#define TAG_NTEXTS (int)(sizeof TAG_TEXTS / sizeof TAG_TEXTS[0])

/* One condition on tag, as an ask and as SQL over rides. */
static void tag_leaf(char *ask, size_t na, char *sql, size_t ns)
{
    static const char *const ops[] = {"=", "<>", "<", "<=", ">", ">="};
    static const char *const patterns[] = {
        "A%", "a%", "%a", "%ph%", "_lpha", "Z_rich", "caf_", "a\\%b", "a\\_b", "a_b", "%", "",
        "M%", "%\xe2\x82\xac%", "_", "x%y", "%x", "%xA", "%\\\\%",
    };
    int op = rnd(6);
    const char *not = rnd(4) == 0 ? "NOT " : "";
    switch (rnd(7)) {
    case 0:
    case 1: {
        const char *p = patterns[rnd((int)(sizeof patterns / sizeof patterns[0]))];
        const char *like = rnd(3) ? "LIKE" : "ILIKE";
        snprintf(ask, na, "tag %s%s '%s'", not, like, p);
        snprintf(sql, ns, "r.tag %s%s '%s'", not, like, p);
        break;
    }
    case 2:
    case 3: {
        const char *v = TAG_TEXTS[rnd(TAG_NTEXTS)];
        snprintf(ask, na, "tag %s '%s'", ops[op], v);
        snprintf(sql, ns, "r.tag COLLATE \"C\" %s '%s'", ops[op], v);
        break;
    }
    case 4: {
        const char *a = TAG_TEXTS[rnd(TAG_NTEXTS)], *b = TAG_TEXTS[rnd(TAG_NTEXTS)];
        snprintf(ask, na, "tag %sBETWEEN '%s' AND '%s'", not, a, b);
        snprintf(sql, ns, "r.tag COLLATE \"C\" %sBETWEEN '%s' AND '%s'", not, a, b);
        break;
    }
    case 5: {
        const char *a = TAG_TEXTS[rnd(TAG_NTEXTS)], *b = TAG_TEXTS[rnd(TAG_NTEXTS)];
        snprintf(ask, na, "tag %sIN ('%s', '%s')", not, a, b);
        snprintf(sql, ns, "r.tag %sIN ('%s', '%s')", not, a, b);
        break;
    }
    default:
        snprintf(ask, na, "tag IS %sNULL", not);
        snprintf(sql, ns, "r.tag IS %sNULL", not);
        break;
    }
}

/* A generated ask over tagged and the same over rides; *ordered when its
 * ORDER BY decides every place (the tag is the last tie-break). */
static void tag_ask(char *ask, size_t na, char *sql, size_t ns, bool *ordered)
{
    char la[512], ls[1024], ra[512], rs[1024], wa[1200], ws[2400];
    tag_leaf(la, sizeof la, ls, sizeof ls);
    switch (rnd(4)) {
    case 0:
        tag_leaf(ra, sizeof ra, rs, sizeof rs);
        snprintf(wa, sizeof wa, "(%s OR %s)", la, ra);
        snprintf(ws, sizeof ws, "((%s) OR (%s))", ls, rs);
        break;
    case 1:
        tag_leaf(ra, sizeof ra, rs, sizeof rs);
        snprintf(wa, sizeof wa, "%s AND NOT (%s)", la, ra);
        snprintf(ws, sizeof ws, "(%s) AND NOT (%s)", ls, rs);
        break;
    default:
        snprintf(wa, sizeof wa, "%s", la);
        snprintf(ws, sizeof ws, "%s", ls);
        break;
    }
    bool grouped = rnd(2), ranged = rnd(3) == 0;
    const char *range_ask = ranged ? " AND bucket >= '2024-02-01' AND bucket < '2024-04-01'" : "";
    const char *range_sql = ranged ? " AND date_bin('1 hour', r.at, timestamptz 'epoch') >= "
                                     "'2024-02-01' AND date_bin('1 hour', r.at, timestamptz "
                                     "'epoch') < '2024-04-01'"
                                   : "";
    snprintf(ask, na, "SELECT %sn, fare FROM tagged WHERE %s%s%s", grouped ? "tag, " : "", wa,
             range_ask, grouped ? " GROUP BY tag" : "");
    snprintf(sql, ns, "SELECT %scount(*), sum(r.fare) FROM rides r WHERE (%s)%s%s",
             grouped ? "r.tag, " : "", ws, range_sql, grouped ? " GROUP BY 1" : "");
    /* Ordered by the text key itself (its dictionary ids ranked by their
     * bytes), or by a measure with the tag breaking ties; NULL placed either
     * way; a LIMIT well under the groups (the answer's heap) or none. */
    *ordered = grouped && rnd(2);
    if (!*ordered)
        return;
    static const char *const dirs[] = {"", " DESC", " NULLS FIRST", " DESC NULLS LAST"};
    const char *dir = dirs[rnd(4)], *tie = dirs[rnd(4)];
    char limit[48] = "";
    if (rnd(3))
        snprintf(limit, sizeof limit, " LIMIT %d%s", 1 + rnd(6), rnd(3) ? "" : " OFFSET 2");
    if (rnd(2)) {
        cat(ask, na, " ORDER BY tag%s%s", dir, limit);
        cat(sql, ns, " ORDER BY r.tag COLLATE \"C\"%s%s", dir, limit);
    } else {
        cat(ask, na, " ORDER BY n%s, tag%s%s", dir, tie, limit);
        cat(sql, ns, " ORDER BY 2%s, r.tag COLLATE \"C\"%s%s", dir, tie, limit);
    }
}

static void check_tag_asks(struct engine *e, PGconn *pg, int n, const char *when)
{
    for (int i = 0; i < n; i++) {
        char ask[4096], sql[8192], what[12800], why[1024];
        bool ordered;
        tag_ask(ask, sizeof ask, sql, sizeof sql, &ordered);
        snprintf(what, sizeof what, "%s, ask %d: %s\nSQL: %s", when, i, ask, sql);
        struct answer want, got;
        pg_answer(pg, sql, &want);
        straum_answer(e, ask, 0, NULL, "UTC", &got);
        if (ordered) {
            cr_assert(answer_equal_in_order(&want, &got, why, sizeof why), "%s: %s", what, why);
            answer_free(&want);
            answer_free(&got);
            continue;
        }
        compare_answers(what, &want, &got);
    }
}

/* rides rows id from..to-1, their tag chosen from TAG_TEXTS (and NULL, and
 * two long texts with one 450-byte prefix) by a hash of the id. */
static void insert_rides(struct taxi_db *db, int from, int to, int salt)
{
    char texts[2048] = "";
    for (int i = 0; i < TAG_NTEXTS; i++) {
        char lit[64];
        snprintf(lit, sizeof lit, "%s'%s'", i ? ", " : "", TAG_TEXTS[i]);
        cat(texts, sizeof texts, "%s", lit);
    }
    taxi_exec(db->pg,
              "INSERT INTO rides SELECT g, timestamptz '2024-01-01' + (g * 7919 %% 4000) * "
              "interval '17 minutes', "
              "CASE WHEN (g * 31 + %d) %% 23 = 0 THEN NULL "
              "WHEN (g * 31 + %d) %% 23 = 1 THEN repeat('x', 450) || 'A' || %d "
              "WHEN (g * 31 + %d) %% 23 = 2 THEN repeat('x', 450) || 'B' "
              "ELSE (ARRAY[%s])[1 + (g * 17 + %d) %% %d] END, "
              "((g * 13) %% 5000) / 100.0 FROM generate_series(%d, %d) g",
              salt, salt, salt, salt, texts, salt, TAG_NTEXTS, from, to - 1);
}

Test(serve_asks, conditions_on_a_text_key_equal_postgresql, .timeout = 600)
{
    struct taxi_db db;
    taxi_db_create(&db, NULL, 100);
    taxi_exec(db.pg, "CREATE TABLE rides (id bigint PRIMARY KEY, at timestamptz NOT NULL, "
                     "tag text, fare numeric(9,2));"
                     "ALTER TABLE rides REPLICA IDENTITY FULL;"
                     "ALTER PUBLICATION straum ADD TABLE rides");
    insert_rides(&db, 1, 6001, 0);
    char views[96];
    write_views(&db, TAG_VIEW, views, sizeof views);
    struct engine *e = ingest_and_open(&db, views);
    check_tag_asks(e, db.pg, 250, "after the snapshot");

    /* New texts (ids past every old one, sorting between them), texts
     * changed and rows gone, then the same engine and a fresh one. */
    insert_rides(&db, 6001, 7001, 5);
    taxi_exec(db.pg, "INSERT INTO rides SELECT 8000 + g, timestamptz '2024-02-10' + g * "
                     "interval '1 hour', (ARRAY['Aardvark', 'Mzz', 'alphabet', '\xc3\x9f', "
                     "'ZZ', 'b_', 'Z%%rich'])[1 + g %% 7], g FROM generate_series(0, 299) g");
    taxi_exec(db.pg, "UPDATE rides SET tag = 'Alpine' WHERE id %% 11 = 0");
    taxi_exec(db.pg, "UPDATE rides SET tag = NULL WHERE id %% 29 = 0");
    taxi_exec(db.pg, "DELETE FROM rides WHERE id %% 13 = 0");
    char log[8192];
    const char *extra[] = {"--views", views, NULL};
    cr_assert_eq(taxi_ingest_once_with(&db, extra, log, sizeof log), 0, "%s", log);
    check_tag_asks(e, db.pg, 150, "after changes, the engine opened before them");
    engine_close(e);
    e = ingest_and_open(&db, views);
    check_tag_asks(e, db.pg, 150, "after changes, a fresh engine");
    engine_close(e);
    remove(views);
    taxi_db_destroy(&db);
}
