/* scratch.h -- per-ask scratch memory, counted against a budget.
 *
 * An ask's allocations (group maps, value-count merges, decoded cursor
 * columns, answer rows) go through scratch_malloc and friends. While a
 * thread has a budget entered (scratch_enter), each allocation is counted
 * by the size malloc gives it (malloc_usable_size) and one that would take
 * the budget past its limit fails as malloc fails, returning NULL, and marks
 * the budget exceeded: the ask's out-of-memory path then ends it, and the
 * caller turns that into the limit's error (engine: 422 ask_memory). So one
 * ask cannot take memory from the others, and the refusal comes at the
 * allocation that passes the limit, not after the work.
 *
 * Invariants:
 *  1. Outside a budget the functions are malloc, calloc, realloc and free:
 *     code shared with paths that have no budget needs no second copy.
 *  2. A block may be freed in another budget than the one it was counted
 *     in, or in none (a cached block freed by a later ask): the count never
 *     goes below zero, and is the budget's own, so an error in it lasts one
 *     ask, not the process.
 *  3. A budget is one thread's at a time (the thread that entered it):
 *     its counts are plain integers, never shared.
 *
 * Giving memory back: glibc keeps freed memory in its arenas (one per
 * thread that allocates, up to 8 per CPU) and gives it back on
 * malloc_trim, which returns every free page of every arena's bins and the
 * top of the main arena's heap; a thread's own arena shrinks its top when
 * a free of 64 KiB or more lands there and the top passes the trim
 * threshold. So scratch_process_setup fixes the mmap threshold at
 * SCRATCH_MMAP_THRESHOLD and the trim threshold at SCRATCH_TRIM_THRESHOLD
 * (both stop moving with what is freed) and what a trim leaves at
 * SCRATCH_TOP_PAD, and scratch_give_back trims when the process holds
 * more than SCRATCH_RESIDENT_AIM of anonymous memory, read after each
 * SCRATCH_TRIM_AFTER of a thread's asks' peaks. Anonymous memory then
 * returns under its bound after any ask (SPEC.md §6.1 "Scratch").
 * Each thread keeps its own arena: with one for all (M_ARENA_MAX 1) every
 * block past a thread's cache took the arena's lock, and two workers
 * answered a third fewer light asks a second and heavy asks at half speed
 * (SPEC.md §6.1 has the measure). */
#ifndef STRAUM_BASE_SCRATCH_H
#define STRAUM_BASE_SCRATCH_H

#include <stdbool.h>
#include <stddef.h>

struct scratch_budget {
    size_t limit;     /* bytes; 0: no limit (counted only) */
    size_t used;      /* bytes held now */
    size_t peak;      /* the most held at once */
    bool exceeded;    /* an allocation was refused for the limit */
};

/* Blocks at least this big are mapped on their own and unmapped on free;
 * smaller ones come from the arena and are reused. 32 MiB (glibc's
 * largest): a segment's decoded runs, a list's running rows and a group's
 * window, hundreds of KiB to a few MiB taken and freed again per segment,
 * were each a fresh mapping whose every page faulted in zeroed below it
 * (SPEC.md §6.1 "Scratch" has the measure); malloc_trim after a heavy ask
 * gives the arenas' free pages back wherever they lie. */
#define SCRATCH_MMAP_THRESHOLD ((size_t)32 << 20)
/* A heap's free top past 1 MiB goes back to the system when a large block
 * is freed into it. Set, not left at glibc's default, because that is what
 * was measured to give memory back with an arena per thread: after six
 * heavy asks on two workers (SPEC.md §6.1 "Scratch"), 15.7 MiB of
 * anonymous memory stayed with the default, 5.7 MiB with 64 KiB or 1 MiB
 * (5.6 MiB with one arena for all). Not lower: at 64 KiB a percentile
 * ask's blocks were given back and taken again, page by page, every ask
 * (p99 fare by payment type over a PostgreSQL connection, 200,000 trips,
 * 78 µs against 42 µs with 1 MiB). */
#define SCRATCH_TRIM_THRESHOLD ((size_t)1 << 20)
/* What a trim leaves free at a heap's top (glibc's M_TOP_PAD, 128 KiB by
 * default): an ask's blocks of up to a few MiB are then taken from it
 * again rather than given back and faulted in anew on every ask. Measured
 * at full scale over a PostgreSQL connection (a thread whose arena holds
 * nothing else, so each ask's large blocks sat at the top): the seed's
 * "p99 fare by payment type" took 103 to 135 µs with the default against
 * 50 µs over HTTP, 47 µs with 4 MiB; anonymous memory after six heavy
 * asks on two workers 9.7 to 13.8 MiB (5.7 MiB with the default). */
#define SCRATCH_TOP_PAD ((size_t)4 << 20)
/* After a thread's asks have peaked at 4 MiB in all since it last looked
 * (one heavy ask, or many light ones), it reads the process's anonymous
 * resident memory (/proc/self/statm, a few microseconds) and trims when
 * that is past SCRATCH_RESIDENT_AIM. Not after every ask: trimming walks
 * the arenas' free lists (tens of microseconds at rest, about a
 * millisecond after a heavy ask), nothing a light ask should pay. By
 * asks' peaks added up, not one ask's: asks each under 4 MiB whose blocks
 * did not fit where earlier ones were freed left those in the bins, and a
 * thread answering them one after another held 20 MiB more than at rest
 * (test_base_scratch). */
#define SCRATCH_TRIM_AFTER ((size_t)4 << 20)
/* The anonymous resident memory a trim brings the process back under,
 * when it can: 10 MiB, so that with up to SCRATCH_TRIM_AFTER taken before
 * the next look it stays under 16 MiB, serve's bound (SPEC.md §6.1). What
 * a trim cannot give back (what is in use, the top SCRATCH_TOP_PAD of each
 * thread's heap) is not trimmed again until another 4 MiB of peaks. */
#define SCRATCH_RESIDENT_AIM ((size_t)10 << 20)

/* Makes b the calling thread's budget and returns the one it replaces
 * (NULL for none), to be handed back to scratch_leave. */
struct scratch_budget *scratch_enter(struct scratch_budget *b);
void scratch_leave(struct scratch_budget *previous);

/* As malloc, calloc, realloc and free, counted against the thread's budget
 * (invariant 1). NULL when out of memory or past the limit (then
 * budget->exceeded is set). */
void *scratch_malloc(size_t n);
void *scratch_calloc(size_t count, size_t size);
void *scratch_realloc(void *p, size_t n);
void scratch_free(void *p);

/* Lays out one block for several arrays: where n elements of size bytes
 * go in a block of *total bytes so far, aligned for any type; *total
 * grows past them. An ask's arrays whose sizes its shape alone sets are
 * one allocation this way, not one each (a light ask's allocations were a
 * tenth of its time). Cannot fail; the caller allocates *total at the end. */
static inline size_t scratch_place(size_t *total, size_t n, size_t size)
{
    size_t align = _Alignof(max_align_t), at = (*total + align - 1) / align * align;
    *total = at + n * size;
    return at;
}

/* Once per process, before its threads start: one arena and the mmap
 * threshold above (glibc; elsewhere nothing). */
void scratch_process_setup(void);
/* After an ask: adds b's peak to the calling thread's since it last
 * looked; past SCRATCH_TRIM_AFTER, looks, and when the process's anonymous
 * resident memory is past SCRATCH_RESIDENT_AIM (or cannot be read), gives
 * the arenas' free memory back to the system (malloc_trim). Never fails. */
void scratch_give_back(const struct scratch_budget *b);

#endif
