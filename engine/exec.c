/* exec.c -- the scan: which cells an ask reads and how they fold into groups.
 *
 * The range [from, to) is covered with the fewest cells: whole buckets of the
 * widest width that fits, narrower widths at the edges. An ask grouped by
 * bucket at width W may only use widths that divide W (their cells nest in
 * W's buckets). Each segment of each (width, sub-range) is decoded column by
 * column; every cell in range passes the key conditions (dim columns through
 * the projection, looked up once per distinct join key) and is added to its
 * group: counts and sums add, value counts merge. */
#include "engine/calendar.h"
#include "engine/internal.h"
#include "engine/pred.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <xxhash.h>

/* The cell key a join joins on. */
static int join_key(const struct sql_view *v, int join)
{
    for (int k = 0; k < v->ncell_keys; k++)
        if (v->cell_keys[k] == v->joins[join].fact_column)
            return k;
    return -1; /* the view parser makes every join key a cell key */
}

/* ---- Dim rows, once per join key --------------------------------------------- */

struct dim_entry {
    int64_t key;
    bool used, found;
    uint32_t ids_at;       /* its ids in the cache's ids: one interned text id per
                              dim value, -1 NULL (an offset: slots move) */
};

enum { DIM_DIRECT = 4096 }; /* join keys 0..4095 skip the hash (zone ids, small codes) */

struct dim_cache {
    struct dim_entry *slots;
    uint32_t nslots, n;
    int nvalues;
    uint32_t *direct;      /* [DIM_DIRECT]: slot + 1 of key i, 0 not yet seen */
    int64_t *ids;          /* every entry's ids, nvalues each: one allocation, not
                              one per join key read */
    uint32_t nids, ids_cap;
};

/* Dim value v (0-based) of a found entry, as an interned text id. */
static inline int64_t dim_id(const struct exec *x, int join, const struct dim_entry *e, int v)
{
    return x->dims[join].ids[e->ids_at + (uint32_t)v];
}

/* Room for one more entry's ids: their offset, or -1 when out of memory. */
static int64_t dim_ids_room(struct dim_cache *c)
{
    uint32_t n = (uint32_t)c->nvalues + 1;
    if (c->nids + n > c->ids_cap) {
        if (c->ids_cap > UINT32_MAX / 2)
            return -1;
        uint32_t cap = c->ids_cap ? c->ids_cap * 2 : 256 * n;
        int64_t *ids = realloc(c->ids, sizeof *ids * cap);
        if (!ids)
            return -1;
        c->ids = ids;
        c->ids_cap = cap;
    }
    c->nids += n;
    return c->nids - n;
}

int64_t pool_intern(struct text_pool *p, const char *text, size_t len, bool is_null)
{
    if (is_null)
        return -1;
    for (int i = 0; i < p->n; i++) /* dims have few distinct values per ask */
        if (p->lens[i] == len && memcmp(p->texts[i], text, len) == 0)
            return i;
    if (p->n == p->cap) {
        int cap = p->cap ? p->cap * 2 : 16;
        char **t = realloc(p->texts, sizeof *t * (size_t)cap);
        if (t)
            p->texts = t;
        size_t *l = realloc(p->lens, sizeof *l * (size_t)cap);
        if (l)
            p->lens = l;
        if (!t || !l)
            return -2;
        p->cap = cap;
    }
    if (!(p->texts[p->n] = malloc(len + 1)))
        return -2;
    memcpy(p->texts[p->n], text, len);
    p->texts[p->n][len] = '\0';
    p->lens[p->n] = len;
    return p->n++;
}

static int dim_lookup_slow(struct exec *x, int join, int64_t key, const struct dim_entry **out,
                           struct ask_error *err);

/* The dim row of a join key, read from the store once per ask. A cell scan
 * calls this per cell: small keys are an array index away. */
static inline int dim_lookup(struct exec *x, int join, int64_t key, const struct dim_entry **out,
                             struct ask_error *err)
{
    struct dim_cache *c = &x->dims[join];
    if ((uint64_t)key < DIM_DIRECT && c->direct && c->direct[key]) {
        *out = &c->slots[c->direct[key] - 1];
        return 0;
    }
    return dim_lookup_slow(x, join, key, out, err);
}

static int dim_lookup_slow(struct exec *x, int join, int64_t key, const struct dim_entry **out,
                           struct ask_error *err)
{
    struct dim_cache *c = &x->dims[join];
    if (!c->direct && !(c->direct = calloc(DIM_DIRECT, sizeof *c->direct)))
        return ask_fail(err, 500, "internal", "out of memory");
    if (c->n * 2 >= c->nslots) {
        memset(c->direct, 0, DIM_DIRECT * sizeof *c->direct); /* slots move */
        uint32_t nslots = c->nslots ? c->nslots * 2 : 64;
        struct dim_entry *s = calloc(nslots, sizeof *s);
        if (!s)
            return ask_fail(err, 500, "internal", "out of memory");
        for (uint32_t i = 0; i < c->nslots; i++)
            if (c->slots[i].used) {
                uint32_t h = (uint32_t)XXH3_64bits(&c->slots[i].key, 8) & (nslots - 1);
                while (s[h].used)
                    h = (h + 1) & (nslots - 1);
                s[h] = c->slots[i];
            }
        free(c->slots);
        c->slots = s;
        c->nslots = nslots;
    }
    uint32_t h = (uint32_t)XXH3_64bits(&key, 8) & (c->nslots - 1);
    while (c->slots[h].used && c->slots[h].key != key)
        h = (h + 1) & (c->nslots - 1);
    struct dim_entry *e = &c->slots[h];
    if (!e->used) {
        struct store_dim_value vals[64];
        struct store_error serr;
        int n = c->nvalues;
        int64_t at = dim_ids_room(c);
        if (at < 0)
            return ask_fail(err, 500, "internal", "out of memory");
        e->used = true;
        e->key = key;
        e->ids_at = (uint32_t)at;
        c->n++;
        int got = key == STORE_NULL ? 0 : store_projection_get(x->r, x->view, join, key, vals, n, &serr);
        if (got < 0)
            return ask_fail(err, 500, "corrupt_store", "%s", serr.message);
        e->found = got == 1;
        int64_t *ids = c->ids + e->ids_at;
        for (int i = 0; i < n; i++) {
            ids[i] = e->found ? pool_intern(&x->pool, vals[i].text, vals[i].len, vals[i].is_null) : -1;
            if (ids[i] == -2)
                return ask_fail(err, 500, "internal", "out of memory");
        }
    }
    if ((uint64_t)key < DIM_DIRECT)
        c->direct[key] = (uint32_t)(e - c->slots) + 1;
    *out = e;
    return 0;
}

/* ---- Groups ---------------------------------------------------------------------- */

static uint64_t key_hash(const int64_t *key, int n) { return XXH3_64bits(key, 8 * (size_t)n); }

static void group_free(const struct sql_view *v, struct group *g)
{
    if (!g)
        return;
    for (int i = 0; g->vcs && i < v->nvalue_counts; i++)
        vc_acc_free(&g->vcs[i]);
    free(g->key);
    free(g->counts);
    free(g->exact);
    free(g->real);
    free(g->vcs);
    free(g);
}

static struct group *group_new(struct exec *x, const int64_t *key)
{
    const struct sql_view *v = x->v;
    struct group *g = calloc(1, sizeof *g);
    if (!g)
        return NULL;
    g->key = malloc(8 * (size_t)x->groups.nkey + 8);
    g->counts = calloc((size_t)v->ncounts + 1, sizeof *g->counts);
    g->exact = calloc((size_t)v->nsums + 1, sizeof *g->exact);
    g->real = calloc((size_t)v->nsums + 1, sizeof *g->real);
    g->vcs = calloc((size_t)v->nvalue_counts + 1, sizeof *g->vcs);
    if (!g->key || !g->counts || !g->exact || !g->real || !g->vcs) {
        group_free(v, g);
        return NULL;
    }
    memcpy(g->key, key, 8 * (size_t)x->groups.nkey);
    return g;
}

static int map_grow(struct group_map *m)
{
    uint32_t nslots = m->nslots ? m->nslots * 2 : 64;
    struct group **s = calloc(nslots, sizeof *s);
    if (!s)
        return -1;
    for (uint32_t i = 0; i < m->n; i++) {
        uint32_t h = (uint32_t)key_hash(m->all[i]->key, m->nkey) & (nslots - 1);
        while (s[h])
            h = (h + 1) & (nslots - 1);
        s[h] = m->all[i];
    }
    free(m->slots);
    m->slots = s;
    m->nslots = nslots;
    return 0;
}

static struct group *group_find_or_add(struct exec *x, const int64_t *key, struct ask_error *err);

static inline bool keys_equal(const int64_t *a, const int64_t *b, int n)
{
    for (int i = 0; i < n; i++) /* a key is a few words: no call to memcmp per cell */
        if (a[i] != b[i])
            return false;
    return true;
}

/* The group of a key. Cells come sorted, so the last group is often the
 * next one's too (always, for an ask without groups). */
static inline struct group *group_for(struct exec *x, const int64_t *key, struct ask_error *err)
{
    struct group_map *m = &x->groups;
    if (m->last && keys_equal(m->last->key, key, m->nkey))
        return m->last;
    return m->last = group_find_or_add(x, key, err);
}

static struct group *group_find_or_add(struct exec *x, const int64_t *key, struct ask_error *err)
{
    struct group_map *m = &x->groups;
    if ((m->n + 1) * 2 > m->nslots && map_grow(m)) {
        ask_fail(err, 500, "internal", "out of memory");
        return NULL;
    }
    uint32_t h = (uint32_t)key_hash(key, m->nkey) & (m->nslots - 1);
    for (; m->slots[h]; h = (h + 1) & (m->nslots - 1))
        if (keys_equal(m->slots[h]->key, key, m->nkey))
            return m->slots[h];
    if ((int64_t)m->n >= x->e->limits.max_groups) {
        ask_fail(err, 422, "too_many_groups",
                 "the answer has more than %d groups; narrow the range or group by fewer keys",
                 x->e->limits.max_groups);
        return NULL;
    }
    struct group *g = group_new(x, key);
    if (m->n == m->cap) {
        uint32_t cap = m->cap ? m->cap * 2 : 64;
        struct group **all = realloc(m->all, sizeof *all * cap);
        if (!all) {
            group_free(x->v, g);
            ask_fail(err, 500, "internal", "out of memory");
            return NULL;
        }
        m->all = all;
        m->cap = cap;
    }
    if (!g) {
        ask_fail(err, 500, "internal", "out of memory");
        return NULL;
    }
    m->all[m->n++] = g;
    m->slots[h] = g;
    return g;
}

/* ---- A segment's columns ----------------------------------------------------------- */

struct seg_columns {
    uint32_t n;
    int64_t *bucket;
    int64_t **keys, **counts;
    void **sums;
    int64_t **vc_off, **vc_codes, **vc_rows;
    struct vc_shared **vc_shared; /* vc_codes and vc_rows, which groups may hold */
};

static void seg_free(const struct sql_view *v, struct seg_columns *c)
{
    free(c->bucket);
    for (int i = 0; c->keys && i < v->ncell_keys; i++)
        free(c->keys[i]);
    for (int i = 0; c->counts && i < v->ncounts; i++)
        free(c->counts[i]);
    for (int i = 0; c->sums && i < v->nsums; i++)
        free(c->sums[i]);
    for (int i = 0; c->vc_off && i < v->nvalue_counts; i++) {
        free(c->vc_off[i]);
        if (c->vc_shared[i]) {
            vc_shared_release(c->vc_shared[i]); /* the arrays live on while groups hold them */
        } else {
            free(c->vc_codes[i]);
            free(c->vc_rows[i]);
        }
    }
    free(c->keys);
    free(c->counts);
    free(c->sums);
    free(c->vc_off);
    free(c->vc_codes);
    free(c->vc_rows);
    free(c->vc_shared);
    memset(c, 0, sizeof *c);
}

/* Elements [first, first + count) of column i into out. The column's
 * checksum is checked once per snapshot and thread (checked.c). */
static int decode_block_into(uint64_t snapshot, const struct format_block *b, int64_t span_start,
                             int i, uint32_t first, uint32_t count, void *out,
                             struct ask_error *err)
{
    struct format_column_info ci = {0};
    format_block_column(b, i, &ci);
    const uint8_t *bytes = b->base + ci.offset;
    bool known = column_was_checked(snapshot, bytes, ci.length, ci.checksum);
    struct format_error ferr;
    if (format_block_decode_slice(b, i, first, count, !known, out, &ferr))
        return ask_fail(err, 500, "corrupt_store", "segment block of span %lld: %s",
                        (long long)span_start, ferr.message);
    if (!known)
        column_mark_checked(snapshot, bytes, ci.length, ci.checksum);
    return 0;
}

static int decode_into(const struct exec *x, const struct store_segment *s, int i,
                       uint32_t first, uint32_t count, void *out, struct ask_error *err)
{
    return decode_block_into(x->snapshot, &s->block, s->span_start, i, first, count, out, err);
}

/* Whether column i's slices cost their own length (format_codec_seeks). */
static bool column_seeks(const struct format_block *b, int i)
{
    struct format_column_info ci = {0};
    format_block_column(b, i, &ci);
    return format_codec_seeks(ci.codec);
}

static int fill_rows(struct vc_shared *s, struct ask_error *err)
{
    struct vc_lazy *l = s->lazy;
    if (l->rows_pending && decode_block_into(l->snapshot, &l->block, l->span_start,
                                             l->rows_column, l->first, s->n, s->rows, err))
        return -1;
    l->rows_pending = false;
    return 0;
}

int vc_shared_fill(struct vc_shared *s, struct ask_error *err)
{
    struct vc_lazy *l = s->lazy;
    if (!l)
        return 0;
    if (fill_rows(s, err) || decode_block_into(l->snapshot, &l->block, l->span_start, l->column,
                                               l->first, s->n, s->codes, err))
        return -1;
    free(l);
    s->lazy = NULL;
    return 0;
}

int vc_shared_rows(struct vc_shared *s, uint32_t i, uint32_t max, int64_t *out, uint32_t *got,
                   struct ask_error *err)
{
    struct vc_lazy *l = s->lazy;
    uint32_t n = max < s->n - i ? max : s->n - i;
    /* Pending rows are in a codec that seeks (runs_into). Once vc_shared_code
     * filled the list (its codes' codec does not seek), they are copied. */
    if (l && l->rows_pending) {
        uint32_t at = l->first + i, to_stride = FORMAT_SEEK_STRIDE - at % FORMAT_SEEK_STRIDE;
        *got = n < to_stride ? n : to_stride;
        return decode_block_into(l->snapshot, &l->block, l->span_start, l->rows_column, at,
                                 *got, out, err);
    }
    memcpy(out, s->rows + i, 8 * (size_t)n);
    *got = n;
    return 0;
}

int vc_shared_code(struct vc_shared *s, uint32_t i, int64_t *code, struct ask_error *err)
{
    const struct vc_lazy *l = s->lazy;
    /* A codec that does not seek walks what lies before the code (DPFOR
     * every exception position: a pick per hour cost more than decoding
     * the whole list once). */
    if (l && column_seeks(&l->block, l->column))
        return decode_block_into(l->snapshot, &l->block, l->span_start, l->column,
                                 l->first + i, 1, code, err);
    if (vc_shared_fill(s, err))
        return -1;
    *code = s->codes[i];
    return 0;
}

/* The number of column (role, index), which must have the type and, unless
 * n is ANY_LENGTH, n elements; -1 with err otherwise. */
#define ANY_LENGTH UINT32_MAX
static int find_column(const struct store_segment *s, uint16_t role, uint16_t index,
                       enum format_type type, uint32_t n, struct ask_error *err)
{
    int i = format_block_find(&s->block, role, index);
    struct format_column_info ci = {0};
    if (i >= 0)
        format_block_column(&s->block, i, &ci);
    if (i < 0 || ci.type != type || (n != ANY_LENGTH && ci.n != n))
        return ask_fail(err, 500, "corrupt_store", "a segment block (span %lld) lacks column "
                        "%u/%u", (long long)s->span_start, role, index);
    return i;
}

/* Elements [first, first + count) of column (role, index), as find_column
 * checks it, in a new array. */
static void *column(const struct exec *x, const struct store_segment *s, uint16_t role,
                    uint16_t index, enum format_type type, uint32_t n, uint32_t first,
                    uint32_t count, struct ask_error *err)
{
    int i = find_column(s, role, index, type, n, err);
    if (i < 0)
        return NULL;
    void *a = malloc((size_t)(count ? count : 1) * format_type_size(type));
    if (!a) {
        ask_fail(err, 500, "internal", "out of memory");
        return NULL;
    }
    if (decode_into(x, s, i, first, count, a, err)) {
        free(a);
        return NULL;
    }
    return a;
}

/* Span rows: pick_family took them because the span lies in range; all
 * of them have bucket index 0. */
static int rows_of_span(uint32_t n, struct seg_columns *c, uint32_t *first, uint32_t *m,
                        struct ask_error *err)
{
    *first = 0;
    *m = n;
    c->bucket = calloc((size_t)n + 1, sizeof *c->bucket);
    return c->bucket ? 0 : ask_fail(err, 500, "internal", "out of memory");
}

/* The rows in range from the family's bucket starts: the bucket column is
 * not read at all, each row's bucket follows from the starts. */
static int rows_by_starts(const struct exec *x, const struct store_segment *s, int base,
                          uint32_t n, int span, int64_t width, int64_t from, int64_t to,
                          struct seg_columns *c, uint32_t *first, uint32_t *m,
                          struct ask_error *err)
{
    int64_t *starts = column(x, s, (uint16_t)(base + STORE_ROLE_BUCKET), 1, FORMAT_I64,
                             (uint32_t)span + 1, 0, (uint32_t)span + 1, err);
    if (!starts)
        return -1;
    bool sane = starts[0] == 0 && starts[span] == n;
    for (int b = 0; b < span && sane; b++)
        sane = starts[b] <= starts[b + 1];
    /* Bucket indexes [bf, bt) lie in [from, to). */
    int bf = 0, bt = 0;
    while (bf < span && s->span_start + bf * width < from)
        bf++;
    for (bt = bf; bt < span && s->span_start + bt * width < to;)
        bt++;
    *first = sane ? (uint32_t)starts[bf] : 0;
    *m = sane ? (uint32_t)(starts[bt] - starts[bf]) : 0;
    c->bucket = sane ? malloc(sizeof *c->bucket * (*m + 1)) : NULL;
    for (int b = bf; c->bucket && b < bt; b++)
        for (int64_t i = starts[b]; i < starts[b + 1]; i++)
            c->bucket[i - starts[bf]] = b;
    free(starts);
    if (!sane)
        return ask_fail(err, 500, "corrupt_store", "segment block of span %lld has bad bucket "
                        "starts", (long long)s->span_start);
    return c->bucket ? 0 : ask_fail(err, 500, "internal", "out of memory");
}

/* Runs [from, to) of value count k into codes and rows at position at;
 * with lazy set, the rows only (none when x->rows_count says the groups'
 * totals come without them and their codec seeks), and *lazy says where
 * the rest lies. */
static int runs_into(const struct exec *x, const struct store_segment *s, int base, int k,
                     int64_t from, int64_t to, int64_t *codes, int64_t *rows, int64_t at,
                     struct vc_lazy *lazy, struct ask_error *err)
{
    int ic = find_column(s, (uint16_t)(base + STORE_ROLE_VC_VALUES), (uint16_t)k, FORMAT_I64,
                         ANY_LENGTH, err);
    int ir = find_column(s, (uint16_t)(base + STORE_ROLE_VC_COUNTS), (uint16_t)k, FORMAT_I64,
                         ANY_LENGTH, err);
    uint32_t count = (uint32_t)(to - from);
    bool rows_pending = lazy && x->rows_count[k] >= 0 && ir >= 0 && column_seeks(&s->block, ir);
    if (ic < 0 || ir < 0 ||
        (!rows_pending && decode_into(x, s, ir, (uint32_t)from, count, rows + at, err)))
        return -1;
    if (lazy) {
        *lazy = (struct vc_lazy){s->block, ic, ir, rows_pending, (uint32_t)from, s->span_start,
                                 x->snapshot};
        return 0;
    }
    return decode_into(x, s, ic, (uint32_t)from, count, codes + at, err);
}

/* Loads the runs of the value counts the ask needs, after seg_load read
 * their offsets: of every row, or (pass set) of the rows that pass only,
 * packed, when those hold under a quarter of the runs. An ask filtered by
 * a key keeps few of a range's cells, and decoding every run of the range
 * to fold a few cells' was most of such an ask (cells' runs are RICE
 * coded, about 3 ns a run). Leaves each offset list relative to the runs
 * loaded, a row that was not loaded with none. */
static int seg_load_runs(struct exec *x, const struct store_segment *s, int base,
                         struct seg_columns *c, const bool *pass, struct ask_error *err)
{
    const uint32_t m = c->n;
    for (int k = 0; k < x->v->nvalue_counts; k++) {
        if (!x->need_vc[k])
            continue;
        int64_t *off = c->vc_off[k], all = off[m] - off[0], wanted = 0;
        for (uint32_t i = 0; pass && i < m; i++)
            wanted += pass[i] ? off[i + 1] - off[i] : 0;
        bool packed = pass && wanted < all / 4;
        int64_t got = packed ? wanted : all;
        c->vc_codes[k] = malloc(sizeof(int64_t) * (size_t)(got + 1));
        c->vc_rows[k] = malloc(sizeof(int64_t) * (size_t)(got + 1));
        /* A rollup's codes wait until a group needs them (struct vc_lazy). */
        bool defer = base && !packed;
        struct vc_lazy *lazy = defer ? malloc(sizeof *lazy) : NULL;
        if (!c->vc_codes[k] || !c->vc_rows[k] || (defer && !lazy)) {
            free(lazy);
            return ask_fail(err, 500, "internal", "out of memory");
        }
        if (!packed) {
            if (runs_into(x, s, base, k, off[0], off[m], c->vc_codes[k], c->vc_rows[k], 0, lazy,
                          err)) {
                free(lazy);
                return -1;
            }
            for (uint32_t i = m + 1; i-- > 0;)
                off[i] -= off[0];
        } else {
            /* Each stretch of passing rows is one slice; off is rewritten
             * behind the reads (row i's new offset once rows < i are done). */
            int64_t at = 0;
            for (uint32_t i = 0; i < m;) {
                if (!pass[i]) {
                    off[i++] = at;
                    continue;
                }
                uint32_t j = i;
                while (j < m && pass[j])
                    j++;
                int64_t start = off[i];
                if (runs_into(x, s, base, k, start, off[j], c->vc_codes[k], c->vc_rows[k], at,
                              NULL, err))
                    return -1;
                for (; i < j; i++)
                    off[i] = at + (off[i] - start);
                at += off[j] - start;
            }
            off[m] = at;
        }
        if (!(c->vc_shared[k] = vc_shared_new(c->vc_codes[k], c->vc_rows[k], (uint32_t)got, lazy))) {
            free(lazy);
            return ask_fail(err, 500, "internal", "out of memory");
        }
    }
    return 0;
}

/* Loads the columns the ask needs of one family, the cells' (base 0) or a
 * rollup's (n its rows, holding only the key it did not roll away), for
 * the rows whose bucket lies in [from, to) only (span rows: all of them). */
static int seg_load(struct exec *x, const struct store_segment *s, int base, bool span_rows,
                    uint32_t n, int span, int64_t width, int64_t from, int64_t to,
                    bool defer_runs, struct seg_columns *c, struct ask_error *err)
{
    const struct sql_view *v = x->v;
    c->keys = calloc((size_t)v->ncell_keys + 1, sizeof *c->keys);
    c->counts = calloc((size_t)v->ncounts + 1, sizeof *c->counts);
    c->sums = calloc((size_t)v->nsums + 1, sizeof *c->sums);
    c->vc_off = calloc((size_t)v->nvalue_counts + 1, sizeof *c->vc_off);
    c->vc_codes = calloc((size_t)v->nvalue_counts + 1, sizeof *c->vc_codes);
    c->vc_rows = calloc((size_t)v->nvalue_counts + 1, sizeof *c->vc_rows);
    c->vc_shared = calloc((size_t)v->nvalue_counts + 1, sizeof *c->vc_shared);
    if (!c->keys || !c->counts || !c->sums || !c->vc_off || !c->vc_codes || !c->vc_rows ||
        !c->vc_shared)
        return ask_fail(err, 500, "internal", "out of memory");
    uint32_t first = 0, m = 0;
    int rc = span_rows ? rows_of_span(n, c, &first, &m, err)
                       : rows_by_starts(x, s, base, n, span, width, from, to, c, &first, &m, err);
    if (rc)
        return -1;
    c->n = m;
    for (int k = 0; k < v->ncell_keys; k++)
        if (x->need_key[k] &&
            !(c->keys[k] = column(x, s, (uint16_t)(base + STORE_ROLE_KEY), (uint16_t)k, FORMAT_I64, n, first, m, err)))
            return -1;
    for (int k = 0; k < v->ncounts; k++)
        if (x->need_count[k] && !(c->counts[k] = column(x, s, (uint16_t)(base + STORE_ROLE_COUNT), (uint16_t)k, FORMAT_I64, n, first, m, err)))
            return -1;
    for (int k = 0; k < v->nsums; k++) {
        bool real = x->types[v->sums[k].fact_column].type == STORE_TYPE_FLOAT;
        if (x->need_sum[k] &&
            !(c->sums[k] = column(x, s, (uint16_t)(base + STORE_ROLE_SUM), (uint16_t)k, real ? FORMAT_F64 : FORMAT_I128, n, first, m, err)))
            return -1;
    }
    for (int k = 0; k < v->nvalue_counts; k++) {
        if (!x->need_vc[k])
            continue;
        int64_t *off = c->vc_off[k] = column(x, s, (uint16_t)(base + STORE_ROLE_VC_OFFSETS), (uint16_t)k, FORMAT_I64, n + 1, first, m + 1, err);
        if (!off)
            return -1;
        int64_t runs = off[m] - off[0];
        for (uint32_t i = 0; i < m; i++)
            if (off[i] > off[i + 1] || off[i] < 0)
                runs = -1;
        if (runs < 0 || runs > FORMAT_MAX_VALUES)
            return ask_fail(err, 500, "corrupt_store", "segment block of span %lld has bad "
                                                       "value-count offsets", (long long)s->span_start);
    }
    return defer_runs ? 0 : seg_load_runs(x, s, base, c, NULL, err);
}

/* ---- Cells into groups ------------------------------------------------------------ */

static bool in_list(const int64_t *codes, int n, int64_t code)
{
    for (int i = 0; i < n; i++)
        if (codes[i] == code)
            return true;
    return false;
}


/* A text condition's verdict on a value: its text tested once per distinct
 * value (memo by id), a range in byte order, a pattern as LIKE. */
static int text_truth(struct exec *x, int k, int64_t id, const char *text, size_t len,
                      bool have_text, struct ask_error *err)
{
    struct bound_cond *bc = &x->b.conds[k];
    enum { MEMO_MAX = 1 << 24 }; /* ids past this are tested each time */
    if (id >= 0 && id < bc->nmemo && bc->memo[id])
        return bc->memo[id] == 2 ? T_TRUE : T_FALSE;
    if (!have_text) {
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
            uint8_t *m = realloc(bc->memo, n);
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
        const struct dim_entry *e;
        if (dim_lookup(x, bc->join, c->keys[ck][i], &e, err))
            return -1;
        id = e->found ? dim_id(x, bc->join, e, bc->dim_value) : -1;
        is_null = id < 0;
    } else {
        code = c->keys[bc->cell_key][i];
        is_null = code == STORE_NULL;
    }
    if (bc->kind == SQL_COND_IS_NULL)
        return is_null;
    if (bc->kind == SQL_COND_IS_NOT_NULL)
        return !is_null;
    if (is_null)
        return T_UNKNOWN;
    if (bc->by_text)
        return bc->is_dim ? text_truth(x, k, id, x->pool.texts[id], x->pool.lens[id], true, err)
                          : text_truth(x, k, code, NULL, 0, false, err);
    bool hit;
    switch (bc->kind) {
    case SQL_COND_EQ:
    case SQL_COND_IN:
        return bc->is_dim ? in_list(x->cond_ids[k], bc->ntexts, id) : in_list(bc->codes, bc->ncodes, code);
    case SQL_COND_NE:
    case SQL_COND_NOT_IN:
        hit = bc->is_dim ? in_list(x->cond_ids[k], bc->ntexts, id) : in_list(bc->codes, bc->ncodes, code);
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
        const struct dim_entry *e;
        if (dim_lookup(x, j, c->keys[ck][i], &e, err))
            return -1;
        *pass = e->found;
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
    struct leaf_ctx ctx = {x, c, i, err};
    int t = pred_eval(x->ask->where, leaf_cb, &ctx);
    if (t < 0)
        return -1;
    *pass = t == T_TRUE;
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
 * id per group key (a fact key's code, a dim value's interned id). */
static int cell_key(struct exec *x, const struct seg_columns *c, uint32_t i, int64_t bucket,
                    int64_t *key, struct ask_error *err)
{
    const struct sql_ask *a = x->ask;
    const struct sql_view *v = x->v;
    if (x->ncal) {
        key[0] = calendar_key(x, bucket);
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
            key[g + 1] = c->keys[vc->cell_key][i];
            continue;
        }
        int ck = join_key(v, vc->join);
        const struct dim_entry *e;
        if (dim_lookup(x, vc->join, c->keys[ck][i], &e, err))
            return -1;
        key[g + 1] = e->found ? dim_id(x, vc->join, e, vc->dim_column - 1) : -1;
    }
    return 0;
}

static int fold_cell(struct exec *x, const struct seg_columns *c, uint32_t i, struct group *g,
                     struct ask_error *err)
{
    const struct sql_view *v = x->v;
    for (int k = 0; k < v->ncounts; k++)
        if (x->need_count[k])
            g->counts[k] += c->counts[k][i];
    for (int k = 0; k < v->nsums; k++) {
        if (!x->need_sum[k])
            continue;
        if (x->types[v->sums[k].fact_column].type == STORE_TYPE_FLOAT) {
            g->real[k] += ((double *)c->sums[k])[i];
        } else {
            __int128 s;
            memcpy(&s, (char *)c->sums[k] + 16 * (size_t)i, 16);
            if (__builtin_add_overflow(g->exact[k], s, &g->exact[k]))
                return ask_fail(err, 422, "overflow", "a sum overflowed 128 bits");
        }
    }
    for (int k = 0; k < v->nvalue_counts; k++) {
        if (!x->need_vc[k])
            continue;
        int64_t r = c->vc_off[k][i], n = c->vc_off[k][i + 1] - r;
        struct vc_acc *acc = &g->vcs[k];
        struct vc_shared *held = vc_acc_lazy(acc); /* a merge reads the group's list */
        if ((n && held && vc_shared_fill(held, err)) ||
            (c->vc_shared[k]->lazy && !vc_acc_lends(acc, n) && vc_shared_fill(c->vc_shared[k], err)))
            return -1;
        if (vc_acc_add_runs(acc, c->vc_shared[k], c->vc_codes[k] + r, c->vc_rows[k] + r, n))
            return ask_fail(err, 500, "internal", "out of memory");
    }
    return 0;
}

static int64_t now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

/* The rollup family of the block the ask can fold instead of its cells:
 * the one that kept only the key the ask reads (or none) and the value
 * counts it needs, over the whole span when the range holds the span and
 * the ask does not group by bucket, else per bucket. Returns its role base,
 * row count and whether its rows are span rows; 0 for the cells. */
static uint16_t pick_family(const struct exec *x, const struct store_segment *s, int span,
                            int64_t width, int64_t from, int64_t to, uint32_t *n,
                            bool *span_rows)
{
    *n = s->block.info.ncells;
    *span_rows = false;
    if (x->read_key < -1 || x->read_key >= STORE_ROLLUP_MAX_KEYS || x->e->limits.cells_only)
        return 0;
    int64_t span_end = s->span_start + span * width;
    bool whole_span = !x->ask->group_by_bucket && s->span_start >= from && span_end <= to;
    for (int whole = whole_span; whole >= 0; whole--) {
        uint16_t base = store_rollup_base(whole, x->read_key);
        int i = format_block_find(&s->block, (uint16_t)(base + STORE_ROLE_BUCKET), 0);
        for (int k = 0; i >= 0 && k < x->v->nvalue_counts; k++)
            if (x->need_vc[k] &&
                format_block_find(&s->block, (uint16_t)(base + STORE_ROLE_VC_OFFSETS), (uint16_t)k) < 0)
                i = -1; /* a marginal without its value counts */
        if (i >= 0) {
            struct format_column_info ci = {0};
            format_block_column(&s->block, i, &ci);
            *n = ci.n;
            *span_rows = whole;
            return base;
        }
    }
    return 0;
}

static int scan_segment(struct exec *x, const struct store_segment *s, int span, int64_t width,
                        int64_t from, int64_t to, struct ask_error *err)
{
    struct seg_columns c = {0};
    uint32_t n;
    bool span_rows;
    uint16_t base = pick_family(x, s, span, width, from, to, &n, &span_rows);
    /* With a filter, which cells pass is known before their runs are read. */
    bool defer_runs = x->filters_cells && x->any_vc;
    int rc = seg_load(x, s, base, span_rows, n, span, width, from, to, defer_runs, &c, err);
    bool *pass = NULL;
    if (rc == 0 && defer_runs) {
        if (!(pass = calloc((size_t)c.n + 1, sizeof *pass)))
            rc = ask_fail(err, 500, "internal", "out of memory");
        for (uint32_t i = 0; rc == 0 && i < c.n; i++) {
            int64_t bucket = s->span_start + c.bucket[i] * width;
            if (bucket >= from && bucket < to)
                rc = cell_passes(x, &c, i, &pass[i], err);
        }
        if (rc == 0)
            rc = seg_load_runs(x, s, base, &c, pass, err);
    }
    int64_t key[65];
    for (uint32_t i = 0; rc == 0 && i < c.n; i++) {
        int64_t bucket = s->span_start + c.bucket[i] * width;
        if (bucket < from || bucket >= to)
            continue;
        bool ok;
        struct group *g;
        x->cells_read++;
        if (pass ? !pass[i] : (rc = cell_passes(x, &c, i, &ok, err)) || !ok)
            continue;
        if ((rc = cell_key(x, &c, i, bucket, key, err)))
            break;
        if (!(g = group_for(x, key, err)))
            rc = -1;
        else
            rc = fold_cell(x, &c, i, g, err);
    }
    free(pass);
    seg_free(x->v, &c);
    return rc;
}

/* A segment's base block, then each delta block by the same rule (a delta
 * carries its own rollups): every accumulator adds, so folding the changes
 * of later commits after the base gives what one merged block would. */
static int scan_with_deltas(struct exec *x, const struct store_segment *s, int width,
                            int64_t from, int64_t to, struct ask_error *err)
{
    int span = store_span_buckets(x->v, width);
    int64_t w = x->v->widths[width];
    int rc = scan_segment(x, s, span, w, from, to, err);
    for (int i = 0; rc == 0 && i < s->ndeltas; i++) {
        struct store_segment d = *s;
        d.block = s->deltas[i].block;
        d.bytes = s->deltas[i].bytes;
        d.len = s->deltas[i].len;
        x->folded_deltas = true;
        rc = scan_segment(x, &d, span, w, from, to, err);
    }
    return rc;
}

static int scan_range(struct exec *x, int width, int64_t from, int64_t to, struct ask_error *err)
{
    struct store_segment_iter it;
    struct store_segment s;
    struct store_error serr;
    if (store_segments_begin(x->r, x->view, width, from, to, &it, &serr))
        return ask_fail(err, 500, "corrupt_store", "%s", serr.message);
    it.raw = true;
    int rc, got;
    for (rc = 0; rc == 0 && (got = store_segments_next(&it, &s, &serr)) == 1;) {
        rc = scan_with_deltas(x, &s, width, from, to, err);
        if (rc == 0 && x->e->limits.max_ask_us > 0 &&
            now_us() - x->started_us > x->e->limits.max_ask_us)
            rc = ask_fail(err, 503, "ask_timeout", "the ask ran past its time limit of %lld ms",
                          (long long)(x->e->limits.max_ask_us / 1000));
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

static int add_piece(struct exec *x, int width, int64_t from, int64_t to, struct ask_error *err)
{
    if (x->npieces == x->pieces_cap) {
        uint32_t cap = x->pieces_cap ? x->pieces_cap * 2 : 16;
        struct scan_piece *p = realloc(x->pieces, sizeof *p * cap);
        if (!p)
            return ask_fail(err, 500, "internal", "out of memory");
        x->pieces = p;
        x->pieces_cap = cap;
    }
    x->pieces[x->npieces++] = (struct scan_piece){width, from, to};
    return 0;
}

/* Covers [from, to) with widths[0..top], widest first, into x->pieces. */
static int cover(struct exec *x, int top, int64_t from, int64_t to, struct ask_error *err)
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
        if (a >= b)
            continue;
        if (add_piece(x, w, a, b, err) || cover(x, w - 1, from, a, err) ||
            cover(x, w - 1, b, to, err))
            return -1;
        return 0;
    }
    return ask_fail(err, 500, "internal", "no width covers the range"); /* widths[0] always does */
}

static int cmp_piece(const void *pa, const void *pb)
{
    const struct scan_piece *a = pa, *b = pb;
    if (a->width != b->width)
        return a->width < b->width ? -1 : 1;
    return a->from < b->from ? -1 : a->from > b->from;
}

/* Reads the pieces, those of one width that touch end to end as one: a
 * calendar bucket's edges meet its neighbour's at the same width (a New
 * York day's hours run on into the next day's), so that each segment is
 * opened once rather than once per bucket. */
static int scan_pieces(struct exec *x, struct ask_error *err)
{
    if (x->npieces > 1) /* an empty range has no pieces, and pieces is then NULL */
        qsort(x->pieces, x->npieces, sizeof *x->pieces, cmp_piece);
    for (uint32_t i = 0; i < x->npieces;) {
        struct scan_piece p = x->pieces[i++];
        while (i < x->npieces && x->pieces[i].width == p.width && x->pieces[i].from == p.to)
            p.to = x->pieces[i++].to;
        if (scan_range(x, p.width, p.from, p.to, err))
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

/* Plans the ask's grouping by time: its bins, or its calendar buckets over
 * the range (each one's cover is its own), into x->pieces. */
static int plan_time(struct exec *x, struct ask_error *err)
{
    const struct sql_ask *a = x->ask;
    int64_t from = x->b.from, to = x->b.to;
    x->bin_width = a->bucket_width;
    x->bin_origin = a->bucket_origin;
    if (!a->bucket_calendar)
        return cover(x, x->v->nwidths - 1, from, to, err);
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
    for (uint32_t i = 0; i < x->ncal; i++)
        if (cover(x, x->v->nwidths - 1, x->cal_edges[i], x->cal_edges[i + 1], err))
            return -1;
    if (x->ncal == 0)
        x->ncal = 0; /* an empty range: no calendar bucket, nothing to read */
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
static int plan_rows_counts(struct exec *x)
{
    const struct sql_view *v = x->v;
    if (!(x->rows_count = malloc(sizeof *x->rows_count * ((size_t)v->nvalue_counts + 1))))
        return -1;
    for (int k = 0; k < v->nvalue_counts; k++) {
        const struct sql_value_count_spec *vs = &v->value_counts[k];
        x->rows_count[k] = -1;
        for (int c = 0; c < v->ncounts; c++)
            if (v->counts[c].fact_column == vs->fact_column && v->counts[c].filter == vs->filter)
                x->rows_count[k] = c;
        if (!x->need_vc[k] || x->types[vs->fact_column].type == STORE_TYPE_TEXT)
            x->rows_count[k] = -1;
        for (int i = 0; i < x->ask->ncolumns; i++) {
            const struct sql_view_column *vc = &v->columns[x->ask->columns[i].view_column];
            if (vc->kind == SQL_COLUMN_MEASURE && vc->measure.value_counts == k &&
                !is_percentile(vc->measure.agg))
                x->rows_count[k] = -1;
        }
        if (x->rows_count[k] >= 0)
            x->need_count[x->rows_count[k]] = true;
    }
    return 0;
}

/* Which keys and accumulators the ask reads. */
static int plan_needs(struct exec *x, struct ask_error *err)
{
    const struct sql_view *v = x->v;
    x->need_key = calloc((size_t)v->ncell_keys + 1, 1);
    x->need_count = calloc((size_t)v->ncounts + 1, 1);
    x->need_sum = calloc((size_t)v->nsums + 1, 1);
    x->need_vc = calloc((size_t)v->nvalue_counts + 1, 1);
    x->dims = calloc((size_t)v->njoins + 1, sizeof *x->dims);
    if (!x->need_key || !x->need_count || !x->need_sum || !x->need_vc || !x->dims)
        return ask_fail(err, 500, "internal", "out of memory");
    for (int j = 0; j < v->njoins; j++)
        x->dims[j].nvalues = v->joins[j].ndim_columns - 1;
    for (int i = 0; i < x->ask->ncolumns; i++) {
        const struct sql_view_column *vc = &v->columns[x->ask->columns[i].view_column];
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
    if (plan_rows_counts(x))
        return ask_fail(err, 500, "internal", "out of memory");
    x->groups.nkey = 1 + x->ask->ngroup_keys;
    /* The keys read: group keys, conditions, and inner joins (they drop
     * cells whose key has no dim row). */
    for (int g = 0; g < x->ask->ngroup_keys; g++) {
        const struct sql_view_column *vc = &v->columns[x->ask->group_keys[g]];
        need_key(x, vc->kind == SQL_COLUMN_FACT_KEY ? vc->cell_key : join_key(v, vc->join));
    }
    for (int k = 0; k < x->b.nconds; k++)
        need_key(x, x->b.conds[k].is_dim ? join_key(v, x->b.conds[k].join) : x->b.conds[k].cell_key);
    x->filters_cells = x->b.nconds > 0;
    x->where_all_and = pred_all_and(x->ask->where);
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
    /* A dim condition's texts interned where the dim values met will be:
     * equal texts, equal ids. */
    x->cond_ids = calloc((size_t)x->b.nconds + 1, sizeof *x->cond_ids);
    if (!x->cond_ids)
        return ask_fail(err, 500, "internal", "out of memory");
    for (int k = 0; k < x->b.nconds; k++) {
        const struct bound_cond *bc = &x->b.conds[k];
        if (!bc->is_dim || bc->by_text)
            continue; /* a text test reads the value's own text */
        if (!(x->cond_ids[k] = malloc(sizeof **x->cond_ids * ((size_t)bc->ntexts + 1))))
            return ask_fail(err, 500, "internal", "out of memory");
        for (int i = 0; i < bc->ntexts; i++)
            if ((x->cond_ids[k][i] = pool_intern(&x->pool, bc->texts[i], bc->lens[i], false)) < 0)
                return ask_fail(err, 500, "internal", "out of memory");
    }
    return 0;
}

/* Groups whose every row a delta block took away: there are none in
 * PostgreSQL's answer. Fewer than no rows means a delta took away what was
 * never there (the writer only checks that when it folds deltas): an error,
 * never an answer. */
static int drop_empty_groups(struct exec *x, struct ask_error *err)
{
    struct group_map *m = &x->groups;
    uint32_t kept = 0;
    for (uint32_t i = 0; i < m->n; i++)
        if (m->all[i]->counts[0] < 0)
            return ask_fail(err, 500, "corrupt_store", "a delta block takes away rows that "
                            "were never stored (straum-dump verify names the segment)");
    for (uint32_t i = 0; i < m->n; i++) {
        if (m->all[i]->counts[0] != 0)
            m->all[kept++] = m->all[i];
        else
            group_free(x->v, m->all[i]);
    }
    m->n = kept;
    m->last = NULL;
    if (m->slots)
        memset(m->slots, 0, sizeof *m->slots * m->nslots);
    for (uint32_t i = 0; i < m->n; i++) {
        uint32_t h = (uint32_t)key_hash(m->all[i]->key, m->nkey) & (m->nslots - 1);
        while (m->slots[h])
            h = (h + 1) & (m->nslots - 1);
        m->slots[h] = m->all[i];
    }
    return 0;
}

int exec_scan(struct exec *x, struct ask_error *err)
{
    x->started_us = now_us();
    if (plan_needs(x, err) || plan_time(x, err) || scan_pieces(x, err))
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
    for (uint32_t i = 0; i < x->groups.n; i++)
        group_free(x->v, x->groups.all[i]);
    free(x->groups.all);
    free(x->groups.slots);
    for (int i = 0; i < x->pool.n; i++)
        free(x->pool.texts[i]);
    free(x->pool.texts);
    free(x->pool.lens);
    for (int j = 0; x->dims && j < x->v->njoins; j++) {
        free(x->dims[j].ids);
        free(x->dims[j].slots);
        free(x->dims[j].direct);
    }
    free(x->dims);
    for (int k = 0; x->cond_ids && k < x->b.nconds; k++)
        free(x->cond_ids[k]);
    free(x->cond_ids);
    free(x->need_key);
    free(x->need_count);
    free(x->need_sum);
    free(x->need_vc);
    free(x->rows_count);
    free(x->pieces);
    free(x->cal_edges);
    free(x->cal_keys);
    bound_free(&x->b);
}
