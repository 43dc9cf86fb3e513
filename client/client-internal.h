/*
 * Pieces of libstageload that tests reach directly; not installed.
 */
#ifndef SL_CLIENT_INTERNAL_H
#define SL_CLIENT_INTERNAL_H

#include <stddef.h>

#define CLIENT_SYSTEM_SOCKET "/var/run/stageload.sock"

/*
 * The resolution order of sl_socket_path() with every input explicit, so
 * it can be tested without touching the environment or /var/run. NULL or
 * "" means unset; system_path is used when it exists.
 */
int client_socket_path_resolve(const char *explicit_path,
                               const char *env_socket, const char *system_path,
                               const char *xdg_runtime, unsigned long uid,
                               char *buf, size_t len);

#endif
