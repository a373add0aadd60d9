/* heap_tuple.h -- heap tuples as PostgreSQL stores them (on a data page, in
 * a WAL insert or update record, in a full-page image), taken apart into
 * their columns and turned into each column's binary send format, the
 * bytes pgvalue_decode_binary reads (ingest/pgvalue.h).
 *
 * Two steps, each usable alone:
 *
 *   deform   heap_tuple_deform walks the attributes as PostgreSQL's
 *            heap_deform_tuple does: the null bitmap, each attribute
 *            aligned by its attalign (a varlena with a 1-byte header is not
 *            aligned: att_align_pointer's rule), fixed lengths by attlen,
 *            varlenas by their header. It gives each column's stored bytes
 *            (pointers into the tuple), nothing decoded, nothing allocated.
 *   send     heap_datum_send turns one stored value into its send format:
 *            by-value numbers, dates and times from the server's native
 *            little-endian order to big-endian, numeric from its on-disk
 *            form (NumericShort / NumericLong / NaN, +-Infinity) to
 *            numeric_send's, texts as stored; values compressed inline
 *            (pglz or lz4) are decompressed first. Into an arena the caller
 *            gives, of a size heap_datum_send_size bounds.
 *
 * What is refused, with a message naming the column:
 *   - a value stored out of line in the TOAST table is not fetched: deform
 *     reports it as external, with its TOAST pointer, and send marks it
 *     external (the caller refuses it or fetches it by value id);
 *   - a tuple that predates a column added with a non-NULL default
 *     (atthasmissing: the default lives only in pg_attribute.attmissingval,
 *     not in the tuple). heap_desc_check refuses such a table whole, since
 *     any page may still hold such tuples; VACUUM FULL or CLUSTER rewrites
 *     every row with the value and clears atthasmissing;
 *   - cstring attributes (attlen -2: no table column has one), and a tuple
 *     with more attributes than the descriptor (the descriptor is stale).
 *
 * Texts are the database encoding's bytes as stored: what the send format
 * carries when client_encoding is the server's.
 *
 * Layouts are PostgreSQL's since 12 (checked against 15; numeric
 * Infinity and lz4 since 14) on a little-endian server with 8-byte
 * MAXALIGN and double alignment (x86-64, aarch64), the servers pgwal.h
 * reads. Pure functions over buffers. Every length is checked
 * against the bytes given: a truncated or hostile tuple yields an error,
 * never a crash or a read past its end. Errors are messages in the
 * caller's buffer (base/error.h). Private to ingest/. */
#ifndef STRAUM_INGEST_HEAP_TUPLE_H
#define STRAUM_INGEST_HEAP_TUPLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* MaxHeapAttributeNumber: attributes in a table, dropped ones included. */
#define HEAP_MAX_ATTRS 1600
/* SizeofHeapTupleHeader: the fixed header of a stored tuple, up to t_bits. */
#define HEAP_TUPLE_HEADER_SIZE 23
/* SizeOfHeapHeader: xl_heap_header, the tuple header a WAL record keeps
 * (t_infomask2, t_infomask, t_hoff, unaligned). */
#define HEAP_XLOG_HEADER_SIZE 5

/* The t_infomask bit and t_infomask2 field deform reads (HEAP_HASVARWIDTH
 * and HEAP_HASEXTERNAL are hints it does without). */
#define HEAP_HASNULL 0x0001
#define HEAP_NATTS_MASK 0x07FF

/* ---- Table descriptor ------------------------------------------------------ */

/* One attribute as pg_attribute describes it, attnum 1 to natts in order,
 * dropped ones included (attisdropped: atttypid is 0 then, but attlen and
 * attalign still say how much room its old values take). */
struct heap_attr {
    const char *name;       /* attname, for messages; may be NULL */
    int16_t attnum;         /* 1 to natts, its place in the descriptor */
    uint32_t type_oid;      /* atttypid; a domain's base type; 0 when dropped */
    int32_t typmod;         /* atttypmod */
    int16_t attlen;         /* > 0 fixed length, -1 varlena, -2 cstring (refused) */
    bool attbyval;
    char attalign;          /* 'c', 's', 'i' or 'd' */
    bool attisdropped;
    bool atthasmissing;
};

struct heap_desc {
    int natts;                      /* 0 to HEAP_MAX_ATTRS */
    const struct heap_attr *attrs;  /* natts of them, attribute i + 1 at i */
};

/* Checks a descriptor before the tuples it describes: natts in range;
 * attnum i + 1 at i; every attribute's attlen (> 0 or -1; -2 refused), attalign and attbyval
 * (by value only for lengths 1, 2, 4, 8) sound; the types Straum converts
 * laid out as PostgreSQL lays them out (int4: attlen 4, by value, 'i'...);
 * no live column with atthasmissing (see above). Returns 0, or -1 with a
 * message naming the column. heap_tuple_deform and heap_datum_send do not
 * need it (they check what they use), but a table it refuses would fail
 * tuple by tuple. */
int heap_desc_check(const struct heap_desc *d, char *err, size_t errlen);

/* ---- Tuples ---------------------------------------------------------------- */

/* The header fields deform needs, as a WAL record's xl_heap_header carries
 * them. */
struct heap_tuple_header {
    uint16_t infomask2;     /* natts in the low 11 bits */
    uint16_t infomask;
    uint8_t hoff;           /* offset of the data from the tuple's start */
};

/* A whole tuple as it lies on a page (lp_len bytes at lp_off):
 * HeapTupleHeaderData, then the null bitmap, padding and data. Sets *h
 * and the body (the bytes from t_bits on, pointing into tuple). Returns
 * 0, or -1 with a message when len is under the 23-byte header. */
int heap_tuple_split_page(const uint8_t *tuple, size_t len, struct heap_tuple_header *h,
                          const uint8_t **body, size_t *body_len, char *err, size_t errlen);

/* A tuple as heap insert and update records log it: xl_heap_header (5
 * bytes), then the bytes from offsetof(HeapTupleHeaderData, t_bits) on
 * (bitmap, padding, data). An update's prefix and suffix compression must
 * have been undone by the caller. Same contract as heap_tuple_split_page. */
int heap_tuple_split_xlog(const uint8_t *rec, size_t len, struct heap_tuple_header *h,
                          const uint8_t **body, size_t *body_len, char *err, size_t errlen);

/* How a column's value is stored. */
enum heap_datum_kind {
    HEAP_DATUM_NULL,        /* NULL; also a dropped column, and a column
                               added after the tuple was written (without a
                               default) */
    HEAP_DATUM_FIXED,       /* attlen bytes, by value or not, as stored */
    HEAP_DATUM_PLAIN,       /* a varlena, not compressed: its payload */
    HEAP_DATUM_COMPRESSED,  /* a varlena compressed inline: the compressed
                               stream, raw_size bytes once decompressed */
    HEAP_DATUM_EXTERNAL,    /* a TOAST pointer: the value is out of line */
};

/* Compression methods (ToastCompressionId). */
enum heap_compression {
    HEAP_COMPRESSION_PGLZ = 0,
    HEAP_COMPRESSION_LZ4 = 1,
};

struct heap_datum {
    enum heap_datum_kind kind;
    const uint8_t *data;    /* FIXED, PLAIN, COMPRESSED: into the tuple */
    size_t len;             /* ... and its length (headers excluded) */
    uint32_t raw_size;      /* COMPRESSED: the payload's size decompressed;
                               EXTERNAL: va_rawsize minus its 4-byte header */
    uint8_t compression;    /* COMPRESSED; EXTERNAL when ext_size < raw_size */
    /* EXTERNAL: the TOAST pointer (varatt_external). */
    uint32_t ext_size;      /* bytes kept in the TOAST table */
    uint32_t value_id;      /* chunk_id in the TOAST table */
    uint32_t toast_relid;   /* the TOAST table's OID */
};

/* Takes a tuple apart: out[i] is attribute i + 1, for all d->natts of
 * them. natts (infomask2) above d->natts is refused; the attributes past a
 * tuple's natts are NULL, unless one has atthasmissing (refused: the tuple
 * lacks the value). t_hoff must be MAXALIGNed, past the bitmap and within
 * the body. body is what heap_tuple_split_* gives: the bytes from t_bits
 * on. Every value must lie inside the data (t_hoff to the body's end);
 * bytes after the last attribute are allowed (PostgreSQL's tuples end
 * MAXALIGNed on the page). Returns 0, or -1 with a message naming the
 * attribute; out is then undefined. */
int heap_tuple_deform(const struct heap_desc *d, const struct heap_tuple_header *h,
                      const uint8_t *body, size_t body_len, struct heap_datum *out, char *err,
                      size_t errlen);

/* ---- Send format ------------------------------------------------------------- */

/* One column's value in the binary send format. */
struct heap_value {
    bool is_null;       /* as HEAP_DATUM_NULL */
    bool external;      /* out of line in TOAST, not fetched: data is NULL */
    bool unsupported;   /* a type Straum does not keep: not converted, data NULL */
    const uint8_t *data;  /* the send format: into the tuple or the arena */
    size_t len;
};

/* The most arena bytes heap_datum_send uses for this value: 0 for NULL,
 * external, unsupported and uncompressed texts (they point into the
 * tuple); the type's length for by-value types; len + 6 for an uncompressed numeric;
 * raw_size for a compressed text, 2 x raw_size + 6 for a compressed
 * numeric. raw_size comes from the tuple and is under 2^30 (1 GiB), so a
 * hostile tuple may ask for that much: callers bound what they allocate. */
size_t heap_datum_send_size(const struct heap_attr *a, const struct heap_datum *v);

/* Converts one value of attribute a (bool, int2, int4, int8, float4,
 * float8, date, timestamp, timestamptz, numeric, text, varchar, bpchar;
 * any other type is marked unsupported) to its send format, using at most
 * cap bytes of arena (heap_datum_send_size is enough; arena may be NULL
 * when cap is 0) and advancing *used past the bytes it took. Compressed
 * values must decompress to exactly their raw_size. The bytes are exactly
 * what the type's send function (int4send, numeric_send, textsend...)
 * gives for the same stored value; as boolsend, any non-zero bool byte
 * sends as 1.
 * Returns 0, or -1 with a message naming the column (a length the type
 * does not have, corrupt compressed data, an arena too small). */
int heap_datum_send(const struct heap_attr *a, const struct heap_datum *v, uint8_t *arena,
                    size_t cap, size_t *used, struct heap_value *out, char *err, size_t errlen);

/* heap_datum_send_size summed over a tuple's d->natts datums. */
size_t heap_tuple_send_size(const struct heap_desc *d, const struct heap_datum *datums);

/* heap_datum_send for every attribute of a deformed tuple, out[i] for
 * attribute i + 1, into arena (heap_tuple_send_size bytes are enough).
 * Returns 0, or -1 with the first failing column's message. */
int heap_tuple_send(const struct heap_desc *d, const struct heap_datum *datums, uint8_t *arena,
                    size_t cap, struct heap_value *out, char *err, size_t errlen);

#endif
