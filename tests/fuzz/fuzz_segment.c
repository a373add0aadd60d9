/* fuzz_segment.c -- libFuzzer target for segment blocks as serve reads them:
 * a block stored under a segment key of a real store, read through the
 * store's segment walk and the engine's scan (engine/exec.c: family choice,
 * bucket starts, slices of key, sum and value-count columns, value-count
 * offsets), as asks over HTTP would.
 *
 * Setup (once): the small taxi store of fuzz_store.c; every segment of both
 * views is remembered with its original block, and a fixed set of asks
 * (totals, one key, a dim with a condition, per bucket, re-bucketed, value
 * counts) is answered on the intact store over two ranges around each
 * segment: its whole span (span rows) and its span less one bucket at each
 * end (bucket rows, and narrower widths at the edges). The harness checks
 * itself too: an empty value under each segment's key must make at least
 * one ask fail, so every segment is read by the asks that follow.
 *
 * Each input: byte 0 picks the segment (modulo their number) and the range
 * (the quotient's low bit); the rest is the value stored under its key (a
 * raw LMDB put, see put_value), the engine answers the asks of that view
 * over that range, and the original block is put back. Every answer must
 * be a 200, or a 500 "corrupt_store" whose message names the segment's
 * span; a 422 (too many groups, a sum overflowing) only for a block that
 * differs in length from the original.
 * A block of the original's length with some bytes changed is a corrupted
 * block: then every 200 must be exactly the intact store's answer, since a
 * corruption may be caught or harmless but never change an answer.
 *
 * Built with FUZZ_SEGMENT_DELTAS (the target fuzz_delta), the store has
 * taken a few small commits after its load (fuzz_store_add_deltas), so each
 * segment is a base and delta blocks, read merged by the scan; the blocks
 * fuzzed are the deltas as well as the bases, under the same promise.
 *
 * The store's dense dim chunks (SPEC.md §4.3: the zones' boroughs, read by
 * the asks grouped or filtered by borough) are fuzzed the same way, over
 * the whole of the trips' days and over their middle: a 500 must then name
 * a dense chunk, and a chunk of the original's length with bytes changed
 * must answer as the intact store or fail (its entries are checksummed).
 *
 * FUZZ_SEGMENT_SEEDS=<dir> writes the original blocks there as seeds. */
#include "engine/engine.h"
#include "engine/internal.h"
#include "store/internal.h"
#include "tests/fuzz/fuzz_store.h"

#include <lmdb.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_SEGMENTS 64
#ifdef FUZZ_SEGMENT_DELTAS
#define TARGET "fuzz_delta"
#else
#define TARGET "fuzz_segment"
#endif
#define NRANGES 2

struct ask_spec {
    int view;
    const char *text;
};

static const struct ask_spec ASKS[] = {
    {0, "SELECT trips, fare, avg_fare, median_fare FROM trips WHERE bucket >= $1 AND bucket < $2"},
    {0, "SELECT payment_type, trips, p99_fare FROM trips WHERE bucket >= $1 AND bucket < $2 "
        "GROUP BY payment_type"},
    {0, "SELECT borough, trips, fare FROM trips WHERE bucket >= $1 AND bucket < $2 AND "
        "payment_type IN (1, 2) GROUP BY borough"},
    {0, "SELECT bucket, trips, median_fare FROM trips WHERE bucket >= $1 AND bucket < $2 "
        "GROUP BY bucket"},
    {0, "SELECT date_bin('1 day', bucket) AS day, pu_location_id, fare FROM trips WHERE "
        "bucket >= $1 AND bucket < $2 AND borough = 'Queens' GROUP BY day, pu_location_id"},
    {1, "SELECT trips, tips, avg_distance FROM dropoffs WHERE bucket >= $1 AND bucket < $2"},
    {1, "SELECT borough, fare FROM dropoffs WHERE bucket >= $1 AND bucket < $2 GROUP BY borough"},
    {1, "SELECT bucket, do_location_id, trips FROM dropoffs WHERE bucket >= $1 AND bucket < $2 "
        "GROUP BY bucket, do_location_id"},
    {1, "SELECT date_bin('7 days', bucket) AS week, do_location_id, avg_distance FROM dropoffs "
        "WHERE bucket >= $1 AND bucket < $2 AND do_location_id <> 3 GROUP BY week, "
        "do_location_id"},
};
#define NASKS (sizeof ASKS / sizeof ASKS[0])

/* A fuzzed block: a segment's base, or one of its deltas (delta > 0), or
 * a dense dim chunk (dense). */
struct segment {
    bool dense;
    int view, width, delta;
    int64_t span_start, span_end, width_us;
    uint8_t key[DELTA_KEY_BYTES];
    size_t klen; /* SEG_KEY_BYTES for a base, DELTA_KEY_BYTES for a delta */
    uint8_t *block;
    size_t len;
    char from[NRANGES][40], to[NRANGES][40];
    char *answers[NASKS][NRANGES]; /* the intact store's; NULL for another view's ask */
};

static const char *fuzz_dir;
static struct engine *engine; /* open for the whole run */
static struct segment segs[MAX_SEGMENTS];
static int nsegs;

/* ---- The store, behind the engine's back --------------------------------------------- */

/* Segment values are written behind the engine's back with plain LMDB,
 * through the engine's own environment: LMDB wants one environment per
 * file per process, and reopening the store per input cost milliseconds.
 * So the engine's store is reopened read-write (open_engine), and a write
 * transaction on its environment replaces a value between asks, which take
 * their own read snapshots. No fsync: nothing here outlives the process. */
static void put_value(bool dense, const uint8_t *key, size_t klen, const void *value, size_t len)
{
    struct store *s = engine_store(engine);
    MDB_txn *txn;
    int rc = mdb_txn_begin(s->env, NULL, 0, &txn);
    if (!rc) {
        /* An empty value is a valid LMDB value: the block that is nothing. */
        MDB_val k = {klen, (void *)key}, v = {len, (void *)value};
        rc = mdb_put(txn, dense ? s->dense : s->seg, &k, &v, 0);
        rc = rc ? (mdb_txn_abort(txn), rc) : mdb_txn_commit(txn);
    }
    if (rc)
        fuzz_fail("writing a segment into %s: %s", fuzz_dir, mdb_strerror(rc));
}

/* The engine as serve opens it, but on the store opened read-write (the
 * engine only reads through store_read_begin, which either mode serves). */
static struct engine *open_engine(void)
{
    struct store_error err;
    struct engine *e = engine_open(fuzz_dir, NULL, &err);
    if (!e)
        fuzz_fail("engine_open: %s", err.message);
    store_close(e->store);
    if (store_open(fuzz_dir, STORE_READ_WRITE, &e->store, &err))
        fuzz_fail("store_open read-write: %s", err.message);
    mdb_env_set_flags(e->store->env, MDB_NOSYNC, 1);
    return e;
}

/* ---- Asks --------------------------------------------------------------------------- */

static void time_text(int64_t usec, char out[40])
{
    int64_t days = usec / 86400000000LL - (usec % 86400000000LL < 0);
    int64_t rest = usec - days * 86400000000LL, y;
    unsigned m, d;
    sql_civil_from_days(days, &y, &m, &d);
    int64_t s = rest / 1000000;
    snprintf(out, 40, "%04lld-%02u-%02u %02lld:%02lld:%02lld+00", (long long)y, m, d,
             (long long)(s / 3600), (long long)(s / 60 % 60), (long long)(s % 60));
}

struct answer {
    int status;
    char code[32];
    char *text; /* the JSON answer, or the error message */
};

static void ask(struct engine *e, const struct segment *g, size_t a, int range, struct answer *out)
{
    struct ask_value params[2] = {
        {ASK_STRING, false, g->from[range], strlen(g->from[range])},
        {ASK_STRING, false, g->to[range], strlen(g->to[range])},
    };
    struct ask_request req = {.ask = ASKS[a].text, .params = params, .nparams = 2};
    struct buf b = {0};
    struct ask_error err = {0};
    memset(out, 0, sizeof *out);
    if (engine_ask(e, &req, &b, &err) == 0) {
        if (b.failed)
            fuzz_fail("an answer's buffer failed");
        buf_put(&b, "", 1);
        out->status = 200;
        out->text = b.data;
        return;
    }
    buf_free(&b);
    out->status = err.status;
    snprintf(out->code, sizeof out->code, "%s", err.code);
    out->text = strdup(err.message);
}

/* ---- Setup -------------------------------------------------------------------------- */

/* Adds a block (the base when key is a segment key) to the fuzzed ones. */
static struct segment *add_block(const struct sql_view *view, int v, int w, int64_t span_start,
                                 const uint8_t *key, size_t klen, const void *bytes, size_t len)
{
    if (nsegs == MAX_SEGMENTS)
        fuzz_fail("the fuzz store has more than %d blocks", MAX_SEGMENTS);
    struct segment *g = &segs[nsegs++];
    g->view = v;
    g->width = w;
    g->delta = klen == DELTA_KEY_BYTES ? key[SEG_KEY_BYTES] : 0;
    g->width_us = view->widths[w];
    g->span_start = span_start;
    g->span_end = span_start + store_span_buckets(view, w) * g->width_us;
    memcpy(g->key, key, klen);
    g->klen = klen;
    g->len = len;
    g->block = malloc(len ? len : 1);
    if (!g->block)
        fuzz_fail("out of memory");
    memcpy(g->block, bytes, len);
    time_text(g->span_start, g->from[0]);
    time_text(g->span_end, g->to[0]);
    time_text(g->span_start + g->width_us, g->from[1]);
    time_text(g->span_end - g->width_us, g->to[1]);
    return g;
}

/* The delta blocks stored after a segment's key, by a cursor over the
 * keys that extend it: each goes to the fuzzed blocks. Returns how many. */
static int add_deltas(struct store_read *r, const struct sql_view *view, int v, int w,
                      int64_t span_start, const uint8_t seg[SEG_KEY_BYTES])
{
    MDB_cursor *cur;
    if (mdb_cursor_open(r->txn, r->s->seg, &cur))
        fuzz_fail("opening a cursor on the fuzz store");
    MDB_val k = {SEG_KEY_BYTES, (void *)seg}, val;
    int n = 0, rc = mdb_cursor_get(cur, &k, &val, MDB_SET_RANGE);
    for (; rc == 0; rc = mdb_cursor_get(cur, &k, &val, MDB_NEXT)) {
        if (k.mv_size < SEG_KEY_BYTES || memcmp(k.mv_data, seg, SEG_KEY_BYTES) != 0)
            break;
        if (k.mv_size == DELTA_KEY_BYTES) {
            add_block(view, v, w, span_start, k.mv_data, k.mv_size, val.mv_data, val.mv_size);
            n++;
        }
    }
    mdb_cursor_close(cur);
    return n;
}

/* The dense dim chunks of the first two views, each fuzzed over the whole
 * of the trips' days (range 0) and over their middle (range 1). */
static void add_dense_chunks(struct store_read *r)
{
    MDB_cursor *cur;
    if (mdb_cursor_open(r->txn, r->s->dense, &cur))
        fuzz_fail("opening a dense cursor on the fuzz store");
    MDB_val k, val;
    int n = 0, rc;
    for (rc = mdb_cursor_get(cur, &k, &val, MDB_FIRST); rc == 0;
         rc = mdb_cursor_get(cur, &k, &val, MDB_NEXT)) {
        int v = be_load_u16(k.mv_data);
        if (v >= 2 || k.mv_size != DENSE_KEY_BYTES)
            continue;
        if (nsegs == MAX_SEGMENTS)
            fuzz_fail("the fuzz store has more than %d blocks", MAX_SEGMENTS);
        struct segment *g = &segs[nsegs++];
        *g = (struct segment){.dense = true, .view = v, .klen = k.mv_size, .len = val.mv_size};
        memcpy(g->key, k.mv_data, k.mv_size);
        if (!(g->block = malloc(val.mv_size)))
            fuzz_fail("out of memory");
        memcpy(g->block, val.mv_data, val.mv_size);
        time_text(FUZZ_START_US - 86400000000LL, g->from[0]);
        time_text(FUZZ_START_US + (FUZZ_DAYS + 1) * 86400000000LL, g->to[0]);
        time_text(FUZZ_START_US + 3600000000LL, g->from[1]);
        time_text(FUZZ_START_US + FUZZ_DAYS * 86400000000LL - 3600000000LL, g->to[1]);
        n++;
    }
    mdb_cursor_close(cur);
    if (n == 0)
        fuzz_fail("the fuzz store has no dense dim chunks");
}

static void collect_segments(void)
{
    struct store *s;
    struct store_read *r;
    struct store_error err;
    if (store_open(fuzz_dir, STORE_READ_ONLY, &s, &err) || store_read_begin(s, &r, &err))
        fuzz_fail("opening the fuzz store: %s", err.message);
    const struct sql_view_list *views = store_views(s);
    for (int v = 0; v < views->nviews && v < 2; v++)
        for (int w = 0; w < views->views[v].nwidths; w++) {
            struct store_segment_iter it;
            struct store_segment seg;
            if (store_segments_begin(r, v, w, INT64_MIN, INT64_MAX, &it, &err))
                fuzz_fail("store_segments_begin: %s", err.message);
            int rc;
            while ((rc = store_segments_next(&it, &seg, &err)) == 1) {
                const struct sql_view *view = &views->views[v];
                uint8_t key[SEG_KEY_BYTES];
                seg_key(key, v, w, seg.span_start);
                add_block(view, v, w, seg.span_start, key, SEG_KEY_BYTES, seg.bytes, seg.len);
                int n = add_deltas(r, view, v, w, seg.span_start, key);
#ifdef FUZZ_SEGMENT_DELTAS
                if (n == 0)
                    fuzz_fail("segment %s of view %d, width %d has no delta blocks",
                              segs[nsegs - 1].from[0], v, w);
#else
                if (n != 0)
                    fuzz_fail("the fuzz store's segments have delta blocks");
#endif
            }
            if (rc < 0)
                fuzz_fail("store_segments_next: %s", err.message);
            store_segments_end(&it);
        }
    if (nsegs == 0)
        fuzz_fail("the fuzz store has no segments");
    add_dense_chunks(r);
    store_read_end(r);
    store_close(s);
}

static void write_seeds(const char *dir)
{
    for (int i = 0; i < nsegs; i++) {
        char path[4096];
        snprintf(path, sizeof path, "%s/%s_%s_w%d_d%d_%d", dir, segs[i].dense ? "dense" : "seg",
                 segs[i].view ? "dropoffs" : "trips", segs[i].width, segs[i].delta, i);
        FILE *f = fopen(path, "wb");
        uint8_t k = (uint8_t)i;
        if (!f || fwrite(&k, 1, 1, f) != 1 ||
            fwrite(segs[i].block, 1, segs[i].len, f) != segs[i].len || fclose(f) != 0)
            fuzz_fail("cannot write %s", path);
    }
    fprintf(stderr, TARGET ": wrote %d seeds to %s\n", nsegs, dir);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    fuzz_dir = fuzz_store_make(200); /* see fuzz_store.h */
#ifdef FUZZ_SEGMENT_DELTAS
    fuzz_store_add_deltas(fuzz_dir, 200, 3, 6);
#endif
    collect_segments();
    const char *seeds = getenv("FUZZ_SEGMENT_SEEDS");
    if (seeds)
        write_seeds(seeds);

    engine = open_engine();
    for (int i = 0; i < nsegs; i++)
        for (size_t a = 0; a < NASKS; a++)
            for (int r = 0; r < NRANGES; r++) {
                if (ASKS[a].view != segs[i].view)
                    continue;
                struct answer ans;
                ask(engine, &segs[i], a, r, &ans);
                if (ans.status != 200)
                    fuzz_fail("the intact store answers \"%s\" over [%s, %s) with %d: %s",
                              ASKS[a].text, segs[i].from[r], segs[i].to[r], ans.status, ans.text);
                segs[i].answers[a][r] = ans.text;
            }

    /* Every segment must be read by some ask: an empty block fails one. */
    for (int i = 0; i < nsegs; i++) {
        put_value(segs[i].dense, segs[i].key, segs[i].klen, "", 0);
        int failed = 0;
        for (size_t a = 0; a < NASKS; a++)
            for (int r = 0; r < NRANGES; r++) {
                if (ASKS[a].view != segs[i].view)
                    continue;
                struct answer ans;
                ask(engine, &segs[i], a, r, &ans);
                failed += ans.status != 200;
                free(ans.text);
            }
        put_value(segs[i].dense, segs[i].key, segs[i].klen, segs[i].block, segs[i].len);
        if (!failed)
            fuzz_fail("no ask reads block %d (view %d, width %d, span %s, delta %d)", i,
                      segs[i].view, segs[i].width, segs[i].from[0], segs[i].delta);
    }
    return 0;
}

/* ---- One input ---------------------------------------------------------------------- */

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    const struct segment *g = &segs[data[0] % nsegs];
    const int r = data[0] / nsegs % NRANGES; /* one range per input: half the asks */
    const uint8_t *block = data + 1;
    size_t len = size - 1;
    /* The same length with some bytes changed: a corruption of the block. */
    bool corrupted = len == g->len && memcmp(block, g->block, len) != 0;
    bool same = len == g->len && !corrupted;
    char span[40];
    if (g->dense)
        snprintf(span, sizeof span, "dense chunk");
    else
        snprintf(span, sizeof span, "span %lld", (long long)g->span_start);

    put_value(g->dense, g->key, g->klen, block, len);
    for (size_t a = 0; a < NASKS; a++) {
        if (ASKS[a].view != g->view)
            continue;
        struct answer ans;
        ask(engine, g, a, r, &ans);
        if (ans.status == 200) {
            if ((same || corrupted) && strcmp(ans.text, g->answers[a][r]) != 0)
                fuzz_fail("a %s block changed the answer to \"%s\" over [%s, %s):\n"
                          "  intact: %s\n  now:    %s",
                          same ? "byte-identical" : "corrupted", ASKS[a].text, g->from[r],
                          g->to[r], g->answers[a][r], ans.text);
        } else if (ans.status == 500) {
            if (strcmp(ans.code, "corrupt_store") != 0 || !strstr(ans.text, span))
                fuzz_fail("a bad block gave 500 %s without naming its %s: %s", ans.code, span,
                          ans.text);
            if (same)
                fuzz_fail("the intact block failed: %s", ans.text);
        } else if (ans.status != 422 || same || corrupted) {
            fuzz_fail("a %s block gave %d %s to \"%s\": %s",
                      same ? "byte-identical" : corrupted ? "corrupted" : "replaced", ans.status,
                      ans.code, ASKS[a].text, ans.text);
        }
        free(ans.text);
    }
    put_value(g->dense, g->key, g->klen, g->block, g->len);
    return 0;
}
