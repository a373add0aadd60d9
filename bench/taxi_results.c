/* taxi_results.c -- recording a run's figures into bench/RESULTS.json (see
 * taxi_results.h): one object per mode under "modes", each replaced whole
 * by the mode's next run. */
#include "bench/taxi_results.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define RESULTS_ABOUT                                                                           \
    "The figures of the last run of each benchmark mode (bench/), one object per mode. "      \
    "bench/render_results.py renders bench/RESULTS.md from this file; taxi --results FILE "   \
    "replaces the objects of the modes it runs."

/* The whole file at path, NUL-terminated, or NULL (*missing set when it does
 * not exist). */
static char *read_text(const char *path, bool *missing)
{
    *missing = false;
    FILE *f = fopen(path, "rb");
    if (!f) {
        *missing = true;
        return NULL;
    }
    size_t cap = 1 << 16, n = 0;
    char *buf = malloc(cap);
    while (buf) {
        n += fread(buf + n, 1, cap - n - 1, f);
        if (n < cap - 1)
            break;
        char *grown = realloc(buf, cap * 2);
        if (!grown) {
            free(buf);
            buf = NULL;
            break;
        }
        buf = grown;
        cap *= 2;
    }
    bool failed = ferror(f);
    fclose(f);
    if (!buf || failed) {
        free(buf);
        return NULL;
    }
    buf[n] = '\0';
    return buf;
}

cJSON *taxi_json_load(const char *path)
{
    bool missing;
    char *text = read_text(path, &missing);
    cJSON *doc = text ? cJSON_Parse(text) : NULL;
    free(text);
    if (!doc)
        fprintf(stderr, "taxi: %s: %s\n", path,
                missing ? "no such file" : "cannot read it as JSON");
    return doc;
}

int taxi_results_record(const char *path, const char *key, const cJSON *run)
{
    bool missing;
    char *text = read_text(path, &missing);
    cJSON *doc = NULL;
    if (text) {
        doc = cJSON_Parse(text);
        free(text);
        if (!doc || !cJSON_IsObject(cJSON_GetObjectItemCaseSensitive(doc, "modes"))) {
            fprintf(stderr, "taxi: %s is not a results document (an object with \"modes\"); "
                            "not overwritten\n", path);
            cJSON_Delete(doc);
            return -1;
        }
    } else if (missing) {
        doc = cJSON_CreateObject();
        cJSON_AddStringToObject(doc, "about", RESULTS_ABOUT);
        cJSON_AddObjectToObject(doc, "modes");
    } else {
        fprintf(stderr, "taxi: cannot read %s\n", path);
        return -1;
    }
    cJSON *modes = cJSON_GetObjectItemCaseSensitive(doc, "modes");
    cJSON *copy = cJSON_Duplicate(run, 1);
    if (cJSON_GetObjectItemCaseSensitive(modes, key))
        cJSON_ReplaceItemInObjectCaseSensitive(modes, key, copy);
    else
        cJSON_AddItemToObject(modes, key, copy);
    char *out = cJSON_Print(doc);
    cJSON_Delete(doc);
    char tmp[4096];
    if (!out || (size_t)snprintf(tmp, sizeof tmp, "%s.tmp", path) >= sizeof tmp) {
        fprintf(stderr, "taxi: cannot record into %s\n", path);
        cJSON_free(out);
        return -1;
    }
    FILE *f = fopen(tmp, "w");
    bool ok = f && fputs(out, f) >= 0 && fputc('\n', f) != EOF;
    if (f && fclose(f) != 0)
        ok = false;
    cJSON_free(out);
    if (!ok || rename(tmp, path) != 0) {
        fprintf(stderr, "taxi: cannot write %s\n", path);
        remove(tmp);
        return -1;
    }
    printf("Figures of %s recorded in %s (bench/render_results.py renders RESULTS.md)\n", key,
           path);
    return 0;
}

/* The first line git prints for args in dir, or "" when it fails. */
static void git_line(const char *dir, const char *args, char *out, size_t len)
{
    out[0] = '\0';
    char cmd[4200];
    if ((size_t)snprintf(cmd, sizeof cmd, "git -C '%s' %s 2>/dev/null", dir, args) >= sizeof cmd ||
        strchr(dir, '\''))
        return;
    FILE *p = popen(cmd, "r");
    if (!p)
        return;
    if (!fgets(out, (int)len, p))
        out[0] = '\0';
    out[strcspn(out, "\n")] = '\0';
    if (pclose(p) != 0)
        out[0] = '\0';
}

void taxi_source_commit(const char *dir, char *out, size_t len)
{
    char head[64], dirty[256];
    git_line(dir, "rev-parse --short=7 HEAD", head, sizeof head);
    if (!head[0]) {
        snprintf(out, len, "unknown");
        return;
    }
    git_line(dir, "status --porcelain --untracked-files=no", dirty, sizeof dirty);
    snprintf(out, len, "%s%s", head, dirty[0] ? "+" : "");
}
