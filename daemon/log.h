/* The daemon's one log API, after OpenBSD's log.h. */
#ifndef SL_LOG_H
#define SL_LOG_H

#include <stdarg.h>

void log_init(int foreground, int verbose);
void log_setverbose(int verbose);
void log_warn(const char *, ...) __attribute__((format(printf, 1, 2)));
void log_warnx(const char *, ...) __attribute__((format(printf, 1, 2)));
void log_info(const char *, ...) __attribute__((format(printf, 1, 2)));
void log_debug(const char *, ...) __attribute__((format(printf, 1, 2)));
void fatal(const char *, ...)
    __attribute__((format(printf, 1, 2), noreturn));
void fatalx(const char *, ...)
    __attribute__((format(printf, 1, 2), noreturn));

#endif
