/*
 * The logs method: a detached job's output, read from the log its monitor
 * writes, sent as log notifications (valid UTF-8) and, with follow, kept
 * flowing at every sample until the job ends.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "control.h"
#include "jobs-internal.h"
#include "proto.h"
#include "server.h"
#include "spawn.h"

#define JOBS_LOG_CHUNK (64 * 1024)
#define JOBS_LOG_PER_PASS (1024 * 1024) /* per follower per pass */
/* No more while this much is queued for the reader's client: a log is sent
 * as fast as the client reads it, never piled up to the client's limit
 * (which closes it). Its writes draining go on from there. */
#define JOBS_LOG_BACKLOG (1024 * 1024)

struct log_reader {
	struct log_reader *next;
	uint64_t client_id;
	cJSON *req_id;
	int64_t job_id;
	uint64_t offset;
	int follow;
};

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

/* Send what is new in the log. Returns 1 when the reader is finished
 * (answered), 0 to keep it. */
static int
log_reader_pump(struct daemon *d, struct log_reader *lr)
{
	static unsigned char buf[JOBS_LOG_CHUNK];
	static char out[JOBS_LOG_CHUNK * 3 + 1];
	char path[1024];
	struct jrec *r = jobs_find(d->jobs, lr->job_id);
	int ended = r == NULL || !jrec_is_live(r);
	size_t sent = 0, used;
	ssize_t got;
	cJSON *res, *note;
	int fd, eof = 0;

	if (spawn_log_path(d->cfg.state_dir, lr->job_id, path, sizeof path) !=
	    0)
		eof = 1;
	fd = eof ? -1
	         : open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0) {
		/* No log yet (not started) or never (failed). */
		eof = 1;
	}
	while (fd >= 0 && sent < JOBS_LOG_PER_PASS &&
	       server_client_unwritten(d, lr->client_id) < JOBS_LOG_BACKLOG) {
		got = pread(fd, buf, sizeof buf, (off_t)lr->offset);
		if (got < 0 && errno == EINTR)
			continue;
		if (got <= 0) {
			eof = 1;
			break;
		}
		used = utf8_sanitize(buf, (size_t)got,
		                     ended && (size_t)got < sizeof buf, out);
		if (used == 0) {
			eof = 1;
			break;
		}
		note = cJSON_CreateObject();
		proto_add_int(note, "id", lr->job_id);
		proto_add_int(note, "offset", (int64_t)lr->offset);
		cJSON_AddStringToObject(note, "data", out);
		if (server_notify(d, lr->client_id, "log", note) == -ENOENT) {
			close(fd);
			return 1;
		}
		lr->offset += used;
		sent += used;
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

void
jobs_logs_pump(struct daemon *d)
{
	struct log_reader **lp = &d->jobs->logs, *lr;

	while ((lr = *lp) != NULL) {
		if (log_reader_pump(d, lr)) {
			*lp = lr->next;
			cJSON_Delete(lr->req_id);
			free(lr);
		} else
			lp = &lr->next;
	}
}

void
jobs_client_writable(struct daemon *d, uint64_t client_id)
{
	struct log_reader **lp, *lr;

	if (d->jobs == NULL)
		return;
	for (lp = &d->jobs->logs; (lr = *lp) != NULL;) {
		if (lr->client_id == client_id && log_reader_pump(d, lr)) {
			*lp = lr->next;
			cJSON_Delete(lr->req_id);
			free(lr);
		} else
			lp = &lr->next;
	}
}

void
jobs_logs_drop(struct jobs *js, uint64_t client_id, int all)
{
	struct log_reader **lp, *lr;

	for (lp = &js->logs; (lr = *lp) != NULL;) {
		if (all || lr->client_id == client_id) {
			*lp = lr->next;
			cJSON_Delete(lr->req_id);
			free(lr);
		} else
			lp = &lr->next;
	}
}

void
jobs_logs_pending(struct jobs *js, uint64_t client_id, size_t *n,
                  size_t *id_bytes)
{
	struct log_reader *lr;

	for (lr = js->logs; lr != NULL; lr = lr->next) {
		if (lr->client_id != client_id)
			continue;
		(*n)++;
		*id_bytes += jobs_ctl_id_bytes(lr->req_id);
	}
}

int
jobs_ctl_logs(struct daemon *d, const struct peer *p, const cJSON *req_id,
              const cJSON *params, cJSON **result, char *cause, size_t causelen)
{
	static const char *const known[] = {"id", "offset", "follow", NULL};
	struct jrec *r;
	struct job *stored;
	struct log_reader *lr;
	const struct job *j;
	int64_t id, offset = 0;
	int follow = 0, rc, attached, owner;

	if ((rc = proto_params_check(params, known, cause, causelen)) != 0 ||
	    (rc = jobs_ctl_param_id(params, &id, cause, causelen)) != 0 ||
	    (rc = proto_param_int(params, "offset", 0, 0, INT64_MAX, &offset,
	                          cause, causelen)) < 0 ||
	    (rc = proto_param_bool(params, "follow", 0, &follow, cause,
	                           causelen)) < 0)
		return rc;
	if ((rc = jobs_ctl_lookup(d, id, &r, &stored, cause, causelen)) != 0)
		return rc;
	j = stored != NULL ? stored : r->j;
	attached = j->attached;
	owner = jobs_ctl_may_see(p->uid, j);
	job_free(stored);
	if (!owner) {
		snprintf(cause, causelen, "job %" PRId64 " is not yours", id);
		return PROTO_E_PERM;
	}
	if (attached) {
		snprintf(cause, causelen,
		         "job %" PRId64 " is attached: its output went to its "
		         "terminal",
		         id);
		return PROTO_E_STATE;
	}
	if ((rc = jobs_ctl_defer_check(d->jobs, p->client_id, req_id, cause,
	                               causelen)) != 0)
		return rc;
	lr = calloc(1, sizeof *lr);
	if (lr == NULL || (lr->req_id = cJSON_Duplicate(req_id, 1)) == NULL) {
		free(lr);
		snprintf(cause, causelen, "out of memory");
		return PROTO_E_INTERNAL;
	}
	lr->client_id = p->client_id;
	lr->job_id = id;
	lr->offset = (uint64_t)offset;
	lr->follow = follow;
	/* Read now what is there; the rest on the following samples. The
	 * reply goes through server_reply, after the log notifications. */
	if (log_reader_pump(d, lr)) {
		cJSON_Delete(lr->req_id);
		free(lr);
		return CONTROL_DEFERRED;
	}
	lr->next = d->jobs->logs;
	d->jobs->logs = lr;
	return CONTROL_DEFERRED;
}
