/* table.h -- aligned plain-text tables for straum-dump's human output.
 *
 * Rows are collected, then printed with every column padded to its widest
 * cell (counted in UTF-8 code points), numbers right-aligned. Used for the
 * short listings (stats, the catalog's columns and types); long streams
 * (segments, cells) print line by line instead. */
#ifndef STRAUM_DUMP_TABLE_H
#define STRAUM_DUMP_TABLE_H

#include <stdbool.h>
#include <stdio.h>

struct table;

/* A table of ncols columns with these headers (ncols strings). */
struct table *table_new(int ncols, const char *const *headers);
void table_free(struct table *t);

/* Right-aligns column col (for numbers). */
void table_align_right(struct table *t, int col);

/* Starts a row; cells are then added left to right. Missing trailing cells
 * print empty. */
void table_row(struct table *t);
void table_cell(struct table *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Prints the header and the rows, each line prefixed by indent spaces. */
void table_print(const struct table *t, FILE *f, int indent);

#endif
