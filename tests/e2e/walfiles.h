/* walfiles.h -- the test cluster's WAL read from its pg_wal files, record
 * by record, through ingest/pgwal.h's reader: what the physical WAL's tests
 * read where straum-ingest will read a replication stream. */
#ifndef STRAUM_TESTS_E2E_WALFILES_H
#define STRAUM_TESTS_E2E_WALFILES_H

#include "ingest/pgwal.h"

#include <libpq-fe.h>
#include <stdbool.h>
#include <stdint.h>

struct walfiles {
    char dir[1024];   /* the cluster's pg_wal */
    uint32_t seg, tli;
    uint64_t from, pos, end;
    int fd;
    uint64_t fd_seg;
    uint8_t *buf;     /* WALFILES_BUF bytes: what walfiles_read read */
    struct pgwal_reader reader;
    bool reading;     /* reader set up (walfiles_next's first call) */
};

enum { WALFILES_BUF = 1 << 20 };

/* Opens the WAL of the cluster pg is connected to (a superuser: SHOW
 * data_directory) from `from` (a record's start, such as a checkpoint's
 * redo pointer) to `end` (a record's end), on the current timeline. Aborts
 * the test on failure. */
void walfiles_open(struct walfiles *w, PGconn *pg, uint64_t from, uint64_t end);
/* The same over the segment files of pg_wal directory dir, of segment size
 * seg and timeline tli; from may be any byte for walfiles_read. */
void walfiles_open_dir(struct walfiles *w, const char *dir, uint32_t seg, uint32_t tli,
                       uint64_t from, uint64_t end);
void walfiles_close(struct walfiles *w);

/* Up to want bytes (at most WALFILES_BUF, never past a segment's end or
 * `end`) at the next position, into w->buf: their count, and *lsn their
 * first byte's LSN; 0 at the end. For tests that feed a reader their own
 * way; not to be mixed with walfiles_next. */
size_t walfiles_read(struct walfiles *w, size_t want, uint64_t *lsn);

/* The next record: 1 with *rec (valid until the next call), 0 once the
 * records up to `end` are read. Aborts the test on a decoding error. */
int walfiles_next(struct walfiles *w, struct pgwal_record *rec);

/* An LSN query's value ("SELECT pg_current_wal_flush_lsn()"). */
uint64_t walfiles_lsn(PGconn *pg, const char *sql);

#endif
