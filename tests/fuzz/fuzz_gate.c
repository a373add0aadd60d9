/* fuzz_gate.c -- libFuzzer target for the front gate's classifier
 * (serve/gate.c, gate_classify and gate_refusal): the first bytes of a
 * connection, as the gate peeks at them.
 *
 * Checks, for every input:
 *   - every prefix is classified (ASan/UBSan watch the reads);
 *   - the gate decides once: the first prefix with a verdict other than
 *     GATE_MORE gives that verdict (and peer) for every longer prefix (the
 *     invariant in gate.h), so bytes arriving one at a time are judged as
 *     if they came at once;
 *   - an ended connection, or a full peek, always gets a verdict (never
 *     GATE_MORE: the gate never waits on what cannot come);
 *   - GATE_PASS only for bytes that open with a method byte after any
 *     empty lines, and never for an input with a NUL in its request line;
 *   - every refusal has a status, a code and a message fit for JSON
 *     (no quote, backslash or control byte). */
#include "serve/gate.h"
#include "tests/fuzz/fuzz_check.h"

#include <stdint.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_refusal(const struct gate_look *look)
{
    const char *code = NULL;
    char msg[400];
    int status = gate_refusal(look, "127.0.0.1:5433", &code, msg, sizeof msg);
    bool refusal = look->verdict != GATE_MORE && look->verdict != GATE_PASS &&
                   look->verdict != GATE_CLOSED;
    CHECK(refusal == (status != 0));
    if (!refusal)
        return;
    CHECK(status == 400 || status == 414 || status == 505);
    CHECK(code && *code);
    CHECK(*msg);
    for (const char *m = msg; *m; m++)
        CHECK(*m != '"' && *m != '\\' && (unsigned char)*m >= 0x20);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > GATE_PEEK_MAX)
        size = GATE_PEEK_MAX;
    /* Every prefix up to 600 bytes, then every 97th (a quadratic walk of
     * 16 KiB inputs would starve the fuzzer). */
    struct gate_look first = {.verdict = GATE_MORE};
    for (size_t n = 0; n <= size; n += n < 600 ? 1 : 97) {
        struct gate_look look;
        gate_classify(data, n, false, &look);
        check_refusal(&look);
        if (first.verdict == GATE_MORE) {
            first = look;
        } else {
            CHECK(look.verdict == first.verdict);
            CHECK(look.peer == first.peer);
        }
        if (n == GATE_PEEK_MAX)
            CHECK(look.verdict != GATE_MORE);
    }
    struct gate_look whole, ended;
    gate_classify(data, size, false, &whole);
    gate_classify(data, size, true, &ended);
    check_refusal(&ended);
    CHECK(ended.verdict != GATE_MORE);
    if (whole.verdict != GATE_MORE)
        CHECK(ended.verdict == whole.verdict);
    if (whole.verdict == GATE_PASS) {
        size_t i = 0;
        while (i < size && (data[i] == '\r' || data[i] == '\n'))
            i++;
        CHECK(i < size && data[i] > ' ' && data[i] < 0x7f);
        const uint8_t *lf = memchr(data + i, '\n', size - i);
        CHECK(lf != NULL);
        CHECK(memchr(data + i, 0, (size_t)(lf - data) - i) == NULL);
    }
    return 0;
}
