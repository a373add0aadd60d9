/* lag.c -- how far the store's answers trail PostgreSQL (store.h "Lag"):
 * a reading of the catalog position, the one figure serve's /readyz and
 * /metrics, ingest's /metrics and straum-dump catalog all report. */
#include "store/store.h"

int64_t store_lag_usec(const struct store_position *pos, int64_t now_usec)
{
    int64_t since;
    if (pos->bytes_behind == 0 && pos->contact_time > 0)
        since = pos->contact_time;
    else if (pos->commit_time > 0)
        since = pos->commit_time;
    else
        return -1;
    return now_usec > since ? now_usec - since : 0;
}

