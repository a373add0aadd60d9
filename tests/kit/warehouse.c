/* warehouse.c -- see warehouse.h. */
#include "tests/kit/warehouse.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

struct warehouse_scale warehouse_scale(long long tasks)
{
    struct warehouse_scale s = {tasks, tasks * WAREHOUSE_FULL_GROUPS / WAREHOUSE_FULL_TASKS,
                                tasks * WAREHOUSE_FULL_LOCATIONS / WAREHOUSE_FULL_TASKS};
    if (s.groups < 1)
        s.groups = 1;
    if (s.locations < 1)
        s.locations = 1;
    return s;
}

void warehouse_generate_sql(const struct warehouse_scale *s, char *buf, size_t len)
{
    snprintf(buf, len, "SELECT straum_generate_warehouse(%lld, %lld, %lld, 1, %d)", s->tasks,
             s->groups, s->locations, WAREHOUSE_SPAN_DAYS);
}

/* The raw tables joined as the views join them, and the views' bucket. */
#define WH_FROM                                                                                 \
    " FROM tasks t LEFT JOIN task_groups g ON g.id = t.group_id"                                \
    " LEFT JOIN storage_locations l ON l.id = t.location_id "
#define WH_BUCKET "date_bin('1 hour', t.created_at, timestamptz 'epoch')"
#define WH_PICKS "count(*) FILTER (WHERE t.status = 1)"
#define WH_DAY "2024-02-14 00:00:00+00", "2024-02-15 00:00:00+00"

const struct warehouse_ask WAREHOUSE_ASKS[] = {
    {"Picks by organization, one day",
     "SELECT t.organization_id, " WH_PICKS WH_FROM
     "WHERE t.created_at >= '2024-02-14 00:00:00+00' AND t.created_at < '2024-02-15 00:00:00+00' "
     "GROUP BY 1",
     "SELECT organization_id, picks FROM picks WHERE bucket >= $1 AND bucket < $2 "
     "GROUP BY organization_id",
     {WH_DAY, 0}},
    {"Picks by organization and category, one week",
     "SELECT t.organization_id, g.category, " WH_PICKS WH_FROM
     "WHERE t.created_at >= '2024-02-12 00:00:00+00' AND t.created_at < '2024-02-19 00:00:00+00' "
     "GROUP BY 1, 2",
     "SELECT organization_id, category, picks FROM picks WHERE bucket >= $1 AND bucket < $2 "
     "GROUP BY organization_id, category",
     {"2024-02-12 00:00:00+00", "2024-02-19 00:00:00+00", 0}},
    {"Live picks by location type, one day",
     "SELECT l.type, " WH_PICKS WH_FROM
     "WHERE t.live AND t.created_at >= '2024-02-14 00:00:00+00' "
     "AND t.created_at < '2024-02-15 00:00:00+00' GROUP BY 1",
     "SELECT location_type, picks FROM picks WHERE bucket >= $1 AND bucket < $2 AND live = $3 "
     "GROUP BY location_type",
     {WH_DAY, "true", 0}},
    {"Picks per hour for one organization, one day",
     "SELECT " WH_BUCKET ", " WH_PICKS WH_FROM
     "WHERE t.organization_id = 3 AND t.created_at >= '2024-02-14 00:00:00+00' "
     "AND t.created_at < '2024-02-15 00:00:00+00' GROUP BY 1",
     "SELECT bucket, picks FROM picks WHERE bucket >= $1 AND bucket < $2 "
     "AND organization_id = $3 GROUP BY bucket",
     {WH_DAY, "3", 0}},
    {"Median pick time by category, the whole span",
     "SELECT g.category, percentile_cont(0.5) WITHIN GROUP (ORDER BY t.pick_seconds)" WH_FROM
     "GROUP BY 1",
     "SELECT category, median_pick_seconds FROM picks_full WHERE bucket >= $1 AND bucket < $2 "
     "GROUP BY category",
     {WAREHOUSE_FROM, WAREHOUSE_TO, 0}},
};
const int WAREHOUSE_NASKS = (int)(sizeof WAREHOUSE_ASKS / sizeof WAREHOUSE_ASKS[0]);

const struct warehouse_change WAREHOUSE_CHANGES[] = {
    {"1,000 new tasks for one organization, completed",
     "INSERT INTO tasks SELECT m.id + n, 7, true, 1 + n * 37 % m.groups, 1 + n * 53 % m.locations, "
     "timestamptz '2024-03-20 12:00:00+00' + n * interval '13 seconds', "
     "timestamptz '2024-03-20 12:30:00+00' + n * interval '13 seconds', 1, 1 + n % 20, "
     "(n % 900) / 10.0 FROM (SELECT max(id) AS id, (SELECT count(*) FROM task_groups) AS groups, "
     "(SELECT count(*) FROM storage_locations) AS locations FROM tasks) m, "
     "generate_series(1, 1000) n"},
    {"Open tasks completed, one in fifty",
     "UPDATE tasks SET status = 1, completed_at = created_at + interval '20 minutes', "
     "pick_seconds = 60.5 + id % 100 WHERE status = 0 AND id / 50 % 50 = 0"},
    {"Completed tasks of one day cancelled, one in twenty",
     "UPDATE tasks SET status = 2, completed_at = NULL, pick_seconds = NULL "
     "WHERE status = 1 AND created_at >= '2024-02-14 00:00:00+00' "
     "AND created_at < '2024-02-15 00:00:00+00' AND id % 20 = 0"},
    {"Tasks of one day deleted, one in thirty",
     "DELETE FROM tasks WHERE created_at >= '2024-02-20 00:00:00+00' "
     "AND created_at < '2024-02-21 00:00:00+00' AND id % 30 = 0"},
    {"Task groups of one day recategorised",
     "UPDATE task_groups SET category = CASE WHEN category IS NULL THEN 'category 41' "
     "ELSE 'category 0' || (id % 9) END WHERE id IN (SELECT group_id FROM tasks "
     "WHERE created_at >= '2024-02-14 00:00:00+00' AND created_at < '2024-02-15 00:00:00+00')"},
    {"Storage locations retyped, one in ten",
     "UPDATE storage_locations SET type = CASE type WHEN 'pick' THEN 'reserve' "
     "WHEN 'reserve' THEN 'staging' ELSE 'pick' END WHERE id % 10 = 0"},
    {"Task groups deleted, one in a hundred", "DELETE FROM task_groups WHERE id % 100 = 0"},
};
const int WAREHOUSE_NCHANGES = (int)(sizeof WAREHOUSE_CHANGES / sizeof WAREHOUSE_CHANGES[0]);

/* ---- The generator --------------------------------------------------------------------- */

static int next(uint64_t *state, int n)
{
    *state = *state * 6364136223846793005ULL + 1442695040888963407ULL;
    return (int)((*state >> 33) % (uint64_t)n);
}

static void cat(char *buf, size_t cap, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void cat(char *buf, size_t cap, const char *fmt, ...)
{
    size_t n = strlen(buf);
    if (n >= cap)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf + n, cap - n, fmt, ap);
    va_end(ap);
}

/* "2024-01-01 00:00:00+00" plus h hours, into out. */
static void hour_text(int h, char *out, size_t len)
{
    static const int mdays[] = {31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31}; /* 2024 */
    int day = h / 24, month = 0;
    while (month < 11 && day >= mdays[month])
        day -= mdays[month++];
    snprintf(out, len, "2024-%02d-%02d %02d:00:00+00", month + 1, day + 1, h % 24);
}

/* One condition, as an ask and as SQL. */
static void leaf(uint64_t *st, char *ask, size_t na, char *sql, size_t ns)
{
    int a = 1 + next(st, 44), b = 1 + next(st, 44), c = 1 + next(st, 40), d = 1 + next(st, 5);
    static const char *const types[] = {"pick", "reserve", "staging"};
    const char *type = types[next(st, 3)];
    switch (next(st, 11)) {
    case 0:
        snprintf(ask, na, "organization_id = %d", a);
        snprintf(sql, ns, "t.organization_id = %d", a);
        break;
    case 1:
        snprintf(ask, na, "organization_id IN (%d, %d, %d)", a, b, d);
        snprintf(sql, ns, "t.organization_id IN (%d, %d, %d)", a, b, d);
        break;
    case 2:
        snprintf(ask, na, "organization_id <> %d", a);
        snprintf(sql, ns, "t.organization_id <> %d", a);
        break;
    case 3:
        snprintf(ask, na, "live = %s", a % 2 ? "true" : "false");
        snprintf(sql, ns, "t.live = %s", a % 2 ? "true" : "false");
        break;
    case 4:
        snprintf(ask, na, "category = 'category %02d'", c);
        snprintf(sql, ns, "g.category = 'category %02d'", c);
        break;
    case 5:
        snprintf(ask, na, "category IS %sNULL", a % 2 ? "NOT " : "");
        snprintf(sql, ns, "g.category IS %sNULL", a % 2 ? "NOT " : "");
        break;
    case 6:
        snprintf(ask, na, "category IN ('category %02d', 'category %02d')", c, 1 + b % 40);
        snprintf(sql, ns, "g.category IN ('category %02d', 'category %02d')", c, 1 + b % 40);
        break;
    case 7:
        snprintf(ask, na, "location_type %s '%s'", a % 2 ? "=" : "<>", type);
        snprintf(sql, ns, "l.type %s '%s'", a % 2 ? "=" : "<>", type);
        break;
    case 8:
        snprintf(ask, na, "location_type IS %sNULL", a % 3 ? "NOT " : "");
        snprintf(sql, ns, "l.type IS %sNULL", a % 3 ? "NOT " : "");
        break;
    case 9:
        snprintf(ask, na, "group_id = %d", 1 + a * b * c % 5000);
        snprintf(sql, ns, "t.group_id = %d", 1 + a * b * c % 5000);
        break;
    default:
        snprintf(ask, na, "(location_type = '%s' OR organization_id = %d)", type, a);
        snprintf(sql, ns, "(l.type = '%s' OR t.organization_id = %d)", type, a);
        break;
    }
}

void warehouse_generate_ask(uint64_t *st, struct warehouse_gen *g)
{
    memset(g, 0, sizeof *g);
    bool full = next(st, 3) == 0;
    g->tz = "UTC";
    static const struct {
        const char *ask, *sql;
        bool full_only;
    } measures[] = {
        {"tasks", "count(*)", false},
        {"picks", WH_PICKS, false},
        {"quantity", "sum(t.quantity)", false},
        {"pick_seconds", "sum(t.pick_seconds)", false},
        {"max_quantity", "max(t.quantity)", true},
        {"median_pick_seconds", "percentile_cont(0.5) WITHIN GROUP (ORDER BY t.pick_seconds)",
         true},
    };
    static const struct {
        const char *ask, *sql;
    } keys[] = {
        {"organization_id", "t.organization_id"},
        {"live", "t.live"},
        {"category", "g.category"},
        {"location_type", "l.type"},
    };
    char sel_ask[512] = "", sel_sql[1024] = "", grp_ask[256] = "", grp_sql[64] = "";
    int ngroup = 0;
    /* A bucket at one of three grains, or none. */
    int bucket = next(st, 5);
    if (bucket == 1) {
        cat(sel_ask, sizeof sel_ask, "bucket, ");
        cat(sel_sql, sizeof sel_sql, WH_BUCKET ", ");
        cat(grp_ask, sizeof grp_ask, "bucket");
        ngroup++;
    } else if (bucket == 2) {
        cat(sel_ask, sizeof sel_ask, "date_bin('1 day', bucket) AS d, ");
        cat(sel_sql, sizeof sel_sql, "date_bin('1 day', " WH_BUCKET ", timestamptz 'epoch'), ");
        cat(grp_ask, sizeof grp_ask, "d");
        ngroup++;
    } else if (bucket == 3) {
        g->tz = "America/New_York";
        cat(sel_ask, sizeof sel_ask, "date_trunc('day', bucket) AS d, ");
        cat(sel_sql, sizeof sel_sql, "date_trunc('day', " WH_BUCKET "), ");
        cat(grp_ask, sizeof grp_ask, "d");
        ngroup++;
    }
    /* Keys beside a bucket: one at most, so every answer stays under the
     * engine's group limit (a day by organization and category over the
     * span is 166,000 groups). */
    int nkeys = bucket >= 1 && bucket <= 3 ? next(st, 2) : next(st, 4);
    bool used[4] = {0};
    for (int i = 0; i < nkeys; i++) {
        int k = next(st, 4);
        if (used[k])
            continue;
        used[k] = true;
        cat(sel_ask, sizeof sel_ask, "%s, ", keys[k].ask);
        cat(sel_sql, sizeof sel_sql, "%s, ", keys[k].sql);
        cat(grp_ask, sizeof grp_ask, "%s%s", ngroup ? ", " : "", keys[k].ask);
        ngroup++;
    }
    for (int i = 0; i < ngroup; i++)
        cat(grp_sql, sizeof grp_sql, "%s%d", i ? ", " : "", i + 1);
    int nmeasures = 0;
    for (int m = 0; m < 6; m++) {
        if (measures[m].full_only && !full)
            continue;
        if (next(st, 2) == 0 && !(m == 5 && nmeasures == 0))
            continue;
        cat(sel_ask, sizeof sel_ask, "%s%s", nmeasures ? ", " : "", measures[m].ask);
        cat(sel_sql, sizeof sel_sql, "%s%s", nmeasures ? ", " : "", measures[m].sql);
        nmeasures++;
    }
    if (!nmeasures) {
        cat(sel_ask, sizeof sel_ask, "tasks");
        cat(sel_sql, sizeof sel_sql, "count(*)");
    }
    /* A range of one hour to the whole span, on hour edges (at most 30 days
     * by the hour). */
    static const int spans[] = {1, 6, 24, 24 * 7, 24 * 30, 24 * (WAREHOUSE_SPAN_DAYS + 1)};
    int span = spans[next(st, bucket == 1 ? 5 : 6)], total = 24 * (WAREHOUSE_SPAN_DAYS + 1);
    int from_h = span >= total ? 0 : next(st, total - span);
    char from[32], to[32];
    hour_text(from_h, from, sizeof from);
    hour_text(from_h + span, to, sizeof to);
    char wa[1024] = "", ws[2048] = "";
    int nconds = next(st, 3);
    for (int i = 0; i < nconds; i++) {
        char la[256], ls[512];
        leaf(st, la, sizeof la, ls, sizeof ls);
        cat(wa, sizeof wa, " AND %s", la);
        cat(ws, sizeof ws, " AND %s", ls);
    }
    snprintf(g->ask, sizeof g->ask, "SELECT %s FROM %s WHERE bucket >= '%s' AND bucket < '%s'%s",
             sel_ask, full ? "picks_full" : "picks", from, to, wa);
    snprintf(g->sql, sizeof g->sql,
             "SELECT %s" WH_FROM "WHERE " WH_BUCKET " >= '%s' AND " WH_BUCKET " < '%s'%s", sel_sql,
             from, to, ws);
    if (ngroup) {
        cat(g->ask, sizeof g->ask, " GROUP BY %s", grp_ask);
        cat(g->sql, sizeof g->sql, " GROUP BY %s", grp_sql);
    }
}
