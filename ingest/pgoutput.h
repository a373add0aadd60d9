/* pgoutput.h -- decoding the bytes PostgreSQL's logical replication sends:
 * the streaming-replication framing (XLogData 'w', keepalive 'k'), the
 * standby status update we answer with ('r'), and pgoutput's messages
 * (protocol versions 1 to 4: Begin, Commit, Origin, Relation, Type, Insert,
 * Update, Delete, Truncate, Message, the stream messages of protocol 2 and
 * the two-phase messages of protocol 3).
 *
 * Pure functions over buffers. Every read is bounds-checked: a truncated or
 * hostile message yields an error, never a crash. Strings and tuple data
 * point into the caller's buffer (the protocol NUL-terminates strings; the
 * decoder checks the NUL is inside the buffer; the one exception is an empty
 * namespace, which the protocol uses for pg_catalog and the decoder returns
 * as the static string "pg_catalog"), arrays are malloc'd and released by
 * pgo_message_free. Counts are limited before anything is allocated
 * (PGO_MAX_COLUMNS, PGO_MAX_RELIDS). Bytes left over after a message are an
 * error. Private to ingest/. */
#ifndef STRAUM_INGEST_PGOUTPUT_H
#define STRAUM_INGEST_PGOUTPUT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* ---- Streaming replication framing (inside CopyData) ------------------- */

struct wal_frame {
    char kind;               /* 'w' XLogData, 'k' primary keepalive */
    uint64_t wal_start;      /* 'w' */
    uint64_t wal_end;        /* 'w', 'k': the server's current WAL end */
    int64_t send_time;       /* µs since 2000-01-01, as PostgreSQL sends it */
    bool reply_requested;    /* 'k' */
    const uint8_t *payload;  /* 'w': the pgoutput message */
    size_t payload_len;
};

/* Decodes one CopyData payload of START_REPLICATION: 'w' (Int64 start,
 * Int64 end, Int64 send time, then the payload: everything after) or 'k'
 * (Int64 end, Int64 send time, Byte1 reply requested; nothing after). Any
 * nonzero reply byte counts as true. Returns 0, or -1 with a message in err
 * (out is then zeroed). */
int wal_frame_decode(const uint8_t *buf, size_t len, struct wal_frame *out, char *err,
                     size_t errlen);

/* The inverse of wal_frame_decode, for tests and the fuzz corpus: writes
 * the frame into out (cap bytes, may be 0) and returns the bytes needed, or
 * 0 when kind is neither 'w' nor 'k'. */
size_t wal_frame_encode(const struct wal_frame *f, uint8_t *out, size_t cap);

/* Standby status update ('r'): 34 bytes into out. Times are µs since
 * 2000-01-01. */
#define WAL_STATUS_BYTES 34
void wal_status_encode(uint8_t out[WAL_STATUS_BYTES], uint64_t written, uint64_t flushed,
                       uint64_t applied, int64_t now, bool reply_requested);

/* ---- pgoutput messages --------------------------------------------------- */

#define PGO_MAX_COLUMNS 1600       /* per Relation and per tuple (PostgreSQL's limit) */
#define PGO_MAX_RELIDS (1 << 20)   /* per Truncate */

enum pgo_kind {
    PGO_BEGIN = 'B',
    PGO_COMMIT = 'C',
    PGO_ORIGIN = 'O',
    PGO_RELATION = 'R',
    PGO_TYPE = 'Y',
    PGO_INSERT = 'I',
    PGO_UPDATE = 'U',
    PGO_DELETE = 'D',
    PGO_TRUNCATE = 'T',
    PGO_MESSAGE = 'M',
    PGO_STREAM_START = 'S',
    PGO_STREAM_STOP = 'E',
    PGO_STREAM_COMMIT = 'c',
    PGO_STREAM_ABORT = 'A',
    PGO_BEGIN_PREPARE = 'b',
    PGO_PREPARE = 'P',
    PGO_COMMIT_PREPARED = 'K',
    PGO_ROLLBACK_PREPARED = 'r',
    PGO_STREAM_PREPARE = 'p',
};

struct pgo_column {
    uint8_t flags;           /* 1: part of the replica identity key */
    const char *name;
    uint32_t type_oid;
    int32_t typmod;
};

/* One column of a tuple: 'n' NULL, 'u' unchanged TOASTed value (not sent),
 * 't' text, 'b' binary (the type's send format). */
struct pgo_value {
    char kind;
    const uint8_t *data;
    uint32_t len;
};

struct pgo_tuple {
    int ncols;
    struct pgo_value *values;
};

struct pgo_message {
    enum pgo_kind kind;
    /* Inside a stream (protocol >= 2, between Stream Start and Stop), data
     * messages carry the xid of the (sub)transaction they belong to. */
    uint32_t xid;

    /* Begin: final_lsn, timestamp, xid. Commit / Stream Commit: flags,
     * lsn (commit LSN), end_lsn, timestamp (and xid for Stream Commit).
     * Origin: lsn, origin_name. Stream Start: xid, first_segment.
     * Stream Abort: xid, subxid; with protocol 4 and streaming = parallel
     * also lsn (abort LSN) and timestamp (abort time). The decoder accepts
     * both v4 forms (8 or 24 bytes after the kind); pgo_encode writes the
     * long form when protocol_version >= 4 and lsn or timestamp is nonzero.
     *
     * Two-phase (protocol >= 3), all with xid and gid:
     *   Begin Prepare:     lsn (prepare LSN), end_lsn, timestamp (prepare time).
     *   Prepare, Stream Prepare: flags, lsn (prepare LSN), end_lsn, timestamp.
     *   Commit Prepared:   flags, lsn (commit LSN), end_lsn, timestamp (commit time).
     *   Rollback Prepared: flags, lsn (prepare end LSN), end_lsn (rollback end
     *                      LSN), prepare_time, timestamp (rollback time). */
    uint64_t lsn, end_lsn;
    int64_t timestamp;       /* µs since 2000-01-01 */
    uint8_t flags;
    uint32_t subxid;
    const char *origin_name;
    bool first_segment;      /* Stream Start (any nonzero byte is true) */
    const char *gid;         /* two-phase messages: the global transaction id */
    int64_t prepare_time;    /* Rollback Prepared */

    /* Relation: relid, namespace, name, replica identity, columns.
     * Type: relid holds the type OID, nspname and relname its names. */
    uint32_t relid;
    const char *nspname, *relname;
    char replident;          /* 'd' default, 'n' nothing, 'f' full, 'i' index */
    int ncols;
    struct pgo_column *columns;

    /* Insert: new_tuple. Update: old_kind 'K' (key) or 'O' (full old row)
     * or 0 when not sent, old_tuple, new_tuple. Delete: old_kind, old_tuple. */
    char old_kind;
    struct pgo_tuple old_tuple, new_tuple;

    /* Truncate: options (1 CASCADE, 2 RESTART IDENTITY), relids. */
    uint8_t truncate_options;
    int nrelids;
    uint32_t *relids;

    /* Message: flags (1 transactional), lsn, prefix, content. */
    const char *prefix;
    const uint8_t *content;
    uint32_t content_len;
};

/* Decodes one pgoutput message. in_stream tells whether we are between
 * Stream Start and Stream Stop (then the data messages Relation, Type,
 * Insert, Update, Delete, Truncate and Message begin with an xid; it needs
 * protocol_version >= 2). Stream messages need protocol >= 2, two-phase
 * messages protocol >= 3. out is overwritten (free a previous message
 * first). Returns 0, or -1 with a message in err naming the message and the
 * field, e.g. "Relation message: truncated at column 3 name" (columns count
 * from 1); on failure out holds no allocations and is zeroed, so
 * pgo_message_free on it is harmless. */
int pgo_decode(const uint8_t *buf, size_t len, int protocol_version, bool in_stream,
               struct pgo_message *out, char *err, size_t errlen);

/* Frees the arrays and zeroes *m. Safe on a zeroed, freed or partially
 * decoded message. */
void pgo_message_free(struct pgo_message *m);

/* Encoders, the inverse of pgo_decode, for tests and the fuzz corpus:
 * writes the message into out (cap bytes, may be 0 to ask for the size);
 * returns the bytes needed, or 0 when pgo_decode could not read the result
 * back (unknown kind or tuple value kind, a kind or in_stream the protocol
 * version lacks, a count over its limit, Update/Delete old_kind invalid).
 * NULL strings are written as "", "pg_catalog" namespaces as "" (as
 * PostgreSQL does). */
size_t pgo_encode(const struct pgo_message *m, int protocol_version, bool in_stream,
                  uint8_t *out, size_t cap);

/* "Begin", "Stream Commit", ... for messages and logs; NULL for a byte that
 * is no pgoutput message kind. */
const char *pgo_kind_name(int kind);

/* Whether two messages carry the same values in every field: strings,
 * tuple data and content compared by content, not by pointer. For tests
 * and the fuzz target's round-trip check. */
bool pgo_message_equal(const struct pgo_message *a, const struct pgo_message *b);

#endif
