/* pg_catalog.c -- the catalog tools read: pg_catalog and information_schema
 * answered from the store's views (SPEC.md §6.3, "Catalog").
 *
 * A small catalog engine, not a SQL engine. A statement that reads a
 * catalog relation (pg_class, pg_namespace, pg_attribute, pg_views,
 * information_schema.tables, .columns, .schemata, ...) is answered over
 * one set of virtual rows, chosen by the relations it reads:
 *   ATTR    one row per column of each view (pg_attribute,
 *           information_schema.columns: anything that reads columns)
 *   REL     one row per view (pg_class, pg_views, information_schema.tables
 *           and .views)
 *   SCHEMA  the one schema, public (pg_namespace, information_schema.schemata)
 *   EMPTY   relations a store of views has no rows in (pg_tables,
 *           pg_index, pg_constraint, pg_rewrite, pg_extension, ...)
 * and a SELECT without FROM calling pg_catalog's functions (psql's
 * pg_get_viewdef) as the SCHEMA row: one.
 * Joins are not computed: every catalog relation a tool joins describes the
 * same row (a column's type, its relation, its namespace), so each row has
 * one flat set of fields, looked up by name (relname, attname, format_type,
 * table_schema, ...; field() below).
 *
 * Rows pass the WHERE clauses' comparisons of a field with a literal
 * (=, <>, ~, !~, LIKE, ILIKE, OPERATOR(pg_catalog.~), [NOT] IN (...)),
 * wherever in the statement a WHERE stands (a derived table's too), ANDed;
 * comparisons with anything but a literal (joins, pg_table_is_visible(),
 * subqueries) are taken as true. relkind's comparisons are ORed (tools
 * list the kinds they want as alternatives): a view passes when one
 * admits 'v', or when there is none. Rows come in name order (relation,
 * then column number), the order each tool's ORDER BY asks for.
 *
 * Each output column is one item of the top-level select list (or, for
 * SELECT * FROM (SELECT ...), of the derived table's): a field, a
 * literal, quote_ident(field), a known function (format_type,
 * pg_get_userbyid, obj_description, pg_size_pretty, row_number() OVER,
 * ...), a CASE (the simple form compares its field with each WHEN; the
 * searched form answers its first THEN), a scalar subquery (NULL: the
 * defaults, collations and comments a view's columns do not have), casts
 * dropped. An item none of these reads, but whose alias is a field, is
 * that field (pgjdbc's "... AS TABLE_TYPE"); any other is refused with
 * 0A000 at its position. A catalog relation outside the lists is refused
 * with 0A000 too: answering it empty would be a wrong answer.
 *
 * Invariants:
 *   1. A view's oid is PG_FIRST_VIEW_OID + its index in the views file, the
 *      same on every connection for the life of the process.
 *   2. Nothing here reads the store: the views and their column types are
 *      the engine's (engine_relations), fixed while the store is open. */
#include "serve/pg.h"

#include <ctype.h>
#include <regex.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* PostgreSQL's FirstNormalObjectId: the first oid a user object gets, so
 * the views' oids look like the ones a real database gives views. */
#define PG_FIRST_VIEW_OID 16384
#define PG_PUBLIC_OID 2200 /* pg_namespace's oid for public */
#define PG_OWNER_OID 10    /* the bootstrap superuser's */

enum { OID_CHAR = 18, OID_NAME = 19, OID_OID = 26 };

/* ---- Tokens ---------------------------------------------------------------------------- */

enum tok_kind { T_IDENT, T_QIDENT, T_STRING, T_NUMBER, T_OP };
struct tok {
    enum tok_kind kind;
    size_t at;        /* byte offset in the statement */
    int depth;        /* parentheses around it */
    bool in_where;    /* inside a WHERE clause */
    char text[256];   /* identifiers lowercased; strings unquoted */
};

struct toks {
    struct tok *t;
    int n;
};

/* PostgreSQL's operator characters run together into one operator
 * ("<>", "!~", "::", "||"), as its lexer reads them; "(", ")", ",", "."
 * and "[" "]" stand alone. */
static bool op_char(char c) { return c && strchr("+-*/<>=~!@#%^&|`?:", c); }

static int tokenize(const char *s, size_t len, struct toks *out)
{
    int cap = 64, depth = 0;
    out->n = 0;
    out->t = malloc(sizeof *out->t * (size_t)cap);
    if (!out->t)
        return -1;
    size_t i = 0;
    while (i < len) {
        char c = s[i];
        size_t next = pg_skip_blank(s, i, len);
        if (next != i) {
            i = next;
            continue;
        }
        if (out->n == cap) {
            cap *= 2;
            struct tok *p = realloc(out->t, sizeof *p * (size_t)cap);
            if (!p)
                return -1;
            out->t = p;
        }
        struct tok *t = &out->t[out->n++];
        size_t k = 0;
        t->at = i;
        t->in_where = false;
        if (c == '\'' || c == '"') {
            t->kind = c == '\'' ? T_STRING : T_QIDENT;
            for (i++; i < len; i++) {
                if (s[i] == c) {
                    if (i + 1 < len && s[i + 1] == c)
                        i++;
                    else
                        break;
                }
                if (k + 1 < sizeof t->text)
                    t->text[k++] = s[i];
            }
            i++;
        } else if (isalpha((unsigned char)c) || c == '_' || (unsigned char)c >= 0x80) {
            t->kind = T_IDENT;
            for (; i < len && (isalnum((unsigned char)s[i]) || s[i] == '_' || s[i] == '$' ||
                               (unsigned char)s[i] >= 0x80);
                 i++)
                if (k + 1 < sizeof t->text)
                    t->text[k++] = (char)tolower((unsigned char)s[i]);
        } else if (isdigit((unsigned char)c)) {
            t->kind = T_NUMBER;
            for (; i < len && (isalnum((unsigned char)s[i]) || s[i] == '.'); i++)
                if (k + 1 < sizeof t->text)
                    t->text[k++] = s[i];
        } else if (op_char(c)) {
            t->kind = T_OP;
            for (; i < len && op_char(s[i]); i++)
                if (k + 1 < sizeof t->text)
                    t->text[k++] = s[i];
        } else {
            t->kind = T_OP;
            t->text[k++] = c;
            i++;
            if (c == ')' && depth > 0)
                depth--;
        }
        t->text[k] = '\0';
        t->depth = depth;
        if (t->kind == T_OP && !strcmp(t->text, "("))
            depth++;
    }
    return 0;
}

static bool tok_is(const struct toks *t, int i, const char *word)
{
    return i >= 0 && i < t->n && (t->t[i].kind == T_IDENT || t->t[i].kind == T_OP) &&
           !strcmp(t->t[i].text, word);
}

/* The token after the ')' that closes the '(' at i. */
static int after_parens(const struct toks *t, int i)
{
    int d = t->t[i].depth;
    for (i++; i < t->n; i++)
        if (tok_is(t, i, ")") && t->t[i].depth == d)
            return i + 1;
    return t->n;
}

static bool clause_end(const struct toks *t, int i, int depth)
{
    static const char *const words[] = {"order", "group", "limit", "union", "having",
                                        "window", "offset", "intersect", "except", "fetch"};
    if (t->t[i].depth < depth)
        return true;
    if (t->t[i].depth > depth || t->t[i].kind != T_IDENT)
        return false;
    for (size_t k = 0; k < sizeof words / sizeof *words; k++)
        if (!strcmp(t->t[i].text, words[k]))
            return true;
    return false;
}

static void mark_where(struct toks *t)
{
    for (int i = 0; i < t->n; i++) {
        if (!tok_is(t, i, "where"))
            continue;
        int d = t->t[i].depth;
        for (int j = i + 1; j < t->n && !clause_end(t, j, d); j++)
            t->t[j].in_where = true;
    }
}

/* ---- Which catalog relations ------------------------------------------------------------ */

enum subject { SUBJECT_NONE, SUBJECT_EMPTY, SUBJECT_SCHEMA, SUBJECT_REL, SUBJECT_ATTR };

static const struct {
    const char *name;
    enum subject subject;
} catalog_relations[] = {
    /* pg_catalog */
    {"pg_attribute", SUBJECT_ATTR},
    {"pg_class", SUBJECT_REL},
    {"pg_views", SUBJECT_REL},
    {"pg_namespace", SUBJECT_SCHEMA},
    /* joined for a row's type, default, comment, access method, collation */
    {"pg_type", SUBJECT_NONE},
    {"pg_attrdef", SUBJECT_NONE},
    {"pg_description", SUBJECT_NONE},
    {"pg_am", SUBJECT_NONE},
    {"pg_collation", SUBJECT_NONE},
    /* what a store of views has none of */
    {"pg_tables", SUBJECT_EMPTY},
    {"pg_matviews", SUBJECT_EMPTY},
    {"pg_index", SUBJECT_EMPTY},
    {"pg_indexes", SUBJECT_EMPTY},
    {"pg_constraint", SUBJECT_EMPTY},
    {"pg_inherits", SUBJECT_EMPTY},
    {"pg_trigger", SUBJECT_EMPTY},
    {"pg_policy", SUBJECT_EMPTY},
    {"pg_extension", SUBJECT_EMPTY},
    {"pg_sequence", SUBJECT_EMPTY},
    {"pg_sequences", SUBJECT_EMPTY},
    {"pg_foreign_table", SUBJECT_EMPTY},
    {"pg_partitioned_table", SUBJECT_EMPTY},
    {"pg_statistic_ext", SUBJECT_EMPTY},
    {"pg_publication", SUBJECT_EMPTY},
    {"pg_publication_rel", SUBJECT_EMPTY},
    {"pg_rewrite", SUBJECT_EMPTY}, /* rules but a view's own _RETURN */
};
static const struct {
    const char *name;
    enum subject subject;
} information_schema_relations[] = {
    {"columns", SUBJECT_ATTR},
    {"tables", SUBJECT_REL},
    {"views", SUBJECT_REL},
    {"schemata", SUBJECT_SCHEMA},
    {"table_constraints", SUBJECT_EMPTY},
    {"key_column_usage", SUBJECT_EMPTY},
    {"routines", SUBJECT_EMPTY},
    {"sequences", SUBJECT_EMPTY},
};

/* The relation a FROM or JOIN names at token i, if it is a catalog one:
 * its subject (SUBJECT_NONE for one joined for detail), or -1 when i names
 * no catalog relation, -2 when it names one outside the lists (*unknown
 * gets the token). */
static int relation_at(const struct toks *t, int i, int *unknown)
{
    if (i >= t->n || t->t[i].kind != T_IDENT)
        return -1;
    if (tok_is(t, i + 1, "(") || (tok_is(t, i + 1, ".") && tok_is(t, i + 3, "(")))
        return -1; /* a function in FROM: unnest(...), generate_series(...) */
    bool info = false, qualified = false;
    int start = i;
    if (tok_is(t, i + 1, ".") && i + 2 < t->n) {
        if (!strcmp(t->t[i].text, "information_schema"))
            info = true;
        else if (strcmp(t->t[i].text, "pg_catalog"))
            return -1;
        qualified = true;
        i += 2;
    }
    const char *name = t->t[i].text;
    if (info) {
        for (size_t k = 0; k < sizeof information_schema_relations / sizeof *information_schema_relations; k++)
            if (!strcmp(name, information_schema_relations[k].name))
                return (int)information_schema_relations[k].subject;
    } else {
        for (size_t k = 0; k < sizeof catalog_relations / sizeof *catalog_relations; k++)
            if (!strcmp(name, catalog_relations[k].name))
                return (int)catalog_relations[k].subject;
        if (!qualified && strncmp(name, "pg_", 3))
            return -1;
    }
    *unknown = start;
    return -2;
}

/* Whether the comma at i separates the relations of a FROM list ("FROM a
 * x, b y"), not select items or arguments: the clause it stands in, at its
 * depth, is FROM's. */
static bool in_from_list(const struct toks *t, int i)
{
    static const char *const clauses[] = {"select", "from", "where", "on", "group", "order",
                                          "having", "limit", "join", "using"};
    int d = t->t[i].depth;
    for (int j = i - 1; j >= 0 && t->t[j].depth >= d; j--) {
        if (t->t[j].depth != d || t->t[j].kind != T_IDENT)
            continue;
        for (size_t k = 0; k < sizeof clauses / sizeof *clauses; k++)
            if (!strcmp(t->t[j].text, clauses[k]))
                return !strcmp(clauses[k], "from");
    }
    return false;
}

/* A SELECT without FROM calling pg_catalog's functions (psql's
 * pg_get_viewdef): answered as one row. */
static bool reads_catalog_functions(const struct toks *t)
{
    if (!tok_is(t, 0, "select"))
        return false;
    bool call = false;
    for (int i = 0; i < t->n; i++) {
        if (tok_is(t, i, "from"))
            return false;
        call |= tok_is(t, i, "pg_catalog") && tok_is(t, i + 1, ".") && tok_is(t, i + 3, "(");
    }
    return call;
}

/* The rows the statement reads: the widest subject among its catalog
 * relations; -1 with *unknown set when it names a catalog relation
 * outside the lists; SUBJECT_NONE when it reads none. */
static int statement_subject(const struct toks *t, int *unknown)
{
    int best = SUBJECT_NONE;
    bool any = false;
    for (int i = 0; i + 1 < t->n; i++) {
        bool from = tok_is(t, i, "from") || tok_is(t, i, "join");
        bool comma = tok_is(t, i, ",") && in_from_list(t, i);
        if (!from && !comma)
            continue;
        int s = relation_at(t, i + 1, unknown);
        if (s == -2)
            return -1;
        if (s >= 0) {
            any = true;
            if (s > best)
                best = s;
        }
    }
    if (!any)
        return reads_catalog_functions(t) ? SUBJECT_SCHEMA : SUBJECT_NONE;
    return best == SUBJECT_NONE ? SUBJECT_REL : best;
}

/* ---- Rows and fields ---------------------------------------------------------------------- */

struct cval {
    bool null;
    uint32_t oid;
    char text[256];
    const char *whole; /* when not NULL, the value (a view's definition, longer) */
};

struct row {
    enum subject subject;
    const struct engine_relation *rel; /* REL, ATTR */
    int rel_index;
    int col;                           /* ATTR: the column, 0-based */
};

struct catalog {
    struct pg_conn *c;
    const struct engine_relation *rels;
    int nrels;
    int *order;                        /* relations in name order */
};

static void set_text(struct cval *v, uint32_t oid, const char *s)
{
    v->whole = NULL;
    v->null = false;
    v->oid = oid;
    snprintf(v->text, sizeof v->text, "%s", s);
}

static void set_int(struct cval *v, uint32_t oid, long long x)
{
    v->whole = NULL;
    v->null = false;
    v->oid = oid;
    snprintf(v->text, sizeof v->text, "%lld", x);
}

static void set_null(struct cval *v, uint32_t oid)
{
    v->whole = NULL;
    v->null = true;
    v->oid = oid;
    v->text[0] = '\0';
}

/* format_type's text and pg_type's name for a column type. */
static const char *type_sql_name(uint32_t oid)
{
    switch (oid) {
    case ANSWER_OID_BOOL: return "boolean";
    case ANSWER_OID_INT2: return "smallint";
    case ANSWER_OID_INT4: return "integer";
    case ANSWER_OID_INT8: return "bigint";
    case ANSWER_OID_FLOAT8: return "double precision";
    case ANSWER_OID_VARCHAR: return "character varying";
    case ANSWER_OID_DATE: return "date";
    case ANSWER_OID_TIMESTAMP: return "timestamp without time zone";
    case ANSWER_OID_TIMESTAMPTZ: return "timestamp with time zone";
    case ANSWER_OID_NUMERIC: return "numeric";
    default: return "text";
    }
}

static const char *type_udt_name(uint32_t oid)
{
    switch (oid) {
    case ANSWER_OID_BOOL: return "bool";
    case ANSWER_OID_INT2: return "int2";
    case ANSWER_OID_INT4: return "int4";
    case ANSWER_OID_INT8: return "int8";
    case ANSWER_OID_FLOAT8: return "float8";
    case ANSWER_OID_VARCHAR: return "varchar";
    case ANSWER_OID_DATE: return "date";
    case ANSWER_OID_TIMESTAMP: return "timestamp";
    case ANSWER_OID_TIMESTAMPTZ: return "timestamptz";
    case ANSWER_OID_NUMERIC: return "numeric";
    default: return "text";
    }
}

/* A field of the row by name: 1 with *v set, 0 when the row has no such
 * field. The names are pg_catalog's and information_schema's columns (and
 * pgjdbc's result labels, which it selects under those names). */
static int field(const struct catalog *k, const struct row *r, const char *name, struct cval *v)
{
    const struct pg_conn *c = k->c;
    static const char *const schema_names[] = {"nspname", "table_schema", "table_schem",
                                               "schemaname", "schema_name", "udt_schema"};
    for (size_t i = 0; i < sizeof schema_names / sizeof *schema_names; i++)
        if (!strcmp(name, schema_names[i]))
            return set_text(v, OID_NAME, "public"), 1;
    if (!strcmp(name, "table_catalog") || !strcmp(name, "catalog_name") ||
        !strcmp(name, "udt_catalog"))
        return set_text(v, OID_NAME, c->database), 1;
    if (!strcmp(name, "nspowner"))
        return set_int(v, OID_OID, PG_OWNER_OID), 1;
    if (!strcmp(name, "schema_owner"))
        return set_text(v, OID_NAME, c->user), 1;
    if (r->subject == SUBJECT_SCHEMA) {
        if (!strcmp(name, "oid"))
            return set_int(v, OID_OID, PG_PUBLIC_OID), 1;
        return 0;
    }
    const struct engine_relation *rel = r->rel;
    long long reloid = PG_FIRST_VIEW_OID + r->rel_index;
    if (!strcmp(name, "relname") || !strcmp(name, "table_name") || !strcmp(name, "viewname"))
        return set_text(v, OID_NAME, rel->name), 1;
    if ((r->subject == SUBJECT_REL && !strcmp(name, "oid")) || !strcmp(name, "attrelid"))
        return set_int(v, OID_OID, reloid), 1;
    static const struct {
        const char *name;
        uint32_t oid;
        const char *value; /* NULL: SQL NULL */
    } fixed[] = {
        {"relkind", OID_CHAR, "v"},
        {"relnamespace", OID_OID, "2200"},
        {"relowner", OID_OID, "10"},
        {"relchecks", ANSWER_OID_INT2, "0"},
        {"relhasindex", ANSWER_OID_BOOL, "f"},
        {"relhasrules", ANSWER_OID_BOOL, "t"}, /* a view is its _RETURN rule */
        {"relhastriggers", ANSWER_OID_BOOL, "f"},
        {"relrowsecurity", ANSWER_OID_BOOL, "f"},
        {"relforcerowsecurity", ANSWER_OID_BOOL, "f"},
        {"relhasoids", ANSWER_OID_BOOL, "f"},
        {"relispartition", ANSWER_OID_BOOL, "f"},
        {"relhassubclass", ANSWER_OID_BOOL, "f"},
        {"reltablespace", OID_OID, "0"},
        {"reloftype", OID_OID, "0"},
        {"relam", OID_OID, "0"},
        {"reltoastrelid", OID_OID, "0"},
        {"relpersistence", OID_CHAR, "p"},
        {"relreplident", OID_CHAR, "n"},
        {"relpages", ANSWER_OID_INT4, "0"},
        {"amname", OID_NAME, NULL},
        {"description", ANSWER_OID_TEXT, NULL},
        {"remarks", ANSWER_OID_TEXT, NULL},
        {"table_type", ANSWER_OID_TEXT, "VIEW"},
        {"is_insertable_into", ANSWER_OID_TEXT, "NO"},
        {"is_typed", ANSWER_OID_TEXT, "NO"},
        {"is_updatable", ANSWER_OID_TEXT, "NO"},
        {"check_option", ANSWER_OID_TEXT, "NONE"},
        {"self_referencing_column_name", OID_NAME, NULL},
        {"reference_generation", ANSWER_OID_TEXT, NULL},
        {"user_defined_type_catalog", OID_NAME, NULL},
        {"user_defined_type_schema", OID_NAME, NULL},
        {"user_defined_type_name", OID_NAME, NULL},
        {"commit_action", ANSWER_OID_TEXT, NULL},
        {"view_definition", ANSWER_OID_TEXT, NULL},
        {"definition", ANSWER_OID_TEXT, NULL},
    };
    for (size_t i = 0; i < sizeof fixed / sizeof *fixed; i++)
        if (!strcmp(name, fixed[i].name)) {
            if (fixed[i].value)
                set_text(v, fixed[i].oid, fixed[i].value);
            else
                set_null(v, fixed[i].oid);
            return 1;
        }
    if (!strcmp(name, "relnatts"))
        return set_int(v, ANSWER_OID_INT2, rel->ncols), 1;
    if (!strcmp(name, "viewowner") || !strcmp(name, "owner"))
        return set_text(v, OID_NAME, c->user), 1;
    if (r->subject != SUBJECT_ATTR)
        return 0;
    uint32_t type = rel->cols[r->col].type_oid;
    if (!strcmp(name, "attname") || !strcmp(name, "column_name"))
        return set_text(v, OID_NAME, rel->cols[r->col].name), 1;
    if (!strcmp(name, "attnum"))
        return set_int(v, ANSWER_OID_INT2, r->col + 1), 1;
    if (!strcmp(name, "ordinal_position"))
        return set_int(v, ANSWER_OID_INT4, r->col + 1), 1;
    if (!strcmp(name, "atttypid") || !strcmp(name, "oid"))
        return set_int(v, OID_OID, type), 1;
    if (!strcmp(name, "format_type") || !strcmp(name, "data_type"))
        return set_text(v, ANSWER_OID_TEXT, type_sql_name(type)), 1;
    if (!strcmp(name, "typname") || !strcmp(name, "udt_name"))
        return set_text(v, OID_NAME, type_udt_name(type)), 1;
    if (!strcmp(name, "attlen") || !strcmp(name, "typlen"))
        return set_int(v, ANSWER_OID_INT2, pg_type_len(type)), 1;
    if (!strcmp(name, "atttypmod") || !strcmp(name, "typtypmod"))
        return set_int(v, ANSWER_OID_INT4, -1), 1;
    if (!strcmp(name, "attstorage") || !strcmp(name, "typstorage"))
        return set_text(v, OID_CHAR, type == ANSWER_OID_NUMERIC ? "m"
                                     : pg_type_len(type) < 0 ? "x" : "p"), 1;
    if (!strcmp(name, "is_nullable"))
        return set_text(v, ANSWER_OID_TEXT, "YES"), 1;
    if (!strcmp(name, "numeric_precision") || !strcmp(name, "numeric_scale") ||
        !strcmp(name, "numeric_precision_radix")) {
        /* information_schema's: binary precision for the integers and
         * float8 (scale 0 for integers, none for a float), an unconstrained
         * numeric's none but its radix 10. */
        int bits = type == ANSWER_OID_INT2 ? 16 : type == ANSWER_OID_INT4 ? 32
                 : type == ANSWER_OID_INT8 ? 64 : type == ANSWER_OID_FLOAT8 ? 53 : 0;
        bool prec = !strcmp(name, "numeric_precision"), radix = !strcmp(name, "numeric_precision_radix");
        if (type == ANSWER_OID_NUMERIC && radix)
            return set_int(v, ANSWER_OID_INT4, 10), 1;
        if (!bits || (!prec && !radix && type == ANSWER_OID_FLOAT8))
            return set_null(v, ANSWER_OID_INT4), 1;
        return set_int(v, ANSWER_OID_INT4, prec ? bits : radix ? 2 : 0), 1;
    }
    if (!strcmp(name, "datetime_precision")) {
        if (type == ANSWER_OID_TIMESTAMPTZ || type == ANSWER_OID_TIMESTAMP || type == ANSWER_OID_DATE)
            return set_int(v, ANSWER_OID_INT4, type == ANSWER_OID_DATE ? 0 : 6), 1;
        return set_null(v, ANSWER_OID_INT4), 1;
    }
    static const struct {
        const char *name;
        uint32_t oid;
        const char *value;
    } attr_fixed[] = {
        {"attnotnull", ANSWER_OID_BOOL, "f"},
        {"attisdropped", ANSWER_OID_BOOL, "f"},
        {"atthasdef", ANSWER_OID_BOOL, "f"},
        {"attidentity", OID_CHAR, ""},
        {"attgenerated", OID_CHAR, ""},
        {"typtype", OID_CHAR, "b"},
        {"typbasetype", OID_OID, "0"},
        {"typnotnull", ANSWER_OID_BOOL, "f"},
        {"is_identity", ANSWER_OID_TEXT, "NO"},
        {"is_generated", ANSWER_OID_TEXT, "NEVER"},
        {"attcollation", OID_NAME, NULL},
        {"collname", OID_NAME, NULL},
        {"column_default", ANSWER_OID_TEXT, NULL},
        {"adsrc", ANSWER_OID_TEXT, NULL},
        {"character_maximum_length", ANSWER_OID_INT4, NULL},
        {"character_octet_length", ANSWER_OID_INT4, NULL},
        {"collation_name", OID_NAME, NULL},
    };
    for (size_t i = 0; i < sizeof attr_fixed / sizeof *attr_fixed; i++)
        if (!strcmp(name, attr_fixed[i].name)) {
            if (attr_fixed[i].value)
                set_text(v, attr_fixed[i].oid, attr_fixed[i].value);
            else
                set_null(v, attr_fixed[i].oid);
            return 1;
        }
    return 0;
}

/* ---- Expressions: select items ----------------------------------------------------------- */

/* [alias.]name at [i, end): the field name, or NULL. */
static const char *column_ref(const struct toks *t, int i, int end)
{
    if (end - i == 1 && (t->t[i].kind == T_IDENT || t->t[i].kind == T_QIDENT))
        return t->t[i].text;
    if (end - i == 3 && t->t[i].kind == T_IDENT && tok_is(t, i + 1, ".") &&
        (t->t[i + 2].kind == T_IDENT || t->t[i + 2].kind == T_QIDENT))
        return t->t[i + 2].text;
    return NULL;
}

/* Drops trailing casts (::type, ::pg_catalog.type, ::type(n)) and COLLATE
 * name from [i, *end). */
static void strip_casts(const struct toks *t, int i, int *end)
{
    for (;;) {
        int e = *end;
        if (e - i >= 3 && tok_is(t, e - 1, ")") ) {
            /* ::varchar(10) */
            int open = e - 1;
            while (open > i && !(tok_is(t, open, "(") && t->t[open].depth == t->t[e - 1].depth))
                open--;
            if (open > i + 1 && t->t[open - 1].kind == T_IDENT && tok_is(t, open - 2, "::"))
                e = open;
        }
        if (e - i >= 3 && t->t[e - 1].kind == T_IDENT && tok_is(t, e - 2, "."))
            e -= 2; /* pg_catalog.type */
        if (e - i >= 3 && (t->t[e - 1].kind == T_IDENT || t->t[e - 1].kind == T_QIDENT) &&
            (tok_is(t, e - 2, "::") || tok_is(t, e - 2, "collate"))) {
            *end = e - 2;
            continue;
        }
        return;
    }
}

/* Whether s needs quote_ident's quotes: anything but lowercase letters,
 * digits and '_' not starting with a digit. */
static void quote_ident(const char *s, char *out, size_t cap)
{
    bool plain = *s && !isdigit((unsigned char)*s);
    for (const char *p = s; *p && plain; p++)
        plain = islower((unsigned char)*p) || isdigit((unsigned char)*p) || *p == '_';
    if (plain) {
        snprintf(out, cap, "%s", s);
        return;
    }
    size_t k = 0;
    out[k++] = '"';
    for (const char *p = s; *p && k + 3 < cap; p++) {
        if (*p == '"')
            out[k++] = '"';
        out[k++] = *p;
    }
    out[k++] = '"';
    out[k] = '\0';
}

static int eval(const struct catalog *k, const struct row *r, const struct toks *t, int i,
                int end, struct cval *v);

/* The end of a CASE's part starting at i: the next WHEN, ELSE or END of
 * that CASE (nested CASEs skipped). */
static int case_part_end(const struct toks *t, int i, int end)
{
    int nest = 0, d = t->t[i].depth;
    for (; i < end; i++) {
        if (t->t[i].depth != d)
            continue;
        if (tok_is(t, i, "case"))
            nest++;
        else if (tok_is(t, i, "end")) {
            if (nest == 0)
                return i;
            nest--;
        } else if (nest == 0 && (tok_is(t, i, "when") || tok_is(t, i, "else") || tok_is(t, i, "then")))
            return i;
    }
    return end;
}

static int eval_case(const struct catalog *k, const struct row *r, const struct toks *t, int i,
                     int end, struct cval *v)
{
    i++; /* CASE */
    if (tok_is(t, i, "when")) {
        /* Searched: the first THEN (tools put the common case first:
         * Grafana's "in the search path" branch, public being there). */
        int then = case_part_end(t, i + 1, end);
        if (!tok_is(t, then, "then"))
            return 0;
        return eval(k, r, t, then + 1, case_part_end(t, then + 1, end), v);
    }
    int subject_end = case_part_end(t, i, end);
    struct cval subject;
    if (eval(k, r, t, i, subject_end, &subject) != 1 || subject.null)
        return 0;
    for (i = subject_end; i < end && tok_is(t, i, "when");) {
        int then = case_part_end(t, i + 1, end);
        int next = case_part_end(t, then + 1, end);
        if (!tok_is(t, then, "then"))
            return 0;
        struct cval when;
        if (eval(k, r, t, i + 1, then, &when) == 1 && !when.null &&
            !strcmp(when.text, subject.text))
            return eval(k, r, t, then + 1, next, v);
        i = next;
    }
    if (tok_is(t, i, "else"))
        return eval(k, r, t, i + 1, case_part_end(t, i + 1, end), v);
    set_null(v, ANSWER_OID_TEXT);
    return 1;
}

static bool literal(const struct toks *t, int i);
static const char *lit_value(const struct catalog *k, const struct toks *t, int i, char *tmp,
                             size_t cap);

/* A function call at [i, end): name at i (after an optional schema). */
static int eval_call(const struct catalog *k, const struct row *r, const struct toks *t, int i,
                     int end, struct cval *v)
{
    const char *fn = t->t[i].text;
    int open = i + 1, close = after_parens(t, open) - 1;
    int arg_end = open + 1;
    while (arg_end < close && !(tok_is(t, arg_end, ",") && t->t[arg_end].depth == t->t[open].depth + 1))
        arg_end++;
    if (close + 1 < end && !tok_is(t, close + 1, "over"))
        return 0; /* an expression over the call: not read */
    if (!strcmp(fn, "quote_ident")) {
        struct cval a;
        if (eval(k, r, t, open + 1, arg_end, &a) != 1)
            return 0;
        if (a.null)
            return set_null(v, ANSWER_OID_TEXT), 1;
        char q[256];
        quote_ident(a.text, q, sizeof q);
        return set_text(v, ANSWER_OID_TEXT, q), 1;
    }
    if (!strcmp(fn, "nullif")) {
        struct cval a, b;
        if (eval(k, r, t, open + 1, arg_end, &a) != 1 || eval(k, r, t, arg_end + 1, close, &b) != 1)
            return 0;
        *v = a;
        if (!a.null && !b.null && !strcmp(a.text, b.text))
            v->null = true;
        return 1;
    }
    if (!strcmp(fn, "format_type"))
        return field(k, r, "format_type", v);
    if (!strcmp(fn, "row_number")) {
        if (r->subject != SUBJECT_ATTR)
            return 0;
        return set_int(v, ANSWER_OID_INT8, r->col + 1), 1;
    }
    if (!strcmp(fn, "pg_get_userbyid"))
        return set_text(v, OID_NAME, k->c->user), 1;
    if (!strcmp(fn, "current_database"))
        return set_text(v, OID_NAME, k->c->database), 1;
    if (!strcmp(fn, "current_schema"))
        return set_text(v, OID_NAME, "public"), 1;
    if (!strcmp(fn, "pg_size_pretty"))
        return set_text(v, ANSWER_OID_TEXT, "0 bytes"), 1;
    if (!strcmp(fn, "pg_table_size") || !strcmp(fn, "pg_relation_size") ||
        !strcmp(fn, "pg_total_relation_size"))
        return set_int(v, ANSWER_OID_INT8, 0), 1;
    if (!strcmp(fn, "array_to_string"))
        return set_text(v, ANSWER_OID_TEXT, ""), 1;
    /* What a view's columns have none of: comments, defaults, view text. */
    if (!strcmp(fn, "pg_get_viewdef") && literal(t, open + 1)) {
        /* pg_get_viewdef('16385'::oid, true), or 'name'::regclass */
        char tmp[32];
        long long oid = atoll(lit_value(k, t, open + 1, tmp, sizeof tmp));
        if (oid < PG_FIRST_VIEW_OID || oid - PG_FIRST_VIEW_OID >= k->nrels)
            return set_null(v, ANSWER_OID_TEXT), 1;
        set_text(v, ANSWER_OID_TEXT, "");
        v->whole = k->rels[oid - PG_FIRST_VIEW_OID].definition;
        return 1;
    }
    if (!strcmp(fn, "obj_description") || !strcmp(fn, "col_description") ||
        !strcmp(fn, "pg_get_expr") || !strcmp(fn, "pg_get_viewdef"))
        return set_null(v, ANSWER_OID_TEXT), 1;
    return 0;
}

/* The value of the expression at [i, end) for row r: 1 with *v, 0 when it
 * is not one this file reads. */
static int eval(const struct catalog *k, const struct row *r, const struct toks *t, int i,
                int end, struct cval *v)
{
    strip_casts(t, i, &end);
    if (i >= end)
        return 0;
    /* (expr) and (SELECT ...) */
    if (tok_is(t, i, "(") && after_parens(t, i) == end) {
        if (tok_is(t, i + 1, "select"))
            return set_null(v, ANSWER_OID_TEXT), 1;
        return eval(k, r, t, i + 1, end - 1, v);
    }
    const struct tok *a = &t->t[i];
    if (end - i == 1) {
        if (a->kind == T_STRING)
            return set_text(v, ANSWER_OID_TEXT, a->text), 1;
        if (a->kind == T_NUMBER)
            return set_text(v, ANSWER_OID_INT4, a->text), 1;
        if (a->kind == T_IDENT) {
            if (!strcmp(a->text, "null"))
                return set_null(v, ANSWER_OID_TEXT), 1;
            if (!strcmp(a->text, "true") || !strcmp(a->text, "false"))
                return set_text(v, ANSWER_OID_BOOL, a->text[0] == 't' ? "t" : "f"), 1;
            if (!strcmp(a->text, "current_user") || !strcmp(a->text, "session_user") ||
                !strcmp(a->text, "user"))
                return set_text(v, OID_NAME, k->c->user), 1;
        }
    }
    if (tok_is(t, i, "case") && tok_is(t, end - 1, "end"))
        return eval_case(k, r, t, i, end - 1, v);
    const char *col = column_ref(t, i, end);
    if (col)
        return field(k, r, col, v);
    int f = i;
    if (end - i > 3 && t->t[i].kind == T_IDENT && tok_is(t, i + 1, ".") &&
        t->t[i + 2].kind == T_IDENT && tok_is(t, i + 3, "("))
        f = i + 2; /* pg_catalog.fn( */
    if (t->t[f].kind == T_IDENT && tok_is(t, f + 1, "("))
        return eval_call(k, r, t, f, end, v);
    return 0;
}

/* The name PostgreSQL gives an output column without an alias: a column's
 * name, a function's, "case", or "?column?". */
static void item_name(const struct toks *t, int i, int end, char *out, size_t cap)
{
    strip_casts(t, i, &end);
    const char *col = column_ref(t, i, end);
    if (col) {
        snprintf(out, cap, "%s", col);
        return;
    }
    if (tok_is(t, i, "(") && tok_is(t, i + 1, "select")) {
        /* A scalar subquery is named after its one column. */
        int from = i + 2;
        while (from < end && !(tok_is(t, from, "from") && t->t[from].depth == t->t[i + 1].depth))
            from++;
        item_name(t, i + 2, from, out, cap);
        return;
    }
    if (tok_is(t, i, "case")) {
        snprintf(out, cap, "case");
        return;
    }
    int f = i;
    if (end - i > 3 && tok_is(t, i + 1, ".") && tok_is(t, i + 3, "("))
        f = i + 2;
    if (t->t[f].kind == T_IDENT && tok_is(t, f + 1, "(")) {
        snprintf(out, cap, "%s", t->t[f].text);
        return;
    }
    if (end - i == 1 && t->t[i].kind == T_IDENT &&
        (!strcmp(t->t[i].text, "current_user") || !strcmp(t->t[i].text, "session_user") ||
         !strcmp(t->t[i].text, "user"))) {
        snprintf(out, cap, "%s", t->t[i].text);
        return;
    }
    snprintf(out, cap, "?column?");
}

/* ---- The statement ----------------------------------------------------------------------- */

struct item {
    int from, end;     /* the expression */
    char name[256];    /* the output column's name */
    const char *alias; /* lowercased alias, or NULL */
    uint32_t oid;      /* from the first row (text when there is none) */
};

enum { MAX_ITEMS = 64, MAX_CONDS = 64 };

/* A comparison of a field with literals in a WHERE. */
struct cond {
    const char *field;
    enum { C_EQ, C_NE, C_REGEX, C_NOT_REGEX, C_REGEX_I, C_LIKE, C_NOT_LIKE, C_ILIKE, C_IN,
           C_NOT_IN } op;
    int lit;        /* token of the literal; C_IN: the first of the list */
    int lit_end;    /* C_IN: the token after the list's ')' */
};

struct query {
    struct toks t;
    int subject;
    struct item items[MAX_ITEMS];
    int nitems;
    struct cond conds[MAX_CONDS];
    int nconds;
    long long limit; /* -1: none */
};

/* The field a comparison's left side names: [a.]f or quote_ident([a.]f).
 * Sets *end past it. */
static const char *cond_field(const struct toks *t, int i, int *end)
{
    if (tok_is(t, i, "quote_ident") && tok_is(t, i + 1, "(")) {
        int close = after_parens(t, i + 1);
        const char *f = column_ref(t, i + 2, close - 1);
        *end = close;
        return f;
    }
    if (t->t[i].kind != T_IDENT && t->t[i].kind != T_QIDENT)
        return NULL;
    if (tok_is(t, i + 1, ".") && i + 2 < t->n) {
        *end = i + 3;
        return t->t[i + 2].text;
    }
    *end = i + 1;
    return t->t[i].text;
}

static bool literal(const struct toks *t, int i)
{
    return i < t->n && (t->t[i].kind == T_STRING || t->t[i].kind == T_NUMBER);
}

static void read_conds(struct query *q)
{
    const struct toks *t = &q->t;
    for (int i = 0; i < t->n && q->nconds < MAX_CONDS; i++) {
        if (!t->t[i].in_where || tok_is(t, i - 1, ".") || tok_is(t, i - 1, "::"))
            continue;
        int j;
        const char *f = cond_field(t, i, &j);
        if (!f || j >= t->n)
            continue;
        struct cond cd = {.field = f};
        while (tok_is(t, j, "collate") && j + 1 < t->n) {
            j += 2;
            if (tok_is(t, j, "."))
                j += 2;
        }
        bool not = tok_is(t, j, "not");
        if (not)
            j++;
        if (tok_is(t, j, "operator") && tok_is(t, j + 1, "(")) {
            /* OPERATOR(pg_catalog.~) */
            int close = after_parens(t, j + 1);
            const char *op = t->t[close - 2].text;
            if (!strcmp(op, "~"))
                cd.op = C_REGEX;
            else if (!strcmp(op, "!~"))
                cd.op = C_NOT_REGEX;
            else if (!strcmp(op, "~*"))
                cd.op = C_REGEX_I;
            else if (!strcmp(op, "="))
                cd.op = C_EQ;
            else
                continue;
            j = close;
        } else if (tok_is(t, j, "=")) {
            cd.op = C_EQ, j++;
        } else if (tok_is(t, j, "<>") || tok_is(t, j, "!=")) {
            cd.op = C_NE, j++;
        } else if (tok_is(t, j, "~")) {
            cd.op = C_REGEX, j++;
        } else if (tok_is(t, j, "!~")) {
            cd.op = C_NOT_REGEX, j++;
        } else if (tok_is(t, j, "~*")) {
            cd.op = C_REGEX_I, j++;
        } else if (tok_is(t, j, "like")) {
            cd.op = not ? C_NOT_LIKE : C_LIKE, j++;
        } else if (tok_is(t, j, "ilike") && !not) {
            cd.op = C_ILIKE, j++;
        } else if (tok_is(t, j, "in") && tok_is(t, j + 1, "(")) {
            cd.op = not ? C_NOT_IN : C_IN;
            cd.lit = j + 2;
            cd.lit_end = after_parens(t, j + 1);
            bool all = true;
            for (int x = cd.lit; x + 1 < cd.lit_end; x += 2)
                all = all && literal(t, x) && (tok_is(t, x + 1, ",") || x + 2 == cd.lit_end);
            if (all && cd.lit + 1 < cd.lit_end)
                q->conds[q->nconds++] = cd;
            continue;
        } else {
            continue;
        }
        if (!literal(t, j))
            continue;
        cd.lit = j;
        q->conds[q->nconds++] = cd;
    }
}

/* SQL LIKE: % any run, _ one character, \ escapes. */
static bool like(const char *s, const char *p, bool fold)
{
    for (; *p; p++, s++) {
        if (*p == '%') {
            for (const char *x = s;; x++) {
                if (like(x, p + 1, fold))
                    return true;
                if (!*x)
                    return false;
            }
        }
        if (*p == '\\' && p[1])
            p++;
        else if (*p == '_') {
            if (!*s)
                return false;
            continue;
        }
        if (!*s || (fold ? tolower((unsigned char)*s) != tolower((unsigned char)*p) : *s != *p))
            return false;
    }
    return !*s;
}

/* ---- A regular expression's cost, before regcomp sees it ----------------------
 *
 * glibc's regcomp spells a repeated atom out (x+ as xx*, x{m,n} as up to n
 * copies), so repetitions of repetitions multiply: '^pg_toast_' followed by
 * two hundred '+' (fuzz_pg_message found it) took 2 GB. The nodes the
 * pattern would build are estimated from its shape, and a pattern past
 * REGEX_MAX_NODES or REGEX_MAX_BYTES is refused, as regcomp refuses an
 * invalid one: it matches nothing. What tools send ('^(trips)$',
 * '^pg_temp_') is a few dozen nodes. */
enum { REGEX_MAX_NODES = 4096, REGEX_MAX_BYTES = 1024, REGEX_MAX_DEPTH = 64 };

static uint64_t re_cap(uint64_t n) { return n > REGEX_MAX_NODES ? REGEX_MAX_NODES + 1 : n; }

static uint64_t re_alternatives(const char **p, int depth);

/* One atom: a group, a bracket expression, an escaped or plain character. */
static uint64_t re_atom(const char **p, int depth)
{
    const char *q = *p;
    if (*q == '(') {
        q++;
        uint64_t n = depth >= REGEX_MAX_DEPTH ? REGEX_MAX_NODES + 1 : re_alternatives(&q, depth + 1);
        if (*q == ')')
            q++;
        *p = q;
        return re_cap(n + 1);
    }
    if (*q == '[') {
        q++;
        if (*q == '^')
            q++;
        if (*q == ']')
            q++;
        while (*q && *q != ']') {
            if (*q == '[' && (q[1] == ':' || q[1] == '.' || q[1] == '=')) {
                char end = q[1];
                for (q += 2; *q && !(q[0] == end && q[1] == ']'); q++)
                    ;
                if (*q)
                    q += 2;
                continue;
            }
            q++;
        }
        if (*q == ']')
            q++;
        *p = q;
        return 1;
    }
    if (*q == '\\' && q[1])
        q++;
    *p = q + 1;
    return 1;
}

/* A bound of {m}, {m,} or {m,n}: the copies regcomp makes, or past
 * REGEX_MAX_NODES when it is not one (regcomp refuses it too). */
static uint64_t re_bound(const char **p)
{
    const char *q = *p + 1;
    uint64_t m = 0, n = 0;
    bool comma = false, more = false;
    for (; *q >= '0' && *q <= '9'; q++)
        m = re_cap(m * 10 + (uint64_t)(*q - '0'));
    if (*q == ',') {
        comma = true;
        for (q++; *q >= '0' && *q <= '9'; q++) {
            n = re_cap(n * 10 + (uint64_t)(*q - '0'));
            more = true;
        }
    }
    if (*q != '}')
        return REGEX_MAX_NODES + 1;
    *p = q + 1;
    return !comma ? m : more ? (n > m ? n : m) : m + 1;
}

/* A run of atoms with their repetitions, up to '|' or ')'. */
static uint64_t re_sequence(const char **p, int depth)
{
    uint64_t total = 0;
    while (**p && **p != '|' && **p != ')' && total <= REGEX_MAX_NODES) {
        uint64_t a = re_atom(p, depth);
        for (;;) {
            char c = **p;
            if (c == '*' || c == '?') {
                (*p)++;
                a = re_cap(a + 1);
            } else if (c == '+') {
                (*p)++;
                a = re_cap(2 * a + 1);
            } else if (c == '{') {
                uint64_t copies = re_bound(p);
                if (copies > REGEX_MAX_NODES)
                    return REGEX_MAX_NODES + 1;
                a = re_cap(a * (copies + 1) + 1);
            } else {
                break;
            }
        }
        total = re_cap(total + a);
    }
    return total;
}

static uint64_t re_alternatives(const char **p, int depth)
{
    uint64_t total = re_sequence(p, depth);
    while (**p == '|' && total <= REGEX_MAX_NODES) {
        (*p)++;
        total = re_cap(total + re_sequence(p, depth) + 1);
    }
    return total;
}

/* Whether regcomp would build more than REGEX_MAX_NODES nodes of it. */
static bool regex_too_costly(const char *pattern)
{
    if (strlen(pattern) > REGEX_MAX_BYTES)
        return true;
    const char *p = pattern;
    uint64_t total = 0;
    while (*p && total <= REGEX_MAX_NODES) {
        total = re_cap(total + re_alternatives(&p, 0));
        if (*p == ')')
            p++; /* a stray one: regcomp reads it as a character */
    }
    return total > REGEX_MAX_NODES;
}

/* A regular expression as PostgreSQL's ~ reads the ones tools send
 * (psql's '^(name)$', '^pg_'): POSIX extended, which those are. */
static bool regex_match(const char *s, const char *pattern, bool fold)
{
    regex_t re;
    if (regex_too_costly(pattern) ||
        regcomp(&re, pattern, REG_EXTENDED | REG_NOSUB | (fold ? REG_ICASE : 0)))
        return false;
    bool m = regexec(&re, s, 0, NULL, 0) == 0;
    regfree(&re);
    return m;
}

/* The literal as the field's value compares: a 'name'::regclass is that
 * relation's oid. */
static const char *lit_value(const struct catalog *k, const struct toks *t, int i, char *tmp,
                             size_t cap)
{
    if (tok_is(t, i + 1, "::") &&
        (tok_is(t, i + 2, "regclass") ||
         (tok_is(t, i + 2, "pg_catalog") && tok_is(t, i + 4, "regclass")))) {
        const char *name = t->t[i].text;
        const char *dot = strrchr(name, '.');
        if (dot && !strncmp(name, "public.", 7))
            name = dot + 1;
        snprintf(tmp, cap, "0");
        for (int r = 0; r < k->nrels; r++)
            if (!strcmp(k->rels[r].name, name))
                snprintf(tmp, cap, "%d", PG_FIRST_VIEW_OID + r);
        return tmp;
    }
    return t->t[i].text;
}

static bool cond_holds(const struct catalog *k, const struct query *q, const struct cond *cd,
                       const struct cval *v)
{
    const struct toks *t = &q->t;
    char tmp[32];
    if (cd->op == C_IN || cd->op == C_NOT_IN) {
        bool in = false;
        for (int x = cd->lit; x < cd->lit_end - 1; x += 2)
            in = in || (!v->null && !strcmp(v->text, lit_value(k, t, x, tmp, sizeof tmp)));
        return cd->op == C_IN ? in : !in;
    }
    if (v->null)
        return false;
    const char *lit = lit_value(k, t, cd->lit, tmp, sizeof tmp);
    switch (cd->op) {
    case C_EQ: return !strcmp(v->text, lit);
    case C_NE: return strcmp(v->text, lit) != 0;
    case C_REGEX: return regex_match(v->text, lit, false);
    case C_REGEX_I: return regex_match(v->text, lit, true);
    case C_NOT_REGEX: return !regex_match(v->text, lit, false);
    case C_LIKE: return like(v->text, lit, false);
    case C_ILIKE: return like(v->text, lit, true);
    case C_NOT_LIKE: return !like(v->text, lit, false);
    default: return true;
    }
}

static bool row_passes(const struct catalog *k, const struct query *q, const struct row *r)
{
    bool any_kind = false, kind_ok = false;
    for (int i = 0; i < q->nconds; i++) {
        const struct cond *cd = &q->conds[i];
        struct cval v;
        if (!field(k, r, cd->field, &v))
            continue; /* a field of a joined relation this row has not */
        bool ok = cond_holds(k, q, cd, &v);
        if (!strcmp(cd->field, "relkind")) {
            /* The kinds a tool lists are alternatives (pgjdbc's "false OR
             * (c.relkind = 'r' ...) OR (c.relkind = 'v' ...)"). */
            any_kind = true;
            kind_ok = kind_ok || ok;
        } else if (!ok) {
            return false;
        }
    }
    return !any_kind || kind_ok;
}

/* The select list: the first SELECT at depth 0, or the derived table's for
 * SELECT * FROM (SELECT ...). [*from, *end) of items; -1 when there is
 * none. */
static int select_list(const struct toks *t, int *from, int *end)
{
    int s = 0;
    while (s < t->n && !tok_is(t, s, "select"))
        s++;
    for (;;) {
        if (s >= t->n)
            return -1;
        int d = t->t[s].depth, f = s + 1;
        while (f < t->n && !(tok_is(t, f, "from") && t->t[f].depth == d))
            f++;
        if (f == s + 2 && tok_is(t, s + 1, "*") && tok_is(t, f + 1, "(") &&
            tok_is(t, f + 2, "select")) {
            s = f + 2;
            continue;
        }
        *from = s + 1;
        *end = f;
        if (tok_is(t, *from, "distinct"))
            (*from)++;
        return 0;
    }
}

/* ---- Answering ------------------------------------------------------------------------------- */

/* An error for the client: written, and -1 (pg_catalog_run's failure). */
#define catalog_fail(c, ...) (pg_put_errorf(&(c)->out, __VA_ARGS__), -1)

#define CATALOG_HINT                                                                              \
    "Straum answers pg_class, pg_attribute, pg_namespace, pg_views and information_schema's "    \
    "tables, columns and schemata from its views; GET /views lists them over HTTP."

static int by_name(const void *a, const void *b, void *ctx)
{
    const struct engine_relation *r = ctx;
    return strcmp(r[*(const int *)a].name, r[*(const int *)b].name);
}

/* Reads the statement: tokens, subject, items, conditions. 0, or -1 with
 * an error written (position base: the statement's in the message). */
static int read_query(struct pg_conn *c, const char *text, size_t len, int base, struct query *q)
{
    memset(q, 0, sizeof *q);
    q->limit = -1;
    if (tokenize(text, len, &q->t))
        return catalog_fail(c, "53200", NULL, 0, "out of memory");
    struct toks *t = &q->t;
    mark_where(t);
    int unknown = 0;
    q->subject = statement_subject(t, &unknown);
    if (q->subject < 0)
        return catalog_fail(c, "0A000", CATALOG_HINT,
                            base + pg_chars(text, t->t[unknown].at) + 1,
                            "the catalog relation \"%s\" is not one Straum answers",
                            t->t[unknown + (tok_is(t, unknown + 1, ".") &&
                                                    unknown + 2 < t->n ? 2 : 0)].text);
    if (q->subject == SUBJECT_NONE)
        return catalog_fail(c, "0A000", CATALOG_HINT, 0, "not a catalog query Straum answers");
    for (int i = 0; i + 1 < t->n; i++)
        if (t->t[i].depth == 0 && tok_is(t, i, "limit") && t->t[i + 1].kind == T_NUMBER)
            q->limit = atoll(t->t[i + 1].text);
    int from, end;
    if (select_list(t, &from, &end) || from >= end)
        return catalog_fail(c, "42601", NULL, 0, "a catalog query is a SELECT with columns");
    int d = t->t[from].depth;
    for (int i = from; i < end;) {
        int j = i;
        while (j < end && !(tok_is(t, j, ",") && t->t[j].depth == d))
            j++;
        if (q->nitems == MAX_ITEMS)
            return catalog_fail(c, "54000", NULL, 0, "more than %d columns in a catalog query",
                                MAX_ITEMS);
        struct item *it = &q->items[q->nitems++];
        it->from = i;
        it->end = j;
        if (j - i >= 3 && tok_is(t, j - 2, "as")) {
            it->alias = t->t[j - 1].text;
            it->end = j - 2;
            snprintf(it->name, sizeof it->name, "%s", t->t[j - 1].text);
        } else {
            item_name(t, i, j, it->name, sizeof it->name);
        }
        i = j + 1;
    }
    read_conds(q);
    return 0;
}

/* The value of an item for a row: the expression, else the field its
 * alias names. 1, or 0 when neither reads. */
static int item_value(const struct catalog *k, const struct query *q, const struct item *it,
                      const struct row *r, struct cval *v)
{
    if (eval(k, r, &q->t, it->from, it->end, v) == 1)
        return 1;
    if (it->alias && field(k, r, it->alias, v) == 1)
        return 1;
    return 0;
}

/* The rows of the subject, in name order. *n rows into a malloc'd array. */
static struct row *subject_rows(const struct catalog *k, int subject, int *n)
{
    int total = subject == SUBJECT_SCHEMA ? 1 : 0;
    if (subject == SUBJECT_REL)
        total = k->nrels;
    for (int i = 0; subject == SUBJECT_ATTR && i < k->nrels; i++)
        total += k->rels[i].ncols;
    struct row *rows = calloc((size_t)total + 1, sizeof *rows);
    if (!rows)
        return NULL;
    int m = 0;
    if (subject == SUBJECT_SCHEMA)
        rows[m++] = (struct row){SUBJECT_SCHEMA, NULL, 0, 0};
    for (int o = 0; (subject == SUBJECT_REL || subject == SUBJECT_ATTR) && o < k->nrels; o++) {
        int i = k->order[o];
        if (subject == SUBJECT_REL)
            rows[m++] = (struct row){SUBJECT_REL, &k->rels[i], i, 0};
        else
            for (int col = 0; col < k->rels[i].ncols; col++)
                rows[m++] = (struct row){SUBJECT_ATTR, &k->rels[i], i, col};
    }
    *n = m;
    return rows;
}

static int16_t catalog_type_len(uint32_t oid)
{
    return oid == OID_NAME ? 64 : oid == OID_CHAR ? 1 : oid == OID_OID ? 4 : pg_type_len(oid);
}

static void put_cval(struct buf *b, const struct cval *v, bool binary)
{
    if (v->null) {
        pg_put_int32(b, -1);
        return;
    }
    if (binary) {
        long long x = strtoll(v->text, NULL, 10);
        switch (v->oid) {
        case ANSWER_OID_BOOL:
            pg_put_int32(b, 1);
            buf_put(b, v->text[0] == 't' ? "\1" : "\0", 1);
            return;
        case ANSWER_OID_INT2:
            pg_put_int32(b, 2);
            pg_put_int16(b, (int16_t)x);
            return;
        case ANSWER_OID_INT4:
        case OID_OID:
            pg_put_int32(b, 4);
            pg_put_int32(b, (int32_t)x);
            return;
        case ANSWER_OID_INT8:
            pg_put_int32(b, 8);
            pg_put_int32(b, (int32_t)(x >> 32));
            pg_put_int32(b, (int32_t)(x & 0xffffffff));
            return;
        default: break; /* text, name, "char": the bytes themselves */
        }
    }
    const char *text = v->whole ? v->whole : v->text;
    pg_put_int32(b, (int32_t)strlen(text));
    buf_puts(b, text);
}

int pg_catalog_run(struct pg_conn *c, const char *text, size_t len, int base, int mode,
                   int nresults, const int16_t *results, struct answer_column **cols_out,
                   int *ncols_out)
{
    struct engine_relation *rels;
    int nrels;
    struct ask_error err = {0};
    if (engine_relations(c->engine, &rels, &nrels, &err))
        return catalog_fail(c, "53200", NULL, 0, "%s", err.message);
    int rc = pg_catalog_answer(c, rels, nrels, text, len, base, mode, nresults, results, cols_out,
                               ncols_out);
    free(rels);
    return rc;
}

int pg_catalog_answer(struct pg_conn *c, const struct engine_relation *rels, int nrels,
                      const char *text, size_t len, int base, int mode, int nresults,
                      const int16_t *results, struct answer_column **cols_out, int *ncols_out)
{
    struct catalog k = {.c = c, .rels = rels, .nrels = nrels};
    struct query *q = calloc(1, sizeof *q);
    k.order = calloc((size_t)k.nrels + 1, sizeof *k.order);
    int rc = 0, nrows = 0;
    struct row *rows = NULL;
    if (!q || !k.order) {
        rc = catalog_fail(c, "53200", NULL, 0, "out of memory");
        goto done;
    }
    for (int i = 0; i < k.nrels; i++)
        k.order[i] = i;
    qsort_r(k.order, (size_t)k.nrels, sizeof *k.order, by_name, (void *)k.rels);
    if ((rc = read_query(c, text, len, base, q)))
        goto done;
    if (q->subject == SUBJECT_EMPTY) {
        nrows = 0;
    } else if (!(rows = subject_rows(&k, q->subject, &nrows))) {
        rc = catalog_fail(c, "53200", NULL, 0, "out of memory");
        goto done;
    }
    /* Every item must read on the subject's rows: checked on a probe row
     * (a view's first column, the first view, or public), so an empty
     * answer is refused as a full one would be. The types come from it. */
    struct row probe = q->subject == SUBJECT_SCHEMA ? (struct row){SUBJECT_SCHEMA, NULL, 0, 0}
                       : (struct row){q->subject == SUBJECT_ATTR ? SUBJECT_ATTR : SUBJECT_REL,
                                      NULL, 0, 0};
    static const struct answer_column probe_col = {"bucket", ANSWER_OID_TIMESTAMPTZ};
    static const struct engine_relation probe_rel = {"view", &probe_col, 1, ""};
    if (q->subject == SUBJECT_EMPTY)
        probe.subject = SUBJECT_REL; /* the columns of what has no rows */
    probe.rel = &probe_rel;
    for (int i = 0; i < q->nitems; i++) {
        struct item *it = &q->items[i];
        struct cval v;
        if (q->subject == SUBJECT_EMPTY && !item_value(&k, q, it, &probe, &v)) {
            /* No row will ask: a column of what has none is text. */
            set_null(&v, ANSWER_OID_TEXT);
        } else if (!item_value(&k, q, it, &probe, &v)) {
            rc = catalog_fail(c, "0A000", CATALOG_HINT,
                              base + pg_chars(text, q->t.t[it->from].at) + 1,
                              "Straum's catalog cannot compute the column \"%s\"", it->name);
            goto done;
        }
        it->oid = v.oid;
    }
    if (cols_out) {
        size_t names = 0;
        for (int i = 0; i < q->nitems; i++)
            names += strlen(q->items[i].name) + 1;
        struct answer_column *cols = calloc(1, sizeof *cols * ((size_t)q->nitems + 1) + names);
        if (!cols) {
            rc = catalog_fail(c, "53200", NULL, 0, "out of memory");
            goto done;
        }
        char *name = (char *)(cols + q->nitems + 1);
        for (int i = 0; i < q->nitems; i++) {
            size_t n = strlen(q->items[i].name) + 1;
            cols[i] = (struct answer_column){memcpy(name, q->items[i].name, n), q->items[i].oid};
            name += n;
        }
        *cols_out = cols;
        *ncols_out = q->nitems;
    }
    if (mode != PG_CATALOG_ROWS) {
        size_t at = pg_msg_begin(&c->out, 'T');
        pg_put_int16(&c->out, (int16_t)q->nitems);
        for (int i = 0; i < q->nitems; i++) {
            pg_put_cstr(&c->out, q->items[i].name);
            pg_put_int32(&c->out, 0);
            pg_put_int16(&c->out, 0);
            pg_put_int32(&c->out, (int32_t)q->items[i].oid);
            pg_put_int16(&c->out, catalog_type_len(q->items[i].oid));
            pg_put_int32(&c->out, -1);
            pg_put_int16(&c->out, nresults == 0 ? 0 : nresults == 1 ? results[0] : results[i]);
        }
        pg_msg_end(&c->out, at);
    }
    if (mode == PG_CATALOG_DESCRIBE)
        goto done;
    long long sent = 0;
    for (int r = 0; r < nrows && (q->limit < 0 || sent < q->limit); r++) {
        if (!row_passes(&k, q, &rows[r]))
            continue;
        size_t at = pg_msg_begin(&c->out, 'D');
        pg_put_int16(&c->out, (int16_t)q->nitems);
        for (int i = 0; i < q->nitems; i++) {
            struct cval v;
            if (!item_value(&k, q, &q->items[i], &rows[r], &v))
                set_null(&v, q->items[i].oid);
            v.oid = q->items[i].oid;
            int16_t fmt = nresults == 0 ? 0 : nresults == 1 ? results[0] : results[i];
            put_cval(&c->out, &v, fmt == 1);
        }
        pg_msg_end(&c->out, at);
        sent++;
    }
    char tag[40];
    snprintf(tag, sizeof tag, "SELECT %lld", sent);
    pg_put_command_complete(&c->out, tag);
done:
    free(rows);
    if (q)
        free(q->t.t);
    free(q);
    free(k.order);
    return rc;
}

bool pg_catalog_reads(const char *text, size_t len)
{
    /* Asks never name a catalog relation: a cheap look first. */
    bool maybe = false;
    for (size_t i = 0; i + 3 <= len && !maybe; i++)
        maybe = !strncasecmp(text + i, "pg_", 3) || (i + 18 <= len &&
                                                      !strncasecmp(text + i, "information_schema", 18));
    if (!maybe)
        return false;
    struct toks t;
    if (tokenize(text, len, &t)) {
        free(t.t);
        return false;
    }
    mark_where(&t);
    int unknown = 0;
    int s = statement_subject(&t, &unknown);
    free(t.t);
    return s != SUBJECT_NONE;
}
