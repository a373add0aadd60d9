/* commands.c -- what the shell does with an ask (bind the session's
 * parameters, ask, print the answer and its time) and with a backslash
 * command (\views, \d, \timing, \tz, \bind, \unbind, \format, \q, \?), and
 * how errors are printed: the engine's code, message and place, with the
 * ask's line and a caret under the column, as psql shows them. */
#include "tools/shell/shell.h"

#include <cjson/cJSON.h>
#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

static const char help_text[] =
    "Asks end with ';' (or at the end of a -c text or of the input):\n"
    "  SELECT borough, trips FROM trips WHERE bucket >= $1 AND bucket < $2 GROUP BY borough;\n"
    "  SELECT date_trunc('day', bucket) AS day, trips FROM trips\n"
    "    WHERE bucket >= '2024-03-09 13:42' AND bucket < '2024-03-16' GROUP BY day;\n"
    "  SELECT date_trunc('month', bucket) AS month, borough, trips FROM trips\n"
    "    GROUP BY month, borough ORDER BY month;\n"
    "    (days, weeks, months of the \\tz zone; date_bin('6 hours', bucket) bins them)\n"
    "Commands:\n"
    "  \\views              list the views\n"
    "  \\d [VIEW]           describe a view: columns, measures, widths and cells\n"
    "  \\bind [N VALUE]     set parameter $N (number, true/false, null, 'text' or text);\n"
    "                      without arguments, list the parameters\n"
    "  \\unbind [N]         forget parameter $N, or all of them\n"
    "  \\tz [ZONE]          time zone of asks (tz database name; \\tz default: UTC)\n"
    "  \\format [table|json|csv]   how answers are printed\n"
    "  \\timing [on|off]    print each ask's time\n"
    "  \\? or \\help         this help\n"
    "  \\q                  quit\n";

void shell_free(struct shell *s)
{
    for (int i = 0; i < SHELL_MAX_PARAMS; i++)
        free((char *)s->params[i].text);
    free(s->time_zone);
    backend_close(s->backend);
    memset(s, 0, sizeof *s);
}

static int failed(struct shell *s)
{
    s->failures++;
    return -1;
}

/* ERROR:  code: line L, column C: message, then the ask's line L with a
 * caret under column C. */
static void print_error(const struct shell_error *e, const char *ask)
{
    if (!e->code[0])
        fprintf(stderr, "ERROR:  %s\n", e->message);
    else if (e->line > 0)
        fprintf(stderr, "ERROR:  %s: line %d, column %d: %s\n", e->code, e->line, e->column,
                e->message);
    else
        fprintf(stderr, "ERROR:  %s: %s\n", e->code, e->message);
    if (!ask || e->line <= 0)
        return;
    const char *p = ask;
    for (int l = 1; l < e->line && p; l++) {
        p = strchr(p, '\n');
        if (p)
            p++;
    }
    if (!p)
        return;
    int n = (int)strcspn(p, "\n");
    char prefix[32];
    int plen = snprintf(prefix, sizeof prefix, "LINE %d: ", e->line);
    fprintf(stderr, "%s%.*s\n", prefix, n, p);
    int col = plen;
    for (int i = 0, c = 1; i < n && c < e->column; i++) /* characters, not bytes */
        if (((unsigned char)p[i] & 0xC0) != 0x80)
            c++, col++;
    fprintf(stderr, "%*s^\n", col, "");
}

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* The answer as JSON (the engine's own text) or through a table. */
static int print_answer(struct shell *s, const char *json)
{
    if (s->format == FORMAT_JSON) {
        size_t n = strlen(json);
        while (n > 0 && isspace((unsigned char)json[n - 1]))
            n--;
        printf("%.*s\n", (int)n, json);
        return 0;
    }
    struct table t;
    char err[400];
    if (table_from_answer(json, &t, err, sizeof err) != 0) {
        fprintf(stderr, "ERROR:  %s\n", err);
        table_free(&t);
        return -1;
    }
    render(stdout, &t, s->format, NULL);
    table_free(&t);
    return 0;
}

int shell_ask(struct shell *s, const char *text, size_t len)
{
    while (len > 0 && isspace((unsigned char)*text))
        text++, len--;
    while (len > 0 && isspace((unsigned char)text[len - 1]))
        len--;
    if (scan_blank(text, len))
        return 0;
    char *ask = malloc(len + 1);
    if (!ask) {
        fprintf(stderr, "ERROR:  out of memory\n");
        return failed(s);
    }
    memcpy(ask, text, len);
    ask[len] = '\0';
    int n = scan_max_param(ask, len);
    if (n > SHELL_MAX_PARAMS) {
        fprintf(stderr, "ERROR:  the ask uses $%d; at most $%d can be bound\n", n,
                SHELL_MAX_PARAMS);
        free(ask);
        return failed(s);
    }
    for (int i = 0; i < n; i++)
        if (!s->bound[i]) {
            fprintf(stderr, "ERROR:  the ask uses $%d, which is not bound: \\bind %d VALUE first\n",
                    i + 1, i + 1);
            free(ask);
            return failed(s);
        }
    struct shell_error err;
    char *answer = NULL;
    double t0 = now_ms();
    int rc = backend_ask(s->backend, ask, s->params, n, s->time_zone, &answer, &err);
    double ms = now_ms() - t0;
    if (rc != 0) {
        print_error(&err, ask);
        free(ask);
        return failed(s);
    }
    rc = print_answer(s, answer);
    if (s->timing)
        printf("Time: %.3f ms\n", ms);
    fflush(stdout);
    free(answer);
    free(ask);
    return rc ? failed(s) : 0;
}

/* ---- \views and \d --------------------------------------------------------------- */

cJSON *shell_views(struct shell *s, bool quiet)
{
    char *text = NULL;
    struct shell_error err;
    if (backend_views(s->backend, &text, &err) != 0) {
        if (!quiet)
            print_error(&err, NULL);
        return NULL;
    }
    cJSON *root = cJSON_Parse(text);
    free(text);
    if (!cJSON_IsArray(cJSON_GetObjectItemCaseSensitive(root, "views"))) {
        if (!quiet)
            fprintf(stderr, "ERROR:  the views answer is not {\"views\": [...]}\n");
        cJSON_Delete(root);
        return NULL;
    }
    return root;
}

static const char *str(const cJSON *o, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsString(v) ? v->valuestring : "";
}

/* The names in an array of strings, or of objects' "name"/"width" fields,
 * joined by ", ". */
static void name_list(const cJSON *arr, const char *field, struct buf *b)
{
    const cJSON *v;
    bool first = true;
    cJSON_ArrayForEach(v, arr) {
        const char *name = cJSON_IsString(v) ? v->valuestring : str(v, field);
        buf_puts(b, first ? "" : ", ");
        buf_puts(b, name);
        first = false;
    }
    buf_put(b, "", 1);
}

static int cmd_views(struct shell *s)
{
    cJSON *root = shell_views(s, false);
    if (!root)
        return failed(s);
    if (s->format == FORMAT_JSON) {
        char *text = cJSON_PrintUnformatted(root);
        printf("%s\n", text ? text : "");
        cJSON_free(text);
        cJSON_Delete(root);
        return 0;
    }
    static const char *const cols[] = {"view", "fact_table", "widths", "keys", "dim_columns",
                                       "measures"};
    struct table t;
    table_init(&t, 6, cols);
    const cJSON *v;
    cJSON_ArrayForEach(v, cJSON_GetObjectItemCaseSensitive(root, "views")) {
        table_add(&t, CELL_TEXT, str(v, "name"));
        table_add(&t, CELL_TEXT, str(v, "fact_table"));
        static const char *const lists[][2] = {
            {"widths", "width"}, {"keys", "name"}, {"dim_columns", "name"}, {"measures", "name"}};
        for (int i = 0; i < 4; i++) {
            struct buf b = {0};
            name_list(cJSON_GetObjectItemCaseSensitive(v, lists[i][0]), lists[i][1], &b);
            table_add(&t, CELL_TEXT, b.data ? b.data : "");
            buf_free(&b);
        }
    }
    render(stdout, &t, s->format, NULL);
    table_free(&t);
    cJSON_Delete(root);
    return 0;
}

static void measure_text(const cJSON *m, struct buf *b)
{
    const char *agg = str(m, "aggregate"), *col = str(m, "column");
    const cJSON *fraction = cJSON_GetObjectItemCaseSensitive(m, "fraction");
    char fraction_text[32], text[600];
    if (cJSON_IsNumber(fraction))
        snprintf(fraction_text, sizeof fraction_text, "%.15g", fraction->valuedouble);
    int a = sql_agg_by_label(agg);
    if (a >= 0) {
        sql_agg_format((enum sql_agg)a, col, cJSON_IsNumber(fraction) ? fraction_text : NULL,
                       text, sizeof text);
        buf_puts(b, text);
    } else { /* a server with an aggregate this build does not know */
        buf_printf(b, "%s(%s)", agg, col);
    }
    const cJSON *filter = cJSON_GetObjectItemCaseSensitive(m, "filter");
    if (cJSON_IsString(filter))
        buf_printf(b, " FILTER (WHERE %s)", filter->valuestring);
    buf_put(b, "", 1);
}

/* A view name as SQL reads it: "Quoted" as written ("" a quote), anything
 * else folded to lower case. False when a quote is not closed. */
static bool view_name(const char *arg, char *out, size_t cap)
{
    size_t n = 0;
    if (*arg != '"') {
        for (; *arg && n + 1 < cap; arg++)
            out[n++] = (char)tolower((unsigned char)*arg);
        out[n] = '\0';
        return true;
    }
    for (arg++; *arg && n + 1 < cap; arg++) {
        if (*arg == '"' && arg[1] != '"')
            break;
        arg += *arg == '"'; /* "" is one quote */
        out[n++] = *arg;
    }
    out[n] = '\0';
    return *arg == '"' && arg[1] == '\0';
}

static int cmd_describe(struct shell *s, const char *arg)
{
    if (!*arg)
        return cmd_views(s);
    char name[256];
    if (!view_name(arg, name, sizeof name)) {
        fprintf(stderr, "ERROR:  \\d %s: the quoted name is not closed\n", arg);
        return failed(s);
    }
    cJSON *root = shell_views(s, false);
    if (!root)
        return failed(s);
    const cJSON *v, *view = NULL;
    cJSON_ArrayForEach(v, cJSON_GetObjectItemCaseSensitive(root, "views"))
        if (!strcmp(str(v, "name"), name))
            view = v;
    if (!view) {
        fprintf(stderr, "ERROR:  unknown view \"%s\" (\\views lists them)\n", name);
        cJSON_Delete(root);
        return failed(s);
    }
    if (s->format == FORMAT_JSON) {
        char *text = cJSON_PrintUnformatted(view);
        printf("%s\n", text ? text : "");
        cJSON_free(text);
        cJSON_Delete(root);
        return 0;
    }
    static const char *const cols[] = {"column", "kind", "definition"};
    struct table t;
    table_init(&t, 3, cols);
    const cJSON *c;
    cJSON_ArrayForEach(c, cJSON_GetObjectItemCaseSensitive(view, "keys")) {
        table_add(&t, CELL_TEXT, cJSON_IsString(c) ? c->valuestring : "");
        table_add(&t, CELL_TEXT, "key");
        table_add(&t, CELL_TEXT, "");
    }
    cJSON_ArrayForEach(c, cJSON_GetObjectItemCaseSensitive(view, "dim_columns")) {
        struct buf b = {0};
        buf_printf(&b, "%s.%s", str(c, "table"), str(c, "column"));
        buf_put(&b, "", 1);
        table_add(&t, CELL_TEXT, str(c, "name"));
        table_add(&t, CELL_TEXT, "dim column");
        table_add(&t, CELL_TEXT, b.data ? b.data : "");
        buf_free(&b);
    }
    cJSON_ArrayForEach(c, cJSON_GetObjectItemCaseSensitive(view, "measures")) {
        struct buf b = {0};
        measure_text(c, &b);
        table_add(&t, CELL_TEXT, str(c, "name"));
        table_add(&t, CELL_TEXT, "measure");
        table_add(&t, CELL_TEXT, b.data ? b.data : "");
        buf_free(&b);
    }
    char title[300];
    snprintf(title, sizeof title, "View \"%s\" on %s", str(view, "name"), str(view, "fact_table"));
    render(stdout, &t, s->format, title);
    table_free(&t);

    static const char *const wcols[] = {"width", "seconds", "cells"};
    table_init(&t, 3, wcols);
    cJSON_ArrayForEach(c, cJSON_GetObjectItemCaseSensitive(view, "widths")) {
        char n[2][32];
        const cJSON *sec = cJSON_GetObjectItemCaseSensitive(c, "seconds");
        const cJSON *cells = cJSON_GetObjectItemCaseSensitive(c, "cells");
        snprintf(n[0], sizeof n[0], "%.0f", cJSON_IsNumber(sec) ? sec->valuedouble : 0);
        snprintf(n[1], sizeof n[1], "%.0f", cJSON_IsNumber(cells) ? cells->valuedouble : 0);
        table_add(&t, CELL_TEXT, str(c, "width"));
        table_add(&t, CELL_NUMBER, n[0]);
        table_add(&t, CELL_NUMBER, n[1]);
    }
    render(stdout, &t, s->format, "Widths");
    table_free(&t);
    cJSON_Delete(root);
    return 0;
}

/* ---- \bind ------------------------------------------------------------------------ */

static bool json_number(const char *s)
{
    if (*s == '-')
        s++;
    if (*s == '0')
        s++;
    else if (*s >= '1' && *s <= '9')
        while (*s >= '0' && *s <= '9')
            s++;
    else
        return false;
    if (*s == '.') {
        if (!isdigit((unsigned char)*++s))
            return false;
        while (isdigit((unsigned char)*s))
            s++;
    }
    if (*s == 'e' || *s == 'E') {
        s++;
        if (*s == '+' || *s == '-')
            s++;
        if (!isdigit((unsigned char)*s))
            return false;
        while (isdigit((unsigned char)*s))
            s++;
    }
    return *s == '\0';
}

/* VALUE: 'text' ('' a quote), a JSON number, true, false, null, or any
 * other text as it stands. 0, or -1 (printed). */
static int parse_value(const char *text, struct ask_value *v)
{
    memset(v, 0, sizeof *v);
    size_t n = strlen(text);
    char *copy = malloc(n + 1);
    if (!copy) {
        fprintf(stderr, "ERROR:  out of memory\n");
        return -1;
    }
    if (text[0] == '\'') {
        size_t o = 0, i = 1;
        for (;; i++) {
            if (text[i] == '\0') {
                fprintf(stderr, "ERROR:  \\bind: unterminated quoted value %s\n", text);
                free(copy);
                return -1;
            }
            if (text[i] == '\'') {
                if (text[i + 1] != '\'')
                    break;
                i++;
            }
            copy[o++] = text[i];
        }
        if (text[i + 1] != '\0') {
            fprintf(stderr, "ERROR:  \\bind: text after the quoted value: %s\n", text + i + 1);
            free(copy);
            return -1;
        }
        copy[o] = '\0';
        v->kind = ASK_STRING;
        v->text = copy;
        v->len = o;
        return 0;
    }
    memcpy(copy, text, n + 1);
    v->text = copy;
    v->len = n;
    if (!strcasecmp(text, "null"))
        v->kind = ASK_NULL;
    else if (!strcasecmp(text, "true") || !strcasecmp(text, "false")) {
        v->kind = ASK_BOOL;
        v->boolean = tolower((unsigned char)text[0]) == 't';
    } else if (json_number(text))
        v->kind = ASK_NUMBER;
    else
        v->kind = ASK_STRING;
    return 0;
}

/* "3" or "$3" into 1..SHELL_MAX_PARAMS; 0 when it is not one. */
static int param_number(const char *s)
{
    if (*s == '$')
        s++;
    char *end;
    long n = strtol(s, &end, 10);
    if (!isdigit((unsigned char)*s) || *end || n < 1 || n > SHELL_MAX_PARAMS)
        return 0;
    return (int)n;
}

static void unbind(struct shell *s, int i)
{
    free((char *)s->params[i].text);
    memset(&s->params[i], 0, sizeof s->params[i]);
    s->bound[i] = false;
}

static int cmd_bind(struct shell *s, const char *args)
{
    if (!*args) {
        static const char *const cols[] = {"parameter", "value", "type"};
        struct table t;
        table_init(&t, 3, cols);
        for (int i = 0; i < SHELL_MAX_PARAMS; i++) {
            if (!s->bound[i])
                continue;
            const struct ask_value *v = &s->params[i];
            char name[16];
            snprintf(name, sizeof name, "$%d", i + 1);
            table_add(&t, CELL_TEXT, name);
            table_add(&t, v->kind == ASK_NULL ? CELL_NULL : CELL_TEXT,
                      v->kind == ASK_BOOL ? (v->boolean ? "true" : "false") : v->text);
            table_add(&t, CELL_TEXT, v->kind == ASK_NULL     ? "null"
                                     : v->kind == ASK_BOOL   ? "boolean"
                                     : v->kind == ASK_NUMBER ? "number"
                                                             : "text");
        }
        render(stdout, &t, s->format, NULL);
        table_free(&t);
        return 0;
    }
    size_t k = strcspn(args, " \t");
    char name[32];
    snprintf(name, sizeof name, "%.*s", (int)(k < 31 ? k : 31), args);
    const char *value = args + k;
    while (*value == ' ' || *value == '\t')
        value++;
    int n = param_number(name);
    if (!n || !*value) {
        fprintf(stderr, "ERROR:  usage: \\bind N VALUE (N from 1 to %d, e.g. \\bind 1 2024-01-01)\n",
                SHELL_MAX_PARAMS);
        return failed(s);
    }
    struct ask_value v;
    if (parse_value(value, &v) != 0)
        return failed(s);
    unbind(s, n - 1);
    s->params[n - 1] = v;
    s->bound[n - 1] = true;
    return 0;
}

static int cmd_unbind(struct shell *s, const char *args)
{
    if (!*args) {
        for (int i = 0; i < SHELL_MAX_PARAMS; i++)
            unbind(s, i);
        return 0;
    }
    int n = param_number(args);
    if (!n) {
        fprintf(stderr, "ERROR:  usage: \\unbind [N] (N from 1 to %d)\n", SHELL_MAX_PARAMS);
        return failed(s);
    }
    unbind(s, n - 1);
    return 0;
}

/* ---- The rest ----------------------------------------------------------------------- */

static int cmd_tz(struct shell *s, const char *zone)
{
    if (!*zone) {
        printf("Time zone: %s\n", s->time_zone ? s->time_zone : "UTC (the default)");
        return 0;
    }
    if (strpbrk(zone, " \t")) {
        fprintf(stderr, "ERROR:  usage: \\tz ZONE (a tz database name such as America/New_York)\n");
        return failed(s);
    }
    char *z = NULL;
    if (strcasecmp(zone, "default") != 0 && !(z = strdup(zone))) {
        fprintf(stderr, "ERROR:  out of memory\n");
        return failed(s);
    }
    free(s->time_zone);
    s->time_zone = z;
    return 0;
}

static int cmd_format(struct shell *s, const char *name)
{
    if (!*name) {
        printf("Output format is %s.\n", format_name(s->format));
        return 0;
    }
    int f = format_parse(name);
    if (f < 0) {
        fprintf(stderr, "ERROR:  \\format: unknown format \"%s\" (table, json or csv)\n", name);
        return failed(s);
    }
    s->format = (enum shell_format)f;
    if (s->interactive)
        printf("Output format is %s.\n", format_name(s->format));
    return 0;
}

static int cmd_timing(struct shell *s, const char *arg)
{
    if (!*arg)
        s->timing = !s->timing;
    else if (!strcasecmp(arg, "on"))
        s->timing = true;
    else if (!strcasecmp(arg, "off"))
        s->timing = false;
    else {
        fprintf(stderr, "ERROR:  \\timing: expected on or off, not \"%s\"\n", arg);
        return failed(s);
    }
    printf("Timing is %s.\n", s->timing ? "on" : "off");
    return 0;
}

int shell_command(struct shell *s, const char *line)
{
    while (isspace((unsigned char)*line))
        line++;
    if (*line == '\\')
        line++;
    size_t k = 0;
    while (line[k] && !isspace((unsigned char)line[k]))
        k++;
    char cmd[32];
    snprintf(cmd, sizeof cmd, "%.*s", (int)(k < 31 ? k : 31), line);
    /* the arguments, trimmed */
    const char *a = line + k;
    while (isspace((unsigned char)*a))
        a++;
    size_t n = strlen(a);
    while (n > 0 && isspace((unsigned char)a[n - 1]))
        n--;
    char *args = malloc(n + 1);
    if (!args) {
        fprintf(stderr, "ERROR:  out of memory\n");
        return failed(s);
    }
    memcpy(args, a, n);
    args[n] = '\0';
    int rc;
    if (!strcmp(cmd, "q") || !strcmp(cmd, "quit")) {
        s->quit = true;
        rc = 0;
    } else if (!strcmp(cmd, "?") || !strcmp(cmd, "help") || !strcmp(cmd, "h")) {
        fputs(help_text, stdout);
        rc = 0;
    } else if (!strcmp(cmd, "views") || !strcmp(cmd, "dv")) {
        rc = cmd_views(s);
    } else if (!strcmp(cmd, "d")) {
        rc = cmd_describe(s, args);
    } else if (!strcmp(cmd, "timing")) {
        rc = cmd_timing(s, args);
    } else if (!strcmp(cmd, "tz")) {
        rc = cmd_tz(s, args);
    } else if (!strcmp(cmd, "bind")) {
        rc = cmd_bind(s, args);
    } else if (!strcmp(cmd, "unbind")) {
        rc = cmd_unbind(s, args);
    } else if (!strcmp(cmd, "format")) {
        rc = cmd_format(s, args);
    } else {
        fprintf(stderr, "ERROR:  invalid command \\%s (\\? lists the commands)\n", cmd);
        rc = failed(s);
    }
    free(args);
    fflush(stdout);
    return rc;
}
