/* space.c -- a store that cannot grow: data.mdb at its size limit
 * (store_set_max_size, STRAUM_STORE_MAX_MAP_MB) or a filesystem out of
 * space. Both are told apart from other write failures (err->kind) so that
 * a writer can wait for room instead of giving up, and both say which store,
 * how big it is and what is free: the operator's next step depends on it.
 *
 * Neither ever leaves half a transaction: LMDB writes a commit's pages
 * first and its meta page last, so a write that fails on the way aborts
 * the transaction and the store stays at its last commit. */
#include "store/internal.h"

#include <errno.h>
#include <stdio.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statvfs.h>

/* Below this much free space an EIO from a commit is taken for a full
 * filesystem: LMDB reports a short write (the disk filled in the middle of
 * one) as EIO rather than ENOSPC. */
#define LOW_SPACE_BYTES ((uint64_t)4 << 20)

static double mib(uint64_t bytes) { return (double)bytes / 1048576.0; }

/* The size of data.mdb as ls shows it; 0 when it cannot be read. */
static uint64_t file_bytes(const struct store *s)
{
    char path[4200];
    struct stat st;
    snprintf(path, sizeof path, "%s/data.mdb", s->dir);
    return stat(path, &st) == 0 ? (uint64_t)st.st_size : 0;
}

int store_limit_error(struct store *s, struct store_error *err)
{
    store_fail(err, "the store at %s is full: data.mdb reached its size limit of %.0f MiB "
                    "(the file is %.1f MiB)",
               s->dir, mib(s->max_map_size), mib(file_bytes(s)));
    err->kind = STORE_ERR_LIMIT;
    return -1;
}

/* A short write (EIO from LMDB) that stopped at the process's file size
 * limit (ulimit -f) rather than at a full disk. */
static bool at_file_size_limit(const struct store *s)
{
    struct rlimit rl;
    return getrlimit(RLIMIT_FSIZE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY &&
           file_bytes(s) + 65536 >= (uint64_t)rl.rlim_cur;
}

int store_write_error(struct store *s, struct store_error *err, int rc, const char *doing)
{
    struct statvfs vfs;
    bool known = statvfs(s->dir, &vfs) == 0;
    uint64_t avail = known ? (uint64_t)vfs.f_bavail * vfs.f_frsize : 0;
    if (rc == EIO && at_file_size_limit(s))
        rc = EFBIG;
    if (rc == ENOSPC || rc == EDQUOT || rc == EFBIG || (rc == EIO && known && avail < LOW_SPACE_BYTES)) {
        store_fail(err, "cannot write to the store at %s (%s): %s%s; its filesystem has %.1f MiB "
                        "free and data.mdb is %.1f MiB",
                   s->dir, doing, mdb_strerror(rc == EIO ? ENOSPC : rc),
                   rc == EIO     ? " (a write cut short)"
                   : rc == EFBIG ? " (a file size limit: ulimit -f)"
                                 : "",
                   mib(avail), mib(file_bytes(s)));
        err->kind = STORE_ERR_NO_SPACE;
        return -1;
    }
    if (rc == MDB_PANIC)
        return store_fail(err, "%s: %s; the store at %s keeps its last commit, and a writer "
                               "that opens it again continues from there",
                          doing, mdb_strerror(rc), s->dir);
    return store_fail(err, "%s to the store at %s: %s", doing, s->dir, mdb_strerror(rc));
}

int store_set_max_size(struct store *s, uint64_t bytes, struct store_error *err)
{
    if (!s->pending)
        return store_fail(err, "the store at %s is open read-only", s->dir);
    MDB_envinfo info;
    MDB_stat st;
    if (mdb_env_info(s->env, &info) || mdb_env_stat(s->env, &st))
        return store_fail(err, "reading the size of the store at %s failed", s->dir);
    uint64_t page = st.ms_psize, cap = bytes / page * page;
    uint64_t used = (uint64_t)(info.me_last_pgno + 1) * page;
    if (cap < used) {
        store_fail(err, "the store at %s already holds %.1f MiB of pages, more than a size "
                        "limit of %.1f MiB",
                   s->dir, mib(used), mib(bytes));
        err->kind = STORE_ERR_LIMIT;
        return -1;
    }
    if (cap > STORE_MAP_BYTES) {
        store_fail(err, "a size limit of %.1f MiB for the store at %s is over the largest "
                        "store, %.0f GiB",
                   mib(bytes), s->dir, (double)STORE_MAP_BYTES / (1 << 30));
        err->kind = STORE_ERR_LIMIT;
        return -1;
    }
    s->max_map_size = (size_t)cap;
    if (info.me_mapsize != cap) {
        /* No transaction is open and no other thread reads yet (the
         * contract): the map may be set to the cap, once (LMDB keeps it at
         * least as large as the pages in use). */
        int rc = mdb_env_set_mapsize(s->env, (size_t)cap);
        if (rc)
            return store_lmdb_error(err, rc, "setting the store's size limit");
        mdb_env_info(s->env, &info);
    }
    s->map_size = info.me_mapsize;
    return 0;
}
