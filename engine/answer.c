/* answer.c -- groups into the answer: each measure finished from its
 * accumulators, rows ordered, limited and written as JSON.
 *
 * JSON types (SPEC.md "Answers"): counts and integer keys are numbers;
 * numeric sums, averages and values are exact decimals written as strings
 * ("12.50"), so that no client reads them through a double; float results
 * are numbers with the fewest digits that read back exactly; buckets are
 * ISO 8601 strings with the offset of the ask's time zone; NULL is null.
 * Without ORDER BY rows come in group-key order (bucket, then keys, NULLs
 * last). Text orders bytewise (C collation), here and in min/max/percentiles
 * over text. */
#include "engine/internal.h"
#include "engine/pred.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum ov_kind { OV_NULL, OV_INT, OV_DEC, OV_AVG, OV_DOUBLE, OV_TEXT, OV_BOOL, OV_TIME, OV_DATE };

struct outval {
    enum ov_kind kind;
    int64_t i;            /* INT, BOOL, TIME (µs), DATE (days) */
    __int128 dec;         /* DEC */
    int scale;            /* DEC */
    bool number;          /* DEC: write as a JSON number (an integer sum) */
    double d;             /* DOUBLE; AVG's value for ordering, set only
                             where rows are ordered (held_fill:
                             dec_avg_approx) */
    const char *text;     /* TEXT; AVG's digits (owned), but for a held AVG
                             (held_fill): no digits, its sum in dec (at
                             scale) and its count in i */
    size_t len;
    char *owned;
};

/* A row of the answer before it is handed over: its group and the values
 * of the measures that decide whether and where it stands (HAVING's and
 * ORDER BY's, struct answer_state.held). Everything else about the row is
 * computed as it goes out. */
struct row {
    struct group *group;
    struct outval *held;  /* [nheld] */
};

/* ---- Values from codes ---------------------------------------------------------- */

static struct outval from_code(struct exec *x, int fact_col, int64_t code)
{
    const struct store_column_type *t = &x->types[fact_col];
    struct outval o = {.kind = OV_NULL};
    if (code == STORE_NULL)
        return o;
    switch (t->type) {
    case STORE_TYPE_INT: o.kind = OV_INT; o.i = code; break;
    case STORE_TYPE_NUMERIC: o.kind = OV_DEC; o.dec = code; o.scale = t->scale; break;
    case STORE_TYPE_FLOAT: o.kind = OV_DOUBLE; o.d = store_code_float(code); break;
    case STORE_TYPE_BOOL: o.kind = OV_BOOL; o.i = code; break;
    case STORE_TYPE_DATE: o.kind = OV_DATE; o.i = code; break;
    case STORE_TYPE_TIMESTAMP: o.kind = OV_TIME; o.i = code; break;
    case STORE_TYPE_TEXT:
        if (store_dict_lookup(x->r, x->view, fact_col, code, &o.text, &o.len) == 0)
            o.kind = OV_TEXT;
        break;
    }
    return o;
}

static double as_double(const struct outval *o)
{
    switch (o->kind) {
    case OV_DEC: return dec_to_double(o->dec, o->scale);
    case OV_DOUBLE:
    case OV_AVG: return o->d;
    default: return (double)o->i;
    }
}

static int cmp_outval(const struct outval *a, const struct outval *b)
{
    if (a->kind == OV_NULL || b->kind == OV_NULL) /* NULLs last */
        return a->kind == b->kind ? 0 : a->kind == OV_NULL ? 1 : -1;
    switch (a->kind) {
    case OV_DEC: return a->dec < b->dec ? -1 : a->dec > b->dec;
    case OV_DOUBLE: return a->d < b->d ? -1 : a->d > b->d;
    case OV_AVG: /* held: digits not written (held_fill) */
        return dec_avg_cmp(a->dec, a->i, a->d, b->dec, b->i, b->d, a->scale);
    case OV_TEXT: {
        size_t n = a->len < b->len ? a->len : b->len;
        int c = memcmp(a->text, b->text, n);
        return c ? c : (a->len > b->len) - (a->len < b->len);
    }
    default: return a->i < b->i ? -1 : a->i > b->i;
    }
}

/* ---- Value counts ------------------------------------------------------------------ */

struct vc_entry {
    struct code_run run;
    struct outval v;
};

static int cmp_entry(const void *a, const void *b)
{
    return cmp_outval(&((const struct vc_entry *)a)->v, &((const struct vc_entry *)b)->v);
}

/* Text codes are dictionary ids, not in value order: the runs reordered by
 * their texts, bytewise, into malloc'd arrays (*codes, *rows). */
static int text_order(struct exec *x, int fact_col, struct vc_sorted *runs, int64_t **codes,
                      int64_t **rows)
{
    uint32_t n = runs->n;
    struct vc_entry *e = scratch_malloc(sizeof *e * (n + 1));
    *codes = scratch_malloc(8 * ((size_t)n + 1));
    *rows = scratch_malloc(8 * ((size_t)n + 1));
    if (!e || !*codes || !*rows) {
        scratch_free(e);
        return -1;
    }
    for (uint32_t i = 0; i < n; i++)
        e[i] = (struct vc_entry){{runs->codes[i], runs->rows[i]},
                                 from_code(x, fact_col, runs->codes[i])};
    qsort(e, n, sizeof *e, cmp_entry);
    for (uint32_t i = 0; i < n; i++) {
        (*codes)[i] = e[i].run.code;
        (*rows)[i] = e[i].run.rows;
    }
    scratch_free(e);
    runs->codes = *codes;
    runs->rows = *rows;
    return 0;
}

/* The value of run i. A lent rollup list's codes may still be encoded
 * (struct store_lazy_runs): only this one is decoded then. A failure is
 * kept in x for answer_emit, and the value is NULL meanwhile. */
static struct outval value_of(struct exec *x, int fact_col, const struct vc_sorted *runs,
                              uint32_t i)
{
    int64_t code = 0;
    if (!runs->lazy)
        code = runs->codes[i];
    else if (x->answer_failed ||
             vc_shared_code(runs->lazy, runs->lazy_at + i, &code, &x->answer_err)) {
        x->answer_failed = true;
        return (struct outval){.kind = OV_NULL};
    }
    return from_code(x, fact_col, code);
}

/* value_at over rows still encoded: decodes them a stretch at a time up to
 * the run that holds row r. A percentile's pick lies on average halfway
 * into a group's runs, and decoding every row was most of a percentile per
 * bucket. */
static struct outval value_at_decoding(struct exec *x, int fact_col, const struct vc_sorted *runs,
                                       int64_t r)
{
    int64_t rows[FORMAT_SEEK_STRIDE];
    for (uint32_t i = 0, got; i < runs->n && !x->answer_failed; i += got) {
        if (vc_shared_rows(runs->lazy, runs->lazy_at + i, FORMAT_SEEK_STRIDE, rows, &got,
                           &x->answer_err)) {
            x->answer_failed = true;
            break;
        }
        for (uint32_t j = 0; j < got; j++) {
            if (r < rows[j])
                return value_of(x, fact_col, runs, i + j);
            r -= rows[j];
        }
    }
    if (x->answer_failed)
        return (struct outval){.kind = OV_NULL};
    return value_of(x, fact_col, runs, runs->n - 1);
}

static bool is_percentile_agg(enum sql_agg agg)
{
    return agg == SQL_AGG_PERCENTILE_DISC || agg == SQL_AGG_PERCENTILE_CONT;
}

/* The value at 0-based row r of the ordered multiset. */
static struct outval value_at(struct exec *x, int fact_col, const struct vc_sorted *runs, int64_t r)
{
    if (runs->rows_pending)
        return value_at_decoding(x, fact_col, runs, r);
    for (uint32_t i = 0; i < runs->n; i++) {
        if (r < runs->rows[i])
            return value_of(x, fact_col, runs, i);
        r -= runs->rows[i];
    }
    return value_of(x, fact_col, runs, runs->n - 1);
}

/* min, max, count(DISTINCT) and percentiles from the group's value counts.
 * Every code type but text orders as its values (store.h), so only the
 * values picked are read from their codes. */
/* The code at 1-based row `row` of a group that keeps sources
 * (vc_acc_select); NULL when it fails. */
static struct outval value_selected(struct exec *x, int fact_col, struct vc_acc *acc,
                                    const struct vc_sorted *merged, int64_t row)
{
    int64_t code;
    if (x->answer_failed)
        return (struct outval){.kind = OV_NULL};
    if (vc_acc_select(acc, merged, row, &code)) {
        x->answer_failed = true;
        ask_fail(&x->answer_err, 500, "internal", "out of memory");
        return (struct outval){.kind = OV_NULL};
    }
    return from_code(x, fact_col, code);
}

/* A percentile of a group that keeps rows by position or collects runs:
 * what it merged besides is decoded first, then each row picked across all
 * lists (exec.rows_count: percentiles only, so its rows in all are that
 * count). */
static struct outval selected_percentile(struct exec *x, const struct sql_measure *m,
                                         struct group *g)
{
    struct outval o = {.kind = OV_NULL};
    struct vc_acc *acc = &g->vcs[m->value_counts];
    struct vc_shared *lazy = vc_acc_lazy(acc);
    struct vc_sorted merged;
    if (lazy && vc_shared_fill(lazy, &x->answer_err)) {
        x->answer_failed = true;
        return o;
    }
    if (vc_acc_runs(acc, &merged)) {
        x->answer_failed = true;
        ask_fail(&x->answer_err, 500, "internal", "out of memory");
        return o;
    }
    int64_t total = g->counts[x->rows_count[m->value_counts]];
    if (total <= 0)
        return o;
    if (m->agg == SQL_AGG_PERCENTILE_DISC) {
        /* As PostgreSQL: row ceil(p * N) in double arithmetic, 1-based. */
        int64_t row = (int64_t)ceil(m->fraction * (double)total);
        return value_selected(x, m->fact_column, acc, &merged, row > 1 ? row : 1);
    }
    double pos = m->fraction * (double)(total - 1);
    struct outval lo = value_selected(x, m->fact_column, acc, &merged, (int64_t)floor(pos) + 1);
    struct outval hi = value_selected(x, m->fact_column, acc, &merged, (int64_t)ceil(pos) + 1);
    if (x->answer_failed)
        return o;
    o.kind = OV_DOUBLE;
    o.d = as_double(&lo) + (as_double(&hi) - as_double(&lo)) * (pos - floor(pos));
    return o;
}

static struct outval ordered_measure(struct exec *x, const struct sql_measure *m, struct group *g)
{
    struct outval o = {.kind = OV_NULL};
    int col = m->fact_column;
    struct vc_sorted runs;
    int64_t *by_text_codes = NULL, *by_text_rows = NULL;
    struct vc_acc *acc = &g->vcs[m->value_counts];
    if ((acc->nsrcs > 0 || acc->ncoll > 0) && is_percentile_agg(m->agg))
        return selected_percentile(x, m, g);
    /* Texts are sorted by their bytes, and rows taken away leave a copy:
     * both read every code. */
    struct vc_shared *lazy = vc_acc_lazy(acc);
    if (lazy && (acc->zero_rows || x->types[col].type == STORE_TYPE_TEXT) &&
        vc_shared_fill(lazy, &x->answer_err)) {
        x->answer_failed = true;
        return o;
    }
    if (vc_acc_runs(acc, &runs) ||
        (runs.n > 1 && x->types[col].type == STORE_TYPE_TEXT &&
         text_order(x, col, &runs, &by_text_codes, &by_text_rows))) {
        scratch_free(by_text_codes);
        scratch_free(by_text_rows);
        if (!x->answer_failed) /* never a NULL where the value is */
            ask_fail(&x->answer_err, 500, "internal", "out of memory");
        x->answer_failed = true;
        return o;
    }
    uint32_t n = runs.n;
    if (runs.rows_pending) /* exec.rows_count: percentiles only */
        runs.total = g->counts[x->rows_count[m->value_counts]];
    if (m->agg == SQL_AGG_COUNT_DISTINCT) {
        o.kind = OV_INT;
        o.i = n;
    } else if (n > 0) {
        switch (m->agg) {
        case SQL_AGG_MIN: o = value_of(x, col, &runs, 0); break;
        case SQL_AGG_MAX: o = value_of(x, col, &runs, n - 1); break;
        case SQL_AGG_PERCENTILE_DISC: {
            /* As PostgreSQL: row ceil(p * N) in double arithmetic, 1-based. */
            int64_t row = (int64_t)ceil(m->fraction * (double)runs.total);
            o = value_at(x, col, &runs, row > 1 ? row - 1 : 0);
            break;
        }
        default: { /* percentile_cont: interpolate in double, as float8 */
            double pos = m->fraction * (double)(runs.total - 1);
            struct outval lo = value_at(x, col, &runs, (int64_t)floor(pos));
            struct outval hi = value_at(x, col, &runs, (int64_t)ceil(pos));
            o.kind = OV_DOUBLE;
            o.d = as_double(&lo) + (as_double(&hi) - as_double(&lo)) * (pos - floor(pos));
            break;
        }
        }
    }
    scratch_free(by_text_codes);
    scratch_free(by_text_rows);
    return o;
}

static struct outval measure(struct exec *x, const struct sql_measure *m, struct group *g)
{
    struct outval o = {.kind = OV_NULL};
    const struct store_column_type *t = m->fact_column >= 0 ? &x->types[m->fact_column] : NULL;
    switch (m->agg) {
    case SQL_AGG_COUNT_STAR:
    case SQL_AGG_COUNT:
        o.kind = OV_INT;
        o.i = g->counts[m->count];
        return o;
    case SQL_AGG_SUM:
        if (g->counts[m->count] == 0)
            return o;
        if (t->type == STORE_TYPE_FLOAT) {
            o.kind = OV_DOUBLE;
            o.d = g->real[m->sum];
        } else {
            o.kind = OV_DEC;
            o.dec = g->exact[m->sum];
            o.scale = t->type == STORE_TYPE_NUMERIC ? t->scale : 0;
            o.number = o.scale == 0 && o.dec >= INT64_MIN && o.dec <= INT64_MAX;
        }
        return o;
    case SQL_AGG_AVG: {
        int64_t n = g->counts[m->count];
        if (n == 0)
            return o;
        if (t->type == STORE_TYPE_FLOAT) {
            o.kind = OV_DOUBLE;
            o.d = g->real[m->sum] / (double)n;
            return o;
        }
        char digits[DEC_AVG_TEXT_CAP];
        size_t len = dec_avg(g->exact[m->sum], t->type == STORE_TYPE_NUMERIC ? t->scale : 0, n,
                             digits, sizeof digits);
        o.kind = OV_AVG;
        if ((o.owned = scratch_malloc(len + 1)))
            memcpy(o.owned, digits, len + 1);
        o.text = o.owned;
        o.len = o.owned ? len : 0;
        return o;
    }
    default:
        for (int j = 0; g->settled_values && j < x->nsettle; j++)
            if (x->settle_measures[j] == m)
                return g->settled_values[j];
        return ordered_measure(x, m, g);
    }
}

int answer_settle(struct exec *x, struct group *g, struct ask_error *err)
{
    /* Every measure is finished before any value count goes: two may read
     * one (a median and a p99 of the same column). */
    struct outval *vals = scratch_malloc(sizeof *vals * ((size_t)x->nsettle + 1));
    if (!vals)
        return ask_fail(err, 500, "internal", "out of memory");
    for (int j = 0; j < x->nsettle; j++)
        vals[j] = ordered_measure(x, x->settle_measures[j], g);
    if (x->answer_failed) {
        scratch_free(vals);
        *err = x->answer_err;
        return -1;
    }
    exec_group_vcs_free(x, g);
    g->settled_values = vals;
    return 0;
}

/* ---- Rows ---------------------------------------------------------------------------- */

static struct outval key_value(struct exec *x, int g, int64_t id)
{
    const struct sql_view_column *vc = &x->v->columns[x->ask->group_keys[g]];
    if (vc->kind == SQL_COLUMN_FACT_KEY)
        return from_code(x, vc->fact_column, id);
    struct outval o = {.kind = OV_NULL};
    if (id < 0)
        return o;
    /* A dim value's text is read for the answer's groups only. */
    if (store_dense_text(x->r, x->view, vc->join, vc->dim_column - 1, id, &o.text, &o.len)) {
        if (!x->answer_failed)
            ask_fail(&x->answer_err, 500, "corrupt_store",
                     "a dense dim column of view \"%s\" holds value id %lld, which its "
                     "dictionary lacks", x->v->name, (long long)id);
        x->answer_failed = true;
        return o;
    }
    o.kind = OV_TEXT;
    return o;
}

struct answer_state;
static const struct outval *held_value(const struct answer_state *st, const struct row *r,
                                       int view_column);

/* The ask's output columns of the row into cols: the bucket and keys from
 * keys, the measures finished (those the row holds taken from it, not
 * owned by cols). -1 when a measure's digits found no memory (the values
 * filled so far are still cols' to free). */
static int fill_cols(struct exec *x, const struct answer_state *st, const struct row *r,
                     const struct outval *keys, struct outval *cols)
{
    const struct sql_ask *a = x->ask;
    for (int c = 0; c < a->ncolumns; c++) {
        const struct sql_ask_column *col = &a->columns[c];
        if (col->kind == SQL_ASK_BUCKET) {
            cols[c] = keys[0];
        } else if (col->kind == SQL_ASK_MEASURE) {
            const struct outval *held = held_value(st, r, col->view_column);
            if (held && held->kind != OV_AVG) { /* a held AVG has no digits */
                cols[c] = *held;
                cols[c].owned = NULL; /* the row's */
                continue;
            }
            cols[c] = measure(x, &x->v->columns[col->view_column].measure, r->group);
            if (cols[c].kind == OV_AVG && !cols[c].owned)
                return -1;
        } else {
            for (int k = 0; k < a->ngroup_keys; k++)
                if (a->group_keys[k] == col->view_column)
                    cols[c] = keys[k + 1];
        }
    }
    return 0;
}

/* ---- HAVING ------------------------------------------------------------------------ */

struct having_ctx {
    struct exec *x;
    const struct answer_state *st;
    const struct row *row;
    struct ask_error *err;
};

static int apply_cmp(enum sql_cmp cmp, int c)
{
    switch (cmp) {
    case SQL_CMP_EQ: return c == 0;
    case SQL_CMP_NE: return c != 0;
    case SQL_CMP_LT: return c < 0;
    case SQL_CMP_LE: return c <= 0;
    case SQL_CMP_GT: return c > 0;
    default: return c >= 0;
    }
}

/* A HAVING comparison's number, read once per ask for measures of exact
 * integers and decimals: the value given times 10^scale, truncated toward
 * zero (whole), whether digits were cut (cut), and as a double (for
 * averages, dec_avg_cmp's way). Why: writing each group's sum as text to
 * compare it digit by digit with the value's was a tenth of an ask of
 * 1,487 groups. */
enum having_number_state { HN_UNREAD, HN_READ, HN_TEXT /* compared as text */ };

struct having_number {
    enum having_number_state state;
    int scale;
    __int128 whole;
    bool cut, negative;
    double d;
};

/* Reads text (sign, digits, an optional point and digits) at scale into
 * h: HN_READ, or HN_TEXT for any other form, a scale outside 0 to 18 or
 * more than 36 digits (the text compare then answers). */
static void having_number_read(const char *text, size_t len, int scale, struct having_number *h)
{
    *h = (struct having_number){.state = HN_TEXT, .scale = scale};
    size_t i = 0, digits = 0, frac = 0;
    bool point = false;
    if (i < len && (text[i] == '-' || text[i] == '+'))
        h->negative = text[i++] == '-';
    if (scale < 0 || scale > 18)
        return;
    __int128 whole = 0;
    for (; i < len; i++) {
        char ch = text[i];
        if (ch == '.' && !point) {
            point = true;
            continue;
        }
        if (ch < '0' || ch > '9')
            return;
        digits++;
        if (point && frac++ >= (size_t)scale) {
            h->cut = h->cut || ch != '0';
            continue;
        }
        if (digits > 36)
            return;
        whole = whole * 10 + (ch - '0');
    }
    if (digits == 0)
        return;
    for (; frac < (size_t)scale; frac++)
        whole *= 10;
    char buf[64];
    if (len >= sizeof buf)
        return;
    memcpy(buf, text, len);
    buf[len] = '\0';
    h->d = strtod(buf, NULL);
    h->whole = h->negative ? -whole : whole;
    h->state = HN_READ;
}

/* v (at h's scale) against h's number: <0, 0, >0. */
static int having_number_cmp(__int128 v, const struct having_number *h)
{
    if (!h->cut || v == h->whole) /* cut: the number lies past whole, away from zero */
        return h->cut ? (h->negative ? 1 : -1) : (v > h->whole) - (v < h->whole);
    return v < h->whole ? -1 : 1;
}

static struct having_number *having_number_of(const struct answer_state *st, int k);

/* HAVING comparison k for the group: the measure's value (the row's, when
 * the ask selects it) against the value given, as the measure's type
 * compares: exact decimals digit for digit, doubles, text bytewise, dates
 * and times as instants. UNKNOWN for a NULL measure. */
static int having_leaf(void *ctx, int k)
{
    struct having_ctx *h = ctx;
    struct exec *x = h->x;
    const struct sql_having_cmp *cmp = &x->ask->having[k];
    const struct ask_value *v = &x->b.having[k];
    const struct outval *o = held_value(h->st, h->row, cmp->view_column); /* all are held */
    const char *name = x->v->columns[cmp->view_column].name;
    struct having_number *hn = having_number_of(h->st, k);
    char text[160];
    int c = 0;
    bool ok = true;
    if (o->kind == OV_INT || o->kind == OV_DEC || o->kind == OV_AVG) {
        int scale = o->kind == OV_INT ? 0 : o->scale;
        if ((hn->state == HN_UNREAD || hn->scale != scale) &&
            (v->kind == ASK_NUMBER || v->kind == ASK_STRING))
            having_number_read(v->text, v->len, scale, hn);
    }
    switch (o->kind) {
    case OV_NULL: return T_UNKNOWN;
    case OV_INT:
        if (hn->state == HN_READ) {
            c = having_number_cmp(o->i, hn);
            break;
        }
        snprintf(text, sizeof text, "%lld", (long long)o->i);
        goto decimal;
    case OV_DEC:
        if (hn->state == HN_READ) {
            c = having_number_cmp(o->dec, hn);
            break;
        }
        decimal_format(o->dec, o->scale, text, sizeof text);
        goto decimal;
    case OV_AVG: {
        double d = o->d, gap = fabs(d - hn->d), big = fmax(fabs(d), fabs(hn->d));
        if (hn->state == HN_READ && gap > 1e-9 * big) { /* dec_avg_cmp's margin, and more */
            c = d < hn->d ? -1 : 1;
            break;
        }
        char digits[DEC_AVG_TEXT_CAP];
        size_t n = dec_avg(o->dec, o->scale, o->i, digits, sizeof digits); /* held: no digits */
        ok = v->kind == ASK_NUMBER || v->kind == ASK_STRING;
        if (ok)
            c = pred_decimal_cmp(digits, n, v->text, v->len, &ok);
        break;
    }
    decimal:
        ok = v->kind == ASK_NUMBER || v->kind == ASK_STRING;
        if (ok)
            c = pred_decimal_cmp(text, strlen(text), v->text, v->len, &ok);
        break;
    case OV_DOUBLE: {
        char buf[64], *end;
        ok = (v->kind == ASK_NUMBER || v->kind == ASK_STRING) && v->len < sizeof buf;
        if (ok) {
            memcpy(buf, v->text, v->len);
            buf[v->len] = '\0';
            double d = strtod(buf, &end);
            ok = end != buf && *end == '\0';
            c = (o->d > d) - (o->d < d);
        }
        break;
    }
    case OV_TEXT:
        ok = v->kind == ASK_STRING;
        if (ok)
            c = pred_text_cmp(o->text, o->len, v->text, v->len);
        break;
    case OV_BOOL:
        ok = v->kind == ASK_BOOL;
        c = ok ? (int)o->i - (int)v->boolean : 0;
        break;
    case OV_DATE:
    case OV_TIME: {
        char buf[64], why[160];
        int64_t t;
        bool off;
        ok = v->kind == ASK_STRING && v->len < sizeof buf;
        if (ok) {
            memcpy(buf, v->text, v->len);
            buf[v->len] = '\0';
            ok = sql_parse_timestamp(buf, &t, &off, why, sizeof why);
        }
        if (ok && o->kind == OV_DATE)
            t = t / 86400000000LL - (t % 86400000000LL < 0);
        else if (ok && !off)
            t = tz_local_to_utc(x->b.tz, t);
        c = ok ? (o->i > t) - (o->i < t) : 0;
        break;
    }
    }
    if (!ok)
        return ask_fail(h->err, 422, "bad_parameter",
                        "HAVING compares measure \"%s\" with a value of another type (line %d, "
                        "column %d)", name, cmp->line, cmp->column);
    return apply_cmp(cmp->cmp, c);
}

/* ---- Typed rows ------------------------------------------------------------------------ */

/* PostgreSQL's type of a key column's values (engine.h), from the source
 * type the store keeps: the integer widths, text kinds, bool, date and the
 * timestamps pass through; float4 answers as float8 (its codes are
 * doubles, and float4's text would need float4's shortest digits). */
static uint32_t value_oid(const struct store_column_type *t)
{
    switch (t->pg_oid) {
    case ANSWER_OID_BOOL:
    case ANSWER_OID_INT2:
    case ANSWER_OID_INT4:
    case ANSWER_OID_INT8:
    case ANSWER_OID_TEXT:
    case ANSWER_OID_VARCHAR:
    case ANSWER_OID_DATE:
    case ANSWER_OID_TIMESTAMPTZ:
    case ANSWER_OID_NUMERIC:
    case ANSWER_OID_FLOAT8:
        return t->pg_oid;
    default: break;
    }
    switch (t->type) {
    case STORE_TYPE_INT: return ANSWER_OID_INT8;
    case STORE_TYPE_NUMERIC: return ANSWER_OID_NUMERIC;
    case STORE_TYPE_FLOAT: return ANSWER_OID_FLOAT8;
    case STORE_TYPE_BOOL: return ANSWER_OID_BOOL;
    case STORE_TYPE_DATE: return ANSWER_OID_DATE;
    case STORE_TYPE_TIMESTAMP: return ANSWER_OID_TIMESTAMPTZ;
    case STORE_TYPE_TEXT: return ANSWER_OID_TEXT;
    }
    return ANSWER_OID_TEXT;
}

/* sum(int2) and sum(int4) are int8 in PostgreSQL, sum(int8) numeric. */
static bool sum_is_int8(const struct store_column_type *t)
{
    return t->type == STORE_TYPE_INT &&
           (t->pg_oid == ANSWER_OID_INT2 || t->pg_oid == ANSWER_OID_INT4);
}

uint32_t answer_column_oid(const struct sql_ask *a, const struct store_column_type *types, int c)
{
    const struct sql_ask_column *col = &a->columns[c];
    if (col->kind == SQL_ASK_BUCKET)
        return ANSWER_OID_TIMESTAMPTZ;
    return answer_view_column_oid(&a->view->columns[col->view_column], types);
}

uint32_t answer_view_column_oid(const struct sql_view_column *vc,
                                const struct store_column_type *types)
{
    if (vc->kind == SQL_COLUMN_BUCKET)
        return ANSWER_OID_TIMESTAMPTZ;
    if (vc->kind != SQL_COLUMN_MEASURE)
        return vc->kind == SQL_COLUMN_FACT_KEY ? value_oid(&types[vc->fact_column]) : ANSWER_OID_TEXT;
    const struct sql_measure *m = &vc->measure;
    const struct store_column_type *t = m->fact_column >= 0 ? &types[m->fact_column] : NULL;
    switch (m->agg) {
    case SQL_AGG_COUNT_STAR:
    case SQL_AGG_COUNT:
    case SQL_AGG_COUNT_DISTINCT: return ANSWER_OID_INT8;
    case SQL_AGG_SUM:
        return t->type == STORE_TYPE_FLOAT ? ANSWER_OID_FLOAT8
               : sum_is_int8(t)            ? ANSWER_OID_INT8
                                           : ANSWER_OID_NUMERIC;
    case SQL_AGG_AVG: return t->type == STORE_TYPE_FLOAT ? ANSWER_OID_FLOAT8 : ANSWER_OID_NUMERIC;
    case SQL_AGG_PERCENTILE_CONT: return ANSWER_OID_FLOAT8;
    default: return value_oid(t);
    }
}

/* An outval as the sink sees it; digits is the scratch its decimal text is
 * written into (valid until the next row). */
static struct answer_value typed_value(struct exec *x, const struct outval *o, uint32_t oid,
                                       char *digits, size_t cap)
{
    struct answer_value v = {.kind = ANSWER_NULL};
    switch (o->kind) {
    case OV_NULL: break;
    case OV_INT: v.kind = ANSWER_INT; v.i = o->i; break;
    case OV_BOOL: v.kind = ANSWER_BOOL; v.i = o->i != 0; break;
    case OV_DEC:
        if (oid == ANSWER_OID_INT8 && o->scale == 0 && o->dec >= INT64_MIN && o->dec <= INT64_MAX) {
            v.kind = ANSWER_INT;
            v.i = (int64_t)o->dec;
            break;
        }
        v.kind = ANSWER_DECIMAL;
        v.len = decimal_format(o->dec, o->scale, digits, cap);
        v.text = digits;
        v.json_number = o->number;
        break;
    case OV_AVG: v.kind = ANSWER_DECIMAL; v.text = o->text; v.len = o->len; break;
    case OV_DOUBLE: v.kind = ANSWER_DOUBLE; v.d = o->d; break;
    case OV_TEXT: v.kind = ANSWER_TEXT; v.text = o->text; v.len = o->len; break;
    case OV_TIME:
        v.kind = ANSWER_TIME;
        v.i = o->i;
        v.utc_offset_s = tz_offset_at(x->b.tz, o->i);
        break;
    case OV_DATE: v.kind = ANSWER_DATE; v.i = o->i; break;
    }
    return v;
}

enum { DIGITS_CAP = 160 }; /* a 128-bit integer's 40 digits, sign, point, zeros of a scale */

/* ---- Order ------------------------------------------------------------------------- *
 *
 * Rows are ordered without building their values. A group key compares by
 * an unsigned rank, NULL the largest (last, as PostgreSQL orders NULLs
 * ascending): a code of any type but text is its own rank (codes order as
 * their values, store.h), shifted so that STORE_NULL, the smallest int64,
 * comes last; a text key's dictionary ids and a dim column's value ids
 * are ranked once per answer by their bytes. A measure that ORDER BY or
 * HAVING reads is computed once per row and held (struct row.held); the
 * other columns are computed as the row goes out. */

enum key_rank_kind { RANK_CODE, RANK_TEXT };

struct ranked_text {
    int64_t id;
    const char *text;
    size_t len;
};

struct key_rank {
    enum key_rank_kind kind;
    bool dim;                  /* RANK_TEXT of a dim column: ids < 0 are NULL
                                  (else STORE_NULL is) */
    struct hashtab text_rank;  /* RANK_TEXT: id -> rank (uint64) */
    /* RANK_TEXT when the ranked ids lie close together (dictionary and dim
     * value ids are handed out in turn): rank of id flat_lo + i, or
     * UINT64_MAX for an id not ranked. NULL: text_rank answers. A sort
     * compares keys n log n times, and a probe per compare was a tenth of
     * an ask by zone and borough over two days. */
    uint64_t *flat;
    int64_t flat_lo;
    uint64_t flat_n;
    /* RANK_TEXT once built: each rank's text, by rank (struct ranked_text,
     * pointers into the snapshot's map), so a row going out finds its
     * key's text by its rank, not by a B-tree lookup per row (a lookup
     * per row was 8% of an answer of 1,487 rows by zone and borough). */
    struct ranked_text *texts;
    uint64_t ntexts;
    /* RANK_TEXT whose ranks are not built: keys compare by their texts,
     * looked up at each compare. The rows kept while the scan goes
     * (answer_keep) cannot rank every group's text before the groups
     * exist, and compare keys only when their ORDER BY items tie. */
    bool by_text;
};

/* The id span a flat rank table may cover: at most this many slots per
 * ranked id, or RANK_FLAT_MIN in all, so the table stays about as small
 * as the hash it replaces. */
#define RANK_FLAT_PER_ID 4
#define RANK_FLAT_MIN 4096

/* The answer between answer_prepare and the last answer_next: its rows,
 * ordered, and where the next one to hand over is. */
struct answer_state {
    struct exec *x;
    struct row *rows;
    uint32_t n;
    struct key_rank *ranks;    /* [1 + ngroup_keys]: the bucket, then each key */
    /* The measures rows hold: view columns, each read by ORDER BY or HAVING. */
    int *held_vcol;
    int nheld;
    int *order_held;           /* per ORDER BY item: its held index, or -1 (a key) */
    int *order_key;            /* per ORDER BY item: its key index (0: bucket) */
    struct outval *held;       /* the rows' held values, nheld a row */
    struct outval *keys_at_hand, *cols_at_hand; /* the row going out */
    int64_t at, last;       /* rows [at, last) are still to go */
    bool columns_sent;
    struct answer_column *cols;
    struct answer_value *vals;
    char *digits;
    struct having_number *having_numbers; /* per HAVING comparison */
};

static struct having_number *having_number_of(const struct answer_state *st, int k)
{
    return &st->having_numbers[k];
}

static const struct outval *held_value(const struct answer_state *st, const struct row *r,
                                       int view_column)
{
    for (int h = 0; h < st->nheld; h++)
        if (st->held_vcol[h] == view_column)
            return &r->held[h];
    return NULL;
}

static inline uint64_t key_rank_of(const struct answer_state *st, const struct group *g, int k)
{
    const struct key_rank *kr = &st->ranks[k];
    int64_t id = g->key[k];
    switch (kr->kind) {
    case RANK_TEXT: {
        if (kr->dim ? id < 0 : id == STORE_NULL)
            return UINT64_MAX;
        if (kr->flat) {
            uint64_t i = (uint64_t)id - (uint64_t)kr->flat_lo;
            return i < kr->flat_n ? kr->flat[i] : UINT64_MAX;
        }
        const uint64_t *key = (const uint64_t *)&id;
        const uint64_t *rank = hashtab_find(&kr->text_rank, key, hashtab_hash(&kr->text_rank, key));
        return rank ? *rank : UINT64_MAX; /* an id the dictionary lacks answers NULL */
    }
    default:
        return id == STORE_NULL ? UINT64_MAX : ((uint64_t)id ^ (1ULL << 63)) - 1;
    }
}

static int cmp_ranked_text(const void *pa, const void *pb)
{
    const struct ranked_text *a = pa, *b = pb;
    size_t n = a->len < b->len ? a->len : b->len;
    int c = memcmp(a->text, b->text, n);
    return c ? c : (a->len > b->len) - (a->len < b->len);
}

/* The text of id, a value of group key k's (1-based) text column, into
 * text and len: 0, or -1 for a NULL (no text: the id's answer is NULL). */
static int key_text(struct exec *x, int k, int64_t id, const char **text, size_t *len)
{
    const struct sql_view_column *vc = &x->v->columns[x->ask->group_keys[k - 1]];
    if (vc->kind != SQL_COLUMN_FACT_KEY)
        return id < 0 || store_dense_text(x->r, x->view, vc->join, vc->dim_column - 1, id, text,
                                          len) ? -1 : 0;
    return id == STORE_NULL || store_dict_lookup(x->r, x->view, vc->fact_column, id, text, len)
               ? -1 : 0;
}

/* Sets how group key k (1-based; 0 is the bucket, ranked by its start)
 * compares: RANK_CODE, or RANK_TEXT for a text key. */
static void key_rank_kind(struct exec *x, struct answer_state *st, int k)
{
    struct key_rank *kr = &st->ranks[k];
    kr->kind = RANK_CODE;
    if (k == 0)
        return;
    const struct sql_view_column *vc = &x->v->columns[x->ask->group_keys[k - 1]];
    kr->dim = vc->kind != SQL_COLUMN_FACT_KEY;
    if (kr->dim || x->types[vc->fact_column].type == STORE_TYPE_TEXT)
        kr->kind = RANK_TEXT;
}

/* The ranks of group key k over every group's value. -1 when out of
 * memory. */
static int key_rank_build(struct exec *x, struct answer_state *st, int k)
{
    struct key_rank *kr = &st->ranks[k];
    key_rank_kind(x, st, k);
    if (kr->kind != RANK_TEXT)
        return 0;
    hashtab_init(&kr->text_rank, 1, sizeof(uint64_t));
    uint32_t n = 0, cap = 64;
    struct ranked_text *t = scratch_malloc(sizeof *t * cap);
    if (!t)
        return -1;
    for (uint32_t i = 0; i < x->groups.n; i++) {
        int64_t id = x->groups.all[i]->key[k];
        const uint64_t *key = (const uint64_t *)&id;
        bool added;
        if (kr->dim ? id < 0 : id == STORE_NULL)
            continue;
        if (!hashtab_upsert(&kr->text_rank, key, hashtab_hash(&kr->text_rank, key), &added)) {
            scratch_free(t);
            return -1;
        }
        const char *text;
        size_t len;
        if (!added || key_text(x, k, id, &text, &len))
            continue; /* seen, or a NULL answer: no rank, ordered last */
        if (n == cap) {
            struct ranked_text *more = scratch_realloc(t, sizeof *t * (cap *= 2));
            if (!more) {
                scratch_free(t);
                return -1;
            }
            t = more;
        }
        t[n++] = (struct ranked_text){id, text, len};
    }
    hashtab_clear(&kr->text_rank); /* ids without text stay out: NULL */
    qsort(t, n, sizeof *t, cmp_ranked_text);
    int64_t lo = INT64_MAX, hi = INT64_MIN;
    for (uint32_t i = 0; i < n; i++) {
        lo = t[i].id < lo ? t[i].id : lo;
        hi = t[i].id > hi ? t[i].id : hi;
    }
    uint64_t span = n ? (uint64_t)hi - (uint64_t)lo + 1 : 0;
    kr->texts = t;
    kr->ntexts = n;
    if (n && span <= (uint64_t)n * RANK_FLAT_PER_ID + RANK_FLAT_MIN &&
        (kr->flat = scratch_malloc(sizeof *kr->flat * span))) {
        memset(kr->flat, 0xff, sizeof *kr->flat * span); /* UINT64_MAX: not ranked */
        kr->flat_lo = lo;
        kr->flat_n = span;
        for (uint32_t i = 0; i < n; i++)
            kr->flat[(uint64_t)t[i].id - (uint64_t)lo] = i;
        return 0;
    } /* else (or out of memory for it) the hash ranks */
    for (uint32_t i = 0; i < n; i++) {
        const uint64_t *key = (const uint64_t *)&t[i].id;
        bool added;
        uint64_t *rank = hashtab_upsert(&kr->text_rank, key, hashtab_hash(&kr->text_rank, key), &added);
        *rank = i; /* as many slots as before: cannot fail */
    }
    return 0;
}

static int cmp_rank(uint64_t a, uint64_t b) { return a < b ? -1 : a > b; }

/* Group key k of a against b's, and whether each is NULL (then the
 * compare is 0): by rank, or by text for a key ranked by_text. */
static int cmp_keys(const struct answer_state *st, const struct group *a, const struct group *b,
                    int k, bool *anull, bool *bnull)
{
    if (st->ranks[k].by_text) {
        const char *ta, *tb;
        size_t la, lb;
        *anull = key_text(st->x, k, a->key[k], &ta, &la) != 0;
        *bnull = key_text(st->x, k, b->key[k], &tb, &lb) != 0;
        if (*anull || *bnull)
            return 0;
        struct ranked_text ra = {a->key[k], ta, la}, rb = {b->key[k], tb, lb};
        return cmp_ranked_text(&ra, &rb);
    }
    uint64_t x = key_rank_of(st, a, k), y = key_rank_of(st, b, k);
    *anull = x == UINT64_MAX;
    *bnull = y == UINT64_MAX;
    return cmp_rank(x, y);
}

/* ORDER BY's items, then every group key in group order. */
static int cmp_rows(const void *pa, const void *pb, void *ctx)
{
    const struct row *a = pa, *b = pb;
    const struct answer_state *st = ctx;
    const struct sql_ask *ask = st->x->ask;
    for (int i = 0; i < ask->norder; i++) {
        const struct sql_ask_order *o = &ask->order[i];
        bool anull, bnull;
        int c;
        if (st->order_held[i] >= 0) {
            const struct outval *x = &a->held[st->order_held[i]], *y = &b->held[st->order_held[i]];
            anull = x->kind == OV_NULL;
            bnull = y->kind == OV_NULL;
            c = anull || bnull ? 0 : cmp_outval(x, y);
        } else {
            c = cmp_keys(st, a->group, b->group, st->order_key[i], &anull, &bnull);
        }
        if (anull || bnull)
            c = anull == bnull ? 0 : anull == o->nulls_first ? -1 : 1;
        else if (o->descending)
            c = -c;
        if (c)
            return c;
    }
    for (int k = 0; k <= ask->ngroup_keys; k++) {
        bool anull, bnull;
        int c = cmp_keys(st, a->group, b->group, k, &anull, &bnull);
        if (anull || bnull)
            c = anull == bnull ? 0 : anull ? 1 : -1; /* NULL last, as its rank */
        if (c)
            return c;
    }
    return 0;
}

/* Whether the rows are in the answer's order already: groups are made in
 * about the order most answers want (a series by time, a segment's keys in
 * code order), and one pass that finds them so saves the sort's n log n
 * compares (a tenth of an hourly series' time in serve). */
static bool rows_in_order(const struct answer_state *st)
{
    for (uint32_t i = 1; i < st->n; i++)
        if (cmp_rows(&st->rows[i - 1], &st->rows[i], (void *)st) > 0)
            return false;
    return true;
}

/* Rows in group-key order without ORDER BY, each row's ranks laid out
 * once: [rank of key 0 .. rank of key nk - 1, row index] a row, sorted as
 * tuples, then the rows put in their order. cmp_rows looked each rank up
 * twice a compare, through the key's kind: its n log n compares were a
 * sixth of a percentile ask by payment type, borough and zone over an hour
 * (344 rows). NULL's rank is UINT64_MAX, so NULLs go last as cmp_rows puts
 * them. Returns false when it does not apply (ORDER BY, a key ranked
 * by_text) or out of memory: cmp_rows sorts then. */
static int cmp_rank_tuples(const void *pa, const void *pb, void *ctx)
{
    const uint64_t *a = pa, *b = pb;
    for (int k = 0, nk = *(const int *)ctx; k < nk; k++)
        if (a[k] != b[k])
            return a[k] < b[k] ? -1 : 1;
    return 0;
}

static bool sort_by_rank_tuples(struct answer_state *st)
{
    const struct sql_ask *a = st->x->ask;
    int nk = 1 + a->ngroup_keys;
    if (a->norder > 0 || st->n < 2)
        return false;
    for (int k = 0; k < nk; k++)
        if (st->ranks[k].by_text)
            return false;
    size_t stride = (size_t)nk + 1;
    uint64_t *t = scratch_malloc(sizeof *t * stride * st->n);
    struct row *sorted = scratch_malloc(sizeof *sorted * st->n);
    if (!t || !sorted) {
        scratch_free(t);
        scratch_free(sorted);
        return false;
    }
    for (uint32_t i = 0; i < st->n; i++) {
        uint64_t *r = t + i * stride;
        for (int k = 0; k < nk; k++)
            r[k] = key_rank_of(st, st->rows[i].group, k);
        r[nk] = i;
    }
    qsort_r(t, st->n, sizeof *t * stride, cmp_rank_tuples, &nk);
    for (uint32_t i = 0; i < st->n; i++)
        sorted[i] = st->rows[t[i * stride + nk]];
    memcpy(st->rows, sorted, sizeof *sorted * st->n);
    scratch_free(t);
    scratch_free(sorted);
    return true;
}

/* ---- Top rows ---------------------------------------------------------------------- *
 *
 * With LIMIT (and OFFSET) far below the groups, the answer keeps only the
 * first offset + limit rows in a heap whose root is the last of them: a
 * row after the root is dropped at once, one before it takes the root's
 * place. So an ask for the top ten of 700,000 groups orders ten rows, not
 * 700,000, and holds ten rows' measures. */

static void heap_down(struct answer_state *st, uint32_t i, uint32_t n)
{
    for (;;) {
        uint32_t l = 2 * i + 1, r = l + 1, big = i;
        if (l < n && cmp_rows(&st->rows[l], &st->rows[big], st) > 0)
            big = l;
        if (r < n && cmp_rows(&st->rows[r], &st->rows[big], st) > 0)
            big = r;
        if (big == i)
            return;
        struct row t = st->rows[i];
        st->rows[i] = st->rows[big];
        st->rows[big] = t;
        i = big;
    }
}

static void heap_up(struct answer_state *st, uint32_t i)
{
    while (i > 0) {
        uint32_t p = (i - 1) / 2;
        if (cmp_rows(&st->rows[i], &st->rows[p], st) <= 0)
            return;
        struct row t = st->rows[i];
        st->rows[i] = st->rows[p];
        st->rows[p] = t;
        i = p;
    }
}

static void held_free(const struct answer_state *st, struct outval *held)
{
    for (int h = 0; held && h < st->nheld; h++) {
        scratch_free(held[h].owned);
        held[h] = (struct outval){.kind = OV_NULL};
    }
}

/* The measures row r holds, computed; -1 when out of memory. */
static int held_fill(struct exec *x, const struct answer_state *st, struct row *r)
{
    for (int h = 0; h < st->nheld; h++) {
        struct outval *o = &r->held[h];
        const struct sql_measure *m = &x->v->columns[st->held_vcol[h]].measure;
        const struct store_column_type *t = m->fact_column >= 0 ? &x->types[m->fact_column] : NULL;
        if (m->agg == SQL_AGG_AVG && t && t->type != STORE_TYPE_FLOAT) {
            /* Its digits only if it goes out, or nearly ties another
             * (dec_avg_cmp). */
            int64_t n = r->group->counts[m->count];
            int scale = t->type == STORE_TYPE_NUMERIC ? t->scale : 0;
            *o = (struct outval){.kind = OV_NULL};
            if (n > 0)
                *o = (struct outval){.kind = OV_AVG, .dec = r->group->exact[m->sum], .i = n,
                                     .scale = scale,
                                     .d = dec_avg_approx(r->group->exact[m->sum], scale, n)};
            continue;
        }
        *o = measure(x, m, r->group);
        if (o->kind == OV_AVG && !o->owned)
            return -1;
    }
    return 0;
}

/* Which measures rows hold and where ORDER BY reads each item (into the
 * arrays of state_new). */
static void plan_held(struct exec *x, struct answer_state *st)
{
    const struct sql_ask *a = x->ask;
    for (int i = 0; i < a->norder + a->nhaving; i++) {
        int vcol;
        if (i < a->norder) {
            const struct sql_ask_column *col = &a->columns[a->order[i].output_column];
            st->order_held[i] = -1;
            if (col->kind == SQL_ASK_BUCKET)
                continue; /* order_key 0 */
            if (col->kind != SQL_ASK_MEASURE) {
                for (int k = 0; k < a->ngroup_keys; k++)
                    if (a->group_keys[k] == col->view_column)
                        st->order_key[i] = k + 1;
                continue;
            }
            vcol = col->view_column;
        } else {
            vcol = a->having[i - a->norder].view_column;
        }
        int h = 0;
        while (h < st->nheld && st->held_vcol[h] != vcol)
            h++;
        if (h == st->nheld)
            st->held_vcol[st->nheld++] = vcol;
        if (i < a->norder)
            st->order_held[i] = h;
    }
}

/* The answer's state and every array of it whose size the ask alone
 * sets, in one zeroed block: a light ask's answer takes one allocation,
 * not ten (answer_release frees the block; the rows and what they hold,
 * sized by the groups, are their own). NULL when out of memory. */
static struct answer_state *state_new(const struct sql_ask *a)
{
    size_t total = sizeof(struct answer_state), cols = (size_t)a->ncolumns + 1,
           keys = (size_t)a->ngroup_keys + 1, order = (size_t)a->norder + 1;
    size_t ranks = scratch_place(&total, keys, sizeof(struct key_rank));
    size_t held_vcol = scratch_place(&total, order + (size_t)a->nhaving, sizeof(int));
    size_t order_held = scratch_place(&total, order, sizeof(int));
    size_t order_key = scratch_place(&total, order, sizeof(int));
    size_t ocols = scratch_place(&total, cols, sizeof(struct answer_column));
    size_t vals = scratch_place(&total, cols, sizeof(struct answer_value));
    size_t cols_at_hand = scratch_place(&total, cols, sizeof(struct outval));
    size_t keys_at_hand = scratch_place(&total, keys, sizeof(struct outval));
    size_t digits = scratch_place(&total, cols, DIGITS_CAP);
    size_t having_numbers =
        scratch_place(&total, (size_t)a->nhaving + 1, sizeof(struct having_number));
    char *block = scratch_calloc(1, total);
    if (!block)
        return NULL;
    struct answer_state *st = (struct answer_state *)block;
    st->ranks = (struct key_rank *)(block + ranks);
    st->held_vcol = (int *)(block + held_vcol);
    st->order_held = (int *)(block + order_held);
    st->order_key = (int *)(block + order_key);
    st->cols = (struct answer_column *)(block + ocols);
    st->vals = (struct answer_value *)(block + vals);
    st->cols_at_hand = (struct outval *)(block + cols_at_hand);
    st->keys_at_hand = (struct outval *)(block + keys_at_hand);
    st->digits = block + digits;
    st->having_numbers = (struct having_number *)(block + having_numbers);
    return st;
}

/* offset + limit, saturating rather than wrapping (each is any bigint >=
 * 0; limit -1: none, UINT64_MAX). */
static uint64_t answer_top(const struct exec *x)
{
    if (x->b.limit < 0)
        return UINT64_MAX;
    return (uint64_t)x->b.offset > UINT64_MAX - (uint64_t)x->b.limit
               ? UINT64_MAX : (uint64_t)x->b.offset + (uint64_t)x->b.limit;
}

/* The rows array of slots rows and a spare, each with its held values.
 * -1 when out of memory (answer_release frees what was made). */
static int rows_new(struct answer_state *st, uint32_t slots)
{
    st->rows = scratch_calloc((size_t)slots + 1, sizeof *st->rows);
    st->held = st->nheld ? scratch_calloc(((size_t)slots + 1) * (size_t)st->nheld, sizeof *st->held)
                         : NULL;
    if (!st->rows || (st->nheld && !st->held))
        return -1;
    for (uint32_t i = 0; i <= slots; i++)
        st->rows[i].held = st->held ? st->held + (size_t)i * (size_t)st->nheld : NULL;
    return 0;
}

/* Group g offered to the rows: its held measures, HAVING (after the
 * roll-up, before ORDER BY and LIMIT), then into the rows or, with heap,
 * the heap of the first top. st->n counts the rows kept; a heap's spare,
 * rows[top], holds nothing between groups. A group that leaves (HAVING
 * false, or after the top) is handed to exec_group_drop when drop is set.
 * 0, or -1 with err. */
static int offer_row(struct exec *x, struct answer_state *st, struct group *g, bool heap,
                     uint64_t top, bool drop, bool *kept, struct ask_error *err)
{
    *kept = false;
    const struct sql_ask *a = x->ask;
    struct row *r = &st->rows[heap && st->n == top ? top : st->n];
    r->group = g;
    if (held_fill(x, st, r)) {
        held_free(st, r->held);
        return ask_fail(err, 500, "internal", "out of memory");
    }
    int keep = T_TRUE;
    if (a->having_pred) {
        struct having_ctx h = {x, st, r, err};
        if ((keep = pred_eval(a->having_pred, having_leaf, &h)) < 0) {
            held_free(st, r->held);
            return -1;
        }
    }
    if (keep == T_TRUE && (!heap || st->n < top)) {
        if (heap)
            heap_up(st, st->n);
        st->n++;
        *kept = true;
        return 0;
    }
    if (keep == T_TRUE && cmp_rows(r, &st->rows[0], st) < 0) {
        struct row t = st->rows[0]; /* the root leaves; its slots become the spare */
        st->rows[0] = *r;
        *r = t;
        heap_down(st, 0, st->n);
        *kept = true;
    }
    held_free(st, r->held);
    if (drop)
        exec_group_drop(x, r->group);
    return 0;
}

/* ---- Top rows kept while the scan goes --------------------------------------------- *
 *
 * An ask with LIMIT whose groups settle as the scan goes (exec.c
 * settle_groups: grouped by time, its cells in time order) needs no more
 * than the first offset + limit of them: each group is offered to a heap
 * of that many as it settles, and one that leaves gives its memory back
 * at once (exec_group_drop). answer_prepare then orders the groups kept
 * as it would order them all. Why: the top five hours by fare of six
 * months by zone and payment type held 1,178,370 settled groups, 587 MiB
 * of an ask's memory, to hand over five. */

int answer_keep_start(struct exec *x)
{
    uint64_t top = answer_top(x);
    if (top == 0 || top > ANSWER_KEEP_MAX)
        return 0;
    struct answer_state *st = state_new(x->ask);
    if (!st)
        return -1;
    x->keep = st;
    st->x = x;
    plan_held(x, st);
    for (int k = 0; k <= x->ask->ngroup_keys; k++) {
        key_rank_kind(x, st, k);
        st->ranks[k].by_text = st->ranks[k].kind == RANK_TEXT;
    }
    return rows_new(st, (uint32_t)top); /* answer_keep_release frees what was made */
}

int answer_keep(struct exec *x, struct group *g, struct ask_error *err)
{
    bool kept;
    if (offer_row(x, x->keep, g, true, answer_top(x), true, &kept, err)) {
        exec_group_drop(x, g);
        return -1;
    }
    if (x->answer_failed) {
        *err = x->answer_err;
        return -1;
    }
    /* Settled only once kept: what decides its place (ORDER BY, HAVING)
     * was read from its value counts as they are, and the rest is worth
     * finishing only for a row that may be answered. A kept row that
     * leaves later was settled for nothing, but after the first few
     * thousand groups a heap of a few rows admits few. */
    if (!kept) /* g was dropped */
        return 0;
    if (x->nsettle && answer_settle(x, g, err))
        return -1; /* g is the heap's: answer_keep_release drops it */
    g->settled = true;
    return 0;
}

/* Frees the kept rows' state; with drop, their groups too. */
static void keep_free(struct exec *x, bool drop)
{
    struct answer_state *st = x->keep;
    for (uint32_t i = 0; i < st->n; i++) {
        held_free(st, st->rows[i].held);
        if (drop)
            exec_group_drop(x, st->rows[i].group);
    }
    scratch_free(st->held);
    scratch_free(st->rows);
    scratch_free(st);
    x->keep = NULL;
}

int answer_keep_end(struct exec *x, struct ask_error *err)
{
    struct group_map *m = &x->groups;
    uint32_t n = x->keep->n;
    if (m->n + n > m->cap) {
        struct group **all = scratch_realloc(m->all, sizeof *all * ((size_t)m->n + n));
        if (!all)
            return ask_fail(err, 500, "internal", "out of memory"); /* answer_keep_release */
        m->all = all;
        m->cap = m->n + n;
    }
    for (uint32_t i = 0; i < n; i++)
        m->all[m->n++] = x->keep->rows[i].group;
    keep_free(x, false);
    return 0;
}

void answer_keep_release(struct exec *x)
{
    if (x->keep)
        keep_free(x, true);
}

int answer_prepare(struct exec *x, struct ask_error *err)
{
    const struct sql_ask *a = x->ask;
    struct answer_state *st = state_new(a);
    if (!st)
        return ask_fail(err, 500, "internal", "out of memory");
    x->answer = st;
    st->x = x;
    uint32_t ngroups = x->groups.n;
    uint64_t top = answer_top(x);
    bool heap = top > 0 && top < ngroups;
    plan_held(x, st);
    if (rows_new(st, heap ? (uint32_t)top : ngroups))
        return ask_fail(err, 500, "internal", "out of memory");
    for (int k = 0; k <= a->ngroup_keys; k++)
        if (key_rank_build(x, st, k))
            return ask_fail(err, 500, "internal", "out of memory");
    for (uint32_t i = 0; i < ngroups; i++) {
        bool kept;
        if (i % BUDGET_CELLS == BUDGET_CELLS - 1 && exec_over_budget(x, err))
            return -1;
        if (offer_row(x, st, x->groups.all[i], heap, top, false, &kept, err))
            return -1;
    }
    if (x->answer_failed) {
        *err = x->answer_err;
        return -1;
    }
    if (!rows_in_order(st) && !sort_by_rank_tuples(st))
        qsort_r(st->rows, st->n, sizeof *st->rows, cmp_rows, st);
    for (int c = 0; c < a->ncolumns; c++)
        st->cols[c] = (struct answer_column){a->columns[c].name, answer_column_oid(a, x->types, c)};
    int64_t n = st->n;
    st->at = x->b.offset < n ? x->b.offset : n;
    st->last = x->b.limit < 0 || x->b.limit > n - st->at ? n : st->at + x->b.limit;
    return 0;
}

/* Row r's output columns into cols_at_hand (freeing the last row's): the
 * columns it hands over. */
static const struct outval *row_cols(struct exec *x, struct answer_state *st, struct row *r,
                                     struct ask_error *err)
{
    const struct sql_ask *a = x->ask;
    for (int c = 0; c < a->ncolumns; c++) {
        scratch_free(st->cols_at_hand[c].owned);
        st->cols_at_hand[c] = (struct outval){.kind = OV_NULL};
    }
    struct group *g = r->group;
    st->keys_at_hand[0] = (struct outval){.kind = a->group_by_bucket ? OV_TIME : OV_NULL, .i = g->key[0]};
    for (int k = 0; k < a->ngroup_keys; k++) {
        const struct key_rank *kr = &st->ranks[k + 1];
        uint64_t rank = kr->texts ? key_rank_of(st, g, k + 1) : UINT64_MAX;
        st->keys_at_hand[k + 1] =
            rank < kr->ntexts ? (struct outval){.kind = OV_TEXT, .text = kr->texts[rank].text,
                                                .len = kr->texts[rank].len}
                              : key_value(x, k, g->key[k + 1]);
    }
    if (fill_cols(x, st, r, st->keys_at_hand, st->cols_at_hand)) {
        ask_fail(err, 500, "internal", "out of memory");
        return NULL;
    }
    if (x->answer_failed) {
        *err = x->answer_err;
        return NULL;
    }
    return st->cols_at_hand;
}

int answer_next(struct exec *x, const struct answer_sink *sink, int64_t max_rows, bool *done,
                struct ask_error *err)
{
    const struct sql_ask *a = x->ask;
    struct answer_state *st = x->answer;
    if (!st->columns_sent) {
        st->columns_sent = true;
        if (sink->columns(sink->ctx, st->cols, a->ncolumns, err))
            return -1;
    }
    for (int64_t k = 0; k < max_rows && st->at < st->last; k++, st->at++) {
        const struct outval *cols = row_cols(x, st, &st->rows[st->at], err);
        if (!cols)
            return -1;
        for (int c = 0; c < a->ncolumns; c++)
            st->vals[c] = typed_value(x, &cols[c], st->cols[c].type_oid,
                                      st->digits + (size_t)c * DIGITS_CAP, DIGITS_CAP);
        if (sink->row(sink->ctx, st->vals, a->ncolumns, err))
            return -1;
    }
    *done = st->at == st->last;
    return 0;
}

void answer_release(struct exec *x)
{
    struct answer_state *st = x->answer;
    if (!st)
        return;
    const struct sql_ask *a = x->ask;
    for (uint32_t i = 0; st->rows && i < st->n; i++)
        held_free(st, st->rows[i].held);
    for (int c = 0; c < a->ncolumns; c++)
        scratch_free(st->cols_at_hand[c].owned);
    for (int k = 0; k <= a->ngroup_keys; k++) {
        hashtab_free(&st->ranks[k].text_rank);
        scratch_free(st->ranks[k].flat);
        scratch_free(st->ranks[k].texts);
    }
    scratch_free(st->held);
    scratch_free(st->rows);
    scratch_free(st); /* and the arrays of state_new */
    x->answer = NULL;
}

int answer_emit(struct exec *x, const struct answer_sink *sink, struct ask_error *err)
{
    bool done;
    return answer_prepare(x, err) || answer_next(x, sink, INT64_MAX, &done, err) ? -1 : 0;
}
