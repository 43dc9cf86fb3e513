/* Log lines go to stderr with a level prefix; under launchd or a
 * supervisor stderr is the log file, so one format serves both. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/time.h>
#include <unistd.h>

#include "log.h"
#include "text.h"

static int log_verbose;
static int log_foreground = 1;

void
log_init(int foreground, int verbose)
{
	log_foreground = foreground;
	log_verbose = verbose;
}

void
log_setverbose(int verbose)
{
	log_verbose = verbose;
}

int
log_open_file(const char *path, char *cause, size_t causelen)
{
	int fd, err;

	fd = open(path,
	          O_WRONLY | O_APPEND | O_CREAT | O_NOFOLLOW | O_CLOEXEC |
	              O_NOCTTY,
	          0640);
	if (fd == -1) {
		err = errno;
		snprintf(cause, causelen, "cannot open the log file %s: %s",
		         path, strerror(err));
		return -err;
	}
	/* Over stderr, which is not close-on-exec: the lines of anything
	 * that writes there go to the same file. Monitors close it when
	 * they fork (spawn.c), as they do every descriptor of the daemon. */
	fflush(stderr);
	if (fd != STDERR_FILENO && dup2(fd, STDERR_FILENO) == -1) {
		err = errno;
		close(fd);
		snprintf(cause, causelen, "dup2 of the log file %s: %s", path,
		         strerror(err));
		return -err;
	}
	if (fd != STDERR_FILENO)
		close(fd);
	return 0;
}

/*
 * Messages are written escaped (proto_text_escape, the format in
 * proto/text.h): names and arguments come from any local user (a job's
 * name, a client's), and a newline in one must not start a line of its
 * own that reads like the daemon's, nor an escape sequence, a C1 control
 * or a bidi override reach whoever reads the log on a terminal.
 */
static void
put_escaped(const char *s)
{
	char buf[1024];
	size_t len = strlen(s), done, n;

	while (len > 0) {
		done = proto_text_escape(s, len, 0, 0, buf, sizeof buf, &n);
		if (done == 0)
			break; /* cannot happen: an escape is far shorter */
		fwrite(buf, 1, n, stderr);
		s += done;
		len -= done;
	}
}

static void
vlog(const char *level, const char *fmt, va_list ap, const char *err)
{
	char ts[32], small[1024];
	const char *msg = proto_text_vformat(small, sizeof small, fmt, ap);
	struct timeval tv;
	struct tm tm;

	gettimeofday(&tv, NULL);
	localtime_r(&tv.tv_sec, &tm);
	strftime(ts, sizeof ts, "%Y-%m-%dT%H:%M:%S", &tm);
	flockfile(stderr);
	if (log_foreground)
		fprintf(stderr, "%s.%03ld ", ts, (long)(tv.tv_usec / 1000));
	fprintf(stderr, "stageloadd[%s]: ", level);
	put_escaped(msg);
	if (err != NULL) {
		fputs(": ", stderr);
		put_escaped(err);
	}
	fputc('\n', stderr);
	funlockfile(stderr);
	if (msg != small && msg != fmt)
		free((char *)msg);
}

#define LOGFN(name, level, witherr)                                            \
	void name(const char *fmt, ...)                                        \
	{                                                                      \
		int saved = errno;                                             \
		va_list ap;                                                    \
		va_start(ap, fmt);                                             \
		vlog(level, fmt, ap, witherr ? strerror(saved) : NULL);        \
		va_end(ap);                                                    \
		errno = saved;                                                 \
	}

LOGFN(log_warn, "warn", 1)
LOGFN(log_warnx, "warn", 0)
LOGFN(log_info, "info", 0)

void
log_debug(const char *fmt, ...)
{
	va_list ap;

	if (!log_verbose)
		return;
	va_start(ap, fmt);
	vlog("debug", fmt, ap, NULL);
	va_end(ap);
}

void
fatal(const char *fmt, ...)
{
	int saved = errno;
	va_list ap;

	va_start(ap, fmt);
	vlog("fatal", fmt, ap, strerror(saved));
	va_end(ap);
	exit(1);
}

void
fatalx(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vlog("fatal", fmt, ap, NULL);
	va_end(ap);
	exit(1);
}
