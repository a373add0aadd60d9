/* fuzz_sql.c -- libFuzzer target for the view and ask parsers.
 *
 * Every input is parsed both as a file of views and as an ask against the two
 * benchmark views. The parsers must return a compiled object or a positioned
 * error, never crash, read out of bounds or leak (ASan/LSan watch). */
#include "sql/sql.h"
#include "tests/unit/source_file.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static struct sql_view_list *seed_views;

static void check_error(const struct sql_error *err)
{
    /* A failure must say something and, when it has a position, a sane one. */
    if (err->code == SQL_OK || err->message[0] == '\0' || err->line < 0 || err->column < 0)
        abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!seed_views) {
        struct sql_error err;
        char *text = read_source_file("bench/taxi_views.sql");
        seed_views = text ? sql_parse_views(text, &err) : NULL;
        free(text);
        if (!seed_views)
            abort();
    }
    char *text = malloc(size + 1);
    if (!text)
        return 0;
    memcpy(text, data, size);
    text[size] = '\0';

    struct sql_error err;
    struct sql_view_list *views = sql_parse_views(text, &err);
    if (views)
        sql_view_list_free(views);
    else
        check_error(&err);

    struct sql_ask *ask = sql_parse_ask(text, seed_views, &err);
    if (ask)
        sql_ask_free(ask);
    else
        check_error(&err);

    free(text);
    return 0;
}
