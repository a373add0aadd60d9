/* bind.c -- an ask's parameters and literals turned into what cells hold.
 *
 * A parameter's type comes from where it stands (sql_ask params): bucket
 * edges are timestamps, read in the ask's time zone when written without an
 * offset, and mark which of the view's buckets the ask reads (those whose
 * start lies in the range: bind_range); key values take the key's type
 * through store_code_of_value, PostgreSQL's input rules (a text is looked
 * up in the dictionary: a text never seen matches nothing); dim columns
 * compare as text, as their projections hold them; LIMIT and OFFSET take
 * non-negative integers. A value of the wrong
 * kind is a 422 naming the parameter. */
#include "engine/internal.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The value of an operand as text and kind, whether parameter or literal. */
struct operand_value {
    enum ask_value_kind kind;
    bool boolean;
    const char *text;
    size_t len;
};

static int operand(const struct sql_operand *o, const struct ask_request *req,
                   struct operand_value *out, struct ask_error *err)
{
    if (o->is_param) {
        if (o->param > req->nparams)
            return ask_fail(err, 422, "missing_parameter",
                            "the ask uses $%d but %d parameter%s given", o->param, req->nparams,
                            req->nparams == 1 ? " was" : "s were");
        const struct ask_value *v = &req->params[o->param - 1];
        *out = (struct operand_value){v->kind, v->boolean, v->text, v->len};
        return 0;
    }
    const struct sql_const *c = &o->lit;
    switch (c->kind) {
    case SQL_CONST_NULL: *out = (struct operand_value){ASK_NULL, false, NULL, 0}; break;
    case SQL_CONST_BOOL: *out = (struct operand_value){ASK_BOOL, c->boolean, NULL, 0}; break;
    case SQL_CONST_NUMBER: *out = (struct operand_value){ASK_NUMBER, false, c->text, c->len}; break;
    case SQL_CONST_STRING: *out = (struct operand_value){ASK_STRING, false, c->text, c->len}; break;
    }
    return 0;
}

/* Names an operand in messages: "$3" or "the literal at line 1, column 40". */
static const char *what(const struct sql_operand *o, char *buf, size_t len)
{
    if (o->is_param)
        snprintf(buf, len, "parameter $%d", o->param);
    else
        snprintf(buf, len, "the value at line %d, column %d", o->line, o->column);
    return buf;
}

static int bind_time(const struct sql_operand *o, const struct ask_request *req,
                     const struct bound *b, int64_t *out, struct ask_error *err)
{
    struct operand_value v = {0};
    char name[64], text[128], why[200];
    if (operand(o, req, &v, err))
        return -1;
    if (v.kind != ASK_STRING || v.len >= sizeof text)
        return ask_fail(err, 422, "bad_parameter",
                        "%s is a bucket edge: give a timestamp string such as \"2024-01-17\"",
                        what(o, name, sizeof name));
    memcpy(text, v.text, v.len);
    text[v.len] = '\0';
    bool has_offset;
    if (!sql_parse_timestamp(text, out, &has_offset, why, sizeof why))
        return ask_fail(err, 422, "bad_parameter", "%s: %s", what(o, name, sizeof name), why);
    if (!has_offset)
        *out = tz_local_to_utc(b->tz, *out);
    return 0;
}

/* A fact key value as its code: store_code_of_value, PostgreSQL's input
 * rules for the key's type (SPEC.md §4.1), a JSON number or numeric literal
 * as a number as written, a string as text, a boolean as a boolean. A
 * timestamptz written without an offset is read in the ask's time zone.
 * Returns 0 with a code, 1 when no stored value can equal the value (it
 * matches nothing: a text never seen, more decimals than the column keeps,
 * a number past the column's range; why says which, but for a text), -1
 * with a 422 naming the operand and the type. */
static int key_code(struct store_read *r, int view, int fact_col, const struct store_column_type *t,
                    const struct bound *b, const struct sql_operand *o,
                    const struct operand_value *v, int64_t *code, char *why, size_t whylen,
                    struct ask_error *err)
{
    char name[64];
    if (v->kind == ASK_NULL)
        return ask_fail(err, 422, "bad_parameter",
                        "%s is NULL: compare with IS NULL or IS NOT NULL instead",
                        what(o, name, sizeof name));
    struct store_value sv = {v->kind == ASK_BOOL     ? STORE_VALUE_BOOL
                             : v->kind == ASK_NUMBER ? STORE_VALUE_NUMBER
                                                     : STORE_VALUE_TEXT,
                             v->boolean, v->text, v->len};
    struct store_coded coded;
    int rc = store_code_of_value(t, &sv, &coded, why, whylen);
    if (rc == STORE_CODE_REFUSED)
        return ask_fail(err, 422, "bad_parameter", "%s: %s", what(o, name, sizeof name), why);
    if (rc == STORE_CODE_NONE)
        return 1;
    if (t->type == STORE_TYPE_TEXT)
        return store_dict_find(r, view, fact_col, coded.text, coded.len, code);
    *code = coded.local ? tz_local_to_utc(b->tz, coded.code) : coded.code;
    return 0;
}

/* A dim value compares as the text the projection holds. */
static int dim_text(const struct sql_operand *o, const struct operand_value *v, char **text,
                    size_t *len, struct ask_error *err)
{
    char name[64];
    if (v->kind == ASK_NULL)
        return ask_fail(err, 422, "bad_parameter",
                        "%s is NULL: compare with IS NULL or IS NOT NULL instead",
                        what(o, name, sizeof name));
    const char *s = v->kind == ASK_BOOL ? (v->boolean ? "true" : "false") : v->text;
    *len = v->kind == ASK_BOOL ? strlen(s) : v->len;
    *text = scratch_malloc(*len + 1);
    if (!*text)
        return ask_fail(err, 500, "internal", "out of memory");
    memcpy(*text, s, *len);
    (*text)[*len] = '\0';
    return 0;
}

static bool is_range(enum sql_ask_cond_kind k)
{
    return k == SQL_COND_LT || k == SQL_COND_LE || k == SQL_COND_GT || k == SQL_COND_GE;
}

/* A pattern ending in a lone backslash has nothing to quote: PostgreSQL
 * refuses it too. */
static bool pattern_ok(const char *s, size_t n)
{
    size_t i = 0;
    while (i < n)
        i += s[i] == '\\' ? 2 : 1;
    return i == n;
}

static int bind_cond(struct store_read *r, const struct sql_ask *ask, int view,
                     const struct store_column_type *types, const struct ask_request *req,
                     const struct bound *b, const struct sql_ask_cond *c, struct bound_cond *out,
                     struct ask_error *err)
{
    const struct sql_view *v = ask->view;
    const struct sql_view_column *vc = &v->columns[c->view_column];
    out->kind = c->kind;
    out->is_dim = vc->kind == SQL_COLUMN_DIM;
    out->cell_key = vc->cell_key;
    out->join = vc->join;
    out->dim_value = vc->dim_column - 1;
    if (c->nvalues == 0)
        return 0;
    bool pattern = c->kind == SQL_COND_LIKE || c->kind == SQL_COND_ILIKE;
    const struct store_column_type *ft =
        out->is_dim ? NULL : &types[v->cell_keys[vc->cell_key]];
    if (pattern && ft && ft->type != STORE_TYPE_TEXT)
        return ask_fail(err, 422, "bad_condition",
                        "%s compares text: \"%s\" is not a text key (line %d, column %d)",
                        c->kind == SQL_COND_LIKE ? "LIKE" : "ILIKE", vc->name, c->line, c->column);
    /* Ranges on text, and patterns, test each value's text. */
    out->by_text = pattern || (is_range(c->kind) && (out->is_dim || ft->type == STORE_TYPE_TEXT));
    out->codes = scratch_calloc((size_t)c->nvalues, sizeof *out->codes);
    out->texts = scratch_calloc((size_t)c->nvalues, sizeof *out->texts);
    out->lens = scratch_calloc((size_t)c->nvalues, sizeof *out->lens);
    if (!out->codes || !out->texts || !out->lens)
        return ask_fail(err, 500, "internal", "out of memory");
    for (int i = 0; i < c->nvalues; i++) {
        struct operand_value val = {0};
        if (operand(&c->values[i], req, &val, err))
            return -1;
        if (out->is_dim || out->by_text) {
            char name[64];
            if (out->by_text && val.kind != ASK_STRING)
                return ask_fail(err, 422, "bad_parameter", "%s is compared with text: give a string",
                                what(&c->values[i], name, sizeof name));
            if (dim_text(&c->values[i], &val, &out->texts[out->ntexts], &out->lens[out->ntexts], err))
                return -1;
            if (pattern && !pattern_ok(out->texts[out->ntexts], out->lens[out->ntexts]))
                return ask_fail(err, 422, "bad_parameter",
                                "%s: a LIKE pattern must not end with the escape character \\",
                                what(&c->values[i], name, sizeof name));
            out->ntexts++;
            continue;
        }
        int fc = v->cell_keys[vc->cell_key];
        char why[240] = "";
        int rc = key_code(r, view, fc, &types[fc], b, &c->values[i], &val,
                          &out->codes[out->ncodes], why, sizeof why, err);
        if (rc < 0)
            return -1;
        if (rc == 1 && is_range(c->kind)) {
            char name[64];
            return ask_fail(err, 422, "bad_parameter",
                            "%s: %s: a range on key \"%s\" compares values the key can hold",
                            what(&c->values[i], name, sizeof name), why, vc->name);
        }
        if (rc == 0)
            out->ncodes++; /* a value no cell can hold drops out of the list */
    }
    return 0;
}

/* LIMIT and OFFSET: a JSON number or literal that is a whole number from 0
 * to INT64_MAX, read as a bigint number ("1e3" is 1000). */
static int bind_count(const struct sql_operand *o, const struct ask_request *req, int64_t *out,
                      struct ask_error *err)
{
    static const struct store_column_type count_type = {STORE_TYPE_INT, 0, PG_INT8};
    struct operand_value v = {0};
    char name[64];
    if (operand(o, req, &v, err))
        return -1;
    struct store_value sv = {STORE_VALUE_NUMBER, false, v.text, v.len};
    struct store_coded coded;
    if (v.kind != ASK_NUMBER || store_code_of_value(&count_type, &sv, &coded, NULL, 0) != 0 ||
        coded.code < 0)
        return ask_fail(err, 422, "bad_parameter", "%s must be a non-negative integer",
                        what(o, name, sizeof name));
    *out = coded.code;
    return 0;
}

/* Floors t to an edge of width w from origin. Within the times a store
 * keeps (t clamped to them first), and widths of at most
 * SQL_MAX_WIDTH_USEC, nothing overflows. */
static int64_t floor_to_edge(int64_t t, int64_t origin, int64_t w)
{
    int64_t rel = t - origin, q = rel / w - (rel % w != 0 && rel < 0);
    return origin + q * w;
}

static int64_t clamp_time(int64_t t)
{
    return t < STORE_MIN_TIME ? STORE_MIN_TIME : t > STORE_MAX_TIME ? STORE_MAX_TIME : t;
}

/* The range as the view's buckets whose start satisfies it, [from, to) on
 * edges of the finest width: bucket >= a starts at the first edge at or
 * after a, bucket > a at the first after a; bucket < z ends at the first
 * edge at or after z, bucket <= z after the first edge after z. A missing
 * side is every bucket a store can hold on that side. */
static int bind_range(const struct sql_ask *ask, const struct ask_request *req,
                      struct bound *out, struct ask_error *err)
{
    const struct sql_view *v = ask->view;
    int64_t w = v->widths[0], o = v->origin_usec, t;
    out->from = out->all_from = floor_to_edge(STORE_MIN_TIME, o, w) + w;
    out->to = out->all_to = floor_to_edge(STORE_MAX_TIME, o, w);
    if (ask->has_range_from) {
        if (bind_time(&ask->range_from, req, out, &t, err))
            return -1;
        int64_t e = floor_to_edge(clamp_time(t), o, w);
        out->from = e == t && ask->range_from_inclusive ? e : e + w;
        out->has_from = true;
    }
    if (ask->has_range_to) {
        if (bind_time(&ask->range_to, req, out, &t, err))
            return -1;
        int64_t e = floor_to_edge(clamp_time(t), o, w);
        out->to = e == t && !ask->range_to_inclusive ? e : e + w;
        out->has_to = true;
    }
    if (out->to < out->from)
        out->to = out->from; /* an empty range: no bucket */
    return 0;
}

int bind_ask(struct store_read *r, const struct sql_ask *ask, int view,
             const struct store_column_type *types, const struct ask_request *req,
             struct bound *out, struct ask_error *err)
{
    memset(out, 0, sizeof *out);
    out->limit = -1;
    char why[200];
    if (!(out->tz = tz_get(req->time_zone, why, sizeof why)))
        return ask_fail(err, 422, "bad_time_zone", "%s", why);
    if (req->nparams > ask->nparams)
        return ask_fail(err, 422, "extra_parameter", "%d parameters were given but the ask uses %d",
                        req->nparams, ask->nparams);
    if (bind_range(ask, req, out, err))
        return -1;
    if (ask->bucket_calendar &&
        !(out->group_tz = ask->bucket_zone ? tz_get(ask->bucket_zone, why, sizeof why) : out->tz))
        return ask_fail(err, 422, "bad_time_zone", "date_trunc's time zone: %s", why);
    out->conds = scratch_calloc((size_t)ask->nconds + 1, sizeof *out->conds);
    if (!out->conds)
        return ask_fail(err, 500, "internal", "out of memory");
    for (int i = 0; i < ask->nconds; i++, out->nconds++)
        if (bind_cond(r, ask, view, types, req, out, &ask->conds[i], &out->conds[i], err)) {
            out->nconds++;
            return -1;
        }
    if (ask->nhaving && !(out->having = scratch_calloc((size_t)ask->nhaving, sizeof *out->having)))
        return ask_fail(err, 500, "internal", "out of memory");
    for (int i = 0; i < ask->nhaving; i++) {
        struct operand_value v = {0};
        char name[64];
        if (operand(&ask->having[i].value, req, &v, err))
            return -1;
        if (v.kind == ASK_NULL)
            return ask_fail(err, 422, "bad_parameter",
                            "%s is NULL: a comparison with NULL is never true",
                            what(&ask->having[i].value, name, sizeof name));
        out->having[i] = (struct ask_value){v.kind, v.boolean, v.text, v.len};
    }
    if (ask->has_limit && bind_count(&ask->limit, req, &out->limit, err))
        return -1;
    if (ask->has_offset && bind_count(&ask->offset, req, &out->offset, err))
        return -1;
    return 0;
}

void bound_free(struct bound *b)
{
    for (int i = 0; i < b->nconds; i++) {
        for (int k = 0; k < b->conds[i].ntexts; k++)
            scratch_free(b->conds[i].texts[k]);
        scratch_free(b->conds[i].texts);
        scratch_free(b->conds[i].lens);
        scratch_free(b->conds[i].codes);
        scratch_free(b->conds[i].memo);
    }
    scratch_free(b->conds);
    scratch_free(b->having);
    memset(b, 0, sizeof *b);
}
