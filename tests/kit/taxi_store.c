/* taxi_store.c -- a small taxi store through the store API (taxi_store.h). */
#include "tests/kit/taxi_store.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

/* splitmix64: a deterministic mix, so the store is the same on every run. */
static int64_t mix(uint64_t x)
{
    x += 0x9E3779B97F4A7C15ULL;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
    return (int64_t)((x ^ (x >> 31)) >> 1);
}

struct trip taxi_store_trip(int i, int64_t start_us, int days)
{
    uint64_t k = (uint64_t)i * 8;
    return (struct trip){
        .pickup_at = start_us + mix(k) % (days * 86400LL) * 1000000,
        .pu = 1 + mix(k + 1) % 12,
        .dropoff = 1 + mix(k + 2) % 12,
        .payment = mix(k + 3) % 6,
        .fare = mix(k + 4) % 8000 - 300,
        .tip = mix(k + 5) % 1500,
        .dist = mix(k + 6) % 3000,
    };
}

/* The value of a fact column of the taxi views for one trip; false for a
 * column the trips do not have. */
static bool trip_value(const struct trip *t, const char *column, int64_t *out)
{
    static const struct {
        const char *name;
        size_t at;
    } COLUMNS[] = {
        {"pickup_at", offsetof(struct trip, pickup_at)},
        {"pu_location_id", offsetof(struct trip, pu)},
        {"do_location_id", offsetof(struct trip, dropoff)},
        {"payment_type", offsetof(struct trip, payment)},
        {"fare_amount", offsetof(struct trip, fare)},
        {"tip_amount", offsetof(struct trip, tip)},
        {"trip_distance", offsetof(struct trip, dist)},
    };
    for (size_t i = 0; i < sizeof COLUMNS / sizeof COLUMNS[0]; i++)
        if (!strcmp(column, COLUMNS[i].name)) {
            memcpy(out, (const char *)t + COLUMNS[i].at, sizeof *out);
            return true;
        }
    return false;
}

static int fail(struct store_error *err, const char *what, const char *name)
{
    snprintf(err->message, sizeof err->message, "%s %s", what, name);
    return -1;
}

int taxi_store_apply(struct store *s, const struct trip *t, int sign, struct store_error *err)
{
    const struct sql_view_list *list = store_views(s);
    for (int v = 0; v < list->nviews; v++) {
        const struct sql_view *view = &list->views[v];
        int64_t keys[8], counts[8];
        struct store_sum sums[8];
        struct store_vc_delta vcs[8];
        if (view->ncell_keys > 8 || view->ncounts > 8 || view->nsums > 8 ||
            view->nvalue_counts > 8)
            return fail(err, "more than 8 keys, counts, sums or value counts in view", view->name);
        memset(sums, 0, sizeof sums);
        for (int k = 0; k < view->ncell_keys; k++) {
            const char *col = view->fact_columns[view->cell_keys[k]].name;
            if (!trip_value(t, col, &keys[k]))
                return fail(err, "the trips have no column", col);
        }
        for (int c = 0; c < view->ncounts; c++)
            counts[c] = sign; /* no NULLs and no filters in the taxi views */
        for (int c = 0; c < view->nsums; c++) {
            const char *col = view->fact_columns[view->sums[c].fact_column].name;
            int64_t value;
            if (!trip_value(t, col, &value))
                return fail(err, "the trips have no column", col);
            sums[c].exact = sign * value;
        }
        for (int c = 0; c < view->nvalue_counts; c++) {
            const char *col = view->fact_columns[view->value_counts[c].fact_column].name;
            int64_t value;
            if (!trip_value(t, col, &value))
                return fail(err, "the trips have no column", col);
            vcs[c] = (struct store_vc_delta){c, value, sign};
        }
        struct store_delta d = {.view = v, .time = t->pickup_at, .keys = keys, .counts = counts,
                                .sums = sums, .vcs = vcs, .nvcs = view->nvalue_counts};
        if (store_apply(s, &d, err))
            return -1;
    }
    return 0;
}

/* The taxi columns' PostgreSQL types, as straum-ingest would find them. */
static struct store_column_type column_type(const char *column)
{
    if (!strcmp(column, "pickup_at"))
        return (struct store_column_type){STORE_TYPE_TIMESTAMP, 0, 1184};
    if (strstr(column, "_amount") || !strcmp(column, "trip_distance"))
        return (struct store_column_type){STORE_TYPE_NUMERIC, 2, 1700};
    return (struct store_column_type){STORE_TYPE_INT, 0, 23};
}

int taxi_store_make(const char *dir, const char *views_text, int ntrips, int64_t start_us,
                    int days, const struct store_position *pos, struct store_error *err)
{
    struct sql_error serr;
    struct sql_view_list *views = sql_parse_views(views_text, &serr);
    if (!views)
        return fail(err, "the views:", serr.message);
    enum { MAX_VIEWS = 4, MAX_COLUMNS = 16 };
    struct store_column_type types[MAX_VIEWS][MAX_COLUMNS];
    struct store_view_types vt[MAX_VIEWS];
    bool fits = views->nviews <= MAX_VIEWS;
    for (int v = 0; fits && v < views->nviews; v++) {
        fits = views->views[v].nfact_columns <= MAX_COLUMNS;
        for (int c = 0; fits && c < views->views[v].nfact_columns; c++)
            types[v][c] = column_type(views->views[v].fact_columns[c].name);
        vt[v].fact = types[v];
    }
    sql_view_list_free(views);
    if (!fits)
        return fail(err, "more than 4 views or 16 fact columns in a view:", dir);
    struct store *s;
    if (store_create(dir, views_text, vt, &s, err))
        return -1;
    int rc = 0;
    for (int i = 0; i < ntrips && rc == 0; i++) {
        struct trip t = taxi_store_trip(i, start_us, days);
        rc = taxi_store_apply(s, &t, +1, err);
    }
    static const char *const boroughs[] = {"Manhattan", "Queens", "Brooklyn"};
    const struct sql_view_list *list = store_views(s);
    for (int v = 0; v < list->nviews && rc == 0; v++)
        for (int j = 0; j < list->views[v].njoins && rc == 0; j++)
            for (int64_t zone = 1; zone <= 10 && rc == 0; zone++) {
                struct store_dim_value vals[4];
                int n = list->views[v].joins[j].ndim_columns - 1;
                if (n > 4) {
                    rc = fail(err, "more than 4 dim columns in a join of view",
                              list->views[v].name);
                    break;
                }
                for (int c = 0; c < n; c++) {
                    const char *b = boroughs[zone % 3];
                    vals[c] = (struct store_dim_value){false, b, strlen(b)};
                }
                rc = store_projection_put(s, v, j, zone, vals, err);
            }
    if (rc == 0)
        rc = store_commit(s, pos, err);
    store_close(s);
    return rc ? -1 : 0;
}
