/* repl.c -- reading asks and backslash commands, a line at a time: from a
 * pipe or file, from a -c text, or at a terminal through libedit (line
 * editing, history in ~/.straum_history, Tab completion in complete.c).
 * Lines gather until a ';' outside strings and comments ends an ask, as in
 * psql, so an ask may span lines;
 * the end of the input (or of a -c text) ends the last one too. A line
 * starting with a backslash, outside a string or comment, is a command and
 * runs at once (an ask being typed is kept). */
#include "tools/shell/shell.h"

#include <ctype.h>
#include <editline/readline.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

/* The text typed so far of the ask not yet ended. */
struct pending {
    struct buf text;
};

static bool is_command(const struct pending *p, const char *line)
{
    bool in_quote = false;
    if (p->text.len)
        scan_statement(p->text.data, p->text.len, &in_quote);
    while (isspace((unsigned char)*line))
        line++;
    return !in_quote && *line == '\\';
}

/* Runs every ask the pending text now ends; keeps the rest. */
static void run_complete(struct shell *s, struct pending *p)
{
    size_t end;
    while (!s->quit && p->text.len && (end = scan_statement(p->text.data, p->text.len, NULL))) {
        shell_ask(s, p->text.data, end);
        memmove(p->text.data, p->text.data + end, p->text.len - end);
        p->text.len -= end;
    }
    if (p->text.len && scan_blank(p->text.data, p->text.len))
        p->text.len = 0;
}

static void feed_line(struct shell *s, struct pending *p, const char *line)
{
    if (is_command(p, line)) {
        shell_command(s, line);
        return;
    }
    buf_puts(&p->text, line);
    buf_puts(&p->text, "\n");
    if (p->text.failed) {
        fprintf(stderr, "ERROR:  out of memory\n");
        s->failures++;
        p->text.len = 0;
        p->text.failed = false;
        return;
    }
    run_complete(s, p);
}

/* The end of the input ends the last ask. */
static void finish(struct shell *s, struct pending *p)
{
    if (!s->quit && p->text.len && !scan_blank(p->text.data, p->text.len))
        shell_ask(s, p->text.data, p->text.len);
    buf_free(&p->text);
}

void repl_stream(struct shell *s, FILE *in)
{
    struct pending p = {0};
    char *line = NULL;
    size_t cap = 0;
    ssize_t n;
    while (!s->quit && (n = getline(&line, &cap, in)) >= 0) {
        if (n > 0 && line[n - 1] == '\n')
            line[--n] = '\0';
        feed_line(s, &p, line);
    }
    free(line);
    finish(s, &p);
}

void repl_text(struct shell *s, const char *text)
{
    struct pending p = {0};
    while (!s->quit && *text) {
        size_t n = strcspn(text, "\n");
        char *line = strndup(text, n);
        if (!line) {
            fprintf(stderr, "ERROR:  out of memory\n");
            s->failures++;
            break;
        }
        feed_line(s, &p, line);
        free(line);
        text += n + (text[n] == '\n');
    }
    finish(s, &p);
}

/* Ctrl-C at the prompt drops the line and the ask being typed, as in psql,
 * instead of ending the shell. */
volatile sig_atomic_t shell_interrupted;

static void on_sigint(int sig)
{
    (void)sig;
    shell_interrupted = 1;
}

void repl_interactive(struct shell *s)
{
    struct sigaction sa = {.sa_handler = on_sigint}, old; /* no SA_RESTART: the read ends */
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, &old);
    char history[4096] = "";
    const char *home = getenv("HOME");
    if (home && *home)
        snprintf(history, sizeof history, "%s/.straum_history", home);
    using_history();
    stifle_history(1000);
    complete_start(s);
    if (history[0])
        read_history(history);
    struct pending p = {0};
    while (!s->quit) {
        bool in_quote = false;
        if (p.text.len)
            scan_statement(p.text.data, p.text.len, &in_quote);
        const char *prompt = !p.text.len ? "straum=> " : in_quote ? "straum'> " : "straum-> ";
        shell_interrupted = 0;
        char *line = readline(prompt);
        if (shell_interrupted) {
            free(line);
            p.text.len = 0;
            printf("\n");
            continue;
        }
        if (!line) { /* Ctrl-D */
            printf("\\q\n");
            break;
        }
        if (*line)
            add_history(line);
        feed_line(s, &p, line);
        free(line);
    }
    buf_free(&p.text);
    if (history[0] && write_history(history) != 0)
        fprintf(stderr, "straum-shell: cannot write the history to %s\n", history);
    clear_history();
    complete_stop();
    sigaction(SIGINT, &old, NULL);
}
