/* heap_mirror.c -- heap pages rebuilt from the physical WAL (heap_mirror.h).
 *
 * The replay follows PostgreSQL 15's heap redo (heapam.c heap_xlog_*,
 * pruneheap.c heap_page_prune_execute) as far as line pointers and tuple
 * bytes go; what it leaves out (visibility bits, hint bits, where on the
 * page a tuple sits, the free space map and visibility map forks) no row
 * depends on. */
#include "ingest/heap_mirror.h"

#include "base/bytes.h"
#include "base/error.h"
#include "base/hashtab.h"

#include <stdlib.h>
#include <string.h>

/* Line pointer states (storage/itemid.h), and two of ours: a partial
 * page's line pointer no record has told us of, and a row that a committed
 * transaction deleted or updated away, normal on the server until pruned
 * but never read again, whose bytes the mirror gave back (invariant 4). */
enum {
    LP_UNUSED = 0,
    LP_NORMAL = 1,
    LP_REDIRECT = 2,
    LP_DEAD = 3,
    LP_UNKNOWN = 4,
    LP_RELEASED = 5
};

struct item {
    uint8_t state;
    uint8_t hoff;
    uint16_t infomask2, infomask;
    uint32_t len;
    uint32_t at; /* LP_NORMAL: its len bytes at the page's data + at */
};

/* A page holds its line pointers in an array as long as the highest one
 * set, and its tuples' bytes in one buffer, as PostgreSQL's page does.
 * Each tuple malloc'd on its own (a malloc, a free and malloc's own 16
 * bytes a tuple) and an array of all 291 possible line pointers (7 KiB a
 * page, whatever it held) took some twice the bytes, and the physical
 * follower's mirror holds every page changed since a checkpoint: the
 * pages a phase of `taxi wal` touches come as images, each a fresh page
 * of memory the kernel zeroes. A tuple dropped leaves its bytes dead in
 * the buffer until a put needs the room (data_reserve). */
struct page {
    struct pgwal_relfilenode node;
    uint32_t blkno;
    uint64_t lsn;        /* the end of the last record that touched it */
    bool partial;        /* invariant 1 */
    uint16_t nitems;     /* line pointers 1..nitems set; past them unused, or unknown if partial */
    uint16_t items_cap;  /* items[0, items_cap): [0] unused */
    struct item *items;  /* by offset number */
    uint8_t *data;       /* the tuples' bytes */
    uint32_t used, dead, cap; /* of data: bytes taken, those of tuples dropped, room */
    uint32_t doomed;          /* entries of open transactions' lists naming it: kept while > 0 */
};

/* The rows an open transaction deleted or updated away, by place: at its
 * commit they are dead to every reader to come (invariant 4); at its abort
 * they live on. A list pins its pages (page.doomed), so a place never
 * names a page freed. */
struct doomed {
    struct page *page;
    uint16_t off;
};

struct doomed_list {
    uint32_t xid;
    uint32_t n, cap;
    struct doomed *v;
};

struct heap_mirror {
    struct hashtab pages; /* (db << 32 | rel, spc << 32 | blkno) -> struct page * */
    struct pgwal_relfilenode *followed;
    int nfollowed;
    size_t bytes, max_bytes;
    /* The open transactions' lists, found by a scan from the last one
     * used: a record's xid is most often its predecessor's, and few
     * transactions are open at once. */
    struct doomed_list *lists;
    int nlists, caplists, last_list;
};

static void page_key(struct pgwal_relfilenode n, uint32_t blkno, uint64_t key[2])
{
    key[0] = (uint64_t)n.db << 32 | n.rel;
    key[1] = (uint64_t)n.spc << 32 | blkno;
}

static bool same_node(struct pgwal_relfilenode a, struct pgwal_relfilenode b)
{
    return a.spc == b.spc && a.db == b.db && a.rel == b.rel;
}

static bool followed(const struct heap_mirror *m, struct pgwal_relfilenode n)
{
    for (int i = 0; i < m->nfollowed; i++)
        if (same_node(m->followed[i], n))
            return true;
    return false;
}

struct heap_mirror *heap_mirror_new(size_t max_bytes)
{
    struct heap_mirror *m = calloc(1, sizeof *m);
    if (!m)
        return NULL;
    hashtab_init(&m->pages, 2, sizeof(struct page *));
    m->max_bytes = max_bytes;
    return m;
}

/* What a page takes, as the bound counts it. */
static size_t page_bytes(const struct page *p)
{
    return sizeof *p + sizeof *p->items * (size_t)p->items_cap + p->cap;
}

static void page_free(struct heap_mirror *m, struct page *p)
{
    m->bytes -= page_bytes(p);
    free(p->items);
    free(p->data);
    free(p);
}

void heap_mirror_free(struct heap_mirror *m)
{
    if (!m)
        return;
    for (int i = 0; i < m->nlists; i++)
        free(m->lists[i].v);
    free(m->lists);
    uint32_t at = 0;
    uint64_t *slot;
    while ((slot = hashtab_next(&m->pages, &at)))
        page_free(m, *(struct page **)hashtab_value_of(&m->pages, slot));
    hashtab_free(&m->pages);
    free(m->followed);
    free(m);
}

int heap_mirror_follow(struct heap_mirror *m, struct pgwal_relfilenode node)
{
    if (followed(m, node))
        return 0;
    struct pgwal_relfilenode *f = realloc(m->followed, sizeof *f * (size_t)(m->nfollowed + 1));
    if (!f)
        return -1;
    m->followed = f;
    m->followed[m->nfollowed++] = node;
    return 0;
}

static struct page *page_find(const struct heap_mirror *m, struct pgwal_relfilenode n,
                              uint32_t blkno)
{
    if (!m->pages.cap)
        return NULL;
    uint64_t key[2];
    page_key(n, blkno, key);
    struct page **p = hashtab_find(&m->pages, key, hashtab_hash(&m->pages, key));
    return p ? *p : NULL;
}

static int over_bound(const struct heap_mirror *m, char *err, size_t errlen)
{
    return error_fmt(err, errlen,
                     "the heap pages changed since the last checkpoint take more than the %zu "
                     "bytes allowed: checkpoint more often (checkpoint_timeout, max_wal_size) or "
                     "allow more",
                     m->max_bytes);
}

/* The page, made empty when the mirror lacks it: complete (an image or a
 * re-initialisation follows) or partial. NULL with err when out of memory
 * or past the bound. */
static struct page *page_get(struct heap_mirror *m, struct pgwal_relfilenode n, uint32_t blkno,
                             bool partial, char *err, size_t errlen)
{
    struct page *p = page_find(m, n, blkno);
    if (p)
        return p;
    if (m->max_bytes && m->bytes + sizeof *p > m->max_bytes) {
        over_bound(m, err, errlen);
        return NULL;
    }
    uint64_t key[2];
    page_key(n, blkno, key);
    bool added;
    struct page **slot = hashtab_upsert(&m->pages, key, hashtab_hash(&m->pages, key), &added);
    if (!slot || !(p = calloc(1, sizeof *p))) {
        error_fmt(err, errlen, "out of memory keeping heap pages");
        return NULL;
    }
    *slot = p;
    p->node = n;
    p->blkno = blkno;
    p->partial = partial;
    m->bytes += sizeof *p;
    return p;
}

/* Empties a page: every line pointer unused, complete from here on. Its
 * arrays stay for what comes next. */
static void page_clear(struct page *p)
{
    if (p->items_cap)
        memset(p->items, 0, sizeof *p->items * p->items_cap);
    p->nitems = 0;
    p->used = p->dead = 0;
    p->partial = false;
}

static int bad_offset(const struct page *p, unsigned off, char *err, size_t errlen)
{
    return error_fmt(err, errlen, "line pointer %u of block %u of relation %u/%u/%u: a heap page "
                                  "has at most %d",
                     off, p->blkno, p->node.spc, p->node.db, p->node.rel, HEAP_MIRROR_MAX_ITEMS);
}

/* Room for more bytes in the mirror's bound: 0, or -1 with err. */
static int take_bytes(struct heap_mirror *m, size_t more, char *err, size_t errlen)
{
    if (m->max_bytes && m->bytes + more > m->max_bytes)
        return over_bound(m, err, errlen);
    m->bytes += more;
    return 0;
}

/* Line pointers up to off in the page's array. 0, or -1 with err. */
static int items_reserve(struct heap_mirror *m, struct page *p, unsigned off, char *err,
                         size_t errlen)
{
    if (off < p->items_cap)
        return 0;
    unsigned cap = p->items_cap ? 2u * p->items_cap : 64u;
    cap = cap < off + 1u ? off + 1u : cap;
    cap = cap > HEAP_MIRROR_MAX_ITEMS + 1u ? HEAP_MIRROR_MAX_ITEMS + 1u : cap;
    if (take_bytes(m, sizeof *p->items * (cap - p->items_cap), err, errlen))
        return -1;
    struct item *items = realloc(p->items, sizeof *items * cap);
    if (!items) {
        m->bytes -= sizeof *p->items * (cap - p->items_cap);
        return error_fmt(err, errlen, "out of memory keeping heap pages");
    }
    memset(items + p->items_cap, 0, sizeof *items * (cap - p->items_cap));
    p->items = items;
    p->items_cap = (uint16_t)cap;
    return 0;
}

/* Moves the live tuples to the front of a new buffer of cap bytes (at
 * least the live bytes; 0 frees the buffer). 0, or -1 with err (the page
 * unchanged): out of memory or past the bound. */
static int data_move(struct heap_mirror *m, struct page *p, uint32_t cap, char *err,
                     size_t errlen)
{
    if (cap > p->cap && take_bytes(m, cap - p->cap, err, errlen))
        return -1;
    uint8_t *data = cap ? malloc(cap) : NULL;
    if (cap && !data) {
        m->bytes -= cap - p->cap;
        return error_fmt(err, errlen, "out of memory keeping heap pages");
    }
    m->bytes -= cap < p->cap ? p->cap - cap : 0;
    uint32_t at = 0;
    for (unsigned i = 1; i <= p->nitems; i++) {
        struct item *it = &p->items[i];
        if (it->state != LP_NORMAL)
            continue;
        memcpy(data + at, p->data + it->at, it->len);
        it->at = at;
        at += it->len;
    }
    free(p->data);
    p->data = data;
    p->cap = cap;
    p->used = at;
    p->dead = 0;
    return 0;
}

/* Room for len more bytes of tuples: the live tuples moved to the front of
 * a new buffer, as large as the old one when a quarter of that was dead and
 * that makes room, else half as large again as they need (never smaller
 * than the old: the live bytes and len pass three quarters of it). 0, or
 * -1 with err (the page unchanged). */
static int data_reserve(struct heap_mirror *m, struct page *p, uint32_t len, char *err,
                        size_t errlen)
{
    if (len <= p->cap - p->used)
        return 0;
    uint64_t need = (uint64_t)(p->used - p->dead) + len;
    uint64_t cap = need <= p->cap && p->dead >= p->cap / 4 ? p->cap : need + need / 2;
    if (cap > UINT32_MAX)
        return error_fmt(err, errlen, "a heap page's tuples take more than 4 GiB");
    return data_move(m, p, (uint32_t)cap, err, errlen);
}

/* Sets line pointer off to state, dropping any tuple it held. */
static int item_state(struct heap_mirror *m, struct page *p, unsigned off, uint8_t state,
                      char *err, size_t errlen)
{
    if (off == 0 || off > HEAP_MIRROR_MAX_ITEMS)
        return bad_offset(p, off, err, errlen);
    if (items_reserve(m, p, off, err, errlen))
        return -1;
    for (unsigned i = p->nitems + 1u; i < off; i++)
        p->items[i].state = p->partial ? LP_UNKNOWN : LP_UNUSED;
    if (off > p->nitems)
        p->nitems = (uint16_t)off;
    struct item *it = &p->items[off];
    if (it->state == LP_NORMAL)
        p->dead += it->len;
    *it = (struct item){.state = state};
    return 0;
}

/* Puts a tuple at line pointer off (its data copied). */
static int item_put(struct heap_mirror *m, struct page *p, unsigned off, uint16_t infomask2,
                    uint16_t infomask, uint8_t hoff, const uint8_t *data, uint32_t len, char *err,
                    size_t errlen)
{
    /* The line pointer first: a tuple it held is dead room data_reserve
     * may take back. */
    if (item_state(m, p, off, LP_UNUSED, err, errlen) || data_reserve(m, p, len, err, errlen))
        return -1;
    if (len)
        memcpy(p->data + p->used, data, len);
    p->items[off] = (struct item){LP_NORMAL, hoff, infomask2, infomask, len, p->used};
    p->used += len;
    return 0;
}

/* The tuple at off: 0 with *t, or -1 with a message naming why it is not
 * there (invariant 1). */
static int item_get(const struct page *p, unsigned off, struct heap_mirror_tuple *t, char *err,
                    size_t errlen)
{
    uint8_t state = off >= 1 && off <= p->nitems ? p->items[off].state
                    : p->partial                ? LP_UNKNOWN
                                                : LP_UNUSED;
    if (off == 0 || off > HEAP_MIRROR_MAX_ITEMS)
        return bad_offset(p, off, err, errlen);
    if (state == LP_NORMAL) {
        const struct item *it = &p->items[off];
        *t = (struct heap_mirror_tuple){it->infomask2, it->infomask, it->hoff, p->data + it->at,
                                        it->len};
        return 0;
    }
    if (state == LP_UNKNOWN)
        return error_fmt(err, errlen,
                         "the row at (%u,%u) of relation %u/%u/%u was changed, and its page was "
                         "never seen whole: reading must start at a checkpoint's redo pointer "
                         "with full_page_writes on",
                         p->blkno, off, p->node.spc, p->node.db, p->node.rel);
    if (state == LP_RELEASED)
        return error_fmt(err, errlen,
                         "the row at (%u,%u) of relation %u/%u/%u was deleted or updated by a "
                         "committed transaction, and a record changes it again",
                         p->blkno, off, p->node.spc, p->node.db, p->node.rel);
    static const char *const states[] = {"unused", "normal", "a redirect", "dead"};
    return error_fmt(err, errlen, "line pointer (%u,%u) of relation %u/%u/%u is %s, not a row",
                     p->blkno, off, p->node.spc, p->node.db, p->node.rel, states[state]);
}

/* ---- Page images ----------------------------------------------------------- */

/* Makes page p what the image holds. */
static int page_from_image(struct heap_mirror *m, struct page *p, const uint8_t *img, char *err,
                           size_t errlen)
{
    page_clear(p);
    uint16_t lower = le_load_u16(img + 12), upper = le_load_u16(img + 14);
    if (upper == 0)
        return 0; /* PageIsNew: an all-zero page, no line pointers */
    if (lower < 24 || (lower - 24) % 4 || (lower - 24) / 4 > HEAP_MIRROR_MAX_ITEMS)
        return error_fmt(err, errlen, "page image of block %u of relation %u/%u/%u has %u bytes "
                                      "of line pointers",
                         p->blkno, p->node.spc, p->node.db, p->node.rel, (unsigned)lower);
    unsigned n = (lower - 24u) / 4u;
    /* The image's tuples, headers and all, lie between upper and the end:
     * room for them at once, not buffer after buffer. */
    if (upper < PGWAL_PAGE_SIZE && data_reserve(m, p, PGWAL_PAGE_SIZE - upper, err, errlen))
        return -1;
    for (unsigned off = 1; off <= n; off++) {
        const uint8_t *lp = img + 24 + 4 * (off - 1);
        unsigned flags = (lp[1] >> 7) | (lp[2] & 1) << 1;
        if (flags != LP_NORMAL) {
            if (item_state(m, p, off, (uint8_t)flags, err, errlen))
                return -1;
            continue;
        }
        const uint8_t *tup;
        uint16_t len;
        if (pgwal_page_tuple(img, (uint16_t)off, &tup, &len, err, errlen))
            return -1;
        /* t_infomask2 at 18, t_infomask 20, t_hoff 22 (HeapTupleHeaderData) */
        if (item_put(m, p, off, le_load_u16(tup + 18), le_load_u16(tup + 20), tup[22],
                     tup + PGWAL_TUPLE_HEADER, len - PGWAL_TUPLE_HEADER, err, errlen))
            return -1;
    }
    return 0;
}

/* Restores block id's image when it has one to apply, of a followed
 * relation's main fork: *restored then true, and the record's change to
 * that block is not replayed (invariant 2). */
static int restore_block(struct heap_mirror *m, const struct pgwal_record *rec, int id,
                         bool *restored, char *err, size_t errlen)
{
    *restored = false;
    const struct pgwal_block *b = &rec->blocks[id];
    if (id > rec->max_block_id || !b->in_use || b->fork != PGWAL_FORK_MAIN ||
        !followed(m, b->node) || !b->has_image || !b->apply_image)
        return 0;
    static uint8_t img[PGWAL_PAGE_SIZE]; /* one thread (heap_mirror.h) */
    if (pgwal_block_image(b, img, err, errlen))
        return -1;
    struct page *p = page_get(m, b->node, b->blkno, false, err, errlen);
    if (!p || page_from_image(m, p, img, err, errlen))
        return -1;
    p->lsn = rec->end;
    *restored = true;
    return 0;
}

/* Block id's page for a change the record replays onto it: created empty
 * and complete when the record re-initialises it, partial when the mirror
 * lacks it otherwise. */
static struct page *block_page(struct heap_mirror *m, const struct pgwal_record *rec, int id,
                               bool init, char *err, size_t errlen)
{
    const struct pgwal_block *b = &rec->blocks[id];
    if (id > rec->max_block_id || !b->in_use) {
        error_fmt(err, errlen, "%s record at %X/%08X lacks its block %d",
                  pgwal_rmgr_name(rec->rmid), (unsigned)(rec->lsn >> 32), (unsigned)rec->lsn, id);
        return NULL;
    }
    struct page *p = page_get(m, b->node, b->blkno, !init, err, errlen);
    if (!p)
        return NULL;
    if (init)
        page_clear(p);
    p->lsn = rec->end;
    return p;
}

/* Block 0's page: restored from the record's image (*restored: the
 * record's change to it is not replayed), else the mirror's, for the
 * change to be replayed onto (re-initialised first when init). */
static struct page *block0_page(struct heap_mirror *m, const struct pgwal_record *rec, bool init,
                                bool *restored, char *err, size_t errlen)
{
    if (restore_block(m, rec, 0, restored, err, errlen))
        return NULL;
    return *restored ? page_find(m, rec->blocks[0].node, rec->blocks[0].blkno)
                     : block_page(m, rec, 0, init, err, errlen);
}

/* ---- Rows of open transactions (invariant 4) -------------------------------- */

/* xid's list, made when make and it has none: NULL when it has none (or
 * none could be made). */
static struct doomed_list *list_of(struct heap_mirror *m, uint32_t xid, bool make)
{
    for (int k = 0; k < m->nlists; k++) {
        int i = (m->last_list + k) % m->nlists;
        if (m->lists[i].xid == xid)
            return &m->lists[m->last_list = i];
    }
    if (!make)
        return NULL;
    if (m->nlists == m->caplists) {
        int cap = m->caplists ? 2 * m->caplists : 8;
        struct doomed_list *v = realloc(m->lists, sizeof *v * (size_t)cap);
        if (!v)
            return NULL;
        m->lists = v;
        m->caplists = cap;
    }
    m->lists[m->nlists] = (struct doomed_list){.xid = xid};
    return &m->lists[m->last_list = m->nlists++];
}

/* Notes that transaction xid deleted or updated away the row at (p, off).
 * Never fails: a row not noted (no memory, or the bound reached) only
 * keeps its bytes, as a page kept whole does. */
static void doom(struct heap_mirror *m, uint32_t xid, struct page *p, unsigned off)
{
    struct doomed_list *l = xid ? list_of(m, xid, true) : NULL;
    if (!l)
        return;
    if (l->n == l->cap) {
        uint32_t cap = l->cap ? 2 * l->cap : 64;
        size_t more = sizeof *l->v * (cap - l->cap);
        if (m->max_bytes && m->bytes + more > m->max_bytes)
            return;
        struct doomed *v = realloc(l->v, sizeof *v * cap);
        if (!v)
            return;
        m->bytes += more;
        l->v = v;
        l->cap = cap;
    }
    l->v[l->n++] = (struct doomed){p, (uint16_t)off};
    p->doomed++;
}

/* The row at (p, off) is dead to every reader to come: its bytes go. A
 * page left with no live bytes frees its buffer; one more than half dead
 * moves its live bytes to a buffer half as large again as they are. */
static void release(struct heap_mirror *m, struct page *p, unsigned off)
{
    if (off > p->nitems || p->items[off].state != LP_NORMAL)
        return; /* pruned since, or a page cleared by a truncation */
    struct item *it = &p->items[off];
    p->dead += it->len;
    *it = (struct item){.state = LP_RELEASED};
    uint32_t live = p->used - p->dead;
    char ignored[8];
    if (live == 0)
        data_move(m, p, 0, ignored, sizeof ignored);
    else if (p->dead > p->cap / 2) /* a failed move keeps the buffer as it was */
        data_move(m, p, live + live / 2, ignored, sizeof ignored);
}

void heap_mirror_end(struct heap_mirror *m, const uint32_t *xids, int nxids, bool commit)
{
    for (int i = 0; i < nxids; i++) {
        struct doomed_list *l = list_of(m, xids[i], false);
        if (!l)
            continue;
        for (uint32_t k = 0; k < l->n; k++) {
            struct doomed *d = &l->v[k];
            d->page->doomed--;
            if (commit)
                release(m, d->page, d->off);
        }
        m->bytes -= sizeof *l->v * l->cap;
        free(l->v);
        *l = m->lists[--m->nlists];
        m->last_list = 0;
    }
}

/* ---- Heap records ----------------------------------------------------------- */

static struct heap_mirror_tuple wal_tuple(const struct pgwal_tuple *t)
{
    return (struct heap_mirror_tuple){t->infomask2, t->infomask, t->hoff, t->data, t->len};
}

static int put_tuple(struct heap_mirror *m, struct page *p, unsigned off,
                     const struct heap_mirror_tuple *t, char *err, size_t errlen)
{
    return item_put(m, p, off, t->infomask2, t->infomask, t->hoff, t->data, t->len, err, errlen);
}

/* Tells fn of a change; the tuples point into the mirror (or the
 * caller's copies) and are valid during the call. */
static int report(heap_change_fn fn, void *ctx, const struct pgwal_record *rec,
                  enum heap_change_kind kind, struct pgwal_relfilenode node,
                  const struct heap_mirror_tuple *old_tuple, const struct heap_mirror_tuple *new_tuple)
{
    struct heap_change c = {kind, node, rec->xid, rec->lsn, {0}, {0}};
    if (old_tuple)
        c.old_tuple = *old_tuple;
    if (new_tuple)
        c.new_tuple = *new_tuple;
    return fn ? fn(ctx, &c) : 0;
}

static int heap_insert(struct heap_mirror *m, const struct pgwal_record *rec,
                       const struct pgwal_heap *h, heap_change_fn fn, void *ctx, char *err,
                       size_t errlen)
{
    bool restored;
    struct page *p = block0_page(m, rec, h->init_page, &restored, err, errlen);
    if (!p)
        return -1;
    struct heap_mirror_tuple t;
    if (!restored) {
        if (!h->tuple.present)
            return error_fmt(err, errlen, "insert at %X/%08X carries neither its row nor an image",
                             (unsigned)(rec->lsn >> 32), (unsigned)rec->lsn);
        t = wal_tuple(&h->tuple);
        if (put_tuple(m, p, h->offnum, &t, err, errlen))
            return -1;
    }
    if (item_get(p, h->offnum, &t, err, errlen))
        return -1;
    return report(fn, ctx, rec, HEAP_CHANGE_INSERT, p->node, NULL, &t);
}

static int heap_delete(struct heap_mirror *m, const struct pgwal_record *rec,
                       const struct pgwal_heap *h, heap_change_fn fn, void *ctx, char *err,
                       size_t errlen)
{
    /* The row stays on its page, marked deleted: nothing to replay. */
    bool restored;
    struct page *p = block0_page(m, rec, false, &restored, err, errlen);
    struct heap_mirror_tuple t;
    if (!p || item_get(p, h->offnum, &t, err, errlen))
        return -1;
    int rc = report(fn, ctx, rec, HEAP_CHANGE_DELETE, p->node, &t, NULL);
    if (rc == 0)
        doom(m, rec->xid, p, h->offnum);
    return rc;
}

static int heap_update(struct heap_mirror *m, const struct pgwal_record *rec,
                       const struct pgwal_heap *h, heap_change_fn fn, void *ctx, char *err,
                       size_t errlen)
{
    /* Block 0 holds the new tuple, block 1 (when the row moved to another
     * page) the old one. The old page first, as PostgreSQL replays it. */
    int old_id = h->old_block;
    bool old_restored = false, new_restored;
    if (old_id && restore_block(m, rec, old_id, &old_restored, err, errlen))
        return -1;
    if (restore_block(m, rec, 0, &new_restored, err, errlen))
        return -1;
    if (!old_id)
        old_restored = new_restored;
    const struct pgwal_block *ob = &rec->blocks[old_id];
    struct page *op = old_restored ? page_find(m, ob->node, ob->blkno)
                                   : block_page(m, rec, old_id, false, err, errlen);
    struct heap_mirror_tuple old_t;
    if (!op || item_get(op, h->offnum, &old_t, err, errlen))
        return -1;
    /* The old tuple's bytes outlive what follows: the new tuple may go to
     * the very line pointer of a page re-initialised. */
    uint8_t *old_copy = malloc(old_t.len ? old_t.len : 1);
    uint8_t *new_bytes = NULL;
    int rc = 0;
    if (!old_copy)
        return error_fmt(err, errlen, "out of memory");
    memcpy(old_copy, old_t.data, old_t.len);
    old_t.data = old_copy;
    struct page *np = NULL;
    struct heap_mirror_tuple new_t;
    if (new_restored) {
        np = page_find(m, rec->blocks[0].node, rec->blocks[0].blkno);
    } else if (!h->tuple.present) {
        rc = error_fmt(err, errlen, "update at %X/%08X carries neither its new row nor an image",
                       (unsigned)(rec->lsn >> 32), (unsigned)rec->lsn);
    } else if (!(np = block_page(m, rec, 0, h->init_page, err, errlen))) {
        rc = -1;
    } else {
        /* The new tuple: the record's bitmap and padding (hoff - 23 bytes),
         * the old data's first prefix_len bytes, the record's rest, the old
         * data's last suffix_len bytes (heap_xlog_update). The old data is
         * the old tuple's bytes from hoff on. */
        const struct pgwal_tuple *w = &h->tuple;
        uint32_t head = w->hoff >= PGWAL_TUPLE_HEADER ? (uint32_t)(w->hoff - PGWAL_TUPLE_HEADER)
                                                   : UINT32_MAX;
        uint32_t old_head = old_t.hoff >= PGWAL_TUPLE_HEADER
                                ? (uint32_t)(old_t.hoff - PGWAL_TUPLE_HEADER)
                                : UINT32_MAX;
        bool fits = head <= w->len && old_head <= old_t.len &&
                    (uint64_t)h->prefix_len + h->suffix_len <= old_t.len - old_head;
        if ((h->prefix_len || h->suffix_len) && !fits) {
            rc = error_fmt(err, errlen, "update at %X/%08X borrows %u and %u bytes of an old row "
                                        "of %u",
                           (unsigned)(rec->lsn >> 32), (unsigned)rec->lsn, h->prefix_len,
                           h->suffix_len, old_t.len);
        } else if (!h->prefix_len && !h->suffix_len) {
            new_t = wal_tuple(w);
        } else if (!(new_bytes = malloc((size_t)w->len + h->prefix_len + h->suffix_len + 1))) {
            rc = error_fmt(err, errlen, "out of memory");
        } else {
            uint8_t *o = new_bytes;
            const uint8_t *old_data = old_t.data + old_head;
            uint32_t old_data_len = old_t.len - old_head;
            uint32_t at = h->prefix_len ? head : 0;
            memcpy(o, w->data, at), o += at;
            memcpy(o, old_data, h->prefix_len), o += h->prefix_len;
            memcpy(o, w->data + at, w->len - at), o += w->len - at;
            memcpy(o, old_data + old_data_len - h->suffix_len, h->suffix_len), o += h->suffix_len;
            new_t = (struct heap_mirror_tuple){w->infomask2, w->infomask, w->hoff, new_bytes,
                                               (uint32_t)(o - new_bytes)};
        }
        if (rc == 0)
            rc = put_tuple(m, np, h->new_offnum, &new_t, err, errlen);
    }
    if (rc == 0 && (rc = item_get(np, h->new_offnum, &new_t, err, errlen)) == 0)
        rc = report(fn, ctx, rec, HEAP_CHANGE_UPDATE, np->node, &old_t, &new_t);
    if (rc == 0 && (op != np || h->offnum != h->new_offnum))
        doom(m, rec->xid, op, h->offnum);
    free(new_bytes);
    free(old_copy);
    return rc;
}

static int replay_heap(struct heap_mirror *m, const struct pgwal_record *rec, heap_change_fn fn,
                       void *ctx, char *err, size_t errlen)
{
    const struct pgwal_block *b0 = &rec->blocks[0];
    if (rec->max_block_id < 0 || !b0->in_use || b0->fork != PGWAL_FORK_MAIN ||
        !followed(m, b0->node))
        return 0; /* TRUNCATE (no blocks: logged only for logical decoding) and others' pages */
    struct pgwal_heap h;
    if (pgwal_heap_parse(rec, &h, err, errlen))
        return -1;
    switch (h.op) {
    case PGWAL_HEAP_INSERT:
        return heap_insert(m, rec, &h, fn, ctx, err, errlen);
    case PGWAL_HEAP_DELETE:
        return heap_delete(m, rec, &h, fn, ctx, err, errlen);
    case PGWAL_HEAP_UPDATE:
    case PGWAL_HEAP_HOT_UPDATE:
        return heap_update(m, rec, &h, fn, ctx, err, errlen);
    default: { /* LOCK, CONFIRM, INPLACE: header bits only; an image still applies */
        bool restored;
        return restore_block(m, rec, 0, &restored, err, errlen);
    }
    }
}

/* PRUNE and VACUUM: line pointers redirected, dead, unused. */
static int prune(struct heap_mirror *m, struct page *p, const struct pgwal_heap2 *h, char *err,
                 size_t errlen)
{
    for (unsigned i = 0; i < h->nredirected; i++)
        if (item_state(m, p, pgwal_u16_at(h->redirected, 2 * i), LP_REDIRECT, err, errlen))
            return -1;
    for (unsigned i = 0; i < h->ndead; i++)
        if (item_state(m, p, pgwal_u16_at(h->dead, i), LP_DEAD, err, errlen))
            return -1;
    for (unsigned i = 0; i < h->nunused; i++)
        if (item_state(m, p, pgwal_u16_at(h->unused, i), LP_UNUSED, err, errlen))
            return -1;
    /* VACUUM truncates unused line pointers at the end of the array
     * (PageTruncateLinePointerArray): they read as unused either way. */
    return 0;
}

static int replay_heap2(struct heap_mirror *m, const struct pgwal_record *rec, heap_change_fn fn,
                        void *ctx, char *err, size_t errlen)
{
    const struct pgwal_block *b0 = &rec->blocks[0];
    if (rec->max_block_id < 0 || !b0->in_use || b0->fork != PGWAL_FORK_MAIN ||
        !followed(m, b0->node))
        return 0;
    struct pgwal_heap2 h;
    if (pgwal_heap2_parse(rec, &h, err, errlen))
        return -1;
    bool restored;
    if (h.op != PGWAL_HEAP2_PRUNE && h.op != PGWAL_HEAP2_VACUUM &&
        h.op != PGWAL_HEAP2_MULTI_INSERT) /* FREEZE_PAGE, VISIBLE, LOCK_UPDATED, NEW_CID, */
        return restore_block(m, rec, 0, &restored, err, errlen); /* REWRITE: no row changes */
    struct page *p = block0_page(m, rec, h.op == PGWAL_HEAP2_MULTI_INSERT && h.init_page,
                                 &restored, err, errlen);
    if (!p)
        return -1;
    if (h.op != PGWAL_HEAP2_MULTI_INSERT) {
        if (restored)
            return 0;
        if (!h.offsets_present)
            return error_fmt(err, errlen, "%s at %X/%08X carries neither its offsets nor an image",
                             pgwal_record_name(rec->rmid, rec->info), (unsigned)(rec->lsn >> 32),
                             (unsigned)rec->lsn);
        return prune(m, p, &h, err, errlen);
    }
    if (!restored && !h.tuples_present)
        return error_fmt(err, errlen, "multi-insert at %X/%08X carries neither its rows nor an "
                                      "image",
                         (unsigned)(rec->lsn >> 32), (unsigned)rec->lsn);
    uint32_t cursor = 0;
    for (uint16_t i = 0; i < h.ntuples; i++) {
        uint16_t off;
        struct pgwal_tuple wt;
        struct heap_mirror_tuple t;
        if (!restored) {
            if (!pgwal_multi_insert_tuple(&h, i, &cursor, &off, &wt))
                return error_fmt(err, errlen, "multi-insert at %X/%08X: tuple %u is missing",
                                 (unsigned)(rec->lsn >> 32), (unsigned)rec->lsn, i);
            t = wal_tuple(&wt);
            if (put_tuple(m, p, off, &t, err, errlen))
                return -1;
        } else if (h.init_page) {
            off = (uint16_t)(i + 1);
        } else if (h.offsets) {
            off = pgwal_u16_at(h.offsets, i);
        } else {
            return error_fmt(err, errlen, "multi-insert at %X/%08X names no offsets",
                             (unsigned)(rec->lsn >> 32), (unsigned)rec->lsn);
        }
        int rc = item_get(p, off, &t, err, errlen);
        if (rc == 0)
            rc = report(fn, ctx, rec, HEAP_CHANGE_INSERT, p->node, NULL, &t);
        if (rc)
            return rc;
    }
    return 0;
}

/* Every block image of a followed relation that the record carries to
 * apply (XLOG FPI and FPI_FOR_HINT: log_newpage, hint bits). */
static int restore_all(struct heap_mirror *m, const struct pgwal_record *rec, char *err,
                       size_t errlen)
{
    for (int id = 0; id <= rec->max_block_id; id++) {
        bool restored;
        if (restore_block(m, rec, id, &restored, err, errlen))
            return -1;
    }
    return 0;
}

/* Frees the pages drop() picks and keeps the others, in a table built
 * anew (base/hashtab.h invariant 4: no key is removed one by one). A page
 * an open transaction's list names is kept, emptied when truncated (a
 * server truncates no page holding such a row: a record that says it did
 * is taken at its word). Its room is made before anything is freed, so
 * that a failure (-1, out of memory) leaves the mirror as it was. Returns
 * the pages freed. */
static long drop_pages(struct heap_mirror *m, bool (*drop)(const struct page *, const void *),
                       const void *arg, bool truncated)
{
    struct hashtab kept;
    hashtab_init(&kept, 2, sizeof(struct page *));
    if (m->pages.count && hashtab_reserve(&kept, m->pages.count))
        return -1;
    long dropped = 0;
    uint32_t at = 0;
    uint64_t *slot;
    while ((slot = hashtab_next(&m->pages, &at))) {
        struct page *p = *(struct page **)hashtab_value_of(&m->pages, slot);
        bool picked = drop(p, arg);
        if (picked && !p->doomed) {
            page_free(m, p);
            dropped++;
            continue;
        }
        if (picked && truncated) {
            char ignored[8]; /* a move to no buffer frees it: it never fails */
            page_clear(p);
            data_move(m, p, 0, ignored, sizeof ignored);
        }
        bool added;
        uint64_t *key = hashtab_key_of(slot);
        *(struct page **)hashtab_upsert(&kept, key, hashtab_hash(&kept, key), &added) = p;
    }
    hashtab_free(&m->pages);
    m->pages = kept;
    return dropped;
}

struct truncation {
    struct pgwal_relfilenode node;
    uint32_t blkno;
};

static bool past_truncation(const struct page *p, const void *arg)
{
    const struct truncation *t = arg;
    return same_node(p->node, t->node) && p->blkno >= t->blkno;
}

static bool untouched_since(const struct page *p, const void *arg)
{
    return p->lsn <= *(const uint64_t *)arg;
}

int heap_mirror_replay(struct heap_mirror *m, const struct pgwal_record *rec, heap_change_fn fn,
                       void *ctx, char *err, size_t errlen)
{
    switch (rec->rmid) {
    case PGWAL_RM_HEAP:
        return replay_heap(m, rec, fn, ctx, err, errlen);
    case PGWAL_RM_HEAP2:
        return replay_heap2(m, rec, fn, ctx, err, errlen);
    case PGWAL_RM_SMGR: {
        struct pgwal_smgr s;
        if (pgwal_smgr_parse(rec, &s, err, errlen))
            return -1;
        /* VACUUM giving back a relation's empty tail: the pages past it go. */
        struct truncation t = {s.node, s.blkno};
        if (s.op == PGWAL_SMGR_TRUNCATE && (s.flags & PGWAL_SMGR_TRUNCATE_HEAP) &&
            followed(m, s.node) && drop_pages(m, past_truncation, &t, true) < 0)
            return error_fmt(err, errlen, "out of memory");
        return 0;
    }
    default:
        return restore_all(m, rec, err, errlen);
    }
}

long heap_mirror_forget_before(struct heap_mirror *m, uint64_t redo)
{
    return drop_pages(m, untouched_since, &redo, false);
}

int heap_mirror_tuple_at(const struct heap_mirror *m, struct pgwal_relfilenode node,
                         uint32_t blkno, uint16_t offnum, struct heap_mirror_tuple *t)
{
    const struct page *p = page_find(m, node, blkno);
    if (!p || offnum == 0 || offnum > HEAP_MIRROR_MAX_ITEMS)
        return -1;
    uint8_t state = offnum <= p->nitems ? p->items[offnum].state
                    : p->partial       ? LP_UNKNOWN
                                       : LP_UNUSED;
    if (state == LP_UNKNOWN)
        return -1;
    if (state == LP_RELEASED)
        return 2;
    if (state != LP_NORMAL)
        return 0;
    const struct item *it = &p->items[offnum];
    *t = (struct heap_mirror_tuple){it->infomask2, it->infomask, it->hoff, p->data + it->at,
                                    it->len};
    return 1;
}

size_t heap_mirror_pages(const struct heap_mirror *m) { return m->pages.count; }

size_t heap_mirror_bytes(const struct heap_mirror *m) { return m->bytes; }
