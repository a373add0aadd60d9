/* fuzz_request.c -- libFuzzer target for the POST /ask body parser
 * (serve/request.c) and the metrics' view label scan (serve/metrics.c).
 *
 * Any bytes are parsed, checked and freed. Checks:
 *   - no crash, no read outside the input (it is copied to an exact-size
 *     allocation, so ASan sees the first byte past it), no leak (LSan);
 *   - a refusal is a 400 with a code and a message, never a 500: the only
 *     500 the parser makes is "the walker lost its place", which means the
 *     walker and cJSON disagree about the text — a bug;
 *   - an acceptance holds a NUL-terminated ask, and every parameter is one
 *     of the four kinds; strings are as long as their bytes say; numbers are
 *     the very characters of the input, well-formed JSON numbers that strtod
 *     reads whole. */
#include "serve/metrics.h"
#include "serve/request.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static bool is_json_number(const char *s, size_t n)
{
    size_t i = 0;
    if (i < n && s[i] == '-')
        i++;
    if (i < n && s[i] == '0')
        i++;
    else if (i < n && s[i] >= '1' && s[i] <= '9')
        while (i < n && s[i] >= '0' && s[i] <= '9')
            i++;
    else
        return false;
    if (i < n && s[i] == '.') {
        size_t d = ++i;
        while (i < n && s[i] >= '0' && s[i] <= '9')
            i++;
        if (i == d)
            return false;
    }
    if (i < n && (s[i] == 'e' || s[i] == 'E')) {
        if (++i < n && (s[i] == '+' || s[i] == '-'))
            i++;
        size_t d = i;
        while (i < n && s[i] >= '0' && s[i] <= '9')
            i++;
        if (i == d)
            return false;
    }
    return i == n;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static struct metrics *m;
    if (!m) {
        const char *views[] = {"trips", "dropoffs"};
        m = metrics_new(views, 2, NULL, 0);
        if (!m)
            abort();
    }
    char *body = malloc(size ? size : 1);
    if (!body)
        return 0;
    if (size)
        memcpy(body, data, size);

    struct request_body b;
    struct ask_error err;
    if (request_parse(body, size, &b, &err) != 0) {
        if (err.status != 400 || !err.code[0] || !err.message[0] ||
            !memchr(err.message, '\0', sizeof err.message) || err.line < 0 || err.column < 0 ||
            b.root || b.params || b.numbers)
            abort();
    } else {
        if (!b.req.ask || b.req.nparams < 0 || (b.req.nparams > 0 && !b.req.params))
            abort();
        (void)strlen(b.req.ask);
        if (b.req.time_zone)
            (void)strlen(b.req.time_zone);
        int view = metrics_view_of(m, b.req.ask);
        if (view < 0 || view > 2)
            abort();
        for (int i = 0; i < b.req.nparams; i++) {
            const struct ask_value *v = &b.req.params[i];
            switch (v->kind) {
            case ASK_NULL:
            case ASK_BOOL:
                break;
            case ASK_STRING:
                if (!v->text || strlen(v->text) != v->len)
                    abort();
                break;
            case ASK_NUMBER: {
                if (!v->text || strlen(v->text) != v->len || !is_json_number(v->text, v->len))
                    abort();
                char *end;
                (void)strtod(v->text, &end);
                if ((size_t)(end - v->text) != v->len)
                    abort();
                /* The characters come from the input itself. */
                if (!memmem(body, size, v->text, v->len))
                    abort();
                break;
            }
            default:
                abort();
            }
        }
        request_free(&b);
    }
    free(body);
    return 0;
}
