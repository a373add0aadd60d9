/* listen.c -- listen addresses to socket addresses (listen.h). */
#include "base/listen.h"

#include "base/error.h"

#include <netdb.h>
#include <stdlib.h>
#include <string.h>

int listen_parse(const char *option, const char *text, struct sockaddr_storage *addr,
                 socklen_t *addrlen, char *err, size_t errlen)
{
    char host[256];
    const char *port;
    if (text[0] == '[') {
        const char *close = strchr(text, ']');
        if (!close || close[1] != ':' || (size_t)(close - text - 1) >= sizeof host)
            return error_fmt(err, errlen, "%s %s: expected [address]:port", option, text);
        memcpy(host, text + 1, (size_t)(close - text - 1));
        host[close - text - 1] = '\0';
        port = close + 2;
    } else {
        const char *colon = strrchr(text, ':');
        if (!colon || (size_t)(colon - text) >= sizeof host)
            return error_fmt(err, errlen, "%s %s: expected host:port, [address]:port or :port",
                             option, text);
        memcpy(host, text, (size_t)(colon - text));
        host[colon - text] = '\0';
        if (strchr(host, ':'))
            return error_fmt(err, errlen,
                             "%s %s: write an IPv6 address in brackets, as [::1]:8080", option,
                             text);
        if (!*host)
            strcpy(host, "127.0.0.1");
        port = colon + 1;
    }
    /* Digits only: strtol would take a sign or spaces. */
    size_t digits = strspn(port, "0123456789");
    if (!*port || port[digits] || digits > 5 || atol(port) > 65535)
        return error_fmt(err, errlen, "%s %s: the port must be a number from 0 to 65535", option,
                         text);
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM,
                             .ai_flags = AI_PASSIVE | AI_NUMERICSERV};
    struct addrinfo *ai = NULL;
    int rc = getaddrinfo(host, port, &hints, &ai);
    if (rc != 0 || !ai) {
        if (ai)
            freeaddrinfo(ai);
        return error_fmt(err, errlen, "%s %s: cannot resolve %s: %s", option, text, host,
                         rc ? gai_strerror(rc) : "no address");
    }
    memcpy(addr, ai->ai_addr, ai->ai_addrlen);
    *addrlen = ai->ai_addrlen;
    freeaddrinfo(ai);
    return 0;
}
