/* error.c -- how sql errors read to a person and to an HTTP client. */
#include "sql/sql.h"

#include <stdio.h>

const char *sql_error_format(const struct sql_error *err, char *buf, size_t len)
{
    if (err->line > 0)
        snprintf(buf, len, "line %d, column %d: %s", err->line, err->column, err->message);
    else
        snprintf(buf, len, "%s", err->message);
    return buf;
}

const char *sql_error_code_name(enum sql_error_code code)
{
    switch (code) {
    case SQL_OK: return "ok";
    case SQL_ERR_SYNTAX: return "syntax_error";
    case SQL_ERR_UNSUPPORTED: return "unsupported";
    case SQL_ERR_INVALID: return "invalid";
    case SQL_ERR_UNKNOWN_VIEW: return "unknown_view";
    case SQL_ERR_UNKNOWN_COLUMN: return "unknown_column";
    case SQL_ERR_LIMIT: return "limit_exceeded";
    }
    return "unknown";
}
