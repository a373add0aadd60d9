/* test_serve_cli.c -- the straum-serve program: its options and refusals,
 * the log line when listening, SIGTERM finishing a request in flight and
 * exiting 0, and several processes sharing a port with --reuse-port. */
#include "tests/serve/serve_test.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static char the_store[64];

static int64_t wall_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static void setup(void)
{
    struct store_position pos = {.lsn = 7, .commit_time = wall_us(), .contact_time = wall_us()};
    fixture_make_store(the_store, &pos);
}

static void teardown(void) { fixture_remove_store(the_store); }

TestSuite(serve_cli, .init = setup, .fini = teardown, .timeout = 120);

struct proc {
    pid_t pid;
    int out;           /* stdout and stderr, merged */
    char log[16384];
    size_t len;
    int status;        /* exit status once reaped, -1 before */
};

static void spawn(struct proc *p, const char *const *args)
{
    const char *argv[32] = {STRAUM_SERVE_BIN};
    int n = 1;
    for (; args[n - 1]; n++)
        argv[n] = args[n - 1];
    argv[n] = NULL;
    int fds[2];
    cr_assert_eq(pipe2(fds, O_CLOEXEC), 0);
    memset(p, 0, sizeof *p);
    p->status = -1;
    p->pid = fork();
    cr_assert_geq(p->pid, 0);
    if (p->pid == 0) {
        dup2(fds[1], 1);
        dup2(fds[1], 2);
        execv(STRAUM_SERVE_BIN, (char *const *)argv);
        _exit(127);
    }
    close(fds[1]);
    p->out = fds[0];
}

/* Reads output for up to ms; true when it read something. */
static bool pump(struct proc *p, int ms)
{
    struct pollfd pfd = {.fd = p->out, .events = POLLIN};
    if (poll(&pfd, 1, ms) <= 0)
        return false;
    ssize_t n = read(p->out, p->log + p->len, sizeof p->log - 1 - p->len);
    if (n <= 0)
        return false;
    p->len += (size_t)n;
    p->log[p->len] = '\0';
    return true;
}

/* Reads output until it holds text, for up to ms; whether it does. */
static bool wait_log(struct proc *p, const char *text, int ms)
{
    for (int waited = 0; !strstr(p->log, text) && waited < ms; waited += 20)
        pump(p, 20);
    return strstr(p->log, text) != NULL;
}

/* The port from the "listening" line, or -1 if the process ends first. */
static int listening_port(struct proc *p)
{
    for (int i = 0; i < 200; i++) {
        const char *l = strstr(p->log, "msg=\"straum-serve listening\"");
        const char *nl = l ? strchr(l, '\n') : NULL;
        if (l && nl) {
            const char *addr = strstr(l, " addr=");
            cr_assert(addr && addr < nl, "%s", p->log);
            const char *end = strchr(addr + 1, ' ');
            if (!end || end > nl)
                end = nl;
            const char *c = end;
            while (c > addr && *c != ':')
                c--;
            return atoi(c + 1);
        }
        if (!pump(p, 50)) {
            int st;
            if (waitpid(p->pid, &st, WNOHANG) == p->pid) {
                while (pump(p, 10))
                    ;
                p->status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
                return -1;
            }
        }
    }
    cr_assert_fail("no listening line in 10 s:\n%s", p->log);
    return -1;
}

/* Sends sig (0: none) and waits for the exit status. */
static int finish(struct proc *p, int sig)
{
    if (p->status >= 0)
        return p->status;
    if (sig)
        kill(p->pid, sig);
    int st;
    for (int i = 0; i < 400; i++) {
        while (pump(p, 0))
            ;
        if (waitpid(p->pid, &st, WNOHANG) == p->pid) {
            while (pump(p, 10))
                ;
            close(p->out);
            p->status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
            return p->status;
        }
        usleep(50000);
    }
    kill(p->pid, SIGKILL);
    waitpid(p->pid, &st, 0);
    cr_assert_fail("straum-serve did not exit in 20 s:\n%s", p->log);
    return -1;
}

static int run(const char *const *args, struct proc *p)
{
    spawn(p, args);
    return finish(p, 0);
}

Test(serve_cli, usage_and_bad_options)
{
    struct proc p;
    cr_assert_eq(run((const char *[]){"--help", NULL}, &p), 0);
    cr_assert(strstr(p.log, "--store DIR") && strstr(p.log, "--reuse-port"), "%s", p.log);
    cr_assert_eq(run((const char *[]){"--version", NULL}, &p), 0);
    cr_assert(strstr(p.log, "straum-serve"), "%s", p.log);
    cr_assert_eq(run((const char *[]){"--listen", "127.0.0.1:0", NULL}, &p), 2);
    cr_assert(strstr(p.log, "--store"), "%s", p.log);
    cr_assert_eq(run((const char *[]){"--store", the_store, "--bogus", "1", NULL}, &p), 2);
    cr_assert(strstr(p.log, "--bogus"), "%s", p.log);
    cr_assert_eq(run((const char *[]){"--store", the_store, "--threads", "zero", NULL}, &p), 2);
    cr_assert_eq(run((const char *[]){"--store", the_store, "--max-lag", "soon", NULL}, &p), 2);
    cr_assert_eq(run((const char *[]){"--store", the_store, "--max-body", "-1", NULL}, &p), 2);
    cr_assert_eq(run((const char *[]){"--store", the_store, "--max-groups", NULL}, &p), 2);
    cr_assert_eq(run((const char *[]){"--store", the_store, "--listen", "nohost", NULL}, &p), 2);
}

Test(serve_cli, refuses_public_address_without_token)
{
    struct proc p;
    cr_assert_eq(run((const char *[]){"--store", the_store, "--listen", "0.0.0.0:0", NULL}, &p),
                 2, "%s", p.log);
    cr_assert(strstr(p.log, "refusing to listen on 0.0.0.0:0") && strstr(p.log, "--token-file") &&
                  strstr(p.log, "--public"),
              "%s", p.log);

    /* --public says "I mean it"; a token makes it safe. */
    spawn(&p, (const char *[]){"--store", the_store, "--listen", "0.0.0.0:0", "--public",
                               "--threads", "1", NULL});
    cr_assert_gt(listening_port(&p), 0, "%s", p.log);
    cr_assert_eq(finish(&p, SIGTERM), 0, "%s", p.log);

    char token[] = "/tmp/straum-token-XXXXXX";
    int fd = mkstemp(token);
    cr_assert_eq(write(fd, "tok\n", 4), 4);
    close(fd);
    spawn(&p, (const char *[]){"--store", the_store, "--listen", "0.0.0.0:0", "--token-file",
                               token, "--threads", "1", NULL});
    int port = listening_port(&p);
    cr_assert_gt(port, 0, "%s", p.log);
    struct hc_response r;
    hc_once(port, "GET", "/views", NULL, NULL, &r);
    cr_assert_eq(r.status, 401);
    hc_free(&r);
    hc_once(port, "GET", "/views", "Authorization: Bearer tok\r\n", NULL, &r);
    cr_assert_eq(r.status, 200);
    hc_free(&r);
    cr_assert_eq(finish(&p, SIGINT), 0, "%s", p.log);
    unlink(token);

    /* An empty token file is refused at start. */
    strcpy(token, "/tmp/straum-token-XXXXXX");
    fd = mkstemp(token);
    cr_assert_eq(write(fd, " \n", 2), 2);
    close(fd);
    cr_assert_eq(run((const char *[]){"--store", the_store, "--listen", "127.0.0.1:0",
                                      "--token-file", token, NULL}, &p), 1, "%s", p.log);
    cr_assert(strstr(p.log, "empty"), "%s", p.log);
    unlink(token);
}

Test(serve_cli, missing_store_is_refused_before_binding)
{
    struct proc p;
    cr_assert_eq(run((const char *[]){"--store", "/nonexistent/straum", "--listen",
                                      "127.0.0.1:0", NULL}, &p), 1);
    cr_assert(strstr(p.log, "level=error") && strstr(p.log, "/nonexistent/straum"), "%s", p.log);
    cr_assert_null(strstr(p.log, "listening"), "%s", p.log);
}

Test(serve_cli, logs_serves_and_stops_on_sigterm)
{
    struct proc p;
    spawn(&p, (const char *[]){"--store", the_store, "--listen", ":0", "--threads", "2",
                               "--max-lag", "1m", NULL});
    int port = listening_port(&p);
    cr_assert_gt(port, 0, "%s", p.log);
    cr_assert(strncmp(p.log, "ts=", 3) == 0 && strstr(p.log, " level=info msg=\"") &&
                  strstr(p.log, "addr=127.0.0.1:"),
              "%s", p.log);
    struct hc_response r;
    hc_once(port, "GET", "/readyz", NULL, NULL, &r);
    cr_assert_eq(r.status, 200, "%s", r.body);
    hc_free(&r);

    /* A request in flight when SIGTERM arrives is finished. */
    const char *ask = "{\"ask\": \"SELECT trips FROM trips WHERE bucket >= $1 AND bucket < $2\", "
                      "\"params\": [\"2024-01-01 00:00:00+00\", \"2024-01-08 00:00:00+00\"]}";
    int fd = hc_connect(port);
    char head[200];
    snprintf(head, sizeof head, "POST /ask HTTP/1.1\r\nHost: x\r\nContent-Length: %zu\r\n"
             "Expect: 100-continue\r\n\r\n", strlen(ask));
    hc_send(fd, head, strlen(head));
    /* 100 Continue: the server has the request's headers and holds it in
     * flight (each wait below is for a condition, bounded). */
    char cont[64] = "";
    size_t got = 0;
    struct pollfd pfd = {.fd = fd, .events = POLLIN};
    while (!strstr(cont, "\r\n\r\n") && got < sizeof cont - 1 && poll(&pfd, 1, 10000) > 0) {
        ssize_t n = recv(fd, cont + got, sizeof cont - 1 - got, 0);
        if (n <= 0)
            break;
        got += (size_t)n;
        cont[got] = '\0';
    }
    cr_assert(strncmp(cont, "HTTP/1.1 100", 12) == 0, "no 100 Continue: %s", cont);
    hc_send(fd, ask, 10);
    kill(p.pid, SIGTERM);
    /* At least this request: an earlier connection (the /readyz one) may
     * not be seen closed yet. */
    const char *stopping = "msg=\"stopping: finishing requests in flight\" inflight=";
    cr_assert(wait_log(&p, stopping, 10000), "%s", p.log);
    cr_assert_geq(atoi(strstr(p.log, stopping) + strlen(stopping)), 1, "%s", p.log);
    hc_send(fd, ask + 10, strlen(ask) - 10);
    hc_read(fd, &r, 5000);
    cr_assert_eq(r.status, 200, "%d %s\n%s", r.status, r.body, p.log);
    char want[64];
    snprintf(want, sizeof want, "[[%d]]", FIXTURE_TRIPS);
    cr_assert(strstr(r.body, want), "%s", r.body);
    hc_free(&r);
    close(fd);
    cr_assert_eq(finish(&p, 0), 0, "%s", p.log);
    cr_assert(strstr(p.log, "straum-serve stopped"), "%s", p.log);
}

/* --threads 1 starts as quietly as any other count: libmicrohttpd warns
 * when given a pool size of 0 or 1, so none is given. */
Test(serve_cli, one_thread_starts_without_a_warning)
{
    struct proc p;
    spawn(&p, (const char *[]){"--store", the_store, "--listen", ":0", "--threads", "1",
                               "--max-lag", "1m", NULL});
    cr_assert_gt(listening_port(&p), 0, "%s", p.log);
    cr_assert_null(strstr(p.log, "level=warn"), "%s", p.log);
    cr_assert_eq(finish(&p, SIGTERM), 0, "%s", p.log);
}

/* --log-level: debug adds a line per request (path, status; for asks view
 * and dur_us); warn drops the info lines. */
Test(serve_cli, log_levels)
{
    struct proc p;
    spawn(&p, (const char *[]){"--store", the_store, "--listen", ":0", "--threads", "1",
                               "--log-level", "debug", NULL});
    int port = listening_port(&p);
    cr_assert_gt(port, 0, "%s", p.log);
    struct hc_response r;
    hc_once(port, "GET", "/healthz", NULL, NULL, &r);
    hc_free(&r);
    const char *ask = "{\"ask\": \"SELECT trips FROM trips WHERE bucket >= $1 AND bucket < $2\", "
                      "\"params\": [\"2024-01-01 00:00:00+00\", \"2024-01-08 00:00:00+00\"]}";
    hc_once(port, "POST", "/ask", NULL, ask, &r);
    cr_assert_eq(r.status, 200, "%s", r.body);
    hc_free(&r);
    cr_assert_eq(finish(&p, SIGTERM), 0, "%s", p.log);
    cr_assert(strstr(p.log, " level=debug msg=\"request\" path=/healthz status=200\n"), "%s",
              p.log);
    cr_assert(strstr(p.log, " level=debug msg=\"ask\" path=/ask view=trips status=200 dur_us="),
              "%s", p.log);

    /* Quiet at warn: no listening line to wait for, so a port of our own,
     * polled until it accepts. */
    int quiet_port = hc_free_port();
    char where[32];
    snprintf(where, sizeof where, "127.0.0.1:%d", quiet_port);
    spawn(&p, (const char *[]){"--store", the_store, "--listen", where, "--threads", "1",
                               "--log-level", "warn", NULL});
    for (int waited = 0; !hc_listening(quiet_port) && waited < 10000; waited += 20)
        pump(&p, 20);
    cr_assert(hc_listening(quiet_port), "not listening on %s in 10 s:\n%s", where, p.log);
    cr_assert_eq(finish(&p, SIGTERM), 0, "%s", p.log);
    cr_assert_null(strstr(p.log, "level=info"), "%s", p.log);
    cr_assert_null(strstr(p.log, "level=debug"), "%s", p.log);

    cr_assert_eq(run((const char *[]){"--store", the_store, "--log-level", "loud", NULL}, &p), 2,
                 "%s", p.log);
    cr_assert(strstr(p.log, "--log-level"), "%s", p.log);
}

Test(serve_cli, reuse_port_shares_one_port)
{
    struct proc a, b;
    spawn(&a, (const char *[]){"--store", the_store, "--listen", "127.0.0.1:0", "--reuse-port",
                               "--threads", "1", NULL});
    int port = listening_port(&a);
    cr_assert_gt(port, 0, "%s", a.log);
    char where[32];
    snprintf(where, sizeof where, "127.0.0.1:%d", port);

    /* Without --reuse-port the port is taken. */
    struct proc c;
    cr_assert_eq(run((const char *[]){"--store", the_store, "--listen", where, NULL}, &c), 1,
                 "%s", c.log);
    cr_assert(strstr(c.log, "--reuse-port"), "%s", c.log);

    spawn(&b, (const char *[]){"--store", the_store, "--listen", where, "--reuse-port",
                               "--threads", "1", NULL});
    cr_assert_eq(listening_port(&b), port, "%s", b.log);
    for (int i = 0; i < 20; i++) {
        struct hc_response r;
        hc_once(port, "GET", "/healthz", NULL, NULL, &r);
        cr_assert_eq(r.status, 200);
        hc_free(&r);
    }
    /* The first stops; the second still answers on the same port. */
    cr_assert_eq(finish(&a, SIGTERM), 0, "%s", a.log);
    for (int i = 0; i < 20; i++) {
        struct hc_response r;
        hc_once(port, "GET", "/healthz", NULL, NULL, &r);
        cr_assert_eq(r.status, 200);
        hc_free(&r);
    }
    cr_assert_eq(finish(&b, SIGTERM), 0, "%s", b.log);
}
