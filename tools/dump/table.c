/* table.c -- aligned plain-text tables (see table.h). */
#include "tools/dump/table.h"

#include "tools/dump/dump.h"
#include "tools/dump/text.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

struct table {
    int ncols;
    char **cells;        /* nrows * ncols, row 0 the header; NULL prints empty */
    int nrows, cap_rows;
    int next_col;        /* where table_cell writes in the last row */
    bool *right;
};

struct table *table_new(int ncols, const char *const *headers)
{
    struct table *t = xcalloc(1, sizeof *t);
    t->ncols = ncols;
    t->right = xcalloc((size_t)ncols, sizeof *t->right);
    table_row(t);
    for (int c = 0; c < ncols; c++)
        table_cell(t, "%s", headers[c]);
    return t;
}

void table_free(struct table *t)
{
    if (!t)
        return;
    for (size_t i = 0; i < (size_t)t->nrows * (size_t)t->ncols; i++)
        free(t->cells[i]);
    free(t->cells);
    free(t->right);
    free(t);
}

void table_align_right(struct table *t, int col)
{
    if (col >= 0 && col < t->ncols)
        t->right[col] = true;
}

void table_row(struct table *t)
{
    if (t->nrows == t->cap_rows) {
        t->cap_rows = t->cap_rows ? 2 * t->cap_rows : 16;
        t->cells = xrealloc(t->cells, (size_t)t->cap_rows * (size_t)t->ncols * sizeof *t->cells);
    }
    memset(t->cells + (size_t)t->nrows * (size_t)t->ncols, 0, (size_t)t->ncols * sizeof *t->cells);
    t->nrows++;
    t->next_col = 0;
}

void table_cell(struct table *t, const char *fmt, ...)
{
    if (t->next_col >= t->ncols)
        return;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    char *p = xmalloc(n > 0 ? (size_t)n + 1 : 1);
    p[0] = '\0';
    if (n > 0) {
        va_start(ap, fmt);
        vsnprintf(p, (size_t)n + 1, fmt, ap);
        va_end(ap);
    }
    t->cells[(size_t)(t->nrows - 1) * (size_t)t->ncols + (size_t)t->next_col++] = p;
}

void table_print(const struct table *t, FILE *f, int indent)
{
    size_t *width = xcalloc((size_t)t->ncols, sizeof *width);
    for (int r = 0; r < t->nrows; r++)
        for (int c = 0; c < t->ncols; c++) {
            const char *s = t->cells[(size_t)r * (size_t)t->ncols + (size_t)c];
            size_t w = s ? text_columns(s) : 0;
            if (w > width[c])
                width[c] = w;
        }
    for (int r = 0; r < t->nrows; r++) {
        fprintf(f, "%*s", indent, "");
        /* The last column is not padded on the left-aligned side, so lines
         * carry no trailing blanks. */
        int last = t->ncols - 1;
        while (last > 0 && (!t->cells[(size_t)r * (size_t)t->ncols + (size_t)last] ||
                            !t->cells[(size_t)r * (size_t)t->ncols + (size_t)last][0]))
            last--;
        for (int c = 0; c <= last; c++) {
            const char *s = t->cells[(size_t)r * (size_t)t->ncols + (size_t)c];
            if (!s)
                s = "";
            size_t pad = width[c] - text_columns(s);
            if (c)
                fputs("  ", f);
            if (t->right[c])
                fprintf(f, "%*s%s", (int)pad, "", s);
            else if (c == last)
                fputs(s, f);
            else
                fprintf(f, "%s%*s", s, (int)pad, "");
        }
        fputc('\n', f);
    }
    free(width);
}
