/* test_base_logfmt.c -- log lines: fields, quoting, levels, truncation. */
#include "base/logfmt.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* What the calls in f wrote to stderr. */
static char *captured(void (*f)(void))
{
    fflush(stderr);
    FILE *tmp = tmpfile();
    cr_assert(tmp);
    int saved = dup(2);
    dup2(fileno(tmp), 2);
    f();
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    long n = ftell(tmp);
    rewind(tmp);
    char *text = calloc(1, (size_t)n + 1);
    cr_assert_eq(fread(text, 1, (size_t)n, tmp), (size_t)n);
    fclose(tmp);
    return text;
}

static void one_line(void)
{
    struct logfmt_line l;
    if (logfmt_begin(&l, LOGFMT_WARN, "store \"full\"")) {
        logfmt_str(&l, "path", "/var/lib/straum");
        logfmt_str(&l, "why", "no space = left\n");
        logfmt_str(&l, "empty", "");
        logfmt_int(&l, "rows", -12);
        logfmt_printf(&l, "lsn", "%X/%08X", 0x16u, 0xB374D848u);
        logfmt_end(&l);
    }
}

Test(base_logfmt, a_line)
{
    logfmt_set_level(LOGFMT_INFO);
    char *t = captured(one_line);
    cr_assert(strncmp(t, "ts=", 3) == 0, "%s", t);
    cr_assert(strstr(t, "Z level=warn msg=\"store \\\"full\\\"\" path=/var/lib/straum "
                        "why=\"no space = left\\n\" empty=\"\" rows=-12 lsn=16/B374D848\n"),
              "%s", t);
    free(t);
}

static void below_level(void)
{
    logfmt_set_level(LOGFMT_ERROR);
    logfmt_msg(LOGFMT_WARN, "not written");
    logfmt_msg(LOGFMT_ERROR, "written %d", 1);
    logfmt_set_level(LOGFMT_INFO);
}

Test(base_logfmt, levels)
{
    char *t = captured(below_level);
    cr_assert(!strstr(t, "not written"), "%s", t);
    cr_assert(strstr(t, "level=error msg=\"written 1\""), "%s", t);
    free(t);
    enum logfmt_level l;
    cr_assert_eq(logfmt_parse_level("WARNING", &l), 0);
    cr_assert_eq(l, LOGFMT_WARN);
    cr_assert_eq(logfmt_parse_level("debug", &l), 0);
    cr_assert_eq(l, LOGFMT_DEBUG);
    cr_assert_eq(logfmt_parse_level("loud", &l), -1);
}

static void too_long(void)
{
    static char big[5000];
    memset(big, 'x', sizeof big - 1);
    struct logfmt_line l;
    if (logfmt_begin(&l, LOGFMT_INFO, "long")) {
        logfmt_str(&l, "a", "kept");
        logfmt_str(&l, "b", big);
        logfmt_end(&l);
    }
}

Test(base_logfmt, truncated)
{
    char *t = captured(too_long);
    cr_assert(strstr(t, " a=kept truncated=true\n"), "%.200s", t);
    cr_assert(!strstr(t, "b=x"), "a pair that does not fit is left out whole");
    free(t);
}
