/* exec.c -- the scan: which cells an ask reads and how they fold into groups.
 *
 * The range [from, to) is covered with the fewest cells: whole buckets of the
 * widest width that fits, narrower widths at the edges, or, where the ask
 * may subtract, a wider bucket or a whole span less a cover of what lies
 * outside the range (pieces taken away: their rows fold negated). An ask
 * grouped by bucket at width W may only use widths that divide W (their
 * cells nest in W's buckets). The pieces are read in runs of one width and
 * sign. Each segment of each (width, sub-range) is decoded column by
 * column; every cell in range passes the key conditions (dim columns through
 * the store's dense dim columns, by array position) and is added to its
 * group: counts and sums add, value counts merge. */
#include "engine/calendar.h"
#include "engine/internal.h"
#include "engine/pred.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* The cell key a join joins on. */
static int join_key(const struct sql_view *v, int join)
{
    for (int k = 0; k < v->ncell_keys; k++)
        if (v->cell_keys[k] == v->joins[join].fact_column)
            return k;
    return -1; /* the view parser makes every join key a cell key */
}

/* ---- Dim values, by array position -------------------------------------------- */

/* A dim column's id at a join key comes from the store's dense column
 * (store_dense_chunk): the chunk holding the key, then its entry at the
 * key's offset. Each chunk is opened once per ask: its place is kept in a
 * directory by chunk number (a direct array over the chunks stored, or a
 * hash past DENSE_DIR_MAX of them: sparse int8 keys), and the last chunk
 * read is tried first, since cells come sorted by their keys. */
enum { DENSE_DIR_MAX = 1 << 15 };

struct dense_col {
    bool opened;              /* bounds read */
    bool any;                 /* some chunk is stored */
    uint64_t first, last;     /* the chunk numbers stored */
    struct format_dense *dir; /* direct: [last - first + 1], each as opened */
    uint8_t *seen;            /* direct: per chunk, 1 once opened */
    struct hashtab far;       /* past DENSE_DIR_MAX: chunk -> index into far_chunks (uint32) */
    struct format_dense *far_chunks;
    uint32_t nfar, far_cap;
    bool has_last;
    uint64_t last_chunk;
    struct format_dense last_d;
};

struct dim_cache {
    struct dense_col *cols;   /* store_dense_columns of the join */
    int ncols;
};

static const struct format_dense no_chunk = {0};

static int dense_failed(struct ask_error *err, const struct store_error *serr)
{
    if (serr->kind == STORE_ERR_NO_MEMORY)
        return ask_fail(err, 500, "internal", "out of memory");
    return ask_fail(err, 500, "corrupt_store", "%s", serr->message);
}

/* Chunk `chunk` of a dense column as opened (empty when none is stored). */
static int dense_open(struct exec *x, int join, int col, uint64_t chunk,
                      struct format_dense *out, struct ask_error *err)
{
    struct store_error serr;
    int got = store_dense_chunk(x->r, x->view, join, col, chunk, out, &serr);
    if (got < 0)
        return dense_failed(err, &serr);
    if (got == 0)
        *out = no_chunk;
    return 0;
}

static int dim_entry_slow(struct exec *x, int join, int col, uint64_t chunk, struct ask_error *err)
{
    struct dense_col *d = &x->dims[join].cols[col];
    struct store_error serr;
    if (!d->opened) {
        int got = store_dense_bounds(x->r, x->view, join, col, &d->first, &d->last, &serr);
        if (got < 0)
            return dense_failed(err, &serr);
        d->opened = true;
        d->any = got == 1;
        if (d->any && d->last - d->first < DENSE_DIR_MAX) {
            size_t n = (size_t)(d->last - d->first) + 1;
            if (!(d->dir = scratch_malloc(sizeof *d->dir * n)) ||
                !(d->seen = scratch_calloc(n, 1)))
                return ask_fail(err, 500, "internal", "out of memory");
        } else if (d->any) {
            hashtab_init(&d->far, 1, sizeof(uint32_t));
        }
    }
    struct format_dense *at;
    if (!d->any || chunk < d->first || chunk > d->last) {
        d->last_d = no_chunk;
    } else if (d->dir) {
        size_t i = (size_t)(chunk - d->first);
        at = &d->dir[i];
        if (!d->seen[i] && dense_open(x, join, col, chunk, at, err))
            return -1;
        d->seen[i] = 1;
        d->last_d = *at;
    } else {
        const uint64_t *k = &chunk;
        bool added;
        uint32_t *number = hashtab_upsert(&d->far, k, hashtab_hash(&d->far, k), &added);
        if (!number)
            return ask_fail(err, 500, "internal", "out of memory");
        if (added) {
            if (d->nfar == d->far_cap) {
                uint32_t cap = d->far_cap ? d->far_cap * 2 : 64;
                struct format_dense *a = d->far_cap < UINT32_MAX / 2
                                             ? scratch_realloc(d->far_chunks, sizeof *a * cap)
                                             : NULL;
                if (!a)
                    return ask_fail(err, 500, "internal", "out of memory");
                d->far_chunks = a;
                d->far_cap = cap;
            }
            *number = d->nfar++;
            if (dense_open(x, join, col, chunk, &d->far_chunks[*number], err))
                return -1;
        }
        d->last_d = d->far_chunks[*number];
    }
    d->has_last = true;
    d->last_chunk = chunk;
    return 0;
}

/* The dense entry of dim column col of a join at a join key
 * (FORMAT_DENSE_ABSENT for a NULL key: it joins nothing). Per cell: the
 * last chunk is an index away. */
static inline int dim_entry(struct exec *x, int join, int col, int64_t key, uint32_t *entry,
                            struct ask_error *err)
{
    if (key == STORE_NULL) {
        *entry = FORMAT_DENSE_ABSENT;
        return 0;
    }
    struct dense_col *d = &x->dims[join].cols[col];
    uint64_t chunk;
    uint32_t off;
    store_dense_locate(key, &chunk, &off);
    if (!d->has_last || chunk != d->last_chunk) {
        if (dim_entry_slow(x, join, col, chunk, err))
            return -1;
    }
    *entry = format_dense_get(&d->last_d, off);
    return 0;
}

/* A dense entry as a group key's id: its text's id, -1 for NULL (no dim
 * row, or a NULL value: a LEFT JOIN gives NULL for both). */
static inline int64_t entry_id(uint32_t entry)
{
    return entry >= FORMAT_DENSE_FIRST_ID ? (int64_t)(entry - FORMAT_DENSE_FIRST_ID) : -1;
}

/* ---- Groups ---------------------------------------------------------------------- */

/* A group lives in a slab of the ask's (struct group_map): one block holds
 * the struct and its arrays, and a slab holds many groups, so that an ask
 * of a million groups makes a few dozen allocations, not five million
 * (each malloc and free cost more than folding the group's cells). Only a
 * group's value counts own memory of their own. */
static void group_release(struct exec *x, struct group *g)
{
    exec_group_vcs_free(x, g);
    scratch_free(g->settled_values);
}

void exec_group_vcs_free(struct exec *x, struct group *g)
{
    for (int i = 0; g->vcs && i < x->v->nvalue_counts; i++) {
        x->collected_runs -= g->vcs[i].ncoll; /* their room is the next groups' */
        vc_acc_free(&g->vcs[i]);
    }
}

static size_t round16(size_t n) { return (n + 15) & ~(size_t)15; }

/* The value counts a group carries: the view's, or none when the ask
 * reads none (a vc_acc is some 200 bytes, most of a group: 577,504 groups
 * of zone and hour held 317 MB with them, 85 MB without). */
static int group_vcs(const struct exec *x)
{
    return x->any_vc ? x->v->nvalue_counts : 0;
}

/* The bytes of one group and its arrays, laid out by group_new. */
static size_t group_bytes(const struct exec *x)
{
    const struct sql_view *v = x->v;
    return round16(sizeof(struct group)) + round16(sizeof(__int128) * (size_t)v->nsums) +
           round16(8 * (size_t)x->groups.nkey) + round16(8 * (size_t)v->ncounts) +
           round16(sizeof(double) * (size_t)v->nsums) +
           round16(sizeof(struct vc_acc) * (size_t)group_vcs(x));
}

/* Slabs start at GROUP_SLAB_FIRST groups and double up to GROUP_SLAB_MAX:
 * an ask of a few groups takes a few KiB, one of a million some 150
 * slabs' worth of doubling. */
enum { GROUP_SLAB_FIRST = 16, GROUP_SLAB_MAX = 16384 };

/* Lays a zeroed group out over its gsize bytes at p, key copied in. */
static struct group *group_lay(struct exec *x, char *p, const int64_t *key)
{
    const struct sql_view *v = x->v;
    const struct group_map *m = &x->groups;
    struct group *g = (struct group *)p;
    p += round16(sizeof *g);
    g->exact = (__int128 *)p;
    p += round16(sizeof(__int128) * (size_t)v->nsums);
    g->key = (int64_t *)p;
    p += round16(8 * (size_t)m->nkey);
    g->counts = (int64_t *)p;
    p += round16(8 * (size_t)v->ncounts);
    g->real = (double *)p;
    p += round16(sizeof(double) * (size_t)v->nsums);
    g->vcs = group_vcs(x) ? (struct vc_acc *)p : NULL;
    memcpy(g->key, key, 8 * (size_t)m->nkey);
    return g;
}

void exec_group_drop(struct exec *x, struct group *g)
{
    struct group_map *m = &x->groups;
    group_release(x, g);
    g->next_free = m->free;
    m->free = g;
}

static struct group *group_new(struct exec *x, const int64_t *key)
{
    struct group_map *m = &x->groups;
    if (!m->gsize)
        m->gsize = group_bytes(x);
    if (m->free) {
        char *p = (char *)m->free;
        m->free = m->free->next_free;
        memset(p, 0, m->gsize);
        return group_lay(x, p, key);
    }
    if (m->slab_left == 0) {
        uint32_t n = m->nslabs == 0 ? GROUP_SLAB_FIRST
                     : m->slab_groups < GROUP_SLAB_MAX ? m->slab_groups * 2 : GROUP_SLAB_MAX;
        if (m->nslabs == m->slabs_cap) {
            uint32_t cap = m->slabs_cap ? m->slabs_cap * 2 : 16;
            char **slabs = scratch_realloc(m->slabs, sizeof *slabs * cap);
            if (!slabs)
                return NULL;
            m->slabs = slabs;
            m->slabs_cap = cap;
        }
        char *slab = scratch_calloc(n, m->gsize);
        if (!slab)
            return NULL;
        m->slabs[m->nslabs++] = slab;
        m->slab_at = slab;
        m->slab_groups = n;
        m->slab_left = n;
    }
    char *p = m->slab_at;
    m->slab_at += m->gsize;
    m->slab_left--;
    return group_lay(x, p, key);
}

static struct group *group_find_or_add(struct exec *x, const int64_t *key, struct ask_error *err);

static inline bool keys_equal(const int64_t *a, const int64_t *b, int n)
{
    for (int i = 0; i < n; i++) /* a key is a few words: no call to memcmp per cell */
        if (a[i] != b[i])
            return false;
    return true;
}

/* A key's slot in group_map.recent: a multiply-xor mix of its words, not
 * the table's hash (which costs as much as the probe it would save). */
static inline uint32_t recent_slot(const int64_t *key, int n)
{
    uint64_t h = 0;
    for (int i = 0; i < n; i++)
        h = (h ^ (uint64_t)key[i]) * 0x9E3779B97F4A7C15ull;
    return (uint32_t)(h >> 60) & (GROUP_RECENT - 1);
}

/* The group of a key. Cells come sorted, so the last group is often the
 * next one's too (always, for an ask without groups); else one found
 * lately often is (group_map.recent). NULL with err. */
static inline struct group *group_for(struct exec *x, const int64_t *key, struct ask_error *err)
{
    struct group_map *m = &x->groups;
    if (m->last && keys_equal(m->last->key, key, m->nkey))
        return m->last;
    uint32_t slot = recent_slot(key, m->nkey);
    struct group *g = m->recent[slot];
    if (!g || !keys_equal(g->key, key, m->nkey)) {
        if (!(g = group_find_or_add(x, key, err)))
            return NULL;
        m->recent[slot] = g;
    }
    return m->last = g;
}

static struct group *group_find_or_add(struct exec *x, const int64_t *key, struct ask_error *err)
{
    struct group_map *m = &x->groups;
    const uint64_t *k = (const uint64_t *)key;
    uint64_t h = hashtab_hash(&m->table, k);
    struct group **found = hashtab_find(&m->table, k, h);
    if (found)
        return *found;
    /* The limit is on the groups held in the map at once: an ask grouped
     * by time forgets each bin's groups once settled (settle_groups), so a
     * series longer than the limit is answered, its memory bounded by
     * --ask-memory; an ask that holds every group to its end counts them
     * all. */
    if ((int64_t)m->table.count >= x->e->limits.max_groups) {
        ask_fail(err, 422, "too_many_groups",
                 "the ask holds more than %d groups at once; narrow the range or group by "
                 "fewer keys", x->e->limits.max_groups);
        return NULL;
    }
    if (m->n == m->cap) {
        uint32_t cap = m->cap ? m->cap * 2 : 64;
        struct group **all = scratch_realloc(m->all, sizeof *all * cap);
        if (!all) {
            ask_fail(err, 500, "internal", "out of memory");
            return NULL;
        }
        m->all = all;
        m->cap = cap;
    }
    /* A group taken from its slab and then not kept (no slot) is zeroed
     * memory the slabs free at the end. */
    struct group *g = group_new(x, key);
    bool added;
    struct group **slot = g ? hashtab_upsert(&m->table, k, h, &added) : NULL;
    if (!slot) {
        ask_fail(err, 500, "internal", "out of memory");
        return NULL;
    }
    m->all[m->n++] = g;
    *slot = g;
    return g;
}

/* ---- A segment's columns ----------------------------------------------------------- */

/* The rows of one block the ask reads, as the store's cursor decodes them
 * (store_rows_load), and the value-count runs groups may hold. */
struct seg_columns {
    struct store_rows r;
    struct vc_shared **vc_shared; /* per value count: its runs, which groups may hold */
    bool *held_whole;             /* per value count: long cells are held in
                                     vc_shared itself, not copied (hold_whole) */
};

static void seg_free(const struct sql_view *v, struct seg_columns *c)
{
    for (int k = 0; c->vc_shared && k < v->nvalue_counts; k++)
        if (c->vc_shared[k])
            vc_shared_release(c->vc_shared[k]); /* the arrays live on while groups hold them */
    scratch_free(c->vc_shared);
    scratch_free(c->held_whole);
    store_rows_free(v, &c->r);
    memset(c, 0, sizeof *c);
}

/* A failure of the store's cursor as the ask's error: the block is
 * damaged, unless memory ran out. */
static int cursor_failed(struct ask_error *err, const struct store_error *serr)
{
    if (serr->kind == STORE_ERR_NO_MEMORY)
        return ask_fail(err, 500, "internal", "out of memory");
    return ask_fail(err, 500, "corrupt_store", "%s", serr->message);
}

static int fill_rows(struct vc_shared *s, struct ask_error *err)
{
    struct store_lazy_runs *l = s->lazy;
    struct store_error serr;
    if ((!s->codes && !(s->codes = scratch_malloc(8 * ((size_t)s->n + 1)))) ||
        (!s->rows && !(s->rows = scratch_malloc(8 * ((size_t)s->n + 1)))))
        return ask_fail(err, 500, "internal", "out of memory"); /* freed by share_runs */
    if (l->rows_pending && store_lazy_rows(l, 0, s->n, s->rows, &serr))
        return cursor_failed(err, &serr);
    l->rows_pending = false;
    return 0;
}

int vc_shared_fill(struct vc_shared *s, struct ask_error *err)
{
    struct store_lazy_runs *l = s->lazy;
    struct store_error serr;
    if (!l)
        return 0;
    if (fill_rows(s, err))
        return -1;
    if (store_lazy_codes(l, 0, s->n, s->codes, &serr))
        return cursor_failed(err, &serr);
    scratch_free(l);
    s->lazy = NULL;
    return 0;
}

int vc_shared_rows(struct vc_shared *s, uint32_t i, uint32_t max, int64_t *out, uint32_t *got,
                   struct ask_error *err)
{
    struct store_lazy_runs *l = s->lazy;
    uint32_t n = max < s->n - i ? max : s->n - i;
    /* Pending rows are in a codec that seeks (store_want.lazy_rows). Once
     * vc_shared_code filled the list (its codes' codec does not seek), they
     * are copied. */
    if (l && l->rows_pending) {
        uint32_t at = l->first + i, to_stride = FORMAT_SEEK_STRIDE - at % FORMAT_SEEK_STRIDE;
        struct store_error serr;
        *got = n < to_stride ? n : to_stride;
        return store_lazy_rows(l, i, *got, out, &serr) ? cursor_failed(err, &serr) : 0;
    }
    memcpy(out, s->rows + i, 8 * (size_t)n);
    *got = n;
    return 0;
}

int vc_shared_code(struct vc_shared *s, uint32_t i, int64_t *code, struct ask_error *err)
{
    const struct store_lazy_runs *l = s->lazy;
    /* A codec that does not seek walks what lies before the code (DPFOR
     * every exception position: a pick per hour cost more than decoding
     * the whole list once). */
    if (l && store_lazy_codes_seek(l)) {
        struct store_error serr;
        return store_lazy_codes(l, i, 1, code, &serr) ? cursor_failed(err, &serr) : 0;
    }
    if (vc_shared_fill(s, err))
        return -1;
    *code = s->codes[i];
    return 0;
}

/* Hands each value count's runs, as loaded, to a vc_shared groups may hold. */
static int share_runs(const struct exec *x, struct seg_columns *c, struct ask_error *err)
{
    if (!(c->vc_shared = scratch_calloc((size_t)x->v->nvalue_counts + 1, sizeof *c->vc_shared)))
        return ask_fail(err, 500, "internal", "out of memory");
    for (int k = 0; k < x->v->nvalue_counts; k++) {
        if (!c->r.vc_off[k])
            continue;
        int64_t *codes, *rows;
        uint32_t n;
        struct store_lazy_runs *lazy;
        store_rows_take_runs(&c->r, k, &codes, &rows, &n, &lazy);
        if (!(c->vc_shared[k] = vc_shared_new(codes, rows, n, lazy))) {
            scratch_free(codes);
            scratch_free(rows);
            scratch_free(lazy);
            return ask_fail(err, 500, "internal", "out of memory");
        }
        /* A percentile-only value count over rollup rows that hold their
         * running rows: groups keep the rows by position (vc_acc_select). */
        struct vc_shared *sh = c->vc_shared[k];
        if (lazy && x->rows_count[k] >= 0 && !x->e->limits.cells_only) {
            struct store_error serr;
            int got = store_lazy_seek(lazy, n, &sh->seek, &serr);
            if (got < 0)
                return cursor_failed(err, &serr);
            sh->seeks = got == 1;
            sh->seek_first = lazy->first;
        }
        /* Its slots for codes (never decoded while lazy) and pending rows
         * would be held by every group's sources until the answer: they
         * are allocated only if a group merges the list after all. */
        if (sh->seeks) {
            scratch_free(sh->codes);
            sh->codes = NULL;
            if (lazy->rows_pending) {
                scratch_free(sh->rows);
                sh->rows = NULL;
            }
        }
    }
    return 0;
}

/* ---- Cells into groups ------------------------------------------------------------ */

static bool in_list(const int64_t *codes, int n, int64_t code)
{
    for (int i = 0; i < n; i++)
        if (codes[i] == code)
            return true;
    return false;
}

/* The set of n codes (duplicates fold). 0, or -1 out of memory. */
static int code_set_build(struct hashtab *s, const int64_t *codes, int n)
{
    hashtab_init(s, 1, 0);
    if (hashtab_reserve(s, (uint64_t)n))
        return -1;
    for (int i = 0; i < n; i++) {
        const uint64_t *k = (const uint64_t *)&codes[i];
        bool added;
        hashtab_upsert(s, k, hashtab_hash(s, k), &added); /* reserved: cannot fail */
    }
    return 0;
}

static inline bool code_set_has(const struct hashtab *s, int64_t code)
{
    const uint64_t *k = (const uint64_t *)&code;
    return hashtab_find(s, k, hashtab_hash(s, k)) != NULL;
}

/* Whether code is among a condition's n values (the set when it was built). */
static inline bool cond_has(const struct exec *x, int k, const int64_t *codes, int n, int64_t code)
{
    return n > IN_LINEAR_MAX ? code_set_has(&x->cond_sets[k], code) : in_list(codes, n, code);
}


/* A text condition's verdict on a value: its text (a fact key's dictionary
 * id's, a dim value id's) tested once per distinct value (memo by id), a
 * range in byte order, a pattern as LIKE. */
static int text_truth(struct exec *x, int k, int64_t id, struct ask_error *err)
{
    struct bound_cond *bc = &x->b.conds[k];
    enum { MEMO_MAX = 1 << 24 }; /* ids past this are tested each time */
    if (id >= 0 && id < bc->nmemo && bc->memo[id])
        return bc->memo[id] == 2 ? T_TRUE : T_FALSE;
    const char *text;
    size_t len;
    if (bc->is_dim) {
        if (store_dense_text(x->r, x->view, bc->join, bc->dim_value, id, &text, &len))
            return ask_fail(err, 500, "corrupt_store",
                            "a dense dim column of view \"%s\" holds value id %lld, which its "
                            "dictionary lacks", x->v->name, (long long)id);
    } else {
        int fc = x->v->cell_keys[bc->cell_key];
        if (store_dict_lookup(x->r, x->view, fc, id, &text, &len))
            return ask_fail(err, 500, "corrupt_store",
                            "a cell holds text id %lld of column \"%s\", which the dictionary "
                            "lacks", (long long)id, x->v->fact_columns[fc].name);
    }
    bool hit;
    if (bc->kind == SQL_COND_LIKE || bc->kind == SQL_COND_ILIKE) {
        hit = pred_like(text, len, bc->texts[0], bc->lens[0], bc->kind == SQL_COND_ILIKE);
    } else {
        int c = pred_text_cmp(text, len, bc->texts[0], bc->lens[0]);
        hit = bc->kind == SQL_COND_LT ? c < 0 : bc->kind == SQL_COND_LE ? c <= 0
              : bc->kind == SQL_COND_GT ? c > 0 : c >= 0;
    }
    if (id >= 0 && id < MEMO_MAX) {
        if (id >= bc->nmemo) {
            uint32_t n = bc->nmemo ? bc->nmemo : 64;
            while (n <= id)
                n *= 2;
            uint8_t *m = scratch_realloc(bc->memo, n);
            if (m) {
                memset(m + bc->nmemo, 0, n - bc->nmemo);
                bc->memo = m;
                bc->nmemo = n;
            }
        }
        if (id < bc->nmemo)
            bc->memo[id] = hit ? 2 : 1;
    }
    return hit ? T_TRUE : T_FALSE;
}

/* Leaf k's truth for cell i: UNKNOWN when the value is NULL (but for IS
 * [NOT] NULL), as SQL has it; -1 on an error. */
__attribute__((always_inline)) static inline int leaf_truth(struct exec *x,
                                                            const struct seg_columns *c,
                                                            uint32_t i, int k,
                                                            struct ask_error *err)
{
    const struct bound_cond *bc = &x->b.conds[k];
    bool is_null;
    int64_t id = 0, code = 0;
    if (bc->is_dim) {
        int ck = join_key(x->v, bc->join);
        uint32_t entry;
        if (dim_entry(x, bc->join, bc->dim_value, c->r.keys[ck][i], &entry, err))
            return -1;
        id = entry_id(entry);
        is_null = id < 0;
    } else {
        code = c->r.keys[bc->cell_key][i];
        is_null = code == STORE_NULL;
    }
    if (bc->kind == SQL_COND_IS_NULL)
        return is_null;
    if (bc->kind == SQL_COND_IS_NOT_NULL)
        return !is_null;
    if (is_null)
        return T_UNKNOWN;
    if (bc->by_text)
        return text_truth(x, k, bc->is_dim ? id : code, err);
    bool hit;
    switch (bc->kind) {
    case SQL_COND_EQ:
    case SQL_COND_IN:
        return bc->is_dim ? cond_has(x, k, x->cond_ids[k], bc->ntexts, id) : cond_has(x, k, bc->codes, bc->ncodes, code);
    case SQL_COND_NE:
    case SQL_COND_NOT_IN:
        hit = bc->is_dim ? cond_has(x, k, x->cond_ids[k], bc->ntexts, id) : cond_has(x, k, bc->codes, bc->ncodes, code);
        return !hit;
    case SQL_COND_LT: return code < bc->codes[0];
    case SQL_COND_LE: return code <= bc->codes[0];
    case SQL_COND_GT: return code > bc->codes[0];
    case SQL_COND_GE: return code >= bc->codes[0];
    default: return T_FALSE; /* LIKE on a non-text key is refused when bound */
    }
}

struct leaf_ctx {
    struct exec *x;
    const struct seg_columns *c;
    uint32_t i;
    struct ask_error *err;
};

static int leaf_cb(void *ctx, int k)
{
    struct leaf_ctx *l = ctx;
    return leaf_truth(l->x, l->c, l->i, k, l->err);
}

/* Whether cell i passes the conditions and inner joins; fills dim ids.
 * Inlined into both loops of scan_segment: called per cell, it cost
 * Manhattan pickups, one week 15%. Conditions joined by AND alone (the
 * common case) are tested leaf by leaf, without the tree. */
__attribute__((always_inline)) static inline int cell_passes(struct exec *x, const struct seg_columns *c, uint32_t i, bool *pass,
                       struct ask_error *err)
{
    const struct sql_view *v = x->v;
    *pass = true;
    for (int j = 0; j < v->njoins && *pass; j++) {
        if (v->joins[j].kind != SQL_JOIN_INNER)
            continue;
        int ck = join_key(v, j);
        uint32_t entry;
        if (dim_entry(x, j, 0, c->r.keys[ck][i], &entry, err))
            return -1;
        *pass = entry != FORMAT_DENSE_ABSENT;
    }
    if (!*pass)
        return 0;
    if (x->where_all_and) {
        for (int k = 0; k < x->b.nconds; k++) {
            int t = leaf_truth(x, c, i, k, err);
            if (t < 0)
                return -1;
            if (t != T_TRUE) {
                *pass = false;
                break;
            }
        }
        return 0;
    }
    struct hashtab *h = &x->where_verdicts;
    const uint64_t *code = NULL;
    uint64_t hash = 0;
    if (x->where_key >= 0) { /* one key's verdict: walked once per code */
        code = (const uint64_t *)&c->r.keys[x->where_key][i];
        hash = hashtab_hash(h, code);
        const int64_t *known = hashtab_find(h, code, hash);
        if (known) {
            *pass = *known == 2;
            return 0;
        }
    }
    struct leaf_ctx ctx = {x, c, i, err};
    int t = pred_eval(x->ask->where, leaf_cb, &ctx);
    if (t < 0)
        return -1;
    *pass = t == T_TRUE;
    if (code) {
        bool added;
        int64_t *slot = hashtab_upsert(h, code, hash, &added);
        if (!slot)
            return ask_fail(err, 500, "internal", "out of memory");
        *slot = *pass ? 2 : 1;
    }
    return 0;
}

/* The calendar bucket holding a bucket start the scan reads (one lies in
 * the range, so in some bucket). */
static int64_t calendar_key(struct exec *x, int64_t bucket)
{
    uint32_t i = x->cal_hint;
    if (!(x->cal_edges[i] <= bucket && bucket < x->cal_edges[i + 1])) {
        uint32_t lo = 0, hi = x->ncal; /* the last edge at or before bucket */
        while (hi - lo > 1) {
            uint32_t mid = lo + (hi - lo) / 2;
            if (x->cal_edges[mid] <= bucket)
                lo = mid;
            else
                hi = mid;
        }
        x->cal_hint = i = lo;
    }
    return x->cal_keys[i];
}

/* The group key of cell i: the bucket (rolled to the asked width) then one
 * id per group key (a fact key's code, a dim value's id in its column's
 * dictionary: equal texts, equal ids). */
static int cell_key(struct exec *x, const struct seg_columns *c, uint32_t i, int64_t bucket,
                    int64_t *key, struct ask_error *err)
{
    const struct sql_ask *a = x->ask;
    const struct sql_view *v = x->v;
    if (x->ncal) {
        key[0] = x->piece_key != NO_PIECE_KEY ? x->piece_key : calendar_key(x, bucket);
    } else if (a->group_by_bucket) {
        int64_t w = x->bin_width, rel = bucket - x->bin_origin;
        int64_t q = rel / w - (rel % w != 0 && rel < 0);
        key[0] = x->bin_origin + q * w;
    } else {
        key[0] = 0;
    }
    for (int g = 0; g < a->ngroup_keys; g++) {
        const struct sql_view_column *vc = &v->columns[a->group_keys[g]];
        if (vc->kind == SQL_COLUMN_FACT_KEY) {
            key[g + 1] = c->r.keys[vc->cell_key][i];
            continue;
        }
        int ck = join_key(v, vc->join);
        uint32_t entry;
        if (dim_entry(x, vc->join, vc->dim_column - 1, c->r.keys[ck][i], &entry, err))
            return -1;
        key[g + 1] = entry_id(entry);
    }
    return 0;
}

/* A taken-away list's rows, negated (x->minus_rows, reused), or NULL with
 * err: collected and merged runs add as they come, so a piece taken away
 * hands them over with their signs turned, as a delta block's are. */
static const int64_t *negated_rows(struct exec *x, const int64_t *rows, int64_t n,
                                   struct ask_error *err)
{
    /* Never NULL but out of memory, for n = 0 too: the first cell taken
     * away may hold no runs (every value NULL), and a NULL buffer then
     * read as a failure whose error nobody had filled (a 500 without a
     * message). */
    if ((uint64_t)n > x->minus_cap || !x->minus_rows) {
        size_t cap = n > 0 ? (size_t)n : 1;
        int64_t *r = scratch_realloc(x->minus_rows, 8 * cap);
        if (!r) {
            ask_fail(err, 500, "internal", "out of memory");
            return NULL;
        }
        x->minus_rows = r;
        x->minus_cap = (uint32_t)cap;
    }
    for (int64_t j = 0; j < n; j++)
        x->minus_rows[j] = -rows[j];
    return x->minus_rows;
}

/* Whether the long cells (VC_SOURCE_MIN_RUNS runs or more) of value count
 * k that groups keep as sources are held in the block's decoded list
 * itself rather than copied out of it (c->held_whole[k]): when they are
 * at least three quarters of its runs, the list is mostly theirs, and a
 * copy would be written, faulted in and held beside it (at half, as many
 * of the 195 slowest generated percentile asks held more as held less).
 * The list then counts against EXEC_SOURCE_RUNS_MAX whole, once. Cells
 * counted are those in [from, to) that pass (pass, or all when NULL). -1
 * when out of memory. */
static int hold_whole(struct exec *x, struct seg_columns *c, const struct store_block *b,
                      const bool *pass, int64_t from, int64_t to, struct ask_error *err)
{
    const struct sql_view *v = x->v;
    if (!(c->held_whole = scratch_calloc((size_t)v->nvalue_counts + 1, sizeof *c->held_whole)))
        return ask_fail(err, 500, "internal", "out of memory");
    for (int k = 0; k < v->nvalue_counts; k++) {
        struct vc_shared *sh = c->vc_shared[k];
        if (!c->r.vc_off[k] || !sh || sh->lazy || sh->seeks || x->rows_count[k] < 0 ||
            x->e->limits.cells_only || x->source_runs + (uint64_t)sh->n > EXEC_SOURCE_RUNS_MAX)
            continue;
        uint64_t long_runs = 0;
        for (uint32_t i = 0; i < c->r.n; i++) {
            int64_t bucket = b->span_start + c->r.bucket[i] * b->width;
            int64_t n = c->r.vc_off[k][i + 1] - c->r.vc_off[k][i];
            if (bucket >= from && bucket < to && (!pass || pass[i]) && n >= VC_SOURCE_MIN_RUNS)
                long_runs += (uint64_t)n;
        }
        if (long_runs * 4 < (uint64_t)sh->n * 3)
            continue;
        c->held_whole[k] = true;
        x->lists_held_whole++;
        x->source_runs += sh->n;
        sh->held_runs = &x->source_runs;
    }
    return 0;
}

static int fold_cell(struct exec *x, const struct seg_columns *c, uint32_t i, struct group *g,
                     struct ask_error *err)
{
    const struct sql_view *v = x->v;
    int64_t sign = x->minus ? -1 : 1;
    for (int k = 0; k < v->ncounts; k++)
        if (x->need_count[k])
            g->counts[k] += sign * c->r.counts[k][i];
    for (int k = 0; k < v->nsums; k++) {
        if (!x->need_sum[k])
            continue;
        if (x->types[v->sums[k].fact_column].type == STORE_TYPE_FLOAT) {
            g->real[k] += ((double *)c->r.sums[k])[i]; /* never taken away: may_subtract */
        } else {
            __int128 s;
            memcpy(&s, (char *)c->r.sums[k] + 16 * (size_t)i, 16);
            if (x->minus ? __builtin_sub_overflow(g->exact[k], s, &g->exact[k])
                         : __builtin_add_overflow(g->exact[k], s, &g->exact[k]))
                return ask_fail(err, 422, "overflow", "a sum overflowed 128 bits");
        }
    }
    for (int k = 0; k < v->nvalue_counts; k++) {
        if (!x->need_vc[k])
            continue;
        int64_t r = c->r.vc_off[k][i], n = c->r.vc_off[k][i + 1] - r;
        struct vc_acc *acc = &g->vcs[k];
        struct vc_shared *sh = c->vc_shared[k];
        /* A piece taken away (x->minus) is held by position as a source
         * whose rows subtract, or its rows are negated where they are
         * copied: a pick, min, max and a distinct count then see the
         * range's rows only. */
        if (sh->seeks && acc->nsrcs < VC_MAX_SOURCES) {
            if (n && vc_acc_add_source(acc, sh, (uint32_t)r, (uint32_t)n, x->minus))
                return ask_fail(err, 500, "internal", "out of memory");
            continue;
        }
        /* A long cell's runs (VC_SOURCE_MIN_RUNS and more), decoded, kept
         * by position too when the value count is read by percentiles
         * only, up to VC_MAX_DECODED_SOURCES a group: a pick then bisects
         * across the group's cells rather than merging every run of them
         * into a hash or a window. Where long cells are most of the
         * block's list (hold_whole), the group holds the list itself;
         * otherwise the cell's runs are copied into a list of their own,
         * alive until the answer: holding the block's arrays for a few
         * long cells kept every run of the segment (the busiest zones'
         * hours), 65 MiB of the median per New York day by borough over
         * six months. The ask keeps at most EXEC_SOURCE_RUNS_MAX such
         * runs; past that, cells are collected or merge. */
        if (c->held_whole[k] && n >= VC_SOURCE_MIN_RUNS && acc->nsrcs < VC_MAX_DECODED_SOURCES) {
            if (vc_acc_add_source(acc, sh, (uint32_t)r, (uint32_t)n, x->minus))
                return ask_fail(err, 500, "internal", "out of memory");
            continue;
        }
        if (x->rows_count[k] >= 0 && !sh->lazy && n >= VC_SOURCE_MIN_RUNS &&
            acc->nsrcs < VC_MAX_DECODED_SOURCES &&
            x->source_runs + (uint64_t)n <= EXEC_SOURCE_RUNS_MAX && !x->e->limits.cells_only) {
            struct vc_shared *own = vc_shared_copy(sh, (uint32_t)r, (uint32_t)n);
            int rc = own ? vc_acc_add_source(acc, own, 0, (uint32_t)n, x->minus) : -1;
            if (own) {
                x->source_runs += (uint64_t)n;
                own->held_runs = &x->source_runs;
                vc_shared_release(own); /* the group's reference holds it */
            }
            if (rc)
                return ask_fail(err, 500, "internal", "out of memory");
            continue;
        }
        /* Shorter lists of such a value count are collected as they come
         * (a bucket's cells of one key, a few runs each): the pick selects
         * across them in time linear in their runs, where merging spent a
         * hash probe per run and a sort. At most EXEC_COLLECT_RUNS_MAX an
         * ask; past that, cells merge. */
        if (x->rows_count[k] >= 0 && !sh->lazy && !x->e->limits.cells_only &&
            x->collected_runs + (uint64_t)n <= EXEC_COLLECT_RUNS_MAX) {
            struct vc_shared *held = vc_acc_lazy(acc); /* collecting may merge: decoded */
            if (n && held && vc_shared_fill(held, err))
                return -1;
            const int64_t *rows = x->minus ? negated_rows(x, sh->rows + r, n, err) : sh->rows + r;
            if (!rows)
                return -1;
            if (n && vc_acc_collect(acc, &x->runs_arena, sh->codes + r, rows, (uint32_t)n))
                return ask_fail(err, 500, "internal", "out of memory");
            x->collected_runs += (uint64_t)n;
            continue;
        }
        if (sh->seeks && vc_shared_fill(sh, err))
            return -1; /* past VC_MAX_SOURCES: merged, its arrays allocated now */
        struct vc_shared *held = vc_acc_lazy(acc); /* a merge reads the group's list */
        if ((n && held && vc_shared_fill(held, err)) ||
            (sh->lazy && (x->minus || !vc_acc_lends(acc, n)) && vc_shared_fill(sh, err)))
            return -1;
        if (x->minus) { /* copied negated, never lent */
            const int64_t *rows = negated_rows(x, sh->rows + r, n, err);
            if (!rows)
                return -1;
            if (vc_acc_add_runs(acc, NULL, sh->codes + r, rows, n))
                return ask_fail(err, 500, "internal", "out of memory");
            continue;
        }
        if (vc_acc_add_runs(acc, sh, sh->codes + r, sh->rows + r, n))
            return ask_fail(err, 500, "internal", "out of memory");
    }
    return 0;
}

/* Folds cell i into the group of key, made when new. 0, or -1 with err. */
static int fold_into_group(struct exec *x, const struct seg_columns *c, uint32_t i,
                           const int64_t *key, struct ask_error *err)
{
    struct group *g = group_for(x, key, err);
    return g ? fold_cell(x, c, i, g, err) : -1;
}

static int64_t now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

/* The ask's time budget (engine_limits.max_ask_us) and its cancel flag, checked every
 * BUDGET_CELLS cells inside a segment's scan as well as between segments,
 * so that one costly segment (a wide window of fine cells, a long IN list)
 * cannot run past it by the time it takes: reading the clock is some 20 ns,
 * a 1/1024th of the cells' cost. answer_emit reads it every BUDGET_CELLS
 * groups as it builds their rows (percentiles merge their counts there).
 * 0, or -1 with the 503. */
int exec_over_budget(struct exec *x, struct ask_error *err)
{
    /* A cancel (ask_request.cancel) is read where the clock is: the same
     * places, so a cancelled scan stops within 1024 cells. */
    if (x->cancel && atomic_load_explicit(x->cancel, memory_order_relaxed))
        return ask_fail(err, 503, "cancelled", "canceling statement due to user request");
    if (x->e->limits.max_ask_us <= 0 || now_us() - x->started_us <= x->e->limits.max_ask_us)
        return 0;
    return ask_fail(err, 503, "ask_timeout",
                    "the ask ran past its time limit of %lld ms (--ask-timeout) after %llu cells; "
                    "narrow its range or its groups",
                    (long long)(x->e->limits.max_ask_us / 1000), (unsigned long long)x->cells_read);
}

/* The family of a block's span rows the ask can fold in place of the
 * span's cells: the span cells when it reads two keys or more, else its
 * key's span marginal or the span totals; 0 when the block has none with
 * the value counts the ask needs. */
static uint16_t span_family(const struct exec *x, const struct store_block *b)
{
    uint16_t base;
    if (x->read_key == -2)
        base = STORE_ROLLUP_SPAN_CELLS;
    else if (x->read_key < STORE_ROLLUP_MAX_KEYS)
        base = store_rollup_base(true, x->read_key);
    else
        return 0;
    uint32_t n;
    return store_block_family(b, base, x->need_vc, &n) ? base : 0;
}

/* The rollup family of the block the ask can fold instead of its cells:
 * the one that kept only the key the ask reads (or none) and the value
 * counts it needs, over the whole span when the range holds the span and
 * the ask does not group by bucket, else per bucket; an ask that reads two
 * keys or more, the span cells over a whole span. Returns its role base
 * and whether its rows are span rows; 0 for the cells. */
static uint16_t pick_family(const struct exec *x, const struct store_block *b, int64_t from,
                            int64_t to, bool *span_rows)
{
    *span_rows = false;
    if (x->e->limits.cells_only)
        return 0;
    int64_t span_end = b->span_start + b->span * b->width;
    bool whole_span = !x->ask->group_by_bucket && b->span_start >= from && span_end <= to;
    uint16_t span = whole_span ? span_family(x, b) : 0;
    if (span) {
        *span_rows = true;
        return span;
    }
    if (x->read_key == -2 || x->read_key >= STORE_ROLLUP_MAX_KEYS)
        return 0; /* two keys or more: the span cells above, else the cells */
    uint32_t n;
    uint16_t base = store_rollup_base(false, x->read_key);
    return store_block_family(b, base, x->need_vc, &n) ? base : 0;
}

/* The view columns whose values the ask computes: every selected one (the
 * first ncolumns), then each HAVING comparison's measure, which HAVING
 * reads whether or not the ask selects it. Index i below
 * ask_nmeasures(a); a view column index. */
static int ask_nmeasures(const struct sql_ask *a) { return a->ncolumns + a->nhaving; }

static int ask_measure(const struct sql_ask *a, int i)
{
    return i < a->ncolumns ? a->columns[i].view_column : a->having[i - a->ncolumns].view_column;
}

/* ---- Settling ---------------------------------------------------------------------- */

/* The group map is emptied once every group in it is settled and it holds
 * this many: a map of a few thousand groups stays in the caches, and
 * emptying it costs a pass over its slots, so it is done once per as many
 * groups made. Six months of hours by zone (577,504 groups) spent a third
 * of its scan growing and probing one map of them all. */
#define SETTLED_MAP_FORGET 4096

/* Settles every group whose time bin ends at or before limit, the start of
 * the first bucket still to come: no later cell can reach it (plan_settle).
 * The groups before settle_from are all settled, and groups are made in
 * about time order, so the walk is over the groups of the last bin or two.
 * 0, or -1 with err. */
static int settle_groups(struct exec *x, int64_t limit, struct ask_error *err)
{
    struct group_map *m = &x->groups;
    bool all = true; /* every group from settle_from to i is settled */
    /* Groups handed to the kept rows (x->keep) leave m->all: the others
     * move down to `to` (without x->keep, to is i). */
    uint32_t to = x->settle_from;
    int rc = 0;
    for (uint32_t i = x->settle_from; i < m->n; i++) {
        struct group *g = m->all[i];
        if (!rc && !g->settled && g->key[0] <= limit - x->bin_width) {
            /* A group of no rows stays for drop_empty_groups (which
             * blames a segment for one below none). */
            if (x->keep && g->counts[0] > 0) {
                x->nsettled++;
                rc = answer_keep(x, g, err); /* settles g if kept; takes it either way */
                continue;
            }
            if (!(x->nsettle && (rc = answer_settle(x, g, err)))) {
                g->settled = true;
                x->nsettled++;
            }
        }
        m->all[to++] = g;
        all = all && g->settled;
        if (all)
            x->settle_from = to;
    }
    m->n = to;
    if (x->keep) { /* no pointer to a dropped group's room may stay */
        m->last = NULL;
        memset(m->recent, 0, sizeof m->recent);
    }
    if (rc)
        return -1;
    if (x->settle_from == m->n) /* no group holds collected runs */
        run_arena_reset(&x->runs_arena);
    if (x->settle_from == m->n && m->table.count >= SETTLED_MAP_FORGET) {
        hashtab_clear(&m->table);
        m->last = NULL;
        memset(m->recent, 0, sizeof m->recent);
        x->map_forgot++;
    }
    return 0;
}

/* Whether groups settle as the scan goes (x->settle), and which measures
 * are then finished: the ask groups by bins of time (GROUP BY bucket,
 * date_bin; a calendar unit's pieces lie in several runs) and its pieces
 * are one run — one width, none taken away, none overlapping — so that
 * cells come in time order, a segment's base and deltas before the next
 * segment's. What a group holds past its counts and sums is its value
 * counts: windows of up to 32,768 counters, collected runs, sources; the hour x
 * payment type x borough series of six months held 111,922 groups' worth
 * (past 1 GiB), and holds a segment's once settled. -1 when out of
 * memory. */
static int plan_settle(struct exec *x)
{
    const struct sql_ask *a = x->ask;
    x->settle = a->group_by_bucket && !x->ncal && x->npieces > 0 && !x->pieces[0].minus;
    for (uint32_t i = 1; x->settle && i < x->npieces; i++)
        x->settle = x->pieces[i].width == x->pieces[0].width && !x->pieces[i].minus &&
                    x->pieces[i].from >= x->pieces[i - 1].to;
    if (x->settle && answer_keep_start(x))
        return -1;
    if (!x->settle || !x->any_vc)
        return 0;
    if (!(x->settle_measures = scratch_malloc(sizeof *x->settle_measures *
                                              ((size_t)ask_nmeasures(a) + 1))))
        return -1;
    for (int i = 0; i < ask_nmeasures(a); i++) {
        const struct sql_view_column *vc = &x->v->columns[ask_measure(a, i)];
        const struct sql_measure *m = &vc->measure;
        if (vc->kind != SQL_COLUMN_MEASURE || m->value_counts < 0 ||
            m->agg == SQL_AGG_COUNT_STAR || m->agg == SQL_AGG_COUNT || m->agg == SQL_AGG_SUM ||
            m->agg == SQL_AGG_AVG)
            continue;
        int j = 0;
        while (j < x->nsettle && x->settle_measures[j] != m)
            j++;
        if (j == x->nsettle)
            x->settle_measures[x->nsettle++] = m;
    }
    return 0;
}

/* The piece of the run being read (x->run) that holds bucket, or NULL: it
 * lies between two. Cells come in time order within a block, so the last
 * one found is tried first. */
static const struct scan_piece *run_piece(struct exec *x, int64_t bucket)
{
    const struct scan_piece *p = x->run;
    uint32_t i = x->run_hint, steps = 0;
    /* The last piece that starts at or before bucket: a few steps on from
     * the last one found, else a binary search (a delta block starts its
     * segment over). */
    while (i + 1 < x->nrun && p[i + 1].from <= bucket && ++steps <= 4)
        i++;
    if (p[i].from > bucket || steps > 4) {
        uint32_t lo = 0, hi = x->nrun;
        while (hi - lo > 1) {
            uint32_t mid = lo + (hi - lo) / 2;
            if (p[mid].from <= bucket)
                lo = mid;
            else
                hi = mid;
        }
        i = lo;
    }
    x->run_hint = i;
    return p[i].from <= bucket && bucket < p[i].to ? &p[i] : NULL;
}

/* Which rows of a block scan_family folds. */
enum fold_which {
    FOLD_PASSING,   /* those that pass the ask's conditions */
    FOLD_ALL,       /* every one (a totals family: the conditions are not its) */
    FOLD_FAILING,   /* those that fail, taken away, when they are few
                       (subtract_failing); else those that pass */
};

/* How many of rows [i, end) lie in buckets [from, to). */
static uint32_t rows_in_range(const struct store_block *b, const struct store_rows *r, uint32_t i,
                              uint32_t end, int64_t from, int64_t to)
{
    uint32_t n = 0;
    for (; i < end; i++) {
        int64_t bucket = b->span_start + r->bucket[i] * b->width;
        n += bucket >= from && bucket < to;
    }
    return n;
}

/* Rows [from, to) of family base (0: the cells) of block b folded into
 * their groups (which). With FOLD_FAILING, *subtracted tells whether the
 * failing rows were taken away (the caller then folds the totals) or the
 * passing ones folded as with FOLD_PASSING. 0, or -1 with err. */
static int scan_family(struct exec *x, const struct store_block *b, uint16_t base, bool span_rows,
                       int64_t from, int64_t to, enum fold_which which, bool *subtracted,
                       struct ask_error *err)
{
    struct seg_columns c = {0};
    /* Filtered first: which rows pass is known before their measures and
     * runs are decoded, and only the stretch of rows that fold is. */
    bool filter_first = which != FOLD_ALL && x->filters_cells;
    struct store_want want = {
        .family = base, .span_rows = span_rows, .from = from, .to = to,
        .keys = which == FOLD_ALL ? NULL : x->need_key, /* totals: no key, no condition */
        .counts = x->need_count, .sums = x->need_sum, .vcs = x->need_vc,
        .defer_runs = true, .defer_measures = filter_first, .lazy_codes = base != 0,
        .lazy_rows = x->lazy_rows,
    };
    struct store_error serr;
    int rc = store_rows_load(b, &want, &c.r, &serr) ? cursor_failed(err, &serr) : 0;
    bool *pass = NULL;
    uint32_t npass = 0, nfail = 0;
    if (rc == 0 && filter_first) {
        if (!(pass = scratch_calloc((size_t)c.r.n + 1, sizeof *pass)))
            rc = ask_fail(err, 500, "internal", "out of memory");
        for (uint32_t i = 0; rc == 0 && i < c.r.n; i++) {
            int64_t bucket = b->span_start + c.r.bucket[i] * b->width;
            if (bucket >= from && bucket < to && (rc = cell_passes(x, &c, i, &pass[i], err)) == 0) {
                npass += pass[i];
                nfail += !pass[i];
            }
            if (rc == 0 && i % BUDGET_CELLS == BUDGET_CELLS - 1)
                rc = exec_over_budget(x, err);
        }
    }
    /* Taken away, the failing rows and the totals' rows (a bucket's one,
     * or the span's) are folded instead of the passing rows: worth it
     * when the failing are fewer than half of them. */
    bool minus = which == FOLD_FAILING && pass && nfail < npass / 2;
    if (subtracted)
        *subtracted = minus;
    if (minus) {
        for (uint32_t i = 0; i < c.r.n; i++) {
            int64_t bucket = b->span_start + c.r.bucket[i] * b->width;
            pass[i] = bucket >= from && bucket < to && !pass[i];
        }
        x->settle_in_block = false; /* the totals come after: settle at the segment's end */
    }
    /* Filtered first, the rows' measures are decoded from the first row to
     * fold to the last only: a condition on a key nearly unique per row
     * (one task group's picks over three months) folds a few cells of
     * millions, which sit together when the key follows time. */
    if (rc == 0 && filter_first) {
        uint32_t lo = 0, hi = c.r.n;
        while (lo < hi && !pass[lo])
            lo++;
        while (hi > lo && !pass[hi - 1])
            hi--;
        /* Narrowed only when that leaves out half the rows or more: moving
         * the keys down costs about what decoding a column does. */
        if (hi - lo <= c.r.n / 2) {
            /* The rows left out were read (tested) all the same: the stats'. */
            x->cells_read += rows_in_range(b, &c.r, 0, lo, from, to) +
                             rows_in_range(b, &c.r, hi, c.r.n, from, to);
            if (lo > 0)
                memmove(pass, pass + lo, sizeof *pass * (hi - lo));
            store_rows_narrow(x->v, &c.r, lo, hi);
        }
        if (store_rows_load_measures(b, &want, &c.r, &serr))
            rc = cursor_failed(err, &serr);
    }
    if (rc == 0 && store_rows_load_runs(b, &want, &c.r, pass, &serr))
        rc = cursor_failed(err, &serr);
    if (rc == 0)
        rc = share_runs(x, &c, err);
    if (rc == 0)
        rc = hold_whole(x, &c, b, pass, from, to, err);
    int64_t *key = x->key; /* 1 + the ask's group keys, as many as the view has */
    int64_t last_bucket = INT64_MIN;
    for (uint32_t i = 0; rc == 0 && i < c.r.n; i++) {
        int64_t bucket = b->span_start + c.r.bucket[i] * b->width;
        const struct scan_piece *piece;
        if (bucket < from || bucket >= to || !(piece = run_piece(x, bucket)))
            continue;
        if (bucket != last_bucket && x->settle_in_block && (rc = settle_groups(x, bucket, err)))
            break;
        last_bucket = bucket;
        x->piece_key = piece->key;
        bool ok = true;
        if (++x->cells_read % BUDGET_CELLS == 0 && (rc = exec_over_budget(x, err)))
            break;
        if (pass ? !pass[i] : which != FOLD_ALL && ((rc = cell_passes(x, &c, i, &ok, err)) || !ok))
            continue;
        if ((rc = cell_key(x, &c, i, bucket, key, err)))
            break;
        if (minus) /* then the run's pieces are not taken away (scan_segment) */
            x->minus = true;
        rc = fold_into_group(x, &c, i, key, err);
        if (minus)
            x->minus = false;
        if (rc == 0 && piece->twin) { /* the same cell taken from its twin's bucket */
            key[0] = piece->twin_key != NO_PIECE_KEY ? piece->twin_key : calendar_key(x, bucket);
            x->minus = true;
            rc = fold_into_group(x, &c, i, key, err);
            x->minus = false;
        }
    }
    scratch_free(pass);
    seg_free(x->v, &c);
    return rc;
}

/* Whether an ask may fold the rows that fail its conditions taken away
 * from the totals (scan_segment), rather than the rows that pass: it
 * groups by no key (a bucket at most), and everything it folds subtracts
 * exactly (counts, exact sums, value counts read by percentiles only,
 * which a pick bisects with rows taken away; not a float sum, nor a min,
 * max or distinct count, which must not see a value whose rows cancel).
 * Why: `do_location_id IS NOT NULL` read some 250 zone rows a day where
 * the totals hold one; and where no rollup keeps the keys the conditions
 * read (a dim condition through a join key nearly unique per row), the
 * median per day of the tasks whose location has a type merged every
 * cell's runs, 13 million over three months, where the few failing cells
 * less the day's totals answer. */
static bool plan_subtract_failing(const struct exec *x)
{
    if (x->e->limits.cells_only || x->ask->ngroup_keys > 0 || !x->filters_cells)
        return false;
    for (int k = 0; k < x->v->nsums; k++)
        if (x->need_sum[k] && x->types[x->v->sums[k].fact_column].type == STORE_TYPE_FLOAT)
            return false;
    for (int k = 0; k < x->v->nvalue_counts; k++)
        if (x->need_vc[k] && x->rows_count[k] < 0)
            return false;
    return true;
}

/* Folds the rows of one block whose bucket lies in [from, to), a stretch
 * of the run's pieces, into their groups: a rollup family's where one
 * answers (pick_family), else its cells. The decoder reads the columns the
 * ask needs of the rows in range; with a filter, which cells pass is known
 * before their runs are read, so only theirs are (store_rows_load_runs). A
 * rollup's codes stay encoded until a group needs them (struct
 * store_lazy_runs), and so do its rows where rows_count says the groups'
 * totals come without them. A key's marginal rows that mostly pass the
 * ask's conditions are read as the totals less the rows that fail
 * (x->subtract_failing). */
static int scan_segment(struct exec *x, const struct store_block *b, int64_t from, int64_t to,
                        struct ask_error *err)
{
    bool span_rows, subtracted = false;
    uint16_t base = pick_family(x, b, from, to, &span_rows);
    uint16_t totals = store_rollup_base(span_rows, -1);
    uint32_t n;
    /* Every family but the totals parts the block's cells over the same
     * buckets (or span) as the totals sum them: the totals less the
     * failing rows are the passing rows. */
    bool failing = x->subtract_failing && !x->minus && !x->run_twins && base != totals &&
                   store_block_family(b, totals, x->need_vc, &n);
    if (scan_family(x, b, base, span_rows, from, to, failing ? FOLD_FAILING : FOLD_PASSING,
                    &subtracted, err))
        return -1;
    x->blocks_subtracted += subtracted;
    /* A group whose rows all failed is left at none (drop_empty_groups). */
    x->folded_deltas = x->folded_deltas || subtracted;
    return subtracted ? scan_family(x, b, totals, span_rows, from, to, FOLD_ALL, NULL, err) : 0;
}

/* A segment's base block, then each delta block by the same rule (a delta
 * carries its own rollups): every accumulator adds, so folding the changes
 * of later commits after the base gives what one merged block would. */
static int scan_with_deltas(struct exec *x, const struct store_segment *s, int64_t from,
                            int64_t to, struct ask_error *err)
{
    int rc = 0;
    /* A segment without deltas holds each bucket's cells before the next
     * bucket's: its groups settle bucket by bucket, not at its end. */
    x->settle_in_block = x->settle && s->ndeltas == 0;
    /* A suspect, should a group go below no rows. */
    if (s->ndeltas > 0 || x->minus || x->run_twins || x->subtract_failing) {
        uint32_t n = x->nsuspects;
        bool again = n > 0 && n <= EXEC_SUSPECTS &&
                     x->suspects[n - 1].width == s->width &&
                     x->suspects[n - 1].span_start == s->span_start;
        if (!again && n < EXEC_SUSPECTS) {
            x->suspects[n].width = s->width;
            x->suspects[n].span_start = s->span_start;
        }
        x->nsuspects += !again;
    }
    for (int i = 0; rc == 0 && i <= s->ndeltas; i++) {
        struct store_block b;
        store_segment_block(x->r, s, i, &b);
        x->folded_deltas = x->folded_deltas || i > 0;
        rc = scan_segment(x, &b, from, to, err);
    }
    return rc;
}

/* Reads a run of pieces (x->run: one width and sign, in time order, none
 * overlapping) in one walk of its width's segments: each segment a piece
 * reaches is read once per stretch of touching pieces in it. */
static int scan_run(struct exec *x, int width, struct ask_error *err)
{
    const struct scan_piece *run = x->run;
    int64_t span = store_span_buckets(x->v, width) * x->v->widths[width];
    struct store_segment_iter it;
    struct store_segment s;
    struct store_error serr;
    if (store_segments_begin(x->r, x->view, width, run[0].from, run[x->nrun - 1].to, &it, &serr))
        return ask_fail(err, 500, "corrupt_store", "%s", serr.message);
    int rc, got;
    uint32_t first = 0; /* the first piece that ends after the segment's start */
    for (rc = 0; rc == 0 && (got = store_segments_next(&it, &s, &serr)) == 1;) {
        int64_t start = s.span_start, end = start + span;
        x->segments_read++;
        while (first < x->nrun && run[first].to <= start)
            first++;
        if (first == x->nrun)
            break;
        if (run[first].from >= end) { /* between two pieces: on to the next one's */
            store_segments_skip(&it, run[first].from);
            continue;
        }
        /* Each stretch of pieces that touch end to end, on its own: the
         * rows between two stretches are not decoded. */
        for (uint32_t j = first; rc == 0 && j < x->nrun && run[j].from < end;) {
            uint32_t k = j + 1;
            while (k < x->nrun && run[k].from == run[k - 1].to && run[k].from < end)
                k++;
            rc = scan_with_deltas(x, &s, run[j].from > start ? run[j].from : start,
                                  run[k - 1].to < end ? run[k - 1].to : end, err);
            j = k;
        }
        if (rc == 0 && x->settle)
            rc = settle_groups(x, end, err);
        if (rc == 0)
            rc = exec_over_budget(x, err);
        while (first < x->nrun && run[first].to <= end)
            first++;
        if (first < x->nrun && run[first].from > end)
            store_segments_skip(&it, run[first].from);
    }
    if (rc == 0 && got < 0)
        rc = ask_fail(err, 500, "corrupt_store", "%s", serr.message);
    store_segments_end(&it);
    return rc;
}

/* Floors t to an edge of width w (aligned to the origin). */
static int64_t floor_edge(int64_t t, int64_t origin, int64_t w)
{
    int64_t rel = t - origin, q = rel / w - (rel % w != 0 && rel < 0);
    return origin + q * w;
}

/* Whether width w's cells each lie in one group of the ask's time grouping:
 * any width when it does not group by time, or within one calendar bucket
 * (cover is then called per bucket); for bins, widths that divide the bin
 * and whose edges are bin edges too. */
static bool width_fits(const struct exec *x, int64_t width)
{
    if (!x->ask->group_by_bucket || x->ncal)
        return true;
    return x->bin_width % width == 0 && (x->bin_origin - x->v->origin_usec) % width == 0;
}

/* Adds a piece. One that lies outside the calendar bucket being covered
 * (x->cover_from, x->cover_to: a whole bucket of a wider width less what
 * lies outside) carries that bucket's key, since its cells' starts would
 * find a neighbour's; others find theirs by their start (calendar_key). */
static int add_piece(struct exec *x, int width, bool minus, int64_t from, int64_t to,
                     struct ask_error *err)
{
    if (x->npieces == x->pieces_cap) {
        uint32_t cap = x->pieces_cap ? x->pieces_cap * 2 : 16;
        struct scan_piece *p = scratch_realloc(x->pieces, sizeof *p * cap);
        if (!p)
            return ask_fail(err, 500, "internal", "out of memory");
        x->pieces = p;
        x->pieces_cap = cap;
    }
    bool inside = from >= x->cover_from && to <= x->cover_to;
    int64_t key = inside ? NO_PIECE_KEY : x->cover_key;
    x->pieces[x->npieces++] =
        (struct scan_piece){.width = width, .minus = minus, .key = key, .from = from, .to = to};
    x->npieces_minus += minus;
    return 0;
}

/* ⌊√n⌋, n >= 0. */
static int64_t isqrt(int64_t n)
{
    int64_t r = 0;
    for (int64_t bit = (int64_t)1 << 62; bit; bit >>= 2)
        if (n >= r + bit) {
            n -= r + bit;
            r = (r >> 1) + bit;
        } else {
            r >>= 1;
        }
    return r;
}

/* What reading n buckets of width w costs, in half finest buckets: a
 * wider bucket holds more cells than a finer one, but far fewer times more
 * than it is wider (the same keys recur hour after hour), so the square
 * root of its finest buckets (x->width_cost, made by plan_time); half as
 * much again taken away. A guide for choosing between covers, not a
 * measure. */
static int64_t piece_cost(const struct exec *x, int w, int64_t n, bool minus)
{
    int64_t c = n * x->width_cost[w];
    return minus ? c + c / 2 : c;
}

static int64_t cover_at(struct exec *x, int top, int64_t from, int64_t to, bool minus, bool emit,
                        struct ask_error *err);

/* A piece of width w, added when emit: its cost, or -1 with err. */
static int64_t take_piece(struct exec *x, int w, bool minus, int64_t from, int64_t to, bool emit,
                          struct ask_error *err)
{
    if (emit && add_piece(x, w, minus, from, to, err))
        return -1;
    return piece_cost(x, w, (to - from) / x->v->widths[w], minus);
}

/* The cheaper of two covers of [from, to): by the finer widths, or the
 * whole bucket [b0, b1) of width w less the finer covers of its rest,
 * [r0, r1) and [r2, r3) (an empty pair where the range reaches the
 * bucket's edge). Returns its cost, its pieces added when emit; -1 with
 * err. */
static int64_t cover_either(struct exec *x, int w, int64_t from, int64_t to, int64_t b0,
                            int64_t b1, int64_t r0, int64_t r1, int64_t r2, int64_t r3,
                            bool minus, bool emit, struct ask_error *err)
{
    int64_t plain = cover_at(x, w - 1, from, to, minus, false, err), rest_a, rest_b;
    if (plain < 0 || (rest_a = cover_at(x, w - 1, r0, r1, !minus, false, err)) < 0 ||
        (rest_b = cover_at(x, w - 1, r2, r3, !minus, false, err)) < 0)
        return -1;
    int64_t whole = piece_cost(x, w, 1, minus) + rest_a + rest_b;
    if (plain <= whole)
        return emit ? cover_at(x, w - 1, from, to, minus, true, err) : plain;
    if (emit && (take_piece(x, w, minus, b0, b1, true, err) < 0 ||
                 cover_at(x, w - 1, r0, r1, !minus, true, err) < 0 ||
                 cover_at(x, w - 1, r2, r3, !minus, true, err) < 0))
        return -1;
    return whole;
}

/* [from, to), shorter than a bucket of width w, one end on its edges:
 * covered by the finer widths, or, when the ask may take away
 * (x->subtract) and it holds more than half the bucket, by the bucket
 * less the finer cover of the rest, whichever costs less. */
static int64_t cover_edge(struct exec *x, int w, int64_t from, int64_t to, bool minus, bool emit,
                          struct ask_error *err)
{
    int64_t width = x->v->widths[w];
    if (from >= to)
        return 0;
    if (!x->subtract_edges || 2 * (to - from) <= width)
        return cover_at(x, w - 1, from, to, minus, emit, err);
    bool ends_on_edge = floor_edge(to, x->v->origin_usec, width) == to;
    int64_t b0 = ends_on_edge ? to - width : from, b1 = b0 + width;
    return ends_on_edge ? cover_either(x, w, from, to, b0, b1, b0, from, 0, 0, minus, emit, err)
                        : cover_either(x, w, from, to, b0, b1, to, b1, 0, 0, minus, emit, err);
}

/* Covers [from, to) with widths[0..top], widest first, into x->pieces
 * (when emit; else only its cost), each piece to be taken away when minus
 * is set: whole buckets of the widest width that fits inside, then its
 * edges by cover_edge. A range inside one bucket of a width, holding more
 * than half of it, may be that bucket less the rest on both sides. Returns
 * the cover's cost (piece_cost), or -1 with err. */
static int64_t cover_at(struct exec *x, int top, int64_t from, int64_t to, bool minus, bool emit,
                        struct ask_error *err)
{
    if (from >= to)
        return 0;
    const struct sql_view *v = x->v;
    for (int w = top; w >= 0; w--) {
        int64_t width = v->widths[w];
        if (!width_fits(x, width))
            continue; /* its cells would straddle the asked buckets */
        int64_t a = floor_edge(from, v->origin_usec, width);
        if (a < from)
            a += width;
        int64_t b = floor_edge(to, v->origin_usec, width);
        if (a < b) {
            int64_t c = take_piece(x, w, minus, a, b, emit, err), l, r;
            if (c < 0 || (l = cover_edge(x, w, from, a, minus, emit, err)) < 0 ||
                (r = cover_edge(x, w, b, to, minus, emit, err)) < 0)
                return -1;
            return c + l + r;
        }
        if (!x->subtract_edges || w == 0)
            continue;
        if (a == b) { /* across one edge: each side an edge of its bucket */
            int64_t l = cover_edge(x, w, from, a, minus, emit, err), r;
            if (l < 0 || (r = cover_edge(x, w, a, to, minus, emit, err)) < 0)
                return -1;
            return l + r;
        }
        if (2 * (to - from) > width) /* inside the bucket [b, a) */
            return cover_either(x, w, from, to, b, a, b, from, to, a, minus, emit, err);
    }
    return ask_fail(err, 500, "internal", "no width covers the range"); /* widths[0] always does */
}

/* Covers [from, to) into x->pieces (cover_at). 0, or -1 with err. */
static int cover(struct exec *x, int top, int64_t from, int64_t to, bool minus,
                 struct ask_error *err)
{
    return cover_at(x, top, from, to, minus, true, err) < 0 ? -1 : 0;
}

static int cmp_piece(const void *pa, const void *pb)
{
    const struct scan_piece *a = pa, *b = pb;
    if (a->minus != b->minus)
        return a->minus ? 1 : -1; /* the pieces taken away last: their groups exist */
    if (a->width != b->width)
        return a->width < b->width ? -1 : 1;
    if (a->from != b->from)
        return a->from < b->from ? -1 : 1;
    return a->key < b->key ? -1 : a->key > b->key;
}

/* Pairs each piece taken away with a piece added over the same cells (same
 * width and range; pieces sorted by cmp_piece), which then reads them once
 * for both: the piece added folds each cell into its bucket and takes it
 * from the other's (scan_piece.twin). Calendar asks only, whose pieces name
 * their buckets; there a New York day read as a UTC day less its first
 * five hours plus the next day's first five reads every such stretch for
 * two days, once added and once taken away, and its decoding was most of
 * the median per New York day by borough over six months. */
static void pair_twins(struct exec *x)
{
    if (!x->ncal)
        return;
    uint32_t nplus = 0;
    while (nplus < x->npieces && !x->pieces[nplus].minus)
        nplus++;
    uint32_t kept = nplus;
    for (uint32_t m = nplus; m < x->npieces; m++) {
        const struct scan_piece *t = &x->pieces[m];
        uint32_t lo = 0, hi = nplus; /* the first piece added at or past (width, from) */
        while (lo < hi) {
            uint32_t mid = lo + (hi - lo) / 2;
            const struct scan_piece *p = &x->pieces[mid];
            if (p->width < t->width || (p->width == t->width && p->from < t->from))
                lo = mid + 1;
            else
                hi = mid;
        }
        struct scan_piece *p = &x->pieces[lo];
        if (lo < nplus && p->width == t->width && p->from == t->from && p->to == t->to &&
            !p->twin) {
            p->twin = true;
            p->twin_key = t->key;
        } else {
            x->pieces[kept++] = *t;
        }
    }
    x->npieces = kept;
}

/* Reads the pieces in runs of one width and sign (scan_run), so that each
 * segment is opened once rather than once per piece: a calendar bucket's
 * edges meet its neighbour's at the same width (a New York day's hours run
 * on into the next day's), and six months of New York days read as UTC
 * days less the hours before each are one walk of the day segments and
 * one of the hour segments. A piece that overlaps the one before it (same
 * width and sign) starts a run of its own, so that each cell is folded
 * once per piece. A piece taken away may leave groups empty, as a delta
 * block may (drop_empty_groups). */
static int scan_pieces(struct exec *x, struct ask_error *err)
{
    if (x->npieces > 1) /* an empty range has no pieces, and pieces is then NULL */
        qsort(x->pieces, x->npieces, sizeof *x->pieces, cmp_piece);
    pair_twins(x);
    if (plan_settle(x))
        return ask_fail(err, 500, "internal", "out of memory");
    for (uint32_t i = 0; i < x->npieces;) {
        const struct scan_piece *p = &x->pieces[i++];
        uint32_t n = 1;
        bool twins = p->twin;
        while (i < x->npieces && x->pieces[i].width == p->width &&
               x->pieces[i].minus == p->minus && x->pieces[i].from >= x->pieces[i - 1].to) {
            twins = twins || x->pieces[i].twin;
            n++;
            i++;
        }
        x->run = p;
        x->nrun = n;
        x->run_hint = 0;
        x->minus = p->minus;
        x->run_twins = twins;
        x->folded_deltas = x->folded_deltas || p->minus || twins;
        if (scan_run(x, p->width, err))
            return -1;
    }
    return 0;
}

/* The first and last instants the view holds cells for: the widest
 * width's first segment's start and its last one's end (every row lies in
 * a cell of every width), clipped to [*from, *to). */
static int clip_to_data(struct exec *x, int64_t *from, int64_t *to, struct ask_error *err)
{
    int top = x->v->nwidths - 1;
    int64_t span = store_span_buckets(x->v, top) * x->v->widths[top];
    struct store_segment_iter it;
    struct store_segment s;
    struct store_error serr;
    if (store_segments_begin(x->r, x->view, top, *from, *to, &it, &serr))
        return ask_fail(err, 500, "corrupt_store", "%s", serr.message);
    int64_t lo = INT64_MAX, hi = INT64_MIN;
    int got;
    while ((got = store_segments_next(&it, &s, &serr)) != 0) {
        if (got < 0 && !s.bytes) {
            store_segments_end(&it);
            return ask_fail(err, 500, "corrupt_store", "%s", serr.message);
        }
        if (s.span_start < lo)
            lo = s.span_start;
        if (s.span_start + span > hi)
            hi = s.span_start + span;
    }
    store_segments_end(&it);
    if (lo > *from)
        *from = lo;
    if (hi < *to)
        *to = hi;
    if (*to < *from)
        *to = *from;
    return 0;
}

/* A calendar bucket that starts off the view's bucket edges cannot be
 * composed from cells: the 422 says where, and which finest width would
 * (the largest that divides every such start's distance from an edge). */
static int not_composable(struct exec *x, int64_t edge, struct ask_error *err)
{
    const struct sql_view *v = x->v;
    int64_t w = v->widths[0], g = w;
    for (uint32_t i = 1; i < x->ncal; i++) {
        int64_t r = (x->cal_edges[i] - v->origin_usec) % w;
        for (int64_t a = g, b = r < 0 ? -r : r; b;) { /* g = gcd(g, |r|) */
            int64_t t = a % b;
            a = b;
            b = t;
            g = a;
        }
    }
    char when[64], finest[48], serves[48];
    tz_format(x->b.group_tz, edge, when, sizeof when);
    sql_format_interval(w, finest, sizeof finest);
    sql_format_interval(g, serves, sizeof serves);
    const char *zone = x->ask->bucket_zone ? x->ask->bucket_zone
                                            : x->b.group_tz == x->b.tz ? "the ask's time zone"
                                                                        : "?";
    return ask_fail(err, 422, "not_composable",
                    "date_trunc('%s', bucket) in %s starts a bucket at %s, inside one of view "
                    "\"%s\"'s %s buckets: its cells cannot compose it exactly; a view whose "
                    "finest width divides %s would",
                    sql_time_unit_name(x->ask->bucket_unit), zone, when, v->name, finest,
                    serves);
}

/* The first and last bucket start of segment s's blocks (its base and its
 * deltas) that hold a row, read from their bucket totals (a few dozen
 * rows), else their cells: *first > *last when none does. 0, or -1 with
 * err. A bucket whose rows a delta took away still counts: the bounds are
 * wide, never narrow. */
static int segment_extent(struct exec *x, const struct store_segment *s, int64_t *first,
                          int64_t *last, struct ask_error *err)
{
    *first = INT64_MAX;
    *last = INT64_MIN;
    for (int i = 0; i <= s->ndeltas; i++) {
        struct store_block b;
        store_segment_block(x->r, s, i, &b);
        uint32_t n;
        uint16_t family = store_rollup_base(false, -1);
        struct store_want w = {.family = store_block_family(&b, family, NULL, &n) ? family : 0,
                               .whole = true};
        struct store_rows rows;
        struct store_error serr;
        if (store_rows_load(&b, &w, &rows, &serr)) {
            store_rows_free(x->v, &rows); /* what was decoded before the failure */
            return cursor_failed(err, &serr);
        }
        if (rows.n) {
            int64_t a = b.span_start + rows.bucket[0] * b.width;
            int64_t z = b.span_start + rows.bucket[rows.n - 1] * b.width;
            *first = a < *first ? a : *first;
            *last = z > *last ? z : *last;
        }
        store_rows_free(x->v, &rows);
    }
    return 0;
}

/* Opens a side of [from, to) that no row lies beyond: a range that starts
 * at or before the view's first row reads what all time reads, and so for
 * its end. The cover then takes whole spans where the rows allow (a span
 * family over six months of rows rather than 26 weeks of bucket rows and
 * the days and hours at their edges), and answers what it answered: no
 * bucket outside the range holds a row. Reads the first finest segments up
 * to the first that holds a row (the from side) and those from `to` on
 * (the to side: none or one when no row lies past it). 0, or -1 with err. */
static int open_past_rows(struct exec *x, int64_t *from, int64_t *to, struct ask_error *err)
{
    struct store_segment_iter it;
    struct store_segment s;
    struct store_error serr;
    int64_t first, last;
    int got, rc = 0;
    if (x->b.has_from && *from > x->b.all_from) {
        if (store_segments_begin(x->r, x->view, 0, INT64_MIN, INT64_MAX, &it, &serr))
            return ask_fail(err, 500, "corrupt_store", "%s", serr.message);
        /* The first segment that holds a row (one whose rows were all
         * taken away may come first), or none before `from`. */
        bool rows_before = false, seen = false;
        while (rc == 0 && !seen && (got = store_segments_next(&it, &s, &serr)) != 0) {
            if (got < 0)
                rc = ask_fail(err, 500, "corrupt_store", "%s", serr.message);
            else if (s.span_start >= *from)
                seen = true;
            else if ((rc = segment_extent(x, &s, &first, &last, err)) == 0 && first <= last) {
                seen = true;
                rows_before = first < *from;
            }
        }
        store_segments_end(&it);
        if (rc == 0 && !rows_before)
            *from = x->b.all_from;
    }
    if (rc == 0 && x->b.has_to && *to < x->b.all_to) {
        if (store_segments_begin(x->r, x->view, 0, *to, INT64_MAX, &it, &serr))
            return ask_fail(err, 500, "corrupt_store", "%s", serr.message);
        int segments = 0;
        bool rows_past = false;
        while (rc == 0 && !rows_past && (got = store_segments_next(&it, &s, &serr)) != 0) {
            if (got < 0)
                rc = ask_fail(err, 500, "corrupt_store", "%s", serr.message);
            else if (++segments > 1)
                rows_past = true; /* a second segment past `to` starts after it */
            else if ((rc = segment_extent(x, &s, &first, &last, err)) == 0)
                rows_past = first <= last && last >= *to;
        }
        store_segments_end(&it);
        if (rc == 0 && !rows_past)
            *to = x->b.all_to;
    }
    return rc;
}

/* Whether the ask may read a range as more cells less those outside it
 * (cover_spans): it does not group by time, and every measure it reads
 * takes away exactly what it added: counts, exact sums and value counts
 * do, a float sum does not (its rounding follows the order of its adds).
 * The cells-only reference never does. */
static bool may_subtract(const struct exec *x)
{
    if ((x->ask->group_by_bucket && !x->ask->bucket_calendar) || x->e->limits.cells_only)
        return false;
    for (int k = 0; k < x->v->nsums; k++)
        if (x->need_sum[k] && x->types[x->v->sums[k].fact_column].type == STORE_TYPE_FLOAT)
            return false;
    return true;
}

/* The rows of the widest width's span at span_start, in the buckets that
 * start in [from, to) (*in) and in the rest (*out), from the bucket totals
 * of its blocks (a few dozen rows); *family when its base block has span
 * rows the ask can fold. 0, or -1 with err. */
static int span_split(struct exec *x, int64_t span_start, int64_t from, int64_t to, int64_t *in,
                      int64_t *out, bool *family, struct ask_error *err)
{
    int top = x->v->nwidths - 1;
    int64_t span_end = span_start + store_span_buckets(x->v, top) * x->v->widths[top];
    struct store_segment_iter it;
    struct store_segment s;
    struct store_error serr;
    *in = *out = 0;
    *family = false;
    if (store_segments_begin(x->r, x->view, top, span_start, span_end, &it, &serr))
        return ask_fail(err, 500, "corrupt_store", "%s", serr.message);
    int got, rc = 0;
    while (rc == 0 && (got = store_segments_next(&it, &s, &serr)) != 0) {
        if (got < 0) {
            rc = ask_fail(err, 500, "corrupt_store", "%s", serr.message);
            break;
        }
        for (int i = 0; rc == 0 && i <= s.ndeltas; i++) {
            struct store_block b;
            store_segment_block(x->r, &s, i, &b);
            if (i == 0)
                *family = span_family(x, &b) != 0;
            uint32_t n;
            uint16_t totals = store_rollup_base(false, -1);
            struct store_want w = {
                .family = store_block_family(&b, totals, NULL, &n) ? totals : 0,
                .whole = true, .counts = x->need_count}; /* counts[0]: the rows */
            struct store_rows rows;
            if (store_rows_load(&b, &w, &rows, &serr))
                rc = cursor_failed(err, &serr);
            for (uint32_t r = 0; rc == 0 && r < rows.n; r++) {
                int64_t t = b.span_start + rows.bucket[r] * b.width;
                *(t >= from && t < to ? in : out) += rows.counts[0][r];
            }
            store_rows_free(x->v, &rows);
        }
    }
    store_segments_end(&it);
    return rc;
}

/* The share of a span's rows that may lie outside the range for the span
 * to be read whole less what lies outside: under a quarter. The span's
 * rows (one per key, or per combination of the keys read, over the whole
 * span) cost about what a few of its buckets' cells cost, and what lies
 * outside is read as the range's own edges would be. */
enum { SUBTRACT_OUT_PER_IN = 3 };

/* Covers [from, to) as cover does, except that a widest-width span the
 * range holds most of but not all is read whole, as span rows, less a
 * cover of what lies outside it: six months of rows asked from January 1
 * 05:00 to July 1 04:00 (New York) with rows before and after them read
 * as one span's rows less a few hours and outlying weeks, not 25 weeks of
 * cells and the days and hours at their edges. Whether a span pays is
 * decided from its bucket totals (span_split); ranges shorter than two
 * widest buckets are covered as cover does, without a look. */
static int cover_spans(struct exec *x, int64_t from, int64_t to, struct ask_error *err)
{
    const struct sql_view *v = x->v;
    int top = v->nwidths - 1;
    int64_t width = v->widths[top], span = store_span_buckets(v, top) * width;
    int64_t spans[2] = {floor_edge(from, v->origin_usec, span),
                        floor_edge(to, v->origin_usec, span)};
    bool sides[2] = {spans[0] < from && from != x->b.all_from,
                     spans[1] < to && to != x->b.all_to};
    bool taken[2] = {false, false};
    if (spans[0] == spans[1]) /* one span holds the range: one look */
        sides[1] = false;
    for (int i = 0; i < 2 && to - from >= 2 * width; i++) {
        if (!sides[i])
            continue;
        int64_t in, out;
        bool family;
        if (span_split(x, spans[i], from, to, &in, &out, &family, err))
            return -1;
        if (!family || in <= 0 || out * SUBTRACT_OUT_PER_IN >= in)
            continue;
        int64_t start = spans[i], end = start + span;
        if (add_piece(x, top, false, start, end, err) ||
            cover(x, top, start, from > start ? from : start, true, err) ||
            cover(x, top, to < end ? to : end, end, true, err))
            return -1;
        taken[i] = true;
    }
    int64_t lo = taken[0] ? spans[0] + span : from, hi = taken[1] ? spans[1] : to;
    return lo < hi ? cover(x, top, lo, hi, false, err) : 0;
}

/* The rows of a key's marginal per widest bucket at which taking a
 * bucket's rest away at its edges pays (plan_time): between the handful
 * of a payment type's (a loss) and the 250 of a pickup zone's (a gain). */
enum { SUBTRACT_EDGES_MIN_ROWS = 64 };

/* *rows: the rows the ask reads for its one key per bucket that holds
 * any (its marginal's, or the cells' where the store keeps no marginal of
 * it), in the widest width's first segment in [from, to); 0 when there is
 * none. A measure of the key's distinct values at hand, read from block
 * headers. 0, or -1 with err. */
static int marginal_rows_per_bucket(struct exec *x, int64_t from, int64_t to, uint32_t *rows,
                                    struct ask_error *err)
{
    struct store_segment_iter it;
    struct store_segment s;
    struct store_error serr;
    *rows = 0;
    if (store_segments_begin(x->r, x->view, x->v->nwidths - 1, from, to, &it, &serr))
        return ask_fail(err, 500, "corrupt_store", "%s", serr.message);
    int got = store_segments_next(&it, &s, &serr);
    if (got > 0) {
        struct store_block b;
        uint32_t keyed, buckets;
        store_segment_block(x->r, &s, 0, &b);
        if (x->read_key >= STORE_ROLLUP_MAX_KEYS ||
            !store_block_family(&b, store_rollup_base(false, x->read_key), NULL, &keyed))
            store_block_family(&b, 0, NULL, &keyed); /* the cells */
        if (store_block_family(&b, store_rollup_base(false, -1), NULL, &buckets) && buckets)
            *rows = keyed / buckets;
    }
    store_segments_end(&it);
    return got < 0 ? ask_fail(err, 500, "corrupt_store", "%s", serr.message) : 0;
}

/* Plans the ask's grouping by time: its bins, or its calendar buckets over
 * the range (each one's cover is its own), into x->pieces. */
static int plan_time(struct exec *x, struct ask_error *err)
{
    const struct sql_ask *a = x->ask;
    int64_t from = x->b.from, to = x->b.to;
    x->bin_width = a->bucket_width;
    x->bin_origin = a->bucket_origin;
    x->subtract = may_subtract(x);
    /* A bucket less its rest at an edge reads fewer rows but walks the
     * finer width's segments once more (the pieces taken away are a run of
     * their own): it pays where a wider bucket's rows are many and costly
     * — the cells of two keys or more, a key's marginal rows with their
     * value counts, a marginal of many keys — not for totals, one row a
     * bucket at every width, nor for a marginal of a few keys. Measured at
     * full scale (one engine, best of 50): the median per New York day,
     * zone and payment type over two weeks 310 -> 218 ms; trips per New
     * York month by borough (some 250 zones a week) 857 -> 600 us, by
     * dropoff zone with tips 2.38 -> 1.85 ms; trips per New York month by
     * payment type (a handful a week) 99 -> 114 us, and per New York day
     * from totals 250 -> 290 us, so those are read without. */
    if (x->subtract && x->read_key >= 0 && !x->any_vc) {
        uint32_t rows;
        if (marginal_rows_per_bucket(x, from, to, &rows, err))
            return -1;
        x->subtract_edges = rows >= SUBTRACT_EDGES_MIN_ROWS;
    } else {
        x->subtract_edges = x->subtract && (x->read_key == -2 || x->read_key >= 0);
    }
    if (!(x->width_cost = scratch_malloc(sizeof *x->width_cost * (size_t)x->v->nwidths)))
        return ask_fail(err, 500, "internal", "out of memory");
    for (int w = 0; w < x->v->nwidths; w++)
        x->width_cost[w] = 2 * isqrt(x->v->widths[w] / x->v->widths[0]);
    x->cover_from = INT64_MIN;
    x->cover_to = INT64_MAX;
    x->cover_key = NO_PIECE_KEY;
    if (!a->group_by_bucket && open_past_rows(x, &from, &to, err))
        return -1;
    if (!a->bucket_calendar)
        return x->subtract ? cover_spans(x, from, to, err)
                           : cover(x, x->v->nwidths - 1, from, to, false, err);
    if (clip_to_data(x, &from, &to, err))
        return -1;
    uint32_t max = x->e->limits.max_groups > 0 ? (uint32_t)x->e->limits.max_groups : UINT32_MAX - 1;
    if (calendar_groups(x->b.group_tz, a->bucket_unit, from, to, max, &x->cal_edges,
                        &x->cal_keys, &x->ncal)) {
        if (x->ncal > max)
            return ask_fail(err, 422, "too_many_groups",
                            "the range holds more than %u %ss: narrow the range or use a "
                            "larger unit", max, sql_time_unit_name(a->bucket_unit));
        return ask_fail(err, 500, "internal", "out of memory");
    }
    int64_t w = x->v->widths[0];
    for (uint32_t i = 1; i < x->ncal; i++)
        if ((x->cal_edges[i] - x->v->origin_usec) % w != 0)
            return not_composable(x, x->cal_edges[i], err);
    for (uint32_t i = 0; i < x->ncal; i++) {
        x->cover_from = x->cal_edges[i];
        x->cover_to = x->cal_edges[i + 1];
        x->cover_key = x->cal_keys[i];
        if (cover(x, x->v->nwidths - 1, x->cal_edges[i], x->cal_edges[i + 1], false, err))
            return -1;
    }
    return 0;
}

static void need_key(struct exec *x, int k)
{
    if (k >= 0)
        x->need_key[k] = true;
}

static bool is_percentile(enum sql_agg agg)
{
    return agg == SQL_AGG_PERCENTILE_DISC || agg == SQL_AGG_PERCENTILE_CONT;
}

/* x->rows_count: a value count read by percentiles only, of a column that
 * is not text (texts are ordered by their bytes: every code is read), whose
 * rows a count of the view totals. That count is then read too: a group's
 * rows come in every cell and rollup row beside its value counts. */
static void plan_rows_counts(struct exec *x)
{
    const struct sql_view *v = x->v;
    for (int k = 0; k < v->nvalue_counts; k++) {
        const struct sql_value_count_spec *vs = &v->value_counts[k];
        x->rows_count[k] = -1;
        for (int c = 0; c < v->ncounts; c++)
            if (v->counts[c].fact_column == vs->fact_column && v->counts[c].filter == vs->filter)
                x->rows_count[k] = c;
        if (!x->need_vc[k] || x->types[vs->fact_column].type == STORE_TYPE_TEXT)
            x->rows_count[k] = -1;
        for (int i = 0; i < ask_nmeasures(x->ask); i++) {
            const struct sql_view_column *vc = &v->columns[ask_measure(x->ask, i)];
            if (vc->kind == SQL_COLUMN_MEASURE && vc->measure.value_counts == k &&
                !is_percentile(vc->measure.agg))
                x->rows_count[k] = -1;
        }
        if (x->rows_count[k] >= 0)
            x->need_count[x->rows_count[k]] = true;
        x->lazy_rows[k] = x->rows_count[k] >= 0;
    }
}

/* The plan's arrays whose sizes the view and the ask alone set, in one
 * zeroed block (x->plan_block, which exec_free frees). 0, or -1 out of
 * memory. */
static int plan_arrays(struct exec *x)
{
    const struct sql_view *v = x->v;
    size_t total = 0, vcs = (size_t)v->nvalue_counts + 1;
    size_t need_key = scratch_place(&total, (size_t)v->ncell_keys + 1, sizeof(bool));
    size_t need_count = scratch_place(&total, (size_t)v->ncounts + 1, sizeof(bool));
    size_t need_sum = scratch_place(&total, (size_t)v->nsums + 1, sizeof(bool));
    size_t need_vc = scratch_place(&total, vcs, sizeof(bool));
    size_t lazy_rows = scratch_place(&total, vcs, sizeof(bool));
    size_t rows_count = scratch_place(&total, vcs, sizeof(int));
    size_t dims = scratch_place(&total, (size_t)v->njoins + 1, sizeof(struct dim_cache));
    size_t key = scratch_place(&total, 1 + (size_t)x->ask->ngroup_keys, sizeof(int64_t));
    size_t cond_ids = scratch_place(&total, (size_t)x->b.nconds + 1, sizeof(int64_t *));
    char *block = scratch_calloc(1, total);
    if (!block)
        return -1;
    x->plan_block = block;
    x->need_key = (bool *)(block + need_key);
    x->need_count = (bool *)(block + need_count);
    x->need_sum = (bool *)(block + need_sum);
    x->need_vc = (bool *)(block + need_vc);
    x->lazy_rows = (bool *)(block + lazy_rows);
    x->rows_count = (int *)(block + rows_count);
    x->dims = (struct dim_cache *)(block + dims);
    x->key = (int64_t *)(block + key);
    x->cond_ids = (int64_t **)(block + cond_ids);
    return 0;
}

/* Which keys and accumulators the ask reads. */
static int plan_needs(struct exec *x, struct ask_error *err)
{
    const struct sql_view *v = x->v;
    if (plan_arrays(x))
        return ask_fail(err, 500, "internal", "out of memory");
    for (int j = 0; j < v->njoins; j++) {
        x->dims[j].ncols = store_dense_columns(&v->joins[j]);
        if (!(x->dims[j].cols = scratch_calloc((size_t)x->dims[j].ncols, sizeof *x->dims[j].cols)))
            return ask_fail(err, 500, "internal", "out of memory");
    }
    for (int i = 0; i < ask_nmeasures(x->ask); i++) {
        const struct sql_view_column *vc = &v->columns[ask_measure(x->ask, i)];
        if (vc->kind != SQL_COLUMN_MEASURE)
            continue;
        const struct sql_measure *m = &vc->measure;
        if (m->count >= 0)
            x->need_count[m->count] = true;
        if (m->sum >= 0)
            x->need_sum[m->sum] = true;
        if (m->value_counts >= 0)
            x->need_vc[m->value_counts] = true;
    }
    x->need_count[0] = true; /* a group exists while its rows do (drop_empty_groups) */
    plan_rows_counts(x);
    x->groups.nkey = 1 + x->ask->ngroup_keys;
    hashtab_init(&x->groups.table, (uint32_t)x->groups.nkey, sizeof(struct group *));
    /* The keys read: group keys, conditions, and inner joins (they drop
     * cells whose key has no dim row). */
    for (int g = 0; g < x->ask->ngroup_keys; g++) {
        const struct sql_view_column *vc = &v->columns[x->ask->group_keys[g]];
        need_key(x, vc->kind == SQL_COLUMN_FACT_KEY ? vc->cell_key : join_key(v, vc->join));
    }
    x->where_all_and = pred_all_and(x->ask->where);
    bool one_key = !x->where_all_and;
    x->where_key = -1;
    for (int k = 0; k < x->b.nconds; k++) {
        int key = x->b.conds[k].is_dim ? join_key(v, x->b.conds[k].join) : x->b.conds[k].cell_key;
        need_key(x, key);
        one_key = one_key && (k == 0 || key == x->where_key);
        x->where_key = key;
    }
    x->filters_cells = x->b.nconds > 0;
    if (one_key && x->where_key >= 0)
        hashtab_init(&x->where_verdicts, 1, sizeof(int64_t));
    else
        x->where_key = -1;
    for (int j = 0; j < v->njoins; j++)
        if (v->joins[j].kind == SQL_JOIN_INNER) {
            need_key(x, join_key(v, j));
            x->filters_cells = true;
        }
    for (int k = 0; k < v->nvalue_counts; k++)
        x->any_vc = x->any_vc || x->need_vc[k];
    x->read_key = -1;
    for (int k = 0; k < v->ncell_keys; k++)
        if (x->need_key[k])
            x->read_key = x->read_key == -1 ? k : -2;
    x->subtract_failing = plan_subtract_failing(x);
    /* A dim condition's texts as ids of the column's dictionary (equal
     * texts, equal ids); a text no dim row ever held matches nothing. */
    for (int k = 0; k < x->b.nconds; k++) {
        const struct bound_cond *bc = &x->b.conds[k];
        if (!bc->is_dim || bc->by_text)
            continue; /* a text test reads the value's own text */
        if (!(x->cond_ids[k] = scratch_malloc(sizeof **x->cond_ids * ((size_t)bc->ntexts + 1))))
            return ask_fail(err, 500, "internal", "out of memory");
        for (int i = 0; i < bc->ntexts; i++)
            if (store_dense_find(x->r, x->view, bc->join, bc->dim_value, bc->texts[i],
                                 bc->lens[i], &x->cond_ids[k][i]))
                x->cond_ids[k][i] = -2; /* no cell's id (-1 is NULL's) */
    }
    x->cond_sets = scratch_calloc((size_t)x->b.nconds + 1, sizeof *x->cond_sets);
    if (!x->cond_sets)
        return ask_fail(err, 500, "internal", "out of memory");
    for (int k = 0; k < x->b.nconds; k++) {
        const struct bound_cond *bc = &x->b.conds[k];
        int n = bc->is_dim ? bc->ntexts : bc->ncodes;
        if (n > IN_LINEAR_MAX && !bc->by_text && (!bc->is_dim || x->cond_ids[k]) &&
            code_set_build(&x->cond_sets[k], bc->is_dim ? x->cond_ids[k] : bc->codes, n))
            return ask_fail(err, 500, "internal", "out of memory");
    }
    return 0;
}

/* The error of a group gone below no rows, naming the segment to blame
 * among the suspects (exec.suspects: those whose deltas the ask folded and
 * those of the pieces it took away, exec.c scan_pieces); on the error path
 * only, so its cost does not matter. Each suspect is merged by the store,
 * which checks every cell and value count of it, and the first that fails
 * is named with the store's reason. A delta whose cells are sound but
 * whose rollup rows are not passes that check, as do buckets taken away
 * that hold rows the wider ones do not: then the message names every
 * suspect. Returns -1. */
static int blame_suspect(struct exec *x, struct ask_error *err)
{
    uint32_t n = x->nsuspects < EXEC_SUSPECTS ? x->nsuspects : EXEC_SUSPECTS;
    for (uint32_t i = 0; i < n; i++) {
        struct store_segment_iter it;
        struct store_segment s;
        struct store_error serr;
        int64_t at = x->suspects[i].span_start;
        if (store_segments_begin(x->r, x->view, x->suspects[i].width, at, at + 1, &it, &serr))
            return ask_fail(err, 500, "corrupt_store", "%s", serr.message);
        it.merged = true;
        int got = store_segments_next(&it, &s, &serr);
        store_segments_end(&it);
        if (got < 0)
            return ask_fail(err, 500, "corrupt_store", "%s", serr.message);
    }
    char list[EXEC_SUSPECTS * 48] = "";
    size_t used = 0;
    for (uint32_t i = 0; i < n && used < sizeof list; i++)
        used += (size_t)snprintf(list + used, sizeof list - used, "%swidth %d span %lld",
                                 i ? ", " : "", x->suspects[i].width,
                                 (long long)x->suspects[i].span_start);
    return ask_fail(err, 500, "corrupt_store",
                    "view \"%s\": a group came out below no rows (a delta block takes away "
                    "rows that were never stored, or buckets taken away hold rows that the "
                    "wider ones do not) in one of the %u segments with deltas or taken away "
                    "that the ask read (%s%s; straum-dump verify checks them all)",
                    x->v->name, x->nsuspects, list,
                    x->nsuspects > n ? ", ..." : "");
}

/* Groups whose every row a delta block took away: there are none in
 * PostgreSQL's answer. Fewer than no rows means a delta took away what was
 * never there (the writer only checks that when it folds deltas), or
 * buckets taken away hold rows the wider ones do not: an error naming the
 * segment (blame_suspect), never an answer. */
static int drop_empty_groups(struct exec *x, struct ask_error *err)
{
    struct group_map *m = &x->groups;
    uint32_t kept = 0;
    for (uint32_t i = 0; i < m->n; i++)
        if (m->all[i]->counts[0] < 0)
            return blame_suspect(x, err);
    for (uint32_t i = 0; i < m->n; i++) {
        if (m->all[i]->counts[0] != 0)
            m->all[kept++] = m->all[i];
        else
            group_release(x, m->all[i]);
    }
    m->n = kept;
    m->last = NULL;
    memset(m->recent, 0, sizeof m->recent);
    hashtab_clear(&m->table); /* as many slots as before: the re-adds cannot fail */
    /* A map that forgot settled groups is not made whole again: it is
     * smaller than they are, and nothing finds an ask's groups by time
     * after its scan. */
    for (uint32_t i = 0; !x->map_forgot && i < m->n; i++) {
        const uint64_t *k = (const uint64_t *)m->all[i]->key;
        bool added;
        struct group **slot = hashtab_upsert(&m->table, k, hashtab_hash(&m->table, k), &added);
        *slot = m->all[i];
    }
    return 0;
}

int exec_scan(struct exec *x, struct ask_error *err)
{
    x->started_us = now_us();
    if (plan_needs(x, err) || plan_time(x, err) || scan_pieces(x, err))
        return -1;
    if (x->keep && answer_keep_end(x, err))
        return -1;
    if (x->folded_deltas && drop_empty_groups(x, err))
        return -1;
    /* An ask without GROUP BY answers one row, even over no cells. */
    if (!x->ask->group_by_bucket && x->ask->ngroup_keys == 0 && x->groups.n == 0) {
        int64_t key[1] = {0};
        if (!group_for(x, key, err))
            return -1;
    }
    return 0;
}

void exec_free(struct exec *x)
{
    answer_keep_release(x); /* its groups are in no slab list of their own */
    for (uint32_t i = 0; i < x->groups.n; i++)
        group_release(x, x->groups.all[i]);
    for (uint32_t i = 0; i < x->groups.nslabs; i++)
        scratch_free(x->groups.slabs[i]);
    scratch_free(x->groups.slabs);
    scratch_free(x->groups.all);
    hashtab_free(&x->groups.table);
    run_arena_free(&x->runs_arena);
    for (int j = 0; x->dims && j < x->v->njoins; j++) {
        for (int c = 0; x->dims[j].cols && c < x->dims[j].ncols; c++) {
            struct dense_col *d = &x->dims[j].cols[c];
            scratch_free(d->dir);
            scratch_free(d->seen);
            scratch_free(d->far_chunks);
            if (d->far.slot_words)
                hashtab_free(&d->far);
        }
        scratch_free(x->dims[j].cols);
    }
    for (int k = 0; x->cond_ids && k < x->b.nconds; k++)
        scratch_free(x->cond_ids[k]);
    for (int k = 0; x->cond_sets && k < x->b.nconds; k++)
        hashtab_free(&x->cond_sets[k]);
    if (x->where_verdicts.slot_words)
        hashtab_free(&x->where_verdicts);
    scratch_free(x->cond_sets);
    scratch_free(x->plan_block); /* key, need_*, rows_count, lazy_rows, dims, cond_ids */
    scratch_free(x->settle_measures);
    scratch_free(x->pieces);
    scratch_free(x->minus_rows);
    scratch_free(x->width_cost);
    scratch_free(x->cal_edges);
    scratch_free(x->cal_keys);
    bound_free(&x->b);
}
