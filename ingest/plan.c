/* plan.c -- straum-ingest plan: what the PostgreSQL side needs, printed as
 * SQL to run once and a check list of what is wrong now. Nothing is changed
 * on the server: an administrator reads and runs it. */
#include "ingest/internal.h"

#include <stdlib.h>
#include <string.h>

struct checks {
    FILE *out;
    int fixes;
};

static void check(struct checks *c, bool ok, const char *what, const char *fix)
{
    fprintf(c->out, "--   %-4s %s%s%s\n", ok ? "ok" : "FIX", what, ok ? "" : ": ", ok ? "" : fix);
    c->fixes += !ok;
}

static bool publication_has(PGconn *conn, const char *pub, const struct source_table *t,
                            bool *exists)
{
    const char *params[] = {pub, t->schema, t->name};
    PGresult *r = PQexecParams(conn, "SELECT 1 FROM pg_publication WHERE pubname = $1", 1, NULL,
                               params, NULL, NULL, 0);
    *exists = PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) == 1;
    PQclear(r);
    r = PQexecParams(conn,
                     "SELECT 1 FROM pg_publication_tables"
                     " WHERE pubname = $1 AND schemaname = $2 AND tablename = $3",
                     3, NULL, params, NULL, NULL, 0);
    bool has = PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) == 1;
    PQclear(r);
    return has;
}

static int slots_in_use(PGconn *conn)
{
    PGresult *r = PQexec(conn, "SELECT count(*) FROM pg_replication_slots");
    int n = PQresultStatus(r) == PGRES_TUPLES_OK ? atoi(PQgetvalue(r, 0, 0)) : 0;
    PQclear(r);
    return n;
}

/* The leaf partitions of a partitioned table whose replica identity is
 * not FULL (their old rows are what UPDATE and DELETE send), as
 * qualified names in a PGresult, or NULL. */
static PGresult *leaves_without_full_identity(PGconn *conn, const struct source_table *t)
{
    const char *params[] = {t->qualified};
    PGresult *r = PQexecParams(conn,
                               "SELECT format('%I.%I', n.nspname, c.relname)"
                               " FROM pg_partition_tree($1::regclass) p"
                               " JOIN pg_class c ON c.oid = p.relid"
                               " JOIN pg_namespace n ON n.oid = c.relnamespace"
                               " WHERE p.isleaf AND c.relreplident <> 'f' ORDER BY 1",
                               1, NULL, params, NULL, NULL, 0);
    if (PQresultStatus(r) != PGRES_TUPLES_OK) {
        PQclear(r);
        return NULL;
    }
    return r;
}

static bool any_partitioned(const struct source *src)
{
    for (int i = 0; i < src->ntables; i++)
        if (src->tables[i].partitioned)
            return true;
    return false;
}

static void print_sql(FILE *out, PGconn *conn, const struct source *src, const char *pub)
{
    fprintf(out, "-- Run once, as a superuser or the tables' owner:\n");
    fprintf(out, "CREATE PUBLICATION \"%s\" FOR TABLE ", pub);
    for (int i = 0; i < src->ntables; i++)
        fprintf(out, "%s%s", i ? ", " : "", src->tables[i].qualified);
    /* A partitioned table's changes must name it, not its partitions. */
    fprintf(out, "%s;\n", any_partitioned(src) ? " WITH (publish_via_partition_root = true)" : "");
    for (int i = 0; i < src->ntables; i++) {
        const struct source_table *t = &src->tables[i];
        fprintf(out, "ALTER TABLE %s REPLICA IDENTITY FULL;\n", t->qualified);
        PGresult *r = t->partitioned ? leaves_without_full_identity(conn, t) : NULL;
        for (int k = 0; r && k < PQntuples(r); k++)
            fprintf(out, "ALTER TABLE %s REPLICA IDENTITY FULL;\n", PQgetvalue(r, k, 0));
        PQclear(r);
    }
    if (any_partitioned(src))
        fprintf(out, "-- (and REPLICA IDENTITY FULL on each partition made later)\n");
}

/* The checks both modes make: a free replication slot and a WAL sender for
 * ingest's replication connection. */
static void check_slots_and_senders(struct checks *c, PGconn *conn, const struct source *src)
{
    char what[128];
    int used = slots_in_use(conn);
    snprintf(what, sizeof what, "max_replication_slots = %d (%d in use)",
             src->max_replication_slots, used);
    check(c, src->max_replication_slots > used, what, "raise max_replication_slots and restart");
    snprintf(what, sizeof what, "max_wal_senders = %d", src->max_wal_senders);
    check(c, src->max_wal_senders > 0, what, "raise max_wal_senders and restart");
}

/* A dim table's join key must be unique, in both modes: a dim row maps one
 * key. */
static void check_dim_key(struct checks *c, const struct source_table *t)
{
    if (!t->ndims)
        return;
    char what[512];
    snprintf(what, sizeof what, "%s has a unique index on its join key \"%s\"", t->qualified,
             t->cols[t->dims[0].key_col].name);
    check(c, t->has_unique_key, what,
          "a dim's key must be unique: add a primary key or unique index on it");
}

static void print_checks(struct checks *c, PGconn *conn, const struct source *src,
                         const struct ingest_options *opt)
{
    char what[512];
    fprintf(c->out, "\n-- Checks:\n");
    snprintf(what, sizeof what, "wal_level = %s", src->wal_level);
    check(c, strcmp(src->wal_level, "logical") == 0, what,
          "set wal_level = logical in postgresql.conf and restart PostgreSQL");
    check_slots_and_senders(c, conn, src);
    snprintf(what, sizeof what, "PostgreSQL %d.%d", src->server_version / 10000,
             src->server_version % 10000);
    check(c, src->server_version >= 100000, what, "Straum needs PostgreSQL 10 or later");
    for (int i = 0; i < src->ntables; i++) {
        const struct source_table *t = &src->tables[i];
        bool exists;
        bool has = publication_has(conn, opt->publication, t, &exists);
        snprintf(what, sizeof what, "publication \"%s\" holds %s", opt->publication, t->qualified);
        check(c, has, what,
              !exists          ? "CREATE PUBLICATION (see above)"
              : t->partitioned ? "ALTER PUBLICATION ... ADD TABLE if it is not there, and SET "
                                 "(publish_via_partition_root = true)"
                               : "ALTER PUBLICATION ... ADD TABLE (see above)");
        snprintf(what, sizeof what, "%s has REPLICA IDENTITY FULL", t->qualified);
        check(c, t->replident == 'f', what, "ALTER TABLE ... REPLICA IDENTITY FULL (see above)");
        if (t->partitioned) {
            PGresult *r = leaves_without_full_identity(conn, t);
            snprintf(what, sizeof what, "every partition of %s has REPLICA IDENTITY FULL",
                     t->qualified);
            check(c, r && PQntuples(r) == 0, what,
                  "ALTER TABLE ... REPLICA IDENTITY FULL on each (see above)");
            PQclear(r);
        }
        check_dim_key(c, t);
    }
}

/* ---- --wal physical ---------------------------------------------------------------- */

/* The first column of a one-row query as text into out ("" when it failed). */
static void one_value(PGconn *conn, const char *sql, char *out, size_t cap)
{
    PGresult *r = PQexec(conn, sql);
    snprintf(out, cap, "%s",
             PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) == 1 ? PQgetvalue(r, 0, 0) : "");
    PQclear(r);
}

/* pg_class.relpersistence of t: 'p' permanent, 'u' unlogged, 't'
 * temporary; 0 when it could not be read. */
static char persistence_of(PGconn *conn, const struct source_table *t)
{
    char relid[16];
    snprintf(relid, sizeof relid, "%u", t->relid);
    const char *params[] = {relid};
    PGresult *r = PQexecParams(conn, "SELECT relpersistence FROM pg_class WHERE oid = $1", 1, NULL,
                               params, NULL, NULL, 0);
    char p = PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) == 1 ? PQgetvalue(r, 0, 0)[0]
                                                                        : 0;
    PQclear(r);
    return p;
}

static void print_physical(FILE *out, const struct ingest_options *opt)
{
    fprintf(out, "-- --wal physical: no publication and no replica identity to set up;\n"
                 "-- straum-ingest run creates the physical replication slot \"%s\" itself.\n",
            opt->slot);
}

/* What following the physical WAL needs: the WAL carries every change of
 * the tables as heap records, pages whole after each checkpoint, and a
 * replication connection may stream it. */
static void print_physical_checks(struct checks *c, PGconn *conn, struct source *src)
{
    char what[512], fix[1024], value[128];
    fprintf(c->out, "\n-- Checks:\n");
    snprintf(what, sizeof what, "wal_level = %s", src->wal_level);
    check(c, strcmp(src->wal_level, "replica") == 0 || strcmp(src->wal_level, "logical") == 0,
          what, "set wal_level = replica (or logical) in postgresql.conf and restart PostgreSQL");
    one_value(conn, "SELECT current_setting('full_page_writes')", value, sizeof value);
    snprintf(what, sizeof what, "full_page_writes = %s", value);
    check(c, strcmp(value, "on") == 0, what,
          "set full_page_writes = on in postgresql.conf and reload (SELECT pg_reload_conf()): "
          "the follower rebuilds the tables' pages from the full-page images in the WAL, and "
          "without them cannot read the changes made to a page");
    PGresult *r = PQexec(conn, "SELECT quote_ident(current_user), rolreplication OR rolsuper"
                               " FROM pg_roles WHERE rolname = current_user");
    bool role_ok = PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) == 1;
    const char *role = role_ok ? PQgetvalue(r, 0, 0) : "?";
    snprintf(what, sizeof what, "role %s has REPLICATION (or is a superuser)", role);
    snprintf(fix, sizeof fix, "ALTER ROLE %s REPLICATION, as a superuser: the slot is created "
                              "and streamed over a replication connection", role);
    check(c, role_ok && strcmp(PQgetvalue(r, 0, 1), "t") == 0, what, fix);
    PQclear(r);
    check_slots_and_senders(c, conn, src);
    snprintf(what, sizeof what, "PostgreSQL %d.%d", src->server_version / 10000,
             src->server_version % 10000);
    bool ready = src->server_version / 10000 == 15;
    check(c, ready, what,
          "--wal physical reads PostgreSQL 15's WAL; follow other versions with --wal logical");
    for (int i = 0; i < src->ntables; i++) {
        const struct source_table *t = &src->tables[i];
        char p = persistence_of(conn, t);
        snprintf(what, sizeof what, "%s is a permanent table (not unlogged)", t->qualified);
        if (p == 'u')
            snprintf(fix, sizeof fix, "an unlogged table's changes are not in the WAL: "
                                      "ALTER TABLE %s SET LOGGED", t->qualified);
        else if (p == 't')
            snprintf(fix, sizeof fix, "a temporary table's changes are not in the WAL: make "
                                      "the views read a permanent table");
        else
            snprintf(fix, sizeof fix, "its pg_class.relpersistence could not be read: %s",
                     PQerrorMessage(conn));
        check(c, p == 'p', what, fix);
        snprintf(what, sizeof what, "%s is a plain table, not partitioned", t->qualified);
        check(c, !t->partitioned, what,
              "--wal physical follows plain tables (a partitioned table's rows live in its "
              "partitions' files): make the views read its partitions, or use --wal logical");
        ready = ready && p == 'p' && !t->partitioned;
        check_dim_key(c, t);
    }
    /* What is left to refuse (a column added with a default, a layout
     * heap_tuple.c does not read) is source_load_physical's, as run meets it;
     * the refusals above would only repeat there. */
    if (ready) {
        char err[1024] = "";
        bool ok = source_load_physical(conn, src, err, sizeof err) == 0;
        check(c, ok, "every table's rows decode from the WAL (pg_attribute)", err);
    }
}

int ingest_plan(const struct ingest_options *opt, FILE *out)
{
    char err[1024], *text = NULL;
    struct sql_view_list *views = ingest_read_views(opt->views_path, &text, err, sizeof err);
    if (!views) {
        fprintf(stderr, "straum-ingest: %s\n", err);
        return -1;
    }
    struct source src = {0};
    int rc = -1;
    PGconn *conn = source_connect(opt->source, false, err, sizeof err);
    if (!conn || source_load(conn, views, &src, err, sizeof err) ||
        source_compile_filters(&src, err, sizeof err)) {
        fprintf(stderr, "straum-ingest: %s\n", err);
    } else {
        struct checks c = {out, 0};
        if (opt->wal_physical) {
            print_physical(out, opt);
            print_physical_checks(&c, conn, &src);
        } else {
            print_sql(out, conn, &src, opt->publication);
            print_checks(&c, conn, &src, opt);
        }
        fprintf(out, c.fixes ? "\n-- %d thing%s to fix before straum-ingest run.\n"
                             : "\n-- Ready: straum-ingest run can start.\n",
                c.fixes, c.fixes == 1 ? "" : "s");
        rc = c.fixes ? 1 : 0;
    }
    PQfinish(conn);
    source_free(&src);
    sql_view_list_free(views);
    free(text);
    return rc;
}
