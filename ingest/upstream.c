/* upstream.c -- is PostgreSQL still publishing what the views read?
 *
 * A table dropped, a table taken out of the publication, or the publication
 * dropped: the slot then sends nothing for those tables (or fails only once
 * a change needs decoding), and a follower would go on serving a store that
 * silently stopped moving. So the follower asks the catalog every few
 * seconds, and before a first load, and stops with what happened and what
 * to run. The store keeps serving its last consistent state: nothing is
 * written after the check fails.
 *
 * Tables are followed by OID (Relation messages name them so), so a rename
 * is not a change here; a table dropped and created again under its name
 * is, since the store holds the old one's rows. */
#include "ingest/internal.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

/* "as the fact table of view "trips"" or "as a dim of view "trips"": the
 * first view that reads t, for messages. */
static void use_text(const struct source *src, const struct source_table *t, char *buf, size_t len)
{
    if (t->nfacts)
        snprintf(buf, len, "as the fact table of view \"%s\"",
                 src->views->views[t->facts[0].view].name);
    else if (t->ndims)
        snprintf(buf, len, "as a dim of view \"%s\"", src->views->views[t->dims[0].view].name);
    else
        snprintf(buf, len, "in the views");
}

/* The OID the table's name resolves to now, 0 when none. */
static uint32_t oid_by_name(PGconn *c, const struct source_table *t)
{
    const char *params[] = {t->qualified};
    PGresult *r = PQexecParams(c, "SELECT to_regclass($1)::oid", 1, NULL, params, NULL, NULL, 0);
    uint32_t oid = 0;
    if (PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) == 1 && !PQgetisnull(r, 0, 0))
        oid = (uint32_t)strtoul(PQgetvalue(r, 0, 0), NULL, 10);
    PQclear(r);
    return oid;
}

int upstream_publication_gone(const struct ingest_options *opt, uint64_t stored_lsn, char *err,
                              size_t errlen)
{
    char lsn[32];
    return error_fmt(err, errlen,
                "the publication \"%s\" does not exist any more (dropped upstream): PostgreSQL "
                "cannot decode the changes made since through the slot \"%s\", so they are lost "
                "to Straum. The store keeps serving its state as of %s. Create the publication "
                "again (straum-ingest plan prints the SQL) and rerun with --rebuild to load the "
                "tables again",
                opt->publication, opt->slot, lsn_text(stored_lsn, lsn));
}

int upstream_check(PGconn *c, const struct source *src, const struct ingest_options *opt,
                   bool loaded, uint64_t stored_lsn, char *err, size_t errlen)
{
    /* '{1234,5678}': the tables' OIDs as an array parameter. */
    char oids[16 * 64] = "{";
    size_t k = 1;
    for (int i = 0; i < src->ntables && k + 16 < sizeof oids; i++)
        k += (size_t)snprintf(oids + k, sizeof oids - k, "%s%u", i ? "," : "",
                              src->tables[i].relid);
    snprintf(oids + k, sizeof oids - k, "}");
    const char *params[] = {opt->publication, oids};
    PGresult *r = PQexecParams(
        c,
        "SELECT (SELECT count(*) FROM pg_publication WHERE pubname = $1), t.relid,"
        " EXISTS (SELECT 1 FROM pg_class c WHERE c.oid = t.relid),"
        " EXISTS (SELECT 1 FROM pg_publication_tables pt"
        "         JOIN pg_namespace n ON n.nspname = pt.schemaname"
        "         JOIN pg_class c ON c.relnamespace = n.oid AND c.relname = pt.tablename"
        "         WHERE pt.pubname = $1 AND c.oid = t.relid)"
        " FROM unnest($2::oid[]) AS t(relid)",
        2, NULL, params, NULL, NULL, 0);
    if (PQresultStatus(r) != PGRES_TUPLES_OK || PQntuples(r) != src->ntables) {
        error_fmt(err, errlen, "checking the publication failed: %s", PQerrorMessage(c));
        PQclear(r);
        return 1;
    }
    char lsn[32], use[200];
    lsn_text(stored_lsn, lsn);
    int rc = 0;
    if (strcmp(PQgetvalue(r, 0, 0), "0") == 0) {
        rc = loaded ? upstream_publication_gone(opt, stored_lsn, err, errlen)
                    : error_fmt(err, errlen, "the publication \"%s\" does not exist: run the SQL that "
                                        "straum-ingest plan prints, then start again",
                           opt->publication);
    }
    for (int i = 0; rc == 0 && i < src->ntables; i++) {
        const struct source_table *t = &src->tables[i];
        bool exists = strcmp(PQgetvalue(r, i, 2), "t") == 0;
        bool published = strcmp(PQgetvalue(r, i, 3), "t") == 0;
        use_text(src, t, use, sizeof use);
        if (!exists) {
            uint32_t now = oid_by_name(c, t);
            if (now)
                rc = error_fmt(err, errlen,
                          "table %s was dropped and created again upstream (OID %u, now %u); "
                          "the store holds the old table's rows and keeps serving its state as "
                          "of %s. Add the new table to the publication \"%s\" if it is not, "
                          "then rerun with --rebuild to load it",
                          t->qualified, t->relid, now, lsn, opt->publication);
            else
                rc = error_fmt(err, errlen,
                          "table %s was dropped upstream; the views read it (%s). The store "
                          "keeps serving its state as of %s. Create the table again and rerun "
                          "with --rebuild, or change the views not to read it and rerun with "
                          "--rebuild",
                          t->qualified, use, lsn);
        } else if (!published && t->partitioned) {
            /* Without publish_via_partition_root, a partitioned table is
             * published as its partitions, whose changes name them and
             * not the table the views read. */
            rc = error_fmt(err, errlen,
                      "table %s is partitioned, and the publication \"%s\" does not publish "
                      "it as itself; the views read it (%s): run ALTER PUBLICATION \"%s\" SET "
                      "(publish_via_partition_root = true); (PostgreSQL 13 or later; it must "
                      "also be in the publication, and each partition needs REPLICA IDENTITY "
                      "FULL: straum-ingest plan prints the SQL), then start again%s",
                      t->qualified, opt->publication, use, opt->publication,
                      loaded ? " with --rebuild (changes made meanwhile are not in the slot)"
                             : "");
        } else if (!published) {
            rc = loaded ? error_fmt(err, errlen,
                               "table %s is not in the publication \"%s\" any more, so its "
                               "changes no longer reach Straum; the views read it (%s). The "
                               "store keeps serving its state as of %s. Run ALTER PUBLICATION "
                               "\"%s\" ADD TABLE %s; then rerun with --rebuild (changes made "
                               "while it was out are not in the slot)",
                               t->qualified, opt->publication, use, lsn, opt->publication,
                               t->qualified)
                        : error_fmt(err, errlen,
                               "table %s is not in the publication \"%s\"; the views read it "
                               "(%s): run ALTER PUBLICATION \"%s\" ADD TABLE %s; (straum-ingest "
                               "plan prints the SQL), then start again",
                               t->qualified, opt->publication, use, opt->publication,
                               t->qualified);
        }
    }
    PQclear(r);
    return rc;
}

int upstream_check_slot(PGconn *c, const struct ingest_options *opt, uint64_t stored_lsn,
                        char *err, size_t errlen)
{
    const char *params[] = {opt->slot};
    PGresult *r = PQexecParams(c,
                               "SELECT confirmed_flush_lsn FROM pg_replication_slots"
                               " WHERE slot_name = $1 AND confirmed_flush_lsn IS NOT NULL",
                               1, NULL, params, NULL, NULL, 0);
    if (PQresultStatus(r) != PGRES_TUPLES_OK) {
        error_fmt(err, errlen, "reading the replication slot \"%s\" failed: %s", opt->slot,
                    PQerrorMessage(c));
        PQclear(r);
        return 1;
    }
    uint64_t confirmed = 0;
    bool known = PQntuples(r) == 1 && lsn_parse(PQgetvalue(r, 0, 0), &confirmed);
    PQclear(r);
    if (!known || confirmed <= stored_lsn)
        return 0; /* no such slot: START_REPLICATION says so */
    char at[32], slot_at[32];
    return error_fmt(
        err, errlen,
        "the store at %s is at %s, behind the replication slot \"%s\", which PostgreSQL has "
        "been told holds everything up to %s (the store was restored from a copy, or belongs "
        "to another slot): the changes in between are gone from the slot, and following it "
        "would silently lose them. Rerun with --rebuild to load the tables again and make the "
        "slot anew; a store kept apart (a copy for another machine) needs its own slot "
        "(--slot NAME) and --rebuild",
        opt->store_dir, lsn_text(stored_lsn, at), opt->slot, lsn_text(confirmed, slot_at));
}
