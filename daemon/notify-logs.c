/*
 * The logs method's reading: a detached job's output, read from the log
 * its monitor writes, sent as log notifications (valid UTF-8) at the pace
 * the client reads and, with follow, on every tick until the job ends.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "jobs.h"
#include "notify-internal.h"
#include "proto.h"
#include "server.h"
#include "spawn.h"

#define LOG_CHUNK (64 * 1024)
#define LOG_PER_PASS (1024 * 1024) /* per reader per pass */
/* No more while this much is queued for the reader's client: a log is sent
 * as fast as the client reads it, never piled up to the client's limit
 * (which closes it). Its writes draining go on from there. */
#define LOG_BACKLOG (1024 * 1024)
/* Chunks kept for a pass, shared by the readers at the same offset. */
#define LOG_CHUNKS_KEPT 64

/* Copy src[0..n) to a NUL-terminated string, replacing bytes that are not
 * UTF-8 (and NUL, which JSON strings here cannot carry) by U+FFFD. Returns
 * the bytes of src consumed: an incomplete sequence at the end is left for
 * the next read unless at_eof. */
static size_t
utf8_sanitize(const unsigned char *src, size_t n, int at_eof, char *dst)
{
	size_t i = 0, o = 0, len, k;
	unsigned char c;

	while (i < n) {
		c = src[i];
		if (c >= 0x01 && c < 0x80) {
			dst[o++] = (char)c;
			i++;
			continue;
		}
		len = c >= 0xc2 && c <= 0xdf   ? 2
		      : c >= 0xe0 && c <= 0xef ? 3
		      : c >= 0xf0 && c <= 0xf4 ? 4
		                               : 0;
		if (len > 0 && i + len > n && !at_eof) {
			/* Maybe complete in the next read. */
			int ok = 1;
			for (k = 1; i + k < n; k++)
				if ((src[i + k] & 0xc0) != 0x80)
					ok = 0;
			if (ok)
				break;
		}
		if (len > 0 && i + len <= n &&
		    proto_utf8_valid((const char *)src + i, len)) {
			memcpy(dst + o, src + i, len);
			o += len;
			i += len;
			continue;
		}
		memcpy(dst + o, "\xef\xbf\xbd", 3);
		o += 3;
		i++;
	}
	dst[o] = '\0';
	return i;
}

int64_t
notify_log_size(struct daemon *d, int64_t job_id)
{
	char path[1024];
	struct stat st;

	if (spawn_log_path(d->cfg.state_dir, job_id, path, sizeof path) != 0 ||
	    lstat(path, &st) != 0 || !S_ISREG(st.st_mode))
		return -1;
	return (int64_t)st.st_size;
}

/*
 * A chunk of a log as a log notification: read and encoded once in a pass
 * for all who read that log at that offset (a crowd following one job is
 * one read and one encoding per chunk, not one per reader).
 */
struct log_chunk {
	int64_t job_id;
	uint64_t offset;
	size_t used; /* bytes of the log it carries */
	char *line;
	size_t len;
};

static struct log_chunk chunks[LOG_CHUNKS_KEPT];
static size_t nchunks;

void
notify_log_pass_end(void)
{
	while (nchunks > 0)
		free(chunks[--nchunks].line);
}

static struct log_chunk *
chunk_find(int64_t job_id, uint64_t offset)
{
	size_t i;

	for (i = 0; i < nchunks; i++)
		if (chunks[i].job_id == job_id && chunks[i].offset == offset)
			return &chunks[i];
	return NULL;
}

/* Read and encode the chunk at offset; 1 at the log's end, -1 when it
 * cannot be read, 0 with *c set (kept for the pass when there is room,
 * else in *spare, which the caller frees). */
static int
chunk_read(int fd, int64_t job_id, uint64_t offset, int ended,
           struct log_chunk **c, struct log_chunk *spare)
{
	static unsigned char buf[LOG_CHUNK];
	static char out[LOG_CHUNK * 3 + 1];
	struct log_chunk *k;
	ssize_t got;
	size_t used;
	cJSON *note;

	while ((got = pread(fd, buf, sizeof buf, (off_t)offset)) < 0 &&
	       errno == EINTR)
		;
	if (got <= 0)
		return got == 0 ? 1 : -1;
	used = utf8_sanitize(buf, (size_t)got,
	                     ended && (size_t)got < sizeof buf, out);
	if (used == 0)
		return 1;
	k = nchunks < LOG_CHUNKS_KEPT ? &chunks[nchunks] : spare;
	note = cJSON_CreateObject();
	proto_add_int(note, "id", job_id);
	proto_add_int(note, "offset", (int64_t)offset);
	cJSON_AddStringToObject(note, "data", out);
	if ((k->line = proto_encode_notification("log", note, &k->len)) == NULL)
		return -1;
	k->job_id = job_id;
	k->offset = offset;
	k->used = used;
	if (k != spare)
		nchunks++;
	*c = k;
	return 0;
}

/* Send what is new in the log. Returns 1 when the reader is finished
 * (answered), 0 to keep it. */
int
notify_log_pump(struct daemon *d, struct watch *lr, int live, int64_t size)
{
	struct log_chunk *c, spare;
	char path[1024];
	int ended = !live;
	size_t sent = 0;
	cJSON *res;
	int fd = -1, eof = 0, rc;

	/* Following a live job, at its end already: nothing to read. */
	if (live && lr->follow && size >= 0 && (uint64_t)size <= lr->offset)
		return 0;
	if (spawn_log_path(d->cfg.state_dir, lr->job_id, path, sizeof path) !=
	    0)
		eof = 1;
	while (!eof && sent < LOG_PER_PASS &&
	       server_client_unwritten(d, lr->client_id) < LOG_BACKLOG) {
		spare.line = NULL;
		if ((c = chunk_find(lr->job_id, lr->offset)) == NULL) {
			/* Known to be at its end: no need to look. */
			if (size >= 0 && (uint64_t)size <= lr->offset && live) {
				eof = 1;
				break;
			}
			if (fd < 0 &&
			    (fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC |
			                         O_NONBLOCK)) < 0) {
				/* No log yet (not started) or never
				 * (failed). */
				eof = 1;
				break;
			}
			if ((rc = chunk_read(fd, lr->job_id, lr->offset, ended,
			                     &c, &spare)) != 0) {
				eof = 1;
				break;
			}
		}
		rc = server_send_line(d, lr->client_id, c->line, c->len);
		lr->offset += c->used;
		sent += c->used;
		free(spare.line);
		if (rc == -ENOENT) {
			if (fd >= 0)
				close(fd);
			return 1;
		}
	}
	if (fd >= 0)
		close(fd);
	if (!eof)
		return 0; /* more next pass */
	if (lr->follow && !ended)
		return 0;
	res = cJSON_CreateObject();
	proto_add_int(res, "id", lr->job_id);
	proto_add_int(res, "offset", (int64_t)lr->offset);
	cJSON_AddBoolToObject(res, "eof", 1);
	server_reply(d, lr->client_id, lr->req_id, res);
	return 1;
}

/*
 * An ended job's log is as long as it will be: an offset past its end is
 * a mistake to name, not an empty answer at an offset that never existed.
 * A job with no log (it never started) has a log of 0 bytes.
 */
int
notify_log_offset_check(struct daemon *d, int64_t job_id, uint64_t offset,
                        char *cause, size_t causelen)
{
	int64_t size;

	if (jobs_is_live(d, job_id))
		return 0;
	if ((size = notify_log_size(d, job_id)) < 0)
		size = 0;
	if (offset <= (uint64_t)size)
		return 0;
	snprintf(cause, causelen,
	         "invalid params: 'offset' %" PRIu64 " is past the end of the "
	         "log of job %" PRId64 ", which has ended: the log has %" PRId64
	         " bytes",
	         offset, job_id, size);
	return PROTO_E_PARAMS;
}
