/* test_warehouse.c -- the seed's two hard workloads, the warehouse and the
 * taxi under a wide key, answer as PostgreSQL does.
 *
 * The warehouse tables (bench/warehouse_schema.sql) at 200,000 tasks under
 * its two views (bench/warehouse_views.sql: a key nearly unique per row,
 * two dims with a column each, a NULL dim key and a key with no dim row):
 * the seed's asks and 300 generated ones (tests/kit/warehouse.h) after the
 * snapshot, then the seed's seven changes one by one (new tasks, tasks
 * completed, cancelled and deleted, groups recategorised, locations retyped,
 * groups deleted while cells still point at them), each followed by the
 * seed's asks and 40 generated ones; then dim changes at the dense dim
 * columns' edges (sparse and negative int8 keys, keys either side of a
 * chunk boundary, a dim row's key moved, texts first seen after the
 * snapshot, a dim truncated), each checked the same way; every join's
 * dense columns verified, and every cell, value count and dim row checked
 * against the views' SQL at the end. */
#include "tests/e2e/engine_check.h"
#include "tests/e2e/oracle.h"
#include "tests/e2e/taxi_db.h"
#include "tests/kit/taxi_asks.h"
#include "tests/kit/warehouse.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define WH_TASKS 200000

static struct engine *catch_up(struct taxi_db *db, const char *views)
{
    char log[8192];
    const char *extra[] = {"--views", views, NULL};
    cr_assert_eq(taxi_ingest_once_with(db, extra, log, sizeof log), 0, "%s", log);
    struct store_error serr;
    struct engine *e = engine_open(db->store, NULL, &serr);
    cr_assert_not_null(e, "%s", serr.message);
    return e;
}

static void check_seed_asks(struct engine *e, PGconn *pg, const char *when)
{
    oracle_exec(pg, "SET TIME ZONE 'UTC'");
    for (int i = 0; i < WAREHOUSE_NASKS; i++) {
        const struct warehouse_ask *a = &WAREHOUSE_ASKS[i];
        int n = 0;
        while (a->params[n])
            n++;
        char what[256];
        snprintf(what, sizeof what, "%s, %s", a->name, when);
        check_ask(e, pg, a->postgres_sql, a->ask, n, a->params, "UTC", what);
    }
}

static void check_generated(struct engine *e, PGconn *pg, uint64_t *state, int n,
                            const char *when)
{
    for (int i = 0; i < n; i++) {
        struct warehouse_gen g;
        warehouse_generate_ask(state, &g);
        char set[64], what[8192];
        snprintf(set, sizeof set, "SET TIME ZONE '%s'", g.tz);
        oracle_exec(pg, set);
        snprintf(what, sizeof what, "%s, generated ask %d: %s\nSQL: %s", when, i, g.ask, g.sql);
        struct answer want, got;
        pg_answer(pg, g.sql, &want);
        straum_answer(e, g.ask, 0, NULL, g.tz, &got);
        compare_answers(what, &want, &got);
    }
}

/* Dim changes that meet the dense dim columns' edges (SPEC.md §4.3), each
 * one transaction after the seed's seven. */
static const struct warehouse_change DENSE_EDGES[] = {
    {"task groups at sparse and negative int8 keys, tasks at them and at a sparse key "
     "with no group",
     "INSERT INTO task_groups VALUES (1000000000000, 'category sparse'), (-5, 'category 03'), "
     "(4063, 'category edge'), (4064, NULL) "
     "ON CONFLICT (id) DO UPDATE SET category = excluded.category;"
     "INSERT INTO tasks SELECT m.id + n, 3, n % 2 = 0, CASE n % 5 WHEN 0 THEN 1000000000000 "
     "WHEN 1 THEN -5 WHEN 2 THEN 1000000000001 WHEN 3 THEN 4063 ELSE 4064 END, 1 + n, "
     "timestamptz '2024-02-14 10:00:00+00' + n * interval '1 minute', NULL, 1, 2, 10.5 "
     "FROM (SELECT max(id) AS id FROM tasks) m, generate_series(1, 300) n"},
    {"task groups moved to new keys, one in ninety-seven",
     "UPDATE task_groups SET id = id + 2000000000000 WHERE id % 97 = 5 AND id > 0"},
    {"task groups given categories first seen now",
     "UPDATE task_groups SET category = 'category new ' || (id % 3) WHERE id % 13 = 1"},
    {"storage locations truncated, a few put back with a new type",
     "TRUNCATE storage_locations;"
     "INSERT INTO storage_locations SELECT l, CASE WHEN l % 7 = 0 THEN NULL ELSE 'bay' END "
     "FROM generate_series(1, 5000) l"},
};

/* Every join's dense dim columns pass straum-dump verify's check
 * (store_verify_dense). */
static void check_dense(const char *store)
{
    struct store *s;
    struct store_read *r;
    struct store_error err;
    cr_assert_eq(store_open(store, STORE_READ_ONLY, &s, &err), 0, "%s", err.message);
    cr_assert_eq(store_read_begin(s, &r, &err), 0, "%s", err.message);
    const struct sql_view_list *views = store_views(s);
    for (int v = 0; v < views->nviews; v++)
        for (int j = 0; j < views->views[v].njoins; j++) {
            uint64_t rows;
            cr_assert_eq(store_verify_dense(r, v, j, &rows, &err), 0, "%s", err.message);
            cr_assert_gt(rows, 0);
        }
    store_read_end(r);
    store_close(s);
}

static void apply_change(struct taxi_db *db, const char *views, uint64_t *state,
                         const struct warehouse_change *c)
{
    PGresult *r = PQexec(db->pg, c->sql);
    cr_assert(PQresultStatus(r) == PGRES_COMMAND_OK, "%s: %s", c->name, PQerrorMessage(db->pg));
    PQclear(r);
    struct engine *e = catch_up(db, views);
    char when[256];
    snprintf(when, sizeof when, "after \"%s\"", c->name);
    check_seed_asks(e, db->pg, when);
    check_generated(e, db->pg, state, 40, when);
    engine_close(e);
}

Test(warehouse, asks_equal_postgresql_after_the_load_and_each_change, .timeout = 900)
{
    struct taxi_db db;
    taxi_db_create(&db, NULL, 0);
    char *schema = taxi_read_source("bench/warehouse_schema.sql"), gen[256];
    oracle_exec(db.pg, schema);
    free(schema);
    struct warehouse_scale scale = warehouse_scale(WH_TASKS);
    warehouse_generate_sql(&scale, gen, sizeof gen);
    oracle_exec(db.pg, gen);
    oracle_exec(db.pg, "ANALYZE tasks;"
                       "ALTER TABLE tasks REPLICA IDENTITY FULL;"
                       "ALTER TABLE task_groups REPLICA IDENTITY FULL;"
                       "ALTER TABLE storage_locations REPLICA IDENTITY FULL;"
                       "ALTER PUBLICATION straum ADD TABLE tasks, task_groups, storage_locations");
    char views[4096];
    snprintf(views, sizeof views, "%s/bench/warehouse_views.sql", STRAUM_SOURCE_DIR);

    struct engine *e = catch_up(&db, views);
    uint64_t state = 26;
    check_seed_asks(e, db.pg, "after the snapshot");
    check_generated(e, db.pg, &state, 300, "after the snapshot");
    engine_close(e);

    for (int c = 0; c < WAREHOUSE_NCHANGES; c++) {
        PGresult *r = PQexec(db.pg, WAREHOUSE_CHANGES[c].sql);
        cr_assert(PQresultStatus(r) == PGRES_COMMAND_OK && atoll(PQcmdTuples(r)) > 0,
                  "%s: %s (%s rows)", WAREHOUSE_CHANGES[c].name, PQerrorMessage(db.pg),
                  PQcmdTuples(r));
        PQclear(r);
        e = catch_up(&db, views);
        char when[256];
        snprintf(when, sizeof when, "after \"%s\"", WAREHOUSE_CHANGES[c].name);
        check_seed_asks(e, db.pg, when);
        check_generated(e, db.pg, &state, 40, when);
        engine_close(e);
    }
    check_dense(db.store);
    for (size_t c = 0; c < sizeof DENSE_EDGES / sizeof DENSE_EDGES[0]; c++)
        apply_change(&db, views, &state, &DENSE_EDGES[c]);
    check_dense(db.store);
    char diff[4096];
    cr_assert_eq(oracle_compare(db.pg, db.store, diff, sizeof diff), 0, "%s", diff);
    taxi_db_destroy(&db);
}

/* ---- The trips under the wide key --------------------------------------------------
 * bench/taxi_wide_views.sql over 100,000 trips: the wide mode's asks and
 * 300 generated ones (any of the seven keys and dim columns, a bucket at
 * each width or none, key and dim conditions, ranges of an hour to the
 * whole span on 15-minute edges) after the snapshot, then after each of the
 * seed's steps and two more dim changes (a zone deleted while cells point
 * at it, trips whose zone is NULL), 40 generated asks after each. */

static int wide_rnd(uint64_t *st, int n)
{
    *st = *st * 6364136223846793005ULL + 1442695040888963407ULL;
    return (int)((*st >> 33) % (uint64_t)n);
}

static void wide_generate(uint64_t *st, char *ask, size_t na, char *sql, size_t ns)
{
    static const struct {
        const char *ask, *sql;
    } keys[] = {
        {"payment_type", "t.payment_type"},     {"vendor_id", "t.vendor_id"},
        {"pu_location_id", "t.pu_location_id"}, {"do_location_id", "t.do_location_id"},
        {"borough", "z.borough"},               {"zone", "z.zone"},
        {"service_zone", "z.service_zone"},
    };
    static const char *const buckets[][2] = {
        {"bucket", "date_bin('15 minutes', t.pickup_at, timestamptz 'epoch')"},
        {"date_bin('1 day', bucket) AS d", "date_bin('1 day', t.pickup_at, timestamptz 'epoch')"},
        {"date_bin('7 days', bucket) AS d", "date_bin('7 days', t.pickup_at, timestamptz 'epoch')"},
    };
    char sa[1024] = "", ss[1024] = "", ga[512] = "", gs[128] = "", wa[512] = "", ws[512] = "";
    int ng = 0, b = wide_rnd(st, 5);
    if (b < 3) {
        snprintf(sa, sizeof sa, "%s, ", buckets[b][0]);
        snprintf(ss, sizeof ss, "%s, ", buckets[b][1]);
        snprintf(ga, sizeof ga, "%s", b ? "d" : "bucket");
        ng++;
    }
    bool used[7] = {0};
    for (int i = 0, n = wide_rnd(st, b < 3 ? 2 : 4); i < n; i++) {
        int k = wide_rnd(st, 7);
        if (used[k])
            continue;
        used[k] = true;
        size_t l = strlen(sa);
        snprintf(sa + l, sizeof sa - l, "%s, ", keys[k].ask);
        l = strlen(ss);
        snprintf(ss + l, sizeof ss - l, "%s, ", keys[k].sql);
        l = strlen(ga);
        snprintf(ga + l, sizeof ga - l, "%s%s", ng ? ", " : "", keys[k].ask);
        ng++;
    }
    for (int i = 0; i < ng; i++) {
        size_t l = strlen(gs);
        snprintf(gs + l, sizeof gs - l, "%s%d", i ? ", " : "", i + 1);
    }
    static const char *const conds[][2] = {
        {"payment_type = 1", "t.payment_type = 1"},
        {"vendor_id <> 2", "t.vendor_id <> 2"},
        {"borough = 'Manhattan'", "z.borough = 'Manhattan'"},
        {"borough IS NULL", "z.borough IS NULL"},
        {"zone LIKE '%Midtown%'", "z.zone LIKE '%Midtown%'"},
        {"service_zone IN ('Boro Zone', 'EWR')", "z.service_zone IN ('Boro Zone', 'EWR')"},
        {"pu_location_id IN (161, 162, 262, 266)", "t.pu_location_id IN (161, 162, 262, 266)"},
        {"(do_location_id < 100 OR zone = 'JFK Airport')",
         "(t.do_location_id < 100 OR z.zone = 'JFK Airport')"},
    };
    for (int i = 0, n = wide_rnd(st, 3); i < n; i++) {
        int c = wide_rnd(st, 8);
        size_t l = strlen(wa);
        snprintf(wa + l, sizeof wa - l, " AND %s", conds[c][0]);
        l = strlen(ws);
        snprintf(ws + l, sizeof ws - l, " AND %s", conds[c][1]);
    }
    /* From a 15-minute edge of the six months, 15 minutes to all of them. */
    static const int quarters[] = {1, 4, 96, 96 * 7, 96 * 31, 96 * 200};
    int len = quarters[wide_rnd(st, 6)], from = wide_rnd(st, 96 * 182);
    time_t f = (time_t)(1704067200LL + from * 900LL), t = f + (time_t)len * 900;
    char ft[32], tt[32];
    strftime(ft, sizeof ft, "%Y-%m-%d %H:%M:%S+00", gmtime(&f));
    strftime(tt, sizeof tt, "%Y-%m-%d %H:%M:%S+00", gmtime(&t));
    snprintf(ask, na,
             "SELECT %strips, card_trips, shared_trips FROM wide_trips WHERE bucket >= '%s' "
             "AND bucket < '%s'%s%s%s",
             sa, ft, tt, wa, ng ? " GROUP BY " : "", ga);
    snprintf(sql, ns,
             "SELECT %scount(*), count(*) FILTER (WHERE t.payment_type = 1), count(*) FILTER "
             "(WHERE t.passenger_count > 1) FROM yellow_trips t LEFT JOIN taxi_zones z ON "
             "z.location_id = t.pu_location_id WHERE date_bin('15 minutes', t.pickup_at, "
             "timestamptz 'epoch') >= '%s' AND date_bin('15 minutes', t.pickup_at, "
             "timestamptz 'epoch') < '%s'%s%s%s",
             ss, ft, tt, ws, ng ? " GROUP BY " : "", gs);
}

static void check_wide(struct engine *e, PGconn *pg, uint64_t *st, int n, const char *when)
{
    oracle_exec(pg, "SET TIME ZONE 'UTC'");
    for (int i = 0; i < TAXI_NWIDE_ASKS; i++) {
        const struct taxi_ask *a = &TAXI_WIDE_ASKS[i];
        char what[256];
        snprintf(what, sizeof what, "%s, %s", a->name, when);
        check_ask(e, pg, a->postgres_sql, a->ask, 2, a->params, "UTC", what);
    }
    for (int i = 0; i < n; i++) {
        char ask[2048], sql[4096], what[6400];
        wide_generate(st, ask, sizeof ask, sql, sizeof sql);
        snprintf(what, sizeof what, "%s, generated ask %d: %s\nSQL: %s", when, i, ask, sql);
        struct answer want, got;
        pg_answer(pg, sql, &want);
        straum_answer(e, ask, 0, NULL, "UTC", &got);
        compare_answers(what, &want, &got);
    }
}

Test(warehouse, the_wide_key_equals_postgresql_after_the_load_and_each_step, .timeout = 900)
{
    struct taxi_db db;
    taxi_db_create(&db, NULL, 100000);
    char views[4096];
    snprintf(views, sizeof views, "%s/bench/taxi_wide_views.sql", STRAUM_SOURCE_DIR);
    struct engine *e = catch_up(&db, views);
    uint64_t state = 15;
    check_wide(e, db.pg, &state, 300, "after the snapshot");
    engine_close(e);
    static const char *const more[][2] = {
        {"a zone deleted while cells point at it", "DELETE FROM taxi_zones WHERE location_id = 48"},
        {"trips whose zone is NULL",
         "UPDATE yellow_trips SET pu_location_id = NULL WHERE id % 97 = 0"},
    };
    for (int s = 0; s < TAXI_NWIDE_STEPS + 2; s++) {
        int m = s - TAXI_NWIDE_STEPS;
        const char *name = m < 0 ? TAXI_WIDE_STEPS[s].name : more[m][0];
        const char *sql = m < 0 ? TAXI_WIDE_STEPS[s].sql : more[m][1];
        PGresult *r = PQexec(db.pg, sql);
        cr_assert(PQresultStatus(r) == PGRES_COMMAND_OK && atoll(PQcmdTuples(r)) > 0, "%s: %s",
                  name, PQerrorMessage(db.pg));
        PQclear(r);
        e = catch_up(&db, views);
        char when[128];
        snprintf(when, sizeof when, "after \"%s\"", name);
        check_wide(e, db.pg, &state, 40, when);
        engine_close(e);
    }
    taxi_random_batch(&db);
    e = catch_up(&db, views);
    check_wide(e, db.pg, &state, 40, "after a random batch");
    engine_close(e);
    char diff[4096];
    cr_assert_eq(oracle_compare(db.pg, db.store, diff, sizeof diff), 0, "%s", diff);
    taxi_db_destroy(&db);
}
