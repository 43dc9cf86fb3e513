/*
 * Who hears what (notify.h). One array of watches, one per thing a client
 * waits for. Sending to a client can fail and close it, and a client's
 * going is announced later by the server (never from inside a send), so a
 * walk only ever sees entries dropped by the walk's own callers: those are
 * marked (client_id 0) and the array is compacted when no walk runs.
 *
 * What a request or a tick needs to know is counted as the list changes
 * (deferred answers per client and per uid, meters per uid), and a tick
 * looks at each job's log and each metered tree once however many clients
 * watch it, so neither a request nor a tick costs more with more watchers
 * than the work it does for them. Metering has a time budget per tick.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jobs.h"
#include "log.h"
#include "notify-internal.h"
#include "notify.h"
#include "proto.h"
#include "server.h"
#include "umap.h"
#include "version.h"
#include "wire.h"

/* An events follower catching up reads this many events at a time, and
 * stops for the tick while this much is queued for its client. */
#define EVENTS_CHUNK 500
/* The most a tick spends scanning metered trees. */
#define NOTIFY_METER_BUDGET_MS 20ULL
#define EVENTS_BACKLOG (1024 * 1024)

struct notify {
	struct watch *v;
	size_t n, cap;
	int walking;         /* walks under way: drop by marking only */
	size_t nsubs, nlogs; /* live entries of those kinds: idle ticks */
	struct umap clients; /* client id -> a: answers owed, b: id bytes */
	struct umap uids;    /* uid + 1 -> a: answers owed, b: meters */
	struct umap logs;    /* this pass: job id -> a: live + 1, b: size */
	struct umap sent;    /* this event: client ids it went to or skips */
	size_t ncatching;    /* events followers still catching up */
	struct meter **meters;
	size_t nmeters, capmeters;
	size_t next_meter; /* where the next tick's scans start */
	uint64_t tick;
};

/* uid 0 is a key too: the map reserves 0. */
static uint64_t
uid_key(uid_t uid)
{
	return (uint64_t)uid + 1;
}

/* What a kept id costs: its text as sent (proto_parse keeps a number or a
 * string id as a raw node), so a long id counts whatever its type. */
static size_t
id_bytes(const cJSON *req_id)
{
	if ((cJSON_IsString(req_id) || cJSON_IsRaw(req_id)) &&
	    req_id->valuestring != NULL)
		return strlen(req_id->valuestring);
	return 0;
}

/* Count a deferred answer in. -1 when out of memory, counting nothing:
 * every answer counted in is counted out (tally_out), none else. */
static int
tally_in(struct notify *nf, uint64_t client_id, uid_t uid, int64_t bytes)
{
	struct umap_slot *c = umap_get(&nf->clients, client_id), *u;

	if (c == NULL)
		return -1;
	if ((u = umap_get(&nf->uids, uid_key(uid))) == NULL) {
		if (c->a == 0)
			umap_del(&nf->clients, client_id);
		return -1;
	}
	c->a++;
	c->b += bytes;
	u->a++;
	return 0;
}

static void
tally_out(struct notify *nf, uint64_t client_id, uid_t uid, int64_t bytes)
{
	struct umap_slot *c = umap_find(&nf->clients, client_id), *u;

	if (c != NULL) {
		c->a--;
		c->b -= bytes;
		if (c->a <= 0)
			umap_del(&nf->clients, client_id);
	}
	if ((u = umap_find(&nf->uids, uid_key(uid))) != NULL) {
		u->a--;
		if (u->a <= 0 && u->b <= 0)
			umap_del(&nf->uids, uid_key(uid));
	}
}

static void
meter_release(struct notify *nf, struct meter *m)
{
	struct umap_slot *u;
	size_t i;

	if (--m->refs > 0)
		return;
	for (i = 0; i < nf->nmeters; i++) {
		if (nf->meters[i] == m) {
			nf->meters[i] = nf->meters[--nf->nmeters];
			break;
		}
	}
	if ((u = umap_find(&nf->uids, uid_key(m->owner))) != NULL &&
	    --u->b <= 0 && u->a <= 0)
		umap_del(&nf->uids, uid_key(m->owner));
	proctree_free(m->tree);
	free(m);
}

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
	else if (w->kind == WATCH_EVENTS && !w->live)
		nf->ncatching--;
	if (w->meter != NULL)
		meter_release(nf, w->meter);
	w->meter = NULL;
	free(w->filter);
	w->filter = NULL;
	if (w->req_id != NULL)
		tally_out(nf, w->client_id, w->uid,
		          (int64_t)id_bytes(w->req_id));
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
	free(nf->meters);
	umap_free(&nf->clients);
	umap_free(&nf->uids);
	umap_free(&nf->logs);
	umap_free(&nf->sent);
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

/*
 * An event, once to each client that asked for events, however many ways
 * it asked (subscribe with events, an events follow). A client whose
 * follow is still catching up from the store gets it from there, in
 * order, and not here.
 */
static int
follows(struct daemon *d, struct watch *w, const struct store_event *e)
{
	return (w->job_id == 0 || w->job_id == e->job_id) &&
	       (w->filter == NULL ||
	        jobs_filter_event(d, w->filter, &w->cache, e));
}

static void
notify_event(struct daemon *d, struct notify *nf, const struct store_event *e)
{
	size_t i;

	umap_clear(&nf->sent);
	for (i = 0; nf->ncatching > 0 && i < nf->n; i++)
		if (nf->v[i].client_id != 0 && nf->v[i].kind == WATCH_EVENTS &&
		    !nf->v[i].live && follows(d, &nf->v[i], e))
			umap_get(&nf->sent, nf->v[i].client_id);
	nf->walking++;
	for (i = 0; i < nf->n; i++) {
		struct watch *w = &nf->v[i];

		if (w->client_id == 0 ||
		    !((w->kind == WATCH_EVENTS && follows(d, w, e)) ||
		      (w->kind == WATCH_SUB && w->events)))
			continue;
		if (umap_find(&nf->sent, w->client_id) != NULL ||
		    umap_get(&nf->sent, w->client_id) == NULL)
			continue;
		server_notify(d, w->client_id, "event", wire_event(e, w->uid));
	}
	nf->walking--;
	notify_compact(nf);
}

struct catchup {
	struct daemon *d;
	struct watch *w;
	size_t n;
};

static int
catchup_cb(void *arg, const struct store_event *e)
{
	struct catchup *c = arg;

	if (c->w->filter != NULL &&
	    !jobs_filter_event(c->d, c->w->filter, &c->w->cache, e)) {
		c->w->cursor = e->id;
		c->n++;
		return 0;
	}
	/* A client the send closed (its unread limits) stops the read. */
	if (server_notify(c->d, c->w->client_id, "event",
	                  wire_event(e, c->w->uid)) == -ENOENT)
		return 1;
	c->w->cursor = e->id;
	c->n++;
	return 0;
}

/* Events followers behind the store's end read on from their cursor, a
 * chunk at a time as their clients read, until they reach it and go
 * live. */
static void
notify_pump_events(struct daemon *d, struct notify *nf, uint64_t client_id)
{
	struct catchup c;
	size_t i;

	for (i = 0; nf->ncatching > 0 && i < nf->n; i++) {
		struct watch *w = &nf->v[i];

		if (w->client_id == 0 || w->kind != WATCH_EVENTS || w->live ||
		    (client_id != 0 && w->client_id != client_id))
			continue;
		c.d = d;
		c.w = w;
		/* Only while the client keeps up: what it has not read yet
		 * is at most about EVENTS_BACKLOG. */
		while (server_client_unwritten(d, w->client_id) <
		       EVENTS_BACKLOG) {
			c.n = 0;
			/* < 0: storage, try again next tick; > 0: the client
			 * went, and its watch with it. */
			if (store_events(d->store, w->cursor, w->job_id,
			                 EVENTS_CHUNK, catchup_cb, &c) != 0)
				break;
			if (c.n < EVENTS_CHUNK) {
				w->live = 1;
				nf->ncatching--;
				break;
			}
		}
	}
}

/* The ended job as uid sees it. The table keeps no argv: it is read from
 * the store once, for the first who may see it. */
static cJSON *
ended_object(struct daemon *d, struct jobs_view *v, uid_t uid)
{
	char cause[128];

	if (wire_may_see(uid, v->j))
		(void)jobs_view_args(d, v, cause, sizeof cause);
	return wire_job(v, uid, 0);
}

/* Every waiter of the job gets it as it ended. */
static void
notify_ended(struct daemon *d, struct notify *nf, struct jobs_view *v)
{
	const struct job *j = v->j;
	size_t i;

	nf->walking++;
	for (i = 0; i < nf->n; i++) {
		struct watch *w = &nf->v[i];

		if (w->client_id == 0 || w->kind != WATCH_WAIT ||
		    w->job_id != j->id)
			continue;
		server_reply(d, w->client_id, w->req_id,
		             ended_object(d, v, w->uid));
		watch_clear(nf, w);
	}
	nf->walking--;
	notify_compact(nf);
}

void
notify_job(struct daemon *d, const struct jobs_note *n)
{
	struct notify *nf = d->notify;
	struct jobs_view v;
	char why[48];
	cJSON *o;

	if (nf == NULL)
		return;
	switch (n->kind) {
	case JOBS_NOTE_EVENT:
		notify_event(d, nf, n->event);
		return;
	case JOBS_NOTE_ENDED:
		memset(&v, 0, sizeof v);
		v.j = n->job;
		notify_ended(d, nf, &v);
		/* The attached job's own connection is told, whoever ended
		 * it: it may be waiting for an admission that will not come. */
		if (n->client_id != 0)
			server_notify(d, n->client_id, "ended",
			              ended_object(d, &v, n->job->uid));
		jobs_view_free(&v);
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
		cJSON_AddStringToObject(
		    o, "waiting_for",
		    wire_waiting_for(n->wait, n->wait_after, why, sizeof why));
		if (n->view != NULL)
			wire_add_waiting_on(o, n->view);
		server_notify(d, n->client_id, "queue", o);
		return;
	case JOBS_NOTE_BREACH:
		o = cJSON_CreateObject();
		proto_add_int(o, "id", n->job->id);
		proto_add_int(o, "swap_growth_bytes", (int64_t)n->growth_bytes);
		proto_add_int(o, "swap_budget_bytes",
		              (int64_t)n->job->swap_budget_bytes);
		cJSON_AddBoolToObject(o, "requeued", n->requeued);
		if (n->detail != NULL)
			cJSON_AddStringToObject(o, "detail", n->detail);
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

/* Scan the metered trees, each once this tick, starting where the last
 * tick's budget ran out, until the budget runs out: what a tick spends on
 * observers is bounded, so the next tick's enforcement is on time. */
static void
notify_scan_meters(struct daemon *d, struct notify *nf, uint64_t start_ns)
{
	uint64_t budget_ns = (uint64_t)d->cfg.interval_ms * 1000000 / 4;

	/* A quarter of the interval, and never so long that a request
	 * waiting behind the tick notices. */
	if (budget_ns > NOTIFY_METER_BUDGET_MS * 1000000)
		budget_ns = NOTIFY_METER_BUDGET_MS * 1000000;
	size_t k, i;

	for (k = 0; k < nf->nmeters; k++) {
		struct meter *m;

		i = (nf->next_meter + k) % nf->nmeters;
		m = nf->meters[i];
		if (k > 0 && uv_hrtime() - start_ns > budget_ns) {
			nf->next_meter = i;
			log_debug(
			    "notify: metering over its budget; %zu of %zu "
			    "trees wait for the next tick",
			    nf->nmeters - k, nf->nmeters);
			return;
		}
		m->nprocs = 0;
		proctree_sample(m->tree, (int64_t)uv_now(d->loop),
		                &m->footprint, &m->swap, &m->nprocs);
		m->tick = nf->tick;
	}
	nf->next_meter = 0;
}

/* A metered sample for w, or NULL when its tree is gone: process_gone is
 * then sent and the subscription falls back to plain samples. */
static cJSON *
meter_json(struct daemon *d, struct notify *nf, struct watch *w,
           const struct sys_sample *ss)
{
	struct meter *m = w->meter;
	cJSON *o, *gone;

	if (m->nprocs == 0) {
		gone = cJSON_CreateObject();
		proto_add_int(gone, "pid", m->pid);
		server_notify(d, w->client_id, "process_gone", gone);
		w->meter = NULL;
		meter_release(nf, m);
		return NULL;
	}
	if ((o = wire_sample(ss)) == NULL)
		return NULL;
	proto_add_int(o, "pid", m->pid);
	proto_add_int(o, "footprint_bytes", (int64_t)m->footprint);
	/* Swap is attributable per process only on Linux. */
	if (strcmp(STAGELOAD_OS, "linux") == 0)
		proto_add_int(o, "swap_bytes", (int64_t)m->swap);
	else
		cJSON_AddNullToObject(o, "swap_bytes");
	proto_add_int(o, "nprocs", (int64_t)m->nprocs);
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
		if (w->meter != NULL) {
			/* Not scanned this tick (over budget): next tick. */
			if (w->meter->tick != nf->tick)
				continue;
			if ((o = meter_json(d, nf, w, ss)) != NULL) {
				line = encode_note("sample", o, &len);
				if (line != NULL)
					server_send_line(d, w->client_id, line,
					                 len);
				free(line);
				continue;
			}
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

/* The job's liveness and log size, looked up once per pass however many
 * read its log. */
static void
log_state(struct daemon *d, struct notify *nf, int64_t job_id, int *live,
          int64_t *size)
{
	struct umap_slot *s = umap_find(&nf->logs, (uint64_t)job_id);

	if (s == NULL && (s = umap_get(&nf->logs, (uint64_t)job_id)) != NULL) {
		s->a = jobs_is_live(d, job_id) + 1;
		s->b = notify_log_size(d, job_id);
	}
	*live = s != NULL ? (int)s->a - 1 : jobs_is_live(d, job_id);
	*size = s != NULL ? s->b : -1;
}

/* The logs being read: on a tick every reader's (client_id 0), else one
 * client's, whose writes have drained. */
static void
notify_pump_logs(struct daemon *d, struct notify *nf, uint64_t client_id)
{
	int64_t size;
	size_t i;
	int live;

	umap_clear(&nf->logs);
	for (i = 0; i < nf->n; i++) {
		struct watch *w = &nf->v[i];

		if (w->client_id == 0 || w->kind != WATCH_LOG ||
		    (client_id != 0 && w->client_id != client_id))
			continue;
		log_state(d, nf, w->job_id, &live, &size);
		if (notify_log_pump(d, w, live, size))
			watch_clear(nf, w);
	}
	notify_log_pass_end();
}

void
notify_sample(struct daemon *d, const struct sys_sample *s)
{
	struct notify *nf = d->notify;

	uint64_t start_ns = uv_hrtime();

	if (nf == NULL ||
	    (nf->nsubs == 0 && nf->nlogs == 0 && nf->ncatching == 0))
		return;
	nf->tick++;
	nf->walking++;
	if (nf->nmeters > 0)
		notify_scan_meters(d, nf, start_ns);
	if (nf->nsubs > 0)
		notify_samples(d, nf, s);
	if (nf->nlogs > 0)
		notify_pump_logs(d, nf, 0);
	if (nf->ncatching > 0)
		notify_pump_events(d, nf, 0);
	nf->walking--;
	notify_compact(nf);
}

/* ---- what clients ask for ---- */

/* The meter of (pid, start_time), shared; a new one counts against uid's
 * meters (root is not limited). */
static int
meter_get(struct daemon *d, struct notify *nf, uid_t uid, pid_t pid,
          uint64_t start_time, struct meter **out, char *cause, size_t causelen)
{
	struct umap_slot *u;
	struct meter *m, **nv;
	size_t i;

	for (i = 0; i < nf->nmeters; i++) {
		m = nf->meters[i];
		if (m->pid == pid && m->start_time == start_time) {
			m->refs++;
			*out = m;
			return 0;
		}
	}
	u = umap_find(&nf->uids, uid_key(uid));
	if (uid != 0 && u != NULL && u->b >= d->cfg.max_meters_per_uid) {
		snprintf(cause, causelen,
		         "limit reached: %d metered process trees per user",
		         d->cfg.max_meters_per_uid);
		return PROTO_E_LIMIT;
	}
	if (nf->nmeters == nf->capmeters) {
		size_t cap = nf->capmeters ? nf->capmeters * 2 : 8;
		if ((nv = realloc(nf->meters, cap * sizeof *nv)) == NULL)
			goto oom;
		nf->meters = nv;
		nf->capmeters = cap;
	}
	if ((m = calloc(1, sizeof *m)) == NULL ||
	    (m->tree = proctree_new(pid, 0, start_time)) == NULL ||
	    (u = umap_get(&nf->uids, uid_key(uid))) == NULL) {
		if (m != NULL)
			proctree_free(m->tree);
		free(m);
		goto oom;
	}
	proctree_set_scan_interval(m->tree, d->cfg.interval_ms);
	m->pid = pid;
	m->start_time = start_time;
	m->owner = uid;
	m->refs = 1;
	u->b++;
	nf->meters[nf->nmeters++] = m;
	*out = m;
	return 0;
oom:
	snprintf(cause, causelen, "out of memory");
	return PROTO_E_INTERNAL;
}

int
notify_subscribe(struct daemon *d, uint64_t client_id, uid_t uid, int samples,
                 int events, pid_t pid, uint64_t start_time, char *cause,
                 size_t causelen)
{
	struct notify *nf = d->notify;
	struct meter *m = NULL;
	struct watch *w;
	int rc;

	w = watch_find(nf, client_id, WATCH_SUB);
	if (pid > 0 && (rc = meter_get(d, nf, uid, pid, start_time, &m, cause,
	                               causelen)) != 0)
		return rc;
	if (w == NULL &&
	    (w = watch_add(nf, client_id, uid, WATCH_SUB)) == NULL) {
		if (m != NULL)
			meter_release(nf, m);
		snprintf(cause, causelen, "out of memory");
		return PROTO_E_INTERNAL;
	}
	/* After taking the new one: the same tree again keeps its meter. */
	if (w->meter != NULL)
		meter_release(nf, w->meter);
	w->uid = uid;
	/* Metering a pid only makes sense with samples to carry it. */
	w->samples = samples || pid > 0;
	w->events = events;
	w->meter = m;
	return 0;
}

/* Ends the subscription and an events follow. */
void
notify_unsubscribe(struct daemon *d, uint64_t client_id)
{
	struct notify *nf = d->notify;
	struct watch *w;

	if (nf == NULL)
		return;
	if ((w = watch_find(nf, client_id, WATCH_SUB)) != NULL)
		watch_clear(nf, w);
	if ((w = watch_find(nf, client_id, WATCH_EVENTS)) != NULL)
		watch_clear(nf, w);
	notify_compact(nf);
}

int
notify_follow_events(struct daemon *d, uint64_t client_id, uid_t uid,
                     int64_t after_id, int64_t job_id,
                     const struct job_filter *f)
{
	struct notify *nf = d->notify;
	struct watch *w;

	if (watch_find(nf, client_id, WATCH_EVENTS) != NULL)
		return 0;
	if ((w = watch_add(nf, client_id, uid, WATCH_EVENTS)) == NULL)
		return -ENOMEM;
	if (f != NULL && jobs_filter_any(f)) {
		if ((w->filter = malloc(sizeof *w->filter)) == NULL) {
			w->client_id = 0;
			nf->n--;
			return -ENOMEM;
		}
		*w->filter = *f;
	}
	/* Whatever came after the answer's last event is read from the
	 * store once the answer is out, then it goes live. */
	w->cursor = after_id;
	w->job_id = job_id;
	nf->ncatching++;
	return 0;
}

/* Room for one more deferred answer (to req_id) on the connection, and for
 * its uid across its connections? Counted, not walked. */
static int
notify_defer_check(struct daemon *d, struct notify *nf, uint64_t client_id,
                   uid_t uid, const cJSON *req_id, char *cause, size_t causelen)
{
	struct umap_slot *c = umap_find(&nf->clients, client_id);
	struct umap_slot *u = umap_find(&nf->uids, uid_key(uid));
	int64_t n = c != NULL ? c->a : 0, bytes = c != NULL ? c->b : 0;

	bytes += (int64_t)id_bytes(req_id);
	if (n + 1 > NOTIFY_MAX_DEFERRED ||
	    bytes > (int64_t)NOTIFY_MAX_DEFERRED_ID_BYTES) {
		snprintf(cause, causelen,
		         "limit reached: at most %d wait and logs requests "
		         "pending on one connection, their ids %u bytes in all",
		         NOTIFY_MAX_DEFERRED, NOTIFY_MAX_DEFERRED_ID_BYTES);
		return PROTO_E_LIMIT;
	}
	if (uid != 0 && u != NULL && u->a + 1 > d->cfg.max_deferred_per_uid) {
		snprintf(cause, causelen,
		         "limit reached: at most %d wait and logs requests "
		         "pending for one user across connections",
		         d->cfg.max_deferred_per_uid);
		return PROTO_E_LIMIT;
	}
	return 0;
}

/* A watch that answers req_id later. */
static struct watch *
deferred_add(struct daemon *d, struct notify *nf, uint64_t client_id, uid_t uid,
             enum watch_kind kind, const cJSON *req_id, int64_t job_id,
             char *cause, size_t causelen)
{
	struct watch *w;
	cJSON *id;

	if (notify_defer_check(d, nf, client_id, uid, req_id, cause,
	                       causelen) != 0)
		return NULL;
	if ((id = cJSON_Duplicate(req_id, 1)) == NULL ||
	    tally_in(nf, client_id, uid, (int64_t)id_bytes(id)) != 0) {
		cJSON_Delete(id);
		snprintf(cause, causelen, "out of memory");
		return NULL;
	}
	if ((w = watch_add(nf, client_id, uid, kind)) == NULL) {
		tally_out(nf, client_id, uid, (int64_t)id_bytes(id));
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
	if (deferred_add(d, d->notify, client_id, uid, WATCH_WAIT, req_id,
	                 job_id, cause, causelen) == NULL)
		return strncmp(cause, "limit", 5) == 0 ? PROTO_E_LIMIT
		                                       : PROTO_E_INTERNAL;
	return 0;
}

int
notify_logs(struct daemon *d, uint64_t client_id, uid_t uid,
            const cJSON *req_id, int64_t job_id, uint64_t offset, int follow,
            char *cause, size_t causelen)
{
	struct notify *nf = d->notify;
	struct watch *w;
	int rc;

	if ((rc = notify_log_offset_check(d, job_id, offset, cause,
	                                  causelen)) != 0)
		return rc;
	w = deferred_add(d, nf, client_id, uid, WATCH_LOG, req_id, job_id,
	                 cause, causelen);
	if (w == NULL)
		return strncmp(cause, "limit", 5) == 0 ? PROTO_E_LIMIT
		                                       : PROTO_E_INTERNAL;
	w->offset = offset;
	w->follow = follow;
	/* Read now what is there; the rest on the following ticks. The
	 * reply goes through server_reply, after the log notifications. */
	nf->walking++;
	if (notify_log_pump(d, w, jobs_is_live(d, job_id), -1))
		watch_clear(nf, w);
	notify_log_pass_end();
	nf->walking--;
	notify_compact(nf);
	return 0;
}

/* ---- the server's hooks ---- */

size_t
notify_deferred(struct daemon *d, uint64_t client_id)
{
	struct notify *nf = d->notify;
	struct umap_slot *c;

	if (nf == NULL || (c = umap_find(&nf->clients, client_id)) == NULL)
		return 0;
	return (size_t)c->a;
}

void
notify_writable(struct daemon *d, uint64_t client_id)
{
	struct notify *nf = d->notify;

	if (nf == NULL || (nf->nlogs == 0 && nf->ncatching == 0))
		return;
	nf->walking++;
	if (nf->nlogs > 0)
		notify_pump_logs(d, nf, client_id);
	if (nf->ncatching > 0)
		notify_pump_events(d, nf, client_id);
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
