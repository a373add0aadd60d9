/* answer.c -- answers from PostgreSQL and straum-serve as sorted rows of
 * normalized text, and their comparison (see answer.h). */
#include "tests/kit/answer.h"

#include "sql/sql.h"

#include <cjson/cJSON.h>
#include <inttypes.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A timestamp with an offset becomes "@<µs since the epoch>", so
 * "2024-01-17 00:00:00-05" and "2024-01-17T00:00:00-05:00" agree. */
static void normalize_text(const char *in, char *out, size_t len)
{
    int64_t us;
    bool off;
    char why[100];
    if (strlen(in) >= 19 && in[4] == '-' && in[7] == '-' && (in[10] == ' ' || in[10] == 'T') &&
        sql_parse_timestamp(in, &us, &off, why, sizeof why) && off)
        snprintf(out, len, "@%" PRId64, us);
    else
        snprintf(out, len, "%s", in);
}

/* A JSON number: an integer as such, else the fewest digits that read back
 * exactly (what PostgreSQL prints for float8 since version 12). */
static void format_number(double v, char *out, size_t len)
{
    if (isfinite(v) && v == floor(v) && fabs(v) < 9007199254740992.0) {
        snprintf(out, len, "%.0f", v);
        return;
    }
    for (int prec = 1; prec <= 17; prec++) {
        snprintf(out, len, "%.*g", prec, v);
        if (strtod(out, NULL) == v)
            return;
    }
}

static char *xstrdup(const char *s)
{
    size_t n = strlen(s) + 1;
    char *p = malloc(n);
    if (p)
        memcpy(p, s, n);
    return p;
}

static int cmp_rows(const void *a, const void *b)
{
    return strcmp(((const struct answer_row *)a)->key, ((const struct answer_row *)b)->key);
}

/* Starts a row of a->ncols cells; the key grows as cells are set. */
struct row_builder {
    char *key;
    size_t len, cap;
};

static int key_append(struct row_builder *rb, const char *norm, bool first)
{
    size_t n = strlen(norm) + 2;
    if (rb->len + n + 1 > rb->cap) {
        size_t cap = rb->cap ? rb->cap : 128;
        while (cap < rb->len + n + 1)
            cap *= 2;
        char *p = realloc(rb->key, cap);
        if (!p)
            return -1;
        rb->key = p;
        rb->cap = cap;
    }
    if (!first)
        rb->key[rb->len++] = '|';
    memcpy(rb->key + rb->len, norm, n - 2);
    rb->len += n - 2;
    rb->key[rb->len] = '\0';
    return 0;
}

static int alloc_answer(struct answer *a, int ncols, int nrows)
{
    memset(a, 0, sizeof *a);
    a->ncols = ncols;
    a->columns = calloc((size_t)ncols + 1, sizeof *a->columns);
    a->rows = calloc((size_t)nrows + 1, sizeof *a->rows);
    if (!a->columns || !a->rows)
        return -1;
    for (int r = 0; r < nrows; r++) {
        a->rows[r].cells = calloc((size_t)ncols + 1, sizeof *a->rows[r].cells);
        if (!a->rows[r].cells)
            return -1;
        a->nrows = r + 1;
    }
    return 0;
}

int answer_from_pg(const PGresult *res, struct answer *a)
{
    int ncols = PQnfields(res), nrows = PQntuples(res);
    if (alloc_answer(a, ncols, nrows) != 0)
        goto oom;
    for (int c = 0; c < ncols; c++)
        if (!(a->columns[c] = xstrdup(PQfname(res, c))))
            goto oom;
    for (int r = 0; r < nrows; r++) {
        struct row_builder rb = {0};
        for (int c = 0; c < ncols; c++) {
            const char *v = PQgetisnull(res, r, c) ? "NULL" : PQgetvalue(res, r, c);
            char norm[512];
            normalize_text(v, norm, sizeof norm);
            if (!(a->rows[r].cells[c] = xstrdup(v)) || key_append(&rb, norm, c == 0) != 0) {
                free(rb.key);
                goto oom;
            }
        }
        a->rows[r].key = rb.key ? rb.key : xstrdup("");
        a->rows[r].seq = r;
        if (!a->rows[r].key)
            goto oom;
    }
    if (nrows)
        qsort(a->rows, (size_t)nrows, sizeof *a->rows, cmp_rows);
    return 0;
oom:
    answer_free(a);
    return -1;
}

int answer_from_json(const char *json, struct answer *a, char *err, size_t errlen)
{
    memset(a, 0, sizeof *a);
    cJSON *root = cJSON_Parse(json);
    if (!root) {
        snprintf(err, errlen, "not JSON: %.200s", json);
        return -1;
    }
    const cJSON *cols = cJSON_GetObjectItemCaseSensitive(root, "columns");
    const cJSON *rows = cJSON_GetObjectItemCaseSensitive(root, "rows");
    if (!cJSON_IsArray(cols) || !cJSON_IsArray(rows)) {
        snprintf(err, errlen, "no \"columns\" and \"rows\" arrays in %.200s", json);
        cJSON_Delete(root);
        return -1;
    }
    int ncols = cJSON_GetArraySize(cols), nrows = cJSON_GetArraySize(rows);
    if (alloc_answer(a, ncols, nrows) != 0)
        goto oom;
    int c = 0;
    const cJSON *item;
    cJSON_ArrayForEach(item, cols)
    {
        if (!(a->columns[c++] = xstrdup(cJSON_IsString(item) ? item->valuestring : "?")))
            goto oom;
    }
    int r = 0;
    const cJSON *row;
    cJSON_ArrayForEach(row, rows)
    {
        if (!cJSON_IsArray(row) || cJSON_GetArraySize(row) != ncols) {
            snprintf(err, errlen, "row %d is not an array of %d values", r + 1, ncols);
            answer_free(a);
            cJSON_Delete(root);
            return -1;
        }
        struct row_builder rb = {0};
        c = 0;
        cJSON_ArrayForEach(item, row)
        {
            char shown[512], norm[512];
            if (cJSON_IsNull(item))
                snprintf(shown, sizeof shown, "NULL");
            else if (cJSON_IsString(item))
                snprintf(shown, sizeof shown, "%s", item->valuestring);
            else if (cJSON_IsBool(item))
                snprintf(shown, sizeof shown, "%s", cJSON_IsTrue(item) ? "t" : "f");
            else if (cJSON_IsNumber(item))
                format_number(item->valuedouble, shown, sizeof shown);
            else
                snprintf(shown, sizeof shown, "?");
            normalize_text(shown, norm, sizeof norm);
            if (!(a->rows[r].cells[c] = xstrdup(shown)) || key_append(&rb, norm, c == 0) != 0) {
                free(rb.key);
                goto oom;
            }
            c++;
        }
        a->rows[r].key = rb.key ? rb.key : xstrdup("");
        a->rows[r].seq = r;
        if (!a->rows[r].key)
            goto oom;
        r++;
    }
    cJSON_Delete(root);
    if (nrows)
        qsort(a->rows, (size_t)nrows, sizeof *a->rows, cmp_rows);
    return 0;
oom:
    snprintf(err, errlen, "out of memory");
    answer_free(a);
    cJSON_Delete(root);
    return -1;
}

bool answer_equal(const struct answer *want, const struct answer *got, char *why, size_t whylen)
{
    if (want->ncols != got->ncols) {
        snprintf(why, whylen, "%d columns from PostgreSQL, %d from Straum", want->ncols,
                 got->ncols);
        return false;
    }
    int i = 0, j = 0;
    while (i < want->nrows && j < got->nrows) {
        int d = strcmp(want->rows[i].key, got->rows[j].key);
        if (d == 0) {
            i++, j++;
            continue;
        }
        if (d < 0)
            snprintf(why, whylen, "PostgreSQL has row (%s) that Straum has not%s%s%s",
                     want->rows[i].key, j < got->nrows ? "; Straum's next is (" : "",
                     j < got->nrows ? got->rows[j].key : "", j < got->nrows ? ")" : "");
        else
            snprintf(why, whylen, "Straum has row (%s) that PostgreSQL has not%s%s%s",
                     got->rows[j].key, "; PostgreSQL's next is (", want->rows[i].key, ")");
        return false;
    }
    if (i < want->nrows || j < got->nrows) {
        snprintf(why, whylen, "%d rows from PostgreSQL, %d from Straum; first extra: (%s)",
                 want->nrows, got->nrows,
                 i < want->nrows ? want->rows[i].key : got->rows[j].key);
        return false;
    }
    return true;
}

bool answer_equal_in_order(const struct answer *want, const struct answer *got, char *why,
                           size_t whylen)
{
    if (!answer_equal(want, got, why, whylen))
        return false;
    int n = want->nrows;
    const char **w = calloc((size_t)n + 1, sizeof *w), **g = calloc((size_t)n + 1, sizeof *g);
    bool same = w && g;
    if (!same)
        snprintf(why, whylen, "out of memory");
    for (int i = 0; same && i < n; i++) {
        w[want->rows[i].seq] = want->rows[i].key;
        g[got->rows[i].seq] = got->rows[i].key;
    }
    for (int i = 0; same && i < n; i++)
        if (strcmp(w[i], g[i]) != 0) {
            snprintf(why, whylen, "the same rows in another order: row %d is (%s) from "
                     "PostgreSQL, (%s) from Straum", i + 1, w[i], g[i]);
            same = false;
        }
    free(w);
    free(g);
    return same;
}

void answer_free(struct answer *a)
{
    if (a->columns)
        for (int c = 0; c < a->ncols; c++)
            free(a->columns[c]);
    free(a->columns);
    if (a->rows)
        for (int r = 0; r < a->nrows; r++) {
            free(a->rows[r].key);
            if (a->rows[r].cells)
                for (int c = 0; c < a->ncols; c++)
                    free(a->rows[r].cells[c]);
            free(a->rows[r].cells);
        }
    free(a->rows);
    memset(a, 0, sizeof *a);
}
