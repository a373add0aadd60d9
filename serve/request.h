/* request.h -- the body of POST /ask, parsed and type-checked into the
 * engine's struct ask_request. Private to serve/ (and its fuzz target).
 *
 * Body: {"ask": "SELECT ...", "params": [...], "time_zone": "..."}.
 * "ask" is required; "params" (an array of strings, numbers, booleans and
 * nulls) and "time_zone" (a string) may be left out or null. Any other key,
 * a duplicate key, a value of the wrong type, text that is not UTF-8 JSON, a
 * number JSON would not write ("+1", "01", ".5"), a \u0000 escape, or
 * anything after the object is refused with a 400. (Between tokens cJSON
 * takes any byte up to the space as whitespace; so does this parser.) */
#ifndef STRAUM_SERVE_REQUEST_H
#define STRAUM_SERVE_REQUEST_H

#include "engine/engine.h"

#include <stddef.h>

struct request_body {
    struct ask_request req;      /* points into root and params */
    void *root;                  /* the cJSON tree, owning every string */
    struct ask_value *params;
    char *numbers;               /* the numbers' text, each NUL-terminated */
};

/* Parses body[0..len) (need not be NUL-terminated). 0 with *out filled
 * (free it with request_free), or -1 with err filled: status 400 and code
 * "invalid_json" (line and column in the body, 1-based, column counted in
 * characters), "invalid_request" or "bad_parameter"; 500 "internal" only
 * when memory runs out. */
int request_parse(const char *body, size_t len, struct request_body *out, struct ask_error *err);

/* Frees what request_parse made; safe on a zeroed or freed body. */
void request_free(struct request_body *b);

#endif
