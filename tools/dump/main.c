/* main.c -- straum-dump: inspect a Straum store.
 *
 *   straum-dump --store DIR [--json] <command> [args]
 *
 * This file parses arguments, prints help, opens the store read-only and
 * runs one command (dump.h). Global options may come before or after the
 * command, so both `straum-dump --json --store s stats` and
 * `straum-dump --store s stats --json` work. Exit status: 0 fine, 1 damage
 * found or a read failed, 2 usage error or a store that cannot be opened. */
#include "tools/dump/dump.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* Options a command may take. */
enum {
    OPT_WIDTH = 1 << 0,
    OPT_FROM = 1 << 1,
    OPT_TO = 1 << 2,
    OPT_LIMIT = 1 << 3,
};

struct command {
    const char *name;
    const char *synopsis;
    const char *summary;
    const char *help; /* what it prints and what its options mean */
    int npos;         /* positional arguments it needs */
    unsigned options;
    int (*run)(struct dump *d, const struct dump_args *a);
};

static const struct command commands[] = {
    {"catalog", "catalog", "what the store is: version, source position, lag, views",
     "Prints the catalog: format version, creation time, the source position\n"
     "(LSN as PostgreSQL writes it, X/XXXXXXXX), the last commit and contact\n"
     "times, bytes behind and the lag (now minus the last commit time); then\n"
     "each view: fact table, widths, columns (bucket, key, dim via a join, or\n"
     "measure with its filter), cell keys, joins, accumulators, and the types\n"
     "of the fact columns it reads.\n",
     0, 0, cmd_catalog},
    {"stats", "stats", "cells, segments and bytes per view and width",
     "Per view and width: segments, cells, bytes on disk (blocks as stored),\n"
     "bytes per cell and value-count entries; totals per view and overall; the\n"
     "store's file size. Reads block headers only.\n",
     0, 0, cmd_stats},
    {"segments", "segments VIEW [--width W]", "one line per segment block",
     "One line per segment of VIEW: width, span start and end, cells, bytes,\n"
     "then each column as role#index, codec and encoded bytes. A block that\n"
     "does not open is reported on stderr and the listing goes on (exit 1).\n"
     "\n"
     "  --width W   only width W: an index (0 is the finest) or a width as\n"
     "              written in the view (\"1 hour\", \"1 day\"); default all\n",
     1, OPT_WIDTH, cmd_segments},
    {"cells", "cells VIEW --width W [--from T] [--to T] [--limit N]",
     "the cells of a view, decoded, in time order",
     "One line per cell of VIEW at width W, in time order:\n"
     "  <bucket>  <key>=<value> ...  <accumulator>=<value> ...\n"
     "Keys are rendered by their column type (text through the dictionary);\n"
     "dim columns are read from the dense dim columns at the cell's join key.\n"
     "Exact sums are scaled by their column's numeric scale; value counts\n"
     "print as {value: rows, ...}.\n"
     "\n"
     "  --width W   required: an index (0 is the finest) or a width (\"1 hour\")\n"
     "  --from T    only buckets >= T    T: \"2024-01-17\", \"2024-01-17 10:00\",\n"
     "  --to T      only buckets <  T       \"2024-01-17T10:00:00+02\", \"epoch\";\n"
     "                                     without an offset T is UTC\n"
     "  --limit N   at most N cells (default 100; 0 means all). When cells are\n"
     "              left out a note says so on stderr\n",
     1, OPT_WIDTH | OPT_FROM | OPT_TO | OPT_LIMIT, cmd_cells},
    {"dims", "dims", "the dense dim columns of every join",
     "One line per dense dim column (a view's join and one of its dim\n"
     "columns; a join reading none has one, named by its key): the keys with\n"
     "a dim row, how many of them are NULL in the column, the distinct texts\n"
     "its dictionary has numbered, the chunks stored, their bytes, and the\n"
     "widest entry in bytes. Every chunk is opened and its checksum checked.\n",
     0, 0, cmd_dims},
    {"verify", "verify", "check every segment and dim column; exit 1 on damage",
     "Reads the catalog and checks every segment of every view and width:\n"
     "block and column checksums, that every column decodes, and the store's\n"
     "invariants (cells sorted and unique, buckets inside the span, positive\n"
     "row counts, value counts in order). Then checks every join's dense dim\n"
     "columns: each chunk's checksum and canonical encoding, the join's\n"
     "columns agreeing on which keys have a dim row, every id reading back\n"
     "from its dictionary, no chunk stored without a row. Prints \"ok: N segments, M cells, R dim rows\n"
     "verified\" and exits 0, or one \"broken:\" line per damaged segment\n"
     "(naming its view, width and span) or join, and exits 1.\n",
     0, 0, cmd_verify},
    {"copy", "copy DEST", "write a compacted, consistent copy of the store",
     "Writes a compacted copy of the store to DEST (a new or empty directory)\n"
     "from one read snapshot, so it is safe while straum-ingest writes; then\n"
     "opens the copy and prints the sizes of source and copy.\n",
     1, 0, cmd_copy},
};
#define NCOMMANDS ((int)(sizeof commands / sizeof commands[0]))

static const struct {
    const char *name;
    unsigned flag;
} command_options[] = {
    {"--width", OPT_WIDTH},
    {"--from", OPT_FROM},
    {"--to", OPT_TO},
    {"--limit", OPT_LIMIT},
};

static void tool_help(FILE *f)
{
    fputs("usage: straum-dump --store DIR [--json] <command> [args]\n"
          "       straum-dump <command> --help\n"
          "       straum-dump --help | --version\n"
          "\n"
          "Inspects a Straum store, read-only: safe next to a running straum-ingest.\n"
          "Each command reads one consistent snapshot.\n"
          "\n"
          "options:\n"
          "  --store DIR   the store directory (required for every command)\n"
          "  --json        print one JSON object instead of text; exact sums and\n"
          "                other 128-bit values are strings, times are RFC 3339 UTC\n"
          "  --help, -h    this help, or a command's with `<command> --help`\n"
          "  --version     print the version\n"
          "\n"
          "commands:\n",
          f);
    for (int i = 0; i < NCOMMANDS; i++) {
        if (strlen(commands[i].synopsis) <= 26)
            fprintf(f, "  %-26s  %s\n", commands[i].synopsis, commands[i].summary);
        else
            fprintf(f, "  %s\n  %-26s  %s\n", commands[i].synopsis, "", commands[i].summary);
    }
    fputs("\n"
          "W (a width) is an index or a width text such as \"1 hour\"; T (a time) is\n"
          "a timestamp such as \"2024-01-17 10:00\", read as UTC without an offset.\n"
          "exit status: 0 ok, 1 damage found or a read failed, 2 usage error or a\n"
          "store that cannot be opened.\n",
          f);
}

static void command_help(FILE *f, const struct command *c)
{
    fprintf(f, "usage: straum-dump --store DIR [--json] %s\n\n%s", c->synopsis, c->help);
}

static const struct command *find_command(const char *name)
{
    for (int i = 0; i < NCOMMANDS; i++)
        if (strcmp(commands[i].name, name) == 0)
            return &commands[i];
    return NULL;
}

static int usage_error(const char *hint)
{
    fprintf(stderr, "%s\n", hint);
    return DUMP_USAGE;
}

struct parsed {
    const char *store;
    bool json;
    const struct command *cmd;
    struct dump_args args;
};

/* "--name" or "--name=value": true when arg names opt; *inline_value is set
 * for the second form. */
static bool option_is(const char *arg, const char *opt, const char **inline_value)
{
    size_t n = strlen(opt);
    if (strncmp(arg, opt, n) != 0)
        return false;
    if (arg[n] == '\0') {
        *inline_value = NULL;
        return true;
    }
    if (arg[n] == '=') {
        *inline_value = arg + n + 1;
        return true;
    }
    return false;
}

/* Parses argv into p. Returns -1 to go on, or the exit status to end with
 * (help and version end with 0 here). */
static int parse_args(int argc, char **argv, struct parsed *p)
{
    memset(p, 0, sizeof *p);
    bool only_positional = false;
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i], *value;
        if (!only_positional && arg[0] == '-' && arg[1] != '\0') {
            if (strcmp(arg, "--") == 0) {
                only_positional = true;
                continue;
            }
            if (strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0) {
                if (p->cmd)
                    command_help(stdout, p->cmd);
                else
                    tool_help(stdout);
                return DUMP_OK;
            }
            if (strcmp(arg, "--version") == 0) {
                printf("straum-dump " DUMP_VERSION "\n");
                return DUMP_OK;
            }
            if (strcmp(arg, "--json") == 0) {
                p->json = true;
                continue;
            }
            const char **slot = NULL;
            const char *name = NULL;
            if (option_is(arg, "--store", &value)) {
                slot = &p->store;
                name = "--store";
            }
            for (size_t o = 0; !slot && o < sizeof command_options / sizeof command_options[0];
                 o++) {
                if (!option_is(arg, command_options[o].name, &value))
                    continue;
                name = command_options[o].name;
                if (!p->cmd || !(p->cmd->options & command_options[o].flag)) {
                    dump_error("%s does not apply to %s", name,
                               p->cmd ? p->cmd->name : "straum-dump without a command");
                    return usage_error("try: straum-dump --help");
                }
                switch (command_options[o].flag) {
                case OPT_WIDTH: slot = &p->args.width; break;
                case OPT_FROM: slot = &p->args.from; break;
                case OPT_TO: slot = &p->args.to; break;
                default: slot = &p->args.limit; break;
                }
            }
            if (!slot) {
                dump_error("unknown option %s", arg);
                return usage_error("try: straum-dump --help");
            }
            if (!value) {
                if (i + 1 >= argc) {
                    dump_error("%s needs a value", name);
                    return usage_error("try: straum-dump --help");
                }
                value = argv[++i];
            }
            *slot = value;
            continue;
        }
        if (!p->cmd) {
            if (strcmp(arg, "help") == 0) {
                const struct command *c = i + 1 < argc ? find_command(argv[i + 1]) : NULL;
                if (c)
                    command_help(stdout, c);
                else
                    tool_help(stdout);
                return DUMP_OK;
            }
            if (!(p->cmd = find_command(arg))) {
                struct sbuf b = {0};
                for (int c = 0; c < NCOMMANDS; c++)
                    sbuf_printf(&b, "%s%s", c ? ", " : "", commands[c].name);
                dump_error("unknown command \"%s\" (commands: %s)", arg, b.p);
                sbuf_free(&b);
                return usage_error("try: straum-dump --help");
            }
            continue;
        }
        if (p->args.npos >= p->cmd->npos) {
            dump_error("%s takes %s; unexpected \"%s\"", p->cmd->name,
                       p->cmd->npos ? "one argument" : "no arguments", arg);
            return usage_error("try: straum-dump <command> --help");
        }
        p->args.pos[p->args.npos++] = arg;
    }
    if (!p->cmd) {
        dump_error("no command given");
        fputc('\n', stderr);
        tool_help(stderr);
        return DUMP_USAGE;
    }
    if (p->args.npos < p->cmd->npos) {
        dump_error("%s is missing its argument; usage: straum-dump --store DIR [--json] %s",
                   p->cmd->name, p->cmd->synopsis);
        return DUMP_USAGE;
    }
    if (!p->store) {
        dump_error("%s needs --store DIR (the store directory)", p->cmd->name);
        return DUMP_USAGE;
    }
    return -1;
}

/* Opens the store read-only. What is plainly not a store (a file, a
 * directory without data.mdb) is refused first, with a message that says
 * which, rather than with LMDB's error text. */
static int open_store(const char *dir, struct store **s)
{
    struct stat st;
    char path[4096];
    if (stat(dir, &st) != 0) {
        dump_error("cannot open the store at %s: %s", dir, strerror(errno));
        return -1;
    }
    if (!S_ISDIR(st.st_mode)) {
        dump_error("%s is not a directory (--store takes the store's directory)", dir);
        return -1;
    }
    if ((size_t)snprintf(path, sizeof path, "%s/data.mdb", dir) >= sizeof path ||
        stat(path, &st) != 0) {
        dump_error("%s is not a Straum store (it holds no data.mdb)", dir);
        return -1;
    }
    struct store_error err;
    if (store_open(dir, STORE_READ_ONLY, s, &err)) {
        dump_error("cannot open the store at %s: %s", dir, err.message);
        return -1;
    }
    return 0;
}

int main(int argc, char **argv)
{
    struct parsed p;
    int status = parse_args(argc, argv, &p);
    if (status >= 0)
        return status;

    struct dump d = {.dir = p.store, .json = p.json, .out = stdout};
    if (open_store(p.store, &d.store))
        return DUMP_USAGE;
    d.views = store_views(d.store);
    json_init(&d.j, stdout);
    status = p.cmd->run(&d, &p.args);
    store_close(d.store);
    if (fflush(stdout) != 0 || ferror(stdout)) {
        dump_error("writing the output failed: %s", strerror(errno));
        return DUMP_FAILED;
    }
    return status;
}
