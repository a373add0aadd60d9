/* test_serve_readonly.c -- straum-serve opens the store read-only and never
 * writes to it.
 *
 * The straum-serve program serves a fixture store through a few hundred
 * asks, good and bad, and the other routes. While it runs, the kernel says
 * how it holds data.mdb: every descriptor open for reading only
 * (/proc/PID/fdinfo) and every mapping without write permission
 * (/proc/PID/maps). After it stops, data.mdb has the same bytes and the
 * same modification time. And it serves a data.mdb it has no permission to
 * write (mode 0444, and as an unprivileged user when the test runs as root).
 *
 * What serve does write is LMDB's lock file: a reader takes a slot in
 * lock.mdb's reader table, so that the writer does not reuse pages a reader
 * still sees. lock.mdb must be writable by serve's user, and is the only
 * file of the store serve opens for writing; the test checks that too. */
#include "tests/serve/serve_test.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static char the_store[64];

static void setup(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    int64_t now = (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
    struct store_position pos = {.lsn = 7, .commit_time = now, .contact_time = now};
    fixture_make_store(the_store, &pos);
}

static void teardown(void) { fixture_remove_store(the_store); }

TestSuite(serve_readonly, .init = setup, .fini = teardown, .timeout = 120);

/* Starts straum-serve on the store and a free port, as uid (when >= 0: the
 * child drops to it before exec); waits until it listens. */
static pid_t serve_spawn(int port, int uid)
{
    char listen[64];
    snprintf(listen, sizeof listen, "127.0.0.1:%d", port);
    pid_t pid = fork();
    cr_assert_geq(pid, 0);
    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (uid >= 0 && (setgroups(0, NULL) || setgid((gid_t)uid) || setuid((uid_t)uid)))
            _exit(126);
        int null = open("/dev/null", O_WRONLY);
        dup2(null, 2);
        execl(STRAUM_SERVE_BIN, STRAUM_SERVE_BIN, "--store", the_store, "--listen", listen,
              "--threads", "2", "--max-lag", "0", (char *)NULL);
        _exit(127);
    }
    for (int i = 0; i < 250; i++) {
        bool up = hc_listening(port);
        if (up)
            return pid;
        int status;
        cr_assert_eq(waitpid(pid, &status, WNOHANG), 0, "straum-serve exited (status %d)",
                     status);
        usleep(20000);
    }
    cr_assert_fail("straum-serve on port %d did not come up", port);
    return pid;
}

static void serve_stop(pid_t pid)
{
    int status;
    kill(pid, SIGTERM);
    waitpid(pid, &status, 0);
    cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "straum-serve stops cleanly (%d)",
              status);
}

/* A few hundred requests over one kept-alive connection: asks of both
 * views, bad asks, and every other route. */
static void serve_requests(int port)
{
    static const char *const asks[] = {
        "{\"ask\": \"SELECT trips FROM trips WHERE bucket >= $1 AND bucket < $2\","
        " \"params\": [\"2024-01-01\", \"2024-02-01\"]}",
        "{\"ask\": \"SELECT borough, trips, median_fare FROM trips WHERE bucket >= $1 AND "
        "bucket < $2 GROUP BY borough\", \"params\": [\"2024-01-01\", \"2024-02-01\"]}",
        "{\"ask\": \"SELECT borough, trips, tips FROM dropoffs WHERE bucket >= $1 AND "
        "bucket < $2 GROUP BY borough\", \"params\": [\"2024-01-01\", \"2024-01-08\"]}",
        "{\"ask\": \"SELECT trips FROM nowhere\"}",
        "{\"ask\": \"SELECT trips FROM trips WHERE\"}",
    };
    static const char *const gets[] = {"/views", "/healthz", "/readyz", "/metrics"};
    int fd = hc_connect(port);
    for (int i = 0; i < 300; i++) {
        struct hc_response r;
        if (i % 6 < 5) {
            const char *body = asks[i % 6];
            hc_request(fd, "POST", "/ask", "Content-Type: application/json\r\n", body,
                       strlen(body), &r);
            cr_assert(r.status == (i % 6 < 3 ? 200 : i % 6 == 3 ? 404 : 400), "ask %d: %d %s",
                      i % 6, r.status, r.body ? r.body : "");
        } else {
            hc_request(fd, "GET", gets[(i / 6) % 4], NULL, NULL, 0, &r);
            cr_assert_eq(r.status, 200, "%s: %d", gets[(i / 6) % 4], r.status);
        }
        hc_free(&r);
    }
    close(fd);
}

struct file_state {
    struct stat st;
    char *bytes;
};

static void file_state(const char *path, struct file_state *out)
{
    cr_assert_eq(stat(path, &out->st), 0, "%s: %s", path, strerror(errno));
    FILE *f = fopen(path, "rb");
    cr_assert_not_null(f);
    out->bytes = malloc((size_t)out->st.st_size + 1);
    cr_assert_eq(fread(out->bytes, 1, (size_t)out->st.st_size, f), (size_t)out->st.st_size);
    fclose(f);
}

static void expect_unchanged(const char *path, const struct file_state *before)
{
    struct file_state now;
    file_state(path, &now);
    cr_assert_eq(now.st.st_size, before->st.st_size, "%s changed size", path);
    cr_assert(now.st.st_mtim.tv_sec == before->st.st_mtim.tv_sec &&
                  now.st.st_mtim.tv_nsec == before->st.st_mtim.tv_nsec,
              "%s was modified while serving", path);
    cr_assert(memcmp(now.bytes, before->bytes, (size_t)now.st.st_size) == 0,
              "%s changed bytes while serving", path);
    free(now.bytes);
}

/* Every descriptor and mapping of pid on a file of the store: data.mdb's
 * are read-only; the only one opened for writing is lock.mdb. Returns how
 * many descriptors of data.mdb it found. */
static int check_process_holds_read_only(pid_t pid)
{
    char store[PATH_MAX], data[PATH_MAX + 16], lock[PATH_MAX + 16];
    cr_assert_not_null(realpath(the_store, store));
    snprintf(data, sizeof data, "%s/data.mdb", store);
    snprintf(lock, sizeof lock, "%s/lock.mdb", store);
    int data_fds = 0;
    for (int fd = 0; fd < 4096; fd++) {
        char link[64], target[PATH_MAX];
        snprintf(link, sizeof link, "/proc/%d/fd/%d", (int)pid, fd);
        ssize_t n = readlink(link, target, sizeof target - 1);
        if (n <= 0)
            continue;
        target[n] = '\0';
        if (strncmp(target, store, strlen(store)) != 0)
            continue;
        char info[64], line[256];
        snprintf(info, sizeof info, "/proc/%d/fdinfo/%d", (int)pid, fd);
        FILE *f = fopen(info, "r");
        cr_assert_not_null(f, "%s", info);
        unsigned long flags = ~0ul;
        while (fgets(line, sizeof line, f))
            if (sscanf(line, "flags: %lo", &flags) == 1)
                break;
        fclose(f);
        cr_assert_neq(flags, ~0ul, "no flags in %s", info);
        if (strcmp(target, data) == 0) {
            data_fds++;
            cr_assert_eq(flags & O_ACCMODE, (unsigned long)O_RDONLY,
                         "straum-serve holds data.mdb open for writing (flags 0%lo)", flags);
        } else {
            cr_assert_str_eq(target, lock, "straum-serve opened %s of the store", target);
        }
    }
    char maps[64], line[PATH_MAX + 256];
    snprintf(maps, sizeof maps, "/proc/%d/maps", (int)pid);
    FILE *f = fopen(maps, "r");
    cr_assert_not_null(f);
    int data_maps = 0;
    while (fgets(line, sizeof line, f)) {
        line[strcspn(line, "\n")] = '\0';
        const char *path = strchr(line, '/');
        if (!path || strcmp(path, data) != 0)
            continue;
        char perms[8] = "";
        sscanf(line, "%*s %7s", perms);
        data_maps++;
        cr_assert(perms[1] != 'w', "data.mdb is mapped writable: %s", line);
    }
    fclose(f);
    cr_assert_gt(data_maps, 0, "data.mdb is mapped (zero-copy reads)");
    return data_fds;
}

Test(serve_readonly, serving_never_writes_data_mdb)
{
    char data[128];
    snprintf(data, sizeof data, "%s/data.mdb", the_store);
    struct file_state before;
    file_state(data, &before);
    sleep(1); /* a write now would show in the mtime even on a coarse clock */
    int port = hc_free_port();
    pid_t pid = serve_spawn(port, -1);
    serve_requests(port);
    cr_assert_gt(check_process_holds_read_only(pid), 0, "data.mdb is open");
    serve_requests(port);
    serve_stop(pid);
    expect_unchanged(data, &before);
    free(before.bytes);
}

Test(serve_readonly, serves_a_data_file_it_may_not_write)
{
    /* data.mdb read-only to everyone; lock.mdb writable, as LMDB's readers
     * need. Root writes whatever the mode says, so as root serve runs as
     * an unprivileged user, and the store's directory must let it in. */
    char data[128], lock[128];
    snprintf(data, sizeof data, "%s/data.mdb", the_store);
    snprintf(lock, sizeof lock, "%s/lock.mdb", the_store);
    cr_assert_eq(chmod(data, 0444), 0);
    cr_assert_eq(chmod(lock, 0666), 0);
    cr_assert_eq(chmod(the_store, 0755), 0);
    int uid = -1;
    if (geteuid() == 0) {
        struct passwd *pw = getpwnam("nobody");
        uid = pw ? (int)pw->pw_uid : 65534;
    }
    struct file_state before;
    file_state(data, &before);
    int port = hc_free_port();
    pid_t pid = serve_spawn(port, uid);
    serve_requests(port);
    check_process_holds_read_only(pid);
    serve_stop(pid);
    expect_unchanged(data, &before);
    free(before.bytes);
    chmod(data, 0644);
}
