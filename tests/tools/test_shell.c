/* test_shell.c -- straum-shell end to end: the built binary run as a
 * subprocess against the serve tests' taxi store, both through an
 * in-process straum-serve (--url) and on the store itself (--store). Every
 * answer is checked against the fixture's own trips (fixture_count), and the
 * two backends must print the same bytes. Covers the three formats, -c,
 * asks piped in with backslash commands, errors and their exit statuses,
 * the bearer token, --help and --version; and, on a pseudo-terminal, the
 * libedit prompt: Tab completion and the history file. */
#include "tests/serve/serve_test.h"

#include "serve/serve.h"

#include <criterion/criterion.h>
#include <fcntl.h>
#include <ftw.h>
#include <poll.h>
#include <pty.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define HOUR_US (3600LL * 1000000)
#define DAY_US (24 * HOUR_US)

static char the_store[64];
static struct serve_server *the_server;
static char the_url[64];

static void setup(void)
{
    struct store_position pos = {.lsn = 7, .commit_time = 1, .contact_time = 1};
    fixture_make_store(the_store, &pos);
    struct serve_options o = {.store_dir = the_store};
    the_server = fixture_serve(&o);
    snprintf(the_url, sizeof the_url, "http://127.0.0.1:%d", serve_port(the_server));
}

static void teardown(void)
{
    serve_stop(the_server);
    fixture_remove_store(the_store);
}

TestSuite(shell, .init = setup, .fini = teardown, .timeout = 120);

/* ---- Running the binary --------------------------------------------------------- */

struct run {
    int status; /* exit status; 128 + signal */
    char *out, *err;
};

static char *slurp(int fd)
{
    off_t n = lseek(fd, 0, SEEK_END);
    cr_assert_geq(n, 0);
    char *s = malloc((size_t)n + 1);
    cr_assert_not_null(s);
    cr_assert_eq(pread(fd, s, (size_t)n, 0), n);
    s[n] = '\0';
    close(fd);
    return s;
}

static int temp_file(const char *content)
{
    char path[] = "/tmp/straum-shell-test-XXXXXX";
    int fd = mkstemp(path);
    cr_assert_geq(fd, 0);
    unlink(path);
    size_t n = content ? strlen(content) : 0;
    cr_assert_eq(write(fd, content ? content : "", n), (ssize_t)n);
    lseek(fd, 0, SEEK_SET);
    return fd;
}

/* Runs straum-shell with args (NULL-terminated) and input on stdin (a
 * file, never a terminal); env "NAME=VALUE" is added when not NULL. */
static struct run shell_run_v(const char *input, const char *env, const char *const *args)
{
    const char *argv[64] = {STRAUM_SHELL_BIN};
    int n = 1;
    for (; args[n - 1]; n++) {
        cr_assert_lt(n, 63);
        argv[n] = args[n - 1];
    }
    argv[n] = NULL;
    int in = temp_file(input), out = temp_file(NULL), err = temp_file(NULL);
    fflush(NULL);
    pid_t pid = fork();
    cr_assert_geq(pid, 0);
    if (pid == 0) {
        dup2(in, 0);
        dup2(out, 1);
        dup2(err, 2);
        unsetenv("STRAUM_TOKEN");
        if (env)
            putenv((char *)env);
        execv(STRAUM_SHELL_BIN, (char *const *)argv);
        _exit(127);
    }
    close(in);
    int st;
    cr_assert_eq(waitpid(pid, &st, 0), pid);
    struct run r = {WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st), slurp(out), slurp(err)};
    return r;
}

#define shell_run(input, ...) shell_run_v(input, NULL, (const char *const[]){__VA_ARGS__, NULL})

static void run_free(struct run *r)
{
    free(r->out);
    free(r->err);
}

/* A copy of out without its "Time: ... ms" lines (\timing). */
static char *without_times(const char *out)
{
    char *copy = malloc(strlen(out) + 1), *o = copy;
    cr_assert_not_null(copy);
    for (const char *line = out; *line;) {
        size_t n = strcspn(line, "\n");
        n += line[n] == '\n';
        if (strncmp(line, "Time: ", 6) != 0) {
            memcpy(o, line, n);
            o += n;
        }
        line += n;
    }
    *o = '\0';
    return copy;
}

/* The same through --url and --store: equal output, equal status; the
 * --url run is returned. */
static struct run both(const char *input, const char *const *args)
{
    const char *a[32] = {"--url", the_url};
    const char *b[32] = {"--store", the_store};
    int n = 0;
    for (; args[n]; n++) {
        cr_assert_lt(n, 29);
        a[n + 2] = b[n + 2] = args[n];
    }
    a[n + 2] = b[n + 2] = NULL;
    struct run ru = shell_run_v(input, NULL, a), rs = shell_run_v(input, NULL, b);
    char *ou = without_times(ru.out), *os = without_times(rs.out);
    cr_assert_str_eq(ou, os, "--url and --store print differently");
    free(ou);
    free(os);
    cr_assert_str_eq(ru.err, rs.err, "--url and --store fail differently");
    cr_assert_eq(ru.status, rs.status);
    run_free(&rs);
    return ru;
}

#define both_run(input, ...) both(input, (const char *const[]){__VA_ARGS__, NULL})

/* ---- Expected output, from the fixture ---------------------------------------------- */

struct text {
    char s[8192];
    size_t n;
};

static void add(struct text *t, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int k = vsnprintf(t->s + t->n, sizeof t->s - t->n, fmt, ap);
    va_end(ap);
    cr_assert(k >= 0 && (size_t)k < sizeof t->s - t->n);
    t->n += (size_t)k;
}

#define BY_PAYMENT                                                                         \
    "SELECT payment_type, trips FROM trips WHERE bucket >= '2024-01-01' AND bucket < "    \
    "'2024-01-04' GROUP BY payment_type ORDER BY payment_type"
#define FROM_US FIXTURE_START_US
#define TO_US (FIXTURE_START_US + 3 * DAY_US)

Test(shell, table_format)
{
    /* Counts have at most four digits here, so the names set the widths
     * and the headers are not padded. */
    struct text want = {0};
    add(&want, " payment_type | trips \n--------------+-------\n");
    for (int p = 0; p < 6; p++)
        add(&want, " %12d | %5lld\n", p, (long long)fixture_count(p, FROM_US, TO_US));
    add(&want, "(6 rows, buckets from 2024-01-01T00:00:00+00:00 up to 2024-01-04T00:00:00+00:00)"
               "\n\n");
    struct run r = both_run(NULL, "-c", BY_PAYMENT);
    cr_assert_eq(r.status, 0, "%s", r.err);
    cr_assert_str_eq(r.out, want.s);
    cr_assert_str_empty(r.err);
    run_free(&r);

    /* One row; a text column left-aligned, a narrow header centred. */
    want.n = 0;
    add(&want, " trips \n-------\n %5lld\n(1 row, buckets from 2024-01-01T00:00:00+00:00 up to "
               "2024-01-02T00:00:00+00:00)\n\n",
        (long long)fixture_count(-1, FROM_US, FROM_US + DAY_US));
    r = both_run(NULL, "--format", "table", "-c",
                 "select trips from trips where bucket >= '2024-01-01' and bucket < '2024-01-02'");
    cr_assert_eq(r.status, 0, "%s", r.err);
    cr_assert_str_eq(r.out, want.s);
    run_free(&r);
}

Test(shell, json_and_csv_formats)
{
    struct text want = {0};
    add(&want, "{\"columns\":[\"payment_type\",\"trips\"],\"rows\":[");
    for (int p = 0; p < 6; p++)
        add(&want, "%s[%d,%lld]", p ? "," : "", p, (long long)fixture_count(p, FROM_US, TO_US));
    /* The buckets read, in the ask's zone (UTC). */
    add(&want, "],\"range\":{\"from\":\"2024-01-01T00:00:00+00:00\","
               "\"to\":\"2024-01-04T00:00:00+00:00\"}}\n");
    struct run r = both_run(NULL, "--format", "json", "-c", BY_PAYMENT ";");
    cr_assert_eq(r.status, 0, "%s", r.err);
    cr_assert_str_eq(r.out, want.s);
    run_free(&r);

    want.n = 0;
    add(&want, "payment_type,trips\n");
    for (int p = 0; p < 6; p++)
        add(&want, "%d,%lld\n", p, (long long)fixture_count(p, FROM_US, TO_US));
    r = both_run(NULL, "--format=csv", "-c", BY_PAYMENT);
    cr_assert_eq(r.status, 0, "%s", r.err);
    cr_assert_str_eq(r.out, want.s);
    run_free(&r);
}

/* Numeric strings, texts, NULLs (zones 11 and 12 have no borough) in every
 * format: the backends agree byte for byte, and the row counts add up. */
Test(shell, texts_numerics_and_nulls_agree)
{
    const char *ask = "SELECT borough, trips, fare, avg_fare, median_fare FROM trips "
                      "WHERE bucket >= '2024-01-01' AND bucket < '2024-01-08' "
                      "GROUP BY borough ORDER BY borough";
    struct run r = both_run(NULL, "-c", ask);
    cr_assert_eq(r.status, 0, "%s", r.err);
    cr_assert(strstr(r.out, " Manhattan ") && strstr(r.out, "(4 rows, buckets from 2024-01-01T00:00:00+00:00 up to "
                                                    "2024-01-08T00:00:00+00:00)\n"), "%s", r.out);
    cr_assert(strstr(r.out, "\n           | "), "a NULL borough prints empty:\n%s", r.out);
    run_free(&r);

    r = both_run(NULL, "--format", "csv", "-c", ask);
    cr_assert_eq(r.status, 0, "%s", r.err);
    long long total = 0;
    int rows = 0;
    for (char *line = strchr(r.out, '\n') + 1; *line; line = strchr(line, '\n') + 1) {
        const char *comma = strchr(line, ',');
        cr_assert_not_null(comma);
        total += atoll(comma + 1);
        rows++;
    }
    cr_assert_eq(rows, 4);
    cr_assert_eq(total, fixture_count(-1, FIXTURE_START_US, FIXTURE_START_US + 7 * DAY_US));
    run_free(&r);

    r = both_run(NULL, "--format", "json", "-c", ask);
    cr_assert_eq(r.status, 0, "%s", r.err);
    cr_assert(strstr(r.out, "[null,"), "%s", r.out);
    run_free(&r);
}

/* Cells per width of the trips view: distinct (bucket, pu, payment). */
static long long trips_cells(int64_t width)
{
    static int64_t keys[FIXTURE_TRIPS][3];
    long long n = 0;
    for (int i = 0; i < FIXTURE_TRIPS; i++) {
        struct trip t = fixture_trip(i);
        int64_t k[3] = {t.pickup_at / width, t.pu, t.payment};
        bool seen = false;
        for (long long j = 0; j < n && !seen; j++)
            seen = !memcmp(keys[j], k, sizeof k);
        if (!seen)
            memcpy(keys[n++], k, sizeof k);
    }
    return n;
}

Test(shell, piped_asks_and_commands)
{
    const char *input =
        "\\tz America/New_York\n"
        "\\bind 1 2024-01-01\n"
        "\\bind $2 '2024-01-02'\n"
        "\\bind\n"
        "-- a comment, then an ask over two lines\n"
        "SELECT trips FROM trips\n"
        "  WHERE bucket >= $1 AND bucket < $2;\n"
        "\\d trips\n"
        "\\format csv\n"
        "\\bind 3 2\n"
        "SELECT trips FROM trips WHERE bucket >= $1 AND bucket < $2 AND payment_type = $3; "
        "SELECT trips FROM trips WHERE bucket >= $1 AND bucket < $2 AND payment_type = 4;\n"
        "\\unbind 3\n"
        "\\views\n"
        "\\timing on\n"
        "SELECT trips FROM trips WHERE bucket >= $1 AND bucket < $2\n"
        ";\n"
        "\\timing off\n"
        "\\tz default\n"
        "SELECT trips FROM trips WHERE bucket >= $1 AND bucket < $2\n"; /* ended by EOF */
    struct run r = both_run(input, "--tz", "UTC");
    cr_assert_eq(r.status, 0, "%s", r.err);
    cr_assert_str_empty(r.err);
    cr_assert_null(strstr(r.out, "Type \\?"), "the prompt's banner on a pipe:\n%s", r.out);

    /* New York midnight is 05:00 UTC in January. */
    int64_t from = FIXTURE_START_US + 5 * HOUR_US, to = from + DAY_US;
    struct text want = {0};
    add(&want,
        " parameter |   value    | type \n"
        "-----------+------------+------\n"
        " $1        | 2024-01-01 | text\n"
        " $2        | 2024-01-02 | text\n"
        "(2 rows)\n\n"
        " trips \n-------\n %5lld\n(1 row, buckets from 2024-01-01T00:00:00-05:00 up to "
        "2024-01-02T00:00:00-05:00)\n\n",
        (long long)fixture_count(-1, from, to));
    cr_assert_eq(strncmp(r.out, want.s, want.n), 0, "got:\n%s\nwanted first:\n%s", r.out, want.s);
    const char *p = r.out + want.n;

    /* \d: the columns, then the widths with their cells. */
    want.n = 0;
    add(&want,
        "                              View \"trips\" on yellow_trips\n"
        "     column     |    kind    |                        definition                         \n"
        "----------------+------------+-----------------------------------------------------------\n"
        " pu_location_id | key        | \n"
        " payment_type   | key        | \n"
        " borough        | dim column | taxi_zones.borough\n"
        " trips          | measure    | count(*)\n"
        " fare           | measure    | sum(fare_amount)\n"
        " avg_fare       | measure    | avg(fare_amount)\n"
        " median_fare    | measure    | percentile_disc(0.5) WITHIN GROUP (ORDER BY fare_amount)\n"
        " p99_fare       | measure    | percentile_disc(0.99) WITHIN GROUP (ORDER BY fare_amount)\n"
        "(8 rows)\n\n");
    cr_assert_eq(strncmp(p, want.s, want.n), 0, "got:\n%s\nwanted:\n%s", p, want.s);
    p += want.n;
    want.n = 0;
    add(&want, "          Widths\n width  | seconds | cells \n--------+---------+-------\n");
    add(&want, " 1 hour |    3600 | %5lld\n", trips_cells(HOUR_US));
    add(&want, " 1 day  |   86400 | %5lld\n", trips_cells(DAY_US));
    add(&want, " 1 week |  604800 | %5lld\n(3 rows)\n\n", trips_cells(7 * DAY_US));
    cr_assert_eq(strncmp(p, want.s, want.n), 0, "got:\n%s\nwanted:\n%s", p, want.s);
    p += want.n;

    /* csv from here: two asks on one line, $3 bound then an inline 4. */
    want.n = 0;
    add(&want, "trips\n%lld\ntrips\n%lld\n", (long long)fixture_count(2, from, to),
        (long long)fixture_count(4, from, to));
    add(&want, "view,fact_table,widths,keys,dim_columns,measures\n"
               "trips,yellow_trips,\"1 hour, 1 day, 1 week\",\"pu_location_id, payment_type\","
               "borough,\"trips, fare, avg_fare, median_fare, p99_fare\"\n"
               "dropoffs,yellow_trips,\"1 hour, 1 day, 1 week\",do_location_id,borough,"
               "\"trips, tips, avg_distance, fare\"\n");
    add(&want, "Timing is on.\ntrips\n%lld\nTime: ", (long long)fixture_count(-1, from, to));
    cr_assert_eq(strncmp(p, want.s, want.n), 0, "got:\n%s\nwanted:\n%s", p, want.s);
    p += want.n;
    /* The time differs between the runs of both(); only its shape is checked. */
    cr_assert(strstr(p, " ms\nTiming is off.\n"), "%s", p);
    p = strstr(p, "Timing is off.\n") + strlen("Timing is off.\n");
    want.n = 0;
    add(&want, "trips\n%lld\n",
        (long long)fixture_count(-1, FIXTURE_START_US, FIXTURE_START_US + DAY_US));
    cr_assert_str_eq(p, want.s);
    run_free(&r);
}

/* ---- Errors --------------------------------------------------------------------- */

Test(shell, syntax_error_names_the_place)
{
    struct run r = both_run(NULL, "-c", "SELECT trips\nFORM trips");
    cr_assert_eq(r.status, 1);
    cr_assert_str_empty(r.out);
    /* FORM is taken as the alias of trips; the next word is the error. */
    cr_assert(strstr(r.err, "ERROR:  syntax_error: line 2, column 6: "), "%s", r.err);
    cr_assert(strstr(r.err, "\nLINE 2: FORM trips\n             ^\n"), "%s", r.err);
    run_free(&r);
}

Test(shell, view_names_as_sql_reads_them)
{
    /* Unquoted names fold to lower case; a quoted one is taken as written. */
    struct run plain = both_run("\\d trips\n", "--format", "csv");
    cr_assert_eq(plain.status, 0, "%s", plain.err);
    cr_assert(strstr(plain.out, "median_fare"), "%s", plain.out);
    const char *same[] = {"\\d TRIPS\n", "\\d Trips\n", "\\d \"trips\"\n"};
    for (size_t i = 0; i < sizeof same / sizeof same[0]; i++) {
        struct run r = both_run(same[i], "--format", "csv");
        cr_assert_eq(r.status, 0, "%s: %s", same[i], r.err);
        cr_assert_str_eq(r.out, plain.out, "%s", same[i]);
        run_free(&r);
    }
    run_free(&plain);
}

Test(shell, engine_errors_and_the_rest_still_runs)
{
    const char *input =
        "SELECT trips FROM nope WHERE bucket >= '2024-01-01' AND bucket < '2024-01-02';\n"
        "SELECT trips FROM trips WHERE bucket >= $1 AND bucket < $2;\n"
        "SELECT date_trunc('day', bucket, 'Asia/Kolkata'), trips FROM trips\n"
        "  WHERE bucket >= '2024-01-01' AND bucket < '2024-01-03' GROUP BY 1;\n"
        "\\tz Mars/Olympus_Mons\n"
        "SELECT trips FROM trips WHERE bucket >= '2024-01-01' AND bucket < '2024-01-02';\n"
        "\\tz UTC\n"
        "\\bogus\n"
        "\\d nope\n"
        "\\d \"TRIPS\"\n"
        "\\d \"trips\n"
        "\\format yaml\n"
        "\\bind x 1\n"
        "SELECT trips FROM trips WHERE bucket >= '2024-01-01' AND bucket < '2024-01-02';\n";
    struct run r = both_run(input, "--format", "csv");
    cr_assert_eq(r.status, 1);
    struct text want = {0};
    add(&want, "trips\n%lld\n", (long long)fixture_count(-1, FROM_US, FROM_US + DAY_US));
    cr_assert_str_eq(r.out, want.s, "the asks after the errors still run");
    const char *expect[] = {"ERROR:  unknown_view: ", "$1, which is not bound: \\bind 1 VALUE",
                            "not_composable", "Mars/Olympus_Mons", "invalid command \\bogus",
                            "unknown view \"nope\"", "unknown view \"TRIPS\"",
                            "\\d \"trips: the quoted name is not closed",
                            "unknown format \"yaml\"", "usage: \\bind N VALUE"};
    for (size_t i = 0; i < sizeof expect / sizeof expect[0]; i++)
        cr_assert(strstr(r.err, expect[i]), "missing %s in:\n%s", expect[i], r.err);
    run_free(&r);
}

Test(shell, unreachable_server)
{
    char url[64];
    snprintf(url, sizeof url, "http://127.0.0.1:%d", hc_free_port());
    struct run r = shell_run(NULL, "--url", url, "-c", "\\views");
    cr_assert_eq(r.status, 1);
    cr_assert(strstr(r.err, "cannot reach straum-serve at ") && strstr(r.err, url) &&
                  strstr(r.err, "--url"),
              "%s", r.err);
    run_free(&r);

    r = shell_run(NULL, "--url", "localhost:8080", "-c", "\\views");
    cr_assert_eq(r.status, 2);
    cr_assert(strstr(r.err, "http://"), "%s", r.err);
    run_free(&r);

    r = shell_run(NULL, "--store", "/nonexistent/straum", "-c", "\\views");
    cr_assert_eq(r.status, 2);
    cr_assert(strstr(r.err, "cannot open the store /nonexistent/straum"), "%s", r.err);
    run_free(&r);
}

Test(shell, bearer_token)
{
    char path[] = "/tmp/straum-token-XXXXXX";
    int fd = mkstemp(path);
    cr_assert_eq(write(fd, "tok\n", 4), 4);
    close(fd);
    struct serve_options o = {.store_dir = the_store, .token_file = path};
    struct serve_server *s = fixture_serve(&o);
    char url[64];
    snprintf(url, sizeof url, "http://127.0.0.1:%d", serve_port(s));

    struct run r = shell_run(NULL, "--url", url, "-c", "\\views");
    cr_assert_eq(r.status, 1);
    cr_assert(strstr(r.err, "unauthorized") && strstr(r.err, "--token"), "%s", r.err);
    run_free(&r);
    r = shell_run(NULL, "--url", url, "--token", "tok", "-c", "\\views");
    cr_assert_eq(r.status, 0, "%s", r.err);
    cr_assert(strstr(r.out, "(2 rows)"), "%s", r.out);
    run_free(&r);
    r = shell_run_v(NULL, "STRAUM_TOKEN=tok", (const char *const[]){"--url", url, "-c", BY_PAYMENT, NULL});
    cr_assert_eq(r.status, 0, "%s", r.err);
    cr_assert(strstr(r.out, "(6 rows, buckets from "), "%s", r.out);
    run_free(&r);
    serve_stop(s);
    unlink(path);
}

Test(shell, several_c_options_and_quit)
{
    struct text want = {0};
    for (int d = 0; d < 3; d++)
        add(&want, "%lld\n", (long long)fixture_count(-1, FROM_US + d * DAY_US, FROM_US + (d + 1) * DAY_US));
    struct run r = both_run(NULL, "--format", "csv", "-c",
                            "SELECT date_bin('1 day', bucket) AS day, trips FROM trips WHERE "
                            "bucket >= '2024-01-01' AND bucket < '2024-01-04' GROUP BY day",
                            "-c", "\\q", "-c", "SELECT nothing");
    cr_assert_eq(r.status, 0, "%s", r.err);
    cr_assert_eq(strncmp(r.out, "day,trips\n2024-01-01T00:00:00+00:00,", 36), 0, "%s", r.out);
    /* the counts, in day order */
    char got[256] = "";
    for (char *line = strchr(r.out, '\n') + 1; *line; line = strchr(line, '\n') + 1)
        strncat(got, strchr(line, ',') + 1, strcspn(strchr(line, ',') + 1, "\n") + 1);
    cr_assert_str_eq(got, want.s);
    run_free(&r);
}

Test(shell, help_version_and_usage)
{
    struct run r = shell_run(NULL, "--help");
    cr_assert_eq(r.status, 0);
    cr_assert(strstr(r.out, "usage: straum-shell") && strstr(r.out, "--store DIR"), "%s", r.out);
    run_free(&r);
    r = shell_run(NULL, "--version");
    cr_assert_eq(r.status, 0);
    cr_assert_str_eq(r.out, "straum-shell " STRAUM_VERSION "\n");
    run_free(&r);
    r = shell_run(NULL, "--bogus");
    cr_assert_eq(r.status, 2);
    cr_assert(strstr(r.err, "--bogus"), "%s", r.err);
    run_free(&r);
    r = shell_run(NULL, "--url", the_url, "--store", the_store);
    cr_assert_eq(r.status, 2);
    run_free(&r);
    r = shell_run(NULL, "--format", "yaml");
    cr_assert_eq(r.status, 2);
    run_free(&r);
    r = shell_run(NULL, "-c");
    cr_assert_eq(r.status, 2);
    run_free(&r);
}

/* ---- At a terminal ------------------------------------------------------------------ */

/* Reads what the shell writes to the terminal until want appears in it or
 * 20 s pass; the whole output so far is kept in seen. */
static bool pty_wait_for(int fd, const char *want, char *seen, size_t cap, size_t *len)
{
    for (int waited = 0; waited < 20000; waited += 50) {
        if (strstr(seen, want))
            return true;
        struct pollfd p = {.fd = fd, .events = POLLIN};
        if (poll(&p, 1, 50) > 0) {
            ssize_t n = read(fd, seen + *len, cap - 1 - *len);
            if (n <= 0)
                return strstr(seen, want) != NULL;
            *len += (size_t)n;
            seen[*len] = '\0';
        }
    }
    return false;
}

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st, (void)flag, (void)ftw;
    return remove(path);
}

Test(shell, terminal_completion_and_history)
{
    char home[] = "/tmp/straum-shell-home-XXXXXX";
    cr_assert_not_null(mkdtemp(home));
    int fd;
    fflush(NULL);
    pid_t pid = forkpty(&fd, NULL, NULL, NULL);
    cr_assert_geq(pid, 0, "forkpty");
    if (pid == 0) {
        setenv("HOME", home, 1);
        setenv("TERM", "dumb", 1);
        execl(STRAUM_SHELL_BIN, STRAUM_SHELL_BIN, "--store", the_store, (char *)NULL);
        _exit(127);
    }
    static char seen[1 << 16];
    size_t len = 0;
    seen[0] = '\0';
    cr_assert(pty_wait_for(fd, "straum=> ", seen, sizeof seen, &len), "no prompt: %s", seen);

    /* Every word but the bucket literals is cut short and completed by Tab:
     * a keyword, a measure, a view and a backslash command. Uncompleted,
     * the ask would be a syntax error; completed, it answers the count. */
    const char *typed = "SEL\t tri\t FROM tri\t WHERE bucket >= '2024-01-01' "
                        "AND bucket < '2024-01-02';\n";
    cr_assert_eq(write(fd, typed, strlen(typed)), (ssize_t)strlen(typed));
    char want[64];
    snprintf(want, sizeof want, "%lld\r\n(1 row, buckets from 2024-01-01T00:00:00+00:00",
             (long long)fixture_count(-1, FROM_US, FROM_US + DAY_US));
    cr_assert(pty_wait_for(fd, want, seen, sizeof seen, &len), "no answer %s in: %s", want, seen);
    const char *more = "\\tim\t\n";
    cr_assert_eq(write(fd, more, strlen(more)), (ssize_t)strlen(more));
    cr_assert(pty_wait_for(fd, "Timing is on.", seen, sizeof seen, &len), "%s", seen);
    cr_assert_eq(write(fd, "\\q\n", 3), 3);
    int st;
    cr_assert_eq(waitpid(pid, &st, 0), pid);
    close(fd);
    cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "status %d: %s", st, seen);

    /* The history holds the ask as completed (libedit writes a space as
     * \040, a backslash as \134). */
    char path[128];
    snprintf(path, sizeof path, "%s/.straum_history", home);
    FILE *f = fopen(path, "r");
    cr_assert_not_null(f, "no history file %s", path);
    char history[4096];
    size_t n = fread(history, 1, sizeof history - 1, f);
    history[n] = '\0';
    fclose(f);
    cr_assert(strstr(history, "SELECT") && strstr(history, "FROM") && strstr(history, "\\134timing"),
              "history: %s", history);
    nftw(home, remove_entry, 8, FTW_DEPTH | FTW_PHYS);
}
