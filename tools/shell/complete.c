/* complete.c -- Tab completion at the prompt: backslash commands, the ask
 * language's words, and the store's view and column names.
 *
 * The names come from the views answer the first time Tab is pressed (one
 * request, not one per key), so a shell started before its server still
 * completes once the server is up. Completion never prints an error: a
 * failed views request just leaves the names out. */
#include "tools/shell/shell.h"

#include <cjson/cJSON.h>
#include <editline/readline.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static const char *const fixed_words[] = {
    "\\views", "\\d", "\\timing", "\\tz", "\\bind", "\\unbind", "\\format", "\\q", "\\?",
    "SELECT", "FROM", "WHERE", "AND", "GROUP BY", "ORDER BY", "LIMIT", "OFFSET", "ASC",
    "DESC", "NULLS FIRST", "NULLS LAST", "IN", "NOT IN", "IS NULL", "IS NOT NULL", "AS",
    "bucket", "date_bin", "json", "csv", "table", "on", "off",
};

/* The completion state: one shell per process, so file-scope is enough. */
static struct {
    struct shell *shell;
    bool loaded;          /* names fetched (or tried) */
    char **names;         /* view and column names, each once */
    int nnames;
    int next;             /* generator position within fixed_words then names */
} comp;

static void add_name(const char *name)
{
    if (!name || !*name)
        return;
    for (int i = 0; i < comp.nnames; i++)
        if (!strcmp(comp.names[i], name))
            return;
    char **grown = realloc(comp.names, (size_t)(comp.nnames + 1) * sizeof *grown);
    char *copy = strdup(name);
    if (!grown || !copy) {
        free(copy);
        if (grown)
            comp.names = grown;
        return;
    }
    comp.names = grown;
    comp.names[comp.nnames++] = copy;
}

static void add_names_of(const cJSON *view, const char *list)
{
    const cJSON *c;
    cJSON_ArrayForEach(c, cJSON_GetObjectItemCaseSensitive(view, list)) {
        const cJSON *name = cJSON_GetObjectItemCaseSensitive(c, "name");
        add_name(cJSON_IsString(name) ? name->valuestring : NULL);
    }
}

static void load_names(void)
{
    comp.loaded = true;
    cJSON *root = shell_views(comp.shell, true);
    const cJSON *v;
    cJSON_ArrayForEach(v, cJSON_GetObjectItemCaseSensitive(root, "views")) {
        const cJSON *name = cJSON_GetObjectItemCaseSensitive(v, "name");
        add_name(cJSON_IsString(name) ? name->valuestring : NULL);
        add_names_of(v, "keys");
        add_names_of(v, "dim_columns");
        add_names_of(v, "measures");
    }
    cJSON_Delete(root);
}

/* readline's generator: the next word starting with text (case-insensitive
 * for the language's words, as SQL is), state 0 on the first call. */
static char *next_word(const char *text, int state)
{
    if (state == 0)
        comp.next = 0;
    size_t len = strlen(text);
    int nfixed = (int)(sizeof fixed_words / sizeof fixed_words[0]);
    while (comp.next < nfixed + comp.nnames) {
        int i = comp.next++;
        const char *w = i < nfixed ? fixed_words[i] : comp.names[i - nfixed];
        if (!strncasecmp(w, text, len))
            return strdup(w);
    }
    return NULL;
}

static char **complete(const char *text, int start, int end)
{
    (void)start;
    (void)end;
    if (!comp.loaded)
        load_names();
    rl_attempted_completion_over = 1; /* no file names */
    return rl_completion_matches(text, next_word);
}

void complete_start(struct shell *s)
{
    comp.shell = s;
    rl_attempted_completion_function = complete;
    /* A backslash begins a command word; '$' and quotes never start a name. */
    rl_basic_word_break_characters = " \t\n\"'(),;=<>";
}

void complete_stop(void)
{
    for (int i = 0; i < comp.nnames; i++)
        free(comp.names[i]);
    free(comp.names);
    memset(&comp, 0, sizeof comp);
    rl_attempted_completion_function = NULL;
}
