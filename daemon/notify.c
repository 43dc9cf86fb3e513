/*
 * Who hears what (notify.h). One array of watches, one per thing a client
 * waits for. Sending to a client can fail and close it, and a client's
 * going is announced later by the server (never from inside a send), so a
 * walk only ever sees entries dropped by the walk's own callers: those are
 * marked (client_id 0) and the array is compacted when no walk runs.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jobs.h"
#include "notify-internal.h"
#include "notify.h"
#include "proto.h"
#include "server.h"
#include "version.h"
#include "wire.h"

struct notify {
	struct watch *v;
	size_t n, cap;
	int walking;         /* walks under way: drop by marking only */
	size_t nsubs, nlogs; /* live entries of those kinds: idle ticks */
};

int
notify_start(struct daemon *d, char *cause, size_t causelen)
{
	if ((d->notify = calloc(1, sizeof *d->notify)) == NULL) {
		snprintf(cause, causelen, "out of memory");
		return -ENOMEM;
	}
	return 0;
}

static void
watch_clear(struct notify *nf, struct watch *w)
{
	if (w->client_id == 0)
		return;
	if (w->kind == WATCH_SUB)
		nf->nsubs--;
	else if (w->kind == WATCH_LOG)
		nf->nlogs--;
	proctree_free(w->tree);
	w->tree = NULL;
	cJSON_Delete(w->req_id);
	w->req_id = NULL;
	w->client_id = 0;
}

static void
notify_compact(struct notify *nf)
{
	size_t i, j = 0;

	if (nf->walking > 0)
		return;
	for (i = 0; i < nf->n; i++)
		if (nf->v[i].client_id != 0)
			nf->v[j++] = nf->v[i];
	nf->n = j;
}

void
notify_stop(struct daemon *d)
{
	struct notify *nf = d->notify;
	size_t i;

	if (nf == NULL)
		return;
	for (i = 0; i < nf->n; i++)
		watch_clear(nf, &nf->v[i]);
	free(nf->v);
	free(nf);
	d->notify = NULL;
}

static struct watch *
watch_add(struct notify *nf, uint64_t client_id, uid_t uid,
          enum watch_kind kind)
{
	struct watch *w;

	if (nf->n == nf->cap) {
		size_t cap = nf->cap ? nf->cap * 2 : 16;
		if ((w = realloc(nf->v, cap * sizeof *w)) == NULL)
			return NULL;
		nf->v = w;
		nf->cap = cap;
	}
	w = &nf->v[nf->n++];
	memset(w, 0, sizeof *w);
	w->client_id = client_id;
	w->uid = uid;
	w->kind = kind;
	if (kind == WATCH_SUB)
		nf->nsubs++;
	else if (kind == WATCH_LOG)
		nf->nlogs++;
	return w;
}

static struct watch *
watch_find(struct notify *nf, uint64_t client_id, enum watch_kind kind)
{
	size_t i;

	for (i = 0; i < nf->n; i++)
		if (nf->v[i].client_id == client_id && nf->v[i].kind == kind)
			return &nf->v[i];
	return NULL;
}

/* ---- job notes ---- */

static void
notify_event(struct daemon *d, struct notify *nf, const struct store_event *e)
{
	size_t i;

	nf->walking++;
	for (i = 0; i < nf->n; i++) {
		struct watch *w = &nf->v[i];

		if (w->client_id == 0 || !(w->kind == WATCH_EVENTS ||
		                           (w->kind == WATCH_SUB && w->events)))
			continue;
		server_notify(d, w->client_id, "event", wire_event(e, w->uid));
	}
	nf->walking--;
	notify_compact(nf);
}

/* Every waiter of the job gets it as it ended. */
static void
notify_ended(struct daemon *d, struct notify *nf, const struct job *j)
{
	size_t i;

	nf->walking++;
	for (i = 0; i < nf->n; i++) {
		struct watch *w = &nf->v[i];

		if (w->client_id == 0 || w->kind != WATCH_WAIT ||
		    w->job_id != j->id)
			continue;
		server_reply(d, w->client_id, w->req_id,
		             wire_job_ended(j, w->uid, 0));
		watch_clear(nf, w);
	}
	nf->walking--;
	notify_compact(nf);
}

void
notify_job(struct daemon *d, const struct jobs_note *n)
{
	struct notify *nf = d->notify;
	cJSON *o;

	if (nf == NULL)
		return;
	switch (n->kind) {
	case JOBS_NOTE_EVENT:
		notify_event(d, nf, n->event);
		return;
	case JOBS_NOTE_ENDED:
		notify_ended(d, nf, n->job);
		return;
	case JOBS_NOTE_ADMITTED:
		o = cJSON_CreateObject();
		proto_add_int(o, "id", n->job->id);
		proto_add_int(o, "attempt", n->job->attempt);
		server_notify(d, n->client_id, "admitted", o);
		return;
	case JOBS_NOTE_QUEUE:
		o = cJSON_CreateObject();
		proto_add_int(o, "id", n->job->id);
		proto_add_int(o, "position", n->position);
		proto_add_int(o, "of", n->of);
		cJSON_AddNumberToObject(o, "free_pct", n->free_pct);
		cJSON_AddNumberToObject(o, "wait_free_pct",
		                        n->job->wait_free_pct);
		cJSON_AddStringToObject(o, "waiting_for",
		                        admit_wait_name(n->wait));
		server_notify(d, n->client_id, "queue", o);
		return;
	case JOBS_NOTE_BREACH:
		o = cJSON_CreateObject();
		proto_add_int(o, "id", n->job->id);
		proto_add_int(o, "swap_growth_bytes", (int64_t)n->growth_bytes);
		proto_add_int(o, "swap_budget_bytes",
		              (int64_t)n->job->swap_budget_bytes);
		cJSON_AddBoolToObject(o, "requeued", n->requeued);
		server_notify(d, n->client_id, "breach", o);
		return;
	}
}

/* ---- samples and metered trees ---- */

static char *
encode_note(const char *method, cJSON *params, size_t *len)
{
	if (params == NULL)
		return NULL;
	return proto_encode_notification(method, params, len);
}

/* A sample for a subscriber metering a pid, or NULL when the tree is gone
 * (process_gone is then sent and the subscription falls back to plain
 * samples). */
static cJSON *
meter_json(struct daemon *d, struct watch *w, const struct sys_sample *ss)
{
	uint64_t footprint = 0, swap = 0;
	size_t nprocs = 0;
	cJSON *o, *gone;

	proctree_sample(w->tree, (int64_t)uv_now(d->loop), &footprint, &swap,
	                &nprocs);
	if (nprocs == 0) {
		gone = cJSON_CreateObject();
		proto_add_int(gone, "pid", w->pid);
		server_notify(d, w->client_id, "process_gone", gone);
		proctree_free(w->tree);
		w->tree = NULL;
		w->pid = 0;
		return NULL;
	}
	if ((o = wire_sample(ss)) == NULL)
		return NULL;
	proto_add_int(o, "pid", w->pid);
	proto_add_int(o, "footprint_bytes", (int64_t)footprint);
	/* Swap is attributable per process only on Linux. */
	if (strcmp(STAGELOAD_OS, "linux") == 0)
		proto_add_int(o, "swap_bytes", (int64_t)swap);
	else
		cJSON_AddNullToObject(o, "swap_bytes");
	proto_add_int(o, "nprocs", (int64_t)nprocs);
	return o;
}

static void
notify_samples(struct daemon *d, struct notify *nf, const struct sys_sample *ss)
{
	char *plain = NULL, *line;
	size_t plain_len = 0, len, i;
	cJSON *o;

	for (i = 0; i < nf->n; i++) {
		struct watch *w = &nf->v[i];

		if (w->client_id == 0 || w->kind != WATCH_SUB || !w->samples)
			continue;
		if (w->tree != NULL && (o = meter_json(d, w, ss)) != NULL) {
			if ((line = encode_note("sample", o, &len)) != NULL) {
				server_send_line(d, w->client_id, line, len);
				free(line);
			}
			continue;
		}
		/* Encoded once for every plain subscriber. */
		if (plain == NULL &&
		    (plain = encode_note("sample", wire_sample(ss),
		                         &plain_len)) == NULL)
			continue;
		server_send_line(d, w->client_id, plain, plain_len);
	}
	free(plain);
}

static void
notify_pump_logs(struct daemon *d, struct notify *nf, uint64_t client_id)
{
	size_t i;

	for (i = 0; i < nf->n; i++) {
		struct watch *w = &nf->v[i];

		if (w->client_id == 0 || w->kind != WATCH_LOG ||
		    (client_id != 0 && w->client_id != client_id))
			continue;
		if (notify_log_pump(d, w))
			watch_clear(nf, w);
	}
}

void
notify_sample(struct daemon *d, const struct sys_sample *s)
{
	struct notify *nf = d->notify;

	if (nf == NULL || (nf->nsubs == 0 && nf->nlogs == 0))
		return;
	nf->walking++;
	if (nf->nsubs > 0)
		notify_samples(d, nf, s);
	if (nf->nlogs > 0)
		notify_pump_logs(d, nf, 0);
	nf->walking--;
	notify_compact(nf);
}

/* ---- what clients ask for ---- */

int
notify_subscribe(struct daemon *d, uint64_t client_id, uid_t uid, int samples,
                 int events, pid_t pid, uint64_t start_time, char *cause,
                 size_t causelen)
{
	struct notify *nf = d->notify;
	struct proctree *tree = NULL;
	struct watch *w;

	if (pid > 0 && (tree = proctree_new(pid, 0, start_time)) == NULL) {
		snprintf(cause, causelen, "out of memory");
		return -ENOMEM;
	}
	if ((w = watch_find(nf, client_id, WATCH_SUB)) == NULL &&
	    (w = watch_add(nf, client_id, uid, WATCH_SUB)) == NULL) {
		proctree_free(tree);
		snprintf(cause, causelen, "out of memory");
		return -ENOMEM;
	}
	proctree_free(w->tree);
	w->uid = uid;
	/* Metering a pid only makes sense with samples to carry it. */
	w->samples = samples || pid > 0;
	w->events = events;
	w->pid = pid;
	w->tree = tree;
	if (tree != NULL)
		proctree_set_scan_interval(tree, d->cfg.interval_ms);
	return 0;
}

void
notify_unsubscribe(struct daemon *d, uint64_t client_id)
{
	struct notify *nf = d->notify;
	struct watch *w;

	if (nf == NULL || (w = watch_find(nf, client_id, WATCH_SUB)) == NULL)
		return;
	watch_clear(nf, w);
	notify_compact(nf);
}

int
notify_follow_events(struct daemon *d, uint64_t client_id, uid_t uid)
{
	struct notify *nf = d->notify;

	if (watch_find(nf, client_id, WATCH_EVENTS) != NULL)
		return 0;
	return watch_add(nf, client_id, uid, WATCH_EVENTS) != NULL ? 0
	                                                           : -ENOMEM;
}

static size_t
id_bytes(const cJSON *req_id)
{
	if (cJSON_IsString(req_id) && req_id->valuestring != NULL)
		return strlen(req_id->valuestring);
	return 0;
}

/* Room for one more deferred answer (to req_id) on the connection? */
static int
notify_defer_check(struct notify *nf, uint64_t client_id, const cJSON *req_id,
                   char *cause, size_t causelen)
{
	size_t n = 1, bytes = id_bytes(req_id), i;

	for (i = 0; i < nf->n; i++) {
		if (nf->v[i].client_id != client_id || nf->v[i].req_id == NULL)
			continue;
		n++;
		bytes += id_bytes(nf->v[i].req_id);
	}
	if (n > NOTIFY_MAX_DEFERRED || bytes > NOTIFY_MAX_DEFERRED_ID_BYTES) {
		snprintf(cause, causelen,
		         "limit reached: at most %d wait and logs requests "
		         "pending on one connection, their ids %u bytes in all",
		         NOTIFY_MAX_DEFERRED, NOTIFY_MAX_DEFERRED_ID_BYTES);
		return PROTO_E_LIMIT;
	}
	return 0;
}

/* A watch that answers req_id later. */
static struct watch *
deferred_add(struct notify *nf, uint64_t client_id, uid_t uid,
             enum watch_kind kind, const cJSON *req_id, int64_t job_id,
             char *cause, size_t causelen)
{
	struct watch *w;
	cJSON *id;

	if (notify_defer_check(nf, client_id, req_id, cause, causelen) != 0)
		return NULL;
	if ((id = cJSON_Duplicate(req_id, 1)) == NULL ||
	    (w = watch_add(nf, client_id, uid, kind)) == NULL) {
		cJSON_Delete(id);
		snprintf(cause, causelen, "out of memory");
		return NULL;
	}
	w->req_id = id;
	w->job_id = job_id;
	return w;
}

int
notify_wait(struct daemon *d, uint64_t client_id, uid_t uid,
            const cJSON *req_id, int64_t job_id, char *cause, size_t causelen)
{
	if (deferred_add(d->notify, client_id, uid, WATCH_WAIT, req_id, job_id,
	                 cause, causelen) == NULL)
		return strncmp(cause, "limit", 5) == 0 ? PROTO_E_LIMIT
		                                       : PROTO_E_INTERNAL;
	return 0;
}

int
notify_logs(struct daemon *d, uint64_t client_id, const cJSON *req_id,
            int64_t job_id, uint64_t offset, int follow, char *cause,
            size_t causelen)
{
	struct notify *nf = d->notify;
	struct watch *w;

	w = deferred_add(nf, client_id, 0, WATCH_LOG, req_id, job_id, cause,
	                 causelen);
	if (w == NULL)
		return strncmp(cause, "limit", 5) == 0 ? PROTO_E_LIMIT
		                                       : PROTO_E_INTERNAL;
	w->offset = offset;
	w->follow = follow;
	/* Read now what is there; the rest on the following ticks. The
	 * reply goes through server_reply, after the log notifications. */
	nf->walking++;
	if (notify_log_pump(d, w))
		watch_clear(nf, w);
	nf->walking--;
	notify_compact(nf);
	return 0;
}

/* ---- the server's hooks ---- */

size_t
notify_deferred(struct daemon *d, uint64_t client_id)
{
	struct notify *nf = d->notify;
	size_t i, n = 0;

	for (i = 0; nf != NULL && i < nf->n; i++)
		if (nf->v[i].client_id == client_id && nf->v[i].req_id != NULL)
			n++;
	return n;
}

void
notify_writable(struct daemon *d, uint64_t client_id)
{
	struct notify *nf = d->notify;

	if (nf == NULL || nf->nlogs == 0)
		return;
	nf->walking++;
	notify_pump_logs(d, nf, client_id);
	nf->walking--;
	notify_compact(nf);
}

void
notify_client_gone(struct daemon *d, uint64_t client_id)
{
	struct notify *nf = d->notify;
	size_t i;

	if (nf == NULL)
		return;
	for (i = 0; i < nf->n; i++)
		if (nf->v[i].client_id == client_id)
			watch_clear(nf, &nf->v[i]);
	notify_compact(nf);
}
