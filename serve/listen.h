/* listen.h -- listening sockets, shared by the HTTP and PostgreSQL front
 * doors (implemented in http.c). Private to serve/. */
#ifndef STRAUM_SERVE_LISTEN_H
#define STRAUM_SERVE_LISTEN_H

#include <stdbool.h>
#include <stddef.h>

/* Resolves where ("host:port", "[v6]:port", ":port" for loopback), binds
 * and listens (SO_REUSEPORT when asked); *fd nonblocking, *port and addr
 * ("127.0.0.1:5433") as bound. option names the flag in messages. 0, or -1
 * with a message in err. */
int serve_listen_socket(const char *option, const char *where, bool reuse_port, int *fd,
                        int *port, char *addr, size_t addrlen, char *err, size_t errlen);

/* The loopback rule for an address: 0 when where is loopback, or a token
 * or --public allows it; else -1 with a message in err. */
int serve_check_listen(const char *option, const char *where, bool token, bool public_bind,
                       char *err, size_t errlen);

#endif
