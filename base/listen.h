/* listen.h -- listen addresses (--listen, --metrics-listen): "host:port",
 * "[v6address]:port" or ":port" (loopback, 127.0.0.1). A bare IPv6 address
 * without brackets is refused (its last ':' would read as the port's). */
#ifndef STRAUM_BASE_LISTEN_H
#define STRAUM_BASE_LISTEN_H

#include <stddef.h>
#include <sys/socket.h>

/* Parses and resolves text (numeric port 0 to 65535; the host through
 * getaddrinfo, first answer taken) into *addr and *addrlen: 0, or -1 with
 * a message in err that starts with "<option> <text>: ", option being the
 * flag the text came from. */
int listen_parse(const char *option, const char *text, struct sockaddr_storage *addr,
                 socklen_t *addrlen, char *err, size_t errlen);

#endif
