/* bytemap.c -- chained hash map from byte strings, for the writer. */
#include "store/bytemap.h"

#include "base/hash.h"

#include <stdlib.h>
#include <string.h>

static int grow(struct bytemap *m)
{
    size_t n = m->nbuckets ? m->nbuckets * 2 : 64;
    struct bytemap_entry **b = calloc(n, sizeof *b);
    if (!b)
        return -1;
    for (size_t i = 0; i < m->nbuckets; i++) {
        struct bytemap_entry *e = m->buckets[i];
        while (e) {
            struct bytemap_entry *next = e->next;
            e->next = b[e->hash & (n - 1)];
            b[e->hash & (n - 1)] = e;
            e = next;
        }
    }
    free(m->buckets);
    m->buckets = b;
    m->nbuckets = n;
    return 0;
}

struct bytemap_entry *bytemap_find(const struct bytemap *m, const void *key, size_t len)
{
    if (!m->nbuckets)
        return NULL;
    uint64_t h = hash_bytes(key, len);
    for (struct bytemap_entry *e = m->buckets[h & (m->nbuckets - 1)]; e; e = e->next)
        if (e->hash == h && e->len == len && memcmp(e->key, key, len) == 0)
            return e;
    return NULL;
}

struct bytemap_entry *bytemap_upsert(struct bytemap *m, const void *key, size_t len)
{
    struct bytemap_entry *e = bytemap_find(m, key, len);
    if (e)
        return e;
    if (m->count >= m->nbuckets && grow(m))
        return NULL;
    e = calloc(1, sizeof *e + len);
    if (!e)
        return NULL;
    e->hash = hash_bytes(key, len);
    e->len = len;
    memcpy(e->key, key, len);
    size_t i = e->hash & (m->nbuckets - 1);
    e->next = m->buckets[i];
    m->buckets[i] = e;
    m->count++;
    return e;
}

void bytemap_remove(struct bytemap *m, struct bytemap_entry *e)
{
    struct bytemap_entry **p = &m->buckets[e->hash & (m->nbuckets - 1)];
    while (*p != e)
        p = &(*p)->next;
    *p = e->next;
    free(e);
    m->count--;
    m->removals++;
}

void bytemap_clear(struct bytemap *m)
{
    for (size_t i = 0; i < m->nbuckets; i++) {
        struct bytemap_entry *e = m->buckets[i];
        while (e) {
            struct bytemap_entry *next = e->next;
            free(e);
            e = next;
        }
    }
    free(m->buckets);
    m->buckets = NULL;
    m->nbuckets = m->count = 0;
    m->removals++;
}
