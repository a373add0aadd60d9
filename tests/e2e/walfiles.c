/* walfiles.c -- see walfiles.h. */
#include "tests/e2e/walfiles.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum { PIECE = 1 << 16 }; /* bytes walfiles_next feeds at a time: records cross them */

static void one_value(PGconn *pg, const char *sql, char *out, size_t cap)
{
    PGresult *r = PQexec(pg, sql);
    cr_assert_eq(PQresultStatus(r), PGRES_TUPLES_OK, "%s: %s", sql, PQerrorMessage(pg));
    snprintf(out, cap, "%s", PQgetvalue(r, 0, 0));
    PQclear(r);
}

uint64_t walfiles_lsn(PGconn *pg, const char *sql)
{
    char v[64];
    unsigned hi = 0, lo = 0;
    one_value(pg, sql, v, sizeof v);
    cr_assert_eq(sscanf(v, "%X/%X", &hi, &lo), 2, "%s: %s", sql, v);
    return (uint64_t)hi << 32 | lo;
}

void walfiles_open_dir(struct walfiles *w, const char *dir, uint32_t seg, uint32_t tli,
                       uint64_t from, uint64_t end)
{
    memset(w, 0, sizeof *w);
    cr_assert_lt(strlen(dir), sizeof w->dir, "pg_wal directory %s", dir);
    memcpy(w->dir, dir, strlen(dir) + 1);
    w->seg = seg;
    w->tli = tli;
    w->from = w->pos = from;
    w->end = end;
    w->fd = -1;
    cr_assert_not_null(w->buf = malloc(WALFILES_BUF));
}

void walfiles_open(struct walfiles *w, PGconn *pg, uint64_t from, uint64_t end)
{
    char v[1024], dir[1100];
    one_value(pg, "SHOW data_directory", v, sizeof v);
    cr_assert_lt(strlen(v) + sizeof "/pg_wal", sizeof dir, "data directory %s", v);
    memcpy(dir, v, strlen(v));
    memcpy(dir + strlen(v), "/pg_wal", sizeof "/pg_wal");
    one_value(pg, "SELECT setting FROM pg_settings WHERE name = 'wal_segment_size'", v, sizeof v);
    uint32_t seg = (uint32_t)strtoul(v, NULL, 10);
    one_value(pg, "SELECT timeline_id FROM pg_control_checkpoint()", v, sizeof v);
    walfiles_open_dir(w, dir, seg, (uint32_t)strtoul(v, NULL, 10), from, end);
}

void walfiles_close(struct walfiles *w)
{
    if (w->fd >= 0)
        close(w->fd);
    free(w->buf);
    if (w->reading)
        pgwal_reader_free(&w->reader);
    memset(w, 0, sizeof *w);
    w->fd = -1;
}

size_t walfiles_read(struct walfiles *w, size_t want, uint64_t *lsn)
{
    if (w->pos >= w->end)
        return 0;
    uint64_t segno = w->pos / w->seg;
    if (w->fd < 0 || w->fd_seg != segno) {
        if (w->fd >= 0)
            close(w->fd);
        uint64_t per = 0x100000000ull / w->seg;
        char path[1200];
        snprintf(path, sizeof path, "%s/%08X%08X%08X", w->dir, (unsigned)w->tli,
                 (unsigned)(segno / per), (unsigned)(segno % per));
        w->fd = open(path, O_RDONLY | O_CLOEXEC);
        cr_assert_geq(w->fd, 0, "%s: %s", path, strerror(errno));
        w->fd_seg = segno;
    }
    uint64_t lim = (segno + 1) * w->seg;
    lim = lim < w->end ? lim : w->end;
    want = want < WALFILES_BUF ? want : WALFILES_BUF;
    want = lim - w->pos < want ? (size_t)(lim - w->pos) : want;
    ssize_t n = pread(w->fd, w->buf, want, (off_t)(w->pos % w->seg));
    cr_assert_eq(n, (ssize_t)want, "short read of WAL at %llX", (unsigned long long)w->pos);
    *lsn = w->pos;
    w->pos += want;
    return want;
}

int walfiles_next(struct walfiles *w, struct pgwal_record *rec)
{
    char err[512];
    if (!w->reading) {
        cr_assert_eq(pgwal_reader_init(&w->reader, w->seg, w->from, 0, err, sizeof err), 0, "%s",
                     err);
        w->reading = true;
    }
    for (;;) {
        int rc = pgwal_reader_next(&w->reader, rec, err, sizeof err);
        cr_assert_geq(rc, 0, "reading WAL: %s", err);
        if (rc == 1)
            return rec->end <= w->end ? 1 : 0;
        uint64_t at;
        size_t n = walfiles_read(w, PIECE, &at);
        if (n == 0)
            return 0;
        cr_assert_eq(pgwal_reader_feed(&w->reader, at, w->buf, n, err, sizeof err), 0, "%s", err);
    }
}
