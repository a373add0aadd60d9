/* test_serve_request.c -- the /ask body parser (serve/request.c) and the
 * metrics' view label scan (serve/metrics.c), without a server: numbers
 * reach the engine exactly as written, every type is checked, and errors
 * say where. */
#include "serve/metrics.h"
#include "serve/request.h"

#include <criterion/criterion.h>
#include <string.h>

static int parse(const char *body, struct request_body *b, struct ask_error *err)
{
    return request_parse(body, strlen(body), b, err);
}

Test(request, full_body)
{
    struct request_body b;
    struct ask_error err;
    const char *body =
        "{\"ask\": \"SELECT a \\\"b\\\" FROM t\", \"params\": [\"x\\ty\", 12345678901234567890, "
        "-1.5e+10, 0, true, false, null], \"time_zone\": \"America/New_York\"}";
    cr_assert_eq(parse(body, &b, &err), 0, "%s", err.message);
    cr_assert_str_eq(b.req.ask, "SELECT a \"b\" FROM t");
    cr_assert_str_eq(b.req.time_zone, "America/New_York");
    cr_assert_eq(b.req.nparams, 7);
    cr_assert_eq(b.req.params[0].kind, ASK_STRING);
    cr_assert_eq(b.req.params[0].len, 3);
    cr_assert_str_eq(b.req.params[0].text, "x\ty");
    cr_assert_eq(b.req.params[1].kind, ASK_NUMBER);
    cr_assert_str_eq(b.req.params[1].text, "12345678901234567890");
    cr_assert_eq(b.req.params[1].len, 20);
    cr_assert_str_eq(b.req.params[2].text, "-1.5e+10");
    cr_assert_str_eq(b.req.params[3].text, "0");
    cr_assert(b.req.params[4].kind == ASK_BOOL && b.req.params[4].boolean);
    cr_assert(b.req.params[5].kind == ASK_BOOL && !b.req.params[5].boolean);
    cr_assert_eq(b.req.params[6].kind, ASK_NULL);
    request_free(&b);
    request_free(&b); /* twice is harmless */
}

Test(request, optional_members)
{
    struct request_body b;
    struct ask_error err;
    cr_assert_eq(parse("{\"ask\": \"SELECT\"}", &b, &err), 0);
    cr_assert_eq(b.req.nparams, 0);
    cr_assert_null(b.req.time_zone);
    request_free(&b);
    cr_assert_eq(parse(" \r\n{\"params\": null, \"time_zone\": null, \"ask\": \"\"} \n", &b, &err), 0);
    cr_assert_str_eq(b.req.ask, "");
    cr_assert_eq(b.req.nparams, 0);
    cr_assert_null(b.req.time_zone);
    request_free(&b);
    cr_assert_eq(parse("{\"ask\": \"S\", \"params\": []}", &b, &err), 0);
    cr_assert_eq(b.req.nparams, 0);
    request_free(&b);
}

Test(request, numbers_found_past_tricky_text)
{
    /* Members before params hold brackets, braces, commas and escaped
     * quotes; keys are escaped; a BOM leads. The walker must still land
     * on the right characters. */
    struct request_body b;
    struct ask_error err;
    const char *body = "\xEF\xBB\xBF{ \"time_zone\" : \"a,]}\\\"[{\" ,\n"
                       "\"\\u0061sk\":\"x\\\\\", \"par\\u0061ms\" : [ \"]\" , 7.25 ,\n"
                       " -0 , 1E3,\"\\u00e9\"] }";
    cr_assert_eq(parse(body, &b, &err), 0, "%s", err.message);
    cr_assert_str_eq(b.req.ask, "x\\");
    cr_assert_eq(b.req.nparams, 5);
    cr_assert_str_eq(b.req.params[0].text, "]");
    cr_assert_str_eq(b.req.params[1].text, "7.25");
    cr_assert_str_eq(b.req.params[2].text, "-0");
    cr_assert_str_eq(b.req.params[3].text, "1E3");
    cr_assert_str_eq(b.req.params[4].text, "\xC3\xA9");
    request_free(&b);
}

static void refused(const char *body, const char *code, int line, int column)
{
    struct request_body b;
    struct ask_error err;
    cr_assert_eq(parse(body, &b, &err), -1, "accepted: %s", body);
    cr_assert_eq(err.status, 400, "%s: %d %s", body, err.status, err.message);
    cr_assert_str_eq(err.code, code, "%s: %s", body, err.message);
    cr_assert_neq(err.message[0], '\0');
    if (line) {
        cr_assert_eq(err.line, line, "%s: line %d", body, err.line);
        cr_assert_eq(err.column, column, "%s: column %d", body, err.column);
    }
    cr_assert_null(b.root);
    cr_assert_null(b.params);
}

Test(request, refusals)
{
    refused("", "invalid_json", 0, 0);
    refused("   \n ", "invalid_json", 0, 0);
    refused("{", "invalid_json", 0, 0);
    refused("{\"ask\": \"x\"}}", "invalid_json", 1, 13);
    refused("{\"ask\": \"x\"}\n\n  x", "invalid_json", 3, 3);
    refused("{\"ask\": \"\xC3\xA9\xC3\"}", "invalid_json", 1, 11);
    refused("{\"ask\": \"\xED\xA0\x80\"}", "invalid_json", 1, 10); /* a surrogate */
    refused("{\"ask\": \"\xC0\xAF\"}", "invalid_json", 1, 10);     /* overlong */
    refused("{\"ask\": \"a\\u0000\"}", "invalid_json", 1, 11);
    refused("{\"ask\": \"a\\ud800\"}", "invalid_json", 0, 0);
    refused("{\"ask\": 'single'}", "invalid_json", 0, 0);
    refused("{\"ask\": \"x\", \"params\": [1.]}", "invalid_json", 1, 25);
    refused("{\"ask\": \"x\", \"params\": [.5]}", "invalid_json", 0, 0);
    refused("{\"ask\": \"x\", \"params\": [-]}", "invalid_json", 0, 0);
    refused("{\"ask\": \"x\", \"params\": [NaN]}", "invalid_json", 0, 0);
    refused("{\"ask\": \"x\", \"params\": [1e]}", "invalid_json", 0, 0);
    refused("null", "invalid_request", 0, 0);
    refused("\"SELECT\"", "invalid_request", 0, 0);
    refused("{}", "invalid_request", 0, 0);
    refused("{\"ask\": null}", "invalid_request", 0, 0);
    refused("{\"ask\": [\"SELECT\"]}", "invalid_request", 0, 0);
    refused("{\"ask\": \"x\", \"Ask\": \"y\"}", "invalid_request", 0, 0);
    refused("{\"ask\": \"x\", \"ask\": \"y\"}", "invalid_request", 0, 0);
    refused("{\"ask\": \"x\", \"params\": [], \"params\": []}", "invalid_request", 0, 0);
    refused("{\"ask\": \"x\", \"time_zone\": [\"UTC\"]}", "invalid_request", 0, 0);
    refused("{\"ask\": \"x\", \"params\": \"1\"}", "bad_parameter", 0, 0);
    refused("{\"ask\": \"x\", \"params\": 1}", "bad_parameter", 0, 0);
    refused("{\"ask\": \"x\", \"params\": [1, {}]}", "bad_parameter", 0, 0);
    refused("{\"ask\": \"x\", \"params\": [[]]}", "bad_parameter", 0, 0);
}

Test(request, embedded_nul_byte)
{
    struct request_body b;
    struct ask_error err;
    const char body[] = "{\"ask\": \"a\0b\"}";
    cr_assert_eq(request_parse(body, sizeof body - 1, &b, &err), -1);
    cr_assert_str_eq(err.code, "invalid_json");
    cr_assert_eq(err.column, 11);
}

Test(request, unknown_key_named_safely)
{
    struct request_body b;
    struct ask_error err;
    cr_assert_eq(parse("{\"ask\": \"x\", \"we\\nird\\u0007\": 1}", &b, &err), -1);
    cr_assert(strstr(err.message, "\"we?ird?\""), "%s", err.message);
}

/* ---- The view label ------------------------------------------------------------ */

Test(request, view_label_scan)
{
    const char *views[] = {"trips", "dropoffs"};
    struct metrics *m = metrics_new(views, 2, NULL, 0);
    cr_assert_not_null(m);
    cr_assert_eq(metrics_view_of(m, "SELECT trips FROM trips WHERE bucket >= $1"), 0);
    cr_assert_eq(metrics_view_of(m, "select fare\nfrom\n  DROPOFFS d"), 1);
    cr_assert_eq(metrics_view_of(m, "SELECT 'x from trips' AS a FROM dropoffs"), 1);
    cr_assert_eq(metrics_view_of(m, "SELECT \"from\" FROM \"trips\""), 0);
    cr_assert_eq(metrics_view_of(m, "SELECT -- from trips\n a /* from trips */ FROM dropoffs"), 1);
    cr_assert_eq(metrics_view_of(m, "SELECT a FROM \"TRIPS\""), 2); /* quoted: case kept */
    cr_assert_eq(metrics_view_of(m, "SELECT a FROM nosuch"), 2);
    cr_assert_eq(metrics_view_of(m, "SELECT a"), 2);
    cr_assert_eq(metrics_view_of(m, "SELECT 'unterminated"), 2);
    cr_assert_eq(metrics_view_of(m, "FROM"), 2);
    cr_assert_eq(metrics_view_of(m, ""), 2);
    metrics_free(m);
}

Test(request, lag)
{
    struct store_position p = {.lsn = 1, .commit_time = 1000, .contact_time = 5000,
                               .bytes_behind = 0};
    cr_assert_eq(store_lag_usec(&p, 6000), 1000);  /* idle: since the contact */
    p.bytes_behind = 10;
    cr_assert_eq(store_lag_usec(&p, 6000), 5000);  /* behind: since the commit */
    cr_assert_eq(store_lag_usec(&p, 500), 0);      /* clock skew: never negative */
    p = (struct store_position){0};
    cr_assert_eq(store_lag_usec(&p, 6000), -1);    /* never in touch */
}
