/* arena.c -- the bump allocator behind every compiled view and ask. */
#include "sql/arena.h"

#include <stdalign.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

struct arena_block {
    struct arena_block *next;
    size_t used, size;
    alignas(max_align_t) unsigned char data[];
};

struct sql_arena {
    struct arena_block *head;
    size_t held; /* bytes of every block so far */
};

/* A new block holds half of what the arena holds already, at least
 * ARENA_BLOCK_MIN and at most ARENA_BLOCK_MAX (a larger allocation gets a
 * block of its own size). Why: a compiled ask is kept whole in the ask
 * cache, 2 to 3 KiB of it used, and blocks of a fixed 4 KiB left a third
 * of each cached ask empty; growing by half keeps the empty tail under a
 * third of an arena of any size with few blocks. */
enum { ARENA_BLOCK_MIN = 1024, ARENA_BLOCK_MAX = 65536 };

struct sql_arena *sql_arena_new(void) { return calloc(1, sizeof(struct sql_arena)); }

void sql_arena_free(struct sql_arena *a)
{
    if (!a)
        return;
    struct arena_block *b = a->head;
    while (b) {
        struct arena_block *next = b->next;
        free(b);
        b = next;
    }
    free(a);
}

void *sql_arena_alloc(struct sql_arena *a, size_t size)
{
    const size_t align = alignof(max_align_t);
    size = (size + align - 1) & ~(align - 1);
    if (size == 0)
        size = align;
    struct arena_block *b = a->head;
    if (!b || b->size - b->used < size) {
        size_t cap = a->held / 2;
        cap = cap < ARENA_BLOCK_MIN ? ARENA_BLOCK_MIN : cap > ARENA_BLOCK_MAX ? ARENA_BLOCK_MAX : cap;
        cap = size > cap ? size : cap;
        b = malloc(sizeof(*b) + cap);
        if (!b)
            return NULL;
        b->used = 0;
        b->size = cap;
        b->next = a->head;
        a->head = b;
        a->held += cap;
    }
    void *p = b->data + b->used;
    b->used += size;
    memset(p, 0, size);
    return p;
}

char *sql_arena_strndup(struct sql_arena *a, const char *s, size_t n)
{
    char *p = sql_arena_alloc(a, n + 1);
    if (p) {
        memcpy(p, s, n);
        p[n] = '\0';
    }
    return p;
}

char *sql_arena_strdup(struct sql_arena *a, const char *s)
{
    return sql_arena_strndup(a, s, strlen(s));
}

size_t sql_arena_bytes(const struct sql_arena *a)
{
    size_t n = sizeof *a;
    for (const struct arena_block *b = a->head; b; b = b->next)
        n += sizeof *b + b->size;
    return n;
}

void *sql_arena_grow(struct sql_arena *a, void *array, size_t elem, int *cap, int want)
{
    if (want <= *cap)
        return array;
    int ncap = *cap ? *cap * 2 : 4;
    while (ncap < want)
        ncap *= 2;
    void *p = sql_arena_alloc(a, elem * (size_t)ncap);
    if (!p)
        return NULL;
    if (array)
        memcpy(p, array, elem * (size_t)*cap);
    *cap = ncap;
    return p;
}

void *sql_heap_grow(void *array, size_t elem, int *cap, int want)
{
    if (want <= *cap)
        return array;
    int ncap = *cap ? *cap * 2 : 8;
    while (ncap < want)
        ncap *= 2;
    void *p = realloc(array, elem * (size_t)ncap);
    if (p)
        *cap = ncap;
    return p;
}
