/* agg.c -- the aggregates' names, in one table indexed by enum sql_agg:
 * the function each is written with, the label /views and straum-dump give
 * it, and its form (f(*), f(col), f(DISTINCT col), f(fraction) WITHIN
 * GROUP (ORDER BY col)). The view parser finds an aggregate by its function
 * here, the engine labels measures with it, straum-dump and straum-shell
 * write each measure's SQL from it (sql_agg_format).
 *
 * Each row is tied to its enumerator by a designated initializer, so that
 * reordering the enum cannot shift a name onto another aggregate; a row
 * left out is NULL, which tests/unit/test_sql_agg.c catches (every
 * enumerator has its names, and each parses back to it). */
#include "sql/sql.h"

#include <stdio.h>
#include <string.h>

const struct sql_agg_info sql_aggs[SQL_NAGGS] = {
    [SQL_AGG_COUNT_STAR] = {"count", "count(*)", SQL_AGG_FORM_STAR},
    [SQL_AGG_COUNT] = {"count", "count", SQL_AGG_FORM_COLUMN},
    [SQL_AGG_COUNT_DISTINCT] = {"count", "count distinct", SQL_AGG_FORM_DISTINCT},
    [SQL_AGG_SUM] = {"sum", "sum", SQL_AGG_FORM_COLUMN},
    [SQL_AGG_AVG] = {"avg", "avg", SQL_AGG_FORM_COLUMN},
    [SQL_AGG_MIN] = {"min", "min", SQL_AGG_FORM_COLUMN},
    [SQL_AGG_MAX] = {"max", "max", SQL_AGG_FORM_COLUMN},
    [SQL_AGG_PERCENTILE_DISC] = {"percentile_disc", "percentile_disc",
                                 SQL_AGG_FORM_WITHIN_GROUP},
    [SQL_AGG_PERCENTILE_CONT] = {"percentile_cont", "percentile_cont",
                                 SQL_AGG_FORM_WITHIN_GROUP},
};

const char *sql_agg_label(enum sql_agg a)
{
    return (unsigned)a < SQL_NAGGS && sql_aggs[a].label ? sql_aggs[a].label : "?";
}

int sql_agg_by_function(const char *name)
{
    for (int a = 0; a < SQL_NAGGS; a++)
        if ((sql_aggs[a].form == SQL_AGG_FORM_COLUMN ||
             sql_aggs[a].form == SQL_AGG_FORM_WITHIN_GROUP) &&
            sql_aggs[a].function && strcmp(sql_aggs[a].function, name) == 0)
            return a;
    return -1;
}

int sql_agg_by_label(const char *label)
{
    for (int a = 0; a < SQL_NAGGS; a++)
        if (sql_aggs[a].label && strcmp(sql_aggs[a].label, label) == 0)
            return a;
    return -1;
}

int sql_agg_format(enum sql_agg agg, const char *col, const char *fraction, char *buf, size_t len)
{
    const struct sql_agg_info *a = (unsigned)agg < SQL_NAGGS ? &sql_aggs[agg] : NULL;
    if (!a || !a->function)
        return snprintf(buf, len, "?");
    switch (a->form) {
    case SQL_AGG_FORM_STAR: return snprintf(buf, len, "%s(*)", a->function);
    case SQL_AGG_FORM_DISTINCT: return snprintf(buf, len, "%s(DISTINCT %s)", a->function, col);
    case SQL_AGG_FORM_WITHIN_GROUP:
        return snprintf(buf, len, "%s(%s) WITHIN GROUP (ORDER BY %s)", a->function,
                        fraction ? fraction : "?", col);
    case SQL_AGG_FORM_COLUMN: break;
    }
    return snprintf(buf, len, "%s(%s)", a->function, col);
}
