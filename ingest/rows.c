/* rows.c -- a source row's contribution to the cells, and dim rows into
 * projections.
 *
 * A fact row adds to (or, taken away, subtracts from) exactly one cell per
 * view and width: its row count, every count and sum whose column is not NULL
 * and whose FILTER holds, and its value in every value count. FILTER follows
 * SQL's three-valued logic: a comparison with NULL is unknown, and only true
 * counts. A row whose bucket column is NULL lands in no bucket any ask can
 * name, so it is not kept. */
#include "ingest/internal.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

enum { MAX_ACCUMULATORS = INGEST_MAX_VIEW_WIDTH };

/* Decodes one column of a row, binary or text as it came. */
static int decode_value(const struct source_table *t, int c, const struct row_value *rv,
                        struct decoded_value *out, char *err, size_t errlen)
{
    const struct source_column *col = &t->cols[c];
    out->is_null = rv->is_null;
    if (rv->is_null)
        return 0;
    if (rv->missing)
        return error_fmt(err, errlen, "table %s: column \"%s\" was not sent (unchanged TOAST "
                                 "value) and no old row holds it; set REPLICA IDENTITY FULL",
                    t->qualified, col->name);
    char why[200];
    int rc = rv->binary ? pgvalue_decode_binary(col->type_oid, &col->type, rv->data, rv->len,
                                                &out->v, why, sizeof why)
                        : pgvalue_decode_text(col->type_oid, &col->type, (const char *)rv->data,
                                              rv->len, &out->v, why, sizeof why);
    if (rc)
        return error_fmt(err, errlen, "table %s, column \"%s\": %s", t->qualified, col->name, why);
    return 0;
}

int rows_decode(const struct source_table *t, const struct row_value *row,
                struct decoded_value *out, char *err, size_t errlen)
{
    for (int c = 0; c < t->ncols; c++)
        if (decode_value(t, c, &row[c], &out[c], err, errlen))
            return -1;
    return 0;
}

/* The table's row buffers, made once: rows are decoded millions of times.
 * Two rows' room: a change's old row, then its new one. */
static struct decoded_value *scratch_for(struct source_table *t, char *err, size_t errlen)
{
    if (!t->scratch &&
        !(t->scratch = calloc(2 * ((size_t)t->ncols + 1), sizeof(struct decoded_value))))
        error_fmt(err, errlen, "out of memory");
    return t->scratch;
}

/* ---- FILTER ------------------------------------------------------------------ */

static bool value_equal(const struct source_column *col, const struct pgvalue *a,
                        const struct pgvalue *b)
{
    if (col->type.type == STORE_TYPE_TEXT)
        return a->len == b->len && memcmp(a->text, b->text, a->len) == 0;
    if (col->type.type == STORE_TYPE_FLOAT)
        return a->code == b->code;
    return a->exact == b->exact;
}

static int value_cmp(const struct source_column *col, const struct pgvalue *a,
                     const struct pgvalue *b)
{
    if (col->type.type == STORE_TYPE_FLOAT)
        return a->code < b->code ? -1 : a->code > b->code;
    return a->exact < b->exact ? -1 : a->exact > b->exact;
}

/* 1 true, 0 false, -1 unknown. */
static int eval(const struct row_filter *f, const struct source_table *t,
                const struct decoded_value *row)
{
    switch (f->kind) {
    case SQL_FILTER_AND: {
        int l = eval(f->left, t, row);
        if (l == 0)
            return 0;
        int r = eval(f->right, t, row);
        return r == 0 ? 0 : (l == 1 && r == 1) ? 1 : -1;
    }
    case SQL_FILTER_OR: {
        int l = eval(f->left, t, row);
        if (l == 1)
            return 1;
        int r = eval(f->right, t, row);
        return r == 1 ? 1 : (l == -1 || r == -1) ? -1 : 0;
    }
    case SQL_FILTER_NOT: {
        int x = eval(f->left, t, row);
        return x < 0 ? -1 : !x;
    }
    case SQL_FILTER_IS_NULL:
        return row[f->col].is_null;
    case SQL_FILTER_IS_NOT_NULL:
        return !row[f->col].is_null;
    default:
        break;
    }
    if (row[f->col].is_null)
        return -1;
    const struct source_column *col = &t->cols[f->col];
    const struct pgvalue *v = &row[f->col].v;
    if (f->kind == SQL_FILTER_IN || f->kind == SQL_FILTER_NOT_IN) {
        bool hit = false;
        for (int i = 0; i < f->nvalues && !hit; i++)
            hit = value_equal(col, v, &f->values[i]);
        return f->kind == SQL_FILTER_IN ? hit : !hit;
    }
    if (f->cmp == SQL_CMP_EQ || f->cmp == SQL_CMP_NE)
        return value_equal(col, v, &f->values[0]) == (f->cmp == SQL_CMP_EQ);
    int c = value_cmp(col, v, &f->values[0]);
    switch (f->cmp) {
    case SQL_CMP_LT: return c < 0;
    case SQL_CMP_LE: return c <= 0;
    case SQL_CMP_GT: return c > 0;
    default: return c >= 0;
    }
}

/* ---- Facts --------------------------------------------------------------------- */

/* The code of a decoded value of a view's fact column: text is interned in
 * the view's dictionary of that column. */
static int code_of(struct store *st, int view, int fact_col, const struct source_column *col,
                   const struct decoded_value *d, int64_t *code, char *err, size_t errlen)
{
    if (d->is_null) {
        *code = STORE_NULL;
        return 0;
    }
    if (col->type.type != STORE_TYPE_TEXT) {
        *code = d->v.code;
        return 0;
    }
    struct store_error serr;
    if (store_dict_intern(st, view, fact_col, d->v.text, d->v.len, code, &serr))
        return error_fmt(err, errlen, "%s", serr.message);
    return 0;
}

/* One view's share of a fact row: the cell it lands in and what it adds
 * there. vcs has room for two rows' (a change's old and new row, merged). */
struct view_delta {
    bool lands; /* false: the bucket column is NULL, no cell holds the row */
    int64_t keys[MAX_ACCUMULATORS], counts[MAX_ACCUMULATORS];
    struct store_sum sums[MAX_ACCUMULATORS];
    struct store_vc_delta vcs[2 * MAX_ACCUMULATORS];
    struct store_delta d;
};

/* Fills out with the row's share of view v, signed (+1 added, -1 taken
 * away). 0, or -1 with err (a text key or value that cannot be interned). */
static int view_delta_of(struct store *st, const struct source_table *t, const struct fact_use *u,
                         const struct decoded_value *row, int sign, const struct sql_view *v,
                         struct view_delta *out, char *err, size_t errlen)
{
    const struct decoded_value *time = &row[u->col[v->bucket_fact_column]];
    out->lands = !time->is_null;
    if (!out->lands)
        return 0;
    bool pass[MAX_ACCUMULATORS + 1];
    pass[0] = true; /* filter -1, none, is pass[0] */
    for (int f = 0; f < v->nfilters; f++)
        pass[f + 1] = eval(u->filters[f], t, row) == 1;
    for (int k = 0; k < v->ncell_keys; k++) {
        int fc = v->cell_keys[k];
        if (code_of(st, u->view, fc, &t->cols[u->col[fc]], &row[u->col[fc]], &out->keys[k], err,
                    errlen))
            return -1;
    }
    for (int c = 0; c < v->ncounts; c++) {
        const struct sql_count_spec *cs = &v->counts[c];
        bool counted = pass[cs->filter + 1] &&
                       (cs->fact_column < 0 || !row[u->col[cs->fact_column]].is_null);
        out->counts[c] = counted ? sign : 0;
    }
    for (int s = 0; s < v->nsums; s++) {
        const struct sql_sum_spec *ss = &v->sums[s];
        const struct decoded_value *d = &row[u->col[ss->fact_column]];
        bool summed = pass[ss->filter + 1] && !d->is_null;
        out->sums[s].exact = summed ? d->v.exact * sign : 0;
        out->sums[s].real = summed ? d->v.real * sign : 0;
    }
    int nvcs = 0;
    for (int c = 0; c < v->nvalue_counts; c++) {
        const struct sql_value_count_spec *vs = &v->value_counts[c];
        int tc = u->col[vs->fact_column];
        if (!pass[vs->filter + 1] || row[tc].is_null)
            continue;
        int64_t code;
        if (code_of(st, u->view, vs->fact_column, &t->cols[tc], &row[tc], &code, err, errlen))
            return -1;
        out->vcs[nvcs++] = (struct store_vc_delta){c, code, sign};
    }
    out->d = (struct store_delta){u->view, time->v.code, out->keys, out->counts, out->sums,
                                  out->vcs, nvcs};
    return 0;
}

/* Whether two shares of view v land in the same cell at every width: the
 * same time (so the same bucket whatever the widths) and the same keys. */
static bool same_cell(const struct sql_view *v, const struct view_delta *a,
                      const struct view_delta *b)
{
    return a->lands && b->lands && a->d.time == b->d.time &&
           memcmp(a->keys, b->keys, sizeof a->keys[0] * (size_t)v->ncell_keys) == 0;
}

/* Adds b's share into a's, the same cell (same_cell): counts and sums
 * summed, value-count changes that cancel out dropped. Exact sums add
 * exactly; a float sum takes new - old in one addition to the cell rather
 * than -old and then +new: rounded in another order, as a float sum is by
 * any other order of its rows. */
static void view_delta_merge(const struct sql_view *v, struct view_delta *a,
                             const struct view_delta *b)
{
    for (int c = 0; c < v->ncounts; c++)
        a->counts[c] += b->counts[c];
    for (int s = 0; s < v->nsums; s++) {
        a->sums[s].exact += b->sums[s].exact;
        a->sums[s].real += b->sums[s].real;
    }
    int n = a->d.nvcs;
    for (int j = 0; j < b->d.nvcs; j++) {
        int i = 0;
        while (i < n && (a->vcs[i].vc != b->vcs[j].vc || a->vcs[i].code != b->vcs[j].code))
            i++;
        if (i == n)
            a->vcs[n++] = b->vcs[j];
        else if ((a->vcs[i].delta += b->vcs[j].delta) == 0)
            a->vcs[i] = a->vcs[--n];
    }
    a->d.nvcs = n;
}

static int view_delta_apply(struct store *st, const struct view_delta *a, char *err, size_t errlen)
{
    struct store_error serr;
    if (a->lands && store_apply(st, &a->d, &serr))
        return error_fmt(err, errlen, "%s", serr.message);
    return 0;
}

int rows_check_width(const struct sql_view_list *views, char *err, size_t errlen)
{
    for (int i = 0; i < views->nviews; i++) {
        const struct sql_view *v = &views->views[i];
        const struct {
            const char *what;
            int n;
        } parts[] = {{"cell keys (group keys and join columns)", v->ncell_keys},
                     {"counts", v->ncounts},
                     {"sums", v->nsums},
                     {"value counts", v->nvalue_counts},
                     {"FILTER clauses", v->nfilters}};
        for (size_t k = 0; k < sizeof parts / sizeof parts[0]; k++)
            if (parts[k].n > INGEST_MAX_VIEW_WIDTH)
                return error_fmt(err, errlen, "view \"%s\" has %d %s; the limit is %d: split it into narrower views",
                                   v->name, parts[k].n, parts[k].what, INGEST_MAX_VIEW_WIDTH);
        for (int j = 0; j < v->njoins; j++)
            if (v->joins[j].ndim_columns - 1 > INGEST_MAX_VIEW_WIDTH)
                return error_fmt(err, errlen, "view \"%s\" reads %d columns of %s; the limit is %d dim columns a join: split it into narrower views",
                                   v->name, v->joins[j].ndim_columns - 1, v->joins[j].table, INGEST_MAX_VIEW_WIDTH);
    }
    return 0;
}

int rows_apply_decoded_fact(struct store *st, const struct source_table *t,
                            const struct decoded_value *row, int sign, char *err, size_t errlen)
{
    const struct sql_view_list *views = store_views(st);
    for (int f = 0; f < t->nfacts; f++) {
        struct view_delta a;
        if (view_delta_of(st, t, &t->facts[f], row, sign, &views->views[t->facts[f].view], &a,
                          err, errlen) || /* rows_check_width bounds the view */
            view_delta_apply(st, &a, err, errlen))
            return -1;
    }
    return 0;
}

int rows_apply_fact_change(struct store *st, struct source_table *t,
                           const struct row_value *old_row, const struct row_value *new_row,
                           char *err, size_t errlen)
{
    if (!t->nfacts)
        return 0;
    struct decoded_value *d = scratch_for(t, err, errlen);
    if (!d)
        return -1;
    struct decoded_value *old_d = d, *new_d = d + t->ncols + 1;
    if ((old_row && rows_decode(t, old_row, old_d, err, errlen)) ||
        (new_row && rows_decode(t, new_row, new_d, err, errlen)))
        return -1;
    if (!old_row || !new_row)
        return rows_apply_decoded_fact(st, t, old_row ? old_d : new_d, old_row ? -1 : +1, err,
                                       errlen);
    /* An update: where the row stays in its cell (its time and keys the
     * same, as when only a measure changes) the cell takes one delta, not
     * the old row's and then the new row's, and none when the view reads
     * nothing that changed: half the cell lookups of such an update, or
     * none. */
    const struct sql_view_list *views = store_views(st);
    for (int f = 0; f < t->nfacts; f++) {
        const struct sql_view *v = &views->views[t->facts[f].view];
        struct view_delta a, b;
        if (view_delta_of(st, t, &t->facts[f], old_d, -1, v, &a, err, errlen) ||
            view_delta_of(st, t, &t->facts[f], new_d, +1, v, &b, err, errlen))
            return -1;
        if (same_cell(v, &a, &b)) { /* one delta; the store skips one that changes nothing */
            view_delta_merge(v, &a, &b);
            if (view_delta_apply(st, &a, err, errlen))
                return -1;
        } else if (view_delta_apply(st, &a, err, errlen) || view_delta_apply(st, &b, err, errlen)) {
            return -1;
        }
    }
    return 0;
}

/* ---- Dims ---------------------------------------------------------------------------- */

/* The projection key of a dim row for one use; false when the key is NULL
 * (a NULL key joins nothing). */
static int dim_key(struct store *st, const struct source_table *t, const struct dim_use *u,
                   const struct decoded_value *row, bool *present, int64_t *key, char *err,
                   size_t errlen)
{
    *present = !row[u->key_col].is_null;
    if (!*present)
        return 0;
    const struct source_column *kc = &t->cols[u->key_col];
    return code_of(st, u->view, u->fact_column, kc, &row[u->key_col], key, err, errlen);
}

int rows_put_decoded_dim(struct store *st, const struct source_table *t,
                         const struct decoded_value *d, char *err, size_t errlen)
{
    int rc = 0;
    for (int i = 0; rc == 0 && i < t->ndims; i++) {
        const struct dim_use *u = &t->dims[i];
        const struct sql_join *j = &store_views(st)->views[u->view].joins[u->join];
        int n = j->ndim_columns - 1;
        struct store_dim_value *vals = calloc((size_t)n + 1, sizeof *vals);
        char (*bufs)[64] = calloc((size_t)n + 1, sizeof *bufs);
        bool present;
        int64_t key;
        if (!vals || !bufs)
            rc = error_fmt(err, errlen, "out of memory");
        else if (!(rc = dim_key(st, t, u, d, &present, &key, err, errlen)) && present) {
            for (int c = 0; c < n; c++) {
                const struct decoded_value *x = &d[u->cols[c]];
                const struct source_column *col = &t->cols[u->cols[c]];
                vals[c].is_null = x->is_null;
                if (x->is_null)
                    continue;
                if (col->type.type == STORE_TYPE_TEXT) {
                    vals[c].text = x->v.text;
                    vals[c].len = x->v.len;
                } else {
                    vals[c].len = store_code_format(&col->type, x->v.code, bufs[c], sizeof bufs[c]);
                    vals[c].text = bufs[c];
                }
            }
            struct store_error serr;
            if (store_projection_put(st, u->view, u->join, key, vals, &serr))
                rc = error_fmt(err, errlen, "%s", serr.message);
        }
        free(vals);
        free(bufs);
    }
    return rc;
}

int rows_put_dim(struct store *st, struct source_table *t, const struct row_value *row,
                 char *err, size_t errlen)
{
    if (!t->ndims)
        return 0;
    struct decoded_value *d = scratch_for(t, err, errlen);
    if (!d || rows_decode(t, row, d, err, errlen))
        return -1;
    return rows_put_decoded_dim(st, t, d, err, errlen);
}

int rows_delete_dim(struct store *st, struct source_table *t, const struct row_value *row,
                    char *err, size_t errlen)
{
    if (!t->ndims)
        return 0;
    struct decoded_value *d = scratch_for(t, err, errlen);
    if (!d)
        return -1;
    /* Only the key matters: decode just it, other columns may be absent
     * under a key-only replica identity. */
    int rc = 0;
    for (int i = 0; rc == 0 && i < t->ndims; i++) {
        const struct dim_use *u = &t->dims[i];
        if ((rc = decode_value(t, u->key_col, &row[u->key_col], &d[u->key_col], err, errlen)))
            break;
        bool present;
        int64_t key;
        struct store_error serr;
        if ((rc = dim_key(st, t, u, d, &present, &key, err, errlen)) || !present)
            continue;
        if (store_projection_delete(st, u->view, u->join, key, &serr))
            rc = error_fmt(err, errlen, "%s", serr.message);
    }
    return rc;
}

bool rows_dim_key_changed(const struct source_table *t, const struct row_value *old_row,
                          const struct row_value *new_row)
{
    for (int i = 0; i < t->ndims; i++) {
        const struct row_value *a = &old_row[t->dims[i].key_col], *b = &new_row[t->dims[i].key_col];
        if (a->is_null != b->is_null || a->len != b->len || a->binary != b->binary ||
            (!a->is_null && memcmp(a->data, b->data, a->len) != 0))
            return true;
    }
    return false;
}
