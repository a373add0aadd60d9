/* walfiles.h -- the test cluster's WAL read from its pg_wal files, record
 * by record, through ingest/pgwal.h's reader: what the physical WAL's tests
 * read where straum-ingest will read a replication stream. */
#ifndef STRAUM_TESTS_E2E_WALFILES_H
#define STRAUM_TESTS_E2E_WALFILES_H

#include "ingest/pgwal.h"

#include <libpq-fe.h>
#include <stdint.h>

struct walfiles {
    char dir[1024];   /* the cluster's pg_wal */
    uint32_t seg, tli;
    uint64_t pos, end;
    int fd;
    uint64_t fd_seg;
    uint8_t *buf;
    struct pgwal_reader reader;
};

/* Opens the WAL of the cluster pg is connected to (a superuser: SHOW
 * data_directory) from `from` (a record's start, such as a checkpoint's
 * redo pointer) to `end` (a record's end), on the current timeline. Aborts
 * the test on failure. */
void walfiles_open(struct walfiles *w, PGconn *pg, uint64_t from, uint64_t end);
void walfiles_close(struct walfiles *w);

/* The next record: 1 with *rec (valid until the next call), 0 once the
 * records up to `end` are read. Aborts the test on a decoding error. */
int walfiles_next(struct walfiles *w, struct pgwal_record *rec);

/* An LSN query's value ("SELECT pg_current_wal_flush_lsn()"). */
uint64_t walfiles_lsn(PGconn *pg, const char *sql);

#endif
