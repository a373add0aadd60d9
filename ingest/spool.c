/* spool.c -- a transaction's messages, in memory then in a temporary file.
 * Each message is stored as a u32 length (host order: the file never leaves
 * this process) followed by its bytes. */
#include "ingest/spool.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int fail_io(char *err, size_t errlen, const char *doing)
{
    snprintf(err, errlen, "spool: %s: %s", doing, strerror(errno));
    return -1;
}

/* An unlinked temporary file in $TMPDIR, else /tmp: tmpfile(3) ignores
 * TMPDIR, and a load's spools are gigabytes that a small /tmp cannot hold.
 * NULL with err. */
static FILE *temp_file(char *err, size_t errlen)
{
    const char *dir = getenv("TMPDIR");
    dir = dir && *dir ? dir : "/tmp";
    char path[4096];
    if ((size_t)snprintf(path, sizeof path, "%s/straum-spool-XXXXXX", dir) >= sizeof path) {
        snprintf(err, errlen, "spool: TMPDIR is too long a path");
        return NULL;
    }
    int fd = mkstemp(path);
    FILE *f = fd >= 0 ? fdopen(fd, "w+") : NULL;
    if (!f) {
        snprintf(err, errlen, "spool: creating a temporary file in %s: %s (set TMPDIR to a "
                 "directory on a disk with room)", dir, strerror(errno));
        if (fd >= 0) {
            unlink(path);
            close(fd);
        }
        return NULL;
    }
    unlink(path); /* gone with the last close, however ingest ends */
    setvbuf(f, NULL, _IONBF, 0);
    return f;
}

/* Writes the memory part to the end of the file, made on first use: the
 * file holds the older messages, memory the newer, so the file is written
 * a memory part at a time (one write(2) each; the FILE is unbuffered)
 * rather than through stdio's 4 KiB buffer: a load's spools are gigabytes. */
static int flush_memory(struct spool *s, char *err, size_t errlen)
{
    if (!s->file && !(s->file = temp_file(err, errlen)))
        return -1;
    if (s->len && fwrite(s->mem, s->len, 1, s->file) != 1)
        return fail_io(err, errlen, "writing");
    s->file_bytes += s->len;
    s->len = 0;
    return 0;
}

static int grow_memory(struct spool *s, size_t need, char *err, size_t errlen)
{
    if (need <= s->cap)
        return 0;
    size_t cap = s->cap ? s->cap : 64 << 10;
    while (cap < need)
        cap *= 2;
    uint8_t *m = realloc(s->mem, cap);
    if (!m)
        return fail_io(err, errlen, "growing the memory part");
    s->mem = m;
    s->cap = cap;
    return 0;
}

int spool_append(struct spool *s, const uint8_t *msg, size_t len, char *err, size_t errlen)
{
    uint32_t n = (uint32_t)len;
    if (len > UINT32_MAX) {
        snprintf(err, errlen, "spool: a message of %zu bytes is too large", len);
        return -1;
    }
    s->count++;
    size_t limit = s->memory_bytes ? s->memory_bytes : SPOOL_MEMORY_BYTES;
    if (s->len + 4 + len > limit && s->len && flush_memory(s, err, errlen))
        return -1;
    if (4 + len > limit) { /* larger than the memory part: straight to the file */
        if (flush_memory(s, err, errlen) || fwrite(&n, 4, 1, s->file) != 1 ||
            (len && fwrite(msg, len, 1, s->file) != 1))
            return fail_io(err, errlen, "writing");
        s->file_bytes += 4 + len;
        return 0;
    }
    if (grow_memory(s, s->len + 4 + len, err, errlen))
        return -1;
    memcpy(s->mem + s->len, &n, 4);
    memcpy(s->mem + s->len + 4, msg, len);
    s->len += 4 + len;
    /* The lines the next message will take, fetched for writing now: a
     * load appends to hundreds of spools in turn, so each message's first
     * store missed the cache, and those stores were a third of the scan's
     * time in ingest (perf); by the next message to this spool they are
     * there. */
    __builtin_prefetch(s->mem + s->len + 64, 1);
    __builtin_prefetch(s->mem + s->len + 128, 1);
    return 0;
}

/* Calls fn on each whole message in buf[0, len), setting *used to their
 * bytes (a message cut at the end is left for the next read). Returns fn's
 * first non-zero return, else 0. */
static int replay_bytes(const uint8_t *buf, size_t len, size_t *used, spool_fn fn, void *ctx)
{
    size_t pos = 0;
    int rc = 0;
    while (rc == 0 && len - pos >= 4) {
        uint32_t n;
        memcpy(&n, buf + pos, 4);
        if (len - pos - 4 < n)
            break;
        rc = fn(ctx, buf + pos + 4, n);
        pos += 4 + (size_t)n;
    }
    *used = pos;
    return rc;
}

enum { REPLAY_CHUNK = 1 << 20 };

/* The file's messages, read a megabyte at a time. */
static int replay_file(struct spool *s, spool_fn fn, void *ctx, char *err, size_t errlen)
{
    if (fseek(s->file, 0, SEEK_SET))
        return fail_io(err, errlen, "rewinding");
    size_t cap = REPLAY_CHUNK, have = 0;
    uint8_t *buf = malloc(cap);
    if (!buf)
        return fail_io(err, errlen, "reading");
    int rc = 0;
    for (uint64_t left = s->file_bytes; rc == 0 && (left > 0 || have > 0);) {
        size_t want = cap - have < left ? cap - have : (size_t)left;
        if (want && fread(buf + have, want, 1, s->file) != 1) {
            if (feof(s->file)) {
                snprintf(err, errlen, "spool: the temporary file is shorter than what was "
                                      "written to it");
                rc = -1;
            } else {
                rc = fail_io(err, errlen, "reading");
            }
            break;
        }
        have += want;
        left -= want;
        size_t used;
        rc = replay_bytes(buf, have, &used, fn, ctx);
        memmove(buf, buf + used, have - used);
        have -= used;
        if (rc || used > 0 || have == 0)
            continue;
        if (left == 0) { /* the file ends inside a message */
            snprintf(err, errlen, "spool: the temporary file ends inside a message");
            rc = -1;
        } else if (have == cap) { /* one message larger than the buffer */
            uint32_t n;
            memcpy(&n, buf, 4);
            size_t bigger = (size_t)n + 4 > cap * 2 ? (size_t)n + 4 : cap * 2;
            uint8_t *b = realloc(buf, bigger);
            if (!b) {
                rc = fail_io(err, errlen, "reading");
            } else {
                buf = b;
                cap = bigger;
            }
        }
    }
    free(buf);
    if (rc == 0 && fseek(s->file, 0, SEEK_END))
        rc = fail_io(err, errlen, "rewinding");
    return rc;
}

int spool_replay(struct spool *s, spool_fn fn, void *ctx, char *err, size_t errlen)
{
    int rc = s->file ? replay_file(s, fn, ctx, err, errlen) : 0;
    size_t used;
    return rc ? rc : replay_bytes(s->mem, s->len, &used, fn, ctx);
}

void spool_reset(struct spool *s)
{
    if (s->file)
        fclose(s->file);
    s->file = NULL;
    s->file_bytes = 0;
    s->len = 0;
    s->count = 0;
    if (s->cap > (1u << 20)) { /* give back what one big transaction took */
        free(s->mem);
        s->mem = NULL;
        s->cap = 0;
    }
}

void spool_free(struct spool *s)
{
    spool_reset(s);
    free(s->mem);
    s->mem = NULL;
    s->cap = 0;
}

void spool_recycle(struct spool *s, struct spool *spare)
{
    bool keep = !spare->mem && s->mem;
    uint8_t *mem = s->mem;
    size_t cap = s->cap;
    s->mem = NULL; /* kept or freed below, not by spool_free */
    s->cap = 0;
    spool_free(s);
    if (keep) {
        spare->mem = mem;
        spare->cap = cap;
    } else {
        free(mem);
    }
}

void spool_reuse(struct spool *s, struct spool *spare)
{
    if (s->mem || !spare->mem)
        return;
    s->mem = spare->mem;
    s->cap = spare->cap;
    spare->mem = NULL;
    spare->cap = 0;
}

uint64_t spool_bytes(const struct spool *s) { return s->len + s->file_bytes; }
