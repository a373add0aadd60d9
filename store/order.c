/* order.c -- the order of cells and rows, (bucket, keys), as one code.
 *
 * Encoding sorts a segment's cells by bucket, then key by key (cellmap.c),
 * and each rollup family sorts its rows by the bucket and the keys it
 * keeps (rollup.c). By comparisons, each of a segment's cells was reached
 * through a pointer log n times, a miss each: qsort and its comparators
 * were 4 to 9% of the physical follower's CPU in every phase of `taxi wal`
 * (perf). The fields' ranges over the cells being sorted are mostly small
 * (a bucket within its span, a zone code, a payment type), so each cell's
 * fields fit one code, each field less its smallest in as many bits as
 * its range takes, most significant first: the codes sort as the fields
 * do, by a radix sort (code_runs_sort) that reads each cell twice.
 * Fields too wide together for 63 bits leave the caller to compare. */
#include "store/internal.h"

#include <string.h>

void order_packing_init(struct order_packing *p, int nfields)
{
    memset(p, 0, sizeof *p);
    p->n = nfields;
    for (int f = 0; f < nfields && f < ORDER_MAX_FIELDS; f++) {
        p->lo[f] = INT64_MAX;
        p->hi[f] = INT64_MIN;
    }
}

bool order_packing_fits(struct order_packing *p)
{
    if (p->n > ORDER_MAX_FIELDS)
        return false;
    int total = 0;
    for (int f = 0; f < p->n; f++) {
        uint64_t range = p->lo[f] <= p->hi[f] ? (uint64_t)p->hi[f] - (uint64_t)p->lo[f] : 0;
        p->bits[f] = range ? 64 - __builtin_clzll(range) : 0;
        total += p->bits[f];
        if (total > 63) /* the codes are int64_t, sorted as signed: keep them positive */
            return false;
    }
    return true;
}
