/* main.c -- straum-shell's options and the run: open the backend (a
 * straum-serve by --url, or a store by --store), then run the -c texts, or
 * the prompt at a terminal, or the asks piped in; the exit status tells
 * whether everything succeeded. */
#include "tools/shell/shell.h"

#include <curl/curl.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define DEFAULT_URL "http://127.0.0.1:8080"

static const char usage_text[] =
    "usage: straum-shell [--url URL | --store DIR] [--token T] [-c ASK]...\n"
    "                    [--format table|json|csv] [--tz ZONE] [--help] [--version]\n"
    "Asks a straum-serve (or a store directly) and prints the answers, like psql.\n"
    "\n"
    "  --url URL       the straum-serve to ask (default " DEFAULT_URL ")\n"
    "  --store DIR     answer from the store in DIR, without a server\n"
    "  --token T       bearer token for the server (default: $STRAUM_TOKEN)\n"
    "  -c ASK          run ASK (an ask or a backslash command) and exit; repeatable\n"
    "  --format F      table (default), json or csv\n"
    "  --tz ZONE       time zone of the asks (default UTC)\n"
    "  --help          this help\n"
    "  --version       the version\n"
    "\n"
    "Without -c, asks are read from the terminal (\\? for help) or from stdin;\n"
    "an ask ends with ';'. Exit status: 0 all went well, 1 an ask or command\n"
    "failed, 2 a usage error or the store could not be opened.\n";

static int usage_error(const char *msg, const char *arg)
{
    fprintf(stderr, "straum-shell: %s%s\n", msg, arg ? arg : "");
    fprintf(stderr, "Try straum-shell --help.\n");
    return 2;
}

int main(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"url", required_argument, NULL, 'u'},    {"store", required_argument, NULL, 's'},
        {"token", required_argument, NULL, 't'},  {"command", required_argument, NULL, 'c'},
        {"format", required_argument, NULL, 'f'}, {"tz", required_argument, NULL, 'z'},
        {"help", no_argument, NULL, 'h'},         {"version", no_argument, NULL, 'V'},
        {NULL, 0, NULL, 0}};
    const char *url = NULL, *store = NULL, *token = getenv("STRAUM_TOKEN"), *tz = NULL;
    const char **commands = calloc((size_t)argc + 1, sizeof *commands);
    int ncommands = 0, format = FORMAT_TABLE, opt;
    if (!commands)
        return 2;
    opterr = 0;
    while ((opt = getopt_long(argc, argv, ":c:hV", longopts, NULL)) != -1) {
        switch (opt) {
        case 'u': url = optarg; break;
        case 's': store = optarg; break;
        case 't': token = optarg; break;
        case 'c': commands[ncommands++] = optarg; break;
        case 'z': tz = optarg; break;
        case 'f':
            if ((format = format_parse(optarg)) < 0) {
                free(commands);
                return usage_error("--format takes table, json or csv, not ", optarg);
            }
            break;
        case 'h':
            fputs(usage_text, stdout);
            free(commands);
            return 0;
        case 'V':
            printf("straum-shell %s\n", STRAUM_VERSION);
            free(commands);
            return 0;
        case ':':
            free(commands);
            return usage_error("an option needs a value: ", argv[optind - 1]);
        default:
            free(commands);
            return usage_error("unknown option ", argv[optind - 1]);
        }
    }
    if (optind < argc) {
        free(commands);
        return usage_error("unexpected argument ", argv[optind]);
    }
    if (url && store) {
        free(commands);
        return usage_error("give --url or --store, not both", NULL);
    }
    if (!store && !url)
        url = DEFAULT_URL;

    curl_global_init(CURL_GLOBAL_DEFAULT);
    struct shell s = {0};
    s.format = (enum shell_format)format;
    char err[600];
    s.backend = backend_open(url, store, token, err, sizeof err);
    if (!s.backend) {
        fprintf(stderr, "straum-shell: %s\n", err);
        free(commands);
        curl_global_cleanup();
        return 2;
    }
    if (tz && *tz && !(s.time_zone = strdup(tz))) {
        fprintf(stderr, "straum-shell: out of memory\n");
        s.failures++;
    }
    if (ncommands > 0) {
        for (int i = 0; i < ncommands && !s.quit; i++)
            repl_text(&s, commands[i]);
    } else if (isatty(STDIN_FILENO)) {
        s.interactive = true;
        printf("straum-shell %s, asking %s\nType \\? for help, \\q to quit.\n\n", STRAUM_VERSION,
               store ? store : url);
        repl_interactive(&s);
    } else {
        repl_stream(&s, stdin);
    }
    int rc = s.failures && !s.interactive ? 1 : 0; /* psql: a session at the prompt ends 0 */
    shell_free(&s);
    free(commands);
    curl_global_cleanup();
    if (fflush(stdout) != 0 && rc == 0)
        rc = 1;
    return rc;
}
