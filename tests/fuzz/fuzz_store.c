/* fuzz_store.c -- builds the serve-side fuzz targets' taxi store (see
 * fuzz_store.h) through the store API, as ingest would. */
#include "tests/fuzz/fuzz_store.h"

#include "store/store.h"
#include "tests/unit/source_file.h"

#include <ftw.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

_Noreturn void fuzz_fail(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "FUZZ FINDING: ");
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n");
    va_end(ap);
    abort();
}

/* A deterministic mix (splitmix64), so the store is the same on every run. */
static int64_t mix(uint64_t x)
{
    x += 0x9E3779B97F4A7C15ULL;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
    return (int64_t)((x ^ (x >> 31)) >> 1);
}

struct trip {
    int64_t pickup_at, pu, dropoff, payment, fare, tip, dist;
};

static struct trip trip_of(int i)
{
    uint64_t k = (uint64_t)i * 8;
    struct trip t = {
        .pickup_at = FUZZ_START_US + mix(k) % (FUZZ_DAYS * 86400LL) * 1000000,
        .pu = 1 + mix(k + 1) % 12,
        .dropoff = 1 + mix(k + 2) % 12,
        .payment = mix(k + 3) % 6,
        .fare = mix(k + 4) % 8000 - 300,
        .tip = mix(k + 5) % 1500,
        .dist = mix(k + 6) % 3000,
    };
    return t;
}

static int64_t trip_value(const struct trip *t, const char *column)
{
    if (!strcmp(column, "pickup_at"))
        return t->pickup_at;
    if (!strcmp(column, "pu_location_id"))
        return t->pu;
    if (!strcmp(column, "do_location_id"))
        return t->dropoff;
    if (!strcmp(column, "payment_type"))
        return t->payment;
    if (!strcmp(column, "fare_amount"))
        return t->fare;
    if (!strcmp(column, "tip_amount"))
        return t->tip;
    if (!strcmp(column, "trip_distance"))
        return t->dist;
    fuzz_fail("the fuzz store has no column %s", column);
}

static struct store_column_type column_type(const char *column)
{
    if (!strcmp(column, "pickup_at"))
        return (struct store_column_type){STORE_TYPE_TIMESTAMP, 0, 1184};
    if (strstr(column, "_amount") || !strcmp(column, "trip_distance"))
        return (struct store_column_type){STORE_TYPE_NUMERIC, 2, 1700};
    return (struct store_column_type){STORE_TYPE_INT, 0, 23};
}

/* Applies trips from..from+n-1, each sign times (1 adds, -1 takes away). */
static void apply_trips(struct store *s, int from, int n, int sign)
{
    struct store_error err;
    const struct sql_view_list *list = store_views(s);
    for (int i = from; i < from + n; i++) {
        struct trip t = trip_of(i);
        for (int v = 0; v < list->nviews; v++) {
            const struct sql_view *view = &list->views[v];
            int64_t keys[8], counts[8];
            struct store_sum sums[8];
            struct store_vc_delta vcs[8];
            memset(sums, 0, sizeof sums);
            for (int k = 0; k < view->ncell_keys; k++)
                keys[k] = trip_value(&t, view->fact_columns[view->cell_keys[k]].name);
            for (int c = 0; c < view->ncounts; c++)
                counts[c] = sign; /* no NULLs and no filters in the taxi views */
            for (int c = 0; c < view->nsums; c++)
                sums[c].exact =
                    sign * trip_value(&t, view->fact_columns[view->sums[c].fact_column].name);
            for (int c = 0; c < view->nvalue_counts; c++) {
                int col = view->value_counts[c].fact_column;
                vcs[c] = (struct store_vc_delta){c, trip_value(&t, view->fact_columns[col].name),
                                                 sign};
            }
            struct store_delta d = {.view = v, .time = t.pickup_at, .keys = keys,
                                    .counts = counts, .sums = sums, .vcs = vcs,
                                    .nvcs = view->nvalue_counts};
            if (store_apply(s, &d, &err))
                fuzz_fail("store_apply: %s", err.message);
        }
    }
}

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)flag;
    (void)ftw;
    return remove(path);
}

void fuzz_remove_tree(const char *dir) { nftw(dir, rm_entry, 8, FTW_DEPTH | FTW_PHYS); }

static char fuzz_dir[256];

static void remove_store(void)
{
    if (fuzz_dir[0])
        fuzz_remove_tree(fuzz_dir);
}

const char *fuzz_store_make(int trips)
{
    const char *tmp = getenv("TMPDIR");
    snprintf(fuzz_dir, sizeof fuzz_dir, "%s/straum-fuzz-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(fuzz_dir))
        fuzz_fail("mkdtemp %s failed", fuzz_dir);
    atexit(remove_store);

    char *views_text = read_source_file("bench/taxi_views.sql");
    if (!views_text)
        fuzz_fail("cannot read bench/taxi_views.sql under %s", STRAUM_SOURCE_DIR);
    struct sql_error serr;
    struct sql_view_list *views = sql_parse_views(views_text, &serr);
    if (!views || views->nviews > 4)
        fuzz_fail("bench/taxi_views.sql: %s", views ? "more than 4 views" : serr.message);
    struct store_column_type types[4][16];
    struct store_view_types vt[4];
    for (int v = 0; v < views->nviews; v++) {
        if (views->views[v].nfact_columns > 16)
            fuzz_fail("view %d has more than 16 fact columns", v);
        for (int c = 0; c < views->views[v].nfact_columns; c++)
            types[v][c] = column_type(views->views[v].fact_columns[c].name);
        vt[v].fact = types[v];
    }
    sql_view_list_free(views);

    struct store *s;
    struct store_error err;
    if (store_create(fuzz_dir, views_text, vt, &s, &err))
        fuzz_fail("store_create: %s", err.message);
    free(views_text);
    apply_trips(s, 0, trips, 1);
    const struct sql_view_list *list = store_views(s);
    static const char *const boroughs[] = {"Manhattan", "Queens", "Brooklyn"};
    for (int v = 0; v < list->nviews; v++)
        for (int j = 0; j < list->views[v].njoins; j++)
            for (int64_t zone = 1; zone <= 10; zone++) {
                struct store_dim_value vals[4];
                int n = list->views[v].joins[j].ndim_columns - 1;
                if (n > 4)
                    fuzz_fail("join %d of view %d has more than 4 dim columns", j, v);
                for (int c = 0; c < n; c++) {
                    const char *b = boroughs[zone % 3];
                    vals[c] = (struct store_dim_value){false, b, strlen(b)};
                }
                if (store_projection_put(s, v, j, zone, vals, &err))
                    fuzz_fail("store_projection_put: %s", err.message);
            }
    /* A position, so /readyz and /metrics have one; lag is not checked
     * (the servers run with --max-lag 0). */
    struct store_position pos = {.lsn = 0x16B3748, .commit_time = FUZZ_START_US,
                                 .contact_time = FUZZ_START_US, .bytes_behind = 0};
    if (store_commit(s, &pos, &err))
        fuzz_fail("store_commit: %s", err.message);
    store_close(s);
    return fuzz_dir;
}

void fuzz_store_add_deltas(const char *dir, int trips, int commits, int each)
{
    struct store *s;
    struct store_error err;
    if (store_open(dir, STORE_READ_WRITE, &s, &err))
        fuzz_fail("store_open read-write: %s", err.message);
    /* Every base takes deltas, however small (SPEC.md §4.4). */
    store_set_inline_fold_bytes(s, 0);
    for (int c = 0; c < commits; c++) {
        apply_trips(s, trips + c * each, each, 1); /* new trips */
        apply_trips(s, c * 2, 2, -1);              /* two of the first load's gone */
        struct store_position pos = {.lsn = 0x16B3748 + 1 + (uint64_t)c,
                                     .commit_time = FUZZ_START_US,
                                     .contact_time = FUZZ_START_US};
        if (store_commit(s, &pos, &err))
            fuzz_fail("store_commit: %s", err.message);
    }
    store_close(s);
}
