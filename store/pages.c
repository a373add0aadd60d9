/* pages.c -- giving back the map's pages that the writer has decoded.
 *
 * straum-ingest reads a segment's blocks through LMDB's map only to decode
 * them; afterwards it holds the segment decoded, or not at all. Left mapped,
 * those pages count in its RSS until the process ends, so a follower that
 * merges or folds every segment carried the whole store (70 to 90 MiB at
 * full scale) on top of its own memory. madvise(MADV_DONTNEED) takes them
 * out of the process's page tables; the page cache keeps them, so serve
 * and the next read lose nothing but a minor fault.
 *
 * LMDB does not say where it mapped the file (me_mapaddr is only the fixed
 * address of MDB_FIXEDMAP), and a write transaction's own pages live in
 * malloc'd memory, where MADV_DONTNEED would zero them. So the map's range
 * is looked up in /proc/self/maps by data.mdb's device and inode, again
 * whenever the map's size changes (LMDB maps anew then), and only ranges
 * inside it are dropped. Without /proc nothing is dropped.
 *
 * Segments decoded whole are dropped once RELEASE_BATCH_BYTES of them
 * wait, so that a commit merging every segment does not hold them all;
 * what else the writer read (blocks' headers, B-tree pages) goes after each
 * commit and each compaction, with the whole map, when no transaction is
 * open.
 *
 * Why in batches: each madvise flushes the TLB of every CPU the process
 * has run on, by interrupts that a virtual machine makes dear. Dropping
 * each segment's blocks as they were decoded was one call a block, and a
 * follower committing a stream of small transactions (thousands of
 * segments a commit) spent 17 % of its time there (perf, `taxi stream`,
 * the insert script). One call over the span of a batch drops some
 * neighbours' pages too, which costs them a refault from the page cache. */
#include "store/internal.h"

#include <stdio.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

/* A fault also maps the cached pages of the 64 KiB window around it
 * (fault_around_bytes), so a dropped range is widened to those windows.
 * Pages of the map are the file's: dropping a neighbour's costs only a
 * refault. */
enum { FAULT_WINDOW = 64 << 10 };

/* Decoded blocks' bytes that may stay mapped before they are dropped: a
 * bound on what a commit adds to the writer's RSS, and 8 MiB of blocks a
 * call keeps the calls few (a few a second under a full-speed stream). */
enum { RELEASE_BATCH_BYTES = 8 << 20 };

/* Finds data.mdb's mapping in /proc/self/maps; false when it is not there. */
static bool find_map(struct store *s, uintptr_t *lo, uintptr_t *hi)
{
    int fd;
    struct stat st;
    if (mdb_env_get_fd(s->env, &fd) || fstat(fd, &st))
        return false;
    FILE *f = fopen("/proc/self/maps", "r");
    if (!f)
        return false;
    char line[4096];
    bool found = false;
    while (!found && fgets(line, sizeof line, f)) {
        unsigned long from, to, offset, inode;
        unsigned dev_major, dev_minor;
        char perms[8];
        if (sscanf(line, "%lx-%lx %7s %lx %x:%x %lu", &from, &to, perms, &offset, &dev_major,
                   &dev_minor, &inode) == 7 &&
            inode == (unsigned long)st.st_ino && dev_major == major(st.st_dev) &&
            dev_minor == minor(st.st_dev) && offset == 0) {
            *lo = from;
            *hi = to;
            found = true;
        }
    }
    fclose(f);
    return found;
}

/* The map's range as last found, refreshed when LMDB has mapped anew. */
static bool map_range(struct store *s)
{
    MDB_envinfo info;
    if (mdb_env_info(s->env, &info))
        return false;
    if (info.me_mapsize != s->map_seen_size) {
        s->map_seen_size = info.me_mapsize;
        if (!find_map(s, &s->map_lo, &s->map_hi))
            s->map_lo = s->map_hi = 0;
    }
    return s->map_hi > s->map_lo;
}

/* Forgets the batch waiting to be dropped. */
static void release_reset(struct store *s)
{
    s->release_lo = s->release_hi = 0;
    s->release_bytes = 0;
}

void segment_blocks_release(struct store *s, const MDB_val *blocks, int n)
{
    if (n <= 0 || !map_range(s))
        return;
    if (s->release_hi && (s->release_lo < s->map_lo || s->release_hi > s->map_hi))
        release_reset(s); /* mapped anew since: the batch's addresses are gone */
    for (int i = 0; i < n; i++) {
        uintptr_t from = (uintptr_t)blocks[i].mv_data, to = from + blocks[i].mv_size;
        if (from < s->map_lo || to > s->map_hi)
            continue; /* this write transaction's own pages, in malloc'd memory */
        from &= ~(uintptr_t)(FAULT_WINDOW - 1);
        to = (to + FAULT_WINDOW - 1) & ~(uintptr_t)(FAULT_WINDOW - 1);
        from = from < s->map_lo ? s->map_lo : from;
        to = to > s->map_hi ? s->map_hi : to;
        if (!s->release_hi || from < s->release_lo)
            s->release_lo = from;
        if (to > s->release_hi)
            s->release_hi = to;
        s->release_bytes += to - from;
    }
    if (s->release_bytes >= RELEASE_BATCH_BYTES) {
        madvise((void *)s->release_lo, s->release_hi - s->release_lo, MADV_DONTNEED);
        release_reset(s);
    }
}

void store_release_map(struct store *s)
{
    release_reset(s);
    if (map_range(s))
        madvise((void *)s->map_lo, s->map_hi - s->map_lo, MADV_DONTNEED);
}
