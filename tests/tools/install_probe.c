/* install_probe.c -- an outside program of the installed store library.
 *
 * test_install.sh copies it out of the source tree and builds it against an
 * installed prefix only: cc probe.c $(pkg-config --cflags --libs --static
 * straum-store). It makes a small store through the public API (store/store.h
 * and the sql/ and format/ headers it includes), opens it again read-only,
 * and prints what it reads, one "name value" a line, for the script to
 * compare:
 *
 *   format_version 12
 *   position 1A/002B3C4D
 *   view trips widths 2
 *   cells 6 3            (width 0, width 1: distinct (bucket, zone) pairs)
 *   verified N           (segments that store_verify_segment passed)
 *   code 12.50           (store_code_format of a numeric(…,2) code)
 *
 * Usage: install_probe DIR (DIR must not hold a store yet). Exit 0 or 1. */
#include "store/store.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define HOUR_USEC (3600LL * 1000000)
#define LSN ((0x1AULL << 32) | 0x002B3C4DULL)

static const char views_text[] =
    "CREATE VIEW trips WITH (buckets = '1 hour, 1 day') AS\n"
    "SELECT date_bin('1 hour', t.pickup_at, timestamptz 'epoch') AS bucket, t.zone_id,\n"
    " count(*) AS trips, sum(t.fare) AS fare\n"
    "FROM yellow_trips t GROUP BY 1, 2";

static int fail(const char *what, const char *message)
{
    fprintf(stderr, "install_probe: %s: %s\n", what, message);
    return 1;
}

static int fact_index(const struct sql_view *v, const char *name)
{
    for (int i = 0; i < v->nfact_columns; i++)
        if (strcmp(v->fact_columns[i].name, name) == 0)
            return i;
    return -1;
}

/* Ten rows, ten minutes apart from a day's start: hours 0 and 1, zones 1-3. */
static int make_store(const char *dir)
{
    struct sql_error serr;
    struct sql_view_list *views = sql_parse_views(views_text, &serr);
    if (!views)
        return fail("parsing the views", serr.message);
    const struct sql_view *v = &views->views[0];
    int zone = fact_index(v, "zone_id"), fare = fact_index(v, "fare"),
        at = fact_index(v, "pickup_at");
    if (zone < 0 || fare < 0 || at < 0 || v->nfact_columns != 3) {
        sql_view_list_free(views);
        return fail("the view", "unexpected fact columns");
    }
    struct store_column_type types[3];
    types[zone] = (struct store_column_type){STORE_TYPE_INT, 0, 23};
    types[fare] = (struct store_column_type){STORE_TYPE_NUMERIC, 2, 1700};
    types[at] = (struct store_column_type){STORE_TYPE_TIMESTAMP, 0, 1184};
    struct store_view_types vt = {types};
    struct store *s;
    struct store_error err;
    int rc = store_create(dir, views_text, &vt, &s, &err);
    sql_view_list_free(views);
    if (rc)
        return fail("store_create", err.message);

    v = &store_views(s)->views[0];
    int64_t day = 1704067200LL * 1000000; /* 2024-01-01 00:00 UTC */
    for (int i = 0; i < 10; i++) {
        int64_t keys[4], counts[4];
        struct store_sum sums[4];
        if (v->ncell_keys != 1 || v->ncounts > 4 || v->nsums != 1) {
            store_close(s);
            return fail("the view", "unexpected accumulators");
        }
        keys[0] = 1 + i % 3;
        for (int k = 0; k < v->ncounts; k++)
            counts[k] = 1;
        sums[0] = (struct store_sum){1250 + 100 * i, 0};
        struct store_delta d = {0, day + i * (HOUR_USEC / 6), keys, counts, sums, NULL, 0};
        if (store_apply(s, &d, &err)) {
            store_close(s);
            return fail("store_apply", err.message);
        }
    }
    struct store_position pos = {LSN, day, day, 0};
    rc = store_commit(s, &pos, &err);
    store_close(s);
    return rc ? fail("store_commit", err.message) : 0;
}

static int read_store(const char *dir)
{
    struct store *s;
    struct store_read *r;
    struct store_error err;
    if (store_open(dir, STORE_READ_ONLY, &s, &err))
        return fail("store_open", err.message);
    if (store_read_begin(s, &r, &err)) {
        store_close(s);
        return fail("store_read_begin", err.message);
    }
    int status = 0;
    struct store_catalog cat;
    if (store_read_catalog(r, &cat, &err)) {
        status = fail("store_read_catalog", err.message);
        goto out;
    }
    printf("format_version %u\n", (unsigned)cat.format_version);
    printf("position %X/%08X\n", (unsigned)(cat.position.lsn >> 32),
           (unsigned)(cat.position.lsn & 0xffffffffu));
    const struct sql_view_list *views = store_views(s);
    for (int i = 0; i < views->nviews; i++)
        printf("view %s widths %d\n", views->views[i].name, views->views[i].nwidths);

    long cells[2] = {0, 0};
    int verified = 0;
    for (int w = 0; w < 2; w++) {
        struct store_segment_iter it;
        struct store_segment seg;
        if (store_segments_begin(r, 0, w, INT64_MIN, INT64_MAX, &it, &err)) {
            status = fail("store_segments_begin", err.message);
            goto out;
        }
        int got;
        while ((got = store_segments_next(&it, &seg, &err)) == 1) {
            cells[w] += seg.block.info.ncells;
            if (store_verify_segment(r, &seg, &err) == 0)
                verified++;
            else
                status = fail("store_verify_segment", err.message);
        }
        store_segments_end(&it);
        if (got < 0) {
            status = fail("store_segments_next", err.message);
            goto out;
        }
    }
    printf("cells %ld %ld\n", cells[0], cells[1]);
    printf("verified %d\n", verified);

    char buf[64];
    struct store_column_type numeric = {STORE_TYPE_NUMERIC, 2, 1700};
    store_code_format(&numeric, 1250, buf, sizeof buf);
    printf("code %s\n", buf);
out:
    store_read_end(r);
    store_close(s);
    return status;
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: install_probe DIR\n");
        return 2;
    }
    if (make_store(argv[1]) || read_store(argv[1]))
        return 1;
    return fflush(stdout) == 0 ? 0 : 1;
}
