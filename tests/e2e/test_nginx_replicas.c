/* test_nginx_replicas.c -- three straum-serve replicas on one store behind
 * nginx, configured by tools/nginx/straum.conf itself (SPEC.md §8.3).
 *
 * One straum-ingest follows a taxi database; a client thread asks the ten
 * benchmark asks through nginx without a pause while the test SIGKILLs one
 * replica (stopped first, until an ask hangs on it: the kill lands mid-ask),
 * changes PostgreSQL (three transactions: trips added, fares
 * changed and trips deleted, zones moved to another borough), and starts the
 * replica again. Every ask must come back 200 with PostgreSQL's answer for
 * the state committed when it was asked: the state before a change, or the
 * one after it while the change is on its way to the store, and only the
 * new one once the store holds it. The killed replica's port must refuse
 * connections, nginx's access log must show asks it retried on another
 * replica, and, once started again, the replica must answer asks again.
 *
 * nginx runs in the foreground as a single process (master_process off),
 * so it needs no `user` (root and other users alike), dies with the test
 * process (PR_SET_PDEATHSIG) and writes only in a temporary directory: its
 * pid, error log, access log and temp paths. Without nginx the test fails:
 * it is in tools/packages.sh. STRAUM_NGINX names another binary. */
#include "tests/kit/answer.h"
#include "tests/kit/http_client.h"
#include "tests/kit/taxi_asks.h"
#include "tests/e2e/oracle.h"
#include "tests/e2e/taxi_db.h"
#include "tests/serve/serve_test.h"

#include <cjson/cJSON.h>
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

enum { REPLICAS = 3, GENS = 4, MAX_DEFERRED = 200000 };
#define ASK_TZ "America/New_York"
#define NGINX_DEFAULT "/usr/sbin/nginx"

struct deferred {
    int ask, gen;
    struct answer a;
};

static struct {
    struct taxi_db db;
    bool db_made;
    char dir[64]; /* nginx's prefix: configuration, logs, temp paths */
    char nginx_bin[512];
    int port, ports[REPLICAS];
    pid_t nginx, serves[REPLICAS];
    char *bodies[TAXI_NASKS];
    struct answer want[GENS][TAXI_NASKS]; /* PostgreSQL's answers, per state */
    atomic_int gen;                       /* the state the store holds */
    atomic_bool changing;                 /* gen + 1 committed or on its way */
    atomic_bool stop;
    atomic_long asked, failures, deferred_ok, in_kill;
    atomic_bool replica_down;
    pthread_mutex_t mu;
    char failure[4096]; /* the first one */
} R = {.mu = PTHREAD_MUTEX_INITIALIZER};

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void fail_later(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void fail_later(const char *fmt, ...)
{
    pthread_mutex_lock(&R.mu);
    if (atomic_fetch_add(&R.failures, 1) == 0) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(R.failure, sizeof R.failure, fmt, ap);
        va_end(ap);
    }
    pthread_mutex_unlock(&R.mu);
}

static void assert_no_failure(const char *when)
{
    long n = atomic_load(&R.failures);
    pthread_mutex_lock(&R.mu);
    char first[sizeof R.failure];
    memcpy(first, R.failure, sizeof first);
    pthread_mutex_unlock(&R.mu);
    cr_assert_eq(n, 0, "%s: %ld asks through nginx failed or were wrong; the first: %s", when, n,
                 first);
}

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = malloc((size_t)n + 1);
    cr_assert_not_null(buf);
    size_t got = fread(buf, 1, (size_t)n, f);
    buf[got] = '\0';
    fclose(f);
    return buf;
}

static void write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    cr_assert_not_null(f, "cannot write %s: %s", path, strerror(errno));
    fputs(text, f);
    cr_assert_eq(fclose(f), 0);
}

/* text with every `from` replaced by `to` (text is freed); fails the test
 * when `from` does not occur: the template and the test must agree. */
static char *replace_all(char *text, const char *from, const char *to)
{
    size_t fl = strlen(from), tl = strlen(to), n = 0;
    for (const char *p = strstr(text, from); p; p = strstr(p + fl, from))
        n++;
    cr_assert_gt(n, 0, "tools/nginx/straum.conf has no \"%s\": the test replaces it with its own "
                       "value, keep it in the file (or change the test with it)", from);
    char *out = malloc(strlen(text) + n * tl + 1), *o = out;
    const char *p = text;
    for (const char *q = strstr(p, from); q; q = strstr(p, from)) {
        memcpy(o, p, (size_t)(q - p));
        o += q - p;
        memcpy(o, to, tl);
        o += tl;
        p = q + fl;
    }
    strcpy(o, p);
    free(text);
    return out;
}

/* ---- Processes ------------------------------------------------------------------------ */

static bool refuses(int port)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port),
                            .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    int rc = connect(fd, (struct sockaddr *)&a, sizeof a), e = errno;
    close(fd);
    return rc != 0 && e == ECONNREFUSED;
}

static int healthz(int port)
{
    if (refuses(port))
        return 0;
    struct hc_response r;
    hc_once(port, "GET", "/healthz", NULL, NULL, &r);
    int status = r.status;
    hc_free(&r);
    return status;
}

static pid_t spawn(const char *const *argv, const char *log)
{
    pid_t pid = fork();
    cr_assert_geq(pid, 0, "fork: %s", strerror(errno));
    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL); /* never outlive a failed test */
        int fd = open(log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
        if (fd >= 0) {
            dup2(fd, 1);
            dup2(fd, 2);
        }
        execv(argv[0], (char *const *)argv);
        _exit(127);
    }
    return pid;
}

static void log_tail(const char *path, char *out, size_t len)
{
    char *text = slurp(path);
    size_t n = text ? strlen(text) : 0;
    snprintf(out, len, "%s", text ? text + (n > len - 1 ? n - (len - 1) : 0) : "(no log)");
    free(text);
}

static void wait_up(pid_t pid, int port, const char *what, const char *log)
{
    for (int i = 0; i < 500; i++) {
        if (healthz(port) == 200)
            return;
        int status;
        if (waitpid(pid, &status, WNOHANG) == pid) {
            char tail[2048];
            log_tail(log, tail, sizeof tail);
            cr_assert_fail("%s exited (status %d) before it answered /healthz on port %d:\n%s",
                           what, status, port, tail);
        }
        usleep(20000);
    }
    cr_assert_fail("%s did not answer /healthz on port %d within 10 s", what, port);
}

static void serve_start(int i)
{
    char listen[64], log[128];
    snprintf(listen, sizeof listen, "127.0.0.1:%d", R.ports[i]);
    snprintf(log, sizeof log, "%s/serve-%d.log", R.dir, i);
    const char *argv[] = {STRAUM_SERVE_BIN, "--store", R.db.store, "--listen", listen,
                          "--threads", "2", NULL};
    R.serves[i] = spawn(argv, log);
    char what[64];
    snprintf(what, sizeof what, "straum-serve replica %d", i);
    wait_up(R.serves[i], R.ports[i], what, log);
}

static void serve_stop(int i)
{
    int status;
    kill(R.serves[i], SIGTERM);
    waitpid(R.serves[i], &status, 0);
    R.serves[i] = 0;
    cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0,
              "replica %d did not stop cleanly on SIGTERM (status %d)", i, status);
}

static void find_nginx(void)
{
    const char *env = getenv("STRAUM_NGINX");
    snprintf(R.nginx_bin, sizeof R.nginx_bin, "%s", env && *env ? env : NGINX_DEFAULT);
    cr_assert(access(R.nginx_bin, X_OK) == 0,
              "nginx is not installed: %s: %s. This test runs three straum-serve replicas "
              "behind nginx; install the nginx-light package (tools/packages.sh lists it; "
              "./tools/test.sh installs it), or name the binary in STRAUM_NGINX",
              R.nginx_bin, strerror(errno));
}

/* nginx.conf: the process-level settings a test needs around the http
 * context file tools/nginx/straum.conf, with its addresses and log path
 * replaced by the test's. */
static void nginx_config(void)
{
    char path[4096], port[32], text[512], log[128];
    snprintf(path, sizeof path, "%s/tools/nginx/straum.conf", STRAUM_SOURCE_DIR);
    char *conf = slurp(path);
    cr_assert_not_null(conf, "cannot read %s: %s", path, strerror(errno));
    snprintf(port, sizeof port, "127.0.0.1:%d", R.port);
    conf = replace_all(conf, "127.0.0.1:8080", port);
    for (int i = 0; i < REPLICAS; i++) {
        char from[32];
        snprintf(from, sizeof from, "127.0.0.1:%d", 8081 + i);
        snprintf(port, sizeof port, "127.0.0.1:%d", R.ports[i]);
        conf = replace_all(conf, from, port);
        snprintf(text, sizeof text, "server %s ", port);
        cr_assert_not_null(strstr(conf, text), "tools/nginx/straum.conf: no \"%s\"", text);
    }
    snprintf(log, sizeof log, "%s/access.log", R.dir);
    conf = replace_all(conf, "/var/log/nginx/straum.access.log", log);
    snprintf(path, sizeof path, "%s/straum.conf", R.dir);
    write_file(path, conf);
    free(conf);

    char main_conf[4096];
    snprintf(main_conf, sizeof main_conf,
             "# written by test_nginx_replicas: tools/nginx/straum.conf in a throwaway nginx\n"
             "daemon off;\n"
             "master_process off;\n"
             "pid %s/nginx.pid;\n"
             "error_log %s/error.log warn;\n"
             "events { worker_connections 512; }\n"
             "http {\n"
             "    access_log off;\n"
             "    client_body_temp_path %s/body;\n"
             "    proxy_temp_path %s/proxy;\n"
             "    fastcgi_temp_path %s/fastcgi;\n"
             "    uwsgi_temp_path %s/uwsgi;\n"
             "    scgi_temp_path %s/scgi;\n"
             "    include %s/straum.conf;\n"
             "}\n",
             R.dir, R.dir, R.dir, R.dir, R.dir, R.dir, R.dir, R.dir);
    snprintf(path, sizeof path, "%s/nginx.conf", R.dir);
    write_file(path, main_conf);
}

static void nginx_start(void)
{
    char prefix[128], conf[128], err[128], out[128];
    snprintf(prefix, sizeof prefix, "%s/", R.dir);
    snprintf(conf, sizeof conf, "%s/nginx.conf", R.dir);
    snprintf(err, sizeof err, "%s/error.log", R.dir);
    snprintf(out, sizeof out, "%s/nginx.out", R.dir);
    const char *argv[] = {R.nginx_bin, "-p", prefix, "-c", conf, "-e", err, NULL};
    R.nginx = spawn(argv, out);
    for (int i = 0; i < 500; i++) {
        if (healthz(R.port) == 200)
            return;
        int status;
        if (waitpid(R.nginx, &status, WNOHANG) == R.nginx) {
            R.nginx = 0;
            char tail[2048], tail2[1024];
            log_tail(err, tail, sizeof tail);
            log_tail(out, tail2, sizeof tail2);
            cr_assert_fail("nginx exited (status %d) before it answered /healthz on port %d:\n"
                           "%s\n%s", status, R.port, tail, tail2);
        }
        usleep(20000);
    }
    cr_assert_fail("nginx did not answer /healthz on port %d within 10 s", R.port);
}

static void nginx_stop(void)
{
    int status = 0;
    kill(R.nginx, SIGQUIT); /* graceful: finish requests, then exit */
    for (int i = 0; i < 500 && waitpid(R.nginx, &status, WNOHANG) == 0; i++)
        usleep(10000);
    if (kill(R.nginx, 0) == 0) {
        kill(R.nginx, SIGKILL);
        waitpid(R.nginx, &status, 0);
        R.nginx = 0;
        cr_assert_fail("nginx did not stop within 5 s of SIGQUIT");
    }
    R.nginx = 0;
    cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "nginx exited with status %d",
              status);
}

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)flag;
    (void)ftw;
    return remove(path);
}

/* Whatever happened to the test: nothing it started may live on. */
static void teardown(void)
{
    atomic_store(&R.stop, true);
    if (R.nginx > 0) {
        kill(R.nginx, SIGKILL);
        waitpid(R.nginx, NULL, 0);
        R.nginx = 0;
    }
    for (int i = 0; i < REPLICAS; i++)
        if (R.serves[i] > 0) {
            kill(R.serves[i], SIGKILL);
            waitpid(R.serves[i], NULL, 0);
            R.serves[i] = 0;
        }
    if (R.db_made && R.db.ingest > 0) {
        kill(R.db.ingest, SIGKILL);
        waitpid(R.db.ingest, NULL, 0);
        R.db.ingest = 0;
    }
}

/* ---- Asks and PostgreSQL's answers --------------------------------------------------- */

static char *ask_body(const struct taxi_ask *a)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "ask", a->ask);
    cJSON *p = cJSON_AddArrayToObject(o, "params");
    for (int i = 0; a->params[i]; i++)
        cJSON_AddItemToArray(p, cJSON_CreateString(a->params[i]));
    cJSON_AddStringToObject(o, "time_zone", ASK_TZ);
    char *s = cJSON_PrintUnformatted(o);
    cJSON_Delete(o);
    return s;
}

/* PostgreSQL's answers to the ten asks now, as state g. */
static void pg_answers(int g)
{
    cr_assert_lt(g, GENS);
    for (int i = 0; i < TAXI_NASKS; i++) {
        PGresult *res = PQexec(R.db.pg, TAXI_ASKS[i].postgres_sql);
        cr_assert_eq(PQresultStatus(res), PGRES_TUPLES_OK, "%s\n%s", TAXI_ASKS[i].postgres_sql,
                     PQerrorMessage(R.db.pg));
        cr_assert_eq(answer_from_pg(res, &R.want[g][i]), 0);
        PQclear(res);
    }
}

static int64_t pg_trips(void)
{
    PGresult *r = PQexec(R.db.pg, "SELECT count(*) FROM yellow_trips");
    cr_assert_eq(PQresultStatus(r), PGRES_TUPLES_OK, "%s", PQerrorMessage(R.db.pg));
    int64_t n = atoll(PQgetvalue(r, 0, 0));
    PQclear(r);
    return n;
}

/* Every ask through nginx, on a connection of its own, equals state g. */
static void check_through_nginx(int g, const char *when)
{
    struct http_client cl;
    struct http_response resp = {0};
    char url[64], err[512], why[1024];
    snprintf(url, sizeof url, "http://127.0.0.1:%d", R.port);
    cr_assert_eq(http_client_open(&cl, url, err, sizeof err), 0, "%s: %s", when, err);
    for (int i = 0; i < TAXI_NASKS; i++) {
        int rc = http_request(&cl, "POST", "/ask", "application/json", R.bodies[i],
                              strlen(R.bodies[i]), &resp, err, sizeof err);
        cr_assert_eq(rc, 0, "%s: \"%s\" through nginx: %s", when, TAXI_ASKS[i].name, err);
        cr_assert_eq(resp.status, 200, "%s: \"%s\" through nginx: %d %s", when,
                     TAXI_ASKS[i].name, resp.status, resp.body);
        struct answer got;
        cr_assert_eq(answer_from_json(resp.body, &got, why, sizeof why), 0, "%s: %s", why,
                     resp.body);
        bool equal = answer_equal(&R.want[g][i], &got, why, sizeof why);
        answer_free(&got);
        cr_assert(equal, "%s: \"%s\" through nginx differs from PostgreSQL: %s", when,
                  TAXI_ASKS[i].name, why);
    }
    http_client_close(&cl);
    http_response_free(&resp);
}

/* The client: the ten asks in turn through nginx, without a pause but a
 * millisecond's, each checked against the state it may see. */
static void *asker_main(void *arg)
{
    (void)arg;
    struct http_client cl;
    struct http_response resp = {0};
    char url[64], err[512], why[1024];
    snprintf(url, sizeof url, "http://127.0.0.1:%d", R.port);
    http_client_open(&cl, url, err, sizeof err);
    struct deferred *def = calloc(MAX_DEFERRED, sizeof *def);
    int ndef = 0;
    for (long n = 0; !atomic_load(&R.stop); n++) {
        int i = (int)(n % TAXI_NASKS);
        int g = atomic_load(&R.gen);
        bool changing = atomic_load(&R.changing), down = atomic_load(&R.replica_down);
        int rc = http_request(&cl, "POST", "/ask", "application/json", R.bodies[i],
                              strlen(R.bodies[i]), &resp, err, sizeof err);
        atomic_fetch_add(&R.asked, 1);
        if (down && atomic_load(&R.replica_down))
            atomic_fetch_add(&R.in_kill, 1);
        struct answer a;
        if (rc != 0) {
            fail_later("\"%s\" through nginx: %s", TAXI_ASKS[i].name, err);
        } else if (resp.status != 200) {
            fail_later("\"%s\" through nginx: %d %s", TAXI_ASKS[i].name, resp.status, resp.body);
        } else if (answer_from_json(resp.body, &a, why, sizeof why) != 0) {
            fail_later("\"%s\" through nginx: a malformed answer: %s: %s", TAXI_ASKS[i].name,
                       why, resp.body);
        } else if (answer_equal(&R.want[g][i], &a, why, sizeof why)) {
            answer_free(&a);
        } else {
            /* Not the state when it was asked: the next one, if the store
             * holds it by now, or it may be, if a change was on its way. */
            int g2 = atomic_load(&R.gen);
            char why2[1024];
            if (g2 > g && answer_equal(&R.want[g + 1][i], &a, why2, sizeof why2)) {
                answer_free(&a);
            } else if (g2 == g && (changing || atomic_load(&R.changing)) && ndef < MAX_DEFERRED) {
                def[ndef++] = (struct deferred){.ask = i, .gen = g, .a = a};
            } else {
                answer_free(&a);
                fail_later("\"%s\" through nginx differs from PostgreSQL's state %d (the store "
                           "held it when the ask was sent, and no change was on its way): %s",
                           TAXI_ASKS[i].name, g, why);
            }
        }
        /* Answers kept for the state after a change: checked once the
         * change is in the store and PostgreSQL's answers to it are known. */
        int now = atomic_load(&R.gen);
        for (int d = 0; d < ndef;) {
            if (now <= def[d].gen) {
                d++;
                continue;
            }
            if (answer_equal(&R.want[def[d].gen + 1][def[d].ask], &def[d].a, why, sizeof why))
                atomic_fetch_add(&R.deferred_ok, 1);
            else
                fail_later("\"%s\" through nginx during change %d is neither PostgreSQL's answer "
                           "before the change nor after it: %s", TAXI_ASKS[def[d].ask].name,
                           def[d].gen + 1, why);
            answer_free(&def[d].a);
            def[d] = def[--ndef];
        }
        usleep(1000);
    }
    for (int d = 0; d < ndef; d++)
        answer_free(&def[d].a);
    free(def);
    http_client_close(&cl);
    http_response_free(&resp);
    return NULL;
}

/* One transaction in PostgreSQL while the client asks; returns once the
 * store holds it and every ask through nginx gives the new answers. */
static void change(const char *what, const char *sql)
{
    int g = atomic_load(&R.gen);
    atomic_store(&R.changing, true);
    if (sql)
        oracle_exec(R.db.pg, sql);
    else
        taxi_db_add_trips(&R.db, 400, 0.77);
    pg_answers(g + 1);
    uint64_t lsn = oracle_committed_lsn(R.db.pg);
    cr_assert(oracle_wait_position(R.db.store, lsn, 60000),
              "%s: the store did not reach PostgreSQL's position within 60 s", what);
    atomic_store(&R.gen, g + 1);
    atomic_store(&R.changing, false);
    check_through_nginx(g + 1, what);
    fprintf(stderr, "nginx_replicas: %s: the store holds it, %lld trips; asks through nginx "
                    "answer the new state\n", what, (long long)pg_trips());
}

/* Runs the client on for s seconds, failing at once on a bad answer. */
static void keep_asking(double s)
{
    double until = now_s() + s;
    while (now_s() < until) {
        assert_no_failure("while asking");
        usleep(50000);
    }
}

/* ---- The access log -------------------------------------------------------------------- */

struct log_counts {
    long lines, answered[REPLICAS], retried, dead_tried;
    long dead_in_flight; /* of those, sent to it before the kill (waited on it) */
};

/* Counts from byte `from` of the access log: the replica that answered each
 * request (the last of $upstream_addr), requests nginx retried on another
 * replica, and those that tried replica `dead` first and were answered by
 * another, and of those the ones it had sent to `dead` before the kill
 * (it waited 0.9 s or more: the replica was stopped for 1 s). */
static void count_log(long from, int dead, struct log_counts *c)
{
    char path[128];
    snprintf(path, sizeof path, "%s/access.log", R.dir);
    char *text = slurp(path);
    cr_assert_not_null(text, "no access log at %s", path);
    memset(c, 0, sizeof *c);
    long len = (long)strlen(text);
    char *line = text + (from < len ? from : len);
    while (*line) {
        char *end = strchr(line, '\n');
        if (end)
            *end = '\0';
        c->lines++;
        char *u = strstr(line, "upstream="), *us = strstr(line, " upstream_status=");
        if (u && us && us > u) {
            *us = '\0';
            u += strlen("upstream=");
            char *last = strrchr(u, ' ');
            last = last ? last + 1 : u;
            bool retried = strchr(u, ',') != NULL;
            c->retried += retried;
            int port = atoi(strchr(last, ':') ? strchr(last, ':') + 1 : "0");
            for (int i = 0; i < REPLICAS; i++)
                if (port == R.ports[i])
                    c->answered[i]++;
            if (dead >= 0 && retried && port != R.ports[dead]) {
                char dead_addr[40];
                snprintf(dead_addr, sizeof dead_addr, "127.0.0.1:%d,", R.ports[dead]);
                if (strstr(u, dead_addr)) {
                    c->dead_tried++;
                    const char *rt = strstr(us + 1, "request_time=");
                    c->dead_in_flight += rt && atof(rt + strlen("request_time=")) >= 0.9;
                }
            }
        }
        if (!end)
            break;
        line = end + 1;
    }
    free(text);
}

static long log_size(void)
{
    char path[128];
    snprintf(path, sizeof path, "%s/access.log", R.dir);
    struct stat st;
    return stat(path, &st) == 0 ? (long)st.st_size : 0;
}

/* ---- The test -------------------------------------------------------------------------- */

Test(nginx_replicas, a_replica_killed_behind_nginx_loses_no_ask, .timeout = 600,
     .fini = teardown)
{
    double began = now_s();
    find_nginx();
    strcpy(R.dir, "/tmp/straum-nginx-XXXXXX");
    cr_assert_not_null(mkdtemp(R.dir));

    /* A taxi database, followed. */
    taxi_db_create(&R.db, NULL, 3000);
    R.db_made = true;
    taxi_ingest_start(&R.db, NULL);
    cr_assert(oracle_wait_position(R.db.store, oracle_committed_lsn(R.db.pg), 120000),
              "straum-ingest did not load and catch up within 120 s");
    oracle_exec(R.db.pg, "SET TIME ZONE '" ASK_TZ "'");
    for (int i = 0; i < TAXI_NASKS; i++)
        R.bodies[i] = ask_body(&TAXI_ASKS[i]);
    pg_answers(0);

    /* Three replicas and nginx, each on a loopback port of its own. */
    int ports[REPLICAS + 1];
    for (int i = 0; i <= REPLICAS; i++) {
        bool again;
        do {
            ports[i] = hc_free_port();
            again = false;
            for (int j = 0; j < i; j++)
                again |= ports[j] == ports[i];
        } while (again);
    }
    R.port = ports[REPLICAS];
    for (int i = 0; i < REPLICAS; i++) {
        R.ports[i] = ports[i];
        serve_start(i);
    }
    nginx_config();
    nginx_start();
    check_through_nginx(0, "before the client starts");
    fprintf(stderr, "nginx_replicas: nginx on %d before replicas on %d, %d, %d (%s)\n", R.port,
            R.ports[0], R.ports[1], R.ports[2], R.dir);

    pthread_t asker;
    cr_assert_eq(pthread_create(&asker, NULL, asker_main, NULL), 0);
    keep_asking(2);
    struct log_counts c;
    count_log(0, -1, &c);
    for (int i = 0; i < REPLICAS; i++)
        cr_assert_gt(c.answered[i], 0, "nginx sent no ask to replica %d in 2 s (log: %ld lines)",
                     i, c.lines);

    change("trips added", NULL);

    /* One replica killed in the middle of the stream of asks. */
    const int dead = 1;
    long asked_at_kill = atomic_load(&R.asked);
    atomic_store(&R.replica_down, true);
    /* Stopped first, so that the client's next ask routed to it hangs
     * there, sent and unanswered: the kill then lands in the middle of an
     * ask, the case nginx retries only with non_idempotent. */
    kill(R.serves[dead], SIGSTOP);
    bool stuck = false;
    for (double t = now_s(), still = now_s(); !stuck && now_s() < t + 5; usleep(20000)) {
        long n = atomic_load(&R.asked);
        usleep(20000);
        if (atomic_load(&R.asked) != n)
            still = now_s();
        stuck = now_s() - still > 1.0;
    }
    cr_assert(stuck, "no ask hung on the stopped replica within 5 s");
    long log_at_kill = log_size(); /* every ask it answered is logged by now */
    kill(R.serves[dead], SIGKILL);
    int status;
    waitpid(R.serves[dead], &status, 0);
    R.serves[dead] = 0;
    cr_assert(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
    cr_assert(refuses(R.ports[dead]), "the killed replica's port %d still accepts connections",
              R.ports[dead]);
    keep_asking(1);
    change("fares changed and trips deleted, a replica down",
           "BEGIN;"
           "UPDATE yellow_trips SET fare_amount = fare_amount + 1.25, payment_type = 2 "
           "WHERE id % 7 = 0;"
           "DELETE FROM yellow_trips WHERE id % 11 = 0;"
           "COMMIT");
    keep_asking(2);
    cr_assert(refuses(R.ports[dead]), "the killed replica's port %d accepts connections",
              R.ports[dead]);
    long asked_down = atomic_load(&R.asked) - asked_at_kill;
    count_log(log_at_kill, dead, &c);
    cr_assert_eq(c.answered[dead], 0, "%ld asks answered by the killed replica", c.answered[dead]);
    cr_assert_gt(c.dead_tried, 0, "nginx never tried the killed replica and retried elsewhere "
                                  "(%ld requests, %ld retried)", c.lines, c.retried);
    cr_assert_gt(c.dead_in_flight, 0, "no ask that was in flight on the killed replica was "
                                      "answered by another (%ld retried after trying it)",
                 c.dead_tried);
    cr_assert_gt(c.answered[0] + c.answered[2], 0);
    struct log_counts down = c;

    /* Started again on its port: nginx sends it asks again, after at most
     * fail_timeout (5 s in straum.conf). */
    long log_at_restart = log_size();
    serve_start(dead);
    atomic_store(&R.replica_down, false);
    double back_at = now_s(), back = -1;
    while (now_s() < back_at + 30) {
        assert_no_failure("after the restart");
        count_log(log_at_restart, -1, &c);
        if (c.answered[dead] > 0) {
            back = now_s() - back_at;
            break;
        }
        usleep(100000);
    }
    cr_assert_geq(back, 0, "the restarted replica got no ask from nginx within 30 s");

    change("zones moved to Queens",
           "UPDATE taxi_zones SET borough = 'Queens' "
           "WHERE borough = 'Manhattan' AND location_id % 2 = 0");
    keep_asking(2);
    atomic_store(&R.stop, true);
    pthread_join(asker, NULL);
    assert_no_failure("at the end");
    count_log(log_at_restart, -1, &c);
    for (int i = 0; i < REPLICAS; i++)
        cr_assert_gt(c.answered[i], 0, "replica %d answered nothing after the restart", i);

    /* At the end: the counts, every ask and every cell equal PostgreSQL. */
    int g = atomic_load(&R.gen);
    check_through_nginx(g, "at the end");
    taxi_check(&R.db, "at the end");
    long asked = atomic_load(&R.asked);
    cr_assert_gt(atomic_load(&R.in_kill), 20, "too few asks while the replica was down");

    fprintf(stderr,
            "nginx_replicas: %ld asks through nginx, none failed or wrong (%ld while a replica "
            "was down; %ld answered during a change with the new state); while down: %ld "
            "requests logged, %ld retried on another replica after trying the dead one (%ld "
            "of them in flight on it when it was killed), "
            "answered by replicas 0 and 2: %ld, %ld; after the restart the replica answered "
            "again within %.1f s; after it: %ld, %ld, %ld; %.1f s in all\n",
            asked, asked_down, atomic_load(&R.deferred_ok), down.lines, down.dead_tried,
            down.dead_in_flight,
            down.answered[0], down.answered[2], back, c.answered[0], c.answered[1],
            c.answered[2], now_s() - began);

    nginx_stop();
    for (int i = 0; i < REPLICAS; i++)
        serve_stop(i);
    taxi_ingest_stop(&R.db);
    taxi_db_destroy(&R.db);
    R.db_made = false;
    for (int g2 = 0; g2 < GENS; g2++)
        for (int i = 0; i < TAXI_NASKS; i++)
            if (R.want[g2][i].rows || R.want[g2][i].columns)
                answer_free(&R.want[g2][i]);
    for (int i = 0; i < TAXI_NASKS; i++)
        cJSON_free(R.bodies[i]);
    nftw(R.dir, rm_entry, 8, FTW_DEPTH | FTW_PHYS);
}
