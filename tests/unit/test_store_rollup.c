/* test_store_rollup.c -- the rollup families of segment blocks against brute
 * force (SPEC.md 4.3 "Segments and blocks", store/rollup.c).
 *
 * For every segment of every view and width, the cells are decoded and each
 * family is recomputed from them by brute force: bucket totals, bucket
 * marginals, span total and span marginals (counts and exact sums added,
 * float sums added, value counts merged by code). Every family the block
 * holds must equal its brute force column by column, and the block must
 * hold exactly the families the rules ask for, and no other column:
 *
 *   bucket totals     always
 *   bucket marginal   views of two or more keys, when it has at most half
 *                     the rows of the cells; without its value counts
 *                     (roles base+5..7) unless those have at most half the
 *                     cells' runs
 *   span total        at the view's widest width only
 *   span marginal     at the widest width only, by the same halving rules
 *
 * Per-bucket families (and the cells) carry bucket starts (role base+1,
 * index 1) that must point at each bucket's first row; span families do not.
 * Then rows are deleted (cells emptied, whole buckets gone, a key value
 * gone) and everything is checked again. store_verify_segment must pass on
 * every segment throughout.
 *
 * Two stores: the shared fixture (a text key, a numeric and a float sum, a
 * percentile over a many-valued column that keeps marginals' value counts
 * out by the runs rule, count(DISTINCT)), and one of its own, "trips" keyed
 * by 200 zones x 2 kinds (so marginals of kind are certainly written) and
 * "by_zone" keyed by zone alone (no bucket marginal, but a span marginal). */
#include "tests/unit/store_fixture.h"

#include <inttypes.h>

enum {
    MAX_KEYS = 4,
    MAX_COUNTS = 8,
    MAX_SUMS = 4,
    MAX_VCS = 4,
    MAX_VIEWS = 2,
    MAX_WIDTHS = 3,
    /* family f has column roles 7f + 1 .. 7f + 7: 0 the cells, 1 bucket
     * totals, 2 + k bucket marginals, 18 span total, 19 + k span marginals,
     * 35 the span cells */
    SPAN_CELLS = STORE_ROLLUP_SPAN_CELLS / STORE_ROLE_TOTAL,
    NFAMILIES = SPAN_CELLS + 1,
    ALL_KEYS = -2, /* the cells and the span cells: every key column */
};

static int family_of(bool span, int key) { return store_rollup_base(span, key) / STORE_ROLE_TOTAL; }
static bool family_span(int f) { return f >= 18; }
static int family_key(int f)
{
    return f == 0 || f == SPAN_CELLS ? ALL_KEYS : f - (family_span(f) ? 19 : 2);
}

/* How a block holds a family. */
enum held { ABSENT, WITHOUT_VCS, WHOLE };
static const char *held_name[] = {"absent", "present without value counts", "present whole"};

/* ---- A block's rows: the cells, or one family --------------------------------- */

/* What every row set of one view looks like. */
struct shape {
    const struct sql_view *v;
    bool real[MAX_SUMS]; /* a float sum (f64), else exact (i128) */
};

struct rows {
    uint32_t n;
    int64_t *bucket;
    int64_t *keys[MAX_KEYS]; /* NULL for the keys a family rolled away */
    int64_t *counts[MAX_COUNTS];
    void *sums[MAX_SUMS];    /* __int128[n] or double[n] */
    bool has_vcs;            /* the value counts below are there */
    int64_t *vc_off[MAX_VCS], *vc_codes[MAX_VCS], *vc_rows[MAX_VCS];
};

static void rows_free(struct rows *r)
{
    free(r->bucket);
    for (int i = 0; i < MAX_KEYS; i++)
        free(r->keys[i]);
    for (int i = 0; i < MAX_COUNTS; i++)
        free(r->counts[i]);
    for (int i = 0; i < MAX_SUMS; i++)
        free(r->sums[i]);
    for (int i = 0; i < MAX_VCS; i++) {
        free(r->vc_off[i]);
        free(r->vc_codes[i]);
        free(r->vc_rows[i]);
    }
    memset(r, 0, sizeof *r);
}

static struct shape shape_of(struct store *s, int view)
{
    struct shape sh = {.v = &store_views(s)->views[view]};
    const struct store_column_type *types = store_fact_types(s, view);
    cr_assert(sh.v->ncell_keys <= MAX_KEYS && sh.v->ncounts <= MAX_COUNTS &&
              sh.v->nsums <= MAX_SUMS && sh.v->nvalue_counts <= MAX_VCS);
    for (int k = 0; k < sh.v->nsums; k++)
        sh.real[k] = types[sh.v->sums[k].fact_column].type == STORE_TYPE_FLOAT;
    return sh;
}

static bool has_column(const struct format_block *b, int role, int index)
{
    return format_block_find(b, (uint16_t)role, (uint16_t)index) >= 0;
}

/* Column (role, index) of a block, checked for type and length; malloc'd. */
static void *decode(const struct format_block *b, int role, int index, enum format_type type,
                    uint32_t n)
{
    int col = format_block_find(b, (uint16_t)role, (uint16_t)index);
    cr_assert_geq(col, 0, "column (role %d, index %d) is missing", role, index);
    struct format_column_info ci;
    format_block_column(b, col, &ci);
    cr_assert_eq(ci.type, type, "column (role %d, index %d) has type %d", role, index, ci.type);
    cr_assert_eq(ci.n, n, "column (role %d, index %d) has %u values, want %u", role, index, ci.n, n);
    void *a = malloc(((size_t)n + 1) * format_type_size(type));
    struct format_error ferr;
    cr_assert_eq(format_block_decode(b, col, a, &ferr), 0, "%s", ferr.message);
    return a;
}

/* The buckets a block of this view spans (store_span_buckets of its width). */
static int span_of(const struct sql_view *v, const struct format_block *b)
{
    for (int w = 0; w < v->nwidths; w++)
        if (v->widths[w] == b->info.width)
            return store_span_buckets(v, w);
    cr_assert_fail("a block of width %" PRId64 " the view does not have", b->info.width);
    return 0;
}

/* A per-bucket row set's bucket starts: entry k is its first row of bucket
 * index k or later, the last entry its row count. */
static void assert_bucket_starts(const struct sql_view *v, const struct format_block *b, int base,
                                 const struct rows *r)
{
    int span = span_of(v, b);
    int64_t *starts = decode(b, base + STORE_ROLE_BUCKET, 1, FORMAT_I64, (uint32_t)span + 1);
    uint32_t i = 0;
    for (int k = 0; k <= span; k++) {
        while (i < r->n && r->bucket[i] < k)
            i++;
        cr_assert_eq(starts[k], i, "role %d: bucket %d starts at row %" PRId64 ", not %u",
                     base + STORE_ROLE_BUCKET, k, starts[k], i);
    }
    free(starts);
}

/* The rows of family f of a block, as many as its bucket column has. */
static void decode_rows(const struct format_block *b, const struct shape *sh, int f,
                        struct rows *r)
{
    const struct sql_view *v = sh->v;
    int base = f * STORE_ROLE_TOTAL, key = family_key(f);
    struct format_column_info ci;
    int col = format_block_find(b, (uint16_t)(base + STORE_ROLE_BUCKET), 0);
    cr_assert_geq(col, 0, "family %d has no bucket column", f);
    format_block_column(b, col, &ci);
    uint32_t n = ci.n;
    memset(r, 0, sizeof *r);
    r->n = n;
    r->bucket = decode(b, base + STORE_ROLE_BUCKET, 0, FORMAT_I64, n);
    if (!family_span(f))
        assert_bucket_starts(sh->v, b, base, r);
    for (int k = 0; k < v->ncell_keys; k++)
        if (key == ALL_KEYS || key == k)
            r->keys[k] = decode(b, base + STORE_ROLE_KEY, k, FORMAT_I64, n);
    for (int k = 0; k < v->ncounts; k++)
        r->counts[k] = decode(b, base + STORE_ROLE_COUNT, k, FORMAT_I64, n);
    for (int k = 0; k < v->nsums; k++)
        r->sums[k] = decode(b, base + STORE_ROLE_SUM, k, sh->real[k] ? FORMAT_F64 : FORMAT_I128, n);
    r->has_vcs = v->nvalue_counts == 0 || has_column(b, base + STORE_ROLE_VC_OFFSETS, 0);
    for (int k = 0; r->has_vcs && k < v->nvalue_counts; k++) {
        r->vc_off[k] = decode(b, base + STORE_ROLE_VC_OFFSETS, k, FORMAT_I64, n + 1);
        cr_assert_eq(r->vc_off[k][0], 0);
        for (uint32_t i = 0; i < n; i++)
            cr_assert_leq(r->vc_off[k][i], r->vc_off[k][i + 1]);
        uint32_t runs = (uint32_t)r->vc_off[k][n];
        r->vc_codes[k] = decode(b, base + STORE_ROLE_VC_VALUES, k, FORMAT_I64, runs);
        r->vc_rows[k] = decode(b, base + STORE_ROLE_VC_COUNTS, k, FORMAT_I64, runs);
    }
}

/* ---- Brute force ------------------------------------------------------------ */

struct group {
    int64_t bucket, code[MAX_KEYS]; /* the key's codes, 0 where rolled away */
};

static int group_cmp(const void *pa, const void *pb)
{
    const struct group *a = pa, *b = pb;
    if (a->bucket != b->bucket)
        return a->bucket < b->bucket ? -1 : 1;
    for (int k = 0; k < MAX_KEYS; k++)
        if (a->code[k] != b->code[k])
            return a->code[k] < b->code[k] ? -1 : 1;
    return 0;
}

/* Row i's group in a family (span, key): key ALL_KEYS keeps every key. */
static struct group group_of(const struct rows *src, int nkeys, bool span, int key, uint32_t i)
{
    struct group g = {span ? 0 : src->bucket[i], {0}};
    for (int k = 0; k < nkeys; k++)
        if (key == ALL_KEYS || key == k)
            g.code[k] = src->keys[k][i];
    return g;
}

struct run {
    uint32_t group;
    int64_t code, rows;
};

static int run_cmp(const void *pa, const void *pb)
{
    const struct run *a = pa, *b = pb;
    if (a->group != b->group)
        return a->group < b->group ? -1 : 1;
    return a->code < b->code ? -1 : a->code > b->code;
}

/* Value count k of src merged per group: every run tagged with its row's
 * group, sorted by (group, code), equal codes added. */
static void brute_vc(const struct rows *src, const uint32_t *gi, int k, struct rows *out)
{
    size_t total = (size_t)src->vc_off[k][src->n], used = 0;
    struct run *runs = malloc(sizeof *runs * (total + 1));
    for (uint32_t i = 0; i < src->n; i++)
        for (int64_t j = src->vc_off[k][i]; j < src->vc_off[k][i + 1]; j++)
            runs[used++] = (struct run){gi[i], src->vc_codes[k][j], src->vc_rows[k][j]};
    qsort(runs, total, sizeof *runs, run_cmp);
    size_t m = 0;
    for (size_t j = 0; j < total; j++) {
        if (m > 0 && runs[m - 1].group == runs[j].group && runs[m - 1].code == runs[j].code)
            runs[m - 1].rows += runs[j].rows;
        else
            runs[m++] = runs[j];
    }
    out->vc_off[k] = calloc((size_t)out->n + 1, 8);
    out->vc_codes[k] = malloc(8 * (m + 1));
    out->vc_rows[k] = malloc(8 * (m + 1));
    for (size_t j = 0; j < m; j++) {
        out->vc_codes[k][j] = runs[j].code;
        out->vc_rows[k][j] = runs[j].rows;
        out->vc_off[k][runs[j].group + 1]++;
    }
    for (uint32_t g = 0; g < out->n; g++)
        out->vc_off[k][g + 1] += out->vc_off[k][g];
    free(runs);
}

/* The family (span, key) of src's rows, value counts always. Rows are added
 * in src's order, as the writer adds them (rows sorted by (bucket, keys)), so
 * that float sums round as the writer's do and compare exactly. */
static void brute_family(const struct shape *sh, const struct rows *src, bool span, int key,
                         struct rows *out)
{
    const struct sql_view *v = sh->v;
    uint32_t n = src->n, ng = 0;
    struct group *groups = malloc(sizeof *groups * (n + 1));
    uint32_t *gi = malloc(sizeof *gi * (n + 1));
    for (uint32_t i = 0; i < n; i++)
        groups[i] = group_of(src, v->ncell_keys, span, key, i);
    qsort(groups, n, sizeof *groups, group_cmp);
    for (uint32_t i = 0; i < n; i++)
        if (ng == 0 || group_cmp(&groups[ng - 1], &groups[i]) != 0)
            groups[ng++] = groups[i];
    for (uint32_t i = 0; i < n; i++) {
        struct group g = group_of(src, v->ncell_keys, span, key, i);
        gi[i] = (uint32_t)((struct group *)bsearch(&g, groups, ng, sizeof g, group_cmp) - groups);
    }

    memset(out, 0, sizeof *out);
    out->n = ng;
    out->has_vcs = true;
    out->bucket = malloc(8 * ((size_t)ng + 1));
    for (uint32_t g = 0; g < ng; g++)
        out->bucket[g] = groups[g].bucket;
    for (int k = 0; k < v->ncell_keys; k++) {
        if (key != ALL_KEYS && key != k)
            continue;
        out->keys[k] = malloc(8 * ((size_t)ng + 1));
        for (uint32_t g = 0; g < ng; g++)
            out->keys[k][g] = groups[g].code[k];
    }
    for (int k = 0; k < v->ncounts; k++) {
        out->counts[k] = calloc((size_t)ng + 1, 8);
        for (uint32_t i = 0; i < n; i++)
            out->counts[k][gi[i]] += src->counts[k][i];
    }
    for (int k = 0; k < v->nsums; k++) {
        out->sums[k] = calloc((size_t)ng + 1, 16);
        for (uint32_t i = 0; i < n; i++) {
            if (sh->real[k])
                ((double *)out->sums[k])[gi[i]] += ((const double *)src->sums[k])[i];
            else
                ((__int128 *)out->sums[k])[gi[i]] += ((const __int128 *)src->sums[k])[i];
        }
    }
    for (int k = 0; k < v->nvalue_counts; k++)
        brute_vc(src, gi, k, out);
    free(groups);
    free(gi);
}

/* ---- Comparing ---------------------------------------------------------------- */

static void assert_i64s(const int64_t *got, const int64_t *want, size_t n, const char *what,
                        const char *column)
{
    for (size_t i = 0; i < n; i++)
        cr_assert_eq(got[i], want[i], "%s: %s[%zu] is %" PRId64 ", brute force %" PRId64, what,
                     column, i, got[i], want[i]);
}

/* got (from the block) equals want (brute force), but for the value counts
 * when the block left them out. */
static void assert_rows_equal(const struct shape *sh, const struct rows *got,
                              const struct rows *want, const char *what)
{
    const struct sql_view *v = sh->v;
    cr_assert_eq(got->n, want->n, "%s: %u rows, brute force %u", what, got->n, want->n);
    assert_i64s(got->bucket, want->bucket, want->n, what, "bucket");
    for (int k = 0; k < v->ncell_keys; k++)
        if (want->keys[k])
            assert_i64s(got->keys[k], want->keys[k], want->n, what, "key");
    for (int k = 0; k < v->ncounts; k++)
        assert_i64s(got->counts[k], want->counts[k], want->n, what, "count");
    for (int k = 0; k < v->nsums; k++)
        for (uint32_t i = 0; i < want->n; i++) {
            if (sh->real[k]) {
                double g = ((double *)got->sums[k])[i], w = ((double *)want->sums[k])[i];
                cr_assert(g == w, "%s: float sum %d row %u is %.17g, brute force %.17g", what, k, i,
                          g, w);
            } else {
                __int128 g = ((__int128 *)got->sums[k])[i], w = ((__int128 *)want->sums[k])[i];
                cr_assert(g == w, "%s: exact sum %d row %u is %" PRId64 ", brute force %" PRId64,
                          what, k, i, (int64_t)g, (int64_t)w);
            }
        }
    for (int k = 0; got->has_vcs && k < v->nvalue_counts; k++) {
        assert_i64s(got->vc_off[k], want->vc_off[k], (size_t)want->n + 1, what, "vc offsets");
        size_t runs = (size_t)want->vc_off[k][want->n];
        assert_i64s(got->vc_codes[k], want->vc_codes[k], runs, what, "vc codes");
        assert_i64s(got->vc_rows[k], want->vc_rows[k], runs, what, "vc rows");
        for (uint32_t i = 0; i < got->n; i++) /* as the spec says, not only as brute force does */
            for (int64_t j = got->vc_off[k][i]; j < got->vc_off[k][i + 1]; j++) {
                cr_assert_gt(got->vc_rows[k][j], 0, "%s: a run without rows", what);
                cr_assert(j == got->vc_off[k][i] || got->vc_codes[k][j - 1] < got->vc_codes[k][j],
                          "%s: runs of row %u not ascending by code", what, i);
            }
    }
}

/* ---- Checking a store ----------------------------------------------------------- */

/* What was found, per view and width. */
struct tally {
    int blocks;
    int present[NFAMILIES];     /* whole or without value counts */
    int without_vcs[NFAMILIES];
};

/* The halving rules, for a family allowed at all: a marginal with more than
 * half the cells' rows is left out; one with more than half the cells' runs
 * (in any value count) keeps its counts and sums only, unless keep_vcs (a
 * bucket marginal above the finest width keeps them whatever their size). */
static enum held expected(const struct shape *sh, bool allowed, int key, const struct rows *fam,
                          const struct rows *cells, bool keep_vcs)
{
    if (!allowed)
        return ABSENT;
    if (key == -1)
        return WHOLE;
    if ((uint64_t)fam->n * 2 > cells->n)
        return ABSENT;
    for (int k = 0; k < sh->v->nvalue_counts && !keep_vcs; k++)
        if (fam->vc_off[k][fam->n] * 2 > cells->vc_off[k][cells->n])
            return WITHOUT_VCS;
    return WHOLE;
}

static int family_columns(const struct shape *sh, int f, enum held h)
{
    const struct sql_view *v = sh->v;
    if (h == ABSENT)
        return 0;
    int buckets = family_span(f) ? 1 : 2; /* per-bucket: with bucket starts */
    int keys = family_key(f) == ALL_KEYS ? v->ncell_keys : family_key(f) >= 0;
    /* Offsets, codes and rows; a rollup family its running rows too. */
    int vcs = h == WHOLE ? (f == 0 ? 3 : 4) * v->nvalue_counts : 0;
    return buckets + keys + v->ncounts + v->nsums + vcs;
}

/* Every column of the block belongs to the cells or to a family found, with
 * a role and index that family has. */
static void assert_no_stray_columns(const struct format_block *b, const struct shape *sh,
                                    const enum held held[NFAMILIES], const char *where)
{
    const struct sql_view *v = sh->v;
    int want = 0;
    for (int f = 0; f < NFAMILIES; f++)
        want += family_columns(sh, f, held[f]);
    cr_assert_eq(b->ncolumns, want, "%s: %d columns, the families found have %d", where,
                 b->ncolumns, want);
    for (int i = 0; i < b->ncolumns; i++) {
        struct format_column_info ci;
        format_block_column(b, i, &ci);
        int f = (ci.role - 1) / STORE_ROLE_TOTAL, role = (ci.role - 1) % STORE_ROLE_TOTAL + 1;
        cr_assert(ci.role >= 1 && f < NFAMILIES && held[f] != ABSENT, "%s: stray column role %u",
                  where, ci.role);
        int vcs = held[f] == WHOLE ? v->nvalue_counts : 0;
        int limit[] = {0, family_span(f) ? 1 : 2, v->ncell_keys, v->ncounts, v->nsums, vcs, vcs, vcs};
        if (role == STORE_ROLE_KEY && f > 0 && f != SPAN_CELLS)
            cr_assert_eq(ci.index, family_key(f), "%s: family %d has key column %u", where, f,
                         ci.index);
        else if (role == STORE_ROLE_VC_COUNTS && f > 0 && ci.index >= STORE_VC_CUMULATIVE)
            cr_assert_lt(ci.index - STORE_VC_CUMULATIVE, vcs, "%s: running rows %u", where,
                         ci.index);
        else
            cr_assert_lt(ci.index, limit[role], "%s: role %u index %u", where, ci.role, ci.index);
    }
}

/* A rollup family's value counts read by position: codes and running rows
 * (STORE_VC_CUMULATIVE) in RAW or BITPACK, element j the rows of its row's
 * runs up to j. */
static void assert_running_rows(const struct format_block *b, const struct shape *sh, int base,
                                const struct rows *rows, const char *what)
{
    for (int k = 0; k < sh->v->nvalue_counts; k++) {
        int ic = format_block_find(b, (uint16_t)(base + STORE_ROLE_VC_VALUES), (uint16_t)k);
        int ir = format_block_find(b, (uint16_t)(base + STORE_ROLE_VC_COUNTS),
                                   (uint16_t)(STORE_VC_CUMULATIVE + k));
        cr_assert(ic >= 0 && ir >= 0, "%s: value count %d has no running rows", what, k);
        struct format_seek codes, cum;
        struct format_error ferr;
        cr_assert_eq(format_block_seek(b, ic, true, &codes, &ferr), 0, "%s: codes: %s", what,
                     ferr.message);
        cr_assert_eq(format_block_seek(b, ir, true, &cum, &ferr), 0, "%s: running rows: %s",
                     what, ferr.message);
        for (uint32_t i = 0; i < rows->n; i++) {
            int64_t sum = 0;
            for (int64_t j = rows->vc_off[k][i]; j < rows->vc_off[k][i + 1]; j++) {
                sum += rows->vc_rows[k][j];
                cr_assert_eq(format_seek_get(&codes, (uint32_t)j), rows->vc_codes[k][j],
                             "%s: code %" PRId64 " read by position", what, j);
                cr_assert_eq(format_seek_get(&cum, (uint32_t)j), sum,
                             "%s: running rows %" PRId64, what, j);
            }
        }
    }
}

/* Checks how the block holds family f against the rules (expect) and its
 * contents against brute force (want; NULL when it must be absent). */
static enum held check_family(const struct format_block *b, const struct shape *sh, int f,
                              const struct rows *want, enum held expect, const char *where)
{
    int base = f * STORE_ROLE_TOTAL;
    char what[160];
    snprintf(what, sizeof what, "%s, family %d (%s, key %d)", where, f,
             family_span(f) ? "span" : "bucket", family_key(f));
    enum held got = ABSENT;
    struct rows rows;
    if (has_column(b, base + STORE_ROLE_BUCKET, 0)) {
        decode_rows(b, sh, f, &rows);
        got = rows.has_vcs ? WHOLE : WITHOUT_VCS;
    }
    cr_assert_eq(got, expect, "%s: %s, should be %s", what, held_name[got], held_name[expect]);
    if (got == WHOLE && f > 0)
        assert_running_rows(b, sh, base, &rows, what);
    if (got != ABSENT) {
        assert_rows_equal(sh, &rows, want, what);
        rows_free(&rows);
    }
    return got;
}

static void check_segment(struct store_read *r, const struct store_segment *seg,
                          const struct shape *sh, struct tally *t)
{
    const struct sql_view *v = sh->v;
    const struct format_block *b = &seg->block;
    struct store_error err;
    char where[96];
    snprintf(where, sizeof where, "view %s width %d span %" PRId64, v->name, seg->width,
             seg->span_start);
    cr_assert_eq(store_verify_segment(r, seg, &err), 0, "%s", err.message);
    cr_assert_gt(b->info.ncells, 0, "%s: an empty block", where);

    struct rows cells;
    decode_rows(b, sh, 0, &cells);
    cr_assert_eq(cells.n, b->info.ncells);
    cr_assert(cells.has_vcs);
    bool widest = seg->width == v->nwidths - 1;
    int nkeys = v->ncell_keys < STORE_ROLLUP_MAX_KEYS ? v->ncell_keys : STORE_ROLLUP_MAX_KEYS;
    enum held held[NFAMILIES] = {WHOLE}; /* the cells */
    for (int key = -1; key < nkeys; key++) {
        /* Per bucket: totals always, marginals for views of two keys. */
        int fb = family_of(false, key), fs = family_of(true, key);
        struct rows per_bucket, span;
        brute_family(sh, &cells, false, key, &per_bucket);
        held[fb] = check_family(b, sh, fb, &per_bucket,
                                expected(sh, key < 0 || nkeys > 1, key, &per_bucket, &cells,
                                         seg->width > 0),
                                where);
        /* Over the span, at the widest width only. The writer merges a span
         * family from its bucket family when the block holds that one whole
         * (SPEC.md), else from the cells; brute force sums the same rows, so
         * float sums round the same way. Counts, exact sums and runs come out
         * the same either way. */
        if (widest) {
            brute_family(sh, held[fb] == WHOLE ? &per_bucket : &cells, true, key, &span);
            held[fs] = check_family(b, sh, fs, &span, expected(sh, true, key, &span, &cells, false),
                                   where);
            rows_free(&span);
        } else {
            held[fs] = check_family(b, sh, fs, NULL, ABSENT, where);
        }
        rows_free(&per_bucket);
    }
    /* The span cells: every key kept, at the widest width of a view of two
     * keys or more, under the marginals' rules (half the cells' rows, half
     * their runs). */
    if (widest && v->ncell_keys >= 2) {
        struct rows span;
        brute_family(sh, &cells, true, ALL_KEYS, &span);
        held[SPAN_CELLS] = check_family(b, sh, SPAN_CELLS, &span,
                                        expected(sh, true, ALL_KEYS, &span, &cells, false), where);
        rows_free(&span);
    } else {
        held[SPAN_CELLS] = check_family(b, sh, SPAN_CELLS, NULL, ABSENT, where);
    }
    assert_no_stray_columns(b, sh, held, where);
    t->blocks++;
    for (int f = 0; f < NFAMILIES; f++) {
        t->present[f] += held[f] != ABSENT;
        t->without_vcs[f] += held[f] == WITHOUT_VCS;
    }
    rows_free(&cells);
}

/* Checks every segment of the store; t[view][width] says what was found. */
static void check_store(struct store *s, struct tally t[MAX_VIEWS][MAX_WIDTHS])
{
    struct store_read *r;
    struct store_error err;
    memset(t, 0, sizeof(struct tally) * MAX_VIEWS * MAX_WIDTHS);
    cr_assert_eq(store_read_begin(s, &r, &err), 0, "%s", err.message);
    cr_assert_leq(store_views(s)->nviews, MAX_VIEWS);
    for (int v = 0; v < store_views(s)->nviews; v++) {
        struct shape sh = shape_of(s, v);
        cr_assert_leq(sh.v->nwidths, MAX_WIDTHS);
        for (int w = 0; w < sh.v->nwidths; w++) {
            struct store_segment_iter it;
            struct store_segment seg;
            cr_assert_eq(store_segments_begin(r, v, w, INT64_MIN, INT64_MAX, &it, &err), 0, "%s",
                         err.message);
            it.merged = true; /* whole cells */
            int rc;
            while ((rc = store_segments_next(&it, &seg, &err)) == 1)
                check_segment(r, &seg, &sh, &t[v][w]);
            cr_assert_eq(rc, 0, "%s", err.message);
            store_segments_end(&it);
            cr_assert_gt(t[v][w].blocks, 0, "view %s width %d has no segment", sh.v->name, w);
        }
    }
    store_read_end(r);
}

/* What holds in every store: bucket totals in every block, the span total in
 * every block of the widest width, no span family below it, and no bucket
 * marginal in a view of one key. (check_segment checked each block against
 * the rules already; these say the stores exercise them.) */
static void assert_common_rules(struct store *s, struct tally t[MAX_VIEWS][MAX_WIDTHS])
{
    for (int v = 0; v < store_views(s)->nviews; v++) {
        const struct sql_view *view = &store_views(s)->views[v];
        for (int w = 0; w < view->nwidths; w++) {
            const struct tally *x = &t[v][w];
            cr_assert_eq(x->present[family_of(false, -1)], x->blocks, "%s/%d: bucket totals",
                         view->name, w);
            int span_families = 0;
            for (int f = 18; f < NFAMILIES; f++)
                span_families += x->present[f];
            if (w == view->nwidths - 1)
                cr_assert_eq(x->present[family_of(true, -1)], x->blocks, "%s/%d: span total",
                             view->name, w);
            else
                cr_assert_eq(span_families, 0, "%s/%d: span families below the widest width",
                             view->name, w);
            if (view->ncell_keys == 1)
                cr_assert_eq(x->present[family_of(false, 0)], 0,
                             "%s/%d: a bucket marginal of the only key", view->name, w);
            for (int k = 0; w > 0 && k < view->ncell_keys && k < STORE_ROLLUP_MAX_KEYS; k++)
                cr_assert_eq(x->without_vcs[family_of(false, k)], 0,
                             "%s/%d: a bucket marginal above the finest width without its "
                             "value counts", view->name, w);
        }
    }
}

static void commit(struct store *s, uint64_t lsn)
{
    struct store_error err;
    cr_assert_eq(store_commit(s, &(struct store_position){.lsn = lsn}, &err), 0, "%s",
                 err.message);
}

/* ---- The fixture store ------------------------------------------------------------ */

Test(store_rollup, fixture_families_equal_brute_force)
{
    char dir[64];
    struct store *s = fixture_create(dir);
    enum { N = 8000 }; /* enough that a weekly span total merges > 4096 fare runs */
    struct ride *rides = malloc(sizeof *rides * N);
    uint64_t rng = 11;
    for (int i = 0; i < N; i++) {
        rides[i] = fixture_ride(&rng);
        fixture_apply(s, &rides[i], +1);
    }
    commit(s, 1);
    struct tally t[MAX_VIEWS][MAX_WIDTHS];
    check_store(s, t);
    assert_common_rules(s, t);
    /* rides (zone, kind): a kind marginal per hour has few rows, but its fare
     * percentile keeps about as many runs as the cells: it comes without. */
    cr_assert_gt(t[0][0].without_vcs[family_of(false, 1)], 0);

    /* Take a third of the rides away, and every ride of the first two days:
     * cells and whole buckets empty. */
    int64_t day2 = (1704067200LL + 2 * 86400) * 1000000LL;
    for (int i = 0; i < N; i++)
        if (i % 3 == 0 || rides[i].at < day2)
            fixture_apply(s, &rides[i], -1);
    commit(s, 2);
    check_store(s, t);
    assert_common_rules(s, t);

    store_close(s);
    free(rides);
    fixture_remove(dir);
}

/* ---- A store of its own: many zones x two kinds ---------------------------------- */

#define TRIP_VIEWS                                                                        \
    "CREATE VIEW trips WITH (buckets = '1 hour, 1 day') AS\n"                             \
    "SELECT date_bin('1 hour', t.at, timestamptz 'epoch') AS bucket, t.zone, t.kind,\n"   \
    "  count(*) AS n, count(*) FILTER (WHERE t.fare > 10) AS big,\n"                      \
    "  sum(t.fare) AS fare, sum(t.dist) AS dist,\n"                                       \
    "  percentile_disc(0.5) WITHIN GROUP (ORDER BY t.rating) AS median\n"                 \
    "FROM trips t GROUP BY 1, 2, 3;\n"                                                    \
    "CREATE VIEW by_zone WITH (buckets = '1 hour, 1 day') AS\n"                           \
    "SELECT date_bin('1 hour', t.at, timestamptz 'epoch') AS bucket, t.zone,\n"           \
    "  count(*) AS n, sum(t.dist) AS dist,\n"                                             \
    "  percentile_disc(0.5) WITHIN GROUP (ORDER BY t.rating) AS median\n"                 \
    "FROM trips t GROUP BY 1, 2;\n"

enum { NZONES = 200, NKINDS = 2 };

struct trip {
    int64_t at;     /* usec */
    int64_t zone;   /* 0..NZONES-1 */
    int64_t kind;   /* 0..NKINDS-1 */
    int64_t fare;   /* cents */
    double dist;    /* tenths: not exact in binary, so float sums depend on order */
    int64_t rating; /* 1..3: a kind marginal merges them to few runs */
};

static struct trip trip_make(uint64_t *rng)
{
    struct trip t;
    t.at = (1704067200LL + fixture_rand(rng) % (14 * 86400)) * 1000000LL;
    t.zone = fixture_rand(rng) % NZONES;
    t.kind = fixture_rand(rng) % NKINDS;
    t.fare = fixture_rand(rng) % 5000;
    t.dist = (double)(fixture_rand(rng) % 1000) / 10.0;
    t.rating = 1 + fixture_rand(rng) % 3;
    return t;
}

static struct store_column_type trip_type_of(const char *name)
{
    if (strcmp(name, "at") == 0)
        return (struct store_column_type){STORE_TYPE_TIMESTAMP, 0, 1184};
    if (strcmp(name, "fare") == 0)
        return (struct store_column_type){STORE_TYPE_NUMERIC, 2, 1700};
    if (strcmp(name, "dist") == 0)
        return (struct store_column_type){STORE_TYPE_FLOAT, 0, 701};
    return (struct store_column_type){STORE_TYPE_INT, 0, 23};
}

static struct store *trip_store_create(char dir[64])
{
    strcpy(dir, "/tmp/straum-rollup-XXXXXX");
    cr_assert_not_null(mkdtemp(dir));
    struct sql_error serr;
    struct sql_view_list *views = sql_parse_views(TRIP_VIEWS, &serr);
    cr_assert_not_null(views, "%s", serr.message);
    struct store_column_type types[MAX_VIEWS][8];
    struct store_view_types vt[MAX_VIEWS];
    for (int v = 0; v < views->nviews; v++) {
        cr_assert_leq(views->views[v].nfact_columns, 8);
        for (int c = 0; c < views->views[v].nfact_columns; c++)
            types[v][c] = trip_type_of(views->views[v].fact_columns[c].name);
        vt[v].fact = types[v];
    }
    struct store *s;
    struct store_error err;
    cr_assert_eq(store_create(dir, TRIP_VIEWS, vt, &s, &err), 0, "%s", err.message);
    sql_view_list_free(views);
    return s;
}

/* The value zone z takes in the store: z itself, or, stretched, spread
 * over the int64 range (keys_too_wide_to_pack_sort_as_narrow_ones). */
static bool zone_stretched;

static int64_t zone_value(int64_t z)
{
    const int64_t step = INT64_MAX / NZONES;
    return zone_stretched ? (z - NZONES / 2) * step : z;
}

static int64_t trip_column(const struct sql_view *v, int col, const struct trip *t)
{
    const char *name = v->fact_columns[col].name;
    if (strcmp(name, "zone") == 0)
        return zone_value(t->zone);
    if (strcmp(name, "kind") == 0)
        return t->kind;
    if (strcmp(name, "fare") == 0)
        return t->fare;
    cr_assert_str_eq(name, "rating");
    return t->rating;
}

/* A trip added (+1) or taken away (-1) in every view. No column is NULL, so
 * every count counts the row; the one filter is fare > 10 (1000 cents). */
static void trip_apply(struct store *s, const struct trip *t, int sign)
{
    struct store_error err;
    for (int view = 0; view < store_views(s)->nviews; view++) {
        const struct sql_view *v = &store_views(s)->views[view];
        struct fixture_delta fd;
        memset(&fd, 0, sizeof fd);
        for (int k = 0; k < v->ncell_keys; k++)
            fd.keys[k] = trip_column(v, v->cell_keys[k], t);
        for (int c = 0; c < v->ncounts; c++)
            fd.counts[c] = v->counts[c].filter >= 0 && t->fare <= 1000 ? 0 : sign;
        for (int c = 0; c < v->nsums; c++) {
            if (strcmp(v->fact_columns[v->sums[c].fact_column].name, "dist") == 0)
                fd.sums[c].real = t->dist * sign;
            else
                fd.sums[c].exact = (__int128)trip_column(v, v->sums[c].fact_column, t) * sign;
        }
        for (int c = 0; c < v->nvalue_counts; c++)
            fd.vcs[c] = (struct store_vc_delta){c, trip_column(v, v->value_counts[c].fact_column, t),
                                                sign};
        fd.d = (struct store_delta){view, t->at, fd.keys, fd.counts, fd.sums, fd.vcs,
                                    v->nvalue_counts};
        cr_assert_eq(store_apply(s, &fd.d, &err), 0, "%s", err.message);
    }
}

/* Presence in the trips store, beyond the common rules. */
static void assert_trip_rules(struct store *s, struct tally t[MAX_VIEWS][MAX_WIDTHS])
{
    const struct sql_view *trips = &store_views(s)->views[0], *by_zone = &store_views(s)->views[1];
    cr_assert_str_eq(trips->name, "trips");
    cr_assert_eq(trips->ncell_keys, 2);
    cr_assert_eq(by_zone->ncell_keys, 1);
    cr_assert_eq(trips->nwidths, 2);
    for (int w = 0; w < 2; w++) {
        /* Two kinds per bucket against dozens of cells: the kind marginal is
         * in every block; the zone marginal, as many rows as cells, in none. */
        cr_assert_eq(t[0][w].present[family_of(false, 1)], t[0][w].blocks, "trips/%d: kind", w);
        cr_assert_eq(t[0][w].without_vcs[family_of(false, 1)], 0, "trips/%d: kind runs", w);
        cr_assert_eq(t[0][w].present[family_of(false, 0)], 0, "trips/%d: zone", w);
    }
    /* Over a span of days, both keys' span marginals halve the cells of
     * the full spans (an edge span of a day or two may not: the rules,
     * checked per block above, then leave it out). */
    cr_assert_gt(t[0][1].present[family_of(true, 0)], 0);
    cr_assert_eq(t[0][1].present[family_of(true, 1)], t[0][1].blocks);
    /* One key: no bucket marginal, but a span marginal at the widest width. */
    cr_assert_gt(t[1][1].present[family_of(true, 0)], 0, "by_zone span marginal");
    /* A zone's kinds over a span of days are far fewer than its cells: the
     * span cells hold them (the view of one key has none: check_segment). */
    cr_assert_gt(t[0][1].present[SPAN_CELLS], 0, "trips span cells");
    cr_assert_eq(t[1][1].present[SPAN_CELLS], 0, "by_zone span cells");
}

/* 8,000 trips added, then a third of them, zone 7's and the first day's
 * taken away; every family against brute force after each commit. */
static void two_keys_and_one_key(void)
{
    char dir[64];
    struct store *s = trip_store_create(dir);
    enum { N = 8000 };
    struct trip *trips = malloc(sizeof *trips * N);
    uint64_t rng = 5;
    for (int i = 0; i < N; i++) {
        trips[i] = trip_make(&rng);
        trip_apply(s, &trips[i], +1);
    }
    commit(s, 1);
    struct tally t[MAX_VIEWS][MAX_WIDTHS];
    check_store(s, t);
    assert_common_rules(s, t);
    assert_trip_rules(s, t);

    /* Deletes: every third trip (most hourly cells hold one trip: they
     * empty), every trip of zone 7 (a key value gone from every family) and
     * of the first day (whole buckets and segments gone). */
    int64_t day1 = (1704067200LL + 86400) * 1000000LL;
    for (int i = 0; i < N; i++)
        if (i % 3 == 0 || trips[i].zone == 7 || trips[i].at < day1)
            trip_apply(s, &trips[i], -1);
    commit(s, 2);
    check_store(s, t);
    assert_common_rules(s, t);
    assert_trip_rules(s, t);

    store_close(s);
    free(trips);
    fixture_remove(dir);
}

Test(store_rollup, two_keys_and_one_key_families_equal_brute_force) { two_keys_and_one_key(); }

/* The same with zones spread over the int64 range, 63 bits of it: cells
 * and the per-bucket zone families (a bucket's bits besides) are too wide
 * to sort by one packed code (store/order.c) and are compared, the span
 * families of zone alone take all 63 bits, those of kind a bit. Each way
 * must give brute force's order. */
Test(store_rollup, keys_too_wide_to_pack_sort_as_narrow_ones)
{
    zone_stretched = true;
    two_keys_and_one_key();
}

/* The halving rules at their edges, in one hour of trips: exactly half is
 * in, one run or one cell past it is out. */
Test(store_rollup, halving_rules_at_their_edges)
{
    char dir[64];
    struct store *s = trip_store_create(dir);
    int64_t at = 1704067200LL * 1000000LL;
    int fk = family_of(false, 1), fz = family_of(false, 0);
    int sk = family_of(true, 1), sz = family_of(true, 0);
    struct tally t[MAX_VIEWS][MAX_WIDTHS];

    /* 2 zones x 2 kinds, one rating: 4 cells of one run each; each marginal
     * has 2 rows and 2 runs, exactly half, per bucket and over the span. */
    struct trip four[4];
    for (int i = 0; i < 4; i++) {
        four[i] = (struct trip){at + i, i % 2, i / 2, 1500, 0.1 * i, 1};
        trip_apply(s, &four[i], +1);
    }
    commit(s, 1);
    check_store(s, t);
    for (int w = 0; w < 2; w++)
        for (int f = 0; f < 2; f++) {
            int fam = f ? fk : fz;
            cr_assert(t[0][w].present[fam] == 1 && t[0][w].without_vcs[fam] == 0,
                      "trips/%d: marginal %d at exactly half", w, fam);
        }
    cr_assert(t[0][1].present[sk] == 1 && t[0][1].present[sz] == 1 && t[0][1].without_vcs[sk] == 0);
    /* by_zone: 2 cells, a span marginal of 2 rows would not halve them. */
    cr_assert_eq(t[1][1].present[sz], 0);

    /* One more rating in the (zone 1, kind 1) cell: the cells have 5 runs,
     * each marginal 3, one past half: the finest width's marginals and the
     * span marginals lose their value counts; the day width's bucket
     * marginals keep them (a percentile over days bisects them). */
    struct trip fifth = {at + 4, 1, 1, 1500, 0.7, 2};
    trip_apply(s, &fifth, +1);
    commit(s, 2);
    check_store(s, t);
    cr_assert(t[0][0].without_vcs[fk] == 1 && t[0][0].without_vcs[fz] == 1,
              "trips/0: marginals past half the runs");
    cr_assert(t[0][1].present[fk] == 1 && t[0][1].without_vcs[fk] == 0 &&
                  t[0][1].present[fz] == 1 && t[0][1].without_vcs[fz] == 0,
              "trips/1: bucket marginals past half the runs keep them");
    cr_assert(t[0][1].without_vcs[sk] == 1 && t[0][1].without_vcs[sz] == 1);

    /* Empty the (zone 1, kind 1) cell: 3 cells, marginals of 2 rows are out. */
    trip_apply(s, &four[3], -1);
    trip_apply(s, &fifth, -1);
    commit(s, 3);
    check_store(s, t);
    for (int w = 0; w < 2; w++)
        cr_assert(t[0][w].present[fk] == 0 && t[0][w].present[fz] == 0,
                  "trips/%d: marginals past half the rows", w);
    cr_assert(t[0][1].present[sk] == 0 && t[0][1].present[sz] == 0);
    assert_common_rules(s, t);

    store_close(s);
    fixture_remove(dir);
}
