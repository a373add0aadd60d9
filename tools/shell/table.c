/* table.c -- rows for printing: a small column-named grid of cells, and the
 * engine's answer JSON ({"columns": [...], "rows": [[...], ...]}) read into
 * one with cJSON. cJSON reads numbers through a double, and an answer's
 * numbers must print exactly as the engine wrote them (a 20-digit key, a
 * float's shortest digits); so each number's own text is taken from the
 * JSON text, in document order, beside the tree. */
#include "tools/shell/shell.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char *dup_text(const char *s)
{
    size_t n = strlen(s);
    char *d = malloc(n + 1);
    if (d)
        memcpy(d, s, n + 1);
    return d;
}

void table_init(struct table *t, int ncols, const char *const *names)
{
    memset(t, 0, sizeof *t);
    t->ncols = ncols;
    t->names = calloc(ncols > 0 ? (size_t)ncols : 1, sizeof *t->names);
    if (!t->names) {
        t->failed = true;
        t->ncols = 0;
        return;
    }
    for (int i = 0; i < ncols; i++)
        if (!(t->names[i] = dup_text(names[i] ? names[i] : "")))
            t->failed = true;
}

void table_add(struct table *t, enum cell_kind kind, const char *text)
{
    if (t->failed || t->ncols == 0)
        return;
    if (t->ncells == t->cap) {
        size_t cap = t->cap ? t->cap * 2 : 64;
        struct cell *c = realloc(t->cells, cap * sizeof *c);
        if (!c) {
            t->failed = true;
            return;
        }
        t->cells = c;
        t->cap = cap;
    }
    struct cell *c = &t->cells[t->ncells];
    c->kind = kind;
    c->text = NULL;
    if (kind != CELL_NULL && !(c->text = dup_text(text ? text : ""))) {
        t->failed = true;
        return;
    }
    t->ncells++;
    t->nrows = (int)(t->ncells / (size_t)t->ncols);
}

void table_free(struct table *t)
{
    for (int i = 0; t->names && i < t->ncols; i++)
        free(t->names[i]);
    free(t->names);
    for (size_t i = 0; i < t->ncells; i++)
        free(t->cells[i].text);
    free(t->cells);
    free(t->range);
    memset(t, 0, sizeof *t);
}

/* ---- Numbers as written ------------------------------------------------------ */

struct numbers {
    const char **at; /* start of each number token, in document order */
    size_t *len;
    size_t n, next;
};

/* Every number token outside strings (the text is JSON cJSON accepted). */
static int collect_numbers(const char *s, struct numbers *nums)
{
    size_t cap = 0;
    for (size_t i = 0; s[i];) {
        char c = s[i];
        if (c == '"') {
            for (i++; s[i] && s[i] != '"'; i++)
                if (s[i] == '\\' && s[i + 1])
                    i++;
            if (s[i])
                i++;
            continue;
        }
        if (c == '-' || (c >= '0' && c <= '9')) {
            size_t j = i;
            while (s[j] && strchr("0123456789+-.eE", s[j]))
                j++;
            if (nums->n == cap) {
                cap = cap ? cap * 2 : 64;
                const char **a = realloc(nums->at, cap * sizeof *a);
                if (a)
                    nums->at = a;
                size_t *l = a ? realloc(nums->len, cap * sizeof *l) : NULL;
                if (!a || !l)
                    return -1;
                nums->len = l;
            }
            nums->at[nums->n] = s + i;
            nums->len[nums->n++] = j - i;
            i = j;
            continue;
        }
        i++;
    }
    return 0;
}

static void add_value(struct table *t, const cJSON *v, struct numbers *nums)
{
    if (cJSON_IsNull(v)) {
        table_add(t, CELL_NULL, NULL);
    } else if (cJSON_IsBool(v)) {
        table_add(t, CELL_BOOL, cJSON_IsTrue(v) ? "t" : "f");
    } else if (cJSON_IsString(v)) {
        table_add(t, CELL_TEXT, v->valuestring);
    } else if (cJSON_IsNumber(v) && nums->next < nums->n) {
        char text[128];
        size_t n = nums->len[nums->next];
        if (n >= sizeof text)
            n = sizeof text - 1;
        memcpy(text, nums->at[nums->next++], n);
        text[n] = '\0';
        table_add(t, CELL_NUMBER, text);
    } else {
        char *s = cJSON_PrintUnformatted(v); /* an array or object: as JSON */
        table_add(t, CELL_TEXT, s ? s : "?");
        cJSON_free(s);
    }
}

int table_from_answer(const char *json, struct table *t, char *err, size_t errlen)
{
    memset(t, 0, sizeof *t);
    cJSON *root = cJSON_Parse(json);
    const cJSON *cols = cJSON_GetObjectItemCaseSensitive(root, "columns");
    const cJSON *rows = cJSON_GetObjectItemCaseSensitive(root, "rows");
    if (!cJSON_IsArray(cols) || !cJSON_IsArray(rows)) {
        snprintf(err, errlen, "the answer is not {\"columns\": [...], \"rows\": [...]}: %.200s",
                 json);
        cJSON_Delete(root);
        return -1;
    }
    int ncols = cJSON_GetArraySize(cols);
    const char **names = calloc(ncols > 0 ? (size_t)ncols : 1, sizeof *names);
    struct numbers nums = {0};
    int rc = 0;
    if (!names || collect_numbers(json, &nums) != 0) {
        rc = -1;
    } else {
        int i = 0;
        const cJSON *c;
        cJSON_ArrayForEach(c, cols)
            names[i++] = cJSON_IsString(c) ? c->valuestring : "?";
        table_init(t, ncols, names);
        const cJSON *row;
        cJSON_ArrayForEach(row, rows) {
            int k = 0;
            const cJSON *v;
            cJSON_ArrayForEach(v, row) {
                if (k++ < ncols)
                    add_value(t, v, &nums);
                else if (cJSON_IsNumber(v))
                    nums.next++; /* a cell past the columns: its number is skipped too */
            }
            for (; k < ncols; k++)
                table_add(t, CELL_NULL, NULL);
        }
        rc = t->failed ? -1 : 0;
    }
    /* The buckets the ask read, for the footer: "from A up to B", an open
     * side as the first or the last the view holds. */
    const cJSON *range = cJSON_GetObjectItemCaseSensitive(root, "range");
    if (rc == 0 && cJSON_IsObject(range)) {
        const cJSON *from = cJSON_GetObjectItemCaseSensitive(range, "from");
        const cJSON *to = cJSON_GetObjectItemCaseSensitive(range, "to");
        char text[256];
        snprintf(text, sizeof text, "buckets from %s up to %s",
                 cJSON_IsString(from) ? from->valuestring : "the first",
                 cJSON_IsString(to) ? to->valuestring : "the last");
        if (!(t->range = strdup(text)))
            rc = -1;
    }
    if (rc)
        snprintf(err, errlen, "out of memory reading the answer");
    free(names);
    free(nums.at);
    free(nums.len);
    cJSON_Delete(root);
    return rc;
}
