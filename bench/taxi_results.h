/* taxi_results.h -- bench/RESULTS.json, the figures of each benchmark
 * mode's last run (SPEC.md section 7): `--results FILE` replaces the object
 * of each mode a run measured and keeps every other mode's;
 * bench/render_results.py renders bench/RESULTS.md from the file. */
#ifndef STRAUM_BENCH_TAXI_RESULTS_H
#define STRAUM_BENCH_TAXI_RESULTS_H

#include <cjson/cJSON.h>
#include <stddef.h>

/* Replaces modes[key] of the results document at path with a copy of run,
 * creating the document when the file does not exist. The new text goes to
 * path.tmp, renamed over path, so a failed write leaves the old file whole.
 * Returns 0, or -1 after printing why; a file that is not a results
 * document (no "modes" object) is refused, never overwritten. */
int taxi_results_record(const char *path, const char *key, const cJSON *run);

/* The JSON document in the file at path, parsed; NULL after printing why. */
cJSON *taxi_json_load(const char *path);

/* The commit of the source tree at dir into out: `git rev-parse --short=7
 * HEAD`, with "+" appended when tracked files differ from it, so a figure
 * of uncommitted code says so; "unknown" when git cannot tell. */
void taxi_source_commit(const char *dir, char *out, size_t len);

#endif
