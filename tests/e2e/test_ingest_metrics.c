/* test_ingest_metrics.c -- straum-ingest's /metrics and log lines.
 *
 * Metrics: ingest runs with --metrics-listen; after the load the snapshot
 * row count is the tables' rows; after known transactions (inserts,
 * updates, deletes, a truncate) the counters grow by exactly what was
 * applied, the commit histogram counts every commit, the position reaches
 * PostgreSQL's, the lag is small and agrees with straum-serve's and
 * straum-dump catalog's (one definition, store_lag_usec), and every line of
 * the exposition parses.
 *
 * Logs: every stderr line is logfmt starting ts=, level=; --log-level warn
 * writes no info lines, debug more lines than info.
 *
 * Progress: a load writes progress lines that parse, whose estimate is the
 * table's size once analyzed, with no bar on a file and a bar on a
 * terminal; /metrics has the load's phase and rows while one runs. */
#include "base/logfmt.h"
#include "ingest/metrics.h"
#include "serve/serve.h"
#include "tests/e2e/oracle.h"
#include "tests/e2e/taxi_db.h"
#include "tests/serve/serve_test.h"

#include <cjson/cJSON.h>
#include <criterion/criterion.h>
#include <ctype.h>
#include <math.h>
#include <pty.h>
#include <poll.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <sys/socket.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* ---- logfmt ------------------------------------------------------------------------------ */

/* True when line (no newline) is logfmt pairs starting "ts=... level=L "
 * with L one of the four levels and a msg; the level into level. */
static bool logfmt_line(const char *line, char level[16])
{
    const char *p = line;
    int pairs = 0;
    bool msg = false;
    level[0] = '\0';
    while (*p) {
        const char *k = p;
        while (*p && *p != '=' && *p != ' ' && *p != '"')
            p++;
        if (*p != '=' || p == k)
            return false;
        size_t klen = (size_t)(p - k);
        p++;
        char val[256];
        size_t n = 0;
        if (*p == '"') {
            for (p++; *p && *p != '"'; p++) {
                if (*p == '\\') {
                    p++;
                    if (!strchr("\"\\nrtu", *p) || !*p)
                        return false;
                }
                if (n + 1 < sizeof val)
                    val[n++] = *p;
            }
            if (*p != '"')
                return false;
            p++;
        } else {
            for (; *p && *p != ' '; p++) {
                if (*p == '"' || *p == '=' || (unsigned char)*p < ' ')
                    return false;
                if (n + 1 < sizeof val)
                    val[n++] = *p;
            }
            if (n == 0)
                return false;
        }
        val[n] = '\0';
        if (pairs == 0 && (klen != 2 || strncmp(k, "ts", 2) || strlen(val) != 24 || val[23] != 'Z'))
            return false;
        if (pairs == 1) {
            if (klen != 5 || strncmp(k, "level", 5))
                return false;
            if (strcmp(val, "debug") && strcmp(val, "info") && strcmp(val, "warn") &&
                strcmp(val, "error"))
                return false;
            memcpy(level, val, strlen(val) + 1); /* one of the four: fits */
        }
        if (klen == 3 && !strncmp(k, "msg", 3))
            msg = true;
        pairs++;
        if (*p == ' ')
            p++;
        else if (*p)
            return false;
    }
    return pairs >= 3 && msg;
}

struct levels {
    int lines, debug, info, warn, error;
};

/* Every line of log parses; counts by level. */
static struct levels check_log(const char *log)
{
    struct levels c = {0};
    const char *p = log;
    while (*p) {
        const char *nl = strchr(p, '\n');
        cr_assert_not_null(nl, "a log line without its newline: %s", p);
        char line[4200];
        size_t n = (size_t)(nl - p) < sizeof line - 1 ? (size_t)(nl - p) : sizeof line - 1;
        memcpy(line, p, n);
        line[n] = '\0';
        char level[16];
        cr_assert(logfmt_line(line, level), "not a logfmt line: %s", line);
        c.lines++;
        c.debug += !strcmp(level, "debug");
        c.info += !strcmp(level, "info");
        c.warn += !strcmp(level, "warn");
        c.error += !strcmp(level, "error");
        p = nl + 1;
    }
    return c;
}

/* ---- The exposition ----------------------------------------------------------------------- */

/* Every line is a comment (# HELP / # TYPE) or name{labels} value. */
static void check_exposition(const char *body)
{
    const char *p = body;
    int samples = 0;
    while (*p) {
        const char *nl = strchr(p, '\n');
        cr_assert_not_null(nl, "the exposition ends without a newline");
        char line[1024];
        size_t n = (size_t)(nl - p);
        cr_assert_lt(n, sizeof line);
        memcpy(line, p, n);
        line[n] = '\0';
        p = nl + 1;
        if (line[0] == '#') {
            cr_assert(!strncmp(line, "# HELP straum_", 14) || !strncmp(line, "# TYPE straum_", 14),
                      "%s", line);
            if (!strncmp(line, "# TYPE", 6)) {
                const char *type = strrchr(line, ' ') + 1;
                cr_assert(!strcmp(type, "counter") || !strcmp(type, "gauge") ||
                              !strcmp(type, "histogram"),
                          "%s", line);
            }
            continue;
        }
        char *q = line;
        cr_assert(isalpha((unsigned char)*q) || *q == '_', "%s", line);
        while (isalnum((unsigned char)*q) || *q == '_' || *q == ':')
            q++;
        if (*q == '{') {
            q++;
            while (*q != '}') {
                cr_assert(isalpha((unsigned char)*q) || *q == '_', "%s", line);
                while (isalnum((unsigned char)*q) || *q == '_')
                    q++;
                cr_assert(q[0] == '=' && q[1] == '"', "%s", line);
                for (q += 2; *q && *q != '"'; q++)
                    if (*q == '\\')
                        q++;
                cr_assert_eq(*q, '"', "%s", line);
                q++;
                if (*q == ',')
                    q++;
                else
                    cr_assert_eq(*q, '}', "%s", line);
            }
            q++;
        }
        cr_assert_eq(*q, ' ', "%s", line);
        q++;
        char *end;
        if (strcmp(q, "+Inf") && strcmp(q, "-Inf") && strcmp(q, "NaN")) {
            strtod(q, &end);
            cr_assert(end != q && *end == '\0', "bad value in %s", line);
        }
        samples++;
    }
    cr_assert_gt(samples, 10);
}

/* The value of the sample named exactly series ("name" or "name{...}");
 * NAN when absent. */
static double sample(const char *body, const char *series)
{
    size_t n = strlen(series);
    for (const char *p = body; (p = strstr(p, series)); p += n)
        if ((p == body || p[-1] == '\n') && p[n] == ' ')
            return strtod(p + n + 1, NULL);
    return NAN;
}

static bool listening(int port)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port),
                            .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    bool up = connect(fd, (struct sockaddr *)&a, sizeof a) == 0;
    close(fd);
    return up;
}

static char *scrape(int port)
{
    struct hc_response r;
    hc_once(port, "GET", "/metrics", NULL, NULL, &r);
    if (r.status != 200) {
        hc_free(&r);
        return NULL;
    }
    char ct[80];
    cr_assert_str_eq(hc_header(&r, "Content-Type", ct, sizeof ct),
                     "text/plain; version=0.0.4; charset=utf-8");
    char *body = strdup(r.body);
    hc_free(&r);
    return body;
}

/* Scrapes until the store holds PostgreSQL's position now and ingest
 * follows; returns that scrape. */
static char *scrape_caught_up(struct taxi_db *db, int port)
{
    uint64_t target = oracle_committed_lsn(db->pg);
    for (int i = 0; i < 600; i++) {
        char *body = listening(port) ? scrape(port) : NULL;
        if (body && sample(body, "straum_store_position_lsn") >= (double)target &&
            sample(body, "straum_ingest_state{state=\"following\"}") == 1)
            return body;
        free(body);
        usleep(100000);
    }
    cr_assert_fail("ingest's /metrics did not reach LSN %llu within 60 s",
                   (unsigned long long)target);
    return NULL;
}

static int64_t count_sql(PGconn *pg, const char *sql)
{
    PGresult *r = PQexec(pg, sql);
    cr_assert_eq(PQresultStatus(r), PGRES_TUPLES_OK, "%s", PQerrorMessage(pg));
    int64_t n = atoll(PQgetvalue(r, 0, 0));
    PQclear(r);
    return n;
}

/* straum-dump --json catalog's lag_usec, in seconds. */
static double dump_lag(const char *store)
{
    char cmd[512];
    snprintf(cmd, sizeof cmd, "%s --json --store %s catalog", STRAUM_DUMP_BIN, store);
    FILE *p = popen(cmd, "r");
    cr_assert_not_null(p);
    static char out[1 << 16];
    size_t n = fread(out, 1, sizeof out - 1, p);
    out[n] = '\0';
    cr_assert_eq(pclose(p), 0, "%s", out);
    cJSON *j = cJSON_Parse(out);
    cr_assert_not_null(j, "%s", out);
    cJSON *lag = cJSON_GetObjectItem(cJSON_GetObjectItem(j, "position"), "lag_usec");
    cr_assert(cJSON_IsNumber(lag), "%s", out);
    double v = lag->valuedouble / 1e6;
    cJSON_Delete(j);
    return v;
}

/* Seconds on a clock: CLOCK_MONOTONIC for durations, CLOCK_REALTIME to
 * compare with the times PostgreSQL stamps commits with (same host). */
static double clock_s(clockid_t clock)
{
    struct timespec ts;
    clock_gettime(clock, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static double mono_s(void) { return clock_s(CLOCK_MONOTONIC); }

static void read_file(const char *path, char *out, size_t len)
{
    FILE *f = fopen(path, "r");
    cr_assert_not_null(f, "%s", path);
    size_t n = fread(out, 1, len - 1, f);
    out[n] = '\0';
    fclose(f);
}

static const char *const kinds[] = {"insert", "update", "delete", "truncate"};

Test(ingest_metrics, counters_follow_what_was_applied, .timeout = 300)
{
    struct taxi_db db;
    taxi_db_create(&db, NULL, 2000);
    /* Tiny decoding memory: a large transaction arrives streamed and goes
     * through the spool; its changes count like the others. */
    oracle_exec(db.pg, "DO $$ BEGIN EXECUTE format('ALTER DATABASE %I SET "
                       "logical_decoding_work_mem = ''64kB''', current_database()); END $$");
    int port = hc_free_port();
    char listen[64], logpath[] = "/tmp/straum-ingest-metrics-log-XXXXXX";
    snprintf(listen, sizeof listen, "127.0.0.1:%d", port);
    int fd = mkstemp(logpath);
    cr_assert_geq(fd, 0);
    const char *const extra[] = {"--metrics-listen", listen, NULL};
    db.ingest = taxi_ingest_spawn(&db, extra, false, fd);

    /* After the load: every row of both tables read once. */
    char *body = scrape_caught_up(&db, port);
    check_exposition(body);
    int64_t rows = count_sql(db.pg, "SELECT (SELECT count(*) FROM yellow_trips) + "
                                    "(SELECT count(*) FROM taxi_zones)");
    cr_assert_eq(sample(body, "straum_ingest_snapshot_rows_total"), (double)rows, "%s", body);
    cr_assert_eq(sample(body, "straum_ingest_state{state=\"snapshot\"}"), 0);
    cr_assert_gt(sample(body, "straum_store_data_bytes"), 0, "%s", body);
    cr_assert_eq(sample(body, "straum_ingest_spool_bytes"), 0, "%s", body);
    cr_assert_eq(sample(body, "straum_ingest_reconnects_total"), 0, "%s", body);
    double base_txns = sample(body, "straum_ingest_transactions_total"), base[4];
    for (int k = 0; k < 4; k++) {
        char series[80];
        snprintf(series, sizeof series, "straum_ingest_changes_total{kind=\"%s\"}", kinds[k]);
        base[k] = sample(body, series);
        cr_assert(!isnan(base[k]), "%s missing:\n%s", series, body);
    }
    double base_commits = sample(body, "straum_store_commits_total");
    cr_assert_geq(base_commits, 1);
    free(body);

    struct hc_response r;
    hc_once(port, "GET", "/healthz", NULL, NULL, &r);
    cr_assert_eq(r.status, 200);
    hc_free(&r);
    hc_once(port, "GET", "/nowhere", NULL, NULL, &r);
    cr_assert_eq(r.status, 404);
    hc_free(&r);

    /* Known transactions (the first trips have ids 2 to 2001): 5 of 120
     * inserts each, one of 20,000 (streamed), 50 updates, 30 deletes, a
     * rolled-back one (nothing), a dim update, a truncate of the dim. */
    for (int i = 0; i < 5; i++)
        taxi_db_add_trips(&db, 120, 0.1 * i);
    taxi_db_add_trips(&db, 20000, 0.9); /* streamed */
    taxi_exec(db.pg, "UPDATE yellow_trips SET tip_amount = tip_amount + 1 WHERE id BETWEEN 2 AND 51");
    taxi_exec(db.pg, "DELETE FROM yellow_trips WHERE id BETWEEN 52 AND 81");
    taxi_exec(db.pg, "BEGIN; DELETE FROM yellow_trips; ROLLBACK");
    taxi_exec(db.pg, "UPDATE taxi_zones SET zone = zone || '!' WHERE location_id = 1");
    double last_change = mono_s(); /* before ingest can have received it */
    double last_change_wall = clock_s(CLOCK_REALTIME); /* before PostgreSQL stamps its commit */
    taxi_exec(db.pg, "TRUNCATE taxi_zones");
    cr_assert_eq(count_sql(db.pg, "SELECT count(*) FROM yellow_trips WHERE id <= 81"), 50);

    body = scrape_caught_up(&db, port);
    double scraped_wall = clock_s(CLOCK_REALTIME);
    /* The idle fold waits 2 s after the last change arrives: a scrape
     * sooner than that sees the deltas the commits wrote still pending. */
    bool before_fold = mono_s() - last_change < 2.0;
    check_exposition(body);
    cr_assert_eq(sample(body, "straum_ingest_transactions_total") - base_txns, 10, "%s", body);
    const double want[4] = {20600, 51, 30, 1};
    for (int k = 0; k < 4; k++) {
        char series[80];
        snprintf(series, sizeof series, "straum_ingest_changes_total{kind=\"%s\"}", kinds[k]);
        cr_assert_eq(sample(body, series) - base[k], want[k], "%s:\n%s", series, body);
    }
    double commits = sample(body, "straum_store_commits_total");
    cr_assert_gt(commits, base_commits, "%s", body);
    cr_assert_eq(sample(body, "straum_store_commit_duration_seconds_count"), commits, "%s", body);
    cr_assert_eq(sample(body, "straum_store_commit_duration_seconds_bucket{le=\"+Inf\"}"),
                 commits, "%s", body);
    double pos = sample(body, "straum_store_position_lsn");
    cr_assert_geq(sample(body, "straum_ingest_position_lsn"), pos, "%s", body);
    cr_assert_geq(sample(body, "straum_ingest_source_lsn"), pos, "%s", body);
    cr_assert_eq(sample(body, "straum_ingest_state{state=\"following\"}"), 1, "%s", body);
    cr_assert_eq(sample(body, "straum_ingest_spool_bytes"), 0, "%s", body);
    /* The store holds the truncate, so the lag is measured from its commit
     * (or from a contact after it): no more than the time since it was
     * sent, however slowly ingest applied it. */
    double lag = sample(body, "straum_store_lag_seconds");
    cr_assert(lag >= 0 && lag <= scraped_wall - last_change_wall + 1e-3, "lag %f, %f s since "
              "the truncate was sent:\n%s", lag, scraped_wall - last_change_wall, body);
    double pending = sample(body, "straum_ingest_fold_pending");
    cr_assert(before_fold ? pending == 1 : pending == 0 || pending == 1, "%s", body);
    free(body);

    /* The commits wrote delta blocks; once the stream idles (2 s) the fold
     * takes them, and the gauge says so. */
    for (int i = 0; i < 600 && pending != 0; i++) {
        usleep(100000);
        body = scrape(port);
        cr_assert(body);
        pending = sample(body, "straum_ingest_fold_pending");
        free(body);
    }
    cr_assert_eq(pending, 0, "the idle fold did not end within 60 s");

    /* straum-dump catalog reads the same figure from the stored position.
     * A contact stored between the readings (an idle follower stores one
     * once a second, none while it folds: the fold just ended) makes the
     * store's newer than a scrape before it, so ingest's figure is read
     * before and after the dump, and the dump's must lie between them,
     * give or take the time the readings took. */
    double t0 = mono_s();
    body = scrape(port);
    double ingest_before = sample(body, "straum_store_lag_seconds");
    free(body);
    double dumped = dump_lag(db.store);
    body = scrape(port);
    double ingest_after = sample(body, "straum_store_lag_seconds");
    free(body);
    double elapsed = mono_s() - t0;
    cr_assert(dumped <= ingest_before + elapsed + 1e-3 && dumped >= ingest_after - elapsed - 1e-3,
              "ingest %f then %f, dump %f between them, %f s in all", ingest_before, ingest_after,
              dumped, elapsed);

    taxi_ingest_stop(&db);
    close(fd);
    char log[1 << 16];
    read_file(logpath, log, sizeof log);
    unlink(logpath);
    struct levels lv = check_log(log);
    cr_assert_gt(lv.info, 0, "%s", log);
    cr_assert_eq(lv.debug, 0, "info is the default level: %s", log);
    cr_assert(strstr(log, "msg=\"metrics listening\" addr=127.0.0.1:"), "%s", log);

    /* Ingest stopped, the position is fixed: straum-serve and straum-dump
     * report one lag, to within the time between their readings. */
    struct serve_options o = {.store_dir = db.store, .max_lag_us = 0};
    struct serve_server *s = fixture_serve(&o);
    t0 = mono_s();
    dumped = dump_lag(db.store);
    hc_once(serve_port(s), "GET", "/metrics", NULL, NULL, &r);
    elapsed = mono_s() - t0;
    double served = sample(r.body, "straum_store_lag_seconds");
    cr_assert(!isnan(served), "%s", r.body);
    cr_assert_leq(served - dumped, elapsed + 1e-3, "serve %f, dump %f", served, dumped);
    cr_assert_geq(served - dumped, -1e-3, "serve %f, dump %f", served, dumped);
    cr_assert(strstr(r.body, "straum_store_position_lsn "), "%s", r.body);
    hc_free(&r);
    serve_stop(s);
    taxi_db_destroy(&db);
}

Test(ingest_metrics, metrics_listen_refuses_a_bad_address, .timeout = 120)
{
    struct taxi_db db;
    taxi_db_create(&db, NULL, 10);
    const char *const bad[] = {"--metrics-listen", "nonsense", NULL};
    char log[8192];
    cr_assert_eq(taxi_ingest_once_with(&db, bad, log, sizeof log), 1, "%s", log);
    cr_assert(strstr(log, "level=error") && strstr(log, "--metrics-listen nonsense"), "%s", log);
    check_log(log);
    taxi_db_destroy(&db);
}

Test(ingest_metrics, log_levels, .timeout = 300)
{
    struct taxi_db db;
    taxi_db_create(&db, NULL, 500);
    char log[1 << 16];

    /* warn: the load and its catch-up write nothing below warn. */
    const char *const warn[] = {"--log-level", "warn", NULL};
    cr_assert_eq(taxi_ingest_once_with(&db, warn, log, sizeof log), 0, "%s", log);
    struct levels lv = check_log(log);
    cr_assert_eq(lv.info + lv.debug, 0, "%s", log);

    /* info (the default), then debug, after the same kind of change. */
    taxi_db_add_trips(&db, 50, 0.3);
    cr_assert_eq(taxi_ingest_once(&db, log, sizeof log), 0, "%s", log);
    struct levels info = check_log(log);
    cr_assert_gt(info.info, 0, "%s", log);
    cr_assert_eq(info.debug, 0, "%s", log);

    taxi_db_add_trips(&db, 50, 0.4);
    const char *const debug[] = {"--log-level", "debug", NULL};
    cr_assert_eq(taxi_ingest_once_with(&db, debug, log, sizeof log), 0, "%s", log);
    struct levels dbg = check_log(log);
    cr_assert_gt(dbg.debug, 0, "%s", log);
    cr_assert_gt(dbg.lines, info.lines, "%s", log);
    /* The batch's line: fields as logfmt pairs. */
    cr_assert(strstr(log, "msg=\"applied\" lsn=") && strstr(log, " rows=50 ") &&
                  strstr(log, " inserts=50 ") && strstr(log, " txn_ms="),
              "%s", log);

    const char *const bogus[] = {"--log-level", "loud", NULL};
    cr_assert_eq(taxi_ingest_once_with(&db, bogus, log, sizeof log), 2, "%s", log);
    cr_assert(strstr(log, "--log-level loud"), "%s", log);
    taxi_db_destroy(&db);
}

/* The writer itself: quoting and escapes, levels. */
Test(ingest_metrics, logfmt_writer_quotes_and_escapes)
{
    char path[] = "/tmp/straum-logfmt-XXXXXX";
    int fd = mkstemp(path);
    cr_assert_geq(fd, 0);
    fflush(stderr);
    int saved = dup(2);
    dup2(fd, 2);
    logfmt_set_level(LOGFMT_INFO);
    struct logfmt_line l;
    cr_assert(logfmt_begin(&l, LOGFMT_WARN, "a \"quoted\" msg\nwith a newline"));
    logfmt_str(&l, "plain", "value");
    logfmt_str(&l, "spaced", "two words");
    logfmt_str(&l, "empty", "");
    logfmt_str(&l, "eq", "a=b");
    logfmt_str(&l, "back", "c:\\dir");
    logfmt_int(&l, "n", -42);
    logfmt_end(&l);
    cr_assert_not(logfmt_begin(&l, LOGFMT_DEBUG, "hidden"));
    logfmt_str(&l, "k", "v");
    logfmt_end(&l);
    char big[8000];
    memset(big, 'x', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    cr_assert(logfmt_begin(&l, LOGFMT_ERROR, "long"));
    logfmt_str(&l, "big", big);
    logfmt_int(&l, "after", 1);
    logfmt_end(&l);
    logfmt_msg(LOGFMT_INFO, "%d%%", 5);
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    char log[1 << 15];
    read_file(path, log, sizeof log);
    close(fd);
    unlink(path);
    struct levels lv = check_log(log);
    cr_assert_eq(lv.lines, 3, "%s", log);
    cr_assert(strstr(log, " level=warn msg=\"a \\\"quoted\\\" msg\\nwith a newline\" plain=value "
                          "spaced=\"two words\" empty=\"\" eq=\"a=b\" back=\"c:\\\\dir\" n=-42\n"),
              "%s", log);
    cr_assert(strstr(log, " level=error msg=\"long\" after=1 truncated=true\n"), "%s", log);
    cr_assert(strstr(log, " level=info msg=\"5%\"\n"), "%s", log);
    cr_assert_null(strstr(log, "hidden"), "%s", log);
    enum logfmt_level level;
    cr_assert_eq(logfmt_parse_level("DEBUG", &level), 0);
    cr_assert_eq(level, LOGFMT_DEBUG);
    cr_assert_eq(logfmt_parse_level("verbose", &level), -1);
}

/* ---- Progress ------------------------------------------------------------------------------- */

/* The value of field key in a logfmt line (unquoted values only), into
 * out; false when absent. */
static bool field(const char *line, const char *key, char *out, size_t len)
{
    char pat[64];
    snprintf(pat, sizeof pat, " %s=", key);
    const char *p = strstr(line, pat);
    if (!p)
        return false;
    p += strlen(pat);
    size_t n = strcspn(p, " \n");
    if (n >= len)
        return false;
    memcpy(out, p, n);
    out[n] = '\0';
    return true;
}

static double num_field(const char *line, const char *key)
{
    char v[64];
    if (!field(line, key, v, sizeof v))
        return NAN;
    char *end;
    double d = strtod(v, &end);
    return end != v && *end == '\0' ? d : NAN;
}

Test(ingest_metrics, a_load_says_how_far_it_is, .timeout = 300)
{
    struct taxi_db db;
    taxi_db_create(&db, NULL, 200000);
    taxi_exec(db.pg, "ANALYZE yellow_trips"); /* fresh statistics: a true estimate */
    int64_t trips = count_sql(db.pg, "SELECT count(*) FROM yellow_trips");

    /* A line per batch of rows (1 ms between lines), the table loaded in
     * time partitions (50,000 rows each). */
    const char *const extra[] = {"--progress-interval", "1ms", "--snapshot-batch", "50000", NULL};
    static char log[1 << 20];
    cr_assert_eq(taxi_ingest_once_with(&db, extra, log, sizeof log), 0, "%s", log);
    check_log(log); /* every line parses as logfmt: the bar never reaches a file */
    cr_assert_null(strchr(log, '\r'), "a bar in a log file:\n%s", log);
    cr_assert_null(strstr(log, "\033["), "terminal escapes in a log file:\n%s", log);

    int lines = 0;
    double last_rows = -1;
    char last_phase[16] = "";
    /* The table's name as PostgreSQL would quote it, logfmt-escaped. */
    const char *table = " table=\"\\\"public\\\".\\\"yellow_trips\\\"\" phase=";
    for (const char *p = log; (p = strstr(p, table)); p++) {
        const char *start = p;
        while (start > log && start[-1] != '\n')
            start--;
        char line[1024];
        size_t n = strcspn(start, "\n");
        cr_assert_lt(n, sizeof line);
        memcpy(line, start, n);
        line[n] = '\0';
        char phase[16];
        cr_assert(field(line, "phase", phase, sizeof phase), "%s", line);
        cr_assert(!strcmp(phase, "loading") || !strcmp(phase, "reading") ||
                      !strcmp(phase, "applying"),
                  "%s", line);
        cr_assert(strstr(line, "level=info msg=\"loading \\\"public\\\".\\\"yellow_trips\\\" ("),
                  "%s", line);
        double rows = num_field(line, "rows"), est = num_field(line, "rows_estimated");
        double rate = num_field(line, "rows_per_s"), eta = num_field(line, "eta_s");
        cr_assert(rows > 0 && rows <= (double)trips, "%s", line);
        /* ANALYZE just ran: PostgreSQL's estimate is the table's rows. */
        cr_assert(fabs(est - (double)trips) <= 0.05 * (double)trips,
                  "estimate %.0f for %lld rows: %s", est, (long long)trips, line);
        cr_assert(rate > 0, "%s", line);
        cr_assert(eta >= 0, "%s", line);
        if (!strcmp(phase, last_phase))
            cr_assert_gt(rows, last_rows, "rows go back within a phase: %s", line);
        snprintf(last_phase, sizeof last_phase, "%s", phase);
        last_rows = rows;
        lines++;
    }
    /* 200,000 rows in batches of 65,536: three lines a phase at least. */
    cr_assert_geq(lines, 3, "%d progress lines:\n%s", lines, log);
    cr_assert(strstr(log, "msg=\"loaded \\\"public\\\".\\\"yellow_trips\\\": "), "%s", log);

    /* On a terminal: the same lines, and a bar between them. */
    int master, slave;
    cr_assert_eq(openpty(&master, &slave, NULL, NULL, NULL), 0);
    struct taxi_db tty_db;
    taxi_db_create(&tty_db, NULL, 100000);
    pid_t pid = taxi_ingest_spawn(&tty_db, extra, true, slave);
    close(slave);
    static char screen[1 << 20];
    size_t got = 0;
    for (;;) { /* until the follower closes the terminal's last writer */
        struct pollfd pfd = {master, POLLIN, 0};
        cr_assert_geq(poll(&pfd, 1, 120000), 1, "straum-ingest wrote nothing for 120 s");
        ssize_t r = read(master, screen + got, sizeof screen - 1 - got);
        if (r <= 0)
            break; /* EIO: no writer left */
        got += (size_t)r;
        cr_assert_lt(got, sizeof screen - 1);
    }
    screen[got] = '\0';
    close(master);
    int status;
    waitpid(pid, &status, 0);
    cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "%s", screen);
    cr_assert(strstr(screen, "\r\033[Kloading \"public\".\"yellow_trips\" ["), "no bar:\n%s",
              screen);
    cr_assert(strstr(screen, "% "), "no percentage in the bar:\n%s", screen);
    cr_assert(strstr(screen, " phase="), "no progress line on the terminal:\n%s", screen);
    taxi_db_destroy(&tty_db);
    taxi_db_destroy(&db);
}

/* The load's figures in the exposition while one runs, gone after. */
Test(ingest_metrics, a_load_in_the_exposition)
{
    imetrics_load("public.t", "reading", 0, 1000);
    imetrics_load_rows(250);
    char *body = imetrics_text("/nonexistent-store", 0);
    cr_assert_not_null(body);
    cr_assert_eq(sample(body, "straum_ingest_load_phase{phase=\"reading\"}"), 1, "%s", body);
    cr_assert_eq(sample(body, "straum_ingest_load_rows"), 250, "%s", body);
    cr_assert_eq(sample(body, "straum_ingest_load_rows_estimated"), 1000, "%s", body);
    free(body);
    imetrics_load("public.t", "applying", 0, -1); /* never analyzed: no estimate */
    body = imetrics_text("/nonexistent-store", 0);
    cr_assert_eq(sample(body, "straum_ingest_load_phase{phase=\"applying\"}"), 1, "%s", body);
    cr_assert(isnan(sample(body, "straum_ingest_load_rows_estimated")), "%s", body);
    free(body);
    imetrics_load(NULL, NULL, 0, -1);
    body = imetrics_text("/nonexistent-store", 0);
    cr_assert_null(strstr(body, "straum_ingest_load_"), "%s", body);
    free(body);
}
