/* taxi_scaling.c -- `taxi scaling`: how Straum grows with the data. The
 * same six months at 1x, 2x and 4x the trips (denser, not longer), each on
 * a fresh setup: the store's size on disk, the initial load against
 * PostgreSQL's own binary COPY, and each ask's client-measured median and
 * p99 over a kept-alive connection. Answers are not compared here (the
 * asks mode does that); PostgreSQL's ask times are not measured (at 4x the
 * full scale they would take most of an hour). */
#include "tests/kit/http_client.h"
#include "tests/kit/taxi_asks.h"
#include "bench/taxi_bench.h"
#include "bench/taxi_results.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_FACTORS 8

struct scale_point {
    long long trips;
    double cells, segment_bytes, file_bytes, load_s, copy_s;
    long ingest_peak_kib;
    struct taxi_latency asks[TAXI_NASKS];
};

static int measure_point(struct taxi_env *e, struct scale_point *pt)
{
    pt->trips = e->o->trips;
    pt->load_s = e->ingest_load_s;
    pt->copy_s = e->copy_out_s;
    pt->ingest_peak_kib = e->ingest_peak_kib;
    cJSON *j = taxi_dump_stats(e);
    if (!j)
        return -1;
    cJSON *t = cJSON_GetObjectItem(j, "total");
    pt->cells = cJSON_GetNumberValue(cJSON_GetObjectItem(t, "cells"));
    pt->segment_bytes = cJSON_GetNumberValue(cJSON_GetObjectItem(t, "bytes"));
    pt->file_bytes = cJSON_GetNumberValue(cJSON_GetObjectItem(j, "file_bytes"));
    cJSON_Delete(j);
    struct http_client c;
    char err[512];
    if (http_client_open(&c, e->url, err, sizeof err) != 0) {
        fprintf(stderr, "taxi: %s\n", err);
        return -1;
    }
    int rc = 0;
    for (int i = 0; i < TAXI_NASKS && rc == 0; i++)
        if ((rc = taxi_time_ask(&c, &TAXI_ASKS[i], e->o->min_seconds, &pt->asks[i], err,
                                sizeof err)))
            fprintf(stderr, "taxi: %s\n", err);
    http_client_close(&c);
    return rc;
}

static void print_table(const struct scale_point *pts, int n)
{
    char a[32], b[32];
    printf("\n| Trips | Cells | Segments | Store file | Initial load | Load / COPY | Ingest peak |\n"
           "|---|---|---|---|---|---|---|\n");
    for (int i = 0; i < n; i++)
        printf("| %s | %s | %.1f MiB | %.1f MiB | %.1f s | %.2fx | %ld MiB |\n",
               taxi_format_count(pts[i].trips, a, sizeof a),
               taxi_format_count((long long)pts[i].cells, b, sizeof b),
               pts[i].segment_bytes / 1048576.0, pts[i].file_bytes / 1048576.0, pts[i].load_s,
               pts[i].copy_s > 0 ? pts[i].load_s / pts[i].copy_s : 0, pts[i].ingest_peak_kib / 1024);
    printf("\nMedian (p99) per ask:\n\n| Ask |");
    for (int i = 0; i < n; i++)
        printf(" %s trips |", taxi_format_count(pts[i].trips, a, sizeof a));
    printf("\n|---|");
    for (int i = 0; i < n; i++)
        printf("---|");
    printf("\n");
    for (int k = 0; k < TAXI_NASKS; k++) {
        printf("| %s |", TAXI_ASKS[k].name);
        for (int i = 0; i < n; i++)
            printf(" %s (%s) |", taxi_format_ns(pts[i].asks[k].median_ns, a, sizeof a),
                   taxi_format_ns(pts[i].asks[k].p99_ns, b, sizeof b));
        printf("\n");
    }
}

static cJSON *points_json(const struct scale_point *pts, int n)
{
    cJSON *arr = cJSON_CreateArray();
    for (int i = 0; arr && i < n; i++) {
        cJSON *p = cJSON_CreateObject();
        cJSON_AddNumberToObject(p, "trips", (double)pts[i].trips);
        cJSON_AddNumberToObject(p, "cells", pts[i].cells);
        cJSON_AddNumberToObject(p, "segment_bytes", pts[i].segment_bytes);
        cJSON_AddNumberToObject(p, "file_bytes", pts[i].file_bytes);
        cJSON_AddNumberToObject(p, "initial_load_s", pts[i].load_s);
        cJSON_AddNumberToObject(p, "postgres_copy_s", pts[i].copy_s);
        cJSON_AddNumberToObject(p, "ingest_peak_kib", (double)pts[i].ingest_peak_kib);
        cJSON *asks = cJSON_AddArrayToObject(p, "asks");
        for (int k = 0; k < TAXI_NASKS; k++) {
            cJSON *a = cJSON_CreateObject();
            cJSON_AddStringToObject(a, "name", TAXI_ASKS[k].name);
            cJSON_AddNumberToObject(a, "median_ns", (double)pts[i].asks[k].median_ns);
            cJSON_AddNumberToObject(a, "p99_ns", (double)pts[i].asks[k].p99_ns);
            cJSON_AddNumberToObject(a, "min_ns", (double)pts[i].asks[k].min_ns);
            cJSON_AddNumberToObject(a, "requests", (double)pts[i].asks[k].n);
            cJSON_AddItemToArray(asks, a);
        }
        cJSON_AddItemToArray(arr, p);
    }
    return arr;
}

int taxi_scaling_main(int argc, char **argv)
{
    static struct taxi_opts o;
    int rc = taxi_opts_parse(&o, argc, argv, "scaling");
    if (rc)
        return rc;
    int factors[MAX_FACTORS], n = 0;
    for (const char *p = o.factors ? o.factors : "1,2,4"; *p && n < MAX_FACTORS;) {
        char *end;
        long f = strtol(p, &end, 10);
        if (end == p || f < 1 || f > 64 || (*end && *end != ',')) {
            fprintf(stderr, "taxi scaling: --factors takes numbers 1 to 64, e.g. 1,2,4\n");
            return 2;
        }
        factors[n++] = (int)f;
        p = *end ? end + 1 : end;
    }
    long long base = o.trips;
    const char *keep = o.work_dir;
    static struct scale_point pts[MAX_FACTORS];
    static struct taxi_env e;
    cJSON *header = NULL; /* the first setup's machine, versions, command, date, commit */
    for (int i = 0; i < n && rc == 0; i++) {
        o.trips = base * factors[i];
        o.work_dir = keep; /* each setup starts from a fresh work dir */
        printf("\n== %dx ==\n", factors[i]);
        if (taxi_setup(&e, &o, true) != 0) {
            fprintf(stderr, "taxi: setup failed; logs in %s\n", e.work);
            o.work_dir = e.work;
            rc = 2;
        } else {
            rc = measure_point(&e, &pts[i]) ? 1 : 0;
            if (!header && e.report) {
                header = cJSON_Duplicate(e.report, 1);
                cJSON_DeleteItemFromObjectCaseSensitive(header, "setup");
            }
        }
        taxi_teardown(&e);
    }
    if (rc == 0) {
        print_table(pts, n);
        if (o.json_file) {
            cJSON *root = cJSON_CreateObject();
            cJSON_AddItemToObject(root, "scaling", points_json(pts, n));
            char *text = cJSON_Print(root);
            FILE *f = fopen(o.json_file, "w");
            if (!f || !text || fputs(text, f) < 0)
                rc = 2;
            if (f)
                fclose(f);
            cJSON_free(text);
            cJSON_Delete(root);
        }
        if (o.results_file && header) {
            cJSON_AddItemToObject(header, "scaling", points_json(pts, n));
            if (taxi_results_record(o.results_file, "scaling", header))
                rc = 2;
        }
    }
    cJSON_Delete(header);
    return rc;
}
