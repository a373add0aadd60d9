/* shell.h -- straum-shell, a psql-like client for asks: what its parts
 * share. main.c reads the options; repl.c reads asks and backslash commands
 * (libedit at a terminal, plain lines from a pipe); scan.c finds where an
 * ask ends and which $n it uses; complete.c completes words on Tab; commands.c runs asks and backslash
 * commands; table.c turns answer and views JSON into rows; render.c prints
 * rows as an aligned table, CSV or JSON; backend.c asks straum-serve over
 * HTTP (libcurl) or the store directly through the serve engine. */
#ifndef STRAUM_TOOLS_SHELL_H
#define STRAUM_TOOLS_SHELL_H

#include "engine/engine.h"

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#ifndef STRAUM_VERSION
#define STRAUM_VERSION "?"
#endif

#define SHELL_MAX_PARAMS 256

/* ---- Backends (backend.c) -------------------------------------------------- */

/* What went wrong with an ask or a /views request. */
struct shell_error {
    int status;         /* the HTTP status (the engine's for --store); 0: no answer came */
    char code[32];      /* "syntax_error", ...; "" when no answer came */
    char message[700];
    int line, column;   /* in the ask; 0 when not about a place */
};

struct backend;

/* Exactly one of url and store_dir. NULL with a message in err. */
struct backend *backend_open(const char *url, const char *store_dir, const char *token,
                             char *err, size_t errlen);
void backend_close(struct backend *b);
/* Answers ask: the answer's JSON text (malloc'd, NUL-terminated) in *out.
 * 0, or -1 with err. */
int backend_ask(struct backend *b, const char *ask, const struct ask_value *params, int nparams,
                const char *time_zone, char **out, struct shell_error *err);
/* {"views": [...]}, as backend_ask. */
int backend_views(struct backend *b, char **out, struct shell_error *err);

/* ---- Rows (table.c) --------------------------------------------------------- */

enum cell_kind { CELL_NULL, CELL_TEXT, CELL_NUMBER, CELL_BOOL };

struct cell {
    enum cell_kind kind;
    char *text; /* NUMBER: as written in the JSON; BOOL: "t" or "f"; NULL: NULL */
};

struct table {
    int ncols;
    char **names;
    int nrows;
    struct cell *cells; /* row-major: nrows * ncols */
    size_t ncells, cap;
    bool failed;        /* out of memory while building */
    char *range;        /* an ask's buckets read ("from A up to B"), or NULL */
};

void table_init(struct table *t, int ncols, const char *const *names);
/* Appends the next cell, row-major (text copied; NULL for a NULL cell). */
void table_add(struct table *t, enum cell_kind kind, const char *text);
void table_free(struct table *t);
/* {"columns": [...], "rows": [[...]], "range": {...}} into t (the range,
 * when the answer has one, for the footer). 0, or -1 with err. */
int table_from_answer(const char *json, struct table *t, char *err, size_t errlen);

/* ---- Output (render.c) ------------------------------------------------------ */

enum shell_format { FORMAT_TABLE, FORMAT_JSON, FORMAT_CSV };

/* "table", "json", "csv"; -1 for anything else. */
int format_parse(const char *name);
const char *format_name(enum shell_format f);
/* Prints t: an aligned table with a "(N rows)" footer, CSV with a header
 * line, or {"columns":...,"rows":...} on one line. title (may be NULL)
 * heads an aligned table. */
void render(FILE *f, const struct table *t, enum shell_format format, const char *title);

/* ---- Asks in text (scan.c) -------------------------------------------------- */

/* Where the first statement in text[0..len) ends: the offset just past its
 * top-level ';' (outside strings, quoted names and comments), or 0 when no
 * ';' ends one yet. *in_quote (may be NULL) tells whether text ends inside
 * a string, quoted name or comment. */
size_t scan_statement(const char *text, size_t len, bool *in_quote);
/* True when text holds nothing but whitespace, comments and ';'. */
bool scan_blank(const char *text, size_t len);
/* The highest $n in the ask outside strings and comments, 0 for none. */
int scan_max_param(const char *text, size_t len);

/* ---- The session (commands.c) ----------------------------------------------- */

struct shell {
    struct backend *backend;
    enum shell_format format;
    bool timing;
    bool interactive;
    char *time_zone;                            /* NULL: the server's default, UTC */
    struct ask_value params[SHELL_MAX_PARAMS];  /* $1.. ; kind ASK_NULL with text NULL: unbound */
    bool bound[SHELL_MAX_PARAMS];
    bool quit;                                  /* \q */
    int failures;                               /* asks and commands that failed */
};

void shell_free(struct shell *s);
/* Runs one ask (text as typed, ';' included or not). 0, or -1 (printed). */
int shell_ask(struct shell *s, const char *text, size_t len);
/* Runs one backslash command line ("\d trips"). 0, or -1 (printed). */
int shell_command(struct shell *s, const char *line);
/* The views answer parsed ({"views": [...]}, for cJSON_Delete), or NULL;
 * the error is printed unless quiet (Tab completion fetches quietly). */
struct cJSON *shell_views(struct shell *s, bool quiet);

/* ---- Input (repl.c) --------------------------------------------------------- */

/* Reads asks and commands from stdin (a pipe or file) until EOF or \q. */
void repl_stream(struct shell *s, FILE *in);
/* Runs one -c text: its asks and commands, as a piped line would. */
void repl_text(struct shell *s, const char *text);
/* The interactive prompt: libedit line editing, history in
 * ~/.straum_history, asks continued over lines until ';'. */
void repl_interactive(struct shell *s);
/* Set by Ctrl-C at the prompt (repl.c): drops the line being typed, and
 * abandons an ask waiting for straum-serve (backend.c). */
extern volatile sig_atomic_t shell_interrupted;

/* ---- Tab completion (complete.c) ------------------------------------------ */

/* Completes backslash commands, the language's words and, fetched at the
 * first Tab, the views' names and columns; complete_stop frees them. */
void complete_start(struct shell *s);
void complete_stop(void);

#endif
