/* taxi_random.c -- the generated asks of taxi_random.h.
 *
 * Each ask draws from its own generator, seeded by (seed, number) through
 * splitmix64, so ask i never depends on the asks before it: the test and
 * the benchmark can take any part of the sequence. The ask and its SQL are
 * built side by side, clause by clause, from one table per view of what
 * the view declares (its measures with their SQL, its keys and dim column
 * with theirs). */
#include "tests/kit/taxi_random.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

/* ---- The views ------------------------------------------------------------ */

enum measure_kind { M_COUNT, M_SUM_FARE, M_AVG_FARE, M_MEDIAN, M_P99, M_SUM_TIPS, M_AVG_DIST };

struct measure {
    const char *name, *sql;
    enum measure_kind kind;
};

enum column_kind { C_ZONE, C_BOROUGH, C_PAYMENT };

struct column {
    const char *name, *sql;
    enum column_kind kind;
};

struct view {
    const char *name;
    const struct measure *measures;
    int nmeasures;
    const struct column *columns; /* keys and the dim column */
    int ncolumns;
};

#define PCT(p) "percentile_disc(" p ") WITHIN GROUP (ORDER BY t.fare_amount)"

static const struct measure TRIPS_MEASURES[] = {
    {"trips", "count(*)", M_COUNT},
    {"fare", "sum(t.fare_amount)", M_SUM_FARE},
    {"avg_fare", "avg(t.fare_amount)", M_AVG_FARE},
    {"median_fare", PCT("0.5"), M_MEDIAN},
    {"p99_fare", PCT("0.99"), M_P99},
};
static const struct measure DROPOFFS_MEASURES[] = {
    {"trips", "count(*)", M_COUNT},
    {"tips", "sum(t.tip_amount)", M_SUM_TIPS},
    {"avg_distance", "avg(t.trip_distance)", M_AVG_DIST},
    {"fare", "sum(t.fare_amount)", M_SUM_FARE},
};
static const struct column TRIPS_COLUMNS[] = {
    {"pu_location_id", "t.pu_location_id", C_ZONE},
    {"borough", "z.borough", C_BOROUGH},
    {"payment_type", "t.payment_type", C_PAYMENT},
};
static const struct column DROPOFFS_COLUMNS[] = {
    {"do_location_id", "t.do_location_id", C_ZONE},
    {"borough", "z.borough", C_BOROUGH},
};

static const struct view VIEWS[] = {
    {"trips", TRIPS_MEASURES, 5, TRIPS_COLUMNS, 3},
    {"dropoffs", DROPOFFS_MEASURES, 4, DROPOFFS_COLUMNS, 2},
};

/* Zones the data favours (Manhattan's, the airports) beside any id: an
 * equality on a zone with no trips answers nothing, which says little. */
static const int ZONES[] = {4, 48, 68, 79, 132, 138, 161, 162, 170, 186, 230, 236, 237, 264, 265};
static const char *const BOROUGHS[] = {"Manhattan", "Queens", "Brooklyn", "Bronx",
                                       "Staten Island", "EWR", "Unknown", "Nowhere"};
static const char *const LIKES[] = {"M%", "%n", "%ee%", "_ueens", "B%x", "%", "Staten_Island"};

/* ---- Drawing ----------------------------------------------------------------- */

struct draw {
    uint64_t s;
};

static uint64_t next(struct draw *d)
{
    uint64_t z = (d->s += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

/* Uniform in [0, n). */
static int rnd(struct draw *d, int n) { return (int)(next(d) % (uint64_t)n); }

static void cat(char *buf, size_t cap, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void cat(char *buf, size_t cap, const char *fmt, ...)
{
    size_t n = strlen(buf);
    if (n + 1 >= cap)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf + n, cap - n, fmt, ap);
    va_end(ap);
}

/* Adds a parameter with this text; returns its reference ("$3"), valid
 * until the next call. */
static const char *param(struct taxi_random_ask *a, const char *text)
{
    static char ref[16];
    snprintf(a->param_buf[a->nparams], sizeof a->param_buf[0], "%s", text);
    a->params[a->nparams] = a->param_buf[a->nparams];
    a->nparams++;
    a->params[a->nparams] = NULL;
    snprintf(ref, sizeof ref, "$%d", a->nparams);
    return ref;
}

/* An instant as both sides write it: UTC with its offset. */
static void instant(int64_t unix_s, char *out, size_t len)
{
    time_t t = (time_t)unix_s;
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(out, len, "%Y-%m-%d %H:%M:%S+00", &tm);
}

/* ---- Conditions ------------------------------------------------------------- */

/* One comparison on column c into the ask's and the SQL's text; the value a
 * parameter when use_param. */
static void leaf(struct draw *d, struct taxi_random_ask *a, const struct column *c, bool use_param,
                 char *ask, size_t na, char *sql, size_t ns)
{
    static const char *const ops[] = {"=", "<>", "<", "<=", ">", ">="};
    const char *op = ops[rnd(d, 6)];
    ask[0] = sql[0] = '\0';
    if (c->kind == C_BOROUGH) {
        const char *v = BOROUGHS[rnd(d, 8)], *w = BOROUGHS[rnd(d, 8)];
        /* Straum compares text bytewise: PostgreSQL in C collation. */
        const char *s = "z.borough COLLATE \"C\"";
        switch (rnd(d, 7)) {
        case 0:
        case 1: {
            const char *eq = rnd(d, 3) ? "=" : "<>";
            snprintf(ask, na, "borough %s %s", eq, use_param ? param(a, v) : "");
            if (!use_param)
                cat(ask, na, "'%s'", v);
            snprintf(sql, ns, "%s %s '%s'", s, eq, v);
            break;
        }
        case 2: {
            const char *not = rnd(d, 3) ? "" : "NOT ";
            snprintf(ask, na, "borough %sIN ('%s', '%s')", not, v, w);
            snprintf(sql, ns, "%s %sIN ('%s', '%s')", s, not, v, w);
            break;
        }
        case 3: {
            const char *not = rnd(d, 2) ? "" : "NOT ";
            snprintf(ask, na, "borough IS %sNULL", not);
            snprintf(sql, ns, "z.borough IS %sNULL", not);
            break;
        }
        case 4:
            snprintf(ask, na, "borough %s '%s'", op, v);
            snprintf(sql, ns, "%s %s '%s'", s, op, v);
            break;
        case 5:
            snprintf(ask, na, "borough BETWEEN '%s' AND '%s'", v, w);
            snprintf(sql, ns, "%s BETWEEN '%s' AND '%s'", s, v, w);
            break;
        default: {
            const char *p = LIKES[rnd(d, 7)], *not = rnd(d, 4) ? "" : "NOT ";
            snprintf(ask, na, "borough %sLIKE '%s'", not, p);
            snprintf(sql, ns, "z.borough %sLIKE '%s'", not, p);
            break;
        }
        }
        return;
    }
    bool zone = c->kind == C_ZONE;
    int v = zone ? (rnd(d, 2) ? ZONES[rnd(d, 15)] : 1 + rnd(d, 265)) : rnd(d, 6);
    int w = zone ? (rnd(d, 2) ? ZONES[rnd(d, 15)] : 1 + rnd(d, 265)) : rnd(d, 6);
    char vs[16];
    snprintf(vs, sizeof vs, "%d", v);
    switch (rnd(d, 7)) {
    case 0:
    case 1: {
        const char *eq = rnd(d, 3) ? "=" : "<>";
        snprintf(ask, na, "%s %s %s", c->name, eq, use_param ? param(a, vs) : vs);
        snprintf(sql, ns, "%s %s %d", c->sql, eq, v);
        break;
    }
    case 2: {
        int u = zone ? ZONES[rnd(d, 15)] : rnd(d, 6);
        snprintf(ask, na, "%s IN (%d, %d, %d)", c->name, v, w, u);
        snprintf(sql, ns, "%s IN (%d, %d, %d)", c->sql, v, w, u);
        break;
    }
    case 3:
        snprintf(ask, na, "%s NOT IN (%d)", c->name, v);
        snprintf(sql, ns, "%s NOT IN (%d)", c->sql, v);
        break;
    case 4:
        snprintf(ask, na, "%s %s %d", c->name, op, v);
        snprintf(sql, ns, "%s %s %d", c->sql, op, v);
        break;
    case 5: {
        int lo = v < w ? v : w, hi = v < w ? w : v;
        const char *not = rnd(d, 4) ? "" : "NOT ";
        snprintf(ask, na, "%s %sBETWEEN %d AND %d", c->name, not, lo, hi);
        snprintf(sql, ns, "%s %sBETWEEN %d AND %d", c->sql, not, lo, hi);
        break;
    }
    default: {
        const char *not = rnd(d, 4) ? "NOT " : "";
        snprintf(ask, na, "%s IS %sNULL", c->name, not);
        snprintf(sql, ns, "%s IS %sNULL", c->sql, not);
        break;
    }
    }
}

/* OR, AND and NOT over leaves on any of the view's columns, depth at most
 * depth. */
static void tree(struct draw *d, struct taxi_random_ask *a, const struct view *v, int depth,
                 char *ask, size_t na, char *sql, size_t ns)
{
    if (depth == 0 || rnd(d, 3) == 0) {
        leaf(d, a, &v->columns[rnd(d, v->ncolumns)], false, ask, na, sql, ns);
        return;
    }
    char la[512], ls[1024], ra[512], rs[1024];
    tree(d, a, v, depth - 1, la, sizeof la, ls, sizeof ls);
    tree(d, a, v, depth - 1, ra, sizeof ra, rs, sizeof rs);
    ask[0] = sql[0] = '\0';
    switch (rnd(d, 3)) {
    case 0:
        cat(ask, na, "(%s OR %s)", la, ra);
        cat(sql, ns, "(%s OR %s)", ls, rs);
        break;
    case 1:
        cat(ask, na, "NOT (%s)", la);
        cat(sql, ns, "NOT (%s)", ls);
        break;
    default:
        cat(ask, na, "(%s AND %s)", la, ra);
        cat(sql, ns, "((%s) AND (%s))", ls, rs);
        break;
    }
}

/* ---- HAVING -------------------------------------------------------------- */

/* A threshold for measure m that keeps some groups and drops others at
 * some scale: counts and sums over decades, averages and fares in their
 * ranges. */
static void threshold(struct draw *d, enum measure_kind k, char *out, size_t len)
{
    static const char *const counts[] = {"1", "3", "10", "30", "100", "1000", "10000", "100000"};
    static const char *const sums[] = {"100", "1000", "10000", "100000", "1000000", "10000000"};
    switch (k) {
    case M_COUNT:
        snprintf(out, len, "%s", counts[rnd(d, 8)]);
        break;
    case M_SUM_FARE:
    case M_SUM_TIPS:
        snprintf(out, len, "%s", sums[rnd(d, 6)]);
        break;
    case M_AVG_FARE:
    case M_MEDIAN:
        snprintf(out, len, "%d.5", 5 + rnd(d, 30));
        break;
    case M_P99:
        snprintf(out, len, "%d", 30 + rnd(d, 60));
        break;
    default:
        snprintf(out, len, "%d.25", 1 + rnd(d, 6));
        break;
    }
}

/* ---- The ask ------------------------------------------------------------ */

#define HOUR 3600LL
#define DATA_FROM 1704067200LL /* 2024-01-01 00:00 UTC: the trips' first hour */
#define DATA_HOURS 4368        /* to 2024-07-01: six months */

/* The range's length in hours: an hour, hours, a day, days, a week, a
 * month, months, the whole six months, any length, or all time (0). */
static int range_hours(struct draw *d)
{
    switch (rnd(d, 12)) {
    case 0: return 1;
    case 1: return 2 + rnd(d, 22);
    case 2: return 24;
    case 3: return 24 * (2 + rnd(d, 6));
    case 4: return 168;
    case 5: return 24 * (28 + rnd(d, 4));
    case 6: return 24 * (31 + rnd(d, 60));
    case 7:
    case 8: return DATA_HOURS;
    case 9: return rnd(d, 4) ? 1 + rnd(d, DATA_HOURS) : 1 + rnd(d, 48);
    case 10: return 24 * (91 + rnd(d, 60));
    default: return rnd(d, 2) ? 0 : DATA_HOURS;
    }
}

void taxi_random_ask(uint32_t seed, int number, struct taxi_random_ask *a)
{
    memset(a, 0, sizeof *a);
    struct draw d = {((uint64_t)seed << 32) ^ (uint64_t)(uint32_t)number};
    next(&d);
    a->number = number;
    const struct view *v = &VIEWS[rnd(&d, 3) == 0];
    a->view = v->name;

    /* SELECT lists, GROUP BY lists and ORDER BY tie-breaks, side by side. */
    char sel_ask[512] = "", sel_sql[1024] = "", grp_ask[256] = "", grp_sql[256] = "";
    char grp_expr[1024] = "", ties_ask[256] = "", ties_sql[512] = "";
    int ncol = 0; /* SQL output columns so far: GROUP BY and ORDER BY ordinals */

    /* Time. */
    static const char *const bins[] = {"1 hour", "1 day", "7 days"};
    static const char *const units[] = {"day", "week", "month"};
    char tsql[160] = "";
    int t = rnd(&d, 12);
    if (t == 5) {
        snprintf(a->time_group, sizeof a->time_group, "bucket");
        cat(sel_ask, sizeof sel_ask, "bucket, ");
        snprintf(tsql, sizeof tsql, "date_bin('1 hour', t.pickup_at, timestamptz 'epoch')");
        cat(grp_ask, sizeof grp_ask, "bucket");
        cat(ties_ask, sizeof ties_ask, ", bucket");
    } else if (t >= 6 && t <= 8) {
        const char *w = bins[t - 6];
        snprintf(a->time_group, sizeof a->time_group, "%s", w);
        cat(sel_ask, sizeof sel_ask, "date_bin('%s', bucket) AS b, ", w);
        snprintf(tsql, sizeof tsql, "date_bin('%s', t.pickup_at, timestamptz 'epoch')", w);
        cat(grp_ask, sizeof grp_ask, "b");
        cat(ties_ask, sizeof ties_ask, ", b");
    } else if (t >= 9) {
        const char *u = units[t - 9];
        snprintf(a->time_group, sizeof a->time_group, "%s", u);
        cat(sel_ask, sizeof sel_ask, "date_trunc('%s', bucket) AS b, ", u);
        snprintf(tsql, sizeof tsql, "date_trunc('%s', t.pickup_at)", u);
        cat(grp_ask, sizeof grp_ask, "b");
        cat(ties_ask, sizeof ties_ask, ", b");
    }
    if (tsql[0]) {
        cat(sel_sql, sizeof sel_sql, "%s, ", tsql);
        cat(grp_sql, sizeof grp_sql, "%d", ++ncol);
        cat(grp_expr, sizeof grp_expr, "%s", tsql);
        cat(ties_sql, sizeof ties_sql, ", %d", ncol);
    }

    /* Keys and the dim column: none, one, two or three, in any order. */
    int order[3] = {0, 1, 2};
    for (int i = v->ncolumns - 1; i > 0; i--) {
        int j = rnd(&d, i + 1), x = order[i];
        order[i] = order[j];
        order[j] = x;
    }
    int nkeys = rnd(&d, 4);
    if (nkeys > v->ncolumns)
        nkeys = v->ncolumns;
    a->nkeys = nkeys;
    for (int k = 0; k < nkeys; k++) {
        const struct column *c = &v->columns[order[k]];
        cat(sel_ask, sizeof sel_ask, "%s, ", c->name);
        cat(sel_sql, sizeof sel_sql, "%s, ", c->sql);
        cat(grp_ask, sizeof grp_ask, "%s%s", grp_ask[0] ? ", " : "", c->name);
        cat(grp_sql, sizeof grp_sql, "%s%d", grp_sql[0] ? ", " : "", ++ncol);
        cat(grp_expr, sizeof grp_expr, "%s%s", grp_expr[0] ? ", " : "", c->sql);
        cat(ties_ask, sizeof ties_ask, ", %s", c->name);
        if (c->kind == C_BOROUGH)
            cat(ties_sql, sizeof ties_sql, ", %s COLLATE \"C\"", c->sql);
        else
            cat(ties_sql, sizeof ties_sql, ", %d", ncol);
    }
    bool grouped = grp_ask[0] != '\0';

    /* Measures: at least one. */
    int chosen[8], nchosen = 0, first = rnd(&d, v->nmeasures);
    for (int m = 0; m < v->nmeasures; m++)
        if (m == first || rnd(&d, 3) == 0) {
            chosen[nchosen++] = m;
            cat(sel_ask, sizeof sel_ask, "%s, ", v->measures[m].name);
            cat(sel_sql, sizeof sel_sql, "%s, ", v->measures[m].sql);
            a->percentile |= v->measures[m].kind == M_MEDIAN || v->measures[m].kind == M_P99;
        }
    sel_ask[strlen(sel_ask) - 2] = '\0';
    sel_sql[strlen(sel_sql) - 2] = '\0';

    /* WHERE: the range, then conditions. */
    char where_ask[1024] = "", where_sql[3072] = "";
    int hours = range_hours(&d);
    a->range_hours = hours;
    if (hours) {
        int start = rnd(&d, DATA_HOURS - hours + 1);
        if (hours % 24 == 0 && rnd(&d, 2))
            start -= start % 24; /* whole UTC days, as often as not */
        int64_t from = DATA_FROM + start * HOUR, to = from + hours * HOUR;
        char fa[40], za[40];
        bool lit = rnd(&d, 4) == 0;
        a->off_edge = rnd(&d, 6) == 0;
        if (a->off_edge) { /* any second: a time picker's range */
            from += rnd(&d, 3600);
            to += rnd(&d, 3600) - 1800;
            if (to <= from)
                to = from + 1;
            instant(from, fa, sizeof fa);
            instant(to, za, sizeof za);
            static const char *const lo[] = {">=", ">", "BETWEEN"}, *const hi[] = {"<", "<=", "AND"};
            int f = rnd(&d, 3);
            const char *vb = "date_bin('1 hour', t.pickup_at, timestamptz 'epoch')";
            if (f == 2) {
                cat(where_ask, sizeof where_ask, "bucket BETWEEN %s", lit ? "" : param(a, fa));
                if (lit)
                    cat(where_ask, sizeof where_ask, "'%s'", fa);
                cat(where_ask, sizeof where_ask, " AND %s", lit ? "" : param(a, za));
                if (lit)
                    cat(where_ask, sizeof where_ask, "'%s'", za);
                cat(where_sql, sizeof where_sql, "%s BETWEEN '%s' AND '%s'", vb, fa, za);
            } else {
                const char *l = lo[f], *h = hi[rnd(&d, 2)];
                cat(where_ask, sizeof where_ask, "bucket %s %s", l, lit ? "" : param(a, fa));
                if (lit)
                    cat(where_ask, sizeof where_ask, "'%s'", fa);
                cat(where_ask, sizeof where_ask, " AND bucket %s %s", h, lit ? "" : param(a, za));
                if (lit)
                    cat(where_ask, sizeof where_ask, "'%s'", za);
                cat(where_sql, sizeof where_sql, "%s %s '%s' AND %s %s '%s'", vb, l, fa, vb, h, za);
            }
        } else { /* hour edges: the hour buckets are the rows' own hours */
            instant(from, fa, sizeof fa);
            instant(to, za, sizeof za);
            cat(where_ask, sizeof where_ask, "bucket >= %s", lit ? "" : param(a, fa));
            if (lit)
                cat(where_ask, sizeof where_ask, "'%s'", fa);
            cat(where_ask, sizeof where_ask, " AND bucket < %s", lit ? "" : param(a, za));
            if (lit)
                cat(where_ask, sizeof where_ask, "'%s'", za);
            cat(where_sql, sizeof where_sql, "t.pickup_at >= '%s' AND t.pickup_at < '%s'", fa, za);
        }
    }
    for (int c = 0; c < v->ncolumns; c++)
        if (rnd(&d, 4) == 0) {
            char la[512], ls[1024];
            leaf(&d, a, &v->columns[c], rnd(&d, 2), la, sizeof la, ls, sizeof ls);
            cat(where_ask, sizeof where_ask, "%s%s", where_ask[0] ? " AND " : "", la);
            cat(where_sql, sizeof where_sql, "%s(%s)", where_sql[0] ? " AND " : "", ls);
        }
    if (rnd(&d, 8) == 0) {
        char la[1024], ls[2048];
        tree(&d, a, v, 2, la, sizeof la, ls, sizeof ls);
        cat(where_ask, sizeof where_ask, "%s%s", where_ask[0] ? " AND " : "", la);
        cat(where_sql, sizeof where_sql, "%s(%s)", where_sql[0] ? " AND " : "", ls);
    }

    const char *zone_sql = v->columns[0].sql;
    snprintf(a->ask, sizeof a->ask, "SELECT %s FROM %s", sel_ask, v->name);
    snprintf(a->sql, sizeof a->sql,
             "SELECT %s FROM yellow_trips t LEFT JOIN taxi_zones z ON z.location_id = %s", sel_sql,
             zone_sql);
    if (where_ask[0])
        cat(a->ask, sizeof a->ask, " WHERE %s", where_ask);
    if (where_sql[0])
        cat(a->sql, sizeof a->sql, " WHERE %s", where_sql);
    if (grouped) {
        snprintf(a->groups_sql, sizeof a->groups_sql,
                 "SELECT count(*) FROM (SELECT 1 FROM yellow_trips t LEFT JOIN taxi_zones z "
                 "ON z.location_id = %s%s%s GROUP BY %s) g",
                 zone_sql, where_sql[0] ? " WHERE " : "", where_sql, grp_expr);
        cat(a->ask, sizeof a->ask, " GROUP BY %s", grp_ask);
        cat(a->sql, sizeof a->sql, " GROUP BY %s", grp_sql);
    } else {
        snprintf(a->groups_sql, sizeof a->groups_sql, "SELECT 1");
    }
    if (!grouped)
        return;

    /* HAVING on any measure of the view, selected or not. */
    if (rnd(&d, 6) == 0) {
        const struct measure *m = &v->measures[rnd(&d, v->nmeasures)];
        static const char *const ops[] = {">", ">=", "<", "<>"};
        const char *op = ops[rnd(&d, 4)];
        char th[32];
        threshold(&d, m->kind, th, sizeof th);
        a->having = true;
        cat(a->ask, sizeof a->ask, " HAVING %s %s %s", m->name, op,
            rnd(&d, 2) ? param(a, th) : th);
        cat(a->sql, sizeof a->sql, " HAVING %s %s %s", m->sql, op, th);
    }
    /* ORDER BY a selected measure, ties broken by every key: LIMIT then
     * keeps one set of rows on both sides. */
    if (rnd(&d, 4) == 0) {
        const struct measure *m = &v->measures[chosen[rnd(&d, nchosen)]];
        const char *dir = rnd(&d, 3) ? " DESC" : "";
        int n = 1 + rnd(&d, rnd(&d, 2) ? 10 : 100);
        char ns[16];
        snprintf(ns, sizeof ns, "%d", n);
        a->limited = true;
        /* A literal: a LIMIT parameter must be a JSON number, and the
         * parameters here travel as strings. */
        cat(a->ask, sizeof a->ask, " ORDER BY %s%s%s LIMIT %s", m->name, dir, ties_ask, ns);
        cat(a->sql, sizeof a->sql, " ORDER BY %s%s%s LIMIT %d", m->sql, dir, ties_sql, n);
        if (rnd(&d, 5) == 0) {
            int off = 1 + rnd(&d, 5);
            cat(a->ask, sizeof a->ask, " OFFSET %d", off);
            cat(a->sql, sizeof a->sql, " OFFSET %d", off);
        }
    }
}

const char *taxi_random_shape(const struct taxi_random_ask *a, char *buf, int len)
{
    char range[24];
    if (a->range_hours)
        snprintf(range, sizeof range, "%d h%s", a->range_hours, a->off_edge ? " off-edge" : "");
    else
        snprintf(range, sizeof range, "all time");
    snprintf(buf, (size_t)len, "%s%s%s%s, %d key%s, %s%s%s", a->view, a->percentile ? " pct" : "",
             a->time_group[0] ? " by " : "", a->time_group, a->nkeys, a->nkeys == 1 ? "" : "s",
             range, a->having ? ", having" : "", a->limited ? ", top-n" : "");
    return buf;
}
