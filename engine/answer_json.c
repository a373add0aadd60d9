/* answer_json.c -- the HTTP answer: typed rows (engine_ask_rows) written as
 * {"columns": ["name", ...], "rows": [[value, ...], ...]}.
 *
 * JSON types (SPEC.md "Answers"): counts and integer keys are numbers;
 * numeric sums, averages and values are exact decimals written as strings
 * ("12.50"), so that no client reads them through a double, but for an
 * integer sum that fits 64 bits, a number; float results are numbers with
 * the fewest digits that read back exactly; buckets are ISO 8601 strings
 * with the offset of the ask's time zone; dates "2024-01-17"; NULL is null.
 * After the rows, "range":{"from":...,"to":...}: the buckets read,
 * half-open, in the ask's zone; null for a side the ask leaves open. */
#include "engine/internal.h"

#include <string.h>

static int json_columns(void *ctx, const struct answer_column *cols, int ncols,
                        struct ask_error *err)
{
    (void)err;
    struct answer_json *j = ctx;
    buf_puts(j->out, "{\"columns\":[");
    for (int c = 0; c < ncols; c++) {
        if (c)
            buf_puts(j->out, ",");
        buf_json_string(j->out, cols[c].name, strlen(cols[c].name));
    }
    buf_puts(j->out, "],\"rows\":[");
    return 0;
}

static void json_value(struct buf *out, const struct answer_value *v)
{
    char tmp[128];
    switch (v->kind) {
    case ANSWER_NULL: buf_put(out, "null", 4); break;
    case ANSWER_INT: buf_put_int64(out, v->i); break;
    case ANSWER_BOOL: buf_put(out, v->i ? "true" : "false", v->i ? 4 : 5); break;
    case ANSWER_DECIMAL:
        if (v->json_number)
            buf_put(out, v->text, v->len);
        else
            buf_json_string(out, v->text, v->len);
        break;
    case ANSWER_DOUBLE:
        buf_put(out, tmp, double_format(v->d, tmp, sizeof tmp));
        break;
    case ANSWER_TEXT: buf_json_string(out, v->text, v->len); break;
    case ANSWER_TIME: {
        size_t n = tz_format_offset(v->i, v->utc_offset_s, tmp, sizeof tmp);
        buf_json_string(out, tmp, n < sizeof tmp ? n : sizeof tmp - 1);
        break;
    }
    case ANSWER_DATE: {
        const struct store_column_type date = {STORE_TYPE_DATE, 0, 0};
        size_t n = store_code_format(&date, v->i, tmp, sizeof tmp);
        buf_json_string(out, tmp, n < sizeof tmp ? n : sizeof tmp - 1);
        break;
    }
    }
}

static int json_row(void *ctx, const struct answer_value *vals, int ncols, struct ask_error *err)
{
    (void)err;
    struct answer_json *j = ctx;
    if (j->rows++)
        buf_putc(j->out, ',');
    buf_putc(j->out, '[');
    for (int c = 0; c < ncols; c++) {
        if (c)
            buf_putc(j->out, ',');
        json_value(j->out, &vals[c]);
    }
    buf_putc(j->out, ']');
    return 0;
}

const struct answer_sink answer_json_sink = {json_columns, json_row, NULL};

void answer_json_end(struct exec *x, struct buf *out)
{
    char tmp[64];
    buf_puts(out, "],\"range\":{\"from\":");
    if (x->b.has_from) {
        tz_format(x->b.tz, x->b.from, tmp, sizeof tmp);
        buf_json_string(out, tmp, strlen(tmp));
    } else {
        buf_puts(out, "null");
    }
    buf_puts(out, ",\"to\":");
    if (x->b.has_to) {
        tz_format(x->b.tz, x->b.to, tmp, sizeof tmp);
        buf_json_string(out, tmp, strlen(tmp));
    } else {
        buf_puts(out, "null");
    }
    buf_puts(out, "}}");
}
