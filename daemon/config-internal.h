/*
 * What config.c (the command line, the file, defaults, SIGHUP) and
 * config-settings.c (the table of settings, their parsers and printer,
 * info's values) share.
 */
#ifndef SL_CONFIG_INTERNAL_H
#define SL_CONFIG_INTERNAL_H

#include <stddef.h>

#include "daemon.h"

enum setting_kind {
	SET_PATH,     /* a char array */
	SET_DURATION, /* int64_t ms; min, max in ms */
	SET_INT,      /* int */
	SET_DOUBLE,   /* double */
	SET_SIZE,     /* size_t or uint64_t (len says which), bytes */
	SET_SPECIAL,  /* its own set and print */
};

struct setting {
	const char *name;
	enum setting_kind kind;
	size_t off, len;   /* the member */
	size_t off2, len2; /* a second member it sets (len2 0: none) */
	double min, max;
	const char *def;  /* parsed as the file's value would be; NULL: code */
	int reload;       /* SIGHUP applies it; else a change needs a restart */
	const char *info; /* "defaults.KEY" or "limits.KEY" in info, or NULL */
	int (*set)(struct config *, const struct setting *, const char *key,
	           const char *v, char *cause, size_t causelen);
	void (*print)(const struct config *, char *buf, size_t len);
	const char *help;
};

extern const struct setting config_settings[];
extern const size_t config_nsettings;

int config_fail(char *cause, size_t causelen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Copy a path, refusing ones that would be silently cut. */
int config_set_path(char *dst, size_t dstlen, const char *key, const char *v,
                    char *cause, size_t causelen);
/* One setting by its key ('_' or '-'), or group.NAME.max_running. */
int config_set(struct config *cfg, const char *key, const char *v, char *cause,
               size_t causelen);
int config_setting_set(struct config *cfg, const struct setting *s,
                       const char *key, const char *v, char *cause,
                       size_t causelen);
void *config_member(struct config *cfg, size_t off);
const void *config_cmember(const struct config *cfg, size_t off);

#endif
