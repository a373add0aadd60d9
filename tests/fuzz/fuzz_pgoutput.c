/* fuzz_pgoutput.c -- libFuzzer target for ingest/pgoutput.c.
 *
 * The first input byte picks the protocol: version (b & 3) + 1, and
 * in_stream when b & 4 is set and the version is at least 2. The rest is
 * decoded twice:
 *  1. as a pgoutput message;
 *  2. as a replication frame ('w' or 'k'), and a 'w' frame's payload again
 *     as a pgoutput message.
 * Nothing may crash or read out of bounds; a failure must leave a message
 * and a zeroed output. Whatever decodes must re-encode (never to more bytes
 * than it came from), decode again to equal fields, and re-encode to the
 * same bytes; otherwise the target aborts. */
#include "ingest/pgoutput.h"

#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static bool zeroed(const void *p, size_t n)
{
    const uint8_t *b = p;
    for (size_t i = 0; i < n; i++)
        if (b[i] != 0)
            return false;
    return true;
}

static void check_message(const uint8_t *buf, size_t len, int version, bool in_stream)
{
    struct pgo_message m1, m2;
    char err[256];

    if (pgo_decode(buf, len, version, in_stream, &m1, err, sizeof err) != 0) {
        if (err[0] == '\0' || !zeroed(&m1, sizeof m1))
            abort();
        pgo_message_free(&m1);
        return;
    }
    size_t need = pgo_encode(&m1, version, in_stream, NULL, 0);
    if (need == 0 || need > len)
        abort();
    uint8_t *enc1 = malloc(need), *enc2 = malloc(need);
    if (enc1 == NULL || enc2 == NULL)
        abort();
    if (pgo_encode(&m1, version, in_stream, enc1, need) != need)
        abort();
    if (pgo_decode(enc1, need, version, in_stream, &m2, err, sizeof err) != 0)
        abort();
    if (!pgo_message_equal(&m1, &m2))
        abort();
    if (pgo_encode(&m2, version, in_stream, enc2, need) != need || memcmp(enc1, enc2, need) != 0)
        abort();
    pgo_message_free(&m2);
    pgo_message_free(&m1);
    free(enc2);
    free(enc1);
}

static void check_frame(const uint8_t *buf, size_t len, int version, bool in_stream)
{
    struct wal_frame f1, f2;
    char err[256];

    if (wal_frame_decode(buf, len, &f1, err, sizeof err) != 0) {
        if (err[0] == '\0' || f1.kind != 0 || f1.payload != NULL)
            abort();
        return;
    }
    size_t need = wal_frame_encode(&f1, NULL, 0);
    if (need != len)
        abort();
    uint8_t *enc = malloc(need);
    if (enc == NULL || wal_frame_encode(&f1, enc, need) != need)
        abort();
    if (wal_frame_decode(enc, need, &f2, err, sizeof err) != 0)
        abort();
    if (f1.kind != f2.kind || f1.wal_start != f2.wal_start || f1.wal_end != f2.wal_end ||
        f1.send_time != f2.send_time || f1.reply_requested != f2.reply_requested ||
        f1.payload_len != f2.payload_len ||
        (f1.payload_len > 0 && memcmp(f1.payload, f2.payload, f1.payload_len) != 0))
        abort();
    free(enc);

    if (f1.kind == 'w')
        check_message(f1.payload, f1.payload_len, version, in_stream);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    int version = (data[0] & 3) + 1;
    bool in_stream = (data[0] & 4) != 0 && version >= 2;

    /* An exact-size copy so that over-reads past the message are caught
     * even where libFuzzer's buffer would have slack. */
    size_t len = size - 1;
    uint8_t *buf = malloc(len > 0 ? len : 1);
    if (buf == NULL)
        abort();
    if (len > 0)
        memcpy(buf, data + 1, len);

    check_message(len > 0 ? buf : NULL, len, version, in_stream);
    check_frame(len > 0 ? buf : NULL, len, version, in_stream);
    free(buf);
    return 0;
}
