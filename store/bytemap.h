/* bytemap.h -- a small hash map from byte strings to a pointer and an int64,
 * for the writer's pending state (cached segments, value-count deltas, new
 * dictionary entries). Keys are copied; values are the caller's. Private to
 * store/. */
#ifndef STRAUM_STORE_BYTEMAP_H
#define STRAUM_STORE_BYTEMAP_H

#include <stddef.h>
#include <stdint.h>

struct bytemap_entry {
    struct bytemap_entry *next;
    uint64_t hash;
    void *ptr;
    int64_t num;
    size_t len;
    unsigned char key[];
};

struct bytemap {
    struct bytemap_entry **buckets;
    size_t nbuckets, count;
    uint64_t removals; /* entries removed (bytemap_remove, bytemap_clear) so far: an entry
                          pointer kept since an earlier count may be freed */
};

/* Finds the entry for key, or NULL. */
struct bytemap_entry *bytemap_find(const struct bytemap *m, const void *key, size_t len);
/* Finds or adds (ptr NULL, num 0) the entry for key; NULL when out of memory. */
struct bytemap_entry *bytemap_upsert(struct bytemap *m, const void *key, size_t len);
void bytemap_remove(struct bytemap *m, struct bytemap_entry *e);
/* Frees every entry (not what ptr points to). */
void bytemap_clear(struct bytemap *m);

#define BYTEMAP_EACH(m, e)                                  \
    for (size_t e##_i = 0; e##_i < (m)->nbuckets; e##_i++)  \
        for (struct bytemap_entry *e = (m)->buckets[e##_i], *e##_next = e ? e->next : NULL; e; \
             e = e##_next, e##_next = e ? e->next : NULL)

#endif
