/* pg_auth.c -- SCRAM-SHA-256 (RFC 5802 with SHA-256, RFC 7677) as
 * PostgreSQL runs it (protocol "SASL Authentication"), the token of
 * --token-file as the password, with OpenSSL's libcrypto for PBKDF2, HMAC
 * and SHA-256 rather than hand-written ones.
 *
 * The server's secret is computed once per process (pg_scram_secret_init):
 * one random salt and 4096 PBKDF2 iterations, as PostgreSQL stores a
 * role's SCRAM verifier; a connection costs two HMACs and a hash, not the
 * iterations. Channel binding (SCRAM-SHA-256-PLUS) needs TLS and is not
 * offered; a client that demands it ("p=" in its header) is refused. */
#include "serve/pg.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>
#include <openssl/sha.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SASL_AUTH 10
#define SASL_CONTINUE 11
#define SASL_FINAL 12

int pg_scram_secret_init(struct pg_scram_secret *s, const char *password)
{
    s->iterations = PG_SCRAM_ITERATIONS;
    if (RAND_bytes(s->salt, sizeof s->salt) != 1)
        return -1;
    if (PKCS5_PBKDF2_HMAC(password, (int)strlen(password), s->salt, sizeof s->salt,
                          s->iterations, EVP_sha256(), sizeof s->salted, s->salted) != 1)
        return -1;
    return 0;
}

static void hmac(const unsigned char key[32], const void *msg, size_t len, unsigned char out[32])
{
    unsigned int n = 32;
    HMAC(EVP_sha256(), key, 32, msg, len, out, &n);
}

static int b64_encode(const unsigned char *in, size_t n, char *out, size_t cap)
{
    if (4 * ((n + 2) / 3) + 1 > cap)
        return -1;
    return EVP_EncodeBlock((unsigned char *)out, in, (int)n);
}

/* Base64 into out; the decoded length, or -1. */
static int b64_decode(const char *in, size_t n, unsigned char *out, size_t cap)
{
    if (n % 4 || 3 * (n / 4) > cap)
        return -1;
    int k = EVP_DecodeBlock(out, (const unsigned char *)in, (int)n);
    if (k < 0)
        return -1;
    for (size_t i = n; i > 0 && in[i - 1] == '='; i--)
        k--;
    return k;
}

static void put_auth(struct buf *b, int32_t code, const void *data, size_t len)
{
    size_t at = pg_msg_begin(b, 'R');
    pg_put_int32(b, code);
    buf_put(b, data, len);
    pg_msg_end(b, at);
}

static int broken(struct pg_conn *c, const char *why)
{
    pg_put_error(&c->out, "FATAL", "08P01", why, NULL, 0);
    return -1;
}

/* The value of attribute "k=" in a SCRAM message, up to the next comma. */
static const char *attr(const char *msg, char k, size_t *len)
{
    for (const char *p = msg; p && *p; p = strchr(p, ',')) {
        if (*p == ',')
            p++;
        if (p[0] == k && p[1] == '=') {
            const char *end = strchr(p + 2, ',');
            *len = end ? (size_t)(end - p - 2) : strlen(p + 2);
            return p + 2;
        }
    }
    return NULL;
}

int pg_auth_scram(struct pg_conn *c, const struct pg_scram_secret *secret,
                  const struct pg_auth_io *io)
{
    static const char mechs[] = "SCRAM-SHA-256\0";
    put_auth(&c->out, SASL_AUTH, mechs, sizeof mechs);
    if (io->flush(c))
        return -1;
    unsigned char *body = NULL;
    size_t len;
    if (io->read_password(c, &body, &len))
        return -1;
    /* SASLInitialResponse: mechanism, then the client-first message. */
    struct pg_reader r = {body, len, false};
    const char *mech = pg_get_cstr(&r);
    int32_t n = pg_get_int32(&r);
    const unsigned char *first = n >= 0 ? pg_get_bytes(&r, (size_t)n) : NULL;
    char client_first[512];
    if (r.bad || !first || strcmp(mech, "SCRAM-SHA-256") || (size_t)n >= sizeof client_first ||
        memchr(first, 0, (size_t)n)) {
        free(body);
        return broken(c, "expected a SCRAM-SHA-256 initial response");
    }
    memcpy(client_first, first, (size_t)n);
    client_first[n] = '\0';
    free(body);
    /* gs2 header: "n,," or "y,," (no channel binding), then the bare part. */
    if ((client_first[0] != 'n' && client_first[0] != 'y') || client_first[1] != ',') {
        pg_put_error(&c->out, "FATAL", "08P01",
                     "channel binding is not supported: straum-serve has no TLS",
                     "Connect with channel_binding=disable (libpq's default is prefer).", 0);
        return -1;
    }
    const char *gs2_end = strchr(client_first + 2, ',');
    if (!gs2_end)
        return broken(c, "malformed SCRAM client-first message");
    const char *bare = gs2_end + 1;
    size_t gs2_len = (size_t)(bare - client_first);
    size_t cnonce_len;
    const char *cnonce = attr(bare, 'r', &cnonce_len);
    if (!cnonce || cnonce_len == 0 || cnonce_len > 200)
        return broken(c, "the SCRAM client-first message has no nonce");

    unsigned char rnd[18];
    char snonce[32], salt64[32], server_first[512];
    if (RAND_bytes(rnd, sizeof rnd) != 1)
        return broken(c, "no random bytes for a nonce");
    b64_encode(rnd, sizeof rnd, snonce, sizeof snonce);
    b64_encode(secret->salt, sizeof secret->salt, salt64, sizeof salt64);
    int sf = snprintf(server_first, sizeof server_first, "r=%.*s%s,s=%s,i=%d", (int)cnonce_len,
                      cnonce, snonce, salt64, secret->iterations);
    put_auth(&c->out, SASL_CONTINUE, server_first, (size_t)sf);
    if (io->flush(c))
        return -1;
    if (io->read_password(c, &body, &len))
        return -1;
    char final[1024];
    if (len >= sizeof final || memchr(body, 0, len)) {
        free(body);
        return broken(c, "malformed SCRAM client-final message");
    }
    memcpy(final, body, len);
    final[len] = '\0';
    free(body);
    /* c= must carry the same gs2 header, r= the combined nonce. */
    size_t cb_len, nonce_len, proof_len;
    const char *cb = attr(final, 'c', &cb_len);
    const char *nonce = attr(final, 'r', &nonce_len);
    const char *proof64 = attr(final, 'p', &proof_len);
    char gs2_64[64];
    int g = b64_encode((const unsigned char *)client_first, gs2_len, gs2_64, sizeof gs2_64);
    size_t combined = cnonce_len + strlen(snonce);
    if (!cb || !nonce || !proof64 || g < 0 || cb_len != (size_t)g ||
        memcmp(cb, gs2_64, cb_len) || nonce_len != combined ||
        memcmp(nonce, server_first + 2, combined))
        return broken(c, "the SCRAM client-final message does not match the exchange");
    unsigned char proof[64];
    if (b64_decode(proof64, proof_len, proof, sizeof proof) != 32)
        return broken(c, "the SCRAM proof is not 32 bytes");
    /* AuthMessage = client-first-bare "," server-first "," final-without-proof. */
    char auth[2048];
    size_t without_proof = (size_t)(proof64 - 3 - final);
    int an = snprintf(auth, sizeof auth, "%s,%s,%.*s", bare, server_first, (int)without_proof,
                      final);
    if (an < 0 || (size_t)an >= sizeof auth)
        return broken(c, "the SCRAM exchange is too long");
    unsigned char client_key[32], stored_key[32], signature[32], key[32];
    hmac(secret->salted, "Client Key", 10, client_key);
    SHA256(client_key, 32, stored_key);
    hmac(stored_key, auth, (size_t)an, signature);
    for (int i = 0; i < 32; i++)
        key[i] = proof[i] ^ signature[i];
    unsigned char check[32];
    SHA256(key, 32, check);
    if (CRYPTO_memcmp(check, stored_key, 32) != 0) {
        char msg[160];
        snprintf(msg, sizeof msg, "password authentication failed for user \"%s\"", c->user);
        pg_put_error(&c->out, "FATAL", "28P01", msg,
                     "The password is the token in straum-serve's --token-file.", 0);
        return 1;
    }
    unsigned char server_key[32], server_sig[32];
    hmac(secret->salted, "Server Key", 10, server_key);
    hmac(server_key, auth, (size_t)an, server_sig);
    char v[64] = "v=";
    b64_encode(server_sig, 32, v + 2, sizeof v - 2);
    put_auth(&c->out, SASL_FINAL, v, strlen(v));
    return 0;
}
