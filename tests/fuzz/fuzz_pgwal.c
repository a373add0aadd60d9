/* fuzz_pgwal.c -- libFuzzer target for ingest/pgwal.c, the decoder of
 * PostgreSQL 15's physical WAL.
 *
 * Input: byte 0 flags, bytes 1..8 an LSN (little-endian), bytes 9..12 a
 * split seed, then the bytes.
 *   flags & 1    the bytes are one record at that LSN: decoded directly
 *                (no CRC to get past), then every parser and every page
 *                image run on it;
 *   otherwise    the bytes are WAL from that LSN, read by a reader of the
 *                segment size flags >> 1 & 3 picks (16 MiB, 1 MiB, 64 MiB,
 *                1 GiB), checking CRCs when flags & 8 (the LSN cut to 48
 *                bits, so that no piece passes PGWAL_LSN_MAX): once fed whole, once
 *                in pieces whose sizes come from the seed. Both runs must
 *                yield the same records (LSN, length, CRC, end) and end the
 *                same way, with the same message; every record yielded
 *                decodes again to the same, and every parser and image runs
 *                on it.
 * The records (of the whole run, and the single one) are also replayed by
 * a heap mirror (ingest/heap_mirror.c) that follows the relations their
 * blocks name, within a 1 MiB bound: a refusal must leave a message, and
 * every row it reports is read whole; commit and abort records end their
 * transactions in it (the rows given back at a commit), and at the end the
 * transactions left open are aborted, after which a checkpoint past
 * everything forgets every page.
 * Nothing may crash, read outside its buffer (each piece is an exact-size
 * copy) or leak; a failure must leave a message. The seeds under
 * corpus/pgwal are real WAL of the test cluster and WAL laid out by
 * tests/e2e/test_pgwal.c (which writes them, STRAUM_PGWAL_CORPUS). */
#include "ingest/heap_mirror.h"
#include "ingest/pgwal.h"
#include "tests/fuzz/fuzz_check.h"

#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Folds bytes into a sum, so that ASan sees every byte of every range the
 * decoder hands out read. */
static volatile uint32_t sink;

static void touch(const uint8_t *p, size_t n)
{
    uint32_t s = 0;
    for (size_t i = 0; i < n; i++)
        s = s * 31 + p[i];
    sink += s;
}

static void failed_with_message(int rc, const char *err)
{
    CHECK(rc == 0 || (rc == -1 && err[0] != '\0'));
}

/* Every parser on rec (each refuses the others' records), every array read
 * element by element, every image restored. */
static void exercise(const struct pgwal_record *rec)
{
    char err[512];
    int rc;
    CHECK(rec->tot_len >= PGWAL_RECORD_HEADER);
    touch(rec->raw, rec->tot_len);
    touch(rec->main_data, rec->main_data_len);
    for (int i = 0; i <= rec->max_block_id; i++) {
        const struct pgwal_block *b = &rec->blocks[i];
        if (!b->in_use)
            continue;
        touch(b->data, b->has_data ? b->data_len : 0);
        if (!b->has_image)
            continue;
        touch(b->image, b->bimg_len);
        uint8_t page[PGWAL_PAGE_SIZE];
        err[0] = '\0';
        rc = pgwal_block_image(b, page, err, sizeof err);
        CHECK(rc == 0 || (rc == -1 && err[0] != '\0'));
        if (rc == 0) {
            for (uint16_t off = 1; off <= 4; off++) {
                const uint8_t *tup;
                uint16_t len;
                if (pgwal_page_tuple(page, off, &tup, &len, err, sizeof err) == 0) {
                    CHECK(tup >= page && tup + len <= page + PGWAL_PAGE_SIZE);
                    touch(tup, len);
                }
            }
        }
    }

    struct pgwal_heap h;
    err[0] = '\0';
    rc = pgwal_heap_parse(rec, &h, err, sizeof err);
    failed_with_message(rc, err);
    CHECK(rc == -1 || rec->rmid == PGWAL_RM_HEAP);
    if (rc == 0) {
        if (h.tuple.present)
            touch(h.tuple.data, h.tuple.len);
        if (h.old_tuple.present)
            touch(h.old_tuple.data, h.old_tuple.len);
        for (uint32_t i = 0; i < h.nrelids; i++)
            sink += pgwal_u32_at(h.relids, i);
        touch(h.inplace_data, h.inplace_len);
    }

    struct pgwal_heap2 h2;
    err[0] = '\0';
    rc = pgwal_heap2_parse(rec, &h2, err, sizeof err);
    failed_with_message(rc, err);
    CHECK(rc == -1 || rec->rmid == PGWAL_RM_HEAP2);
    if (rc == 0) {
        if (h2.offsets_present) {
            for (uint32_t i = 0; i < 2u * h2.nredirected; i++)
                sink += pgwal_u16_at(h2.redirected, i);
            for (uint32_t i = 0; i < h2.ndead; i++)
                sink += pgwal_u16_at(h2.dead, i);
            for (uint32_t i = 0; i < h2.nunused; i++)
                sink += pgwal_u16_at(h2.unused, i);
        }
        if (h2.op == PGWAL_HEAP2_FREEZE_PAGE && h2.tuples_present)
            touch(h2.freeze_plans, (size_t)h2.ntuples * PGWAL_FREEZE_TUPLE_SIZE);
        if (h2.op == PGWAL_HEAP2_MULTI_INSERT && h2.tuples_present) {
            uint32_t cursor = 0;
            for (uint16_t i = 0; i < h2.ntuples; i++) {
                uint16_t off;
                struct pgwal_tuple t;
                CHECK(pgwal_multi_insert_tuple(&h2, i, &cursor, &off, &t));
                touch(t.data, t.len);
            }
            CHECK(cursor == h2.tuple_data_len);
        }
    }

    struct pgwal_xact x;
    err[0] = '\0';
    rc = pgwal_xact_parse(rec, &x, err, sizeof err);
    failed_with_message(rc, err);
    CHECK(rc == -1 || rec->rmid == PGWAL_RM_XACT);
    if (rc == 0) {
        for (uint32_t i = 0; i < x.nsubxacts; i++)
            sink += pgwal_u32_at(x.subxacts, i);
        for (uint32_t i = 0; i < x.nrels; i++)
            sink += pgwal_relfilenode_at(x.rels, i).rel;
        for (uint32_t i = 0; i < x.nabortrels; i++)
            sink += pgwal_relfilenode_at(x.abortrels, i).rel;
        touch(x.stats, (size_t)x.nstats * PGWAL_STATS_ITEM_SIZE);
        touch(x.abortstats, (size_t)x.nabortstats * PGWAL_STATS_ITEM_SIZE);
        touch(x.msgs, (size_t)x.nmsgs * PGWAL_INVAL_MSG_SIZE);
        if (x.gid != NULL)
            sink += (uint32_t)strlen(x.gid);
    }

    struct pgwal_xlog xl;
    err[0] = '\0';
    rc = pgwal_xlog_parse(rec, &xl, err, sizeof err);
    failed_with_message(rc, err);
    CHECK(rc == -1 || rec->rmid == PGWAL_RM_XLOG);

    struct pgwal_smgr sm;
    err[0] = '\0';
    rc = pgwal_smgr_parse(rec, &sm, err, sizeof err);
    failed_with_message(rc, err);
    CHECK(rc == -1 || rec->rmid == PGWAL_RM_SMGR);

    struct pgwal_standby sb;
    err[0] = '\0';
    rc = pgwal_standby_parse(rec, &sb, err, sizeof err);
    failed_with_message(rc, err);
    CHECK(rc == -1 || rec->rmid == PGWAL_RM_STANDBY);
    if (rc == 0) {
        for (uint64_t i = 0; i < (uint64_t)sb.xcnt + sb.subxcnt; i++)
            sink += pgwal_u32_at(sb.xids, i);
        touch(sb.locks, (size_t)sb.nlocks * 12);
        touch(sb.msgs, (size_t)sb.nmsgs * PGWAL_INVAL_MSG_SIZE);
    }

    sink += pgwal_rmgr_name(rec->rmid) != NULL;
    sink += pgwal_record_name(rec->rmid, rec->info) != NULL;
}

/* What a run of the reader gave: a hash of its records and how it ended. */
struct outcome {
    uint64_t hash;
    unsigned records;
    int rc;
    char err[512];
};

/* ---- The heap mirror over the records ---------------------------------------- */

struct mirror_run {
    struct heap_mirror *m;
    int follows;  /* relations followed, at most 16 */
    bool failed;  /* refused once: not used again (heap_mirror.h) */
    uint32_t xids[64]; /* those of the deletes and updates reported */
    int nxids;         /* 65: more than xids holds */
};

static int on_change(void *ctx, const struct heap_change *c)
{
    struct mirror_run *mr = ctx;
    touch(c->old_tuple.data, c->old_tuple.data ? c->old_tuple.len : 0);
    touch(c->new_tuple.data, c->new_tuple.data ? c->new_tuple.len : 0);
    bool known = c->kind == HEAP_CHANGE_INSERT;
    for (int i = 0; i < mr->nxids && i < 64 && !known; i++)
        known = mr->xids[i] == c->xid;
    if (!known && mr->nxids < 64)
        mr->xids[mr->nxids++] = c->xid;
    else if (!known)
        mr->nxids = 65;
    return 0;
}

/* A commit or an abort record ends its transaction in the mirror. */
static void mirror_xact(struct mirror_run *mr, const struct pgwal_record *rec)
{
    struct pgwal_xact x;
    char err[512];
    if (rec->rmid != PGWAL_RM_XACT || pgwal_xact_parse(rec, &x, err, sizeof err))
        return;
    bool commit = x.op == PGWAL_XACT_COMMIT || x.op == PGWAL_XACT_COMMIT_PREPARED;
    if (!commit && x.op != PGWAL_XACT_ABORT && x.op != PGWAL_XACT_ABORT_PREPARED)
        return;
    uint32_t ids[1 + 64];
    int n = 0;
    ids[n++] = x.xid;
    for (uint32_t i = 0; i < x.nsubxacts && n < 1 + 64; i++)
        ids[n++] = pgwal_u32_at(x.subxacts, i);
    heap_mirror_end(mr->m, ids, n, commit);
}

static void mirror_replay(struct mirror_run *mr, const struct pgwal_record *rec)
{
    if (mr->failed)
        return;
    if (!mr->m)
        CHECK((mr->m = heap_mirror_new(1u << 20)) != NULL);
    for (int i = 0; i <= rec->max_block_id && mr->follows < 16; i++)
        if (rec->blocks[i].in_use) {
            CHECK(heap_mirror_follow(mr->m, rec->blocks[i].node) == 0);
            mr->follows++;
        }
    char err[512] = "";
    int rc = heap_mirror_replay(mr->m, rec, on_change, mr, err, sizeof err);
    CHECK(rc == 0 || (rc == -1 && err[0] != '\0'));
    mr->failed = rc != 0;
    if (!mr->failed)
        mirror_xact(mr, rec);
    CHECK(heap_mirror_bytes(mr->m) <= 1u << 20);
}

static void mirror_end(struct mirror_run *mr)
{
    /* The transactions left open keep their pages (heap_mirror.h
     * invariant 4) until they end: aborted here, every page goes. */
    if (mr->m && !mr->failed && mr->nxids <= 64) {
        heap_mirror_end(mr->m, mr->xids, mr->nxids, false);
        CHECK(heap_mirror_forget_before(mr->m, UINT64_MAX) >= 0 && heap_mirror_pages(mr->m) == 0);
    }
    heap_mirror_free(mr->m);
    memset(mr, 0, sizeof *mr);
}

static void mix(uint64_t *h, uint64_t v)
{
    *h = (*h ^ v) * 0x100000001B3ull;
}

static uint32_t next_rand(uint32_t *s)
{
    uint32_t x = *s;
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    return *s = x ? x : 0x9E3779B9u;
}

/* Feeds bytes[0..n) from lsn, whole when seed is 0, else in pieces of 1 to
 * (a size the seed picks) bytes, each an exact-size copy. */
static void run(uint32_t seg, bool crc, uint64_t lsn, const uint8_t *bytes, size_t n,
                uint32_t seed, struct outcome *o)
{
    struct pgwal_reader r;
    memset(o, 0, sizeof *o);
    o->hash = 0xCBF29CE484222325ull;
    o->rc = pgwal_reader_init(&r, seg, lsn, 0, o->err, sizeof o->err);
    if (o->rc != 0) {
        CHECK(o->err[0] != '\0');
        pgwal_reader_free(&r);
        return;
    }
    r.check_crc = crc;
    struct mirror_run mr = {0};
    static const uint32_t caps[] = {1, 7, 100, 3000, 9000, 70000};
    uint32_t cap = seed ? caps[seed % 6] : 0;
    size_t off = 0;
    while (off < n && o->rc >= 0) {
        size_t k = n - off;
        if (seed != 0) {
            size_t want = 1 + next_rand(&seed) % cap;
            if (want < k)
                k = want;
        }
        uint8_t *piece = malloc(k);
        CHECK(piece != NULL);
        memcpy(piece, bytes + off, k);
        CHECK(pgwal_reader_want(&r) == lsn + off);
        o->rc = pgwal_reader_feed(&r, lsn + off, piece, k, o->err, sizeof o->err);
        CHECK(o->rc == 0);
        struct pgwal_record rec;
        while ((o->rc = pgwal_reader_next(&r, &rec, o->err, sizeof o->err)) == 1) {
            o->records++;
            mix(&o->hash, rec.lsn);
            mix(&o->hash, rec.tot_len);
            mix(&o->hash, rec.crc);
            mix(&o->hash, rec.end);
            CHECK(rec.lsn >= lsn && rec.end > rec.lsn && rec.end % 8 == 0);
            /* the record decodes the same on its own */
            struct pgwal_record again;
            char err[512];
            CHECK(pgwal_decode_record(rec.raw, rec.tot_len, rec.lsn, &again, err, sizeof err) == 0);
            CHECK(again.max_block_id == rec.max_block_id &&
                  again.main_data_len == rec.main_data_len && again.fpi_len == rec.fpi_len);
            exercise(&rec);
            if (seed == 0)
                mirror_replay(&mr, &rec);
        }
        free(piece);
        off += k;
    }
    mirror_end(&mr);
    if (o->rc < 0)
        CHECK(o->err[0] != '\0');
    else
        o->err[0] = '\0';
    pgwal_reader_free(&r);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 13)
        return 0;
    uint8_t flags = data[0];
    uint64_t lsn = 0;
    for (int i = 7; i >= 0; i--)
        lsn = lsn << 8 | data[1 + i];
    uint32_t seed = (uint32_t)data[9] | (uint32_t)data[10] << 8 | (uint32_t)data[11] << 16 |
                    (uint32_t)data[12] << 24;
    size_t n = size - 13;
    uint8_t *bytes = malloc(n > 0 ? n : 1);
    CHECK(bytes != NULL);
    memcpy(bytes, data + 13, n);

    if (flags & 1) {
        struct pgwal_record rec;
        char err[512] = "";
        int rc = pgwal_decode_record(n > 0 ? bytes : NULL, n, lsn, &rec, err, sizeof err);
        failed_with_message(rc, err);
        if (rc == 0) {
            exercise(&rec);
            struct mirror_run mr = {0};
            mirror_replay(&mr, &rec);
            mirror_end(&mr);
        }
    } else {
        static const uint32_t segs[] = {16u << 20, 1u << 20, 64u << 20, 1u << 30};
        uint32_t seg = segs[(flags >> 1) & 3];
        bool crc = (flags & 8) != 0;
        lsn &= 0xFFFFFFFFFFFFull;
        struct outcome whole, pieces;
        run(seg, crc, lsn, bytes, n, 0, &whole);
        run(seg, crc, lsn, bytes, n, seed | 1, &pieces);
        CHECK(whole.records == pieces.records && whole.hash == pieces.hash);
        CHECK(whole.rc == pieces.rc && strcmp(whole.err, pieces.err) == 0);
    }
    free(bytes);
    return 0;
}
