/* warehouse.h -- the warehouse workload (bench/warehouse_schema.sql,
 * bench/warehouse_views.sql; seed 000 "A warehouse's tables"), shared by
 * the differential test (tests/e2e/test_warehouse.c) and the benchmark
 * (bench/taxi_warehouse.c): its scale, the seed's asks and changes, and a
 * deterministic generator of asks with the SQL that means the same over
 * the raw tables. */
#ifndef STRAUM_KIT_WAREHOUSE_H
#define STRAUM_KIT_WAREHOUSE_H

#include <stddef.h>
#include <stdint.h>

/* The seed's scale: 13,116,878 tasks, 5,690,651 task groups and 851,964
 * storage locations, over 91 days from 2024-01-01 UTC. Smaller runs keep
 * the ratios (warehouse_scale). */
#define WAREHOUSE_FULL_TASKS 13116878LL
#define WAREHOUSE_FULL_GROUPS 5690651LL
#define WAREHOUSE_FULL_LOCATIONS 851964LL
#define WAREHOUSE_SPAN_DAYS 91
#define WAREHOUSE_FROM "2024-01-01 00:00:00+00"
#define WAREHOUSE_TO "2024-04-02 00:00:00+00"

struct warehouse_scale {
    long long tasks, groups, locations;
};
/* The scale for `tasks` tasks, groups and locations in the seed's ratios. */
struct warehouse_scale warehouse_scale(long long tasks);
/* The generator's call for that scale: "SELECT straum_generate_warehouse(...)"
 * into buf. */
void warehouse_generate_sql(const struct warehouse_scale *s, char *buf, size_t len);

/* An ask over the warehouse views and the same question in SQL over the
 * raw tables. */
struct warehouse_ask {
    const char *name;
    const char *postgres_sql;
    const char *ask;
    const char *params[4]; /* NULL-terminated */
};
extern const struct warehouse_ask WAREHOUSE_ASKS[];
extern const int WAREHOUSE_NASKS;

/* The seed's seven changes, each one transaction; the last three change
 * dims (a dim row deleted while cells still point at it included). */
struct warehouse_change {
    const char *name;
    const char *sql;
};
extern const struct warehouse_change WAREHOUSE_CHANGES[];
extern const int WAREHOUSE_NCHANGES;

/* A generated ask: grouping by nothing or up to three of organization,
 * live, category, location type and a bucket (hour, day, a local day),
 * conditions on keys and dim columns, a range of one hour to the whole
 * span on hour edges, every measure kind of picks and picks_full. */
struct warehouse_gen {
    char ask[2048], sql[4096];
    const char *tz; /* the ask's time zone; SQL's session must use it */
};
/* The next ask of the sequence *state (any seed: deterministic). */
void warehouse_generate_ask(uint64_t *state, struct warehouse_gen *g);

#endif
