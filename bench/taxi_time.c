/* taxi_time.c -- `taxi time`: the ten asks against a running straum-serve
 * only, each sent back to back over one kept-alive connection for a while;
 * prints the fastest, median and 99th percentile client-measured latency.
 * For quick measurement while changing serve, and for the scaling mode,
 * which needs Straum's figures without PostgreSQL's. */
#include "tests/kit/http_client.h"
#include "bench/taxi.h"
#include "tests/kit/taxi_asks.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int usage(void)
{
    fprintf(stderr, "usage: taxi time --url URL [--seconds S] [--asks LIST]\n"
                    "  --seconds S  per ask (default 1)\n"
                    "  --asks LIST  ask numbers, e.g. 5,6 (default all ten)\n");
    return 2;
}

void taxi_latency_of(int64_t *ns, int n, struct taxi_latency *out)
{
    taxi_sort_ns(ns, n);
    out->n = n;
    out->min_ns = ns[0];
    out->median_ns = ns[n / 2];
    out->p99_ns = taxi_sorted_p99(ns, n);
}

int taxi_time_ask(struct http_client *c, const struct taxi_ask *a, double seconds,
                  struct taxi_latency *out, char *err, size_t errlen)
{
    size_t cap = 1024, n = 0;
    int64_t *ns = malloc(sizeof *ns * cap);
    struct http_response resp = {0};
    int64_t end = taxi_now_ns() + (int64_t)(seconds * 1e9);
    int rc = ns ? 0 : -1;
    do {
        int64_t t0 = taxi_now_ns();
        rc = taxi_post_ask(c, a->ask, a->params, "America/New_York", &resp, err, errlen);
        int64_t t1 = taxi_now_ns();
        if (rc == 0 && resp.status != 200) {
            snprintf(err, errlen, "%s: %d %.300s", a->name, resp.status, resp.body);
            rc = -1;
        }
        if (rc == 0 && n == cap) {
            int64_t *more = realloc(ns, sizeof *ns * cap * 2);
            rc = more ? 0 : -1;
            if (more) {
                ns = more;
                cap *= 2;
            }
        }
        if (rc == 0)
            ns[n++] = t1 - t0;
        http_response_free(&resp);
    } while (rc == 0 && (n < 3 || taxi_now_ns() < end));
    if (rc == 0)
        taxi_latency_of(ns, (int)n, out);
    free(ns);
    return rc;
}

int taxi_time_main(int argc, char **argv)
{
    const char *url = NULL;
    double seconds = 1;
    bool selected[TAXI_NASKS];
    for (int i = 0; i < TAXI_NASKS; i++)
        selected[i] = true;
    for (int i = 1; i < argc; i++) {
        if (i + 1 >= argc)
            return usage();
        const char *a = argv[i], *v = argv[++i];
        if (!strcmp(a, "--url"))
            url = v;
        else if (!strcmp(a, "--seconds"))
            seconds = atof(v);
        else if (!strcmp(a, "--asks")) {
            if (!taxi_parse_ask_list(v, selected, TAXI_NASKS))
                return usage();
        } else
            return usage();
    }
    if (!url || seconds <= 0)
        return usage();
    struct http_client c;
    char err[512];
    if (http_client_open(&c, url, err, sizeof err) != 0) {
        fprintf(stderr, "taxi time: %s\n", err);
        return 2;
    }
    printf("  %-32s %10s %10s %10s %8s\n", "ask", "fastest", "median", "p99", "requests");
    int rc = 0;
    for (int i = 0; i < TAXI_NASKS && rc == 0; i++) {
        if (!selected[i])
            continue;
        struct taxi_latency l;
        if (taxi_time_ask(&c, &TAXI_ASKS[i], seconds, &l, err, sizeof err) != 0) {
            fprintf(stderr, "taxi time: %s\n", err);
            rc = 1;
            break;
        }
        char t1[32], t2[32], t3[32];
        taxi_format_ns(l.min_ns, t1, sizeof t1);
        taxi_format_ns(l.median_ns, t2, sizeof t2);
        taxi_format_ns(l.p99_ns, t3, sizeof t3);
        printf("  %-32s %*s %*s %*s %8ld\n", TAXI_ASKS[i].name, 10 + (strstr(t1, "µ") != NULL), t1,
               10 + (strstr(t2, "µ") != NULL), t2, 10 + (strstr(t3, "µ") != NULL), t3, l.n);
    }
    http_client_close(&c);
    return rc;
}
