/* test_engine_having.c -- HAVING compares a measure with the value given
 * exactly, as PostgreSQL compares numerics (SPEC.md §3.2): a count or an
 * exact sum is compared with the value read once as a scaled integer
 * (answer.c having_number_read), digits past the measure's scale
 * included. Each ask with HAVING must answer the rows of the same ask
 * without it whose value passes, the value compared here digit by digit.
 * Over the store fixture's rides view (fare a numeric of scale 2, in
 * cents, some negative). */
#include "tests/unit/engine_fixture.h"

#include <cjson/cJSON.h>
#include <criterion/criterion.h>

/* Two plain decimal texts ("-12.345", "+5", ".5") by value: <0, 0, >0. */
static int text_cmp(const char *a, const char *b)
{
    bool na = *a == '-', nb = *b == '-';
    a += *a == '-' || *a == '+';
    b += *b == '-' || *b == '+';
    while (*a == '0')
        a++;
    while (*b == '0')
        b++;
    size_t ia = strcspn(a, "."), ib = strcspn(b, ".");
    bool za = strspn(a, "0.") == strlen(a), zb = strspn(b, "0.") == strlen(b);
    if (za || zb)
        return za && zb ? 0 : za ? (nb ? 1 : -1) : (na ? -1 : 1);
    if (na != nb)
        return na ? -1 : 1;
    int c = ia != ib ? (ia < ib ? -1 : 1) : strncmp(a, b, ia);
    c = (c > 0) - (c < 0);
    const char *fa = a[ia] ? a + ia + 1 : "", *fb = b[ib] ? b + ib + 1 : "";
    while (c == 0 && (*fa || *fb)) {
        char da = *fa ? *fa++ : '0', db = *fb ? *fb++ : '0';
        c = (da > db) - (da < db);
    }
    return na ? -c : c;
}

static bool passes(int c, const char *op)
{
    if (strcmp(op, "=") == 0)
        return c == 0;
    if (strcmp(op, "<>") == 0)
        return c != 0;
    if (strcmp(op, "<") == 0)
        return c < 0;
    if (strcmp(op, "<=") == 0)
        return c <= 0;
    if (strcmp(op, ">") == 0)
        return c > 0;
    return c >= 0;
}

/* The answer to ask, parsed ({"columns": ..., "rows": ...}). */
static cJSON *rows_of(struct engine *e, const char *ask)
{
    struct buf out;
    fixture_ask(e, ask, &out, NULL);
    cJSON *j = cJSON_Parse(out.data);
    cr_assert_not_null(j, "%s", out.data);
    buf_free(&out);
    return j;
}

static const char *value_text(const cJSON *v, char *buf, size_t cap)
{
    if (cJSON_IsString(v))
        return v->valuestring;
    snprintf(buf, cap, "%.0f", v->valuedouble); /* counts: integers */
    return buf;
}

Test(engine_having, counts_and_sums_compare_with_every_digit_of_the_value)
{
    char dir[64];
    struct engine *e = fixture_rides_engine(dir, 5, 3000);
    cJSON *all = rows_of(e, "SELECT zone, kind, n, fare FROM rides GROUP BY zone, kind");
    cJSON *rows = cJSON_GetObjectItem(all, "rows");
    cr_assert_gt(cJSON_GetArraySize(rows), 20);
    /* Values around a fare the answer holds, and a count it holds: equal,
     * a digit past the scale either way, padded, signed, far out. */
    const char *fare0 = cJSON_GetArrayItem(cJSON_GetArrayItem(rows, 3), 3)->valuestring;
    char around[8][64];
    snprintf(around[0], 64, "%s", fare0);
    snprintf(around[1], 64, "%s1", fare0);
    snprintf(around[2], 64, "%s000", fare0);
    snprintf(around[3], 64, "-%s", fare0);
    snprintf(around[4], 64, "-%s9", fare0);
    snprintf(around[5], 64, "+%s", fare0);
    snprintf(around[6], 64, "%.*s", (int)strcspn(fare0, "."), fare0);
    snprintf(around[7], 64, "%.*s5", (int)(strcspn(fare0, ".") + 2), fare0);
    int n0 = (int)cJSON_GetArrayItem(cJSON_GetArrayItem(rows, 3), 2)->valuedouble;
    char count[4][32];
    snprintf(count[0], 32, "%d", n0);
    snprintf(count[1], 32, "%d.0", n0);
    snprintf(count[2], 32, "%d.5", n0);
    snprintf(count[3], 32, "-%d.01", n0);
    const char *fixed[] = {"0", "-0.001", "0.001", ".5", "-12.345", "123456789012345678901234567890",
                           "-99999999999999999999999999999999999999999.5"};
    const char *ops[] = {"=", "<>", "<", "<=", ">", ">="};
    int checked = 0, passed = 0;
    for (int m = 0; m < 2; m++) { /* n, then fare */
        int nvalues = m == 0 ? 4 + 7 : 8 + 7;
        for (int vi = 0; vi < nvalues; vi++) {
            const char *value = m == 0 ? (vi < 4 ? count[vi] : fixed[vi - 4])
                                       : (vi < 8 ? around[vi] : fixed[vi - 8]);
            for (size_t o = 0; o < sizeof ops / sizeof ops[0]; o++) {
                char ask[256];
                snprintf(ask, sizeof ask,
                         "SELECT zone, kind, n, fare FROM rides GROUP BY zone, kind HAVING %s %s %s",
                         m == 0 ? "n" : "fare", ops[o], value);
                cJSON *got = rows_of(e, ask);
                cJSON *grows = cJSON_GetObjectItem(got, "rows");
                int gi = 0;
                for (int i = 0; i < cJSON_GetArraySize(rows); i++) {
                    const cJSON *row = cJSON_GetArrayItem(rows, i);
                    const cJSON *mv = cJSON_GetArrayItem(row, m == 0 ? 2 : 3);
                    char buf[64];
                    if (cJSON_IsNull(mv) || !passes(text_cmp(value_text(mv, buf, sizeof buf), value),
                                                    ops[o]))
                        continue;
                    const cJSON *g = cJSON_GetArrayItem(grows, gi++);
                    cr_assert_not_null(g, "%s: row %d missing", ask, i);
                    char *want = cJSON_PrintUnformatted(row), *have = cJSON_PrintUnformatted(g);
                    cr_assert_str_eq(have, want, "%s", ask);
                    free(want);
                    free(have);
                    passed++;
                }
                cr_assert_eq(gi, cJSON_GetArraySize(grows), "%s: %d rows more than pass",
                             ask, cJSON_GetArraySize(grows) - gi);
                cJSON_Delete(got);
                checked++;
            }
        }
    }
    cr_assert_eq(checked, 6 * (11 + 15));
    cr_assert_gt(passed, 1000);
    cJSON_Delete(all);
    engine_close(e);
    fixture_remove(dir);
}
