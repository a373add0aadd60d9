/* fuzz_view.c -- libFuzzer target for the view parser (sql/view.c) and what
 * the later layers compute from a compiled view.
 *
 * Each input is parsed as a file of CREATE VIEW statements. A failure must
 * be a positioned error with a message. A success must be a view list the
 * rest of Straum can trust, so it is checked as they would use it:
 *   - every index (fact column, cell key, join, dim column, filter, count,
 *     sum, value count) is in range; widths are positive, ascending, and
 *     multiples of the finest; counts[0] is the unfiltered count(*);
 *   - every filter renders (sql_filter_format) to the length it reports;
 *   - each view's own source text (what the store keeps in its catalog and
 *     parses again at every open) parses alone to the same shape;
 *   - the store's span arithmetic (store_span_buckets, store_span_start)
 *     holds for every width at the edges of the times a store keeps
 *     (UBSan catches an overflow): a span contains its bucket;
 *   - an ask selecting every column of the view, grouped by every key,
 *     compiles against it (what serve's /views promises a client).
 * ASan/LSan/UBSan watch for the rest. */
#include "tests/fuzz/fuzz_check.h"
#include "sql/sql.h"
#include "store/store.h"

#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_error(const struct sql_error *err)
{
    CHECK(err->code != SQL_OK && err->message[0] != '\0' && err->line >= 0 && err->column >= 0);
    CHECK(memchr(err->message, '\0', sizeof err->message) != NULL);
}

static void check_filter(const struct sql_view *v, const struct sql_filter *f, int depth)
{
    CHECK(f && depth <= 2 * SQL_MAX_DEPTH + 8);
    switch (f->kind) {
    case SQL_FILTER_AND:
    case SQL_FILTER_OR:
        check_filter(v, f->left, depth + 1);
        check_filter(v, f->right, depth + 1);
        break;
    case SQL_FILTER_NOT:
        check_filter(v, f->left, depth + 1);
        break;
    case SQL_FILTER_CMP:
    case SQL_FILTER_IN:
    case SQL_FILTER_NOT_IN:
        CHECK(f->values && f->nvalues >= 1);
        CHECK(f->kind != SQL_FILTER_CMP || f->nvalues == 1);
        /* fall through */
    case SQL_FILTER_IS_NULL:
    case SQL_FILTER_IS_NOT_NULL:
        CHECK(f->fact_column >= 0 && f->fact_column < v->nfact_columns);
        break;
    default:
        CHECK(!"unknown filter kind");
    }
}

static void check_view(const struct sql_view *v)
{
    CHECK(v->name && v->source && v->fact_table);
    CHECK(v->nwidths >= 1 && v->widths[0] > 0);
    for (int i = 1; i < v->nwidths; i++)
        CHECK(v->widths[i] > v->widths[i - 1] && v->widths[i] % v->widths[0] == 0);
    CHECK(v->bucket_fact_column >= 0 && v->bucket_fact_column < v->nfact_columns);
    for (int i = 0; i < v->nfact_columns; i++)
        CHECK(v->fact_columns[i].name);
    for (int j = 0; j < v->njoins; j++) {
        const struct sql_join *jn = &v->joins[j];
        CHECK(jn->table && jn->dim_key && jn->ndim_columns >= 1);
        CHECK(jn->fact_column >= 0 && jn->fact_column < v->nfact_columns);
        CHECK(strcmp(jn->dim_columns[0], jn->dim_key) == 0);
    }
    for (int k = 0; k < v->ncell_keys; k++)
        CHECK(v->cell_keys[k] >= 0 && v->cell_keys[k] < v->nfact_columns);
    for (int i = 0; i < v->nfilters; i++)
        check_filter(v, v->filters[i], 0);
    CHECK(v->ncounts >= 1 && v->counts[0].fact_column == -1 && v->counts[0].filter == -1);
    for (int i = 0; i < v->ncounts; i++)
        CHECK(v->counts[i].fact_column >= -1 && v->counts[i].fact_column < v->nfact_columns &&
              v->counts[i].filter >= -1 && v->counts[i].filter < v->nfilters);
    for (int i = 0; i < v->nsums; i++)
        CHECK(v->sums[i].fact_column >= 0 && v->sums[i].fact_column < v->nfact_columns &&
              v->sums[i].filter >= -1 && v->sums[i].filter < v->nfilters);
    for (int i = 0; i < v->nvalue_counts; i++)
        CHECK(v->value_counts[i].fact_column >= 0 &&
              v->value_counts[i].fact_column < v->nfact_columns &&
              v->value_counts[i].filter >= -1 && v->value_counts[i].filter < v->nfilters);
    int buckets = 0;
    for (int i = 0; i < v->ncolumns; i++) {
        const struct sql_view_column *c = &v->columns[i];
        CHECK(c->name);
        CHECK(sql_view_column_find(v, c->name) >= 0);
        switch (c->kind) {
        case SQL_COLUMN_BUCKET:
            buckets++;
            CHECK(c->fact_column == v->bucket_fact_column);
            break;
        case SQL_COLUMN_FACT_KEY:
            CHECK(c->cell_key >= 0 && c->cell_key < v->ncell_keys &&
                  v->cell_keys[c->cell_key] == c->fact_column);
            break;
        case SQL_COLUMN_DIM:
            CHECK(c->join >= 0 && c->join < v->njoins && c->dim_column >= 1 &&
                  c->dim_column < v->joins[c->join].ndim_columns);
            break;
        case SQL_COLUMN_MEASURE: {
            const struct sql_measure *m = &c->measure;
            CHECK(m->fact_column >= -1 && m->fact_column < v->nfact_columns);
            CHECK(m->filter >= -1 && m->filter < v->nfilters);
            CHECK(m->count >= -1 && m->count < v->ncounts);
            CHECK(m->sum >= -1 && m->sum < v->nsums);
            CHECK(m->value_counts >= -1 && m->value_counts < v->nvalue_counts);
            CHECK(m->count >= 0 || m->sum >= 0 || m->value_counts >= 0);
            if (m->agg == SQL_AGG_PERCENTILE_DISC || m->agg == SQL_AGG_PERCENTILE_CONT)
                CHECK(m->fraction_text && m->fraction >= 0 && m->fraction <= 1);
            break;
        }
        default:
            CHECK(!"unknown column kind");
        }
    }
    CHECK(buckets == 1);
    char small[8], *big;
    for (int i = 0; i < v->nfilters; i++) {
        size_t n = sql_filter_format(v, v->filters[i], small, sizeof small);
        CHECK(memchr(small, '\0', sizeof small) != NULL);
        big = malloc(n + 1);
        CHECK(big);
        CHECK(sql_filter_format(v, v->filters[i], big, n + 1) == n && strlen(big) == n);
        free(big);
    }
}

/* The shape two parses of one view must share. */
static void check_same_shape(const struct sql_view *a, const struct sql_view *b)
{
    CHECK(strcmp(a->name, b->name) == 0 && strcmp(a->source, b->source) == 0);
    CHECK(a->nwidths == b->nwidths && a->origin_usec == b->origin_usec &&
          a->origin_has_zone == b->origin_has_zone);
    for (int i = 0; i < a->nwidths; i++)
        CHECK(a->widths[i] == b->widths[i]);
    CHECK(a->ncolumns == b->ncolumns && a->nfact_columns == b->nfact_columns &&
          a->njoins == b->njoins && a->ncell_keys == b->ncell_keys &&
          a->nfilters == b->nfilters && a->ncounts == b->ncounts && a->nsums == b->nsums &&
          a->nvalue_counts == b->nvalue_counts);
    for (int i = 0; i < a->ncolumns; i++)
        CHECK(strcmp(a->columns[i].name, b->columns[i].name) == 0 &&
              a->columns[i].kind == b->columns[i].kind);
}

/* The store's spans: every width, at the ends of the times a store keeps
 * (store_apply refuses the rest). UBSan watches the arithmetic inside; the
 * span's end, which readers compute, must fit too. */
static void check_spans(const struct sql_view *v)
{
    static const int64_t times[] = {
        STORE_MIN_TIME, -62135596800000000LL /* 0001-01-01 */, -1, 0, 1, 1704067200000000LL,
        253402300799999999LL /* 9999-12-31 23:59:59.999999 */, STORE_MAX_TIME - 1,
    };
    for (int w = 0; w < v->nwidths; w++) {
        int n = store_span_buckets(v, w);
        CHECK(n >= 1 && n <= STORE_MAX_SPAN_BUCKETS);
        for (size_t i = 0; i < sizeof times / sizeof times[0]; i++) {
            int64_t s = store_span_start(v, w, times[i]), end;
            CHECK(s <= times[i]);
            CHECK(!__builtin_add_overflow(s, (int64_t)n * v->widths[w], &end) && times[i] < end);
        }
    }
}

/* A double-quoted identifier. */
static void put_ident(char **p, const char *name)
{
    *(*p)++ = '"';
    for (const char *c = name; *c; c++) {
        if (*c == '"')
            *(*p)++ = '"';
        *(*p)++ = *c;
    }
    *(*p)++ = '"';
}

/* SELECT every column FROM v WHERE range GROUP BY every non-measure. */
static void check_full_ask(const struct sql_view_list *list, const struct sql_view *v)
{
    size_t cap = 256 + 4 * strlen(v->name);
    for (int i = 0; i < v->ncolumns; i++)
        cap += 8 * strlen(v->columns[i].name) + 16;
    char *text = malloc(cap), *p = text;
    CHECK(text);
    const char *bucket = NULL;
    p += sprintf(p, "SELECT ");
    for (int i = 0; i < v->ncolumns; i++) {
        if (i)
            p += sprintf(p, ", ");
        put_ident(&p, v->columns[i].name);
        if (v->columns[i].kind == SQL_COLUMN_BUCKET)
            bucket = v->columns[i].name;
    }
    p += sprintf(p, " FROM ");
    put_ident(&p, v->name);
    p += sprintf(p, " WHERE ");
    put_ident(&p, bucket);
    p += sprintf(p, " >= $1 AND ");
    put_ident(&p, bucket);
    p += sprintf(p, " < $2 GROUP BY ");
    bool first = true;
    for (int i = 0; i < v->ncolumns; i++)
        if (v->columns[i].kind != SQL_COLUMN_MEASURE) {
            if (!first)
                p += sprintf(p, ", ");
            first = false;
            put_ident(&p, v->columns[i].name);
        }
    *p = '\0';
    struct sql_error err;
    struct sql_ask *a = sql_parse_ask(text, list, &err);
    if (!a) {
        char buf[400];
        fprintf(stderr, "FUZZ FINDING: the ask\n  %s\ndoes not compile against its view: %s\n",
                text, sql_error_format(&err, buf, sizeof buf));
        abort();
    }
    CHECK(a->view == v && a->ncolumns == v->ncolumns && a->group_by_bucket &&
          a->bucket_width == v->widths[0] && a->nparams == 2);
    sql_ask_free(a);
    free(text);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = malloc(size + 1);
    if (!text)
        return 0;
    memcpy(text, data, size);
    text[size] = '\0';

    struct sql_error err;
    struct sql_view_list *views = sql_parse_views(text, &err);
    if (!views) {
        check_error(&err);
        free(text);
        return 0;
    }
    CHECK(views->nviews >= 1);
    for (int i = 0; i < views->nviews; i++) {
        const struct sql_view *v = &views->views[i];
        check_view(v);
        CHECK(sql_view_find(views, v->name) == v);
        struct sql_view_list *again = sql_parse_views(v->source, &err);
        if (!again) {
            char buf[400];
            fprintf(stderr, "FUZZ FINDING: view \"%s\"'s source does not parse alone: %s\n%s\n",
                    v->name, sql_error_format(&err, buf, sizeof buf), v->source);
            abort();
        }
        CHECK(again->nviews == 1);
        check_same_shape(v, &again->views[0]);
        sql_view_list_free(again);
        check_spans(v);
        check_full_ask(views, v);
    }
    sql_view_list_free(views);
    free(text);
    return 0;
}
