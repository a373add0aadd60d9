/* test_base_listen.c -- listen addresses: the forms, and the messages for
 * each refusal. Numeric hosts only, so the test needs no resolver. */
#include "base/listen.h"

#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <netinet/in.h>
#include <string.h>

static struct sockaddr_storage ok(const char *text)
{
    struct sockaddr_storage ss;
    socklen_t len = 0;
    char err[300] = "";
    cr_assert_eq(listen_parse("--listen", text, &ss, &len, err, sizeof err), 0, "%s: %s", text,
                 err);
    cr_assert(len > 0);
    return ss;
}

static void refused(const char *text, const char *says)
{
    struct sockaddr_storage ss;
    socklen_t len = 0;
    char err[300] = "";
    cr_assert_eq(listen_parse("--metrics-listen", text, &ss, &len, err, sizeof err), -1,
                 "accepted %s", text);
    cr_assert(strncmp(err, "--metrics-listen ", 17) == 0 && strstr(err, says), "%s: %s", text,
              err);
}

Test(base_listen, forms)
{
    struct sockaddr_storage ss = ok("127.0.0.1:8080");
    cr_assert_eq(ss.ss_family, AF_INET);
    cr_assert_eq(ntohs(((struct sockaddr_in *)&ss)->sin_port), 8080);
    ss = ok(":9187"); /* loopback */
    cr_assert_eq(ss.ss_family, AF_INET);
    cr_assert_eq(ntohl(((struct sockaddr_in *)&ss)->sin_addr.s_addr), INADDR_LOOPBACK);
    ss = ok("[::1]:0");
    cr_assert_eq(ss.ss_family, AF_INET6);
    ss = ok("0.0.0.0:65535");
    cr_assert_eq(ntohs(((struct sockaddr_in *)&ss)->sin_port), 65535);
}

Test(base_listen, refusals)
{
    refused("nonsense", "expected host:port");
    refused("[::1]8080", "expected [address]:port");
    refused("[::1", "expected [address]:port");
    refused("::1:8080", "in brackets");
    refused("127.0.0.1:", "from 0 to 65535");
    refused("127.0.0.1:65536", "from 0 to 65535");
    refused("127.0.0.1:-1", "from 0 to 65535");
    refused("127.0.0.1:+80", "from 0 to 65535");
    refused("127.0.0.1: 80", "from 0 to 65535");
    refused("127.0.0.1:999999", "from 0 to 65535");
    refused("127.0.0.1:http", "from 0 to 65535");
}
