/* checked.c -- the block columns whose checksum this thread has checked in
 * the store snapshot it reads, so that reads of an unchanged snapshot (the
 * engine's asks) hash each column once rather than at every decode
 * (store_block_decode, when the block carries its snapshot's id). Hashing
 * the value-count columns of a day's hour rollups was 6% of a percentile
 * per bucket.
 *
 * Why this is safe: a snapshot never sees a page rewritten, and snapshots
 * with equal ids see the same bytes at the same addresses
 * (store_read_snapshot_id). A slot remembers the snapshot id, the bytes'
 * address and length and the checksum they were checked against; all four
 * must match. The table is direct-mapped and per thread (no locks): a
 * collision or a new snapshot only costs the hash again. */
#include "store/internal.h"

#include <stdint.h>

enum { CHECKED_SLOTS = 4096 };

struct checked_slot {
    uint64_t snapshot, checksum;
    const uint8_t *bytes;
    uint32_t length;
};

static _Thread_local struct checked_slot checked[CHECKED_SLOTS];

static struct checked_slot *slot_of(const uint8_t *bytes)
{
    uintptr_t p = (uintptr_t)bytes;
    return &checked[(p >> 3 ^ p >> 15) & (CHECKED_SLOTS - 1)];
}

bool store_column_was_checked(uint64_t snapshot, const uint8_t *bytes, uint32_t length,
                        uint64_t checksum)
{
    const struct checked_slot *c = slot_of(bytes);
    return c->bytes == bytes && c->snapshot == snapshot && c->length == length &&
           c->checksum == checksum;
}

void store_column_mark_checked(uint64_t snapshot, const uint8_t *bytes, uint32_t length,
                         uint64_t checksum)
{
    *slot_of(bytes) = (struct checked_slot){snapshot, checksum, bytes, length};
}
