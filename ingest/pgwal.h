/* pgwal.h -- decoding PostgreSQL 15's physical write-ahead log: the bytes a
 * physical replication slot streams (START_REPLICATION SLOT x PHYSICAL sends
 * them in XLogData 'w' frames, each with the LSN of its first byte).
 *
 * Three pieces, each usable alone:
 *
 *   reader   fed contiguous WAL bytes in pieces of any size (a piece may end
 *            mid-page or mid-record), yields whole records in LSN order:
 *            checks every page header, joins records split across pages,
 *            verifies each record's CRC-32C, skips what follows an
 *            XLOG_SWITCH. It owns the buffer a record is assembled in.
 *   record   pgwal_decode_record: an XLogRecord's header, block references
 *            (with full-page images, restored by pgwal_block_image), origin,
 *            top-level xid and main data, as DecodeXLogRecord reads them.
 *   parsers  plain structs for the records a heap follower needs: heap and
 *            heap2 changes, transaction ends, checkpoints and switches,
 *            storage creation and truncation, running transactions.
 *
 * The layouts are PostgreSQL 15's (XLOG_PAGE_MAGIC 0xD110, RelFileNode, the
 * 15 forms of xl_heap_prune and xl_xact_stats_item) on a little-endian
 * server with 8-byte MAXALIGN (x86-64, aarch64): WAL is written in the
 * server's own byte order, and WAL of another version or byte order fails
 * the page magic check with a message saying so.
 *
 * Pure functions over buffers, no I/O. Every read is bounds-checked against
 * the record: a truncated or hostile record yields an error, never a crash
 * or a read past its bytes. Errors are messages in the caller's buffer
 * (base/error.h) naming the LSN and the field. Arrays inside records (xids,
 * offsets, relfilenodes...) are returned as pointers into the record's
 * bytes with a count, read with the pgwal_*_at accessors below; nothing is
 * allocated by the record decoder or the parsers. Private to ingest/. */
#ifndef STRAUM_INGEST_PGWAL_H
#define STRAUM_INGEST_PGWAL_H

#include "base/bytes.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* ---- Limits ---------------------------------------------------------------- */

/* WAL pages and data pages: PostgreSQL's default XLOG_BLCKSZ and BLCKSZ,
 * the only size supported (a cluster built with another one is refused at
 * its first long page header). */
#define PGWAL_PAGE_SIZE 8192u
/* wal_segment_size: a power of two from 1 MiB to 1 GiB (initdb's range). */
#define PGWAL_SEG_MIN (1u << 20)
#define PGWAL_SEG_MAX (1u << 30)
/* The largest record the reader assembles. PostgreSQL allows up to 1 GB
 * (XLogRecordMaxSize); the records a heap follower meets are far smaller
 * (a full-page image is 8 KiB, a commit of 10,000 subtransactions 40 KiB),
 * and only logical messages or huge invalidation lists come near this. 64 MiB bounds the reader's memory; a larger record is an
 * error naming the limit. */
#define PGWAL_MAX_RECORD (64u << 20)
/* The last LSN a reader takes bytes for: 1 GiB short of 2^64, so that
 * aligning a record's end or rounding a switch up to its segment's end
 * cannot wrap (PostgreSQL would need exabytes of WAL to come near). */
#define PGWAL_LSN_MAX (UINT64_MAX - PGWAL_SEG_MAX)
/* Block references per record: ids 0 to XLR_MAX_BLOCK_ID (32). */
#define PGWAL_MAX_BLOCKS 33
/* MaxHeapTuplesPerPage for 8 KiB pages: a heap page holds at most this many
 * line pointers, so no heap record names more tuples or offsets. */
#define PGWAL_MAX_HEAP_TUPLES 291

/* ---- Resource managers (access/rmgrlist.h) --------------------------------- */

enum pgwal_rmgr {
    PGWAL_RM_XLOG = 0,
    PGWAL_RM_XACT = 1,
    PGWAL_RM_SMGR = 2,
    PGWAL_RM_CLOG = 3,
    PGWAL_RM_DBASE = 4,
    PGWAL_RM_TBLSPC = 5,
    PGWAL_RM_MULTIXACT = 6,
    PGWAL_RM_RELMAP = 7,
    PGWAL_RM_STANDBY = 8,
    PGWAL_RM_HEAP2 = 9,
    PGWAL_RM_HEAP = 10,
    PGWAL_RM_BTREE = 11,
    PGWAL_RM_HASH = 12,
    PGWAL_RM_GIN = 13,
    PGWAL_RM_GIST = 14,
    PGWAL_RM_SEQ = 15,
    PGWAL_RM_SPGIST = 16,
    PGWAL_RM_BRIN = 17,
    PGWAL_RM_COMMIT_TS = 18,
    PGWAL_RM_REPLORIGIN = 19,
    PGWAL_RM_GENERIC = 20,
    PGWAL_RM_LOGICALMSG = 21,
    PGWAL_RM_MAX_BUILTIN = 21,
    PGWAL_RM_MIN_CUSTOM = 128, /* 128..255: extensions' own, header only */
};

/* The resource manager's name as pg_waldump prints it ("Heap", "Transaction",
 * ...), "custom" for ids 128 to 255, NULL for an id PostgreSQL 15 does not
 * have. */
const char *pgwal_rmgr_name(unsigned rmid);

/* The record kind as pg_waldump prints it ("INSERT+INIT", "COMMIT",
 * "CHECKPOINT_ONLINE", ...) for the resource managers this file parses
 * (XLOG, Transaction, Storage, Standby, Heap2, Heap); NULL otherwise or for
 * an info value they do not use. */
const char *pgwal_record_name(unsigned rmid, unsigned info);

/* ---- Little-endian fields inside records ------------------------------------ */

struct pgwal_relfilenode {
    uint32_t spc, db, rel; /* tablespace, database, relfilenode */
};

/* Element i of an array of 2- or 4-byte values left in a record (line
 * pointer offsets, xids, relation numbers): at any alignment. */
static inline uint16_t pgwal_u16_at(const uint8_t *arr, size_t i)
{
    return le_load_u16(arr + 2 * i);
}

static inline uint32_t pgwal_u32_at(const uint8_t *arr, size_t i)
{
    return le_load_u32(arr + 4 * i);
}

/* Element i of an array of RelFileNodes (12 bytes each). */
static inline struct pgwal_relfilenode pgwal_relfilenode_at(const uint8_t *arr, size_t i)
{
    struct pgwal_relfilenode n = {pgwal_u32_at(arr, 3 * i), pgwal_u32_at(arr, 3 * i + 1),
                                  pgwal_u32_at(arr, 3 * i + 2)};
    return n;
}

/* CRC-32C (Castagnoli, reflected), as PostgreSQL's pg_crc32c: start with
 * crc = 0xFFFFFFFF, feed pieces, finish with ^ 0xFFFFFFFF. A record's
 * xl_crc covers its bytes after the 24-byte header, then the header's first
 * 20 bytes. Cannot fail. */
uint32_t pgwal_crc32c(uint32_t crc, const void *buf, size_t len);
/* The same by table alone, whatever the CPU has (pgwal_crc32c uses the
 * CPU's crc32 instruction where there is one): for tests, which compare
 * the two. Cannot fail. */
uint32_t pgwal_crc32c_table(uint32_t crc, const void *buf, size_t len);

/* ---- Records ------------------------------------------------------------------ */

/* XLogRecord: 24 bytes. xl_info's low 4 bits are the record's own flags,
 * the high 4 the resource manager's kind. */
#define PGWAL_RECORD_HEADER 24
#define PGWAL_XLR_INFO_MASK 0x0F

/* Block reference flags (the high half of fork_flags) and image flags. */
#define PGWAL_BKPBLOCK_HAS_IMAGE 0x10
#define PGWAL_BKPBLOCK_HAS_DATA 0x20
#define PGWAL_BKPBLOCK_WILL_INIT 0x40
#define PGWAL_BKPBLOCK_SAME_REL 0x80
#define PGWAL_BKPIMAGE_HAS_HOLE 0x01
#define PGWAL_BKPIMAGE_APPLY 0x02
#define PGWAL_BKPIMAGE_COMPRESS_PGLZ 0x04
#define PGWAL_BKPIMAGE_COMPRESS_LZ4 0x08
#define PGWAL_BKPIMAGE_COMPRESS_ZSTD 0x10

enum pgwal_fork { PGWAL_FORK_MAIN = 0, PGWAL_FORK_FSM = 1, PGWAL_FORK_VM = 2, PGWAL_FORK_INIT = 3 };

struct pgwal_block {
    bool in_use;              /* the record references this block id */
    uint8_t fork;             /* enum pgwal_fork */
    uint8_t flags;            /* PGWAL_BKPBLOCK_* */
    struct pgwal_relfilenode node;
    uint32_t blkno;
    bool will_init;           /* redo re-initialises the page */
    /* A full-page image: bimg_len bytes at image, stored without the hole
     * [hole_offset, hole_offset + hole_length) and maybe compressed
     * (bimg_info); pgwal_block_image restores the 8192-byte page. */
    bool has_image;
    bool apply_image;         /* BKPIMAGE_APPLY: redo restores it (else it is
                               * only there for wal_consistency_checking) */
    uint8_t bimg_info;
    uint16_t bimg_len, hole_offset, hole_length;
    const uint8_t *image;
    /* The block's data (the resource manager's per-block payload). */
    bool has_data;
    uint16_t data_len;
    const uint8_t *data;
};

struct pgwal_record {
    uint64_t lsn;             /* where the record starts */
    uint64_t end;             /* where the next record starts: past the
                               * record's alignment padding, and for an
                               * XLOG_SWITCH the next segment (PostgreSQL's
                               * EndRecPtr) */
    uint32_t tli;             /* timeline of the last page header the reader
                               * read before the record's end (0 when it has
                               * read none: pgwal_decode_record alone) */
    uint32_t tot_len;         /* xl_tot_len: the whole record */
    uint32_t xid;             /* xl_xid: 0 when none was assigned */
    uint64_t prev;            /* xl_prev: the record before */
    uint8_t info;             /* xl_info */
    uint8_t rmid;             /* xl_rmid, enum pgwal_rmgr */
    uint32_t crc;             /* xl_crc */
    bool has_origin;
    uint16_t origin;          /* replication origin, when has_origin */
    uint32_t toplevel_xid;    /* a subtransaction's top-level xid, or 0 */
    int max_block_id;         /* highest block id in use, -1 for none */
    struct pgwal_block blocks[PGWAL_MAX_BLOCKS]; /* [0, max_block_id] only: the
                                                  * slots past it are not set */
    uint32_t fpi_len;         /* bytes of page images (pg_waldump's tot - rec) */
    const uint8_t *main_data; /* the resource manager's main data */
    uint32_t main_data_len;
    const uint8_t *raw;       /* the record's tot_len bytes */
};

/* Where the last record written before `next` ends, when a record would
 * start at `next` (pg_current_wal_insert_lsn()): `next` itself, or, when
 * `next` lies just past a page's header (24 bytes, 40 on a segment's first
 * page), the page's start. A record ending exactly at a page's end leaves
 * the insert position past the next page's header, where no record ends
 * and no stream's position ever arrives: a follower waiting for it (`run
 * --exit-when-caught-up`) waited until more WAL came. block is
 * wal_block_size, seg wal_segment_size (powers of two). Cannot fail. */
uint64_t pgwal_last_record_end(uint64_t next, uint32_t block, uint32_t seg);

/* Decodes the record of len bytes at buf, which starts at lsn, as
 * DecodeXLogRecord does: the header (xl_tot_len must equal len, the rmid
 * must be one of PostgreSQL 15's or custom), the block headers in order
 * (ids increasing, at most 32; BKPBLOCK_SAME_REL only after a block that
 * named its relation; HAS_DATA exactly when there is data; the image's
 * length, hole and compression flags consistent with each other and an
 * 8192-byte page), origin, top-level xid, then the main data; the lengths
 * must add up to the record exactly. Does not check xl_crc or xl_prev (the
 * reader does). out points into buf (keep it while out is used); end and
 * tli are left 0; blocks past max_block_id are not set. Returns 0, or -1
 * with a message in err, out then undefined. */
int pgwal_decode_record(const uint8_t *buf, size_t len, uint64_t lsn, struct pgwal_record *out,
                        char *err, size_t errlen);

/* Restores block b's full-page image into page: decompressed (pglz; lz4
 * through liblz4) to exactly 8192 - hole_length bytes, the hole zero-filled,
 * as RestoreBlockImage does. Returns 0, or -1 with a message in err when
 * the block has no image, the image is zstd-compressed (not supported), or
 * it does not decompress to its length. page is undefined after a failure. */
int pgwal_block_image(const struct pgwal_block *b, uint8_t page[PGWAL_PAGE_SIZE], char *err,
                      size_t errlen);

/* The tuple at line pointer offnum of a heap page (a restored image): *tup
 * and *len get its bytes (HeapTupleHeaderData first). Returns 0, or -1 with
 * a message when the page's header is not a valid 8192-byte page, offnum is
 * past pd_lower's line pointers, the line pointer is not LP_NORMAL, or the
 * tuple lies outside the page or is shorter than a tuple header. */
int pgwal_page_tuple(const uint8_t page[PGWAL_PAGE_SIZE], uint16_t offnum, const uint8_t **tup,
                     uint16_t *len, char *err, size_t errlen);

/* ---- Reader ------------------------------------------------------------------ */

/* Fill a struct pgwal_reader with pgwal_reader_init; its fields are
 * private but for check_crc. */
struct pgwal_reader {
    /* Verify each record's CRC-32C (set by init). Fuzz targets switch it
     * off to reach past records whose bytes they mutated; nothing else
     * should. */
    bool check_crc;

    uint32_t seg_size;
    uint64_t sysid;           /* 0 until a long header (or the caller) set it */
    uint64_t pos;             /* LSN of the next byte to take */
    int phase;
    bool failed;
    char error[256];

    const uint8_t *in;        /* the piece fed, not yet taken */
    size_t in_len;

    uint8_t page_hdr[40];     /* the page header being read */
    uint32_t page_hdr_got;
    uint64_t hdr_page;        /* the page whose header has been read */
    uint32_t tli;             /* xlp_tli of the last page header */
    uint64_t last_page;       /* for the timeline's order, 0 before any */

    uint32_t skip_left;       /* continuation bytes still to skip */
    uint64_t skip_to;         /* padding or switch: the LSN to skip to */

    uint8_t *buf;             /* the record being assembled */
    size_t cap;
    uint32_t got, tot_len;
    uint64_t rec_lsn;
    bool header_checked;

    uint64_t prev_lsn;        /* the last record yielded, 0 before any */
    uint64_t aborted_lsn;     /* a record cut by an overwrite, or 0 */
};

/* Prepares r to read WAL of segment size seg_size from start, which is
 * either a page boundary (a record continued from the page before is then
 * skipped: the first record yielded is the first one to start on or after
 * that page) or the start of a record (8-byte aligned, past the page's
 * header), such as a checkpoint's redo pointer or a record's end. sysid,
 * when not 0, is the system identifier every long page header must carry
 * (IDENTIFY_SYSTEM's); 0 takes the first one seen. Returns 0, or -1 with a
 * message in err for a segment size PostgreSQL cannot have or a start that
 * cannot be a record's or is past PGWAL_LSN_MAX (r is then zeroed;
 * pgwal_reader_free is harmless). */
int pgwal_reader_init(struct pgwal_reader *r, uint32_t seg_size, uint64_t start, uint64_t sysid,
                      char *err, size_t errlen);

/* Releases the assembly buffer and zeroes r. Safe on a zeroed or freed
 * reader. */
void pgwal_reader_free(struct pgwal_reader *r);

/* The LSN the next piece must start at: the first byte the reader has not
 * been given. */
uint64_t pgwal_reader_want(const struct pgwal_reader *r);

/* Gives the reader len bytes that start at lsn. Pieces must follow each
 * other: lsn at most pgwal_reader_want(r) (bytes before it are dropped, as
 * when streaming restarts at a segment's start) and lsn + len past it.
 * Allowed only once pgwal_reader_next has taken the previous piece (it
 * returned 0). The reader reads buf in place until pgwal_reader_next
 * returns 0 or -1, copying what it keeps; keep buf unchanged until then.
 * Returns 0, or -1 with a message for a gap, bytes past PGWAL_LSN_MAX, a
 * piece fed before the last one was taken, or a reader that failed before
 * (only the last makes the reader fail). */
int pgwal_reader_feed(struct pgwal_reader *r, uint64_t lsn, const void *buf, size_t len, char *err,
                      size_t errlen);

/* The next whole record: 1 and *out filled (pointing into the reader's
 * buffer, valid until the next call on r), 0 when the bytes fed are used
 * up (feed more), or -1 with a message in err. Checked on the way: every
 * page header (magic 0xD110, known info bits, xlp_pageaddr equal to the
 * page's LSN, a long header on a segment's first page with xlp_seg_size
 * and xlp_xlog_blcksz equal to the reader's and the system identifier,
 * timelines never going back), a record's continuation on the next page
 * (XLP_FIRST_IS_CONTRECORD and xlp_rem_len equal to what is missing), the
 * record header (xl_tot_len from 24 bytes to PGWAL_MAX_RECORD, a known
 * rmid, xl_prev equal to the previous record's LSN, or below the record's
 * own for the first one), the CRC, then pgwal_decode_record. After an
 * XLOG_SWITCH the rest of the segment is skipped unread.
 *
 * A page flagged XLP_FIRST_IS_OVERWRITE_CONTRECORD where a record should
 * continue means the server crashed in the middle of writing that record
 * and, recovering, wrote on from that page: the partial record never
 * happened and is not yielded; the page's first record must then be the
 * XLOG_OVERWRITE_CONTRECORD that names it, and is yielded like any other
 * (its xl_prev is the record before the one dropped).
 *
 * Errors are final: the reader keeps the first one and returns it from
 * every later call. */
int pgwal_reader_next(struct pgwal_reader *r, struct pgwal_record *out, char *err, size_t errlen);

/* ---- Heap (RM_HEAP_ID) ----------------------------------------------------- */

enum pgwal_heap_op {
    PGWAL_HEAP_INSERT = 0x00,
    PGWAL_HEAP_DELETE = 0x10,
    PGWAL_HEAP_UPDATE = 0x20,
    PGWAL_HEAP_TRUNCATE = 0x30,
    PGWAL_HEAP_HOT_UPDATE = 0x40,
    PGWAL_HEAP_CONFIRM = 0x50,
    PGWAL_HEAP_LOCK = 0x60,
    PGWAL_HEAP_INPLACE = 0x70,
};
#define PGWAL_HEAP_OPMASK 0x70
#define PGWAL_HEAP_INIT_PAGE 0x80

/* xl_heap_insert / xl_heap_multi_insert flags */
#define PGWAL_XLH_INSERT_ALL_VISIBLE_CLEARED 0x01
#define PGWAL_XLH_INSERT_LAST_IN_MULTI 0x02
#define PGWAL_XLH_INSERT_IS_SPECULATIVE 0x04
#define PGWAL_XLH_INSERT_CONTAINS_NEW_TUPLE 0x08
#define PGWAL_XLH_INSERT_ON_TOAST_RELATION 0x10
#define PGWAL_XLH_INSERT_ALL_FROZEN_SET 0x20
/* xl_heap_update flags */
#define PGWAL_XLH_UPDATE_OLD_ALL_VISIBLE_CLEARED 0x01
#define PGWAL_XLH_UPDATE_NEW_ALL_VISIBLE_CLEARED 0x02
#define PGWAL_XLH_UPDATE_CONTAINS_OLD_TUPLE 0x04
#define PGWAL_XLH_UPDATE_CONTAINS_OLD_KEY 0x08
#define PGWAL_XLH_UPDATE_CONTAINS_NEW_TUPLE 0x10
#define PGWAL_XLH_UPDATE_PREFIX_FROM_OLD 0x20
#define PGWAL_XLH_UPDATE_SUFFIX_FROM_OLD 0x40
/* xl_heap_delete flags */
#define PGWAL_XLH_DELETE_ALL_VISIBLE_CLEARED 0x01
#define PGWAL_XLH_DELETE_CONTAINS_OLD_TUPLE 0x02
#define PGWAL_XLH_DELETE_CONTAINS_OLD_KEY 0x04
#define PGWAL_XLH_DELETE_IS_SUPER 0x08
#define PGWAL_XLH_DELETE_IS_PARTITION_MOVE 0x10
/* infobits_set of delete, update, lock */
#define PGWAL_XLHL_XMAX_IS_MULTI 0x01
#define PGWAL_XLHL_XMAX_LOCK_ONLY 0x02
#define PGWAL_XLHL_XMAX_EXCL_LOCK 0x04
#define PGWAL_XLHL_XMAX_KEYSHR_LOCK 0x08
#define PGWAL_XLHL_KEYS_UPDATED 0x10
/* xl_heap_truncate flags */
#define PGWAL_XLH_TRUNCATE_CASCADE 0x01
#define PGWAL_XLH_TRUNCATE_RESTART_SEQS 0x02

/* SizeofHeapTupleHeader: a tuple's fixed header, which WAL leaves out. */
#define PGWAL_TUPLE_HEADER 23

/* A tuple as WAL carries it: the xl_heap_header fields and the tuple's
 * bytes from offset 23 of its header on (the null bitmap, padding to hoff,
 * then the attributes). present is false when the record leaves it out:
 * an insert or update whose block 0 carries a full-page image and whose
 * relation is not logged for logical decoding (no CONTAINS_NEW_TUPLE flag);
 * read the tuple from the restored image at its offnum instead. */
struct pgwal_tuple {
    bool present;
    uint16_t infomask2, infomask;
    uint8_t hoff;
    const uint8_t *data;
    uint32_t len;
};

struct pgwal_heap {
    uint8_t op;                    /* enum pgwal_heap_op */
    bool init_page;                /* XLOG_HEAP_INIT_PAGE: insert/update onto a
                                    * page redo re-initialises */
    uint8_t flags;                 /* the record's XLH_* flags */
    /* INSERT, DELETE, LOCK, CONFIRM, INPLACE: the tuple's offset on block
     * 0's page. UPDATE, HOT_UPDATE: the old tuple's offset, on the page of
     * block old_block. */
    uint16_t offnum;
    uint32_t xmax;                 /* DELETE, UPDATE (old tuple's), LOCK
                                    * (locking xid or multixact) */
    uint8_t infobits;              /* DELETE, UPDATE, LOCK: XLHL_* */
    /* UPDATE, HOT_UPDATE: the new tuple on block 0's page. */
    uint32_t new_xmax;
    uint16_t new_offnum;
    uint8_t old_block;             /* 1 when the old tuple is on another page
                                    * (block 1), else 0 */
    uint16_t prefix_len, suffix_len; /* bytes of the new tuple's data shared
                                      * with the old tuple's start and end,
                                      * left out of tuple.data */
    struct pgwal_tuple tuple;      /* INSERT: the tuple; UPDATE: the new one */
    struct pgwal_tuple old_tuple;  /* DELETE, UPDATE with CONTAINS_OLD_TUPLE or
                                    * CONTAINS_OLD_KEY: the old row or its key
                                    * (replica identity) */
    /* TRUNCATE: the database and relation OIDs (uint32 each). */
    uint32_t db_id;
    uint32_t nrelids;
    const uint8_t *relids;
    /* INPLACE: the tuple's new bytes from hoff on, when in the record. */
    const uint8_t *inplace_data;
    uint32_t inplace_len;
};

/* Parses a heap record. Returns 0 (an unknown kind is impossible: all 8
 * are parsed), or -1 with a message when rec is no heap record or its data
 * is short, left over, or inconsistent. Pointers go into rec's bytes. */
int pgwal_heap_parse(const struct pgwal_record *rec, struct pgwal_heap *out, char *err,
                     size_t errlen);

/* ---- Heap2 (RM_HEAP2_ID) --------------------------------------------------- */

enum pgwal_heap2_op {
    PGWAL_HEAP2_REWRITE = 0x00,
    PGWAL_HEAP2_PRUNE = 0x10,
    PGWAL_HEAP2_VACUUM = 0x20,
    PGWAL_HEAP2_FREEZE_PAGE = 0x30,
    PGWAL_HEAP2_VISIBLE = 0x40,
    PGWAL_HEAP2_MULTI_INSERT = 0x50,
    PGWAL_HEAP2_LOCK_UPDATED = 0x60,
    PGWAL_HEAP2_NEW_CID = 0x70,
};

/* xl_heap_freeze_tuple, 12 bytes each in FREEZE_PAGE's block 0 data. */
#define PGWAL_FREEZE_TUPLE_SIZE 12

struct pgwal_heap2 {
    uint8_t op;                    /* enum pgwal_heap2_op */
    bool init_page;                /* MULTI_INSERT onto a re-initialised page */
    uint8_t flags;                 /* VISIBLE, MULTI_INSERT, LOCK_UPDATED */
    uint32_t xid;                  /* PRUNE latestRemovedXid; FREEZE_PAGE and
                                    * VISIBLE cutoff_xid; LOCK_UPDATED xmax */
    /* PRUNE: offsets in block 0's data (uint16 each): nredirected pairs
     * (from, to), ndead, nunused. VACUUM: nunused. offsets_present is false
     * when block 0's data was left out for a full-page image. */
    uint16_t nredirected, ndead, nunused;
    bool offsets_present;
    const uint8_t *redirected, *dead, *unused;
    /* FREEZE_PAGE: ntuples plans of PGWAL_FREEZE_TUPLE_SIZE bytes (xmax u32,
     * offset u16, t_infomask2 u16, t_infomask u16, frzflags u8, pad), when
     * present. MULTI_INSERT: ntuples tuples, read with
     * pgwal_multi_insert_tuple; offsets (uint16 each) unless init_page
     * (then the tuples go to offsets 1..ntuples). */
    uint16_t ntuples;
    bool tuples_present;
    const uint8_t *freeze_plans;
    const uint8_t *offsets;
    const uint8_t *tuple_data;     /* block 0's data */
    uint32_t tuple_data_len;
    /* LOCK_UPDATED */
    uint16_t offnum;
    uint8_t infobits;
    /* NEW_CID */
    uint32_t top_xid, cmin, cmax, combocid;
    struct pgwal_relfilenode target_node;
    uint32_t target_block;
    uint16_t target_offnum;
    /* REWRITE (xl_heap_rewrite_mapping) */
    uint32_t mapped_xid, mapped_db, mapped_rel, num_mappings;
    int64_t offset;
    uint64_t start_lsn;
};

/* Parses a heap2 record; for MULTI_INSERT every tuple's length is checked
 * here, so pgwal_multi_insert_tuple cannot fail after. Returns 0, or -1 with
 * a message (no heap2 record; data short, left over or inconsistent). */
int pgwal_heap2_parse(const struct pgwal_record *rec, struct pgwal_heap2 *out, char *err,
                      size_t errlen);

/* MULTI_INSERT's tuple i (0-based) in order: *cursor starts at 0 for i = 0
 * and is advanced by each call (call for i = 0, 1, ... in turn). *offnum
 * gets its offset on block 0's page. Returns false when i is past ntuples
 * or the tuples are not present. */
bool pgwal_multi_insert_tuple(const struct pgwal_heap2 *h, uint16_t i, uint32_t *cursor,
                              uint16_t *offnum, struct pgwal_tuple *t);

/* ---- Transactions (RM_XACT_ID) ---------------------------------------------- */

enum pgwal_xact_op {
    PGWAL_XACT_COMMIT = 0x00,
    PGWAL_XACT_PREPARE = 0x10,
    PGWAL_XACT_ABORT = 0x20,
    PGWAL_XACT_COMMIT_PREPARED = 0x30,
    PGWAL_XACT_ABORT_PREPARED = 0x40,
    PGWAL_XACT_ASSIGNMENT = 0x50,
    PGWAL_XACT_INVALIDATIONS = 0x60,
};
#define PGWAL_XACT_OPMASK 0x70
#define PGWAL_XACT_HAS_INFO 0x80

#define PGWAL_XACT_XINFO_HAS_DBINFO (1u << 0)
#define PGWAL_XACT_XINFO_HAS_SUBXACTS (1u << 1)
#define PGWAL_XACT_XINFO_HAS_RELFILENODES (1u << 2)
#define PGWAL_XACT_XINFO_HAS_INVALS (1u << 3)
#define PGWAL_XACT_XINFO_HAS_TWOPHASE (1u << 4)
#define PGWAL_XACT_XINFO_HAS_ORIGIN (1u << 5)
#define PGWAL_XACT_XINFO_HAS_AE_LOCKS (1u << 6)
#define PGWAL_XACT_XINFO_HAS_GID (1u << 7)
#define PGWAL_XACT_XINFO_HAS_DROPPED_STATS (1u << 8)
#define PGWAL_XACT_COMPLETION_APPLY_FEEDBACK (1u << 29)
#define PGWAL_XACT_COMPLETION_UPDATE_RELCACHE_FILE (1u << 30)
#define PGWAL_XACT_COMPLETION_FORCE_SYNC_COMMIT (1u << 31)

/* Element sizes of the arrays below. */
#define PGWAL_RELFILENODE_SIZE 12
#define PGWAL_STATS_ITEM_SIZE 12  /* kind i32, dboid u32, objoid u32 */
#define PGWAL_INVAL_MSG_SIZE 16   /* SharedInvalidationMessage: id i8 first */

struct pgwal_xact {
    uint8_t op;                   /* enum pgwal_xact_op */
    /* The transaction the record ends: the record's xid, or for COMMIT
     * PREPARED and ABORT PREPARED (logged by another backend, xl_xid 0) the
     * prepared transaction's. PREPARE: the prepared transaction. */
    uint32_t xid;
    int64_t time;                 /* commit, abort or prepare time: µs since
                                   * 2000-01-01 UTC */
    uint32_t xinfo;               /* XACT_XINFO_* and XACT_COMPLETION_* */
    uint32_t db_id, ts_id;        /* with XACT_XINFO_HAS_DBINFO; PREPARE: db */
    /* Subtransactions (uint32 xids). ASSIGNMENT: those assigned to xtop. */
    uint32_t nsubxacts;
    const uint8_t *subxacts;
    /* Relation files dropped when the transaction commits (aborts, for
     * ABORT): a DROP, TRUNCATE or table rewrite gives up its old
     * relfilenode here. PREPARE: those to drop at COMMIT PREPARED. */
    uint32_t nrels;
    const uint8_t *rels;
    uint32_t nstats;              /* statistics entries dropped */
    const uint8_t *stats;
    uint32_t nmsgs;               /* cache invalidation messages */
    const uint8_t *msgs;
    uint32_t twophase_xid;        /* with XACT_XINFO_HAS_TWOPHASE, and PREPARE */
    const char *gid;              /* NUL-terminated in the record, or NULL */
    bool has_origin;              /* XACT_XINFO_HAS_ORIGIN; PREPARE: the record
                                   * has an origin (the two fields below
                                   * come from its header either way) */
    uint64_t origin_lsn;
    int64_t origin_time;
    /* PREPARE only */
    uint32_t owner;
    bool initfileinval;
    uint32_t nabortrels;          /* relations to drop at ROLLBACK PREPARED */
    const uint8_t *abortrels;
    uint32_t nabortstats;
    const uint8_t *abortstats;
    /* ASSIGNMENT */
    uint32_t xtop;
};

/* Parses a transaction record as ParseCommitRecord, ParseAbortRecord and
 * ParsePrepareRecord do, every array checked against the record. Returns 0,
 * or -1 with a message (no xact record, an unknown kind, data short or left
 * over, a gid without its NUL). */
int pgwal_xact_parse(const struct pgwal_record *rec, struct pgwal_xact *out, char *err,
                     size_t errlen);

/* ---- XLOG (RM_XLOG_ID) -------------------------------------------------------- */

enum pgwal_xlog_op {
    PGWAL_XLOG_CHECKPOINT_SHUTDOWN = 0x00,
    PGWAL_XLOG_CHECKPOINT_ONLINE = 0x10,
    PGWAL_XLOG_NOOP = 0x20,
    PGWAL_XLOG_NEXTOID = 0x30,
    PGWAL_XLOG_SWITCH = 0x40,
    PGWAL_XLOG_BACKUP_END = 0x50,
    PGWAL_XLOG_PARAMETER_CHANGE = 0x60,
    PGWAL_XLOG_RESTORE_POINT = 0x70,
    PGWAL_XLOG_FPW_CHANGE = 0x80,
    PGWAL_XLOG_END_OF_RECOVERY = 0x90,
    PGWAL_XLOG_FPI_FOR_HINT = 0xA0,
    PGWAL_XLOG_FPI = 0xB0,
    PGWAL_XLOG_OVERWRITE_CONTRECORD = 0xD0,
};

struct pgwal_checkpoint {
    uint64_t redo;                /* where replay of this checkpoint starts */
    uint32_t tli, prev_tli;
    bool full_page_writes;
    uint64_t next_xid;            /* FullTransactionId: epoch << 32 | xid */
    uint32_t next_oid, next_multi, next_multi_offset;
    uint32_t oldest_xid, oldest_xid_db, oldest_multi, oldest_multi_db;
    int64_t time;                 /* pg_time_t: seconds since 1970 */
    uint32_t oldest_commit_ts_xid, newest_commit_ts_xid;
    uint32_t oldest_active_xid;
};

struct pgwal_xlog {
    uint8_t op;                   /* xl_info & 0xF0, enum pgwal_xlog_op */
    struct pgwal_checkpoint checkpoint; /* CHECKPOINT_SHUTDOWN / _ONLINE */
    uint32_t next_oid;            /* NEXTOID */
    bool fpw;                     /* FPW_CHANGE: full_page_writes now */
    uint64_t overwritten_lsn;     /* OVERWRITE_CONTRECORD: the record dropped */
    int64_t time;                 /* OVERWRITE_CONTRECORD, END_OF_RECOVERY */
    uint32_t tli, prev_tli;       /* END_OF_RECOVERY: the new timeline */
};

/* Parses an XLOG record: the payloads above; SWITCH, NOOP, FPI and
 * FPI_FOR_HINT (whose content is their block images) and the other kinds
 * only set op. Returns 0, or -1 with a message (no XLOG record, an unknown
 * kind, a payload of the wrong size). */
int pgwal_xlog_parse(const struct pgwal_record *rec, struct pgwal_xlog *out, char *err,
                     size_t errlen);

/* ---- Storage (RM_SMGR_ID) ----------------------------------------------------- */

enum pgwal_smgr_op { PGWAL_SMGR_CREATE = 0x10, PGWAL_SMGR_TRUNCATE = 0x20 };
#define PGWAL_SMGR_TRUNCATE_HEAP 0x01
#define PGWAL_SMGR_TRUNCATE_VM 0x02
#define PGWAL_SMGR_TRUNCATE_FSM 0x04

struct pgwal_smgr {
    uint8_t op;
    struct pgwal_relfilenode node;
    uint8_t fork;                 /* CREATE */
    uint32_t blkno;               /* TRUNCATE: the relation's new length */
    uint32_t flags;               /* TRUNCATE: SMGR_TRUNCATE_* */
};

/* Parses a storage record. Returns 0, or -1 with a message (no smgr record,
 * an unknown kind, a payload of the wrong size, a fork past INIT). */
int pgwal_smgr_parse(const struct pgwal_record *rec, struct pgwal_smgr *out, char *err,
                     size_t errlen);

/* ---- Standby (RM_STANDBY_ID) ------------------------------------------------- */

enum pgwal_standby_op {
    PGWAL_STANDBY_LOCK = 0x00,
    PGWAL_STANDBY_RUNNING_XACTS = 0x10,
    PGWAL_STANDBY_INVALIDATIONS = 0x20,
};

struct pgwal_standby {
    uint8_t op;
    /* RUNNING_XACTS: xcnt top-level xids, then subxcnt subtransaction xids,
     * in xids (uint32 each). */
    uint32_t xcnt, subxcnt;
    bool subxid_overflow;
    uint32_t next_xid, oldest_running_xid, latest_completed_xid;
    const uint8_t *xids;
    /* LOCK: nlocks of (xid, db, rel), uint32 each, in locks. */
    uint32_t nlocks;
    const uint8_t *locks;
    /* INVALIDATIONS */
    uint32_t db_id, ts_id;
    bool relcache_init_file_inval;
    uint32_t nmsgs;
    const uint8_t *msgs;
};

/* Parses a standby record. Returns 0, or -1 with a message (no standby
 * record, an unknown kind, counts past the data or data left over). */
int pgwal_standby_parse(const struct pgwal_record *rec, struct pgwal_standby *out, char *err,
                        size_t errlen);

#endif
