/* test_base_buf.c -- the growable buffer and the JSON string writer.
 *
 * The UTF-8 rule is Unicode 15, Table 3-7 ("Well-Formed UTF-8 Byte
 * Sequences"), written out below as its own table so that the test does not
 * share the writer's code: every lead byte 0x00-0xFF, each followed by
 * continuation bytes at the edges of the table's ranges, must come out as the
 * table says (a well-formed sequence copied, each other byte as U+FFFD), and
 * the output must always be well-formed UTF-8. */
#include "base/buf.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

/* Table 3-7, one row a range of lead bytes: the bytes after it, each within
 * [lo, hi]. */
static const struct {
    unsigned char lead_lo, lead_hi;
    int n; /* bytes in the sequence, the lead included */
    unsigned char lo[3], hi[3];
} table_3_7[] = {
    {0x00, 0x7F, 1, {0}, {0}},
    {0xC2, 0xDF, 2, {0x80}, {0xBF}},
    {0xE0, 0xE0, 3, {0xA0, 0x80}, {0xBF, 0xBF}},
    {0xE1, 0xEC, 3, {0x80, 0x80}, {0xBF, 0xBF}},
    {0xED, 0xED, 3, {0x80, 0x80}, {0x9F, 0xBF}},
    {0xEE, 0xEF, 3, {0x80, 0x80}, {0xBF, 0xBF}},
    {0xF0, 0xF0, 4, {0x90, 0x80, 0x80}, {0xBF, 0xBF, 0xBF}},
    {0xF1, 0xF3, 4, {0x80, 0x80, 0x80}, {0xBF, 0xBF, 0xBF}},
    {0xF4, 0xF4, 4, {0x80, 0x80, 0x80}, {0x8F, 0xBF, 0xBF}},
};

/* The length of the well-formed sequence at p (at most len bytes), 0 if none. */
static int well_formed_at(const unsigned char *p, size_t len)
{
    for (size_t r = 0; r < sizeof table_3_7 / sizeof table_3_7[0]; r++) {
        if (p[0] < table_3_7[r].lead_lo || p[0] > table_3_7[r].lead_hi)
            continue;
        int n = table_3_7[r].n;
        if ((size_t)n > len)
            return 0;
        for (int i = 1; i < n; i++)
            if (p[i] < table_3_7[r].lo[i - 1] || p[i] > table_3_7[r].hi[i - 1])
                return 0;
        return n;
    }
    return 0;
}

static bool is_well_formed(const unsigned char *p, size_t len)
{
    for (size_t i = 0; i < len;) {
        int n = well_formed_at(p + i, len - i);
        if (!n)
            return false;
        i += (size_t)n;
    }
    return true;
}

/* What buf_json_string must write for s, by the table. */
static void expected_json(struct buf *out, const unsigned char *s, size_t len)
{
    buf_put(out, "\"", 1);
    for (size_t i = 0; i < len;) {
        int n = well_formed_at(s + i, len - i);
        if (n == 1 && (s[i] == '"' || s[i] == '\\')) {
            char esc[2] = {'\\', (char)s[i]};
            buf_put(out, esc, 2);
        } else if (n == 1 && s[i] < 0x20) {
            buf_printf(out, "\\u%04x", s[i]);
        } else if (n) {
            buf_put(out, s + i, (size_t)n);
        } else {
            buf_put(out, "\xEF\xBF\xBD", 3);
            n = 1;
        }
        i += (size_t)n;
    }
    buf_put(out, "\"", 1);
}

static void check(const unsigned char *s, size_t len)
{
    struct buf got = {0}, want = {0};
    buf_json_string(&got, (const char *)s, len);
    expected_json(&want, s, len);
    char hex[64] = "";
    for (size_t i = 0; i < len && i < 12; i++)
        snprintf(hex + 3 * i, 4, "%02X ", s[i]);
    cr_assert(!got.failed && !want.failed);
    cr_assert(is_well_formed((const unsigned char *)got.data, got.len),
              "output for %s is not well-formed UTF-8", hex);
    cr_assert(got.len == want.len && memcmp(got.data, want.data, got.len) == 0,
              "input %s: wrote %zu bytes, the table says %zu", hex, got.len, want.len);
    buf_free(&got);
    buf_free(&want);
}

/* Every lead byte, followed by 0-3 bytes drawn from the edges of the ranges
 * in the table (and bytes outside them), at the end of the input and with
 * an ASCII byte after it. */
Test(base_buf, every_lead_byte)
{
    static const unsigned char follow[] = {0x00, 0x41, 0x7F, 0x80, 0x8F, 0x90, 0x9F,
                                           0xA0, 0xBF, 0xC0, 0xC2, 0xE0, 0xF4, 0xFF};
    const size_t nf = sizeof follow;
    for (unsigned lead = 0; lead <= 0xFF; lead++) {
        unsigned char s[6] = {(unsigned char)lead};
        check(s, 1);
        for (size_t a = 0; a < nf; a++) {
            s[1] = follow[a];
            check(s, 2);
            for (size_t b = 0; b < nf; b++) {
                s[2] = follow[b];
                check(s, 3);
                for (size_t c = 0; c < nf; c++) {
                    s[3] = follow[c];
                    check(s, 4);
                    s[4] = 'x';
                    check(s, 5);
                }
            }
        }
    }
}

static void json_is(const char *in, size_t len, const char *want)
{
    struct buf b = {0};
    buf_json_string(&b, in, len);
    cr_assert_str_eq(b.data, want);
    buf_free(&b);
}

#define FFFD "\xEF\xBF\xBD"

/* The boundaries, written out by hand. */
Test(base_buf, boundaries)
{
    json_is("", 0, "\"\"");
    json_is("a\"b\\c", 5, "\"a\\\"b\\\\c\"");
    json_is("\x00\x1F\x7F", 3, "\"\\u0000\\u001f\x7F\"");
    json_is("\xC2\x80", 2, "\"\xC2\x80\"");                    /* U+0080 */
    json_is("\xDF\xBF", 2, "\"\xDF\xBF\"");                    /* U+07FF */
    json_is("\xC0\x80", 2, "\"" FFFD FFFD "\"");               /* overlong U+0000 */
    json_is("\xC1\xBF", 2, "\"" FFFD FFFD "\"");               /* overlong U+007F */
    json_is("\xE0\xA0\x80", 3, "\"\xE0\xA0\x80\"");            /* U+0800 */
    json_is("\xE0\x9F\xBF", 3, "\"" FFFD FFFD FFFD "\"");      /* overlong U+07FF */
    json_is("\xED\x9F\xBF", 3, "\"\xED\x9F\xBF\"");            /* U+D7FF */
    json_is("\xED\xA0\x80", 3, "\"" FFFD FFFD FFFD "\"");      /* surrogate U+D800 */
    json_is("\xED\xBF\xBF", 3, "\"" FFFD FFFD FFFD "\"");      /* surrogate U+DFFF */
    json_is("\xEE\x80\x80", 3, "\"\xEE\x80\x80\"");            /* U+E000 */
    json_is("\xEF\xBF\xBF", 3, "\"\xEF\xBF\xBF\"");            /* U+FFFF */
    json_is("\xF0\x90\x80\x80", 4, "\"\xF0\x90\x80\x80\"");    /* U+10000 */
    json_is("\xF0\x8F\xBF\xBF", 4, "\"" FFFD FFFD FFFD FFFD "\""); /* overlong U+FFFF */
    json_is("\xF4\x8F\xBF\xBF", 4, "\"\xF4\x8F\xBF\xBF\"");    /* U+10FFFF */
    json_is("\xF4\x90\x80\x80", 4, "\"" FFFD FFFD FFFD FFFD "\""); /* U+110000 */
    json_is("\xF5\x80\x80", 3, "\"" FFFD FFFD FFFD "\"");      /* no lead past F4 */
    json_is("\xFF\xBF\xBF", 3, "\"" FFFD FFFD FFFD "\"");
    json_is("\xE2\x82", 2, "\"" FFFD FFFD "\"");               /* cut short */
    json_is("\xE2\x82" "A", 3, "\"" FFFD FFFD "A\"");
    json_is("\xE2\x82\xAC", 3, "\"\xE2\x82\xAC\"");            /* the euro sign */
}

Test(base_buf, grows_and_frees)
{
    struct buf b = {0};
    for (int i = 0; i < 10000; i++)
        buf_printf(&b, "%d,", i % 10);
    cr_assert_eq(b.len, 20000);
    cr_assert_eq(b.data[b.len], '\0');
    buf_puts(&b, "end");
    cr_assert_str_eq(b.data + 20000, "end");
    buf_free(&b);
    cr_assert(b.data == NULL && b.len == 0 && b.cap == 0);
}

/* int64_text writes what printf's "%lld" writes, at the edges and between. */
Test(base_buf, int64_text_is_printf)
{
    const int64_t edges[] = {0, 1, -1, 9, 10, -10, 99, 100, 123456789, -987654321,
                             INT64_MAX, INT64_MIN, INT64_MAX - 1, INT64_MIN + 1,
                             1000000000000000000, -1000000000000000000};
    for (size_t i = 0; i < sizeof edges / sizeof *edges; i++) {
        char got[INT64_TEXT_BYTES + 1], want[32];
        int n = int64_text(edges[i], got);
        got[n] = '\0';
        snprintf(want, sizeof want, "%lld", (long long)edges[i]);
        cr_assert_str_eq(got, want);
    }
    uint64_t x = 88172645463325252u; /* xorshift64: values of every length */
    for (int i = 0; i < 100000; i++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        int64_t v = (int64_t)(x >> (x % 64));
        if (i & 1)
            v = -v;
        char got[INT64_TEXT_BYTES + 1], want[32];
        got[int64_text(v, got)] = '\0';
        snprintf(want, sizeof want, "%lld", (long long)v);
        cr_assert_str_eq(got, want);
    }
    struct buf b = {0};
    buf_put_int64(&b, -42);
    buf_put_int64(&b, 7);
    cr_assert_str_eq(b.data, "-427");
    buf_free(&b);
}
