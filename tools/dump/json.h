/* json.h -- a small streaming JSON writer for straum-dump's --json output.
 *
 * Streaming (not a tree) so that `cells --limit 0` over a large store costs
 * no memory per cell. The writer places commas, indents objects two spaces
 * per level, and keeps "inline" containers (short lists such as value-count
 * pairs) on one line. Strings are escaped per RFC 8259 and always come out
 * as valid UTF-8: an invalid byte becomes U+FFFD, since dictionary texts are
 * whatever the source database held. */
#ifndef STRAUM_DUMP_JSON_H
#define STRAUM_DUMP_JSON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define JSON_MAX_DEPTH 32

struct json {
    FILE *f;
    int depth;
    int inline_from;            /* depth of the outermost inline container, 0 none */
    bool first[JSON_MAX_DEPTH]; /* nothing written yet in the container at depth d */
    bool after_key;             /* a key was written; its value comes next */
};

void json_init(struct json *j, FILE *f);
/* Ends the document with a newline. */
void json_finish(struct json *j);

void json_object_begin(struct json *j);
void json_object_end(struct json *j);
void json_array_begin(struct json *j);
/* An array or object whose contents stay on one line. */
void json_array_begin_inline(struct json *j);
void json_object_begin_inline(struct json *j);
void json_array_end(struct json *j);

void json_key(struct json *j, const char *key);
void json_str(struct json *j, const char *s);
void json_strn(struct json *j, const char *s, size_t n);
void json_int(struct json *j, int64_t v);
void json_uint(struct json *j, uint64_t v);
/* Finite doubles as numbers (shortest exact form); NaN and infinities,
 * which JSON cannot hold, as the strings "NaN", "Infinity", "-Infinity". */
void json_double(struct json *j, double v);
void json_bool(struct json *j, bool v);
void json_null(struct json *j);

/* key + value in one call. */
void json_kv_str(struct json *j, const char *key, const char *s);
void json_kv_int(struct json *j, const char *key, int64_t v);
void json_kv_uint(struct json *j, const char *key, uint64_t v);
void json_kv_double(struct json *j, const char *key, double v);
void json_kv_bool(struct json *j, const char *key, bool v);
void json_kv_null(struct json *j, const char *key);

#endif
