/* wide_view.h -- the CREATE VIEW text of a view as wide as asked: nkeys
 * fact keys k0.., a LEFT JOIN to z on f.j with ndims dim columns c0.., and
 * count(*) n, for the tests of the width limits (engine and ingest). */
#ifndef STRAUM_TESTS_UNIT_WIDE_VIEW_H
#define STRAUM_TESTS_UNIT_WIDE_VIEW_H

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>

/* Returns a malloc'd text; fails the test when out of memory. */
static inline char *wide_view_sql(int nkeys, int ndims)
{
    size_t cap = 1 << 17, n = 0;
    char *s = malloc(cap);
    cr_assert_not_null(s);
#define WIDE_ADD(...)                                                                              \
    do {                                                                                           \
        n += (size_t)snprintf(s + n, cap - n, __VA_ARGS__);                                        \
        cr_assert_lt(n, cap);                                                                      \
    } while (0)
    WIDE_ADD("CREATE VIEW wide WITH (buckets = '1 hour') AS\n"
             "SELECT date_bin('1 hour', f.t, timestamptz 'epoch') AS bucket");
    for (int k = 0; k < nkeys; k++)
        WIDE_ADD(", f.k%d AS k%d", k, k);
    for (int d = 0; d < ndims; d++)
        WIDE_ADD(", z.c%d AS c%d", d, d);
    WIDE_ADD(", count(*) AS n FROM public.f AS f LEFT OUTER JOIN public.z AS z ON z.id = f.j "
             "GROUP BY 1");
    for (int i = 2; i <= 1 + nkeys + ndims; i++)
        WIDE_ADD(", %d", i);
    WIDE_ADD(";\n");
#undef WIDE_ADD
    return s;
}

#endif
