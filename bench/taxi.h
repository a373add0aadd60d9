/* taxi.h -- the taxi benchmark program's modes and the helpers they share.
 * taxi.c holds main(), which dispatches on the first argument to one
 * taxi_<mode>_main; each mode lives in its own file (taxi_demo.c, ...).
 * A new mode: write taxi_<mode>.c with its main, declare it here, add it
 * to the table in taxi.c and to bench/CMakeLists.txt. */
#ifndef STRAUM_BENCH_TAXI_H
#define STRAUM_BENCH_TAXI_H

#include "tests/kit/http_client.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Modes: argv[0] is the mode's name. Exit status 0 ok, 1 the benchmark
 * failed (an answer differed, a target missed), 2 a usage or setup error. */
int taxi_demo_main(int argc, char **argv);
int taxi_wait_ready_main(int argc, char **argv);
int taxi_time_main(int argc, char **argv);
int taxi_pg_time_main(int argc, char **argv);
int taxi_scaling_main(int argc, char **argv);
int taxi_load_main(int argc, char **argv);
int taxi_shell_main(int argc, char **argv);
int taxi_duckdb_main(int argc, char **argv);
/* The benchmark modes (taxi_report.c sets up, runs, tears down). */
int taxi_asks_main(int argc, char **argv);
int taxi_dashboard_main(int argc, char **argv);
int taxi_random_main(int argc, char **argv);
int taxi_cold_main(int argc, char **argv);
int taxi_memory_main(int argc, char **argv);
int taxi_txn_main(int argc, char **argv);
int taxi_stream_main(int argc, char **argv);
int taxi_wal_main(int argc, char **argv);
int taxi_all_main(int argc, char **argv);
int taxi_warehouse_main(int argc, char **argv);
int taxi_wide_main(int argc, char **argv);

/* Monotonic clock in nanoseconds. */
int64_t taxi_now_ns(void);

/* "87 µs", "41.3 ms", "1.92 s": a duration for people. Returns buf. */
const char *taxi_format_ns(int64_t ns, char *buf, size_t len);

/* "12.3x", "475x", "12,480x". Returns buf. */
const char *taxi_format_ratio(double ratio, char *buf, size_t len);

/* "200,000". Returns buf. */
const char *taxi_format_count(long long n, char *buf, size_t len);

/* Sorts n values ascending, in place. */
void taxi_sort_ns(int64_t *v, int n);
/* The median of n values (sorts them in place); 0 for n == 0. */
int64_t taxi_median(int64_t *v, int n);
/* The p99 of n sorted values; 0 for n == 0. */
int64_t taxi_sorted_p99(const int64_t *sorted, int n);

/* The first executable dir/name on PATH into out (len bytes); false when
 * there is none. */
bool taxi_find_on_path(const char *name, char *out, size_t len);

/* Parses a list of ask numbers ("5,6": 1 to TAXI_NASKS) into selected
 * (nasks flags, all cleared first); false when it is not one. */
bool taxi_parse_ask_list(const char *list, bool *selected, int nasks);

/* Display width of a UTF-8 string (code points; no wide characters here). */
int taxi_text_width(const char *s);

/* Client-measured latency of one ask sent back to back. */
struct taxi_latency {
    long n;
    int64_t min_ns, median_ns, p99_ns;
};
/* The figures of n > 0 samples (sorted in place). */
void taxi_latency_of(int64_t *ns, int n, struct taxi_latency *out);
struct taxi_ask;
/* Sends ask a over c for `seconds` (at least 3 times). -1 with err. */
int taxi_time_ask(struct http_client *c, const struct taxi_ask *a, double seconds,
                  struct taxi_latency *out, char *err, size_t errlen);

/* POSTs {"ask": ask, "params": [...], "time_zone": tz} to /ask. params is
 * NULL-terminated (strings). Returns 0 with the response in resp, or -1
 * with a message in err. */
int taxi_post_ask(struct http_client *c, const char *ask, const char *const *params,
                  const char *tz, struct http_response *resp, char *err, size_t errlen);

#endif
