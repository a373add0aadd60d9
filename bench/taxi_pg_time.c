/* taxi_pg_time.c -- `taxi pg-time`: the ten asks against a running
 * straum-serve over both of its protocols, from one client each: HTTP by
 * the keep-alive client (taxi_time_ask), PostgreSQL by libpq over one
 * connection with each ask prepared once (PQprepare) and run by
 * PQexecPrepared with its parameters in text, binary results. Sides
 * alternate per ask; each side sends back to back for --seconds. Prints
 * the client medians side by side, and writes each ask with its parameters
 * as literals into DIR/askN.sql for pgbench (--pgbench-dir). */
#include "tests/kit/http_client.h"
#include "bench/taxi.h"
#include "tests/kit/taxi_asks.h"

#include <libpq-fe.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int usage(void)
{
    fprintf(stderr,
            "usage: taxi pg-time --url URL --pg CONNINFO [--seconds S] [--pgbench-dir DIR]\n"
            "  --url URL          straum-serve's HTTP address\n"
            "  --pg CONNINFO      straum-serve's --pg-listen, as libpq reads it\n"
            "  --seconds S        per ask and side (default 1)\n"
            "  --pgbench-dir DIR  also write ask1.sql .. ask10.sql (parameters as literals)\n");
    return 2;
}

static int cmp64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* The ask with $n replaced by its parameter as a quoted literal. */
static void literal_ask(const struct taxi_ask *a, char *out, size_t cap)
{
    size_t n = 0;
    for (const char *p = a->ask; *p && n + 1 < cap; p++) {
        if (*p == '$' && p[1] >= '1' && p[1] <= '9') {
            const char *v = a->params[p[1] - '1'];
            n += (size_t)snprintf(out + n, cap - n, "'%s'", v);
            p++;
        } else {
            out[n++] = *p;
        }
    }
    out[n < cap ? n : cap - 1] = '\0';
}

static int pg_time(PGconn *c, const char *name, const struct taxi_ask *a, double seconds,
                   struct taxi_latency *out)
{
    int n = 0;
    while (a->params[n])
        n++;
    size_t cap = 1024, k = 0;
    int64_t *ns = malloc(sizeof *ns * cap);
    int64_t end = taxi_now_ns() + (int64_t)(seconds * 1e9);
    do {
        int64_t t0 = taxi_now_ns();
        PGresult *r = PQexecPrepared(c, name, n, a->params, NULL, NULL, 1);
        int64_t t1 = taxi_now_ns();
        if (PQresultStatus(r) != PGRES_TUPLES_OK) {
            fprintf(stderr, "taxi pg-time: %s: %s", a->name, PQerrorMessage(c));
            PQclear(r);
            free(ns);
            return -1;
        }
        PQclear(r);
        if (k == cap)
            ns = realloc(ns, sizeof *ns * (cap *= 2));
        ns[k++] = t1 - t0;
    } while (k < 3 || taxi_now_ns() < end);
    qsort(ns, k, sizeof *ns, cmp64);
    out->n = (long)k;
    out->min_ns = ns[0];
    out->median_ns = ns[k / 2];
    out->p99_ns = taxi_sorted_p99(ns, (int)k);
    free(ns);
    return 0;
}

int taxi_pg_time_main(int argc, char **argv)
{
    const char *url = NULL, *pg = NULL, *dir = NULL;
    double seconds = 1;
    for (int i = 1; i < argc; i++) {
        if (i + 1 >= argc)
            return usage();
        const char *a = argv[i], *v = argv[++i];
        if (!strcmp(a, "--url"))
            url = v;
        else if (!strcmp(a, "--pg"))
            pg = v;
        else if (!strcmp(a, "--seconds"))
            seconds = atof(v);
        else if (!strcmp(a, "--pgbench-dir"))
            dir = v;
        else
            return usage();
    }
    if (!url || !pg || seconds <= 0)
        return usage();
    struct http_client h;
    char err[512];
    if (http_client_open(&h, url, err, sizeof err) != 0) {
        fprintf(stderr, "taxi pg-time: %s\n", err);
        return 2;
    }
    PGconn *c = PQconnectdb(pg);
    if (PQstatus(c) != CONNECTION_OK) {
        fprintf(stderr, "taxi pg-time: %s", PQerrorMessage(c));
        return 2;
    }
    PQclear(PQexec(c, "SET TimeZone TO 'America/New_York'"));
    printf("  %-32s %12s %12s %12s %10s\n", "ask", "HTTP median", "PG median", "PG p99",
           "PG asks");
    int rc = 0;
    for (int i = 0; i < TAXI_NASKS && rc == 0; i++) {
        const struct taxi_ask *a = &TAXI_ASKS[i];
        char name[16];
        snprintf(name, sizeof name, "ask%d", i + 1);
        PGresult *r = PQprepare(c, name, a->ask, 0, NULL);
        if (PQresultStatus(r) != PGRES_COMMAND_OK) {
            fprintf(stderr, "taxi pg-time: %s: %s", a->name, PQerrorMessage(c));
            PQclear(r);
            rc = 1;
            break;
        }
        PQclear(r);
        struct taxi_latency http, pgl;
        if (taxi_time_ask(&h, a, seconds, &http, err, sizeof err) != 0) {
            fprintf(stderr, "taxi pg-time: %s\n", err);
            rc = 1;
            break;
        }
        if (pg_time(c, name, a, seconds, &pgl)) {
            rc = 1;
            break;
        }
        char t1[32], t2[32], t3[32];
        taxi_format_ns(http.median_ns, t1, sizeof t1);
        taxi_format_ns(pgl.median_ns, t2, sizeof t2);
        taxi_format_ns(pgl.p99_ns, t3, sizeof t3);
        printf("  %-32s %*s %*s %*s %10ld\n", a->name, 12 + (strstr(t1, "µ") != NULL), t1,
               12 + (strstr(t2, "µ") != NULL), t2, 12 + (strstr(t3, "µ") != NULL), t3, pgl.n);
        if (dir) {
            char path[512], sql[2048];
            snprintf(path, sizeof path, "%s/ask%d.sql", dir, i + 1);
            literal_ask(a, sql, sizeof sql);
            FILE *f = fopen(path, "w");
            if (!f) {
                perror(path);
                rc = 2;
                break;
            }
            fprintf(f, "%s;\n", sql);
            fclose(f);
        }
    }
    PQfinish(c);
    http_client_close(&h);
    return rc;
}
