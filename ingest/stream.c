/* stream.c -- following the slot: pgoutput messages into the store.
 *
 * Invariants:
 * - The store's pending changes hold whole source transactions only, so a
 *   store commit (group commit, every commit_interval) always lands on a
 *   transaction boundary, with the end LSN of the last one as position.
 * - A transaction that is not streamed arrives whole after its commit, so it
 *   is applied as it arrives. A streamed one (large, protocol 2) arrives in
 *   pieces before its commit and may abort: its messages wait in a spool and
 *   are applied at Stream Commit.
 * - The server is told a flush position only once the store holds it.
 * - When idle, the server's sent position (from a keepalive we ask for) is
 *   safe to store: every transaction committed before it has been sent and
 *   applied. This keeps the slot from holding WAL back and lets a caller
 *   wait for "caught up". */
#include "base/error.h"
#include "ingest/internal.h"
#include "ingest/metrics.h"
#include "ingest/pgoutput.h"
#include "ingest/spool.h"

#include <errno.h>
#include <poll.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

enum { MAX_STREAMS = 64 };

/* A streamed transaction waiting for its commit. */
struct streamed_txn {
    uint32_t xid;
    struct spool spool;
    uint32_t *aborted;   /* subtransactions rolled back */
    int naborted;
};

struct follower {
    const struct ingest_options *opt;
    struct source *src;
    struct store *st;
    PGconn *repl;
    struct receiver *rx;       /* reads repl from START_REPLICATION on */
    PGconn *catalog;           /* a plain connection for upstream_check */
    int64_t last_check;
    int proto;
    bool binary;

    uint64_t applied_lsn;      /* end of the last transaction applied (maybe not stored) */
    int64_t applied_time;      /* its commit time, Unix µs */
    struct pace_group g;       /* applied, and what the store holds */
    uint64_t received_lsn;
    uint64_t server_lsn;       /* the server's sent / WAL end position */
    bool in_txn;               /* between Begin and Commit */
    uint64_t spool_total;      /* bytes in the streams' spools */
    int64_t last_feedback, last_contact, last_data, last_ask;

    struct streamed_txn streams[MAX_STREAMS];
    int nstreams;
    bool in_stream;
    uint32_t stream_xid;

    uint64_t target_lsn;       /* exit_when_caught_up: stop once stored >= this */
    char *err;
    size_t errlen;
};

static int fail(struct follower *f, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int fail(struct follower *f, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    error_vfmt(f->err, f->errlen, fmt, ap);
    va_end(ap);
    return -1;
}

/* ---- Store commits and feedback ----------------------------------------------- */

/* A failed store write wrote nothing (pace_failed). */
static int store_failed(struct follower *f, const struct store_error *serr)
{
    return pace_failed(&f->g, serr, f->opt, f->err, f->errlen);
}

static int store_position_now(struct follower *f, uint64_t lsn, int64_t commit_time)
{
    struct store_position pos = {lsn, commit_time, f->last_contact,
                                 f->server_lsn > lsn ? f->server_lsn - lsn : 0};
    return pace_commit(&f->g, f->st, &pos, f->opt, f->err, f->errlen);
}

static int send_feedback(struct follower *f, bool ask_reply)
{
    uint8_t msg[WAL_STATUS_BYTES];
    wal_status_encode(msg, f->received_lsn > f->g.stored_lsn ? f->received_lsn : f->g.stored_lsn,
                      f->g.stored_lsn, f->g.stored_lsn, now_usec() - PG_EPOCH_OFFSET_US, ask_reply);
    char why[300];
    if (!f->rx)
        return 0; /* not streaming yet: nothing to tell */
    if (receiver_send(f->rx, msg, sizeof msg, why, sizeof why))
        return fail(f, "sending feedback: %s", why);
    f->last_feedback = now_usec();
    if (ask_reply)
        f->last_ask = f->last_feedback;
    return 0;
}

/* WAL the server reported past what the follower received (a logical
 * walsender reports how far it decoded: rarely much). */
static uint64_t behind(const struct follower *f)
{
    return f->server_lsn > f->received_lsn ? f->server_lsn - f->received_lsn : 0;
}

/* Group commit (internal.h, pace_group_ready): whole transactions only,
 * every pace_group_interval, sooner when many rows wait, at once when the
 * stream went idle (idle: nothing arrived over the loop's last wait). */
static int maybe_store(struct follower *f, bool force, bool idle)
{
    if (!f->g.dirty || f->in_txn)
        return 0;
    if (!force && !pace_group_ready(&f->g, now_usec(), f->opt->commit_interval_us, behind(f), idle))
        return 0;
    if (store_position_now(f, f->applied_lsn, f->applied_time))
        return -1;
    return send_feedback(f, false);
}

/* ---- Relations ------------------------------------------------------------------- */

/* A column whose type changed upstream: compatible when its values keep
 * the same codes (smallint to integer, numeric(9,2) to numeric(12,2)), and
 * then followed; otherwise ingest stops naming it. */
static int retype(struct follower *f, const struct source_table *t, struct source_column *col,
                  const struct pgo_column *now)
{
    struct store_column_type type;
    char why[200];
    if (pgvalue_store_type(now->type_oid, now->typmod, &type, why, sizeof why) == 0 &&
        type.type == col->type.type && type.scale == col->type.scale) {
        log_info("column \"%s\" of table %s changed type (OID %u to %u); its values keep their "
                 "codes, so Straum follows it", col->name, t->qualified, col->declared_oid,
                 now->type_oid);
        col->type_oid = col->declared_oid = now->type_oid;
        col->typmod = now->typmod;
        return 0;
    }
    return fail(f, "column \"%s\" of table %s changed type (OID %u to %u) and its values would "
                   "change meaning in the store; rerun with --rebuild to reload it", col->name,
                t->qualified, col->declared_oid, now->type_oid);
}

static int on_relation(struct follower *f, const struct pgo_message *m)
{
    struct source_table *t = source_by_relid(f->src, m->relid);
    const char *nsp = m->nspname[0] ? m->nspname : "pg_catalog";
    if (!t) {
        if (source_by_name(f->src, nsp, m->relname))
            return fail(f, "table %s.%s was dropped and created again (its OID changed); the "
                           "store cannot follow it: rerun with --rebuild", nsp, m->relname);
        return 0; /* not a table the views read */
    }
    int *map = realloc(t->relmap, sizeof *map * (size_t)(m->ncols + 1));
    if (!map)
        return fail(f, "out of memory");
    t->relmap = map;
    t->nrelmap = m->ncols;
    for (int i = 0; i < m->ncols; i++)
        map[i] = -1;
    for (int c = 0; c < t->ncols; c++) {
        int found = -1;
        for (int i = 0; i < m->ncols && found < 0; i++)
            if (strcmp(m->columns[i].name, t->cols[c].name) == 0)
                found = i;
        if (found < 0)
            return fail(f, "column \"%s\" of table %s is gone upstream; the views need it: "
                           "change the views and rerun with --rebuild", t->cols[c].name,
                        t->qualified);
        if (m->columns[found].type_oid != t->cols[c].declared_oid &&
            retype(f, t, &t->cols[c], &m->columns[found]))
            return -1;
        map[found] = c;
    }
    t->replident = m->replident;
    t->relation_seen = true;
    return 0;
}

/* ---- Changes ---------------------------------------------------------------------- */

/* Maps a tuple onto the table's columns. Columns not sent ('u') are taken
 * from base when given. */
static int tuple_row(struct follower *f, const struct source_table *t, const struct pgo_tuple *tup,
                     const struct row_value *base, struct row_value *row)
{
    if (!t->relation_seen || tup->ncols != t->nrelmap)
        return fail(f, "a change to %s arrived without a matching Relation message",
                    t->qualified);
    for (int c = 0; c < t->ncols; c++)
        row[c] = (struct row_value){.missing = true};
    for (int i = 0; i < tup->ncols; i++) {
        int c = t->relmap[i];
        if (c < 0)
            continue;
        const struct pgo_value *v = &tup->values[i];
        if (v->kind == 'u')
            row[c] = base ? base[c] : (struct row_value){.missing = true};
        else
            row[c] = (struct row_value){v->kind == 'n', false, v->kind == 'b', v->data, v->len};
    }
    return 0;
}

static int need_full(struct follower *f, const struct source_table *t, char old_kind)
{
    if (old_kind == 'O')
        return 0;
    return fail(f, "table %s has REPLICA IDENTITY %s; Straum needs the old row of every update "
                   "and delete: ALTER TABLE %s REPLICA IDENTITY FULL",
                t->qualified, t->replident == 'd' ? "DEFAULT" : t->replident == 'n' ? "NOTHING"
                                                   : t->replident == 'i' ? "USING INDEX" : "?",
                t->qualified);
}

static int on_change(struct follower *f, const struct pgo_message *m)
{
    struct source_table *t = source_by_relid(f->src, m->relid);
    if (!t)
        return 0;
    struct row_value *old_row = calloc((size_t)t->ncols + 1, sizeof *old_row);
    struct row_value *new_row = calloc((size_t)t->ncols + 1, sizeof *new_row);
    int rc = old_row && new_row ? 0 : fail(f, "out of memory");
    bool has_old = m->old_kind == 'O' || m->old_kind == 'K';
    if (rc == 0 && has_old)
        rc = tuple_row(f, t, &m->old_tuple, NULL, old_row);
    if (rc == 0 && m->kind != PGO_DELETE)
        rc = tuple_row(f, t, &m->new_tuple, has_old ? old_row : NULL, new_row);
    if (rc == 0 && t->nfacts && m->kind != PGO_INSERT)
        rc = need_full(f, t, m->old_kind);
    if (rc == 0 && t->nfacts)
        rc = rows_apply_fact_change(f->st, t, m->kind != PGO_INSERT ? old_row : NULL,
                                    m->kind != PGO_DELETE ? new_row : NULL, f->err, f->errlen);
    if (rc == 0 && t->ndims) {
        bool drop_old = m->kind == PGO_DELETE ||
                        (m->kind == PGO_UPDATE && has_old && rows_dim_key_changed(t, old_row, new_row));
        if (drop_old && !has_old)
            rc = fail(f, "a delete from dim %s arrived without its key; set REPLICA IDENTITY FULL",
                      t->qualified);
        if (rc == 0 && drop_old)
            rc = rows_delete_dim(f->st, t, old_row, f->err, f->errlen);
        if (rc == 0 && m->kind != PGO_DELETE)
            rc = rows_put_dim(f->st, t, new_row, f->err, f->errlen);
    }
    free(old_row);
    free(new_row);
    f->g.rows++;
    f->g.batch.changes[m->kind == PGO_INSERT ? CHANGE_INSERT
                       : m->kind == PGO_UPDATE ? CHANGE_UPDATE
                                               : CHANGE_DELETE]++;
    return rc;
}

static int on_truncate(struct follower *f, const struct pgo_message *m)
{
    struct store_error serr;
    for (int i = 0; i < m->nrelids; i++) {
        struct source_table *t = source_by_relid(f->src, m->relids[i]);
        for (int k = 0; t && k < t->nfacts; k++)
            if (store_truncate_view(f->st, t->facts[k].view, &serr))
                return fail(f, "%s", serr.message);
        for (int k = 0; t && k < t->ndims; k++)
            if (store_projection_truncate(f->st, t->dims[k].view, t->dims[k].join, &serr))
                return fail(f, "%s", serr.message);
        if (t) {
            f->g.batch.changes[CHANGE_TRUNCATE]++;
            log_info("TRUNCATE of %s applied", t->qualified);
        }
    }
    return 0;
}

/* Applies one data message (from the wire or a spool). */
static int apply_message(struct follower *f, const struct pgo_message *m)
{
    switch (m->kind) {
    case PGO_INSERT:
    case PGO_UPDATE:
    case PGO_DELETE:
        return on_change(f, m);
    case PGO_TRUNCATE:
        return on_truncate(f, m);
    default:
        return 0;
    }
}


/* A whole transaction has been applied to the pending changes. */
static void committed(struct follower *f, uint64_t end_lsn, int64_t pg_time)
{
    f->applied_lsn = end_lsn;
    f->applied_time = pg_time + PG_EPOCH_OFFSET_US;
    f->g.dirty = true;
    f->g.batch.txns++;
    imetrics_applied_lsn(end_lsn);
}

/* ---- Streamed transactions ---------------------------------------------------------- */

static struct streamed_txn *stream_for(struct follower *f, uint32_t xid, bool create)
{
    for (int i = 0; i < f->nstreams; i++)
        if (f->streams[i].xid == xid)
            return &f->streams[i];
    if (!create || f->nstreams == MAX_STREAMS)
        return NULL;
    struct streamed_txn *s = &f->streams[f->nstreams++];
    memset(s, 0, sizeof *s);
    s->xid = xid;
    return s;
}

static void stream_drop(struct follower *f, struct streamed_txn *s)
{
    uint64_t held = spool_bytes(&s->spool);
    f->spool_total = f->spool_total > held ? f->spool_total - held : 0;
    imetrics_spool_bytes(f->spool_total);
    spool_free(&s->spool);
    free(s->aborted);
    *s = f->streams[--f->nstreams];
}

struct replay {
    struct follower *f;
    struct streamed_txn *s;
};

static int replay_one(void *ctx, const uint8_t *msg, size_t len)
{
    struct replay *r = ctx;
    struct pgo_message m;
    char why[256];
    if (pgo_decode(msg, len, r->f->proto, true, &m, why, sizeof why))
        return fail(r->f, "replaying a streamed transaction: %s", why);
    bool skip = false;
    for (int i = 0; i < r->s->naborted && !skip; i++)
        skip = m.xid == r->s->aborted[i];
    int rc = skip ? 0 : apply_message(r->f, &m);
    pgo_message_free(&m);
    return rc;
}

/* A change inside a stream waits, raw, in its transaction's spool. */
static int on_stream_message(struct follower *f, const uint8_t *raw, size_t len)
{
    struct streamed_txn *s = stream_for(f, f->stream_xid, true);
    if (!s)
        return fail(f, "more than %d streamed transactions at once", MAX_STREAMS);
    uint64_t before = spool_bytes(&s->spool);
    if (spool_append(&s->spool, raw, len, f->err, f->errlen))
        return -1;
    f->spool_total += spool_bytes(&s->spool) - before;
    imetrics_spool_bytes(f->spool_total);
    return 0;
}

static int on_stream_commit(struct follower *f, const struct pgo_message *m)
{
    struct streamed_txn *s = stream_for(f, m->xid, false);
    pace_applying(&f->g, f->st, behind(f));
    if (s) {
        struct replay r = {f, s};
        uint64_t bytes = spool_bytes(&s->spool);
        if (spool_replay(&s->spool, replay_one, &r, f->err, f->errlen))
            return -1;
        struct logfmt_line l;
        char msg[120];
        snprintf(msg, sizeof msg, "applied a streamed transaction of %llu spooled bytes",
                 (unsigned long long)bytes);
        if (logfmt_begin(&l, bytes > SPOOL_MEMORY_BYTES ? LOGFMT_INFO : LOGFMT_DEBUG,
                            msg)) {
            char text[32];
            logfmt_str(&l, "lsn", lsn_text(m->end_lsn, text));
            logfmt_int(&l, "spooled_bytes", (int64_t)bytes);
            logfmt_int(&l, "xid", m->xid);
            logfmt_end(&l);
        }
        stream_drop(f, s);
    }
    committed(f, m->end_lsn, m->timestamp);
    return 0;
}

static int on_stream_abort(struct follower *f, const struct pgo_message *m)
{
    struct streamed_txn *s = stream_for(f, m->xid, false);
    if (!s)
        return 0;
    if (m->subxid == m->xid || m->subxid == 0) {
        stream_drop(f, s);
        return 0;
    }
    uint32_t *a = realloc(s->aborted, sizeof *a * (size_t)(s->naborted + 1));
    if (!a)
        return fail(f, "out of memory");
    s->aborted = a;
    a[s->naborted++] = m->subxid;
    return 0;
}

/* ---- Messages ------------------------------------------------------------------------ */

static int on_message(struct follower *f, const uint8_t *raw, size_t len)
{
    struct pgo_message m;
    char why[256];
    if (pgo_decode(raw, len, f->proto, f->in_stream, &m, why, sizeof why))
        return fail(f, "decoding a pgoutput message: %s", why);
    int rc = 0;
    switch (m.kind) {
    case PGO_BEGIN:
        f->in_txn = true;
        pace_applying(&f->g, f->st, behind(f));
        break;
    case PGO_COMMIT:
        f->in_txn = false;
        committed(f, m.end_lsn, m.timestamp);
        break;
    case PGO_RELATION:
        rc = on_relation(f, &m);
        break;
    case PGO_STREAM_START:
        f->in_stream = true;
        f->stream_xid = m.xid;
        break;
    case PGO_STREAM_STOP:
        f->in_stream = false;
        break;
    case PGO_STREAM_COMMIT:
        rc = on_stream_commit(f, &m);
        break;
    case PGO_STREAM_ABORT:
        rc = on_stream_abort(f, &m);
        break;
    case PGO_INSERT:
    case PGO_UPDATE:
    case PGO_DELETE:
    case PGO_TRUNCATE:
        rc = f->in_stream ? on_stream_message(f, raw, len) : apply_message(f, &m);
        break;
    default: /* Origin, Type, Message, two-phase: nothing to keep */
        break;
    }
    pgo_message_free(&m);
    return rc;
}

static int on_frame(struct follower *f, const uint8_t *buf, size_t len)
{
    struct wal_frame fr;
    char why[256];
    if (wal_frame_decode(buf, len, &fr, why, sizeof why))
        return fail(f, "decoding the replication stream: %s", why);
    f->last_contact = now_usec();
    if (fr.wal_end > f->server_lsn) {
        f->server_lsn = fr.wal_end;
        imetrics_source_lsn(fr.wal_end);
    }
    if (fr.kind == 'k') {
        /* Idle and nothing in flight: the sent position is safe to store.
         * Stored also when it has not moved, once a second, so that the
         * store's time of contact (serve's lag on an idle database) stays
         * fresh while PostgreSQL writes nothing. */
        bool idle = !f->in_txn && !f->g.dirty && f->nstreams == 0;
        bool moved = fr.wal_end > f->g.stored_lsn;
        if (idle && (moved || now_usec() - f->g.last_store >= 1000000) &&
            store_position_now(f, moved ? fr.wal_end : f->g.stored_lsn, f->applied_time))
            return -1;
        return fr.reply_requested ? send_feedback(f, false) : 0;
    }
    f->last_data = f->last_contact;
    if (fr.wal_start > f->received_lsn)
        f->received_lsn = fr.wal_start;
    return on_message(f, fr.payload, fr.payload_len);
}

/* ---- The connection ------------------------------------------------------------------- */

static bool fatal_server_error(const char *msg)
{
    return strstr(msg, "does not exist") || strstr(msg, "publication") ||
           strstr(msg, "permission denied") || strstr(msg, "can only be used");
}

/* The walsender's error when a change needs a publication that was
 * dropped: "publication "straum" does not exist". */
static bool publication_gone(const char *msg)
{
    return strstr(msg, "publication") && strstr(msg, "does not exist");
}

static int start(struct follower *f)
{
    if (!(f->repl = source_connect(f->opt->source, true, f->err, f->errlen)))
        return 1;
    int version = PQserverVersion(f->repl);
    f->proto = version >= 140000 ? 2 : 1;
    f->binary = version >= 140000;
    char sql[1024], lsn[32], slot[200], pub[200];
    snprintf(slot, sizeof slot, "\"%s\"", f->opt->slot);
    snprintf(pub, sizeof pub, "%s", f->opt->publication);
    snprintf(sql, sizeof sql,
             "START_REPLICATION SLOT %s LOGICAL %s (proto_version '%d', publication_names "
             "'\"%s\"'%s)",
             slot, lsn_text(f->g.stored_lsn, lsn), f->proto, pub,
             f->binary ? ", binary 'true', streaming 'on'" : "");
    PGresult *r = PQexec(f->repl, sql);
    if (PQresultStatus(r) != PGRES_COPY_BOTH) {
        fail(f, "START_REPLICATION failed: %s", PQerrorMessage(f->repl));
        PQclear(r);
        if (strstr(f->err, "replication slot") && strstr(f->err, "does not exist"))
            fail(f, "the replication slot \"%s\" does not exist any more, so the changes since "
                    "%s are lost to Straum; rerun with --rebuild to load the tables again",
                 f->opt->slot, lsn_text(f->g.stored_lsn, lsn));
        else if (publication_gone(f->err))
            upstream_publication_gone(f->opt, f->g.stored_lsn, f->err, f->errlen);
        return fatal_server_error(f->err) ? -1 : 1;
    }
    PQclear(r);
    if (!(f->rx = receiver_start(f->repl, RECEIVER_MAX_BYTES, f->err, f->errlen)))
        return -1;
    struct logfmt_line l;
    char msg[200];
    snprintf(msg, sizeof msg, "streaming from %s (pgoutput protocol %d%s)", lsn, f->proto,
             f->binary ? ", binary, streaming" : "");
    if (logfmt_begin(&l, LOGFMT_INFO, msg)) {
        logfmt_str(&l, "lsn", lsn);
        logfmt_str(&l, "slot", f->opt->slot);
        logfmt_int(&l, "protocol", f->proto);
        logfmt_str(&l, "binary", f->binary ? "true" : "false");
        logfmt_end(&l);
    }
    imetrics_state(INGEST_FOLLOWING);
    return 0;
}

static bool caught_up(const struct follower *f)
{
    return f->opt->exit_when_caught_up && !f->g.dirty && !f->in_txn &&
           f->g.stored_lsn >= f->target_lsn;
}

/* How often the follower asks the catalog whether the tables and the
 * publication are still there (upstream.c): a dropped one sends nothing. */
#define UPSTREAM_CHECK_US 2000000

/* Between transactions: stops (-1) when a table or the publication is gone,
 * after storing the whole transactions applied before; 1 to reconnect when
 * the catalog cannot be asked. */
static int check_upstream(struct follower *f)
{
    f->last_check = now_usec();
    int rc = upstream_check(f->catalog, f->src, f->opt, true, f->g.stored_lsn, f->err, f->errlen);
    if (rc >= 0)
        return rc;
    if (!f->g.dirty)
        return -1;
    if (maybe_store(f, true, false)) /* so the message names the position stored */
        return -1;
    rc = upstream_check(f->catalog, f->src, f->opt, true, f->g.stored_lsn, f->err, f->errlen);
    return rc == 1 ? 1 : -1; /* 0: err still holds the first answer */
}

/* Folds delta blocks once the stream is idle (internal.h, FOLD_IDLE_US). */
static int compact_when_idle(struct follower *f, int64_t now)
{
    if (!f->g.compact || f->in_txn || f->g.dirty || f->nstreams ||
        now - f->last_data < FOLD_IDLE_US)
        return 0;
    struct store_error serr;
    return pace_fold_slice(f->st, f->rx, &f->g.compact, &serr) ? store_failed(f, &serr) : 0;
}

/* Housekeeping between messages: commits, feedback, folding delta blocks
 * and asking for the server's position when idle, checking upstream. -1
 * fatal, 1 reconnect. */
static int tick(struct follower *f, bool nothing_came)
{
    if (maybe_store(f, false, nothing_came))
        return -1;
    int64_t now = now_usec();
    if (!f->in_txn && now - f->last_check > UPSTREAM_CHECK_US) {
        int rc = check_upstream(f);
        if (rc)
            return rc;
    }
    if (compact_when_idle(f, now))
        return -1;
    /* How often an idle follower asks where the server is: often enough that
     * the stored position (and the lag serve reports) follows the server
     * within a few group commits, never more than once a second. */
    int64_t ask_every = 20 * f->opt->commit_interval_us;
    ask_every = ask_every < 50000 ? 50000 : ask_every > 1000000 ? 1000000 : ask_every;
    bool idle = !f->in_txn && now - f->last_data > 20000;
    if (idle && now - f->last_ask > ask_every)
        return send_feedback(f, true);
    if (now - f->last_feedback > 1000000)
        return send_feedback(f, false);
    return 0;
}

static int loop(struct follower *f)
{
    for (;;) {
        if (ingest_stop_requested || caught_up(f))
            return 0;
        char *buf, why[600];
        size_t len;
        int n = receiver_next(f->rx, FOLLOW_WAIT_MS, &buf, &len, why, sizeof why);
        if (n > 0) {
            int rc = on_frame(f, (const uint8_t *)buf, len);
            PQfreemem(buf);
            /* A keepalive's reply that cannot be sent is a lost connection,
             * not a fatal error: a PostgreSQL shutting down asks for one and
             * closes the socket (found by tests/e2e/test_chaos.c, where
             * ingest stopped on a PostgreSQL restart instead of reconnecting). */
            if (rc)
                return strstr(f->err, "sending feedback") ? 1 : -1;
        } else if (n < 0) {
            fail(f, "the replication stream ended: %s", why);
            if (publication_gone(f->err)) /* decoding cannot go past it: stop */
                return upstream_publication_gone(f->opt, f->g.stored_lsn, f->err, f->errlen);
            return 1;
        }
        int rc = tick(f, n == 0);
        if (rc)
            return rc > 0 || strstr(f->err, "sending feedback") ? 1 : -1;
    }
}

static uint64_t current_wal_lsn(const struct ingest_options *opt, char *err, size_t errlen)
{
    PGconn *c = source_connect(opt->source, false, err, errlen);
    if (!c)
        return 0;
    uint64_t lsn = source_wal_end(c);
    PQfinish(c);
    return lsn;
}

int stream_follow(const struct ingest_options *opt, struct source *src, struct store *st,
                  char *err, size_t errlen)
{
    struct follower f = {.opt = opt, .src = src, .st = st, .err = err, .errlen = errlen};
    pace_begin(&f.g);
    struct store_read *r;
    struct store_catalog cat;
    struct store_error serr;
    if (store_read_begin(st, &r, &serr) || store_read_catalog(r, &cat, &serr)) {
        snprintf(err, errlen, "%s", serr.message);
        return -1;
    }
    store_read_end(r);
    f.g.stored_lsn = f.applied_lsn = cat.position.lsn;
    f.applied_time = cat.position.commit_time;
    imetrics_position(&cat.position);
    imetrics_applied_lsn(cat.position.lsn);
    if (opt->exit_when_caught_up && !(f.target_lsn = current_wal_lsn(opt, err, errlen)))
        return 1;
    for (int i = 0; i < src->ntables; i++)
        src->tables[i].relation_seen = false; /* a new stream sends Relations again */
    f.g.last_store = f.last_feedback = f.last_data = now_usec();
    if (!(f.catalog = source_connect(opt->source, false, err, errlen)))
        return 1;
    int rc = check_upstream(&f);
    if (rc == 0)
        rc = start(&f);
    if (rc == 0)
        rc = loop(&f);
    /* Keep what is whole; drop a transaction cut off mid-way. */
    if (f.in_txn || rc < 0)
        store_rollback(st);
    /* Only a failed store commit is fatal here: the feedback after it goes
     * over the connection that was just lost (PostgreSQL restarting), and
     * the store holds the batch either way (found by tests/e2e/test_chaos.c:
     * ingest stopped on a PostgreSQL restart instead of reconnecting). */
    else if (maybe_store(&f, true, false) && !strstr(err, "sending feedback"))
        rc = -1;
    else if (f.rx && !receiver_ended(f.rx))
        send_feedback(&f, false);
    for (int i = f.nstreams - 1; i >= 0; i--)
        stream_drop(&f, &f.streams[i]);
    receiver_stop(f.rx);
    PQfinish(f.repl);
    PQfinish(f.catalog);
    /* A full filesystem may get room back: the server resends from the
     * stored position. */
    if (rc < 0 && f.g.failure == STORE_ERR_NO_SPACE && !opt->exit_when_caught_up)
        return 2;
    return rc;
}
