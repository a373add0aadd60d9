/* powercut_shim.c -- an LD_PRELOAD library that keeps, beside a store's
 * data.mdb, the file as a power cut would leave it: data.mdb.synced holds
 * every write to data.mdb that a sync made durable, and none that was not.
 *
 * A kill -9 keeps the page cache, so it shows only that a store survives
 * its process dying; a power cut loses every write since the last
 * fsync/fdatasync. LMDB (without MDB_WRITEMAP or MDB_NOSYNC, as store/env.c
 * opens it) writes a commit's pages with pwrite/writev on one descriptor,
 * fdatasyncs it, then writes the meta page through a second descriptor
 * opened O_DSYNC (durable at once). So the shim tracks the descriptors of
 * files named data.mdb opened for writing: a write through an O_DSYNC or
 * O_SYNC one goes to the shadow file at once; any other waits in a list,
 * in order, until an fsync or fdatasync of the file applies the list to the
 * shadow. Killing the process at any moment then leaves in data.mdb.synced
 * the file as of its last sync: tests/e2e/test_ingest_powercut.c puts it in
 * data.mdb's place and reopens the store.
 *
 * Only with STRAUM_POWERCUT=1 in the environment; lock.mdb is left alone
 * (LMDB rebuilds its reader table when the first process opens a store no
 * process holds, as after a reboot). Writes through a writable map, and
 * msync, are not modelled: without MDB_WRITEMAP LMDB maps data.mdb
 * read-only and writes only with pwrite/writev. Should the store ever open
 * with MDB_WRITEMAP, its commits would never reach the shadow: the test
 * asserts that some cuts bring back a store past where ingest started, and
 * a cut after ingest confirmed a position to PostgreSQL would bring back a
 * store behind its slot, which the restart refuses. A failure to keep the
 * shadow aborts the process, so a test cannot pass on a shadow it lost. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

enum { MAX_FDS = 1024 };

struct pending_write {
    off_t offset;
    size_t len;
    struct pending_write *next;
    unsigned char bytes[];
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static signed char tracked[MAX_FDS]; /* 0 no, 1 buffered, 2 synchronous */
static int shadow_fd = -1;
static char unsynced_marker[4096 + 16]; /* data.mdb.unsynced: see sync_with */
static struct pending_write *head, **tail = &head;

static int (*real_open)(const char *, int, ...);
static ssize_t (*real_pwrite)(int, const void *, size_t, off_t);
static ssize_t (*real_write)(int, const void *, size_t);
static ssize_t (*real_writev)(int, const struct iovec *, int);
static int (*real_fsync)(int);
static int (*real_fdatasync)(int);
static int (*real_close)(int);

static void die(const char *what)
{
    fprintf(stderr, "powercut_shim: %s: %s\n", what, strerror(errno));
    abort();
}

static void resolve(void)
{
    if (real_open)
        return;
    real_pwrite = dlsym(RTLD_NEXT, "pwrite");
    real_write = dlsym(RTLD_NEXT, "write");
    real_writev = dlsym(RTLD_NEXT, "writev");
    real_fsync = dlsym(RTLD_NEXT, "fsync");
    real_fdatasync = dlsym(RTLD_NEXT, "fdatasync");
    real_close = dlsym(RTLD_NEXT, "close");
    real_open = dlsym(RTLD_NEXT, "open");
}

static bool enabled(void)
{
    const char *e = getenv("STRAUM_POWERCUT");
    return e && strcmp(e, "1") == 0;
}

static bool is_data_file(const char *path)
{
    const char *base = strrchr(path, '/');
    return strcmp(base ? base + 1 : path, "data.mdb") == 0;
}

/* The shadow starts as a copy of data.mdb as this process first finds it:
 * everything before was synced by the process that wrote it (it closed the
 * store, or the test made it so). The copy is made under another name and
 * renamed into place whole, so that a kill in the middle of it leaves no
 * shadow (the test then keeps data.mdb, which nothing has written yet) and
 * never a shadow cut short: a truncated copy put in data.mdb's place is a
 * store no power cut makes. */
static void open_shadow(const char *path)
{
    char shadow[4096], partial[4096 + 8];
    snprintf(shadow, sizeof shadow, "%s.synced", path);
    snprintf(partial, sizeof partial, "%s.partial", shadow);
    int to = real_open(partial, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (to < 0)
        die("creating the shadow file");
    int from = real_open(path, O_RDONLY | O_CLOEXEC);
    if (from >= 0) { /* else a new store: nothing yet */
        unsigned char buf[1 << 16];
        ssize_t n;
        off_t at = 0;
        while ((n = read(from, buf, sizeof buf)) > 0) {
            if (real_pwrite(to, buf, (size_t)n, at) != n)
                die("copying data.mdb to the shadow");
            at += n;
        }
        if (n < 0)
            die("reading data.mdb");
        real_close(from);
    }
    if (rename(partial, shadow) != 0)
        die("renaming the shadow into place");
    shadow_fd = to;
    snprintf(unsynced_marker, sizeof unsynced_marker, "%s.unsynced", path);
}

static void shadow_write(const void *bytes, size_t len, off_t offset)
{
    if (real_pwrite(shadow_fd, bytes, len, offset) != (ssize_t)len)
        die("writing the shadow");
}

/* Records a write that reached data.mdb: durable now, or at the next sync. */
static void record(int fd, const void *bytes, size_t len, off_t offset)
{
    if (tracked[fd] == 2) {
        shadow_write(bytes, len, offset);
        return;
    }
    struct pending_write *w = malloc(sizeof *w + len);
    if (!w)
        die("out of memory");
    w->offset = offset;
    w->len = len;
    w->next = NULL;
    memcpy(w->bytes, bytes, len);
    *tail = w;
    tail = &w->next;
}

static void apply_pending(void)
{
    while (head) {
        struct pending_write *w = head;
        shadow_write(w->bytes, w->len, w->offset);
        head = w->next;
        free(w);
    }
    tail = &head;
}

static bool is_tracked(int fd) { return fd >= 0 && fd < MAX_FDS && tracked[fd]; }

int open(const char *path, int flags, ...)
{
    resolve();
    mode_t mode = 0;
    if (flags & (O_CREAT | O_TMPFILE)) {
        va_list ap;
        va_start(ap, flags);
        mode = va_arg(ap, mode_t);
        va_end(ap);
    }
    bool track = enabled() && (flags & O_ACCMODE) != O_RDONLY && is_data_file(path);
    if (track) {
        pthread_mutex_lock(&lock);
        if (shadow_fd < 0)
            open_shadow(path);
    }
    int fd = real_open(path, flags, mode);
    if (track) {
        if (fd >= 0 && fd < MAX_FDS)
            tracked[fd] = (flags & (O_DSYNC | O_SYNC)) ? 2 : 1;
        else if (fd >= MAX_FDS)
            die("a descriptor past the shim's table");
        pthread_mutex_unlock(&lock);
    }
    return fd;
}

int open64(const char *path, int flags, ...) __attribute__((alias("open")));

ssize_t pwrite(int fd, const void *buf, size_t len, off_t offset)
{
    resolve();
    if (!is_tracked(fd))
        return real_pwrite(fd, buf, len, offset);
    pthread_mutex_lock(&lock);
    ssize_t n = real_pwrite(fd, buf, len, offset);
    if (n > 0)
        record(fd, buf, (size_t)n, offset);
    pthread_mutex_unlock(&lock);
    return n;
}

ssize_t pwrite64(int fd, const void *buf, size_t len, off_t offset)
    __attribute__((alias("pwrite")));

ssize_t write(int fd, const void *buf, size_t len)
{
    resolve();
    if (!is_tracked(fd))
        return real_write(fd, buf, len);
    pthread_mutex_lock(&lock);
    off_t at = lseek(fd, 0, SEEK_CUR);
    ssize_t n = real_write(fd, buf, len);
    if (n > 0)
        record(fd, buf, (size_t)n, at);
    pthread_mutex_unlock(&lock);
    return n;
}

ssize_t writev(int fd, const struct iovec *iov, int iovcnt)
{
    resolve();
    if (!is_tracked(fd))
        return real_writev(fd, iov, iovcnt);
    pthread_mutex_lock(&lock);
    off_t at = lseek(fd, 0, SEEK_CUR);
    ssize_t n = real_writev(fd, iov, iovcnt);
    for (ssize_t left = n, i = 0; left > 0 && i < iovcnt; i++) {
        size_t part = iov[i].iov_len < (size_t)left ? iov[i].iov_len : (size_t)left;
        record(fd, iov[i].iov_base, part, at);
        at += (off_t)part;
        left -= (ssize_t)part;
    }
    pthread_mutex_unlock(&lock);
    return n;
}

/* A sync of data.mdb. With STRAUM_POWERCUT_HOLD_US=N, a sync that finds
 * writes not yet durable first creates data.mdb.unsynced and holds for N
 * microseconds, as a slow disk's flush would: a test waiting for that file
 * cuts while the page cache holds writes a power cut loses, instead of
 * hoping a random moment falls into a sync's short window. */
static int sync_with(int (*real)(int), int fd)
{
    resolve();
    if (!is_tracked(fd))
        return real(fd);
    pthread_mutex_lock(&lock);
    const char *hold = getenv("STRAUM_POWERCUT_HOLD_US");
    bool held = hold && head && unsynced_marker[0];
    if (held) {
        int m = real_open(unsynced_marker, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
        if (m < 0)
            die("creating the unsynced marker");
        real_close(m);
        usleep((useconds_t)strtoul(hold, NULL, 10));
    }
    int rc = real(fd);
    if (rc == 0)
        apply_pending(); /* the file's writes so far are durable */
    if (held)
        unlink(unsynced_marker);
    pthread_mutex_unlock(&lock);
    return rc;
}

int fsync(int fd) { return sync_with(real_fsync, fd); }
int fdatasync(int fd) { return sync_with(real_fdatasync, fd); }

int close(int fd)
{
    resolve();
    if (is_tracked(fd)) {
        pthread_mutex_lock(&lock);
        tracked[fd] = 0;
        pthread_mutex_unlock(&lock);
    }
    return real_close(fd);
}
