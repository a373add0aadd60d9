/* pg.h -- what the PostgreSQL front door's files share (private to serve/).
 *
 * straum-serve speaks the PostgreSQL frontend/backend protocol 3.0 beside
 * HTTP (SPEC.md §6.3), over the same engine, store, limits and token:
 *   pg_frame.c    message framing: the startup packet and regular messages
 *                 parsed from bytes (what the fuzz target drives), and
 *                 backend messages written into a buffer
 *   pg_auth.c     the startup exchange: SSL/GSSENC refused, parameters,
 *                 trust or SCRAM-SHA-256 with the token as the password
 *   pg_types.c    values out (text and binary) and parameters in
 *   pg_session.c  the statements drivers send that are not asks (SET,
 *                 SHOW, BEGIN, ...) and the error mapping to SQLSTATEs
 *   pg_query.c    simple and extended query over the engine
 *   pg_server.c   the listener, the startup thread, the pool of workers
 *                 that answers messages, timeouts, the connection limit,
 *                 CancelRequest
 *
 * Invariants:
 *   1. One thread at a time touches a connection's state (its startup
 *      thread, then the pool worker that won its slot: pg_server.c
 *      P1); a CancelRequest (another connection) sets only the atomic flag.
 *   2. Every message read is bounded (PG_MAX_MESSAGE) before a byte of its
 *      body is allocated, so a length field cannot make us allocate.
 *   3. After an error in the extended protocol, messages up to Sync are
 *      read and dropped (pg_conn.skip_to_sync), as PostgreSQL does. */
#ifndef STRAUM_SERVE_PG_H
#define STRAUM_SERVE_PG_H

#include "engine/engine.h"

#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* PostgreSQL's own bound on a startup packet (MAX_STARTUP_PACKET_LENGTH in
 * src/include/libpq/pqcomm.h): longer ones are garbage. */
#define PG_MAX_STARTUP 10000
/* The largest regular message: an ask is at most 64 KiB and its
 * parameters few; 1 MiB matches HTTP's default --max-body. A longer
 * length field is answered 54000 and the connection closed. */
#define PG_MAX_MESSAGE (1u << 20)
/* Prepared statements and portals one connection may hold at once: a
 * Parse flood beyond it is refused with 53400 (configuration limit). */
#define PG_MAX_STATEMENTS 1000
#define PG_MAX_PORTALS 1000
/* Parameters and result formats in one Bind (the engine's max_params). */
#define PG_MAX_PARAMS 256

#define PG_PROTOCOL_3 196608    /* 3.0 */
#define PG_SSL_REQUEST 80877103
#define PG_GSSENC_REQUEST 80877104
#define PG_CANCEL_REQUEST 80877102

/* ---- Reading bytes (pg_frame.c) ------------------------------------------- */

struct pg_reader {
    const unsigned char *p;
    size_t n;
    bool bad; /* read past the end, or a string without its NUL */
};

int16_t pg_get_int16(struct pg_reader *r);
int32_t pg_get_int32(struct pg_reader *r);
/* A NUL-terminated string in place; "" and bad set when it has no NUL. */
const char *pg_get_cstr(struct pg_reader *r);
/* n bytes in place; NULL and bad set when fewer remain. */
const unsigned char *pg_get_bytes(struct pg_reader *r, size_t n);

/* The startup packet's body (after its length): the code, and for 3.0 the
 * name/value pairs. */
enum { PG_MAX_STARTUP_PARAMS = 64 };
struct pg_startup {
    int32_t code;                 /* PG_PROTOCOL_3, PG_SSL_REQUEST, ... */
    int32_t cancel_pid, cancel_key;
    const char *names[PG_MAX_STARTUP_PARAMS], *values[PG_MAX_STARTUP_PARAMS];
    int nparams;
};
/* 0, or -1 with why (a message for the client) when the packet is not one
 * PostgreSQL would accept. Strings point into body. */
int pg_parse_startup(const unsigned char *body, size_t len, struct pg_startup *out, char *why,
                     size_t whylen);
/* A startup parameter's value, or NULL. */
const char *pg_startup_param(const struct pg_startup *s, const char *name);

/* A regular frontend message, parsed; strings and bytes point into the
 * body, arrays (fmts, params) too where the wire order allows, else into
 * the fixed arrays. */
struct pg_bind_param {
    const unsigned char *data; /* NULL: SQL NULL */
    int32_t len;
};
struct pg_message {
    char type;
    union {
        struct { const char *text; } query;                        /* Q */
        struct {                                                   /* P */
            const char *name, *text;
            int nparams;
            uint32_t oids[PG_MAX_PARAMS];
        } parse;
        struct {                                                   /* B */
            const char *portal, *statement;
            int nformats, nparams, nresults;
            int16_t formats[PG_MAX_PARAMS];
            struct pg_bind_param params[PG_MAX_PARAMS];
            int16_t results[PG_MAX_PARAMS];
        } bind;
        struct { char kind; const char *name; } target;            /* D, C */
        struct { const char *portal; int32_t max_rows; } execute;  /* E */
        struct { const unsigned char *data; size_t len; } raw;     /* p */
    } u;
};
/* Parses a message body of type t. 0, or -1 with why (08P01 protocol
 * violation, or 54000 when over a PG_MAX_* bound: *sqlstate says which). */
int pg_parse_message(char t, const unsigned char *body, size_t len, struct pg_message *m,
                     const char **sqlstate, char *why, size_t whylen);

/* ---- Writing messages (pg_frame.c) ------------------------------------------ */

/* Starts a backend message of type t in b; pg_msg_end writes its length. */
size_t pg_msg_begin(struct buf *b, char t);
void pg_msg_end(struct buf *b, size_t start);
void pg_put_int16(struct buf *b, int16_t v);
void pg_put_int32(struct buf *b, int32_t v);
void pg_put_cstr(struct buf *b, const char *s);

/* ErrorResponse (or NoticeResponse with severity "NOTICE"): fields S, V,
 * C, M, and H (hint) and P (1-based character position) when given. */
void pg_put_error(struct buf *b, const char *severity, const char *sqlstate, const char *message,
                  const char *hint, int position);
/* An ERROR with a printf-formatted message (at most 511 bytes). */
void pg_put_errorf(struct buf *b, const char *sqlstate, const char *hint, int position,
                   const char *fmt, ...) __attribute__((format(printf, 5, 6)));
void pg_put_verrorf(struct buf *b, const char *sqlstate, const char *hint, int position,
                    const char *fmt, va_list ap) __attribute__((format(printf, 5, 0)));
void pg_put_parameter_status(struct buf *b, const char *name, const char *value);

/* ---- Statement text (pg_frame.c) --------------------------------------------- */

/* The first byte at or after i that is not white space or a comment (--
 * to the line's end, slash-star to star-slash), as PostgreSQL's lexer
 * skips them; len when none. */
size_t pg_skip_blank(const char *s, size_t i, size_t len);
/* The characters (not bytes) of UTF-8 text s[0, n): an error's position
 * counts them. */
int pg_chars(const char *s, size_t n);
void pg_put_ready(struct buf *b, char status);
void pg_put_command_complete(struct buf *b, const char *tag);

/* ---- Types (pg_types.c) ------------------------------------------------------ */

/* The value's text as PostgreSQL writes it (timestamps with the session
 * offset, "2024-01-17 00:00:00-05"; floats shortest round-trip as with
 * extra_float_digits 1 and more); binary as its typsend. Appends the
 * length word and the bytes to b; -1 for NULL. */
void pg_put_value(struct buf *b, const struct answer_value *v, uint32_t oid, bool binary);
/* A parameter in the format given, for a parameter of type oid, as the
 * text the engine binds (into tmp, cap bytes). 0, or -1 with why (22P02). */
int pg_param_text(const struct pg_bind_param *p, int16_t format, uint32_t oid, char *tmp,
                  size_t cap, const char **text, size_t *len, char *why, size_t whylen);
/* typlen for RowDescription: 8, 4, 2, 1 or -1 (varlena). */
int16_t pg_type_len(uint32_t oid);
/* Whether a client-declared parameter type can stand for the inferred one
 * (0 "unspecified" always can; text and varchar stand for anything, as an
 * unknown literal would). */
bool pg_type_compatible(uint32_t declared, uint32_t inferred);

/* ---- A connection (pg_query.c, pg_session.c, pg_server.c) ------------------- */

struct pg_statement {
    char *name, *text;
    int nparams;
    uint32_t *param_oids;
    struct answer_column *cols; /* NULL: not an ask (a session statement) */
    int ncols;
    int kind;                   /* enum pg_stmt_kind */
    int refs;                   /* portals bound to it, and 1 while named or unnamed */
    bool doomed;                /* DEALLOCATE: freed once the message is done */
    struct pg_statement *next;
};

/* Rows of an executed ask a portal hands out a row limit at a time. The
 * engine gives rows one at a time to the portal's sink, which writes them
 * as DataRow messages into rows (the answer is at most max_groups rows). */
struct pg_portal {
    char *name;
    struct pg_statement *stmt; /* holds a reference */
    int nparams;
    char **param_texts;        /* NULL entries: SQL NULL */
    size_t *param_lens;
    int nresults;
    int16_t *results;          /* result formats: 0, 1, or one per column */
    bool executed;
    struct buf rows;           /* DataRow messages, whole */
    size_t *row_at;            /* offset of each row's message in rows */
    int64_t nrows, sent;
    struct pg_portal *next;
};

struct pg_server;

struct pg_conn {
    struct pg_server *srv;
    struct engine *engine;
    int fd;
    int32_t pid, secret;        /* BackendKeyData */
    atomic_bool cancel;         /* set by a CancelRequest */
    struct buf out;
    char user[64], database[64], application_name[64];
    char time_zone[64];         /* the session TimeZone: what asks read */
    char startup_time_zone[64]; /* what RESET goes back to */
    bool binary_results;        /* the running session statement's rows in binary */
    bool discard_pending;       /* DISCARD ALL: statements and portals go after this message */
    int (*flush)(struct pg_conn *c); /* writes out to the socket: 0, or -1 */
    int extra_float_digits;
    char txn;                   /* 'I' idle, 'T' in a transaction, 'E' failed */
    struct engine_snapshot *snapshot; /* pinned by BEGIN */
    bool skip_to_sync;
    struct pg_statement *statements;
    int nstatements;
    struct pg_portal *portals;
    int nportals;
    int max_groups;
};

/* What a statement that is not an ask is, once recognised (pg_session.c). */
enum pg_stmt_kind {
    PG_STMT_ASK,        /* none of the below: the engine's */
    PG_STMT_EMPTY,
    PG_STMT_SESSION,    /* SET, RESET, SHOW, BEGIN, ..., SELECT 1, version() */
    PG_STMT_CATALOG,    /* reads pg_catalog or information_schema (pg_catalog.c) */
};

/* ---- The catalog (pg_catalog.c) ----------------------------------------------- */

/* Whether a statement reads a catalog relation (pg_class, pg_attribute,
 * information_schema.tables, ...): answered by pg_catalog_run, not the
 * engine. Cheap for asks (a scan for "pg_" and "information_schema"). */
bool pg_catalog_reads(const char *text, size_t len);
enum { PG_CATALOG_SIMPLE, PG_CATALOG_DESCRIBE, PG_CATALOG_ROWS };
/* Answers a catalog statement from the engine's views: SIMPLE writes
 * RowDescription, DataRows and CommandComplete; DESCRIBE the
 * RowDescription alone; ROWS the DataRows and CommandComplete (an
 * Execute). Result formats as Bind gives them (nresults 0: text). When
 * cols_out is not NULL it gets the columns (one malloc'd block, names
 * included). base: the statement's character position in its message,
 * for an error's position. Returns 0, or -1 with an ErrorResponse written
 * (0A000 for a relation or a column it does not answer). */
int pg_catalog_run(struct pg_conn *c, const char *text, size_t len, int base, int mode,
                   int nresults, const int16_t *results, struct answer_column **cols_out,
                   int *ncols_out);
/* pg_catalog_run over the relations given (the engine's, or the fuzz
 * target's): the same contract. */
int pg_catalog_answer(struct pg_conn *c, const struct engine_relation *rels, int nrels,
                      const char *text, size_t len, int base, int mode, int nresults,
                      const int16_t *results, struct answer_column **cols_out, int *ncols_out);

/* Classifies a statement (pg_session.c). */
enum pg_stmt_kind pg_statement_kind(const char *text, size_t len);
/* Runs a session statement: writes RowDescription/DataRow (binary when
 * the portal's first result format says so, for SHOW and SELECT) and
 * CommandComplete into c->out, or an ErrorResponse. describe_only: the
 * RowDescription (or NoData) alone, for Describe. Returns 0, or -1 when it
 * wrote an error. */
int pg_session_run(struct pg_conn *c, const char *text, size_t len, bool describe_only,
                   bool send_rowdesc);
/* Whether a session statement answers a row (SHOW, SELECT). */
bool pg_session_has_rows(const char *text, size_t len);
/* The SQLSTATE of an engine error, and a hint for it (or NULL). */
const char *pg_sqlstate(const struct ask_error *err, const char **hint);
/* The 1-based character position in text of an engine error's line and
 * column, plus base (the statement's position in the message); 0 when the
 * error has no place. */
int pg_error_position(const char *text, const struct ask_error *err, int base);

/* Simple and extended query (pg_query.c): handles one message; returns 0
 * to go on, 1 after Terminate, -1 to close the connection (an error was
 * written where the client can read one). */
int pg_handle_message(struct pg_conn *c, const struct pg_message *m);
/* Frees every statement and portal, and ends a pinned snapshot. */
void pg_conn_reset(struct pg_conn *c);

/* ---- Authentication (pg_auth.c) ------------------------------------------- */

/* SCRAM-SHA-256 (RFC 5802, 7677) as PostgreSQL's libpq client runs it,
 * with the server's token as the password. */
#define PG_SCRAM_ITERATIONS 4096 /* PostgreSQL's scram_iterations default */
struct pg_scram_secret {
    unsigned char salt[16];
    unsigned char salted[32]; /* SaltedPassword = PBKDF2(token, salt, iterations) */
    int iterations;
};
/* A random salt and the salted password. 0, or -1 (no random bytes). */
int pg_scram_secret_init(struct pg_scram_secret *s, const char *password);

/* The exchange's reads and writes go through io. Returns 0 when the client
 * proved the password (AuthenticationSASLFinal written), 1 when it did not
 * (28P01 written), -1 on a broken exchange (08P01 written, or the socket
 * failed). */
struct pg_auth_io {
    /* Sends c->out; 0 or -1. */
    int (*flush)(struct pg_conn *c);
    /* Reads one message of type 'p' into a malloc'd *body. 0 or -1. */
    int (*read_password)(struct pg_conn *c, unsigned char **body, size_t *len);
};
int pg_auth_scram(struct pg_conn *c, const struct pg_scram_secret *secret,
                  const struct pg_auth_io *io);

/* ---- The server (pg_server.c) ------------------------------------------------ */

struct metrics;
struct pg_server_options {
    const char *listen;         /* "host:port" as --listen reads it */
    bool reuse_port;
    const char *token;          /* NULL: trust; else SCRAM with it */
    struct engine *engine;
    struct metrics *metrics;    /* the connection gauge HTTP counts in too */
    int connection_limit;       /* HTTP and PostgreSQL connections together */
    unsigned startup_timeout_s; /* the startup exchange, and any one message once begun */
    unsigned idle_timeout_s;    /* between messages; 0: none */
    int workers;                /* the pool's size (--threads); 0: the number of CPUs */
    bool quiet;
};
/* Binds and starts accepting. NULL with a message in err. */
struct pg_server *pg_server_start(const struct pg_server_options *o, char *err, size_t errlen);
int pg_server_port(const struct pg_server *s);
const char *pg_server_addr(const struct pg_server *s);
/* Stops accepting, closes every connection (bounded wait), frees. */
void pg_server_stop(struct pg_server *s);

#endif
