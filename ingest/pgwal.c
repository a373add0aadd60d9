/* pgwal.c -- reading PostgreSQL 15's physical WAL: the page reader, the
 * record decoder, page images and the resource managers' parsers (see
 * pgwal.h for the contract). The layouts follow PostgreSQL 15's headers
 * (access/xlogrecord.h, access/xlog_internal.h, access/heapam_xlog.h,
 * access/xact.h, catalog/pg_control.h, catalog/storage_xlog.h,
 * storage/standbydefs.h) and the logic its xlogreader.c (XLogDecodeNextRecord,
 * XLogReaderValidatePageHeader, DecodeXLogRecord, RestoreBlockImage),
 * xactdesc.c (ParseCommitRecord, ParseAbortRecord, ParsePrepareRecord);
 * offsets in the comments are the C structs' on a 64-bit little-endian
 * server. pglz page images are decoded by pglz.c, which heap_tuple.c's
 * compressed values share.
 *
 * Every field is read through a bounds-checked cursor or after an explicit
 * length check; a record's fields are little-endian loads at any address
 * (base/bytes.h). */
#include "base/bytes.h"
#include "base/error.h"
#include "ingest/pglz.h"
#include "ingest/pgwal.h"

#include <lz4.h>
#include <pthread.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ATTR_PRINTF(f, a) __attribute__((format(printf, f, a)))

/* "%X/%08X" and its arguments: an LSN as PostgreSQL prints it. */
#define LSN_FMT "%X/%08X"
#define LSN_ARGS(x) (unsigned)((x) >> 32), (unsigned)(x)

#define XLOG_PAGE_MAGIC 0xD110
#define XLP_FIRST_IS_CONTRECORD 0x0001
#define XLP_LONG_HEADER 0x0002
#define XLP_FIRST_IS_OVERWRITE_CONTRECORD 0x0008
#define XLP_ALL_FLAGS 0x000F
#define SHORT_PAGE_HEADER 24 /* MAXALIGN(sizeof(XLogPageHeaderData)) */
#define LONG_PAGE_HEADER 40  /* MAXALIGN(sizeof(XLogLongPageHeaderData)) */

#define XLR_MAX_BLOCK_ID 32
#define XLR_BLOCK_ID_DATA_SHORT 255
#define XLR_BLOCK_ID_DATA_LONG 254
#define XLR_BLOCK_ID_ORIGIN 253
#define XLR_BLOCK_ID_TOPLEVEL_XID 252

#define TWOPHASE_MAGIC 0x57F94534u

/* The assembly buffer a reader keeps between records; one grown past this
 * for a large record is given back when the next record starts. */
#define PGWAL_KEEP_BYTES (1u << 20)
#define PGWAL_FIRST_BYTES 8192u

static inline uint64_t maxalign(uint64_t x)
{
    return (x + 7) & ~(uint64_t)7;
}

static inline int64_t ld_i64(const uint8_t *p)
{
    uint64_t u = le_load_u64(p);
    return u <= INT64_MAX ? (int64_t)u : -(int64_t)(UINT64_MAX - u) - 1;
}

/* Writes "record at X/X: " and the message. Returns -1. */
ATTR_PRINTF(4, 5)
static int fail_at(char *err, size_t errlen, uint64_t lsn, const char *fmt, ...)
{
    if (err == NULL || errlen == 0)
        return -1;
    int n = snprintf(err, errlen, "WAL record at " LSN_FMT ": ", LSN_ARGS(lsn));
    if (n >= 0 && (size_t)n < errlen) {
        va_list ap;
        va_start(ap, fmt);
        error_vfmt(err + n, errlen - (size_t)n, fmt, ap);
        va_end(ap);
    }
    return -1;
}

/* ---- CRC-32C ----------------------------------------------------------------- */

/* Slicing by 8: table[k][b] is the CRC of byte b followed by k zero bytes.
 * Where the CPU has SSE 4.2 its crc32 instruction computes the same CRC
 * (Castagnoli, reflected) 8 bytes at a time, as PostgreSQL's own
 * pg_comp_crc32c_sse42 does: the table's CRC was 2 to 4% of the physical
 * follower's CPU (perf, `taxi wal` at full scale), every WAL byte read
 * once. */
static uint32_t crc_table[8][256];
static pthread_once_t crc_once = PTHREAD_ONCE_INIT;
static uint32_t (*crc_fn)(uint32_t crc, const uint8_t *p, size_t len);

static uint32_t crc_by_table(uint32_t crc, const uint8_t *p, size_t len)
{
    while (len >= 8) {
        uint32_t lo = crc ^ le_load_u32(p), hi = le_load_u32(p + 4);
        crc = crc_table[7][lo & 0xFF] ^ crc_table[6][(lo >> 8) & 0xFF] ^
              crc_table[5][(lo >> 16) & 0xFF] ^ crc_table[4][lo >> 24] ^
              crc_table[3][hi & 0xFF] ^ crc_table[2][(hi >> 8) & 0xFF] ^
              crc_table[1][(hi >> 16) & 0xFF] ^ crc_table[0][hi >> 24];
        p += 8;
        len -= 8;
    }
    while (len-- > 0)
        crc = crc_table[0][(crc ^ *p++) & 0xFF] ^ (crc >> 8);
    return crc;
}

#if defined(__x86_64__) && defined(__GNUC__)
__attribute__((target("sse4.2"))) static uint32_t crc_by_sse42(uint32_t crc, const uint8_t *p,
                                                                size_t len)
{
    uint64_t c = crc, w;
    for (; len >= 8; p += 8, len -= 8) {
        memcpy(&w, p, 8); /* the instruction takes the word's bytes little-endian, as x86 holds them */
        c = __builtin_ia32_crc32di(c, w);
    }
    crc = (uint32_t)c;
    while (len-- > 0)
        crc = __builtin_ia32_crc32qi(crc, *p++);
    return crc;
}
#endif

static void crc_init(void)
{
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = i;
        for (int k = 0; k < 8; k++)
            c = (c & 1) ? (c >> 1) ^ 0x82F63B78u : c >> 1;
        crc_table[0][i] = c;
    }
    for (uint32_t i = 0; i < 256; i++)
        for (int s = 1; s < 8; s++)
            crc_table[s][i] = (crc_table[s - 1][i] >> 8) ^ crc_table[0][crc_table[s - 1][i] & 0xFF];
    crc_fn = crc_by_table;
#if defined(__x86_64__) && defined(__GNUC__)
    if (__builtin_cpu_supports("sse4.2"))
        crc_fn = crc_by_sse42;
#endif
}

uint32_t pgwal_crc32c(uint32_t crc, const void *buf, size_t len)
{
    pthread_once(&crc_once, crc_init);
    return crc_fn(crc, buf, len);
}

uint32_t pgwal_crc32c_table(uint32_t crc, const void *buf, size_t len)
{
    pthread_once(&crc_once, crc_init);
    return crc_by_table(crc, buf, len);
}

/* A record's CRC: its bytes after the header, then the header up to xl_crc. */
static uint32_t record_crc(const uint8_t *rec, uint32_t tot_len)
{
    uint32_t crc = pgwal_crc32c(0xFFFFFFFFu, rec + PGWAL_RECORD_HEADER,
                                tot_len - PGWAL_RECORD_HEADER);
    return pgwal_crc32c(crc, rec, 20) ^ 0xFFFFFFFFu;
}

/* ---- Names --------------------------------------------------------------------- */

static const char *const rmgr_names[PGWAL_RM_MAX_BUILTIN + 1] = {
    "XLOG",     "Transaction", "Storage",  "CLOG",     "Database", "Tablespace",
    "MultiXact", "RelMap",     "Standby",  "Heap2",    "Heap",     "Btree",
    "Hash",     "Gin",         "Gist",     "Sequence", "SPGist",   "BRIN",
    "CommitTs", "ReplicationOrigin", "Generic", "LogicalMessage",
};

static bool rmid_valid(unsigned rmid)
{
    return rmid <= PGWAL_RM_MAX_BUILTIN || (rmid >= PGWAL_RM_MIN_CUSTOM && rmid <= 255);
}

const char *pgwal_rmgr_name(unsigned rmid)
{
    if (rmid <= PGWAL_RM_MAX_BUILTIN)
        return rmgr_names[rmid];
    if (rmid >= PGWAL_RM_MIN_CUSTOM && rmid <= 255)
        return "custom";
    return NULL;
}

const char *pgwal_record_name(unsigned rmid, unsigned info)
{
    unsigned k = info & 0xF0;
    switch (rmid) {
    case PGWAL_RM_XLOG:
        switch (k) {
        case PGWAL_XLOG_CHECKPOINT_SHUTDOWN: return "CHECKPOINT_SHUTDOWN";
        case PGWAL_XLOG_CHECKPOINT_ONLINE: return "CHECKPOINT_ONLINE";
        case PGWAL_XLOG_NOOP: return "NOOP";
        case PGWAL_XLOG_NEXTOID: return "NEXTOID";
        case PGWAL_XLOG_SWITCH: return "SWITCH";
        case PGWAL_XLOG_BACKUP_END: return "BACKUP_END";
        case PGWAL_XLOG_PARAMETER_CHANGE: return "PARAMETER_CHANGE";
        case PGWAL_XLOG_RESTORE_POINT: return "RESTORE_POINT";
        case PGWAL_XLOG_FPW_CHANGE: return "FPW_CHANGE";
        case PGWAL_XLOG_END_OF_RECOVERY: return "END_OF_RECOVERY";
        case PGWAL_XLOG_FPI_FOR_HINT: return "FPI_FOR_HINT";
        case PGWAL_XLOG_FPI: return "FPI";
        case PGWAL_XLOG_OVERWRITE_CONTRECORD: return "OVERWRITE_CONTRECORD";
        default: return NULL;
        }
    case PGWAL_RM_XACT:
        switch (k & PGWAL_XACT_OPMASK) {
        case PGWAL_XACT_COMMIT: return "COMMIT";
        case PGWAL_XACT_PREPARE: return "PREPARE";
        case PGWAL_XACT_ABORT: return "ABORT";
        case PGWAL_XACT_COMMIT_PREPARED: return "COMMIT_PREPARED";
        case PGWAL_XACT_ABORT_PREPARED: return "ABORT_PREPARED";
        case PGWAL_XACT_ASSIGNMENT: return "ASSIGNMENT";
        case PGWAL_XACT_INVALIDATIONS: return "INVALIDATION";
        default: return NULL;
        }
    case PGWAL_RM_SMGR:
        switch (k) {
        case PGWAL_SMGR_CREATE: return "CREATE";
        case PGWAL_SMGR_TRUNCATE: return "TRUNCATE";
        default: return NULL;
        }
    case PGWAL_RM_STANDBY:
        switch (k) {
        case PGWAL_STANDBY_LOCK: return "LOCK";
        case PGWAL_STANDBY_RUNNING_XACTS: return "RUNNING_XACTS";
        case PGWAL_STANDBY_INVALIDATIONS: return "INVALIDATIONS";
        default: return NULL;
        }
    case PGWAL_RM_HEAP:
        switch (k) {
        case PGWAL_HEAP_INSERT: return "INSERT";
        case PGWAL_HEAP_INSERT | PGWAL_HEAP_INIT_PAGE: return "INSERT+INIT";
        case PGWAL_HEAP_DELETE: return "DELETE";
        case PGWAL_HEAP_UPDATE: return "UPDATE";
        case PGWAL_HEAP_UPDATE | PGWAL_HEAP_INIT_PAGE: return "UPDATE+INIT";
        case PGWAL_HEAP_HOT_UPDATE: return "HOT_UPDATE";
        case PGWAL_HEAP_HOT_UPDATE | PGWAL_HEAP_INIT_PAGE: return "HOT_UPDATE+INIT";
        case PGWAL_HEAP_TRUNCATE: return "TRUNCATE";
        case PGWAL_HEAP_CONFIRM: return "HEAP_CONFIRM";
        case PGWAL_HEAP_LOCK: return "LOCK";
        case PGWAL_HEAP_INPLACE: return "INPLACE";
        default: return NULL;
        }
    case PGWAL_RM_HEAP2:
        switch (k) {
        case PGWAL_HEAP2_REWRITE: return "REWRITE";
        case PGWAL_HEAP2_PRUNE: return "PRUNE";
        case PGWAL_HEAP2_VACUUM: return "VACUUM";
        case PGWAL_HEAP2_FREEZE_PAGE: return "FREEZE_PAGE";
        case PGWAL_HEAP2_VISIBLE: return "VISIBLE";
        case PGWAL_HEAP2_MULTI_INSERT: return "MULTI_INSERT";
        case PGWAL_HEAP2_MULTI_INSERT | PGWAL_HEAP_INIT_PAGE: return "MULTI_INSERT+INIT";
        case PGWAL_HEAP2_LOCK_UPDATED: return "LOCK_UPDATED";
        case PGWAL_HEAP2_NEW_CID: return "NEW_CID";
        default: return NULL;
        }
    default:
        return NULL;
    }
}

/* ---- Record decoding ------------------------------------------------------------ */

int pgwal_decode_record(const uint8_t *buf, size_t len, uint64_t lsn, struct pgwal_record *out,
                        char *err, size_t errlen)
{
    /* Only the blocks up to max_block_id are set (pgwal.h): with its 33
     * block slots a record is 2 KiB, and zeroing them all, then copying the
     * record out, was 85% of this function (perf: rep stos and rep movs,
     * 5% of the physical follower's inserts). */
    struct pgwal_record *r = out;
    memset(r, 0, offsetof(struct pgwal_record, blocks));
    r->max_block_id = -1;
    r->fpi_len = 0;
    r->main_data = NULL;
    r->main_data_len = 0;
    r->raw = NULL;
    if (buf == NULL || len < PGWAL_RECORD_HEADER)
        return fail_at(err, errlen, lsn, "%zu bytes, less than a record header (%d)", len,
                       PGWAL_RECORD_HEADER);
    uint32_t tot_len = le_load_u32(buf);
    if (tot_len != len)
        return fail_at(err, errlen, lsn, "xl_tot_len is %u, the record has %zu bytes", tot_len,
                       len);
    r->lsn = lsn;
    r->tot_len = tot_len;
    r->xid = le_load_u32(buf + 4);
    r->prev = le_load_u64(buf + 8);
    r->info = buf[16];
    r->rmid = buf[17];
    r->crc = le_load_u32(buf + 20);
    r->raw = buf;
    if (!rmid_valid(r->rmid))
        return fail_at(err, errlen, lsn, "unknown resource manager id %u", (unsigned)r->rmid);

    /* The headers: block headers, origin, top-level xid, then the main
     * data's header, which comes last. remaining counts the bytes after
     * the record header, datatotal the payload the headers announce. */
    const uint8_t *p = buf + PGWAL_RECORD_HEADER;
    size_t remaining = tot_len - PGWAL_RECORD_HEADER;
    uint64_t datatotal = 0;
    bool have_rel = false;
    struct pgwal_relfilenode last_rel = {0, 0, 0};
#define NEED(n, what)                                                                            \
    do {                                                                                         \
        if (remaining < (size_t)(n))                                                             \
            return fail_at(err, errlen, lsn, "truncated at %s (offset %zu)", what,               \
                           (size_t)(p - buf));                                                   \
    } while (0)
    while (remaining > datatotal) {
        NEED(1, "block id");
        uint8_t id = *p++;
        remaining--;
        if (id == XLR_BLOCK_ID_DATA_SHORT) {
            NEED(1, "main data length");
            r->main_data_len = *p++;
            remaining--;
            datatotal += r->main_data_len;
            break;
        }
        if (id == XLR_BLOCK_ID_DATA_LONG) {
            NEED(4, "main data length");
            r->main_data_len = le_load_u32(p);
            p += 4;
            remaining -= 4;
            datatotal += r->main_data_len;
            break;
        }
        if (id == XLR_BLOCK_ID_ORIGIN) {
            NEED(2, "origin");
            r->has_origin = true;
            r->origin = le_load_u16(p);
            p += 2;
            remaining -= 2;
            continue;
        }
        if (id == XLR_BLOCK_ID_TOPLEVEL_XID) {
            NEED(4, "top-level xid");
            r->toplevel_xid = le_load_u32(p);
            p += 4;
            remaining -= 4;
            continue;
        }
        if (id > XLR_MAX_BLOCK_ID)
            return fail_at(err, errlen, lsn, "invalid block id %u", (unsigned)id);
        if ((int)id <= r->max_block_id)
            return fail_at(err, errlen, lsn, "block %u after block %d: ids must increase",
                           (unsigned)id, r->max_block_id);
        for (int skipped = r->max_block_id + 1; skipped < id; skipped++)
            r->blocks[skipped].in_use = false;
        r->max_block_id = id;
        struct pgwal_block *b = &r->blocks[id];
        *b = (struct pgwal_block){.in_use = true};
        NEED(3, "block header");
        uint8_t fork_flags = p[0];
        b->data_len = le_load_u16(p + 1);
        p += 3;
        remaining -= 3;
        b->fork = fork_flags & 0x0F;
        b->flags = fork_flags & 0xF0;
        if (b->fork > PGWAL_FORK_INIT)
            return fail_at(err, errlen, lsn, "block %u: unknown fork %u", (unsigned)id,
                           (unsigned)b->fork);
        b->has_image = (fork_flags & PGWAL_BKPBLOCK_HAS_IMAGE) != 0;
        b->has_data = (fork_flags & PGWAL_BKPBLOCK_HAS_DATA) != 0;
        b->will_init = (fork_flags & PGWAL_BKPBLOCK_WILL_INIT) != 0;
        if (b->has_data && b->data_len == 0)
            return fail_at(err, errlen, lsn, "block %u: BKPBLOCK_HAS_DATA set, but no data",
                           (unsigned)id);
        if (!b->has_data && b->data_len != 0)
            return fail_at(err, errlen, lsn,
                           "block %u: BKPBLOCK_HAS_DATA not set, but data length is %u",
                           (unsigned)id, (unsigned)b->data_len);
        datatotal += b->data_len;
        if (b->has_image) {
            NEED(5, "block image header");
            b->bimg_len = le_load_u16(p);
            b->hole_offset = le_load_u16(p + 2);
            b->bimg_info = p[4];
            p += 5;
            remaining -= 5;
            b->apply_image = (b->bimg_info & PGWAL_BKPIMAGE_APPLY) != 0;
            bool has_hole = (b->bimg_info & PGWAL_BKPIMAGE_HAS_HOLE) != 0;
            bool compressed = (b->bimg_info & (PGWAL_BKPIMAGE_COMPRESS_PGLZ |
                                               PGWAL_BKPIMAGE_COMPRESS_LZ4 |
                                               PGWAL_BKPIMAGE_COMPRESS_ZSTD)) != 0;
            if (compressed) {
                if (has_hole) {
                    NEED(2, "block image hole length");
                    b->hole_length = le_load_u16(p);
                    p += 2;
                    remaining -= 2;
                }
            } else {
                if (b->bimg_len > PGWAL_PAGE_SIZE)
                    return fail_at(err, errlen, lsn,
                                   "block %u: uncompressed image of %u bytes, more than a page",
                                   (unsigned)id, (unsigned)b->bimg_len);
                b->hole_length = (uint16_t)(PGWAL_PAGE_SIZE - b->bimg_len);
            }
            datatotal += b->bimg_len;
            if (has_hole &&
                (b->hole_offset == 0 || b->hole_length == 0 || b->bimg_len == PGWAL_PAGE_SIZE))
                return fail_at(err, errlen, lsn,
                               "block %u: BKPIMAGE_HAS_HOLE set, but hole offset %u length %u "
                               "image length %u",
                               (unsigned)id, (unsigned)b->hole_offset, (unsigned)b->hole_length,
                               (unsigned)b->bimg_len);
            if (!has_hole && (b->hole_offset != 0 || b->hole_length != 0))
                return fail_at(err, errlen, lsn,
                               "block %u: BKPIMAGE_HAS_HOLE not set, but hole offset %u length %u",
                               (unsigned)id, (unsigned)b->hole_offset, (unsigned)b->hole_length);
            if (compressed && b->bimg_len == PGWAL_PAGE_SIZE)
                return fail_at(err, errlen, lsn,
                               "block %u: compressed image of a whole page's length",
                               (unsigned)id);
            if ((uint32_t)b->hole_offset + b->hole_length > PGWAL_PAGE_SIZE)
                return fail_at(err, errlen, lsn, "block %u: hole at %u of %u bytes past the page",
                               (unsigned)id, (unsigned)b->hole_offset, (unsigned)b->hole_length);
        }
        if (!(fork_flags & PGWAL_BKPBLOCK_SAME_REL)) {
            NEED(12, "relfilenode");
            last_rel.spc = le_load_u32(p);
            last_rel.db = le_load_u32(p + 4);
            last_rel.rel = le_load_u32(p + 8);
            p += 12;
            remaining -= 12;
            have_rel = true;
        } else if (!have_rel) {
            return fail_at(err, errlen, lsn,
                           "block %u: BKPBLOCK_SAME_REL set, but no relation before it",
                           (unsigned)id);
        }
        b->node = last_rel;
        NEED(4, "block number");
        b->blkno = le_load_u32(p);
        p += 4;
        remaining -= 4;
    }
#undef NEED
    if (remaining != datatotal)
        return fail_at(err, errlen, lsn,
                       "the headers announce %llu bytes of data, the record has %zu after them",
                       (unsigned long long)datatotal, remaining);

    /* The payloads, in the order of the headers. */
    for (int i = 0; i <= r->max_block_id; i++) {
        struct pgwal_block *b = &r->blocks[i];
        if (!b->in_use)
            continue;
        if (b->has_image) {
            b->image = p;
            p += b->bimg_len;
            r->fpi_len += b->bimg_len;
        }
        if (b->has_data) {
            b->data = p;
            p += b->data_len;
        }
    }
    if (r->main_data_len > 0) {
        r->main_data = p;
        p += r->main_data_len;
    }
    return 0;
}

/* ---- Page images ------------------------------------------------------------------ */

int pgwal_block_image(const struct pgwal_block *b, uint8_t page[PGWAL_PAGE_SIZE], char *err,
                      size_t errlen)
{
    if (!b->in_use || !b->has_image || b->image == NULL)
        return error_fmt(err, errlen, "the block has no page image");
    if ((uint32_t)b->hole_offset + b->hole_length > PGWAL_PAGE_SIZE)
        return error_fmt(err, errlen, "page image hole at %u of %u bytes is past the page",
                         (unsigned)b->hole_offset, (unsigned)b->hole_length);
    size_t want = PGWAL_PAGE_SIZE - b->hole_length;
    uint8_t tmp[PGWAL_PAGE_SIZE];
    const uint8_t *src = b->image;
    unsigned method = b->bimg_info & (PGWAL_BKPIMAGE_COMPRESS_PGLZ | PGWAL_BKPIMAGE_COMPRESS_LZ4 |
                                      PGWAL_BKPIMAGE_COMPRESS_ZSTD);
    switch (method) {
    case 0:
        if (b->bimg_len != want)
            return error_fmt(err, errlen, "page image of %u bytes with a hole of %u: not a page",
                             (unsigned)b->bimg_len, (unsigned)b->hole_length);
        break;
    case PGWAL_BKPIMAGE_COMPRESS_PGLZ:
        /* RestoreBlockImage's check_complete: the image is the whole page
         * but its hole, no byte more or less. */
        if (pglz_decompress(b->image, b->bimg_len, tmp, want, true) != (long)want)
            return error_fmt(err, errlen,
                             "pglz page image of %u bytes does not decompress to %zu bytes",
                             (unsigned)b->bimg_len, want);
        src = tmp;
        break;
    case PGWAL_BKPIMAGE_COMPRESS_LZ4: {
        int n = LZ4_decompress_safe((const char *)b->image, (char *)tmp, (int)b->bimg_len,
                                    (int)want);
        if (n != (int)want)
            return error_fmt(err, errlen,
                             "lz4 page image of %u bytes does not decompress to %zu bytes",
                             (unsigned)b->bimg_len, want);
        src = tmp;
        break;
    }
    case PGWAL_BKPIMAGE_COMPRESS_ZSTD:
        return error_fmt(err, errlen,
                         "page image compressed with zstd: not supported (the server's "
                         "wal_compression must be off, pglz or lz4)");
    default:
        return error_fmt(err, errlen, "page image flags 0x%02X name several compression methods",
                         (unsigned)b->bimg_info);
    }
    memcpy(page, src, b->hole_offset);
    memset(page + b->hole_offset, 0, b->hole_length);
    memcpy(page + b->hole_offset + b->hole_length, src + b->hole_offset,
           PGWAL_PAGE_SIZE - b->hole_offset - b->hole_length);
    return 0;
}

int pgwal_page_tuple(const uint8_t page[PGWAL_PAGE_SIZE], uint16_t offnum, const uint8_t **tup,
                     uint16_t *len, char *err, size_t errlen)
{
    /* PageHeaderData: pd_lower at 12, pd_upper 14, pd_special 16,
     * pd_pagesize_version 18; the line pointers from 24, 4 bytes each:
     * lp_off 15 bits, lp_flags 2, lp_len 15. */
    uint16_t lower = le_load_u16(page + 12), upper = le_load_u16(page + 14);
    uint16_t special = le_load_u16(page + 16);
    uint16_t version = le_load_u16(page + 18);
    if (version != (PGWAL_PAGE_SIZE | 4))
        return error_fmt(err, errlen,
                         "page size and version 0x%04X, not an 8192-byte page of layout 4",
                         (unsigned)version);
    if (lower < 24 || lower > upper || upper > special || special > PGWAL_PAGE_SIZE)
        return error_fmt(err, errlen, "page bounds lower %u upper %u special %u out of order",
                         (unsigned)lower, (unsigned)upper, (unsigned)special);
    unsigned nline = (lower - 24u) / 4u;
    if (offnum == 0 || offnum > nline)
        return error_fmt(err, errlen, "offset %u, the page has %u line pointers",
                         (unsigned)offnum, nline);
    uint32_t lp = le_load_u32(page + 24 + 4 * (offnum - 1));
    unsigned lp_off = lp & 0x7FFF, lp_flags = (lp >> 15) & 3, lp_len = lp >> 17;
    if (lp_flags != 1) {
        static const char *const kinds[] = {"unused", "normal", "a redirect", "dead"};
        return error_fmt(err, errlen, "line pointer %u is %s, not a tuple", (unsigned)offnum,
                         kinds[lp_flags]);
    }
    if (lp_len < PGWAL_TUPLE_HEADER || lp_off + lp_len > PGWAL_PAGE_SIZE)
        return error_fmt(err, errlen, "tuple %u at %u of %u bytes is outside the page",
                         (unsigned)offnum, lp_off, lp_len);
    *tup = page + lp_off;
    *len = (uint16_t)lp_len;
    return 0;
}

/* ---- Reader ------------------------------------------------------------------------- */

enum {
    PH_START_PAGE,   /* started at a page boundary: its header decides */
    PH_SKIP_CONT,    /* skipping a record continued from before the start */
    PH_RECORD_START, /* the next byte starts a record */
    PH_RECORD,       /* assembling a record */
    PH_SKIP_TO,      /* skipping padding, or a segment's rest, to skip_to */
};

ATTR_PRINTF(2, 3)
static int reader_fail(struct pgwal_reader *r, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    error_vfmt(r->error, sizeof r->error, fmt, ap);
    va_end(ap);
    r->failed = true;
    return -1;
}

static int reader_error(const struct pgwal_reader *r, char *err, size_t errlen)
{
    return error_fmt(err, errlen, "%s", r->error);
}

int pgwal_reader_init(struct pgwal_reader *r, uint32_t seg_size, uint64_t start, uint64_t sysid,
                      char *err, size_t errlen)
{
    memset(r, 0, sizeof *r);
    if (seg_size < PGWAL_SEG_MIN || seg_size > PGWAL_SEG_MAX || (seg_size & (seg_size - 1)) != 0)
        return error_fmt(err, errlen,
                         "WAL segment size %u: PostgreSQL's is a power of two from 1 MiB to 1 GiB",
                         (unsigned)seg_size);
    if (start % 8 != 0)
        return error_fmt(err, errlen, "WAL start " LSN_FMT " is not 8-byte aligned: no record "
                         "starts there", LSN_ARGS(start));
    if (start > PGWAL_LSN_MAX)
        return error_fmt(err, errlen, "WAL start " LSN_FMT " is past the last LSN read ("
                         LSN_FMT ")", LSN_ARGS(start), LSN_ARGS(PGWAL_LSN_MAX));
    uint64_t in_page = start % PGWAL_PAGE_SIZE;
    if (in_page != 0) {
        unsigned header = start % seg_size < PGWAL_PAGE_SIZE ? LONG_PAGE_HEADER : SHORT_PAGE_HEADER;
        if (in_page < header)
            return error_fmt(err, errlen,
                             "WAL start " LSN_FMT " is inside its page's %u-byte header",
                             LSN_ARGS(start), header);
    }
    r->check_crc = true;
    r->seg_size = seg_size;
    r->sysid = sysid;
    r->pos = start;
    r->hdr_page = UINT64_MAX;
    r->phase = in_page == 0 ? PH_START_PAGE : PH_RECORD_START;
    return 0;
}

void pgwal_reader_free(struct pgwal_reader *r)
{
    free(r->buf);
    memset(r, 0, sizeof *r);
}

uint64_t pgwal_reader_want(const struct pgwal_reader *r)
{
    return r->pos + r->in_len;
}

int pgwal_reader_feed(struct pgwal_reader *r, uint64_t lsn, const void *buf, size_t len, char *err,
                      size_t errlen)
{
    if (r->failed)
        return reader_error(r, err, errlen);
    if (r->in_len > 0)
        return error_fmt(err, errlen, "WAL fed at " LSN_FMT " before the piece up to " LSN_FMT
                         " was read", LSN_ARGS(lsn), LSN_ARGS(r->pos + r->in_len));
    if (buf == NULL && len > 0)
        return error_fmt(err, errlen, "WAL piece of %zu bytes without its bytes", len);
    if (lsn > PGWAL_LSN_MAX || len > PGWAL_LSN_MAX - lsn)
        return error_fmt(err, errlen, "WAL piece at " LSN_FMT " of %zu bytes passes the last LSN "
                         "read (" LSN_FMT ")", LSN_ARGS(lsn), len, LSN_ARGS(PGWAL_LSN_MAX));
    if (lsn > r->pos)
        return error_fmt(err, errlen, "WAL piece starts at " LSN_FMT ", the reader is at " LSN_FMT
                         ": %llu bytes missing", LSN_ARGS(lsn), LSN_ARGS(r->pos),
                         (unsigned long long)(lsn - r->pos));
    uint64_t skip = r->pos - lsn;
    if (skip >= len)
        return 0; /* all of it read before */
    r->in = (const uint8_t *)buf + skip;
    r->in_len = len - (size_t)skip;
    return 0;
}

/* Takes n bytes of input (copying them to dst unless it is NULL). */
static void take(struct pgwal_reader *r, uint8_t *dst, size_t n)
{
    if (dst != NULL)
        memcpy(dst, r->in, n);
    r->in += n;
    r->in_len -= n;
    r->pos += n;
    if (r->in_len == 0)
        r->in = NULL;
}

static size_t min_size(size_t a, size_t b)
{
    return a < b ? a : b;
}

/* Checks the header of the page at page (in r->page_hdr, complete) and
 * moves the phase on. Returns 0 or -1 (r failed). */
static int page_header(struct pgwal_reader *r, uint64_t page)
{
    const uint8_t *h = r->page_hdr;
    uint16_t info = le_load_u16(h + 2);
    uint32_t tli = le_load_u32(h + 4), rem_len = le_load_u32(h + 16);
    uint64_t pageaddr = le_load_u64(h + 8);
    if (info & XLP_LONG_HEADER) {
        uint64_t sysid = le_load_u64(h + 24);
        uint32_t seg_size = le_load_u32(h + 32), blcksz = le_load_u32(h + 36);
        if (blcksz != PGWAL_PAGE_SIZE)
            return reader_fail(r, "WAL page at " LSN_FMT ": pages of %u bytes; only 8192-byte "
                               "pages (PostgreSQL's default XLOG_BLCKSZ) are supported",
                               LSN_ARGS(page), (unsigned)blcksz);
        if (seg_size != r->seg_size)
            return reader_fail(r, "WAL page at " LSN_FMT ": segments of %u bytes, the reader "
                               "was set up for %u", LSN_ARGS(page), (unsigned)seg_size,
                               (unsigned)r->seg_size);
        if (r->sysid != 0 && sysid != r->sysid)
            return reader_fail(r, "WAL page at " LSN_FMT ": system identifier %llu, expected "
                               "%llu: WAL of another cluster", LSN_ARGS(page),
                               (unsigned long long)sysid, (unsigned long long)r->sysid);
        r->sysid = sysid;
    } else if (page % r->seg_size == 0) {
        return reader_fail(r, "WAL page at " LSN_FMT " starts a segment but has no long header "
                           "(info 0x%04X)", LSN_ARGS(page), (unsigned)info);
    }
    if (pageaddr != page)
        return reader_fail(r, "WAL page at " LSN_FMT " says it is at " LSN_FMT
                           " (an old segment's page, or not WAL)", LSN_ARGS(page),
                           LSN_ARGS(pageaddr));
    if (r->last_page != 0 && page > r->last_page && tli < r->tli)
        return reader_fail(r, "WAL page at " LSN_FMT ": timeline %u after timeline %u",
                           LSN_ARGS(page), (unsigned)tli, (unsigned)r->tli);
    r->tli = tli;
    r->last_page = page;

    bool cont = (info & XLP_FIRST_IS_CONTRECORD) != 0;
    bool overwrite = (info & XLP_FIRST_IS_OVERWRITE_CONTRECORD) != 0;
    switch (r->phase) {
    case PH_START_PAGE:
        if (cont && !overwrite) {
            if (rem_len == 0)
                return reader_fail(r, "WAL page at " LSN_FMT ": continuation flag, but no "
                                   "bytes remaining", LSN_ARGS(page));
            r->skip_left = rem_len;
            r->phase = PH_SKIP_CONT;
        } else {
            r->phase = PH_RECORD_START;
        }
        break;
    case PH_SKIP_CONT:
        if (overwrite) {
            /* The record being skipped was cut short by a crash; the first
             * record here replaces it. Which one it was is unknown. */
            r->skip_left = 0;
            r->aborted_lsn = UINT64_MAX;
            r->phase = PH_RECORD_START;
        } else if (!cont || rem_len != r->skip_left) {
            return reader_fail(r, "WAL page at " LSN_FMT ": expected %u bytes of a record "
                               "continued from before, the page has flags 0x%04X and "
                               "xlp_rem_len %u", LSN_ARGS(page), (unsigned)r->skip_left,
                               (unsigned)info, (unsigned)rem_len);
        }
        break;
    case PH_RECORD:
        if (overwrite) {
            /* The record being assembled was never finished: the server
             * crashed writing it and, recovering, wrote on from this page. */
            r->aborted_lsn = r->rec_lsn;
            r->got = 0;
            r->phase = PH_RECORD_START;
        } else if (!cont) {
            return reader_fail(r, "WAL page at " LSN_FMT ": the record at " LSN_FMT
                               " continues here, but the page has no continuation flag",
                               LSN_ARGS(page), LSN_ARGS(r->rec_lsn));
        } else if (rem_len != r->tot_len - r->got) {
            return reader_fail(r, "WAL page at " LSN_FMT ": xlp_rem_len %u, but the record at "
                               LSN_FMT " misses %u bytes", LSN_ARGS(page), (unsigned)rem_len,
                               LSN_ARGS(r->rec_lsn), (unsigned)(r->tot_len - r->got));
        }
        break;
    case PH_RECORD_START:
        if (cont)
            return reader_fail(r, "WAL page at " LSN_FMT " continues a record, but the record "
                               "before ended at the page's start", LSN_ARGS(page));
        break;
    default:
        break;
    }
    return 0;
}

/* Reads the header of the page starting at pos - page_hdr_got. Returns 1
 * when it is read and checked, 0 when input ran out, -1 on error. */
static int read_page_header(struct pgwal_reader *r)
{
    while (r->page_hdr_got < SHORT_PAGE_HEADER) {
        if (r->in_len == 0)
            return 0;
        size_t n = min_size(r->in_len, SHORT_PAGE_HEADER - r->page_hdr_got);
        take(r, r->page_hdr + r->page_hdr_got, n);
        r->page_hdr_got += (uint32_t)n;
    }
    uint64_t page = r->pos - r->page_hdr_got;
    uint16_t magic = le_load_u16(r->page_hdr), info = le_load_u16(r->page_hdr + 2);
    if (magic != XLOG_PAGE_MAGIC)
        return reader_fail(r, "WAL page at " LSN_FMT ": magic 0x%04X, not PostgreSQL 15's 0x%04X "
                           "(WAL of another major version or byte order, or not WAL)",
                           LSN_ARGS(page), (unsigned)magic, XLOG_PAGE_MAGIC);
    if (info & ~XLP_ALL_FLAGS)
        return reader_fail(r, "WAL page at " LSN_FMT ": unknown info bits 0x%04X",
                           LSN_ARGS(page), (unsigned)info);
    uint32_t size = (info & XLP_LONG_HEADER) ? LONG_PAGE_HEADER : SHORT_PAGE_HEADER;
    while (r->page_hdr_got < size) {
        if (r->in_len == 0)
            return 0;
        size_t n = min_size(r->in_len, size - r->page_hdr_got);
        take(r, r->page_hdr + r->page_hdr_got, n);
        r->page_hdr_got += (uint32_t)n;
    }
    r->page_hdr_got = 0;
    r->hdr_page = page;
    if (page_header(r, page) != 0)
        return -1;
    return 1;
}

/* Makes room for need bytes of the record being assembled. */
static int grow(struct pgwal_reader *r, size_t need)
{
    if (need <= r->cap)
        return 0;
    size_t cap = r->cap > 0 ? r->cap : PGWAL_FIRST_BYTES;
    while (cap < need)
        cap *= 2;
    if (r->tot_len > 0 && cap > r->tot_len && need <= r->tot_len)
        cap = r->tot_len;
    uint8_t *b = realloc(r->buf, cap);
    if (b == NULL)
        return reader_fail(r, "WAL record at " LSN_FMT ": out of memory for %zu bytes",
                           LSN_ARGS(r->rec_lsn), cap);
    r->buf = b;
    r->cap = cap;
    return 0;
}

uint64_t pgwal_last_record_end(uint64_t next, uint32_t block, uint32_t seg)
{
    if (block && seg && next % seg == LONG_PAGE_HEADER)
        return next - LONG_PAGE_HEADER;
    if (block && seg && next % block == SHORT_PAGE_HEADER && next % seg >= block)
        return next - SHORT_PAGE_HEADER;
    return next;
}

/* Checks the record header once its 24 bytes are in. */
static int record_header(struct pgwal_reader *r)
{
    const uint8_t *h = r->buf;
    unsigned rmid = h[17];
    uint64_t prev = le_load_u64(h + 8);
    if (!rmid_valid(rmid))
        return reader_fail(r, "WAL record at " LSN_FMT ": unknown resource manager id %u",
                           LSN_ARGS(r->rec_lsn), rmid);
    if (r->prev_lsn != 0) {
        if (prev != r->prev_lsn)
            return reader_fail(r, "WAL record at " LSN_FMT ": xl_prev " LSN_FMT ", but the "
                               "record before is at " LSN_FMT, LSN_ARGS(r->rec_lsn),
                               LSN_ARGS(prev), LSN_ARGS(r->prev_lsn));
    } else if (prev >= r->rec_lsn) {
        return reader_fail(r, "WAL record at " LSN_FMT ": xl_prev " LSN_FMT " is not before it",
                           LSN_ARGS(r->rec_lsn), LSN_ARGS(prev));
    }
    return 0;
}

/* The record in r->buf is whole: check, decode, yield. */
static int finish_record(struct pgwal_reader *r, struct pgwal_record *out)
{
    char msg[sizeof r->error];
    if (r->check_crc) {
        uint32_t want = le_load_u32(r->buf + 20), got = record_crc(r->buf, r->tot_len);
        if (want != got)
            return reader_fail(r, "WAL record at " LSN_FMT ": CRC-32C 0x%08X, the record says "
                               "0x%08X", LSN_ARGS(r->rec_lsn), (unsigned)got, (unsigned)want);
    }
    if (pgwal_decode_record(r->buf, r->tot_len, r->rec_lsn, out, msg, sizeof msg) != 0)
        return reader_fail(r, "%s", msg);
    if (r->aborted_lsn != 0) {
        /* The first record on an XLP_FIRST_IS_OVERWRITE_CONTRECORD page. */
        bool ok = out->rmid == PGWAL_RM_XLOG &&
                  (out->info & 0xF0) == PGWAL_XLOG_OVERWRITE_CONTRECORD &&
                  out->main_data_len == 16 &&
                  (r->aborted_lsn == UINT64_MAX || le_load_u64(out->main_data) == r->aborted_lsn);
        if (!ok) {
            memset(out, 0, sizeof *out);
            return reader_fail(r, "WAL record at " LSN_FMT ": the page overwrites the "
                               "unfinished record at " LSN_FMT ", but its first record is no "
                               "OVERWRITE_CONTRECORD naming it", LSN_ARGS(r->rec_lsn),
                               LSN_ARGS(r->aborted_lsn == UINT64_MAX ? 0 : r->aborted_lsn));
        }
        r->aborted_lsn = 0;
    }
    uint64_t end = maxalign(r->pos);
    if (out->rmid == PGWAL_RM_XLOG && (out->info & 0xF0) == PGWAL_XLOG_SWITCH &&
        end % r->seg_size != 0)
        end += r->seg_size - end % r->seg_size;
    out->end = end;
    out->tli = r->tli;
    r->prev_lsn = r->rec_lsn;
    r->skip_to = end;
    r->phase = PH_SKIP_TO;
    return 1;
}

int pgwal_reader_next(struct pgwal_reader *r, struct pgwal_record *out, char *err, size_t errlen)
{
    if (r->failed)
        return reader_error(r, err, errlen);
    for (;;) {
        if (r->phase == PH_SKIP_TO) {
            if (r->pos == r->skip_to) {
                r->phase = PH_RECORD_START;
                continue;
            }
            size_t n = (size_t)min_size(r->in_len, (size_t)(r->skip_to - r->pos));
            if (n == 0)
                return 0;
            take(r, NULL, n);
            continue;
        }
        if (r->page_hdr_got > 0 || (r->pos % PGWAL_PAGE_SIZE == 0 && r->hdr_page != r->pos)) {
            int rc = read_page_header(r);
            if (rc < 0)
                return reader_error(r, err, errlen);
            if (rc == 0)
                return 0;
            continue;
        }
        size_t page_left = PGWAL_PAGE_SIZE - (size_t)(r->pos % PGWAL_PAGE_SIZE);
        switch (r->phase) {
        case PH_SKIP_CONT: {
            size_t n = min_size(min_size(r->in_len, page_left), r->skip_left);
            if (r->skip_left > 0 && n == 0)
                return 0;
            take(r, NULL, n);
            r->skip_left -= (uint32_t)n;
            if (r->skip_left == 0) {
                r->skip_to = maxalign(r->pos);
                r->phase = PH_SKIP_TO;
            }
            continue;
        }
        case PH_RECORD_START:
            if (r->in_len == 0)
                return 0;
            if (r->cap > PGWAL_KEEP_BYTES) {
                free(r->buf);
                r->buf = NULL;
                r->cap = 0;
            }
            r->rec_lsn = r->pos;
            r->got = 0;
            r->tot_len = 0;
            r->header_checked = false;
            r->phase = PH_RECORD;
            continue;
        case PH_RECORD: {
            uint32_t need = r->got < PGWAL_RECORD_HEADER ? PGWAL_RECORD_HEADER : r->tot_len;
            size_t n = min_size(min_size(r->in_len, page_left), need - r->got);
            if (n == 0)
                return 0;
            if (grow(r, r->got + n) != 0)
                return reader_error(r, err, errlen);
            take(r, r->buf + r->got, n);
            r->got += (uint32_t)n;
            if (r->tot_len == 0 && r->got >= 4) {
                uint32_t tot = le_load_u32(r->buf);
                if (tot == 0) {
                    reader_fail(r, "WAL record at " LSN_FMT ": length 0 (zeroed bytes: WAL not "
                                "written yet, or not WAL)", LSN_ARGS(r->rec_lsn));
                    return reader_error(r, err, errlen);
                }
                if (tot < PGWAL_RECORD_HEADER) {
                    reader_fail(r, "WAL record at " LSN_FMT ": length %u, less than a record "
                                "header", LSN_ARGS(r->rec_lsn), (unsigned)tot);
                    return reader_error(r, err, errlen);
                }
                if (tot > PGWAL_MAX_RECORD) {
                    reader_fail(r, "WAL record at " LSN_FMT ": %u bytes, more than the %u the "
                                "reader assembles (PGWAL_MAX_RECORD)", LSN_ARGS(r->rec_lsn),
                                (unsigned)tot, PGWAL_MAX_RECORD);
                    return reader_error(r, err, errlen);
                }
                r->tot_len = tot;
            }
            if (!r->header_checked && r->got >= PGWAL_RECORD_HEADER) {
                if (record_header(r) != 0)
                    return reader_error(r, err, errlen);
                r->header_checked = true;
            }
            if (r->header_checked && r->got == r->tot_len) {
                int rc = finish_record(r, out);
                if (rc < 0)
                    return reader_error(r, err, errlen);
                return 1;
            }
            continue;
        }
        default:
            /* PH_START_PAGE is left by the first page header, read above. */
            reader_fail(r, "WAL reader in an impossible state %d", r->phase);
            return reader_error(r, err, errlen);
        }
    }
}

/* ---- Parsers: a cursor over a record's bytes ------------------------------------- */

struct cur {
    const uint8_t *p;
    size_t len, pos;
    uint64_t lsn;
    const char *what; /* "heap INSERT" */
    char *err;
    size_t errlen;
};

static void cur_init(struct cur *c, const struct pgwal_record *rec, const uint8_t *p, size_t len,
                     const char *what, char *err, size_t errlen)
{
    c->p = p;
    c->len = p != NULL ? len : 0;
    c->pos = 0;
    c->lsn = rec->lsn;
    c->what = what;
    c->err = err;
    c->errlen = errlen;
}

ATTR_PRINTF(2, 3)
static int cur_fail(struct cur *c, const char *fmt, ...)
{
    if (c->err == NULL || c->errlen == 0)
        return -1;
    int n = snprintf(c->err, c->errlen, "WAL record at " LSN_FMT ": %s: ", LSN_ARGS(c->lsn),
                     c->what);
    if (n >= 0 && (size_t)n < c->errlen) {
        va_list ap;
        va_start(ap, fmt);
        error_vfmt(c->err + n, c->errlen - (size_t)n, fmt, ap);
        va_end(ap);
    }
    return -1;
}

static size_t cur_left(const struct cur *c)
{
    return c->len - c->pos;
}

/* n bytes in place, or NULL (and a message) when fewer are left. */
static const uint8_t *cur_take(struct cur *c, size_t n, const char *field)
{
    if (cur_left(c) < n) {
        cur_fail(c, "truncated at %s (%zu bytes left, %zu needed)", field, cur_left(c), n);
        return NULL;
    }
    const uint8_t *p = c->p + c->pos;
    c->pos += n;
    return p;
}

/* count elements of size bytes: a pointer to them (NULL for none), or
 * *ok = false and a message when they are not all there. */
static const uint8_t *cur_array(struct cur *c, uint64_t count, size_t size, const char *field,
                                bool *ok)
{
    if (count > cur_left(c) / size) {
        cur_fail(c, "%llu %s need %llu bytes, %zu left", (unsigned long long)count, field,
                 (unsigned long long)count * size, cur_left(c));
        *ok = false;
        return NULL;
    }
    const uint8_t *p = count > 0 ? c->p + c->pos : NULL;
    c->pos += (size_t)count * size;
    return p;
}

/* Skips to the next multiple of 8 from the cursor's start (MAXALIGN). */
static bool cur_align8(struct cur *c, const char *field)
{
    size_t to = (size_t)maxalign(c->pos);
    if (to > c->len) {
        cur_fail(c, "truncated at the padding after %s", field);
        return false;
    }
    c->pos = to;
    return true;
}

static int cur_done(struct cur *c)
{
    if (cur_left(c) != 0)
        return cur_fail(c, "%zu bytes left over", cur_left(c));
    return 0;
}

/* A count stored as a C int: refused when negative. */
static bool cur_count(struct cur *c, const char *field, uint32_t *n)
{
    const uint8_t *p = cur_take(c, 4, field);
    if (p == NULL)
        return false;
    *n = le_load_u32(p);
    if (*n > INT32_MAX) {
        cur_fail(c, "%s is negative (%d)", field, (int)(*n - 0x80000000u) - INT32_MAX - 1);
        return false;
    }
    return true;
}

/* Main data of exactly len bytes, or a message. */
static const uint8_t *main_exact(struct cur *c, const struct pgwal_record *rec, size_t len)
{
    if (rec->main_data_len != len) {
        cur_fail(c, "main data of %u bytes, expected %zu", (unsigned)rec->main_data_len, len);
        return NULL;
    }
    return rec->main_data;
}

/* Main data of at least len bytes, or a message. */
static const uint8_t *main_atleast(struct cur *c, const struct pgwal_record *rec, size_t len)
{
    if (rec->main_data_len < len) {
        cur_fail(c, "main data of %u bytes, at least %zu expected", (unsigned)rec->main_data_len,
                 len);
        return NULL;
    }
    return rec->main_data;
}

static const struct pgwal_block *need_block(struct cur *c, const struct pgwal_record *rec, int id)
{
    if (rec->max_block_id < id || !rec->blocks[id].in_use) {
        cur_fail(c, "no block %d", id);
        return NULL;
    }
    return &rec->blocks[id];
}

/* xl_heap_header (5 bytes) and the tuple's bytes after it: the rest of
 * [p, p + len). */
static int read_tuple(struct cur *c, const uint8_t *p, size_t len, struct pgwal_tuple *t,
                      const char *which)
{
    if (len < 5)
        return cur_fail(c, "%s of %zu bytes, shorter than its 5-byte header", which, len);
    t->present = true;
    t->infomask2 = le_load_u16(p);
    t->infomask = le_load_u16(p + 2);
    t->hoff = p[4];
    t->data = len > 5 ? p + 5 : NULL;
    t->len = (uint32_t)(len - 5);
    if (t->hoff < PGWAL_TUPLE_HEADER || (uint32_t)(t->hoff - PGWAL_TUPLE_HEADER) > t->len)
        return cur_fail(c, "%s: t_hoff %u outside its %u bytes", which, (unsigned)t->hoff,
                        (unsigned)t->len + PGWAL_TUPLE_HEADER);
    return 0;
}

static bool offnum_valid(uint16_t off)
{
    return off >= 1 && off <= PGWAL_MAX_HEAP_TUPLES;
}

/* ---- Heap ------------------------------------------------------------------------------ */

int pgwal_heap_parse(const struct pgwal_record *rec, struct pgwal_heap *out, char *err,
                     size_t errlen)
{
    memset(out, 0, sizeof *out);
    struct cur c;
    const char *name = pgwal_record_name(rec->rmid, rec->info);
    cur_init(&c, rec, rec->main_data, rec->main_data_len, name ? name : "heap", err, errlen);
    if (rec->rmid != PGWAL_RM_HEAP)
        return cur_fail(&c, "not a heap record (resource manager %u)", (unsigned)rec->rmid);
    struct pgwal_heap h = {.op = rec->info & PGWAL_HEAP_OPMASK,
                           .init_page = (rec->info & PGWAL_HEAP_INIT_PAGE) != 0};
    const uint8_t *m;
    const struct pgwal_block *b0;
    switch (h.op) {
    case PGWAL_HEAP_INSERT:
        /* xl_heap_insert: offnum 0, flags 2; the tuple in block 0's data */
        if ((m = main_exact(&c, rec, 3)) == NULL || (b0 = need_block(&c, rec, 0)) == NULL)
            return -1;
        h.offnum = le_load_u16(m);
        h.flags = m[2];
        if (b0->has_data) {
            if (read_tuple(&c, b0->data, b0->data_len, &h.tuple, "tuple") != 0)
                return -1;
        } else if (!b0->has_image) {
            return cur_fail(&c, "neither the tuple nor a page image");
        }
        break;
    case PGWAL_HEAP_DELETE:
        /* xl_heap_delete: xmax 0, offnum 4, infobits 6, flags 7; the old
         * tuple or key after it */
        if ((m = main_atleast(&c, rec, 8)) == NULL || need_block(&c, rec, 0) == NULL)
            return -1;
        h.xmax = le_load_u32(m);
        h.offnum = le_load_u16(m + 4);
        h.infobits = m[6];
        h.flags = m[7];
        if (h.flags & (PGWAL_XLH_DELETE_CONTAINS_OLD_TUPLE | PGWAL_XLH_DELETE_CONTAINS_OLD_KEY)) {
            if (read_tuple(&c, m + 8, rec->main_data_len - 8, &h.old_tuple, "old tuple") != 0)
                return -1;
        } else if (rec->main_data_len != 8) {
            return cur_fail(&c, "main data of %u bytes without an old tuple, expected 8",
                            (unsigned)rec->main_data_len);
        }
        break;
    case PGWAL_HEAP_UPDATE:
    case PGWAL_HEAP_HOT_UPDATE: {
        /* xl_heap_update: old_xmax 0, old_offnum 4, old_infobits 6,
         * flags 7, new_xmax 8, new_offnum 12; the old tuple or key after
         * it. Block 0's data: prefix and suffix lengths, the new tuple. */
        if ((m = main_atleast(&c, rec, 14)) == NULL || (b0 = need_block(&c, rec, 0)) == NULL)
            return -1;
        h.xmax = le_load_u32(m);
        h.offnum = le_load_u16(m + 4);
        h.infobits = m[6];
        h.flags = m[7];
        h.new_xmax = le_load_u32(m + 8);
        h.new_offnum = le_load_u16(m + 12);
        if (h.flags & (PGWAL_XLH_UPDATE_CONTAINS_OLD_TUPLE | PGWAL_XLH_UPDATE_CONTAINS_OLD_KEY)) {
            if (read_tuple(&c, m + 14, rec->main_data_len - 14, &h.old_tuple, "old tuple") != 0)
                return -1;
        } else if (rec->main_data_len != 14) {
            return cur_fail(&c, "main data of %u bytes without an old tuple, expected 14",
                            (unsigned)rec->main_data_len);
        }
        h.old_block = rec->max_block_id >= 1 && rec->blocks[1].in_use ? 1 : 0;
        if (b0->has_data) {
            struct cur d;
            cur_init(&d, rec, b0->data, b0->data_len, c.what, err, errlen);
            const uint8_t *q;
            if (h.flags & PGWAL_XLH_UPDATE_PREFIX_FROM_OLD) {
                if ((q = cur_take(&d, 2, "prefix length")) == NULL)
                    return -1;
                h.prefix_len = le_load_u16(q);
            }
            if (h.flags & PGWAL_XLH_UPDATE_SUFFIX_FROM_OLD) {
                if ((q = cur_take(&d, 2, "suffix length")) == NULL)
                    return -1;
                h.suffix_len = le_load_u16(q);
            }
            if (read_tuple(&c, d.p + d.pos, cur_left(&d), &h.tuple, "new tuple") != 0)
                return -1;
        } else if (!b0->has_image) {
            return cur_fail(&c, "neither the new tuple nor a page image");
        }
        if (!offnum_valid(h.new_offnum))
            return cur_fail(&c, "new tuple offset %u", (unsigned)h.new_offnum);
        break;
    }
    case PGWAL_HEAP_TRUNCATE: {
        /* xl_heap_truncate: dbId 0, nrelids 4, flags 8, relids from 12 */
        if ((m = main_atleast(&c, rec, 12)) == NULL)
            return -1;
        h.db_id = le_load_u32(m);
        h.nrelids = le_load_u32(m + 4);
        h.flags = m[8];
        c.pos = 12;
        bool ok = true;
        h.relids = cur_array(&c, h.nrelids, 4, "relation OIDs", &ok);
        if (!ok || cur_done(&c) != 0)
            return -1;
        *out = h;
        return 0;
    }
    case PGWAL_HEAP_CONFIRM:
        if ((m = main_exact(&c, rec, 2)) == NULL || need_block(&c, rec, 0) == NULL)
            return -1;
        h.offnum = le_load_u16(m);
        break;
    case PGWAL_HEAP_LOCK:
        /* xl_heap_lock: locking_xid 0, offnum 4, infobits_set 6, flags 7 */
        if ((m = main_exact(&c, rec, 8)) == NULL || need_block(&c, rec, 0) == NULL)
            return -1;
        h.xmax = le_load_u32(m);
        h.offnum = le_load_u16(m + 4);
        h.infobits = m[6];
        h.flags = m[7];
        break;
    case PGWAL_HEAP_INPLACE:
        if ((m = main_exact(&c, rec, 2)) == NULL || (b0 = need_block(&c, rec, 0)) == NULL)
            return -1;
        h.offnum = le_load_u16(m);
        if (b0->has_data) {
            h.inplace_data = b0->data;
            h.inplace_len = b0->data_len;
        }
        break;
    }
    if (!offnum_valid(h.offnum))
        return cur_fail(&c, "tuple offset %u", (unsigned)h.offnum);
    *out = h;
    return 0;
}

/* ---- Heap2 ------------------------------------------------------------------------------ */

int pgwal_heap2_parse(const struct pgwal_record *rec, struct pgwal_heap2 *out, char *err,
                      size_t errlen)
{
    memset(out, 0, sizeof *out);
    struct cur c;
    const char *name = pgwal_record_name(rec->rmid, rec->info);
    cur_init(&c, rec, rec->main_data, rec->main_data_len, name ? name : "heap2", err, errlen);
    if (rec->rmid != PGWAL_RM_HEAP2)
        return cur_fail(&c, "not a heap2 record (resource manager %u)", (unsigned)rec->rmid);
    struct pgwal_heap2 h = {.op = rec->info & PGWAL_HEAP_OPMASK,
                            .init_page = (rec->info & PGWAL_HEAP_INIT_PAGE) != 0};
    const uint8_t *m;
    const struct pgwal_block *b0;
    switch (h.op) {
    case PGWAL_HEAP2_REWRITE:
        /* xl_heap_rewrite_mapping: mapped_xid 0, mapped_db 4, mapped_rel 8,
         * offset 16, num_mappings 24, start_lsn 32; the mappings after */
        if ((m = main_atleast(&c, rec, 40)) == NULL)
            return -1;
        h.mapped_xid = le_load_u32(m);
        h.mapped_db = le_load_u32(m + 4);
        h.mapped_rel = le_load_u32(m + 8);
        h.offset = ld_i64(m + 16);
        h.num_mappings = le_load_u32(m + 24);
        h.start_lsn = le_load_u64(m + 32);
        break;
    case PGWAL_HEAP2_PRUNE:
        /* xl_heap_prune (15): latestRemovedXid 0, nredirected 4, ndead 6;
         * the offsets in block 0's data */
        if ((m = main_exact(&c, rec, 8)) == NULL || (b0 = need_block(&c, rec, 0)) == NULL)
            return -1;
        h.xid = le_load_u32(m);
        h.nredirected = le_load_u16(m + 4);
        h.ndead = le_load_u16(m + 6);
        if (b0->has_data) {
            if (b0->data_len % 2 != 0)
                return cur_fail(&c, "odd offset data of %u bytes", (unsigned)b0->data_len);
            uint32_t n = b0->data_len / 2u, fixed = 2u * h.nredirected + h.ndead;
            if (fixed > n)
                return cur_fail(&c, "%u redirected and %u dead need %u offsets, the data has %u",
                                (unsigned)h.nredirected, (unsigned)h.ndead, (unsigned)fixed,
                                (unsigned)n);
            h.nunused = (uint16_t)(n - fixed);
            h.offsets_present = true;
            h.redirected = b0->data;
            h.dead = b0->data + 4u * h.nredirected;
            h.unused = b0->data + 2u * fixed;
        } else if (!b0->has_image && (h.nredirected > 0 || h.ndead > 0)) {
            return cur_fail(&c, "neither the offsets nor a page image");
        } else {
            h.offsets_present = !b0->has_image;
        }
        break;
    case PGWAL_HEAP2_VACUUM:
        /* xl_heap_vacuum: nunused 0; the offsets in block 0's data */
        if ((m = main_exact(&c, rec, 2)) == NULL || (b0 = need_block(&c, rec, 0)) == NULL)
            return -1;
        h.nunused = le_load_u16(m);
        if (b0->has_data) {
            if (b0->data_len != 2u * h.nunused)
                return cur_fail(&c, "%u unused offsets, block data of %u bytes",
                                (unsigned)h.nunused, (unsigned)b0->data_len);
            h.offsets_present = true;
            h.unused = b0->data;
        } else if (!b0->has_image && h.nunused > 0) {
            return cur_fail(&c, "neither the offsets nor a page image");
        } else {
            h.offsets_present = !b0->has_image;
        }
        break;
    case PGWAL_HEAP2_FREEZE_PAGE:
        /* xl_heap_freeze_page: cutoff_xid 0, ntuples 4; the plans in block
         * 0's data */
        if ((m = main_exact(&c, rec, 6)) == NULL || (b0 = need_block(&c, rec, 0)) == NULL)
            return -1;
        h.xid = le_load_u32(m);
        h.ntuples = le_load_u16(m + 4);
        if (b0->has_data) {
            if (b0->data_len != (uint32_t)h.ntuples * PGWAL_FREEZE_TUPLE_SIZE)
                return cur_fail(&c, "%u freeze plans, block data of %u bytes",
                                (unsigned)h.ntuples, (unsigned)b0->data_len);
            h.tuples_present = true;
            h.freeze_plans = b0->data;
        } else if (!b0->has_image && h.ntuples > 0) {
            return cur_fail(&c, "neither the freeze plans nor a page image");
        } else {
            h.tuples_present = !b0->has_image;
        }
        break;
    case PGWAL_HEAP2_VISIBLE:
        /* xl_heap_visible: cutoff_xid 0, flags 4; block 0 the visibility
         * map's page, block 1 the heap's */
        if ((m = main_exact(&c, rec, 5)) == NULL || need_block(&c, rec, 0) == NULL)
            return -1;
        h.xid = le_load_u32(m);
        h.flags = m[4];
        break;
    case PGWAL_HEAP2_MULTI_INSERT: {
        /* xl_heap_multi_insert: flags 0, ntuples 2, offsets from 4 unless
         * the page is re-initialised; block 0's data: each tuple's
         * xl_multi_insert_tuple (datalen, infomask2, infomask, hoff: 7
         * bytes) at an even offset, then its data */
        if ((m = main_atleast(&c, rec, 4)) == NULL || (b0 = need_block(&c, rec, 0)) == NULL)
            return -1;
        h.flags = m[0];
        h.ntuples = le_load_u16(m + 2);
        if (h.ntuples == 0 || h.ntuples > PGWAL_MAX_HEAP_TUPLES)
            return cur_fail(&c, "%u tuples: a page holds 1 to %d", (unsigned)h.ntuples,
                            PGWAL_MAX_HEAP_TUPLES);
        c.pos = 4;
        if (!h.init_page) {
            bool ok = true;
            h.offsets = cur_array(&c, h.ntuples, 2, "offsets", &ok);
            if (!ok)
                return -1;
            for (uint16_t i = 0; i < h.ntuples; i++)
                if (!offnum_valid(pgwal_u16_at(h.offsets, i)))
                    return cur_fail(&c, "tuple %u at offset %u", (unsigned)i + 1,
                                    (unsigned)pgwal_u16_at(h.offsets, i));
        }
        if (cur_done(&c) != 0)
            return -1;
        if (b0->has_data) {
            uint32_t off = 0, len = b0->data_len;
            for (uint16_t i = 0; i < h.ntuples; i++) {
                off += off & 1;
                if (off + 7 > len)
                    return cur_fail(&c, "tuple %u: truncated at its header", (unsigned)i + 1);
                uint16_t datalen = le_load_u16(b0->data + off);
                uint8_t hoff = b0->data[off + 6];
                if (off + 7 + datalen > len)
                    return cur_fail(&c, "tuple %u: %u bytes, %u left", (unsigned)i + 1,
                                    (unsigned)datalen, (unsigned)(len - off - 7));
                if (hoff < PGWAL_TUPLE_HEADER || (unsigned)(hoff - PGWAL_TUPLE_HEADER) > datalen)
                    return cur_fail(&c, "tuple %u: t_hoff %u outside its %u bytes",
                                    (unsigned)i + 1, (unsigned)hoff,
                                    (unsigned)datalen + PGWAL_TUPLE_HEADER);
                off += 7u + datalen;
            }
            if (off != len)
                return cur_fail(&c, "%u bytes left over after the tuples", (unsigned)(len - off));
            h.tuples_present = true;
            h.tuple_data = b0->data;
            h.tuple_data_len = len;
        } else if (!b0->has_image) {
            return cur_fail(&c, "neither the tuples nor a page image");
        }
        *out = h;
        return 0;
    }
    case PGWAL_HEAP2_LOCK_UPDATED:
        /* xl_heap_lock_updated: xmax 0, offnum 4, infobits_set 6, flags 7 */
        if ((m = main_exact(&c, rec, 8)) == NULL || need_block(&c, rec, 0) == NULL)
            return -1;
        h.xid = le_load_u32(m);
        h.offnum = le_load_u16(m + 4);
        h.infobits = m[6];
        h.flags = m[7];
        if (!offnum_valid(h.offnum))
            return cur_fail(&c, "tuple offset %u", (unsigned)h.offnum);
        break;
    case PGWAL_HEAP2_NEW_CID:
        /* xl_heap_new_cid: top_xid 0, cmin 4, cmax 8, combocid 12,
         * target_node 16, target_tid 28 (block hi, lo, offset) */
        if ((m = main_exact(&c, rec, 34)) == NULL)
            return -1;
        h.top_xid = le_load_u32(m);
        h.cmin = le_load_u32(m + 4);
        h.cmax = le_load_u32(m + 8);
        h.combocid = le_load_u32(m + 12);
        h.target_node = pgwal_relfilenode_at(m + 16, 0);
        h.target_block = (uint32_t)le_load_u16(m + 28) << 16 | le_load_u16(m + 30);
        h.target_offnum = le_load_u16(m + 32);
        break;
    }
    *out = h;
    return 0;
}

bool pgwal_multi_insert_tuple(const struct pgwal_heap2 *h, uint16_t i, uint32_t *cursor,
                              uint16_t *offnum, struct pgwal_tuple *t)
{
    if (h->op != PGWAL_HEAP2_MULTI_INSERT || !h->tuples_present || i >= h->ntuples ||
        h->tuple_data == NULL)
        return false;
    uint32_t off = *cursor + (*cursor & 1);
    if (off + 7 > h->tuple_data_len)
        return false;
    const uint8_t *p = h->tuple_data + off;
    uint16_t datalen = le_load_u16(p);
    if (off + 7 + datalen > h->tuple_data_len)
        return false;
    t->present = true;
    t->infomask2 = le_load_u16(p + 2);
    t->infomask = le_load_u16(p + 4);
    t->hoff = p[6];
    t->data = datalen > 0 ? p + 7 : NULL;
    t->len = datalen;
    *offnum = h->init_page || h->offsets == NULL ? (uint16_t)(i + 1) : pgwal_u16_at(h->offsets, i);
    *cursor = off + 7 + datalen;
    return true;
}

/* ---- Transactions ----------------------------------------------------------------------- */

/* The xinfo-driven tail of COMMIT and ABORT records (ParseCommitRecord,
 * ParseAbortRecord): commit has invalidations, abort none. */
static int xact_end(struct cur *c, const struct pgwal_record *rec, struct pgwal_xact *x,
                    bool commit)
{
    const uint8_t *p;
    bool ok = true;
    if ((p = cur_take(c, 8, "time")) == NULL)
        return -1;
    x->time = ld_i64(p);
    if (rec->info & PGWAL_XACT_HAS_INFO) {
        if ((p = cur_take(c, 4, "xinfo")) == NULL)
            return -1;
        x->xinfo = le_load_u32(p);
    }
    if (x->xinfo & PGWAL_XACT_XINFO_HAS_DBINFO) {
        if ((p = cur_take(c, 8, "dbinfo")) == NULL)
            return -1;
        x->db_id = le_load_u32(p);
        x->ts_id = le_load_u32(p + 4);
    }
    if (x->xinfo & PGWAL_XACT_XINFO_HAS_SUBXACTS) {
        if (!cur_count(c, "subtransaction count", &x->nsubxacts))
            return -1;
        x->subxacts = cur_array(c, x->nsubxacts, 4, "subtransactions", &ok);
    }
    if (ok && (x->xinfo & PGWAL_XACT_XINFO_HAS_RELFILENODES)) {
        if (!cur_count(c, "relation count", &x->nrels))
            return -1;
        x->rels = cur_array(c, x->nrels, PGWAL_RELFILENODE_SIZE, "relfilenodes", &ok);
    }
    if (ok && (x->xinfo & PGWAL_XACT_XINFO_HAS_DROPPED_STATS)) {
        if (!cur_count(c, "dropped statistics count", &x->nstats))
            return -1;
        x->stats = cur_array(c, x->nstats, PGWAL_STATS_ITEM_SIZE, "dropped statistics", &ok);
    }
    if (ok && commit && (x->xinfo & PGWAL_XACT_XINFO_HAS_INVALS)) {
        if (!cur_count(c, "invalidation count", &x->nmsgs))
            return -1;
        x->msgs = cur_array(c, x->nmsgs, PGWAL_INVAL_MSG_SIZE, "invalidation messages", &ok);
    }
    if (!ok)
        return -1;
    if (x->xinfo & PGWAL_XACT_XINFO_HAS_TWOPHASE) {
        if ((p = cur_take(c, 4, "two-phase xid")) == NULL)
            return -1;
        x->twophase_xid = le_load_u32(p);
        if (x->xinfo & PGWAL_XACT_XINFO_HAS_GID) {
            const uint8_t *s = c->p + c->pos;
            const uint8_t *nul = memchr(s, 0, cur_left(c));
            if (nul == NULL)
                return cur_fail(c, "gid without its NUL");
            x->gid = (const char *)s;
            c->pos += (size_t)(nul - s) + 1;
        }
    }
    if (x->xinfo & PGWAL_XACT_XINFO_HAS_ORIGIN) {
        if ((p = cur_take(c, 16, "origin")) == NULL)
            return -1;
        x->has_origin = true;
        x->origin_lsn = le_load_u64(p);
        x->origin_time = ld_i64(p + 8);
    }
    x->xid = (x->xinfo & PGWAL_XACT_XINFO_HAS_TWOPHASE) ? x->twophase_xid : rec->xid;
    return cur_done(c);
}

/* PREPARE: the two-phase state file's contents (ParsePrepareRecord):
 * xl_xact_prepare, then the gid and each array, each padded to 8 bytes;
 * the resource managers' two-phase records follow, not parsed here. */
static int xact_prepare(struct cur *c, const struct pgwal_record *rec, struct pgwal_xact *x)
{
    /* magic 0, total_len 4, xid 8, database 12, prepared_at 16, owner 24,
     * nsubxacts 28, ncommitrels 32, nabortrels 36, ncommitstats 40,
     * nabortstats 44, ninvalmsgs 48, initfileinval 52, gidlen 54,
     * origin_lsn 56, origin_timestamp 64 */
    const uint8_t *p = cur_take(c, 72, "xl_xact_prepare");
    if (p == NULL)
        return -1;
    uint32_t magic = le_load_u32(p);
    if (magic != TWOPHASE_MAGIC)
        return cur_fail(c, "magic 0x%08X, not 0x%08X", (unsigned)magic, TWOPHASE_MAGIC);
    x->xid = x->twophase_xid = le_load_u32(p + 8);
    x->db_id = le_load_u32(p + 12);
    x->time = ld_i64(p + 16);
    x->owner = le_load_u32(p + 24);
    uint32_t counts[6];
    static const char *const names[6] = {"subtransactions",    "commit relations",
                                         "abort relations",    "commit statistics",
                                         "abort statistics",   "invalidation messages"};
    for (int i = 0; i < 6; i++) {
        counts[i] = le_load_u32(p + 28 + 4 * i);
        if (counts[i] > INT32_MAX)
            return cur_fail(c, "negative count of %s", names[i]);
    }
    x->initfileinval = p[52] != 0;
    uint16_t gidlen = le_load_u16(p + 54);
    x->origin_lsn = le_load_u64(p + 56);
    x->origin_time = ld_i64(p + 64);
    x->has_origin = rec->has_origin;
    const uint8_t *gid = cur_take(c, gidlen, "gid");
    if (gid == NULL)
        return -1;
    if (gidlen == 0 || memchr(gid, 0, gidlen) == NULL)
        return cur_fail(c, "gid of %u bytes without its NUL", (unsigned)gidlen);
    x->gid = (const char *)gid;
    static const size_t sizes[6] = {4, PGWAL_RELFILENODE_SIZE, PGWAL_RELFILENODE_SIZE,
                                    PGWAL_STATS_ITEM_SIZE, PGWAL_STATS_ITEM_SIZE,
                                    PGWAL_INVAL_MSG_SIZE};
    const uint8_t *arrays[6];
    if (!cur_align8(c, "gid"))
        return -1;
    for (int i = 0; i < 6; i++) {
        bool ok = true;
        arrays[i] = cur_array(c, counts[i], sizes[i], names[i], &ok);
        if (!ok || !cur_align8(c, names[i]))
            return -1;
    }
    x->nsubxacts = counts[0];
    x->subxacts = arrays[0];
    x->nrels = counts[1];
    x->rels = arrays[1];
    x->nabortrels = counts[2];
    x->abortrels = arrays[2];
    x->nstats = counts[3];
    x->stats = arrays[3];
    x->nabortstats = counts[4];
    x->abortstats = arrays[4];
    x->nmsgs = counts[5];
    x->msgs = arrays[5];
    return 0;
}

int pgwal_xact_parse(const struct pgwal_record *rec, struct pgwal_xact *out, char *err,
                     size_t errlen)
{
    memset(out, 0, sizeof *out);
    struct cur c;
    const char *name = pgwal_record_name(rec->rmid, rec->info);
    cur_init(&c, rec, rec->main_data, rec->main_data_len, name ? name : "transaction", err,
             errlen);
    if (rec->rmid != PGWAL_RM_XACT)
        return cur_fail(&c, "not a transaction record (resource manager %u)",
                        (unsigned)rec->rmid);
    struct pgwal_xact x = {.op = rec->info & PGWAL_XACT_OPMASK};
    bool ok = true;
    switch (x.op) {
    case PGWAL_XACT_COMMIT:
    case PGWAL_XACT_COMMIT_PREPARED:
        if (xact_end(&c, rec, &x, true) != 0)
            return -1;
        break;
    case PGWAL_XACT_ABORT:
    case PGWAL_XACT_ABORT_PREPARED:
        if (xact_end(&c, rec, &x, false) != 0)
            return -1;
        break;
    case PGWAL_XACT_PREPARE:
        if (xact_prepare(&c, rec, &x) != 0)
            return -1;
        break;
    case PGWAL_XACT_ASSIGNMENT: {
        /* xl_xact_assignment: xtop 0, nsubxacts 4, xsub from 8 */
        const uint8_t *p = cur_take(&c, 4, "xtop");
        if (p == NULL || !cur_count(&c, "subtransaction count", &x.nsubxacts))
            return -1;
        x.xtop = x.xid = le_load_u32(p);
        x.subxacts = cur_array(&c, x.nsubxacts, 4, "subtransactions", &ok);
        if (!ok || cur_done(&c) != 0)
            return -1;
        break;
    }
    case PGWAL_XACT_INVALIDATIONS:
        /* xl_xact_invals: nmsgs 0, msgs from 4 */
        if (!cur_count(&c, "invalidation count", &x.nmsgs))
            return -1;
        x.msgs = cur_array(&c, x.nmsgs, PGWAL_INVAL_MSG_SIZE, "invalidation messages", &ok);
        if (!ok || cur_done(&c) != 0)
            return -1;
        x.xid = rec->xid;
        break;
    default:
        return cur_fail(&c, "unknown transaction record kind 0x%02X", (unsigned)x.op);
    }
    *out = x;
    return 0;
}

/* ---- XLOG -------------------------------------------------------------------------------- */

int pgwal_xlog_parse(const struct pgwal_record *rec, struct pgwal_xlog *out, char *err,
                     size_t errlen)
{
    memset(out, 0, sizeof *out);
    struct cur c;
    const char *name = pgwal_record_name(rec->rmid, rec->info);
    cur_init(&c, rec, rec->main_data, rec->main_data_len, name ? name : "XLOG", err, errlen);
    if (rec->rmid != PGWAL_RM_XLOG)
        return cur_fail(&c, "not an XLOG record (resource manager %u)", (unsigned)rec->rmid);
    struct pgwal_xlog x = {.op = rec->info & 0xF0};
    const uint8_t *m;
    switch (x.op) {
    case PGWAL_XLOG_CHECKPOINT_SHUTDOWN:
    case PGWAL_XLOG_CHECKPOINT_ONLINE: {
        /* CheckPoint: redo 0, ThisTimeLineID 8, PrevTimeLineID 12,
         * fullPageWrites 16, nextXid 24, nextOid 32, nextMulti 36,
         * nextMultiOffset 40, oldestXid 44, oldestXidDB 48, oldestMulti 52,
         * oldestMultiDB 56, time 64, oldestCommitTsXid 72,
         * newestCommitTsXid 76, oldestActiveXid 80; 88 bytes */
        if ((m = main_exact(&c, rec, 88)) == NULL)
            return -1;
        struct pgwal_checkpoint *k = &x.checkpoint;
        k->redo = le_load_u64(m);
        k->tli = le_load_u32(m + 8);
        k->prev_tli = le_load_u32(m + 12);
        k->full_page_writes = m[16] != 0;
        k->next_xid = le_load_u64(m + 24);
        k->next_oid = le_load_u32(m + 32);
        k->next_multi = le_load_u32(m + 36);
        k->next_multi_offset = le_load_u32(m + 40);
        k->oldest_xid = le_load_u32(m + 44);
        k->oldest_xid_db = le_load_u32(m + 48);
        k->oldest_multi = le_load_u32(m + 52);
        k->oldest_multi_db = le_load_u32(m + 56);
        k->time = ld_i64(m + 64);
        k->oldest_commit_ts_xid = le_load_u32(m + 72);
        k->newest_commit_ts_xid = le_load_u32(m + 76);
        k->oldest_active_xid = le_load_u32(m + 80);
        break;
    }
    case PGWAL_XLOG_NEXTOID:
        if ((m = main_exact(&c, rec, 4)) == NULL)
            return -1;
        x.next_oid = le_load_u32(m);
        break;
    case PGWAL_XLOG_FPW_CHANGE:
        if ((m = main_exact(&c, rec, 1)) == NULL)
            return -1;
        x.fpw = m[0] != 0;
        break;
    case PGWAL_XLOG_OVERWRITE_CONTRECORD:
        /* xl_overwrite_contrecord: overwritten_lsn 0, overwrite_time 8 */
        if ((m = main_exact(&c, rec, 16)) == NULL)
            return -1;
        x.overwritten_lsn = le_load_u64(m);
        x.time = ld_i64(m + 8);
        break;
    case PGWAL_XLOG_END_OF_RECOVERY:
        /* xl_end_of_recovery: end_time 0, ThisTimeLineID 8, PrevTimeLineID 12 */
        if ((m = main_exact(&c, rec, 16)) == NULL)
            return -1;
        x.time = ld_i64(m);
        x.tli = le_load_u32(m + 8);
        x.prev_tli = le_load_u32(m + 12);
        break;
    case PGWAL_XLOG_SWITCH:
    case PGWAL_XLOG_NOOP:
    case PGWAL_XLOG_FPI:
    case PGWAL_XLOG_FPI_FOR_HINT:
    case PGWAL_XLOG_BACKUP_END:
    case PGWAL_XLOG_PARAMETER_CHANGE:
    case PGWAL_XLOG_RESTORE_POINT:
        break;
    default:
        return cur_fail(&c, "unknown XLOG record kind 0x%02X", (unsigned)x.op);
    }
    *out = x;
    return 0;
}

/* ---- Storage ----------------------------------------------------------------------------- */

int pgwal_smgr_parse(const struct pgwal_record *rec, struct pgwal_smgr *out, char *err,
                     size_t errlen)
{
    memset(out, 0, sizeof *out);
    struct cur c;
    const char *name = pgwal_record_name(rec->rmid, rec->info);
    cur_init(&c, rec, rec->main_data, rec->main_data_len, name ? name : "storage", err, errlen);
    if (rec->rmid != PGWAL_RM_SMGR)
        return cur_fail(&c, "not a storage record (resource manager %u)", (unsigned)rec->rmid);
    struct pgwal_smgr s = {.op = rec->info & 0xF0};
    const uint8_t *m;
    switch (s.op) {
    case PGWAL_SMGR_CREATE: {
        /* xl_smgr_create: rnode 0, forkNum 12 */
        if ((m = main_exact(&c, rec, 16)) == NULL)
            return -1;
        s.node = pgwal_relfilenode_at(m, 0);
        uint32_t fork = le_load_u32(m + 12);
        if (fork > PGWAL_FORK_INIT)
            return cur_fail(&c, "unknown fork %u", (unsigned)fork);
        s.fork = (uint8_t)fork;
        break;
    }
    case PGWAL_SMGR_TRUNCATE:
        /* xl_smgr_truncate: blkno 0, rnode 4, flags 16 */
        if ((m = main_exact(&c, rec, 20)) == NULL)
            return -1;
        s.blkno = le_load_u32(m);
        s.node = pgwal_relfilenode_at(m + 4, 0);
        s.flags = le_load_u32(m + 16);
        break;
    default:
        return cur_fail(&c, "unknown storage record kind 0x%02X", (unsigned)s.op);
    }
    *out = s;
    return 0;
}

/* ---- Standby ----------------------------------------------------------------------------- */

int pgwal_standby_parse(const struct pgwal_record *rec, struct pgwal_standby *out, char *err,
                        size_t errlen)
{
    memset(out, 0, sizeof *out);
    struct cur c;
    const char *name = pgwal_record_name(rec->rmid, rec->info);
    cur_init(&c, rec, rec->main_data, rec->main_data_len, name ? name : "standby", err, errlen);
    if (rec->rmid != PGWAL_RM_STANDBY)
        return cur_fail(&c, "not a standby record (resource manager %u)", (unsigned)rec->rmid);
    struct pgwal_standby s = {.op = rec->info & 0xF0};
    const uint8_t *p;
    bool ok = true;
    switch (s.op) {
    case PGWAL_STANDBY_LOCK:
        /* xl_standby_locks: nlocks 0, then (xid, dbOid, relOid) each */
        if (!cur_count(&c, "lock count", &s.nlocks))
            return -1;
        s.locks = cur_array(&c, s.nlocks, 12, "locks", &ok);
        break;
    case PGWAL_STANDBY_RUNNING_XACTS: {
        /* xl_running_xacts: xcnt 0, subxcnt 4, subxid_overflow 8,
         * nextXid 12, oldestRunningXid 16, latestCompletedXid 20, xids 24 */
        if ((p = cur_take(&c, 24, "xl_running_xacts")) == NULL)
            return -1;
        s.xcnt = le_load_u32(p);
        s.subxcnt = le_load_u32(p + 4);
        if (s.xcnt > INT32_MAX || s.subxcnt > INT32_MAX)
            return cur_fail(&c, "negative transaction counts");
        s.subxid_overflow = p[8] != 0;
        s.next_xid = le_load_u32(p + 12);
        s.oldest_running_xid = le_load_u32(p + 16);
        s.latest_completed_xid = le_load_u32(p + 20);
        s.xids = cur_array(&c, (uint64_t)s.xcnt + s.subxcnt, 4, "xids", &ok);
        break;
    }
    case PGWAL_STANDBY_INVALIDATIONS:
        /* xl_invalidations: dbId 0, tsId 4, relcacheInitFileInval 8,
         * nmsgs 12, msgs from 16 */
        if ((p = cur_take(&c, 12, "xl_invalidations")) == NULL)
            return -1;
        s.db_id = le_load_u32(p);
        s.ts_id = le_load_u32(p + 4);
        s.relcache_init_file_inval = p[8] != 0;
        if (!cur_count(&c, "invalidation count", &s.nmsgs))
            return -1;
        s.msgs = cur_array(&c, s.nmsgs, PGWAL_INVAL_MSG_SIZE, "invalidation messages", &ok);
        break;
    default:
        return cur_fail(&c, "unknown standby record kind 0x%02X", (unsigned)s.op);
    }
    if (!ok || cur_done(&c) != 0)
        return -1;
    *out = s;
    return 0;
}
