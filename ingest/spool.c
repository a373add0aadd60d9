/* spool.c -- a transaction's messages, in memory then in a temporary file.
 * Each message is stored as a u32 length (host order: the file never leaves
 * this process) followed by its bytes. */
#include "ingest/spool.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static int fail_io(char *err, size_t errlen, const char *doing)
{
    snprintf(err, errlen, "spool: %s: %s", doing, strerror(errno));
    return -1;
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
    if (!s->file && s->len + 4 + len <= limit) {
        if (s->len + 4 + len > s->cap) {
            size_t cap = s->cap ? s->cap : 64 << 10;
            while (cap < s->len + 4 + len)
                cap *= 2;
            uint8_t *m = realloc(s->mem, cap);
            if (!m)
                return fail_io(err, errlen, "growing the memory part");
            s->mem = m;
            s->cap = cap;
        }
        memcpy(s->mem + s->len, &n, 4);
        memcpy(s->mem + s->len + 4, msg, len);
        s->len += 4 + len;
        return 0;
    }
    if (!s->file && !(s->file = tmpfile()))
        return fail_io(err, errlen, "creating a temporary file (set TMPDIR to a disk with room)");
    if (fwrite(&n, 4, 1, s->file) != 1 || (len && fwrite(msg, len, 1, s->file) != 1))
        return fail_io(err, errlen, "writing");
    s->file_bytes += 4 + len;
    return 0;
}

int spool_replay(struct spool *s, spool_fn fn, void *ctx, char *err, size_t errlen)
{
    for (size_t pos = 0; pos < s->len;) {
        uint32_t n;
        memcpy(&n, s->mem + pos, 4);
        int rc = fn(ctx, s->mem + pos + 4, n);
        if (rc)
            return rc;
        pos += 4 + (size_t)n;
    }
    if (!s->file)
        return 0;
    if (fflush(s->file) || fseek(s->file, 0, SEEK_SET))
        return fail_io(err, errlen, "rewinding");
    uint8_t *buf = NULL;
    size_t cap = 0;
    int rc = 0;
    for (uint64_t read = 0; read < s->file_bytes && rc == 0;) {
        uint32_t n;
        if (fread(&n, 4, 1, s->file) != 1) {
            rc = fail_io(err, errlen, "reading");
            break;
        }
        if (n > cap) {
            uint8_t *b = realloc(buf, n);
            if (!b) {
                rc = fail_io(err, errlen, "reading");
                break;
            }
            buf = b;
            cap = n;
        }
        if (n && fread(buf, n, 1, s->file) != 1) {
            rc = fail_io(err, errlen, "reading");
            break;
        }
        rc = fn(ctx, buf, n);
        read += 4 + (uint64_t)n;
    }
    free(buf);
    return rc;
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

uint64_t spool_bytes(const struct spool *s) { return s->len + s->file_bytes; }
