/* arena.h -- a bump allocator owning everything one compiled object holds.
 *
 * Parsers allocate freely and never free piecemeal: on success the arena is
 * handed to the compiled view list or ask, on failure it is dropped whole.
 * That is what makes "never leak, also on error paths" cheap to keep true.
 * Private to sql/. */
#ifndef STRAUM_SQL_ARENA_H
#define STRAUM_SQL_ARENA_H

#include <stddef.h>

struct sql_arena;

struct sql_arena *sql_arena_new(void);
void sql_arena_free(struct sql_arena *a);
/* Zeroed memory aligned for any type; NULL only when malloc fails. */
void *sql_arena_alloc(struct sql_arena *a, size_t size);
char *sql_arena_strndup(struct sql_arena *a, const char *s, size_t n);
char *sql_arena_strdup(struct sql_arena *a, const char *s);
/* Grows an array living in the arena to hold at least want elements,
 * doubling; the old block is simply abandoned. */
void *sql_arena_grow(struct sql_arena *a, void *array, size_t elem, int *cap, int want);
/* The same for an array outside any arena (realloc): a parse's own arrays,
 * which a compiled ask does not keep, freed by their owner. NULL when out
 * of memory, the array left as it was. */
void *sql_heap_grow(void *array, size_t elem, int *cap, int want);
/* Bytes the arena holds from malloc: its blocks with their headers. */
size_t sql_arena_bytes(const struct sql_arena *a);

#endif
