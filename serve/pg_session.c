/* pg_session.c -- the statements drivers and tools send that are not asks,
 * and engine errors as SQLSTATEs.
 *
 * Recognised (case-insensitive, a trailing ';' allowed):
 *   SET [SESSION | LOCAL] name {TO | =} value, SET TIME ZONE value
 *       TimeZone: the zone asks read their timestamps in and write buckets
 *       in; accepted too, as they change no answer: application_name,
 *       extra_float_digits >= 1 (floats are always the shortest round-trip
 *       text), DateStyle with ISO, client_encoding UTF8, search_path,
 *       IntervalStyle postgres, standard_conforming_strings on,
 *       bytea_output, statement_timeout 0. Anything else is refused with
 *       0A000: it would change what an answer means. LOCAL acts as SESSION.
 *   RESET name | ALL; SHOW name; SELECT current_setting('name')
 *   BEGIN / START TRANSACTION [ISOLATION LEVEL ...] [READ ONLY] [DEFERRABLE],
 *       COMMIT / END, ROLLBACK / ABORT: a transaction pins one store
 *       snapshot (engine_snapshot_begin) for all its asks. READ WRITE is
 *       refused with 25006: nothing here can be written.
 *   SELECT <integer>, SELECT version(), DISCARD ALL, DEALLOCATE [PREPARE]
 *       name | ALL, and the empty statement. */
#include "serve/pg.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#define SERVER_VERSION "15.0 (Straum " STRAUM_VERSION ")"

/* ---- Words ------------------------------------------------------------------------- */

/* A statement cut into words: identifiers lowercased, 'strings' and
 * "identifiers" unquoted (their case kept), numbers, and single
 * punctuation characters. */
enum { MAX_WORDS = 24 };
struct words {
    char w[MAX_WORDS][96];
    bool quoted[MAX_WORDS];
    int n;
    bool overflow;
};

static void split_words(const char *s, size_t len, struct words *out)
{
    memset(out, 0, sizeof *out);
    size_t i = 0;
    while (i < len) {
        char c = s[i];
        size_t next = pg_skip_blank(s, i, len);
        if (next != i) {
            i = next;
            continue;
        }
        if (out->n == MAX_WORDS) {
            out->overflow = true;
            return;
        }
        char *w = out->w[out->n];
        size_t k = 0;
        if (c == '\'' || c == '"') {
            out->quoted[out->n] = true;
            for (i++; i < len; i++) {
                if (s[i] == c) {
                    if (i + 1 < len && s[i + 1] == c) {
                        i++;
                    } else {
                        i++;
                        break;
                    }
                }
                if (k + 1 < sizeof out->w[0])
                    w[k++] = s[i];
            }
        } else if (isalnum((unsigned char)c) || c == '_' || c == '.' || c == '+' ||
                   (c == '-' && out->n > 0)) {
            /* Words run over letters, digits, '_', '.', '/' (unquoted
             * zone names), and signs in offsets and numbers. */
            while (i < len && (isalnum((unsigned char)s[i]) || s[i] == '_' || s[i] == '.' ||
                               s[i] == '/' || s[i] == '+' || s[i] == '-')) {
                if (k + 1 < sizeof out->w[0])
                    w[k++] = (char)tolower((unsigned char)s[i]);
                i++;
            }
        } else {
            w[k++] = c;
            i++;
        }
        w[k] = '\0';
        out->n++;
    }
    if (out->n && !out->quoted[out->n - 1] && !strcmp(out->w[out->n - 1], ";"))
        out->n--;
}

static bool is(const struct words *w, int i, const char *word)
{
    return i < w->n && !w->quoted[i] && !strcmp(w->w[i], word);
}

static bool all_digits(const char *s)
{
    if (!*s)
        return false;
    for (; *s; s++)
        if (!isdigit((unsigned char)*s))
            return false;
    return true;
}

enum pg_stmt_kind pg_statement_kind(const char *text, size_t len)
{
    struct words w;
    split_words(text, len, &w);
    if (w.n == 0)
        return PG_STMT_EMPTY;
    static const char *const first[] = {"set", "reset", "show", "begin", "start", "commit",
                                        "end", "rollback", "abort", "discard", "deallocate"};
    for (size_t i = 0; i < sizeof first / sizeof *first; i++)
        if (is(&w, 0, first[i]))
            return PG_STMT_SESSION;
    if (is(&w, 0, "select") && !w.overflow) {
        if (w.n == 2 && all_digits(w.w[1]))
            return PG_STMT_SESSION;
        if (w.n == 4 && is(&w, 1, "version") && is(&w, 2, "(") && is(&w, 3, ")"))
            return PG_STMT_SESSION;
        if (w.n == 5 && is(&w, 1, "current_setting") && is(&w, 2, "(") && w.quoted[3] &&
            is(&w, 4, ")"))
            return PG_STMT_SESSION;
    }
    return pg_catalog_reads(text, len) ? PG_STMT_CATALOG : PG_STMT_ASK;
}

/* ---- Settings ------------------------------------------------------------------------ */

/* A zone name the tz database has (the engine loads it when an ask reads
 * it; here only its presence is checked, so SET answers the error). */
static bool zone_exists(const char *name)
{
    if (!strcasecmp(name, "UTC") || !strcasecmp(name, "GMT") || !strcmp(name, "Z"))
        return true;
    if (!*name || name[0] == '/' || strstr(name, ".."))
        return false;
    for (const char *p = name; *p; p++)
        if (!isalnum((unsigned char)*p) && !strchr("/_+-", *p))
            return false;
    const char *dir = getenv("TZDIR");
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir && *dir ? dir : "/usr/share/zoneinfo", name);
    return access(path, R_OK) == 0;
}

/* The value of a setting SHOW reads, or NULL when it is not one. name is
 * lowercased. */
static const char *setting(struct pg_conn *c, const char *name, char *tmp, size_t cap)
{
    if (!strcmp(name, "timezone"))
        return c->time_zone;
    if (!strcmp(name, "application_name"))
        return c->application_name;
    if (!strcmp(name, "extra_float_digits")) {
        snprintf(tmp, cap, "%d", c->extra_float_digits);
        return tmp;
    }
    static const char *const fixed[][2] = {
        {"server_version", SERVER_VERSION},
        {"server_version_num", "150000"},
        {"server_encoding", "UTF8"},
        {"client_encoding", "UTF8"},
        {"datestyle", "ISO, MDY"},
        {"intervalstyle", "postgres"},
        {"integer_datetimes", "on"},
        {"standard_conforming_strings", "on"},
        {"search_path", "\"$user\", public"},
        {"transaction_isolation", "repeatable read"},
        {"default_transaction_isolation", "repeatable read"},
        {"transaction_read_only", "on"},
        {"default_transaction_read_only", "on"},
        {"is_superuser", "off"},
        {"max_identifier_length", "63"},
        {"bytea_output", "hex"},
        {"statement_timeout", "0"},
        {"lc_collate", "C"},
        {"lc_ctype", "C"},
    };
    for (size_t i = 0; i < sizeof fixed / sizeof *fixed; i++)
        if (!strcmp(name, fixed[i][0]))
            return fixed[i][1];
    return NULL;
}

/* ---- Results ----------------------------------------------------------------------------- */

enum run_mode { RUN_DESCRIBE, RUN_SIMPLE, RUN_EXTENDED };

/* One text column with one row (SHOW, version(), current_setting). */
static void one_value(struct pg_conn *c, enum run_mode mode, const char *column, uint32_t oid,
                      const char *value, const char *tag)
{
    if (mode != RUN_EXTENDED) {
        size_t at = pg_msg_begin(&c->out, 'T');
        pg_put_int16(&c->out, 1);
        pg_put_cstr(&c->out, column);
        pg_put_int32(&c->out, 0);
        pg_put_int16(&c->out, 0);
        pg_put_int32(&c->out, (int32_t)oid);
        pg_put_int16(&c->out, pg_type_len(oid));
        pg_put_int32(&c->out, -1);
        pg_put_int16(&c->out, 0);
        pg_msg_end(&c->out, at);
    }
    if (mode == RUN_DESCRIBE)
        return;
    size_t at = pg_msg_begin(&c->out, 'D');
    pg_put_int16(&c->out, 1);
    if (oid == ANSWER_OID_INT4 && c->binary_results) {
        long v = strtol(value, NULL, 10);
        pg_put_int32(&c->out, 4);
        pg_put_int32(&c->out, (int32_t)v);
    } else {
        pg_put_int32(&c->out, (int32_t)strlen(value));
        buf_puts(&c->out, value);
    }
    pg_msg_end(&c->out, at);
    pg_put_command_complete(&c->out, tag);
}

static int fail(struct pg_conn *c, const char *sqlstate, const char *hint, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static int fail(struct pg_conn *c, const char *sqlstate, const char *hint, const char *fmt, ...)
{
    char msg[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    pg_put_error(&c->out, "ERROR", sqlstate, msg, hint, 0);
    return -1;
}

static void warn(struct pg_conn *c, const char *sqlstate, const char *msg)
{
    pg_put_error(&c->out, "WARNING", sqlstate, msg, NULL, 0);
}

/* The value of SET name TO value: the words from i on, joined (a zone may
 * be written unquoted, "America/New_York", or as 'UTC'). */
static void value_text(const struct words *w, int i, char *out, size_t cap)
{
    out[0] = '\0';
    for (; i < w->n; i++) {
        if (out[0])
            strncat(out, " ", cap - strlen(out) - 1);
        strncat(out, w->w[i], cap - strlen(out) - 1);
    }
}

static int set_time_zone(struct pg_conn *c, const char *value, bool quoted, enum run_mode mode)
{
    char zone[64];
    if (!quoted && (!strcmp(value, "local") || !strcmp(value, "default")))
        snprintf(zone, sizeof zone, "%s", c->startup_time_zone);
    else
        snprintf(zone, sizeof zone, "%s", value);
    if (!zone_exists(zone)) {
        if (quoted || strchr(zone, '/'))
            return fail(c, "22023",
                        "Give a name from the tz database, such as 'UTC' or 'America/New_York'; "
                        "numeric offsets and POSIX rules are not supported.",
                        "invalid value for parameter \"TimeZone\": \"%s\"", zone);
        /* Unquoted words are lowercased: look the zone up as written in
         * the tz database's case. */
        return fail(c, "22023", "Quote the zone name: SET TimeZone TO 'America/New_York'.",
                    "invalid value for parameter \"TimeZone\": \"%s\"", zone);
    }
    if (mode == RUN_DESCRIBE)
        return 0;
    if (!strcasecmp(zone, "utc"))
        snprintf(zone, sizeof zone, "UTC");
    snprintf(c->time_zone, sizeof c->time_zone, "%s", zone);
    pg_put_parameter_status(&c->out, "TimeZone", c->time_zone);
    return 0;
}

static int run_set(struct pg_conn *c, const struct words *w, enum run_mode mode)
{
    int i = 1;
    if (is(w, i, "session") || is(w, i, "local"))
        i++;
    if (is(w, i, "time") && is(w, i + 1, "zone")) {
        if (i + 3 != w->n)
            return fail(c, "42601", NULL, "SET TIME ZONE takes one value");
        if (set_time_zone(c, w->w[i + 2], w->quoted[i + 2], mode))
            return -1;
        goto done;
    }
    if (i >= w->n || w->quoted[i])
        return fail(c, "42601", NULL, "SET needs a parameter name");
    const char *name = w->w[i];
    if (!is(w, i + 1, "to") && !is(w, i + 1, "="))
        return fail(c, "42601", NULL, "SET %s needs TO or = and a value", name);
    if (i + 2 >= w->n)
        return fail(c, "42601", NULL, "SET %s needs a value", name);
    char value[256];
    value_text(w, i + 2, value, sizeof value);
    bool quoted = w->quoted[i + 2] && i + 3 == w->n;
    if (!strcmp(name, "timezone")) {
        if (i + 3 != w->n)
            return fail(c, "42601", NULL, "SET TimeZone takes one value");
        if (set_time_zone(c, w->w[i + 2], quoted, mode))
            return -1;
    } else if (!strcmp(name, "application_name")) {
        if (mode != RUN_DESCRIBE) {
            snprintf(c->application_name, sizeof c->application_name, "%s", w->w[i + 2]);
            pg_put_parameter_status(&c->out, "application_name", c->application_name);
        }
    } else if (!strcmp(name, "extra_float_digits")) {
        char *end;
        long v = strtol(value, &end, 10);
        if (*end || v < 1 || v > 3)
            return fail(c, "0A000",
                        "Floats are written with the fewest digits that read back exactly, as "
                        "extra_float_digits 1 to 3 give.",
                        "extra_float_digits %s is not supported", value);
        if (mode != RUN_DESCRIBE)
            c->extra_float_digits = (int)v;
    } else if (!strcmp(name, "datestyle")) {
        if (!strcasestr(value, "iso"))
            return fail(c, "0A000", "Dates are written in ISO form only.",
                        "DateStyle %s is not supported", value);
    } else if (!strcmp(name, "client_encoding")) {
        if (strcasecmp(value, "utf8") && strcasecmp(value, "utf-8") && strcasecmp(value, "unicode"))
            return fail(c, "0A000", "Answers are UTF8 only.", "client_encoding %s is not supported",
                        value);
    } else if (!strcmp(name, "intervalstyle")) {
        if (strcasecmp(value, "postgres"))
            return fail(c, "0A000", NULL, "IntervalStyle %s is not supported", value);
    } else if (!strcmp(name, "standard_conforming_strings")) {
        if (strcasecmp(value, "on") && strcasecmp(value, "true"))
            return fail(c, "0A000", "Strings are read with standard_conforming_strings on.",
                        "standard_conforming_strings %s is not supported", value);
    } else if (!strcmp(name, "statement_timeout")) {
        if (strcmp(value, "0"))
            return fail(c, "0A000", "The time budget of an ask is straum-serve's --ask-timeout.",
                        "statement_timeout %s is not supported", value);
    } else if (strcmp(name, "search_path") && strcmp(name, "bytea_output")) {
        return fail(c, "0A000",
                    "Settable here: TimeZone, application_name, extra_float_digits, DateStyle "
                    "(ISO), client_encoding (UTF8), search_path.",
                    "SET %s is not supported", name);
    }
done:
    if (mode != RUN_DESCRIBE)
        pg_put_command_complete(&c->out, "SET");
    return 0;
}

/* ---- Transactions ------------------------------------------------------------------------- */

static int run_begin(struct pg_conn *c, const struct words *w, enum run_mode mode, const char *tag)
{
    for (int i = 1; i < w->n; i++)
        if (is(w, i, "read") && is(w, i + 1, "write"))
            return fail(c, "25006", "Straum answers reads only: START TRANSACTION READ ONLY.",
                        "cannot start a read-write transaction");
    if (mode == RUN_DESCRIBE)
        return 0;
    if (c->txn != 'I') {
        warn(c, "25001", "there is already a transaction in progress");
    } else {
        struct ask_error err;
        if (engine_snapshot_begin(c->engine, &c->snapshot, &err))
            return fail(c, "53000", NULL, "cannot pin a store snapshot: %s", err.message);
        c->txn = 'T';
    }
    pg_put_command_complete(&c->out, tag);
    return 0;
}

static void end_txn(struct pg_conn *c)
{
    engine_snapshot_end(c->snapshot);
    c->snapshot = NULL;
    c->txn = 'I';
}

static int run_end(struct pg_conn *c, bool commit, enum run_mode mode)
{
    if (mode == RUN_DESCRIBE)
        return 0;
    if (c->txn == 'I')
        warn(c, "25P01", "there is no transaction in progress");
    bool failed = c->txn == 'E';
    end_txn(c);
    pg_put_command_complete(&c->out, commit && !failed ? "COMMIT" : "ROLLBACK");
    return 0;
}

/* ---- Running -------------------------------------------------------------------------------- */

static int run(struct pg_conn *c, const char *text, size_t len, enum run_mode mode)
{
    struct words w;
    split_words(text, len, &w);
    if (w.overflow)
        return fail(c, "42601", NULL, "the statement has more words than Straum reads");
    char tmp[64];
    bool ending = is(&w, 0, "commit") || is(&w, 0, "end") || is(&w, 0, "rollback") ||
                  is(&w, 0, "abort");
    if (c->txn == 'E' && !ending && mode != RUN_DESCRIBE)
        return fail(c, "25P02", NULL,
                    "current transaction is aborted, commands ignored until end of transaction "
                    "block");
    if (is(&w, 0, "set"))
        return run_set(c, &w, mode);
    if (is(&w, 0, "show") || is(&w, 0, "select")) {
        if (is(&w, 0, "select") && w.n == 2) {
            one_value(c, mode, "?column?", ANSWER_OID_INT4, w.w[1], "SELECT 1");
            return 0;
        }
        if (is(&w, 0, "select") && is(&w, 1, "version")) {
            one_value(c, mode, "version", ANSWER_OID_TEXT,
                      "PostgreSQL " SERVER_VERSION " on x86_64-pc-linux-gnu, compiled by gcc",
                      "SELECT 1");
            return 0;
        }
        bool show = is(&w, 0, "show");
        char name[96];
        if (show && w.n == 3 && is(&w, 1, "time") && is(&w, 2, "zone"))
            snprintf(name, sizeof name, "timezone");
        else if ((show && w.n == 2) || !show)
            snprintf(name, sizeof name, "%s", show ? w.w[1] : w.w[3]);
        else
            return fail(c, "42601", NULL, "SHOW takes one parameter name");
        for (char *p = name; *p; p++)
            *p = (char)tolower((unsigned char)*p);
        const char *v = setting(c, name, tmp, sizeof tmp);
        if (!v)
            return fail(c, "42704", NULL, "unrecognized configuration parameter \"%s\"", name);
        one_value(c, mode, show ? name : "current_setting", ANSWER_OID_TEXT, v,
                  show ? "SHOW" : "SELECT 1");
        return 0;
    }
    if (is(&w, 0, "reset")) {
        if (w.n != 2)
            return fail(c, "42601", NULL, "RESET takes one parameter name, or ALL");
        if (mode == RUN_DESCRIBE)
            return 0;
        if (is(&w, 1, "timezone") || is(&w, 1, "all")) {
            snprintf(c->time_zone, sizeof c->time_zone, "%s", c->startup_time_zone);
            pg_put_parameter_status(&c->out, "TimeZone", c->time_zone);
        }
        if (is(&w, 1, "application_name") || is(&w, 1, "all")) {
            c->application_name[0] = '\0';
            pg_put_parameter_status(&c->out, "application_name", "");
        }
        pg_put_command_complete(&c->out, "RESET");
        return 0;
    }
    if (is(&w, 0, "begin"))
        return run_begin(c, &w, mode, "BEGIN");
    if (is(&w, 0, "start")) {
        if (!is(&w, 1, "transaction"))
            return fail(c, "42601", NULL, "START must be followed by TRANSACTION");
        return run_begin(c, &w, mode, "START TRANSACTION");
    }
    if (ending) {
        if (w.n > 1 && !is(&w, 1, "transaction") && !is(&w, 1, "work"))
            return fail(c, "0A000", NULL, "%s %s is not supported", w.w[0], w.w[1]);
        return run_end(c, is(&w, 0, "commit") || is(&w, 0, "end"), mode);
    }
    if (is(&w, 0, "discard")) {
        if (!is(&w, 1, "all") || w.n != 2)
            return fail(c, "0A000", NULL, "only DISCARD ALL is supported");
        if (mode == RUN_DESCRIBE)
            return 0;
        if (c->txn != 'I')
            return fail(c, "25001", NULL, "DISCARD ALL cannot run inside a transaction block");
        c->discard_pending = true;
        snprintf(c->time_zone, sizeof c->time_zone, "%s", c->startup_time_zone);
        pg_put_command_complete(&c->out, "DISCARD ALL");
        return 0;
    }
    if (is(&w, 0, "deallocate")) {
        int i = is(&w, 1, "prepare") ? 2 : 1;
        if (i + 1 != w.n)
            return fail(c, "42601", NULL, "DEALLOCATE takes a statement name, or ALL");
        if (mode == RUN_DESCRIBE)
            return 0;
        bool all = is(&w, i, "all");
        bool found = all;
        for (struct pg_statement *s = c->statements; s; s = s->next)
            if (*s->name && (all || !strcmp(s->name, w.w[i]))) {
                s->doomed = true;
                found = true;
            }
        if (!found)
            return fail(c, "26000", NULL, "prepared statement \"%s\" does not exist", w.w[i]);
        pg_put_command_complete(&c->out, all ? "DEALLOCATE ALL" : "DEALLOCATE");
        return 0;
    }
    return fail(c, "42601", NULL, "not a statement Straum knows");
}

int pg_session_run(struct pg_conn *c, const char *text, size_t len, bool describe_only,
                   bool send_rowdesc)
{
    return run(c, text, len, describe_only ? RUN_DESCRIBE : send_rowdesc ? RUN_SIMPLE : RUN_EXTENDED);
}

bool pg_session_has_rows(const char *text, size_t len)
{
    struct words w;
    split_words(text, len, &w);
    return is(&w, 0, "show") || is(&w, 0, "select");
}

/* ---- Errors ----------------------------------------------------------------------------------- */

const char *pg_sqlstate(const struct ask_error *err, const char **hint)
{
    static const struct {
        const char *code, *state, *hint;
    } map[] = {
        {"syntax_error", "42601", NULL},
        {"unknown_view", "42P01", "The views are listed by \\dv, or GET /views over HTTP."},
        {"unknown_column", "42703", NULL},
        {"unsupported", "0A000", NULL},
        {"invalid", "22023", NULL},
        {"limit_exceeded", "54000", NULL},
        {"ask_too_long", "54000", NULL},
        {"too_many_parameters", "54023", NULL},
        {"too_many_groups", "54000",
         "Narrow the range or the grouping, or raise straum-serve's --max-groups."},
        {"ask_memory", "53200",
         "Narrow the range or the grouping, or raise straum-serve's --ask-memory."},
        {"overflow", "22003", NULL},
        {"range_not_on_edge", "22023", "Bucket edges fall on the view's finest width."},
        {"bad_time_zone", "22023", NULL},
        {"missing_parameter", "08P01", NULL},
        {"extra_parameter", "08P01", NULL},
        {"ask_timeout", "57014", "The time budget of an ask is straum-serve's --ask-timeout."},
        {"cancelled", "57014", NULL},
        {"store_unavailable", "53000", NULL},
        {"corrupt_store", "XX001", NULL},
        {"bad_request", "08P01", NULL},
    };
    *hint = NULL;
    /* The parser reads timestamp literals: a bad one is PostgreSQL's
     * invalid_datetime_format, not a syntax error. */
    if (!strncmp(err->message, "invalid timestamp", 17))
        return "22007";
    if (!strcmp(err->code, "bad_parameter")) {
        bool time = strstr(err->message, "bucket edge") || strstr(err->message, "timestamp");
        return time ? "22007" : "22P02";
    }
    for (size_t i = 0; i < sizeof map / sizeof *map; i++)
        if (!strcmp(err->code, map[i].code)) {
            *hint = map[i].hint;
            return map[i].state;
        }
    return "XX000";
}

int pg_error_position(const char *text, const struct ask_error *err, int base)
{
    if (err->line <= 0 || err->column <= 0)
        return 0;
    int line = 1, col = 1, chars = 0;
    for (const unsigned char *p = (const unsigned char *)text; *p; p++) {
        if (line == err->line && col == err->column)
            break;
        if ((*p & 0xC0) == 0x80)
            continue; /* a UTF-8 continuation byte: the same character */
        chars++;
        if (*p == '\n') {
            line++;
            col = 1;
        } else {
            col++;
        }
    }
    return base + chars + 1;
}
