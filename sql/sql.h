/* sql.h -- the front door of the sql layer: views and asks compiled to C structs.
 *
 * Straum speaks two statements (SPEC.md, "The language"):
 *
 *   CREATE VIEW ... AS SELECT date_bin(...) AS bucket, keys..., measures...
 *   FROM fact [JOIN dim ...] GROUP BY ...        -- what ingest maintains
 *
 *   SELECT cols FROM view WHERE bucket >= $1 AND bucket < $2 ...
 *                                                -- what serve answers
 *
 * Both parsers are hand-written recursive descent over one lexer. They know
 * nothing about PostgreSQL's catalog: types are checked later, by ingest
 * against the source database and by serve when parameters are bound.
 *
 * Ownership: every compiled object owns one arena holding all its strings and
 * arrays; sql_view_list_free() and sql_ask_free() release everything at once.
 * A compiled ask points into the view list it was compiled against, so the
 * list must outlive it. Errors are values: on failure a function returns NULL
 * and fills a struct sql_error with a message and the 1-based line and column
 * (in characters) where the problem starts.
 */
#ifndef STRAUM_SQL_H
#define STRAUM_SQL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct sql_arena; /* private to sql/ */

/* ---- Errors ------------------------------------------------------------ */

enum sql_error_code {
    SQL_OK = 0,
    SQL_ERR_SYNTAX,         /* the text does not follow the grammar */
    SQL_ERR_UNSUPPORTED,    /* valid SQL, but outside what Straum can keep */
    SQL_ERR_INVALID,        /* well-formed but meaningless (bad width, dup name) */
    SQL_ERR_UNKNOWN_VIEW,   /* an ask names a view that does not exist */
    SQL_ERR_UNKNOWN_COLUMN, /* a name that resolves to nothing */
    SQL_ERR_LIMIT,          /* input larger than the parser accepts */
};

struct sql_error {
    enum sql_error_code code;
    int line;   /* 1-based; 0 when the error has no position */
    int column; /* 1-based, counted in characters, not bytes */
    char message[256]; /* the problem alone, without the position */
};

/* "line 3, column 14: unknown function \"medain\"" into buf; returns buf. */
const char *sql_error_format(const struct sql_error *err, char *buf, size_t len);
const char *sql_error_code_name(enum sql_error_code code);

/* ---- Constants --------------------------------------------------------- */

enum sql_const_kind {
    SQL_CONST_NULL,
    SQL_CONST_BOOL,
    SQL_CONST_NUMBER, /* text holds the exact literal, sign included: "-12.50" */
    SQL_CONST_STRING, /* text holds the decoded string (escapes resolved) */
};

struct sql_const {
    enum sql_const_kind kind;
    bool boolean;
    const char *text;     /* NUMBER and STRING; NUL-terminated */
    size_t len;           /* bytes in text (a string may hold any byte but NUL) */
    const char *cast;     /* "date" for DATE '...' or '...'::date; NULL if none */
    int line, column;
};

/* A value in an ask: a literal or a parameter $n. */
struct sql_operand {
    bool is_param;
    int param;            /* 1-based parameter number when is_param */
    struct sql_const lit; /* when !is_param */
    int line, column;
};

/* ---- Time -------------------------------------------------------------- */

#define SQL_USEC_PER_SEC 1000000LL
#define SQL_USEC_PER_MINUTE (60LL * SQL_USEC_PER_SEC)
#define SQL_USEC_PER_HOUR (60LL * SQL_USEC_PER_MINUTE)
#define SQL_USEC_PER_DAY (24LL * SQL_USEC_PER_HOUR)

/* Parses a fixed-length interval such as "1 hour", "15 minutes", "7 days",
 * "1 week 2 days". Months and years are refused: they have no fixed length,
 * and date_bin refuses them too. On success stores microseconds (> 0). */
bool sql_parse_interval(const char *text, int64_t *usec, char *why, size_t whylen);

/* Writes a width as a user reads it: "1 hour", "15 minutes", "1 week" (the
 * largest unit that divides it, weeks down to seconds, else microseconds).
 * Returns what snprintf returns. */
int sql_format_interval(int64_t usec, char *buf, size_t len);

/* Parses a timestamp literal: "epoch", "YYYY-MM-DD", "YYYY-MM-DD HH:MM[:SS[.f]]"
 * with an optional "T" and an optional offset ("Z", "+05", "-04:30").
 * *has_offset tells whether one was written; without it the value is
 * returned as if written in UTC and the caller applies a time zone. The result
 * is microseconds since 1970-01-01 00:00:00 UTC. */
bool sql_parse_timestamp(const char *text, int64_t *usec, bool *has_offset,
                         char *why, size_t whylen);

/* Days from 1970-01-01 to y-m-d in the proleptic Gregorian calendar (year 0
 * is 1 BC); m 1-12, d 1-31. Shared date arithmetic for every layer. */
int64_t sql_days_from_civil(int64_t y, unsigned m, unsigned d);
/* Its inverse: the y-m-d of a day number. */
void sql_civil_from_days(int64_t days, int64_t *y, unsigned *m, unsigned *d);

/* ---- Views ------------------------------------------------------------- */

enum sql_join_kind { SQL_JOIN_LEFT, SQL_JOIN_INNER };

enum sql_agg {
    SQL_AGG_COUNT_STAR,
    SQL_AGG_COUNT,          /* count(col): non-null values */
    SQL_AGG_COUNT_DISTINCT,
    SQL_AGG_SUM,
    SQL_AGG_AVG,
    SQL_AGG_MIN,
    SQL_AGG_MAX,
    SQL_AGG_PERCENTILE_DISC,
    SQL_AGG_PERCENTILE_CONT, /* keep last: SQL_NAGGS counts up to it */
};
enum { SQL_NAGGS = SQL_AGG_PERCENTILE_CONT + 1 };

/* How an aggregate is written in SQL. */
enum sql_agg_form {
    SQL_AGG_FORM_STAR,         /* f(*) */
    SQL_AGG_FORM_COLUMN,       /* f(col) */
    SQL_AGG_FORM_DISTINCT,     /* f(DISTINCT col) */
    SQL_AGG_FORM_WITHIN_GROUP, /* f(fraction) WITHIN GROUP (ORDER BY col) */
};

/* The names of the aggregates (sql/agg.c): the one table that the view
 * parser, the engine's /views and straum-dump read. Indexed by enum
 * sql_agg, each row by its enumerator (designated initializers), so a
 * reorder of the enum moves no name onto another aggregate. */
struct sql_agg_info {
    const char *function;      /* the SQL function: "count" for all three counts */
    const char *label;         /* the name /views gives it: "count(*)", "count",
                                  "count distinct", "sum", ... */
    enum sql_agg_form form;
};
extern const struct sql_agg_info sql_aggs[SQL_NAGGS];

/* The label of an aggregate ("?" for a value outside the enum). */
const char *sql_agg_label(enum sql_agg a);
/* The aggregate a call of this function names before its arguments are
 * read (the f(col) or WITHIN GROUP form: "count" is SQL_AGG_COUNT, which
 * count(*) and count(DISTINCT col) then refine), or -1 when it names none. */
int sql_agg_by_function(const char *name);
/* The aggregate labelled so (sql_agg_label's inverse), or -1. */
int sql_agg_by_label(const char *label);
/* An aggregate written as SQL by its form, over the column col, fraction
 * a percentile's (as text; NULL: "?"): "count(*)", "sum(fare)",
 * "count(DISTINCT zone)", "percentile_disc(0.5) WITHIN GROUP (ORDER BY
 * fare)"; "?" for a value outside the enum. Into buf, truncated to len;
 * returns snprintf's count. */
int sql_agg_format(enum sql_agg a, const char *col, const char *fraction, char *buf, size_t len);

enum sql_cmp { SQL_CMP_EQ, SQL_CMP_NE, SQL_CMP_LT, SQL_CMP_LE, SQL_CMP_GT, SQL_CMP_GE };

/* A FILTER (WHERE ...) predicate over fact columns, as a tree. Comparisons
 * are always stored column-first ("5 < x" becomes "x > 5"). */
enum sql_filter_kind {
    SQL_FILTER_AND,
    SQL_FILTER_OR,
    SQL_FILTER_NOT,
    SQL_FILTER_CMP,         /* column <cmp> value */
    SQL_FILTER_IS_NULL,
    SQL_FILTER_IS_NOT_NULL,
    SQL_FILTER_IN,          /* column IN (values) */
    SQL_FILTER_NOT_IN,
};

struct sql_filter {
    enum sql_filter_kind kind;
    const struct sql_filter *left, *right; /* AND, OR; NOT uses left */
    int fact_column;                       /* leaves: index into view->fact_columns */
    enum sql_cmp cmp;                      /* CMP */
    const struct sql_const *values;        /* CMP: one; IN: nvalues */
    int nvalues;
};

/* A fact column the view reads, named as in the source table. */
struct sql_fact_column {
    const char *name;
};

/* A dim table reached through "JOIN dim ON dim.key = fact.col". */
struct sql_join {
    enum sql_join_kind kind;
    const char *schema;        /* NULL when not written */
    const char *table;
    const char *alias;
    const char *dim_key;       /* the dim's join column */
    int fact_column;           /* the fact column it is joined to */
    const char **dim_columns;  /* dim columns views read: dim_columns[0] is
                                  dim_key, then each selected column once */
    int ndim_columns;
};

/* The cell accumulators a view keeps; measures point at them by index so
 * that two measures over the same column and filter share one. */
struct sql_count_spec {       /* rows counted: column -1 means count(*) */
    int fact_column;
    int filter;               /* index into view->filters, -1 for none */
};
struct sql_sum_spec {         /* exact sum of a column's non-null values */
    int fact_column;
    int filter;
};
struct sql_value_count_spec { /* per-cell (value, count) multiset */
    int fact_column;
    int filter;
};

struct sql_measure {
    enum sql_agg agg;
    int fact_column;   /* -1 for count(*) */
    int filter;        /* index into view->filters, -1 for none */
    const char *fraction_text; /* percentiles: the literal, e.g. "0.99" */
    double fraction;           /* percentiles: the same, as a double */
    /* Accumulators: -1 when the measure does not use one.
     *   count(*), count(col): count     sum: sum + count (NULL when 0 rows)
     *   avg: sum + count                 min, max, percentiles, distinct:
     *                                    value_counts (+ count for NULLs) */
    int count;
    int sum;
    int value_counts;
};

enum sql_column_kind {
    SQL_COLUMN_BUCKET,
    SQL_COLUMN_FACT_KEY,  /* a fact column used as a group key */
    SQL_COLUMN_DIM,       /* a dim column reached through a join */
    SQL_COLUMN_MEASURE,
};

struct sql_view_column {
    const char *name;      /* the output name asks use */
    enum sql_column_kind kind;
    int fact_column;       /* BUCKET: the time column; FACT_KEY: the key */
    int cell_key;          /* FACT_KEY: index into view->cell_keys */
    int join;              /* DIM: index into view->joins */
    int dim_column;        /* DIM: index into that join's dim_columns */
    struct sql_measure measure; /* MEASURE */
    int line, column;      /* where it was written */
};

struct sql_view {
    const char *name;
    const char *source;    /* the CREATE VIEW text as written, for the catalog */
    const char *fact_schema; /* NULL when not written */
    const char *fact_table;
    const char *fact_alias;

    /* Widths in microseconds, ascending; widths[0] is the date_bin stride
     * and every other width is a multiple of it. */
    const int64_t *widths;
    int nwidths;
    int64_t origin_usec;   /* date_bin origin, microseconds since the Unix epoch */
    bool origin_has_zone;  /* timestamptz origin (true) or timestamp (false) */
    int bucket_fact_column;

    const struct sql_view_column *columns; /* in SELECT order */
    int ncolumns;
    const struct sql_fact_column *fact_columns; /* every fact column read */
    int nfact_columns;
    const struct sql_join *joins;
    int njoins;

    /* The fact columns a cell is keyed by: group keys in SELECT order, then
     * each join column that is not itself a group key ("bound cells"), so
     * that a dim change never has to move a cell. */
    const int *cell_keys;
    int ncell_keys;

    const struct sql_filter *const *filters; /* distinct FILTER predicates */
    int nfilters;
    /* counts[0] is always the unfiltered count(*): a cell exists while it is
     * non-zero, whether or not the view selects count(*). */
    const struct sql_count_spec *counts;
    int ncounts;
    const struct sql_sum_spec *sums;
    int nsums;
    const struct sql_value_count_spec *value_counts;
    int nvalue_counts;
};

struct sql_view_list {
    struct sql_view *views;
    int nviews;
    struct sql_arena *arena;
};

/* Parses one or more CREATE VIEW statements separated by semicolons. */
struct sql_view_list *sql_parse_views(const char *text, struct sql_error *err);
void sql_view_list_free(struct sql_view_list *list);
const struct sql_view *sql_view_find(const struct sql_view_list *list, const char *name);
int sql_view_column_find(const struct sql_view *view, const char *name);

/* Renders a filter canonically ("(payment_type = 1 AND fare_amount > 0)"),
 * the text two equal filters share. Returns the bytes it needed (snprintf). */
size_t sql_filter_format(const struct sql_view *view, const struct sql_filter *f,
                         char *buf, size_t len);

/* ---- Asks -------------------------------------------------------------- */

enum sql_ask_cond_kind {
    SQL_COND_EQ, SQL_COND_NE, SQL_COND_IN, SQL_COND_NOT_IN,
    SQL_COND_IS_NULL, SQL_COND_IS_NOT_NULL,
    SQL_COND_LT, SQL_COND_LE, SQL_COND_GT, SQL_COND_GE, /* ranges: C collation for text */
    SQL_COND_LIKE, SQL_COND_ILIKE,                       /* text keys and dim columns */
};

/* A predicate on one key or dim column of the view. */
struct sql_ask_cond {
    int view_column;
    enum sql_ask_cond_kind kind;
    const struct sql_operand *values; /* one; IN, NOT IN: nvalues; IS: none */
    int nvalues;
    int line, column;
};

/* The WHERE clause's conditions on keys and dim columns as a tree: AND, OR
 * and NOT over leaves, each a condition (ask->conds[cond]). `col BETWEEN a
 * AND b` is two leaves under AND; NOT BETWEEN and NOT LIKE wrap them in
 * NOT. The bucket range is not in it: it stands in the top-level AND. */
enum sql_pred_kind { SQL_PRED_COND, SQL_PRED_AND, SQL_PRED_OR, SQL_PRED_NOT };

struct sql_pred {
    enum sql_pred_kind kind;
    const struct sql_pred *left, *right; /* AND, OR: both; NOT: left */
    int cond;                            /* COND: index into the leaves */
};

/* HAVING: comparisons of measures (after the roll-up) with values, under
 * AND, OR and NOT; leaf i is having[i]. */
struct sql_having_cmp {
    int view_column;               /* a measure */
    enum sql_cmp cmp;
    struct sql_operand value;
    int line, column;
};

/* What an output column of an ask is. */
enum sql_ask_column_kind { SQL_ASK_BUCKET, SQL_ASK_KEY, SQL_ASK_MEASURE };

struct sql_ask_column {
    const char *name;
    enum sql_ask_column_kind kind;
    int view_column;   /* KEY, MEASURE: index into view->columns */
};

struct sql_ask_order {
    int output_column; /* index into ask->columns */
    bool descending;
    bool nulls_first;  /* PostgreSQL's default: last when ascending */
};

/* What a parameter must be bound to, inferred from where it appears. */
enum sql_param_kind {
    SQL_PARAM_TIMESTAMP, /* a bucket range edge */
    SQL_PARAM_KEY,       /* compared with view column `view_column` */
    SQL_PARAM_COUNT,     /* LIMIT or OFFSET: a non-negative integer */
    SQL_PARAM_MEASURE,   /* compared with measure `view_column` in HAVING */
};

struct sql_param {
    enum sql_param_kind kind;
    int view_column;     /* KEY only */
    int line, column;    /* first use */
};

/* A calendar unit of date_trunc(unit, bucket [, zone]). */
enum sql_time_unit {
    SQL_UNIT_SECOND, SQL_UNIT_MINUTE, SQL_UNIT_HOUR, SQL_UNIT_DAY, SQL_UNIT_WEEK,
    SQL_UNIT_MONTH, SQL_UNIT_QUARTER, SQL_UNIT_YEAR,
};
/* "day" for SQL_UNIT_DAY. */
const char *sql_time_unit_name(enum sql_time_unit unit);

struct sql_ask {
    const struct sql_view *view;
    const char *text;

    const struct sql_ask_column *columns;
    int ncolumns;

    /* Grouping: by time and/or by keys; ungrouped asks answer one row. By
     * time is either bins of bucket_width from bucket_origin (the bucket
     * itself: the finest width from the view's origin; date_bin: any
     * multiple of the finest width, from an origin on a finest edge) or,
     * when bucket_calendar, date_trunc's calendar unit in bucket_zone (NULL:
     * the ask's time zone), composed from the cells at bind (engine). */
    bool group_by_bucket;
    int64_t bucket_width;          /* usec; the finest width unless re-bucketed */
    int64_t bucket_origin;         /* usec since the epoch */
    bool bucket_calendar;
    enum sql_time_unit bucket_unit;
    const char *bucket_zone;
    const int *group_keys;         /* view column indices: FACT_KEY or DIM */
    int ngroup_keys;

    /* The range: the view's buckets whose start satisfies bucket >= from
     * (or > from) and bucket < to (or <= to); either side may be absent
     * (all time). BETWEEN a AND b is >= a and <= b. */
    bool has_range_from, has_range_to;
    bool range_from_inclusive;     /* >= rather than > */
    bool range_to_inclusive;       /* <= rather than < */
    struct sql_operand range_from;
    struct sql_operand range_to;
    const struct sql_ask_cond *conds;
    int nconds;
    const struct sql_pred *where;  /* over conds; NULL: every row */
    const struct sql_having_cmp *having;
    int nhaving;
    const struct sql_pred *having_pred; /* over having; NULL: every group */

    const struct sql_ask_order *order;
    int norder;
    bool has_limit, has_offset;
    struct sql_operand limit, offset;

    const struct sql_param *params; /* params[i] describes $(i+1) */
    int nparams;

    struct sql_arena *arena;
};

/* Compiles an ask against the views it may name. */
struct sql_ask *sql_parse_ask(const char *text, const struct sql_view_list *views,
                              struct sql_error *err);
void sql_ask_free(struct sql_ask *ask);
/* Bytes a compiled ask holds (its arena), for a cache bounded in memory. */
size_t sql_ask_bytes(const struct sql_ask *ask);

/* Limits that keep a hostile text from costing more than it is worth. */
#define SQL_MAX_TEXT_BYTES (1u << 20)
#define SQL_MAX_DEPTH 64
#define SQL_MAX_PARAMS 256
/* The longest bucket width (date_bin's interval and every width of a view):
 * 100 years. The store's span arithmetic (64 buckets a span, from any
 * origin, at any time it keeps: STORE_MIN_TIME..STORE_MAX_TIME) must fit in
 * int64, and with widths of millennia it would not (fuzz_view checks it). */
#define SQL_MAX_WIDTH_USEC (36525LL * SQL_USEC_PER_DAY)

#endif
