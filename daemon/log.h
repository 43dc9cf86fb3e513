/* The daemon's one log API, after OpenBSD's log.h. */
#ifndef SL_LOG_H
#define SL_LOG_H

#include <stdarg.h>
#include <stddef.h>

void log_init(int foreground, int verbose);
void log_setverbose(int verbose);
/*
 * Log to path (appended, created 0640, never through a symbolic link)
 * from now on: it becomes the daemon's stderr, so whatever else writes
 * there lands in it too. Called again after the file was rotated
 * (SIGUSR1) it opens the new one; on failure the old one stays and cause
 * says why.
 */
int log_open_file(const char *path, char *cause, size_t causelen);
void log_warn(const char *, ...) __attribute__((format(printf, 1, 2)));
void log_warnx(const char *, ...) __attribute__((format(printf, 1, 2)));
void log_info(const char *, ...) __attribute__((format(printf, 1, 2)));
void log_debug(const char *, ...) __attribute__((format(printf, 1, 2)));
void fatal(const char *, ...) __attribute__((format(printf, 1, 2), noreturn));
void fatalx(const char *, ...) __attribute__((format(printf, 1, 2), noreturn));

#endif
