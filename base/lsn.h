/* lsn.h -- PostgreSQL's text for a WAL position (pg_lsn): "16/B374D848",
 * the high and low 32 bits in upper-case hex, the low half padded to 8
 * digits as PostgreSQL writes it. Logs, /readyz, /metrics and straum-dump
 * all print positions this way, so an operator can paste one into
 * pg_replication_slots queries. */
#ifndef STRAUM_BASE_LSN_H
#define STRAUM_BASE_LSN_H

#include <stdbool.h>
#include <stdint.h>

/* The longest text: "FFFFFFFF/FFFFFFFF" and its NUL. */
enum { LSN_TEXT_BYTES = 18 };

/* Writes lsn's text into buf and returns buf. Cannot fail. */
const char *lsn_text(uint64_t lsn, char buf[LSN_TEXT_BYTES]);
/* Reads "X/X" (1 to 8 hex digits each, either case, nothing else): true
 * and *lsn set, or false and *lsn untouched. */
bool lsn_parse(const char *text, uint64_t *lsn);

#endif
