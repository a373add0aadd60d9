/* runs.h -- lists of value-count runs, (code, rows): sorted by code and
 * summed, each code once.
 *
 * The store merges the runs of many cells into a rollup row's and stages a
 * load's rows as runs; the engine sorts a group's runs to pick a
 * percentile across lists. All of them hand a list with repeated codes,
 * in any order, here. */
#ifndef STRAUM_BASE_RUNS_H
#define STRAUM_BASE_RUNS_H

#include <stddef.h>
#include <stdint.h>

struct code_run {
    int64_t code, rows;
};

/* Sums rows per code over runs[0..n) in place and drops codes whose rows
 * sum to zero (a delta's runs may cancel out); returns how many are left,
 * ascending by code, -1 when out of memory (base/scratch.h: an ask's
 * budget counts what it takes), -2 when a sum overflows 64 bits. */
int64_t code_runs_merge(struct code_run *runs, size_t n);

/* Sorts runs[0..n) ascending by code, equal codes kept in the order they
 * came (a stable sort). Rows travel with their codes untouched, so a
 * caller may carry any 64 bits there (an index, a pointer) and sort by a
 * code of its own making (the store's cells by their packed order). 0, or
 * -1 when out of memory (base/scratch.h). */
int code_runs_sort(struct code_run *runs, size_t n);

#endif
