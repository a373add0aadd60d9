/* source_file.h -- reads a file of the source tree (a view file, a corpus
 * seed) in tests, found through STRAUM_SOURCE_DIR set by CMake. */
#ifndef STRAUM_TESTS_SOURCE_FILE_H
#define STRAUM_TESTS_SOURCE_FILE_H

#include <stdio.h>
#include <stdlib.h>

/* The file's bytes, NUL-terminated, to free(); NULL if unreadable. */
static inline char *read_source_file(const char *relpath)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", STRAUM_SOURCE_DIR, relpath);
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    char *buf = NULL;
    if (fseek(f, 0, SEEK_END) == 0) {
        long n = ftell(f);
        if (n >= 0 && fseek(f, 0, SEEK_SET) == 0 && (buf = malloc((size_t)n + 1))) {
            if (fread(buf, 1, (size_t)n, f) != (size_t)n) {
                free(buf);
                buf = NULL;
            } else {
                buf[n] = '\0';
            }
        }
    }
    fclose(f);
    return buf;
}

#endif
