/* test_ingest_width.c -- the widest view ingest takes (INGEST_MAX_VIEW_WIDTH
 * cell keys, dim columns a join) is read, and one more is refused with a
 * message naming the view, what is too wide and the limit, by the function
 * both plan and run read the views file with (ingest_read_views). */
#include "ingest/internal.h"
#include "tests/unit/wide_view.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Writes a wide view into a temp file and reads it the way plan and run do. */
static struct sql_view_list *read_wide(int nkeys, int ndims, char *err, size_t errlen)
{
    char path[] = "/tmp/straum-width-XXXXXX";
    int fd = mkstemp(path);
    cr_assert_geq(fd, 0);
    char *sql = wide_view_sql(nkeys, ndims);
    cr_assert_eq(write(fd, sql, strlen(sql)), (ssize_t)strlen(sql));
    close(fd);
    free(sql);
    char *text = NULL;
    struct sql_view_list *views = ingest_read_views(path, &text, err, errlen);
    free(text);
    unlink(path);
    return views;
}

Test(ingest_width, the_widest_view_is_read_and_one_more_is_refused)
{
    char err[1024];
    /* 255 keys and the join column: 256 cell keys; 256 dim columns. */
    struct sql_view_list *v = read_wide(INGEST_MAX_VIEW_WIDTH - 1, INGEST_MAX_VIEW_WIDTH, err, sizeof err);
    cr_assert_not_null(v, "%s", err);
    cr_assert_eq(v->views[0].ncell_keys, INGEST_MAX_VIEW_WIDTH);
    sql_view_list_free(v);

    cr_assert_null(read_wide(INGEST_MAX_VIEW_WIDTH, 1, err, sizeof err));
    cr_assert(strstr(err, "\"wide\"") && strstr(err, "257 cell keys") && strstr(err, "limit is 256"),
              "%s", err);
    cr_assert_null(read_wide(1, INGEST_MAX_VIEW_WIDTH + 1, err, sizeof err));
    cr_assert(strstr(err, "\"wide\"") && strstr(err, "257 columns of z") && strstr(err, "limit is 256"),
              "%s", err);
}
