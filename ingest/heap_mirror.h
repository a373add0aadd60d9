/* heap_mirror.h -- the followed tables' heap pages as the physical WAL
 * rebuilds them: what `--wal physical` reads a deleted or updated row from.
 *
 * A physical WAL record of a delete names the row by its place (block and
 * line pointer), not by its values; an update's new row may even borrow
 * its first and last bytes from the old one. So the follower keeps the
 * pages of the tables it follows, as far as their rows go, and replays the
 * heap records onto them, as a standby does. It needs no page from before
 * the start of its reading, only that reading start at a checkpoint's redo
 * pointer with full_page_writes on: from there PostgreSQL writes each
 * page's first change with an image of the whole page (or re-initialises
 * the page), so every page a record touches was seen whole first.
 *
 * A page here is not PostgreSQL's bytes but what they hold: per line
 * pointer its state (unused, normal, redirect, dead) and, when normal, the
 * tuple as WAL carries one (the xl_heap_header fields and the bytes from
 * the tuple header's 23rd on: null bitmap, padding, attributes). Where the
 * tuples sit on the page, their visibility bits and hint bits do not
 * matter to the rows, and are not kept; a page image replaces everything.
 *
 * Invariants:
 *   1. A page is complete when it came from an image or a re-initialisation
 *      (and every record since was replayed onto it): each of its line
 *      pointers is as PostgreSQL's page has it, as far as states and tuple
 *      bytes go. A page first met in a record without an image is partial:
 *      it holds what records since put there, and reading any other line
 *      pointer of it is an error that says the image was missed (the
 *      reading did not start at a redo pointer, or full_page_writes was
 *      off), never a guess.
 *   2. A record's block that carries an image to apply is restored from
 *      the image and the record's own change to that block is not replayed
 *      (the image holds it), as PostgreSQL's redo does.
 *   3. Each page remembers the end of the last record that touched it; a
 *      checkpoint whose redo pointer passed it may forget the page
 *      (heap_mirror_forget_before), since its next change brings an image.
 *      What the mirror holds is so bounded by the pages changed between two
 *      checkpoints; past max_bytes it refuses with a message that says so.
 *   4. A row that a committed transaction deleted, or updated to a new
 *      version, is read by no record to come (PostgreSQL changes only a
 *      row's latest version, and only pruning touches a dead one, by line
 *      pointer), so its bytes go at the commit (heap_mirror_end): the
 *      mirror holds the live rows of the pages changed, and those of
 *      transactions still open. An aborted transaction's rows live on.
 *
 * One thread; not thread-safe. Private to ingest/. */
#ifndef STRAUM_INGEST_HEAP_MIRROR_H
#define STRAUM_INGEST_HEAP_MIRROR_H

#include "ingest/pgwal.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* MaxHeapTuplesPerPage for 8192-byte pages: the most line pointers a heap
 * page holds. */
#define HEAP_MIRROR_MAX_ITEMS 291

/* A tuple as the mirror gives it: its header's fields that WAL carries and
 * its bytes from the header's 23rd on (valid until the next call that
 * changes the mirror). */
struct heap_mirror_tuple {
    uint16_t infomask2, infomask;
    uint8_t hoff;
    const uint8_t *data;
    uint32_t len;
};

enum heap_change_kind { HEAP_CHANGE_INSERT, HEAP_CHANGE_DELETE, HEAP_CHANGE_UPDATE };

/* A row change a heap record made to a followed relation: the old tuple
 * (DELETE, UPDATE) and the new one (INSERT, UPDATE). xid is the record's
 * (a subtransaction's own when in one). */
struct heap_change {
    enum heap_change_kind kind;
    struct pgwal_relfilenode node;
    uint32_t xid;
    uint64_t lsn;
    struct heap_mirror_tuple old_tuple, new_tuple;
};

/* Receives each change of a record, in order; non-zero stops the replay
 * and is returned by heap_mirror_replay. */
typedef int (*heap_change_fn)(void *ctx, const struct heap_change *c);

struct heap_mirror;

/* An empty mirror that holds at most max_bytes of pages (0: no bound).
 * NULL when out of memory. */
struct heap_mirror *heap_mirror_new(size_t max_bytes);
void heap_mirror_free(struct heap_mirror *m);

/* Follows relation file node (main fork): its records are replayed and
 * their changes reported. 0, or -1 out of memory. */
int heap_mirror_follow(struct heap_mirror *m, struct pgwal_relfilenode node);

/* Replays one record (any resource manager: those that do not touch a
 * followed relation's heap pages are skipped) and reports its row changes
 * to fn. Heap and heap2 records, page images (of any record: XLOG FPI and
 * FPI_FOR_HINT too) and storage truncations change pages. Returns 0, fn's
 * non-zero value, or -1 with a message in err: a record that does not
 * parse, a page image that does not restore, a tuple that a record needs
 * and the mirror lacks (invariant 1), more than max_bytes held. After -1
 * the mirror is not usable. */
int heap_mirror_replay(struct heap_mirror *m, const struct pgwal_record *rec, heap_change_fn fn,
                       void *ctx, char *err, size_t errlen);

/* The end of transaction xids[0] with its subtransactions xids[1..n)
 * (or of subtransactions alone, rolled back to a savepoint): at a commit
 * the rows their records deleted or updated away give their bytes back
 * (invariant 4); at an abort they live on. Never fails. */
void heap_mirror_end(struct heap_mirror *m, const uint32_t *xids, int nxids, bool commit);

/* Forgets the pages no record touched since redo (a checkpoint's redo
 * pointer: invariant 3). Returns the pages forgotten, or -1 out of memory
 * (the mirror is then unchanged). */
long heap_mirror_forget_before(struct heap_mirror *m, uint64_t redo);

/* The tuple at line pointer offnum of block blkno of node: 1 with *t set,
 * 2 when it is a row a committed transaction deleted or updated away
 * (normal on the server until pruned; its bytes given back: invariant 4),
 * 0 when the mirror holds the page and that line pointer is not a normal
 * one (unused, redirect or dead), -1 when the mirror does not hold the
 * page or, partial, does not know the line pointer. For tests. */
int heap_mirror_tuple_at(const struct heap_mirror *m, struct pgwal_relfilenode node,
                         uint32_t blkno, uint16_t offnum, struct heap_mirror_tuple *t);

/* Pages held, and the bytes they take. */
size_t heap_mirror_pages(const struct heap_mirror *m);
size_t heap_mirror_bytes(const struct heap_mirror *m);

#endif
