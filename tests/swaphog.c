/*
 * swaphog: a job that grows its memory in steps, for tests that must push
 * a real process into swap (see tests/lib/swap.sh).
 *
 *   swaphog [-s STEP_MIB] [-i STEP_MS] [-H HOLD_MS] [-t TERM_FILE]
 *           [-r READY_FILE] MIB
 *
 * Allocates MIB mebibytes, STEP_MIB (default 16) every STEP_MS (default 50)
 * milliseconds, writing every page with data that does not compress to
 * nothing. Then it keeps touching all of it for HOLD_MS (default 2000) and
 * exits 0. READY_FILE, when given, receives "allocated" once everything is
 * allocated. On SIGTERM it writes the arrival time (ms since the epoch,
 * wall clock, taken in the handler) to TERM_FILE and exits 143; the file is
 * written from the handler itself so that a process stuck in page faults
 * still reports when the signal arrived.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define MIB (1024UL * 1024UL)

static const char *term_file;

static int64_t
wall_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Only async-signal-safe calls: clock_gettime, open, write, close, _exit. */
static void
on_term(int sig)
{
	char buf[32], *p = buf + sizeof(buf);
	int64_t ms = wall_ms();
	int fd;

	(void)sig;
	*--p = '\n';
	do {
		*--p = (char)('0' + ms % 10);
		ms /= 10;
	} while (ms > 0 && p > buf);
	if (term_file != NULL) {
		fd = open(term_file, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		if (fd != -1) {
			(void)!write(fd, p, (size_t)(buf + sizeof(buf) - p));
			close(fd);
		}
	}
	_exit(128 + SIGTERM);
}

static void
sleep_ms(long ms)
{
	struct timespec ts;

	ts.tv_sec = ms / 1000;
	ts.tv_nsec = (ms % 1000) * 1000000L;
	while (nanosleep(&ts, &ts) == -1 && errno == EINTR)
		;
}

static long
number(const char *s, const char *what)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno != 0 || *end != '\0' || v < 0) {
		fprintf(stderr, "swaphog: bad %s: %s\n", what, s);
		exit(2);
	}
	return v;
}

static void
usage(void)
{
	fprintf(stderr, "usage: swaphog [-s STEP_MIB] [-i STEP_MS] "
	                "[-H HOLD_MS] [-t TERM_FILE] [-r READY_FILE] MIB\n");
	exit(2);
}

int
main(int argc, char **argv)
{
	long total_mib, step_mib = 16, step_ms = 50, hold_ms = 2000;
	const char *ready_file = NULL;
	unsigned char **chunks;
	size_t page, nchunks, i, off, done_mib = 0;
	struct sigaction sa;
	uint32_t x = 2463534242U;
	int64_t hold_end;
	FILE *f;
	int c;

	while ((c = getopt(argc, argv, "s:i:H:t:r:")) != -1) {
		switch (c) {
		case 's':
			step_mib = number(optarg, "step");
			break;
		case 'i':
			step_ms = number(optarg, "interval");
			break;
		case 'H':
			hold_ms = number(optarg, "hold time");
			break;
		case 't':
			term_file = optarg;
			break;
		case 'r':
			ready_file = optarg;
			break;
		default:
			usage();
		}
	}
	if (optind != argc - 1)
		usage();
	total_mib = number(argv[optind], "size");
	if (step_mib <= 0)
		step_mib = 1;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_term;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGTERM, &sa, NULL);

	page = (size_t)sysconf(_SC_PAGESIZE);
	nchunks = (size_t)((total_mib + step_mib - 1) / step_mib);
	chunks = calloc(nchunks ? nchunks : 1, sizeof(*chunks));
	if (chunks == NULL)
		return 1;
	for (i = 0; i < nchunks; i++) {
		size_t mib = (size_t)step_mib;

		if (done_mib + mib > (size_t)total_mib)
			mib = (size_t)total_mib - done_mib;
		chunks[i] = malloc(mib * MIB);
		if (chunks[i] == NULL) {
			fprintf(stderr, "swaphog: out of memory at %zu MiB\n",
			        done_mib);
			return 1;
		}
		/* A few pseudo-random words per page: no zero pages, and
		 * nothing a compressor could fold into one. */
		for (off = 0; off < mib * MIB; off += page) {
			size_t w;

			for (w = 0; w < 64 && off + w * 4 + 4 <= mib * MIB;
			     w++) {
				x ^= x << 13;
				x ^= x >> 17;
				x ^= x << 5;
				memcpy(chunks[i] + off + w * 4, &x, 4);
			}
		}
		done_mib += mib;
		if (i + 1 < nchunks)
			sleep_ms(step_ms);
	}
	if (ready_file != NULL && (f = fopen(ready_file, "w")) != NULL) {
		fprintf(f, "allocated %zu\n", done_mib);
		fclose(f);
	}

	/* Keep the whole set in use, as a working model would. */
	hold_end = wall_ms() + hold_ms;
	while (wall_ms() < hold_end) {
		size_t mib = (size_t)step_mib;

		for (i = 0; i < nchunks; i++) {
			if (i == nchunks - 1 && (size_t)total_mib % mib != 0)
				mib = (size_t)total_mib % mib;
			for (off = 0; off < mib * MIB; off += page)
				chunks[i][off]++;
		}
		sleep_ms(100);
	}
	/* Freed, so a sanitizer build's leak check passes a clean exit. */
	for (i = 0; i < nchunks; i++)
		free(chunks[i]);
	free(chunks);
	return 0;
}
