/* scratch.c -- per-ask scratch memory counted against a budget
 * (scratch.h). */
#include "base/scratch.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#ifdef __linux__
#include <fcntl.h>
#include <unistd.h>
#endif
#ifdef __GLIBC__
#include <malloc.h>
#endif

static _Thread_local struct scratch_budget *current;

struct scratch_budget *scratch_enter(struct scratch_budget *b)
{
    struct scratch_budget *previous = current;
    current = b;
    return previous;
}

void scratch_leave(struct scratch_budget *previous) { current = previous; }

static size_t usable(void *p)
{
#ifdef __GLIBC__
    return p ? malloc_usable_size(p) : 0;
#else
    (void)p;
    return 0;
#endif
}

/* Whether n more bytes fit the budget; marks it exceeded when not. */
static bool fits(struct scratch_budget *b, size_t n)
{
    if (b->limit && (n > b->limit || b->used > b->limit - n)) {
        b->exceeded = true;
        return false;
    }
    return true;
}

static void counted(struct scratch_budget *b, size_t n)
{
    b->used += n;
    if (b->used > b->peak)
        b->peak = b->used;
}

static void uncounted(struct scratch_budget *b, size_t n)
{
    b->used = n < b->used ? b->used - n : 0; /* invariant 2 */
}

void *scratch_malloc(size_t n)
{
    struct scratch_budget *b = current;
    if (!b)
        return malloc(n);
    if (!fits(b, n))
        return NULL;
    void *p = malloc(n);
    counted(b, usable(p));
    return p;
}

void *scratch_calloc(size_t count, size_t size)
{
    struct scratch_budget *b = current;
    if (!b)
        return calloc(count, size);
    if (size && count > (size_t)-1 / size)
        return NULL;
    if (!fits(b, count * size))
        return NULL;
    void *p = calloc(count, size);
    counted(b, usable(p));
    return p;
}

void *scratch_realloc(void *p, size_t n)
{
    struct scratch_budget *b = current;
    if (!b)
        return realloc(p, n);
    size_t old = usable(p);
    if (n > old && !fits(b, n - old))
        return NULL;
    void *q = realloc(p, n);
    if (!q)
        return NULL; /* p is unchanged, and still counted */
    uncounted(b, old);
    counted(b, usable(q));
    return q;
}

void scratch_free(void *p)
{
    struct scratch_budget *b = current;
    if (b && p)
        uncounted(b, usable(p));
    free(p);
}

void scratch_process_setup(void)
{
#ifdef __GLIBC__
    mallopt(M_TRIM_THRESHOLD, (int)SCRATCH_TRIM_THRESHOLD);
    mallopt(M_TOP_PAD, (int)SCRATCH_TOP_PAD);
    mallopt(M_MMAP_THRESHOLD, (int)SCRATCH_MMAP_THRESHOLD);
#endif
}

#ifdef __GLIBC__
/* The process's anonymous resident bytes (resident less file-backed and
 * shared, /proc/self/statm); SIZE_MAX when they cannot be read. */
static size_t resident_anon(void)
{
#ifdef __linux__
    int fd = open("/proc/self/statm", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return SIZE_MAX;
    char text[128];
    ssize_t n = read(fd, text, sizeof text - 1);
    close(fd);
    unsigned long size, resident, shared;
    if (n <= 0)
        return SIZE_MAX;
    text[n] = '\0';
    if (sscanf(text, "%lu %lu %lu", &size, &resident, &shared) != 3 || shared > resident)
        return SIZE_MAX;
    return (size_t)(resident - shared) * (size_t)sysconf(_SC_PAGESIZE);
#else
    return SIZE_MAX;
#endif
}

/* The asks' peaks on this thread since it last looked (SCRATCH_TRIM_AFTER). */
static _Thread_local size_t peaks_since_look;
#endif

void scratch_give_back(const struct scratch_budget *b)
{
#ifdef __GLIBC__
    peaks_since_look += b->peak;
    if (peaks_since_look < SCRATCH_TRIM_AFTER)
        return;
    peaks_since_look = 0;
    if (resident_anon() > SCRATCH_RESIDENT_AIM)
        malloc_trim(0);
#else
    (void)b;
#endif
}
