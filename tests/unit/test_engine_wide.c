/* test_engine_wide.c -- views wider than any fixed array: a view with 256
 * cell keys (255 group keys and the join key) and a join of 256 dim columns,
 * ingest's INGEST_MAX_VIEW_WIDTH both, asked grouped by every key and every
 * dim column at once (511 group keys; the engine's stack arrays held 65 and
 * 64). The engine sizes its group key and its dim values from the view and
 * the ask; the answer must equal what was put, cell for cell. */
#include "engine/engine.h"
#include "sql/sql.h"
#include "store/store.h"
#include "tests/unit/wide_view.h"

#include <cjson/cJSON.h>
#include <criterion/criterion.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { NKEYS = 255, NDIMS = 256, NROWS = 40, NZONES = 3 };
#define T0 1704067200000000LL /* 2024-01-01 00:00 UTC */

static int64_t key_of(int row, int k) { return (row * 7 + k) % 5; }

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st, (void)flag, (void)ftw;
    return remove(path);
}

Test(engine_wide, every_key_and_dim_column_of_the_widest_view)
{
    char dir[] = "/tmp/straum-wide-XXXXXX";
    cr_assert_not_null(mkdtemp(dir));
    char *text = wide_view_sql(NKEYS, NDIMS);
    struct sql_error serr;
    struct sql_view_list *views = sql_parse_views(text, &serr);
    cr_assert_not_null(views, "%s", serr.message);
    const struct sql_view *v = &views->views[0];
    cr_assert_eq(v->ncell_keys, NKEYS + 1);
    cr_assert_eq(v->joins[0].ndim_columns - 1, NDIMS);
    struct store_column_type *types = calloc((size_t)v->nfact_columns, sizeof *types);
    for (int c = 0; c < v->nfact_columns; c++)
        types[c] = strcmp(v->fact_columns[c].name, "t") == 0
                       ? (struct store_column_type){STORE_TYPE_TIMESTAMP, 0, 1184}
                       : (struct store_column_type){STORE_TYPE_INT, 0, 23};
    struct store_view_types vt = {types};
    struct store *s;
    struct store_error err;
    cr_assert_eq(store_create(dir, text, &vt, &s, &err), 0, "%s", err.message);
    sql_view_list_free(views);
    v = &store_views(s)->views[0];

    int64_t keys[NKEYS + 1], one = 1;
    for (int row = 0; row < NROWS; row++) {
        for (int k = 0; k < v->ncell_keys; k++) {
            const char *name = v->fact_columns[v->cell_keys[k]].name;
            keys[k] = strcmp(name, "j") == 0 ? row % NZONES : key_of(row, atoi(name + 1));
        }
        struct store_delta d = {.view = 0, .time = T0, .keys = keys, .counts = &one};
        cr_assert_eq(store_apply(s, &d, &err), 0, "%s", err.message);
    }
    static char texts[NZONES][NDIMS][16];
    struct store_dim_value vals[NDIMS];
    for (int z = 0; z < NZONES; z++) {
        for (int d = 0; d < NDIMS; d++) {
            snprintf(texts[z][d], sizeof texts[z][d], "z%d-c%d", z, d);
            vals[d] = (struct store_dim_value){false, texts[z][d], strlen(texts[z][d])};
        }
        cr_assert_eq(store_projection_put(s, 0, 0, z, vals, &err), 0, "%s", err.message);
    }
    struct store_position pos = {.lsn = 1};
    cr_assert_eq(store_commit(s, &pos, &err), 0, "%s", err.message);
    store_close(s);
    free(types);
    free(text);

    /* Every key and dim column, grouped and ordered by all of them. */
    size_t cap = 1 << 16, n = 0;
    char *ask = malloc(cap);
    n += (size_t)snprintf(ask + n, cap - n, "SELECT ");
    for (int k = 0; k < NKEYS; k++)
        n += (size_t)snprintf(ask + n, cap - n, "k%d, ", k);
    for (int d = 0; d < NDIMS; d++)
        n += (size_t)snprintf(ask + n, cap - n, "c%d, ", d);
    n += (size_t)snprintf(ask + n, cap - n,
                          "n FROM wide WHERE bucket >= '2024-01-01 00:00:00+00' AND "
                          "bucket < '2024-01-01 01:00:00+00' GROUP BY k0");
    for (int k = 1; k < NKEYS; k++)
        n += (size_t)snprintf(ask + n, cap - n, ", k%d", k);
    for (int d = 0; d < NDIMS; d++)
        n += (size_t)snprintf(ask + n, cap - n, ", c%d", d);
    cr_assert_lt(n, cap);

    struct engine_limits lim = {.max_ask_bytes = cap};
    struct engine *e = engine_open(dir, &lim, &err);
    cr_assert_not_null(e, "%s", err.message);
    struct ask_request req = {.ask = ask};
    struct buf out = {0};
    struct ask_error aerr;
    cr_assert_eq(engine_ask(e, &req, &out, &aerr), 0, "%d %s: %s", aerr.status, aerr.code,
                 aerr.message);
    buf_put(&out, "", 1);
    cJSON *j = cJSON_Parse(out.data);
    cr_assert_not_null(j);
    cJSON *rows = cJSON_GetObjectItem(j, "rows");
    /* Rows r and r + 5 * NZONES share keys and zone (key_of has period 5). */
    cr_assert_eq(cJSON_GetArraySize(rows), 5 * NZONES, "%d rows", cJSON_GetArraySize(rows));
    int64_t total = 0;
    cJSON *row;
    cJSON_ArrayForEach(row, rows)
    {
        cr_assert_eq(cJSON_GetArraySize(row), NKEYS + NDIMS + 1);
        /* Find the fixture row with these keys; its zone names every dim value. */
        int found = -1;
        for (int r = 0; r < 5 * NZONES && found < 0; r++) {
            bool same = true;
            for (int k = 0; k < NKEYS && same; k++)
                same = (int64_t)cJSON_GetArrayItem(row, k)->valuedouble == key_of(r, k);
            char want[16];
            snprintf(want, sizeof want, "z%d-c0", r % NZONES);
            if (same && strcmp(cJSON_GetArrayItem(row, NKEYS)->valuestring, want) == 0)
                found = r;
        }
        cr_assert_geq(found, 0, "a row with keys nobody put");
        for (int d = 0; d < NDIMS; d++)
            cr_assert_str_eq(cJSON_GetArrayItem(row, NKEYS + d)->valuestring, texts[found % NZONES][d]);
        int64_t count = (int64_t)cJSON_GetArrayItem(row, NKEYS + NDIMS)->valuedouble;
        cr_assert(count == 2 || count == 3, "count %lld", (long long)count);
        total += count;
    }
    cr_assert_eq(total, NROWS);
    cJSON_Delete(j);
    buf_free(&out);
    free(ask);
    engine_close(e);
    nftw(dir, rm_entry, 8, FTW_DEPTH | FTW_PHYS);
}
