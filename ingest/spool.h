/* spool.h -- where a streamed transaction's changes wait for its commit.
 *
 * PostgreSQL streams a large transaction in pieces before it commits (and it
 * may still abort), so its messages are kept, in order, until Stream Commit
 * or Stream Abort. The newest SPOOL_MEMORY_BYTES (or memory_bytes) stay in
 * memory; each time that part fills it is written, whole, to the end of an
 * unlinked temporary file, so ingest's memory stays bounded whatever the
 * transaction's size, and the file is written in large pieces. The initial
 * load sets rows aside (row_record.h) by time partition in spools too.
 * Private to ingest/. */
#ifndef STRAUM_INGEST_SPOOL_H
#define STRAUM_INGEST_SPOOL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define SPOOL_MEMORY_BYTES (4u << 20)

struct spool {
    size_t memory_bytes; /* the memory part's limit; 0 for SPOOL_MEMORY_BYTES */
    uint8_t *mem;
    size_t len, cap;
    FILE *file;          /* the older messages; NULL until the memory part fills */
    uint64_t file_bytes;
    uint64_t count;
};

/* Appends one message. Returns 0, or -1 with err. */
int spool_append(struct spool *s, const uint8_t *msg, size_t len, char *err, size_t errlen);

/* Calls fn on every message in order; stops at the first non-zero return,
 * which it returns. -1 with err on an I/O error. */
typedef int (*spool_fn)(void *ctx, const uint8_t *msg, size_t len);
int spool_replay(struct spool *s, spool_fn fn, void *ctx, char *err, size_t errlen);

/* Empties the spool, keeping its memory for the next transaction. */
void spool_reset(struct spool *s);
void spool_free(struct spool *s);
/* A follower that spools each transaction apart keeps one spool's memory
 * between them: spool_recycle frees s, its memory part kept by spare if
 * spare keeps none, and spool_reuse gives that memory to a new spool s.
 * Freed and allocated afresh, a transaction's few MiB came back as new
 * pages the kernel zeroes (perf of the physical follower's updates:
 * faults under on_heap_change, 5% of ingest). Cannot fail. */
void spool_recycle(struct spool *s, struct spool *spare);
void spool_reuse(struct spool *s, struct spool *spare);
/* Bytes held, memory and file. */
uint64_t spool_bytes(const struct spool *s);

#endif
