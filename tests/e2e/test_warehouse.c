/* test_warehouse.c -- the warehouse workload's answers equal PostgreSQL's.
 *
 * The warehouse tables (bench/warehouse_schema.sql) at 200,000 tasks under
 * its two views (bench/warehouse_views.sql: a key nearly unique per row,
 * two dims with a column each, a NULL dim key and a key with no dim row):
 * the seed's asks and 300 generated ones (tests/kit/warehouse.h) after the
 * snapshot, then the seed's seven changes one by one (new tasks, tasks
 * completed, cancelled and deleted, groups recategorised, locations retyped,
 * groups deleted while cells still point at them), each followed by the
 * seed's asks and 40 generated ones, and every cell, value count and
 * projection checked against the views' SQL at the end. */
#include "tests/e2e/engine_check.h"
#include "tests/e2e/oracle.h"
#include "tests/e2e/taxi_db.h"
#include "tests/kit/warehouse.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>

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
    char diff[4096];
    cr_assert_eq(oracle_compare(db.pg, db.store, diff, sizeof diff), 0, "%s", diff);
    taxi_db_destroy(&db);
}
