/* render.c -- printing rows: an aligned table as psql prints one (centred
 * header, a separator line, numbers right-aligned, a "(N rows)" footer),
 * CSV (a header line, RFC 4180 quoting) or JSON on one line. */
#include "tools/shell/shell.h"

#include <stdlib.h>
#include <string.h>

int format_parse(const char *name)
{
    if (!strcmp(name, "table") || !strcmp(name, "aligned"))
        return FORMAT_TABLE;
    if (!strcmp(name, "json"))
        return FORMAT_JSON;
    if (!strcmp(name, "csv"))
        return FORMAT_CSV;
    return -1;
}

const char *format_name(enum shell_format f)
{
    return f == FORMAT_JSON ? "json" : f == FORMAT_CSV ? "csv" : "table";
}

/* A table cell's text: control characters written as escapes, so that a
 * text never breaks a line or the alignment. */
static void cell_text(const char *s, struct buf *b)
{
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '\n')
            buf_puts(b, "\\n");
        else if (c == '\r')
            buf_puts(b, "\\r");
        else if (c == '\t')
            buf_puts(b, "\\t");
        else if (c < 0x20 || c == 0x7f)
            buf_printf(b, "\\x%02x", c);
        else
            buf_put(b, s, 1);
    }
}

/* Display width: code points (UTF-8 continuation bytes take none). */
static int width(const char *s)
{
    int w = 0;
    for (; *s; s++)
        if (((unsigned char)*s & 0xC0) != 0x80)
            w++;
    return w;
}

static bool decimal(const char *s)
{
    if (*s == '-')
        s++;
    if (!(*s >= '0' && *s <= '9'))
        return false;
    while (*s >= '0' && *s <= '9')
        s++;
    if (*s == '.') {
        s++;
        if (!(*s >= '0' && *s <= '9'))
            return false;
        while (*s >= '0' && *s <= '9')
            s++;
    }
    return *s == '\0';
}

/* A column is right-aligned when every value it holds is a number (numeric
 * values come as strings holding decimals). */
static bool numeric_column(const struct table *t, int col)
{
    bool any = false;
    for (int r = 0; r < t->nrows; r++) {
        const struct cell *c = &t->cells[(size_t)r * (size_t)t->ncols + (size_t)col];
        if (c->kind == CELL_NULL)
            continue;
        if (c->kind == CELL_BOOL || (c->kind == CELL_TEXT && !decimal(c->text)))
            return false;
        any = true;
    }
    return any;
}

static void pad(FILE *f, int n)
{
    for (; n > 0; n--)
        fputc(' ', f);
}

static void render_aligned(FILE *f, const struct table *t, const char *title)
{
    int nc = t->ncols;
    size_t ncells = (size_t)t->nrows * (size_t)nc;
    struct buf *texts = calloc(ncells ? ncells : 1, sizeof *texts);
    int *w = calloc(nc ? (size_t)nc : 1, sizeof *w);
    bool *right = calloc(nc ? (size_t)nc : 1, sizeof *right);
    if (!texts || !w || !right) {
        fputs("straum-shell: out of memory printing the answer\n", stderr);
        goto out;
    }
    for (int c = 0; c < nc; c++) {
        w[c] = width(t->names[c]);
        right[c] = numeric_column(t, c);
    }
    for (size_t i = 0; i < ncells; i++) {
        if (t->cells[i].kind != CELL_NULL)
            cell_text(t->cells[i].text, &texts[i]);
        buf_put(&texts[i], "", 1); /* NUL-terminated, also when empty */
        int cw = width(texts[i].data ? texts[i].data : "");
        if (cw > w[i % (size_t)nc])
            w[i % (size_t)nc] = cw;
    }
    if (title) {
        int total = nc ? -1 : 0;
        for (int c = 0; c < nc; c++)
            total += w[c] + 3;
        int tw = width(title);
        pad(f, total > tw ? (total - tw) / 2 : 0);
        fprintf(f, "%s\n", title);
    }
    for (int c = 0; c < nc; c++) { /* the header, centred */
        int space = w[c] - width(t->names[c]);
        fputs(c ? "| " : " ", f);
        pad(f, space / 2);
        fputs(t->names[c], f);
        pad(f, space - space / 2);
        fputc(' ', f);
    }
    fputc('\n', f);
    for (int c = 0; c < nc; c++) {
        if (c)
            fputc('+', f);
        for (int k = 0; k < w[c] + 2; k++)
            fputc('-', f);
    }
    fputc('\n', f);
    for (int r = 0; r < t->nrows; r++) {
        for (int c = 0; c < nc; c++) {
            const char *s = texts[(size_t)r * (size_t)nc + (size_t)c].data;
            int space = w[c] - width(s);
            fputs(c ? "| " : " ", f);
            if (right[c])
                pad(f, space);
            fputs(s, f);
            if (c + 1 < nc) {
                if (!right[c])
                    pad(f, space);
                fputc(' ', f);
            }
        }
        fputc('\n', f);
    }
    fprintf(f, "(%d row%s%s%s)\n\n", t->nrows, t->nrows == 1 ? "" : "s", t->range ? ", " : "",
            t->range ? t->range : "");
out:
    for (size_t i = 0; texts && i < ncells; i++)
        buf_free(&texts[i]);
    free(texts);
    free(w);
    free(right);
}

static void csv_field(FILE *f, const char *s, bool null)
{
    if (null)
        return;
    if (*s && !strpbrk(s, ",\"\r\n")) {
        fputs(s, f);
        return;
    }
    fputc('"', f);
    for (; *s; s++) {
        if (*s == '"')
            fputc('"', f);
        fputc(*s, f);
    }
    fputc('"', f);
}

static void render_csv(FILE *f, const struct table *t)
{
    for (int c = 0; c < t->ncols; c++) {
        if (c)
            fputc(',', f);
        csv_field(f, t->names[c], false);
    }
    fputc('\n', f);
    for (int r = 0; r < t->nrows; r++) {
        for (int c = 0; c < t->ncols; c++) {
            const struct cell *cell = &t->cells[(size_t)r * (size_t)t->ncols + (size_t)c];
            if (c)
                fputc(',', f);
            csv_field(f, cell->text ? cell->text : "", cell->kind == CELL_NULL);
        }
        fputc('\n', f);
    }
}

static void render_json(FILE *f, const struct table *t)
{
    struct buf b = {0};
    buf_puts(&b, "{\"columns\":[");
    for (int c = 0; c < t->ncols; c++) {
        buf_puts(&b, c ? "," : "");
        buf_json_string(&b, t->names[c], strlen(t->names[c]));
    }
    buf_puts(&b, "],\"rows\":[");
    for (int r = 0; r < t->nrows; r++) {
        buf_puts(&b, r ? ",[" : "[");
        for (int c = 0; c < t->ncols; c++) {
            const struct cell *cell = &t->cells[(size_t)r * (size_t)t->ncols + (size_t)c];
            buf_puts(&b, c ? "," : "");
            if (cell->kind == CELL_NULL)
                buf_puts(&b, "null");
            else if (cell->kind == CELL_BOOL)
                buf_puts(&b, cell->text[0] == 't' ? "true" : "false");
            else if (cell->kind == CELL_NUMBER)
                buf_puts(&b, cell->text);
            else
                buf_json_string(&b, cell->text, strlen(cell->text));
        }
        buf_puts(&b, "]");
    }
    buf_puts(&b, "]}\n");
    if (b.failed)
        fputs("straum-shell: out of memory printing the answer\n", stderr);
    else
        fwrite(b.data, 1, b.len, f);
    buf_free(&b);
}

void render(FILE *f, const struct table *t, enum shell_format format, const char *title)
{
    if (t->failed) {
        fputs("straum-shell: out of memory building the rows to print\n", stderr);
        return;
    }
    if (format == FORMAT_CSV)
        render_csv(f, t);
    else if (format == FORMAT_JSON)
        render_json(f, t);
    else
        render_aligned(f, t, title);
}
