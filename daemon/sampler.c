/*
 * The sample tick. Order matters: the sample is buffered for the store
 * (no I/O), then jobs enforce budgets and admit, then subscribers are
 * told; only after that is the store flushed, in small batches every few
 * seconds, so enforcement never waits on the disk. A storage failure is
 * logged once, shown in `info`, and sampling goes on.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jobs.h"
#include "log.h"
#include "proctree.h"
#include "proto.h"
#include "sampler.h"
#include "server.h"
#include "spawn.h"
#include "version.h"

/*
 * Samples are committed every FLUSH_EVERY_SAMPLES samples (12 s at 0.1 s)
 * and every CHECKPOINT_EVERY_MS, when the WAL is also checkpointed, which
 * syncs it; at the default 0.5 s both fall on the same tick, once a
 * minute. A commit costs about 250 us of CPU plus about 3 us a sample and
 * a checkpoint about 300 us, so large batches keep the cost per sample low
 * (docs/benchmarks.md). A history query commits what is pending first, so
 * answers are never behind. A daemon crash loses at most one batch of
 * system and job samples (job states and events are committed at once); a
 * power loss loses at most a minute and one interval.
 */
#define FLUSH_EVERY_SAMPLES 120
#define CHECKPOINT_EVERY_MS 60000
#define PRUNE_EVERY_MS (3600 * 1000)
#define PRUNE_FIRST_MS 60000 /* first prune a minute after start */

struct sub {
	uint64_t client_id; /* 0: removed while publishing */
	uid_t uid;
	int samples;
	int events;
	pid_t pid; /* metered tree, 0 when none */
	struct proctree *tree;
};

struct sampler {
	uv_timer_t timer;
	struct daemon *d;
	struct sub *subs;
	size_t nsubs, cap;
	int publishing;
	uint64_t last_checkpoint, last_prune; /* loop time */
	int unflushed;                        /* samples since the last flush */
	uint64_t due_ns; /* uv_hrtime() when the next sample is due */
	int in_tick;
	int sample_failing;
	int storage_failing;
	int mark_pending; /* the start marker is not written yet */
};

const char *
sampler_pressure_name(enum pressure_level p)
{
	switch (p) {
	case PRESSURE_NORMAL:
		return "normal";
	case PRESSURE_WARN:
		return "warn";
	case PRESSURE_CRITICAL:
		return "critical";
	default:
		return "unknown";
	}
}

cJSON *
sampler_sample_json(const struct sys_sample *s)
{
	cJSON *o;

	if ((o = cJSON_CreateObject()) == NULL)
		return NULL;
	proto_add_int(o, "sampled_at_ms", s->ts_ms);
	proto_add_int(o, "total_bytes", (int64_t)s->total_bytes);
	proto_add_int(o, "available_bytes", (int64_t)s->available_bytes);
	cJSON_AddNumberToObject(o, "free_pct", s->free_pct);
	proto_add_int(o, "swap_total_bytes", (int64_t)s->swap_total_bytes);
	proto_add_int(o, "swap_used_bytes", (int64_t)s->swap_used_bytes);
	cJSON_AddStringToObject(o, "pressure",
	                        sampler_pressure_name(s->pressure));
	if (s->psi_some_avg10 >= 0)
		cJSON_AddNumberToObject(o, "psi_some_avg10", s->psi_some_avg10);
	else
		cJSON_AddNullToObject(o, "psi_some_avg10");
	proto_add_int(o, "compressed_bytes", (int64_t)s->compressed_bytes);
	proto_add_int(o, "wired_bytes", (int64_t)s->wired_bytes);
	return o;
}

static struct sub *
sub_find(struct sampler *sm, uint64_t client_id)
{
	size_t i;

	for (i = 0; i < sm->nsubs; i++)
		if (sm->subs[i].client_id == client_id)
			return &sm->subs[i];
	return NULL;
}

static void
sub_clear_pid(struct sub *s)
{
	proctree_free(s->tree);
	s->tree = NULL;
	s->pid = 0;
}

/* Drop removed entries once nobody is iterating over the array. */
static void
subs_compact(struct sampler *sm)
{
	size_t i, j = 0;

	for (i = 0; i < sm->nsubs; i++)
		if (sm->subs[i].client_id != 0)
			sm->subs[j++] = sm->subs[i];
	sm->nsubs = j;
}

void
sampler_unsubscribe(struct daemon *d, uint64_t client_id)
{
	struct sampler *sm = d->sampler;
	struct sub *s;

	if (sm == NULL || (s = sub_find(sm, client_id)) == NULL)
		return;
	sub_clear_pid(s);
	s->client_id = 0;
	if (!sm->publishing)
		subs_compact(sm);
}

static void
sampler_gone(struct daemon *d, uint64_t client_id)
{
	sampler_unsubscribe(d, client_id);
}

int
sampler_subscribe(struct daemon *d, uint64_t client_id, uid_t uid, int samples,
                  int events, pid_t pid, uint64_t start_time, char *cause,
                  size_t causelen)
{
	struct sampler *sm = d->sampler;
	struct proctree *tree = NULL;
	struct sub *s, *ns;

	if (sm == NULL) {
		snprintf(cause, causelen, "the sampler is not running");
		return -ESRCH;
	}
	if (pid > 0 && (tree = proctree_new(pid, 0, start_time)) == NULL) {
		snprintf(cause, causelen, "out of memory");
		return -ENOMEM;
	}
	if ((s = sub_find(sm, client_id)) == NULL) {
		if (sm->nsubs == sm->cap) {
			size_t cap = sm->cap ? sm->cap * 2 : 16;
			if ((ns = realloc(sm->subs, cap * sizeof *ns)) ==
			    NULL) {
				proctree_free(tree);
				snprintf(cause, causelen, "out of memory");
				return -ENOMEM;
			}
			sm->subs = ns;
			sm->cap = cap;
		}
		s = &sm->subs[sm->nsubs++];
		memset(s, 0, sizeof *s);
		s->client_id = client_id;
	}
	s->uid = uid;
	sub_clear_pid(s);
	/* Metering a pid only makes sense with samples to carry it. */
	s->samples = samples || pid > 0;
	s->events = events;
	s->pid = pid;
	s->tree = tree;
	if (tree != NULL)
		proctree_set_scan_interval(tree, d->cfg.interval_ms);
	return 0;
}

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
sampler_meter_json(struct daemon *d, struct sub *s, const struct sys_sample *ss)
{
	uint64_t footprint = 0, swap = 0;
	size_t nprocs = 0;
	cJSON *o, *gone;

	proctree_sample(s->tree, (int64_t)uv_now(d->loop), &footprint, &swap,
	                &nprocs);
	if (nprocs == 0) {
		gone = cJSON_CreateObject();
		proto_add_int(gone, "pid", s->pid);
		server_notify(d, s->client_id, "process_gone", gone);
		sub_clear_pid(s);
		return NULL;
	}
	if ((o = sampler_sample_json(ss)) == NULL)
		return NULL;
	proto_add_int(o, "pid", s->pid);
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
sampler_publish(struct daemon *d, struct sampler *sm,
                const struct sys_sample *ss)
{
	char *plain = NULL, *line;
	size_t plain_len = 0, len, i;
	cJSON *o;

	sm->publishing = 1;
	for (i = 0; i < sm->nsubs; i++) {
		struct sub *s = &sm->subs[i];

		if (s->client_id == 0 || !s->samples)
			continue;
		if (s->tree != NULL &&
		    (o = sampler_meter_json(d, s, ss)) != NULL) {
			if ((line = encode_note("sample", o, &len)) != NULL) {
				server_send_line(d, s->client_id, line, len);
				free(line);
			}
			continue;
		}
		if (s->client_id == 0)
			continue;
		/* Encoded once for every plain subscriber. */
		if (plain == NULL &&
		    (plain = encode_note("sample", sampler_sample_json(ss),
		                         &plain_len)) == NULL)
			continue;
		server_send_line(d, s->client_id, plain, plain_len);
	}
	free(plain);
	sm->publishing = 0;
	subs_compact(sm);
}

/* Every committed job event goes to the subscribers that asked for
 * events, each seeing what its uid may see. */
static void
sampler_on_event(struct daemon *d, const struct store_event *e)
{
	struct sampler *sm = d->sampler;
	size_t i;

	if (sm == NULL)
		return;
	sm->publishing = 1;
	for (i = 0; i < sm->nsubs; i++) {
		if (sm->subs[i].client_id == 0 || !sm->subs[i].events)
			continue;
		server_notify(d, sm->subs[i].client_id, "event",
		              jobs_event_json(e, sm->subs[i].uid));
	}
	sm->publishing = 0;
	subs_compact(sm);
}

/*
 * d->storage_error is shared with jobs.c, which holds admissions while it
 * is set and clears only what it set. The sampler does the same: it sets
 * the message while flushes fail and clears it only when the message is
 * still its own, so a sample flush that works never hides a failing job
 * write.
 */
static void
sampler_storage_result(struct daemon *d, struct sampler *sm, int rc,
                       const char *cause)
{
	if (rc != 0) {
		if (!sm->storage_failing)
			log_warnx("storage: %s (sampling goes on; samples are "
			          "kept in memory and retried)",
			          cause);
		sm->storage_failing = 1;
		if (d->storage_error[0] == '\0' ||
		    strncmp(d->storage_error, "samples: ", 9) == 0)
			snprintf(d->storage_error, sizeof d->storage_error,
			         "samples: %.*s",
			         (int)sizeof d->storage_error - 10, cause);
	} else if (sm->storage_failing) {
		sm->storage_failing = 0;
		log_info("storage works again: samples written");
		if (strncmp(d->storage_error, "samples: ", 9) == 0)
			d->storage_error[0] = '\0';
	}
}

void
sampler_flush(struct daemon *d)
{
	struct sampler *sm = d->sampler;
	char cause[256];
	int rc;

	if (sm == NULL || d->store == NULL)
		return;
	sm->unflushed = 0;
	cause[0] = '\0';
	rc = 0;
	if (sm->mark_pending &&
	    (rc = store_mark(d->store, d->started_ms, "start", cause,
	                     sizeof cause)) == 0)
		sm->mark_pending = 0;
	if (rc == 0)
		rc = store_flush(d->store, cause, sizeof cause);
	sampler_storage_result(d, sm, rc, cause);
}

static void
sampler_forget_job(void *arg, int64_t id)
{
	struct daemon *d = arg;

	spawn_forget(d->cfg.state_dir, id);
}

/* The checkpoint keeps its own clock, so commits made early for history
 * queries neither delay it nor add to it. */
static void
sampler_housekeeping(struct daemon *d, struct sampler *sm)
{
	uint64_t now = uv_now(d->loop);
	char cause[256];

	if (d->store == NULL)
		return;
	sm->unflushed++;
	if (now - sm->last_checkpoint >= CHECKPOINT_EVERY_MS) {
		sampler_flush(d);
		sm->last_checkpoint = now;
		store_checkpoint(d->store);
	} else if (sm->unflushed >= FLUSH_EVERY_SAMPLES || sm->mark_pending)
		sampler_flush(d);
	if (now - sm->last_prune >= PRUNE_EVERY_MS) {
		int64_t t = now_ms();

		sm->last_prune = now;
		/* The files first: a job whose row goes keeps nothing. */
		if (store_jobs_expiring(d->store, t, &d->cfg.retention,
		                        sampler_forget_job, d) != 0)
			log_warnx("prune: cannot list expired jobs");
		if (store_prune(d->store, t, &d->cfg.retention, cause,
		                sizeof cause) != 0)
			log_warnx("prune: %s", cause);
	}
}

/* One sample: measured, stored, enforced, published. */
static void
sampler_sample(struct daemon *d, struct sampler *sm)
{
	struct sys_sample s;
	char cause[256];

	memset(&s, 0, sizeof s);
	s.psi_some_avg10 = -1;
	cause[0] = '\0';
	if (platform_sys_sample(&s, cause, sizeof cause) != 0) {
		if (!sm->sample_failing)
			log_warnx("cannot sample system memory: %s", cause);
		sm->sample_failing = 1;
		sampler_housekeeping(d, sm);
		return;
	}
	if (sm->sample_failing)
		log_info("sampling system memory works again");
	sm->sample_failing = 0;
	s.ts_ms = now_ms();
	d->last = s;
	d->have_last = 1;

	if (d->store != NULL)
		store_add_sample(d->store, &s);
	jobs_on_sample(d, &s);
	if (sm->nsubs > 0)
		sampler_publish(d, sm, &s);
	sampler_housekeeping(d, sm);
}

static void
sampler_tick(uv_timer_t *t)
{
	struct sampler *sm = t->data;
	struct daemon *d = sm->d;

	if (sm->in_tick)
		return;
	sm->due_ns = uv_hrtime() + (uint64_t)d->cfg.interval_ms * 1000000;
	sm->in_tick = 1;
	sampler_sample(d, sm);
	sm->in_tick = 0;
}

/*
 * libuv runs due timers only between rounds of I/O, and a round that serves
 * a thousand busy clients takes tens of milliseconds: enforcement would
 * wait for it. The server calls this after each read, so a sample that is
 * due is taken at once and the timer starts its interval again from here.
 */
void
sampler_run_due(struct daemon *d)
{
	struct sampler *sm = d->sampler;

	if (sm == NULL || sm->in_tick || d->stopping || sm->due_ns == 0 ||
	    uv_hrtime() < sm->due_ns)
		return;
	uv_timer_start(&sm->timer, sampler_tick, (uint64_t)d->cfg.interval_ms,
	               (uint64_t)d->cfg.interval_ms);
	sampler_tick(&sm->timer);
}

int
sampler_start(struct daemon *d, char *cause, size_t causelen)
{
	struct sampler *sm;
	uint64_t now;

	if ((sm = calloc(1, sizeof *sm)) == NULL) {
		snprintf(cause, causelen, "out of memory");
		return -ENOMEM;
	}
	sm->d = d;
	uv_timer_init(d->loop, &sm->timer);
	sm->timer.data = sm;
	now = uv_now(d->loop);
	sm->last_checkpoint = now;
	sm->last_prune = now - PRUNE_EVERY_MS + PRUNE_FIRST_MS;
	d->sampler = sm;
	/* The start marker (history shows a gap across a restart) goes with
	 * the samples: while it cannot be written it is retried every tick,
	 * and admissions wait as for any failing write. */
	sm->mark_pending = 1;
	sampler_flush(d);
	server_on_gone(d, sampler_gone);
	jobs_on_event(d, sampler_on_event);
	/* The first sample at once, so `info` has one right away. */
	uv_timer_start(&sm->timer, sampler_tick, 0,
	               (uint64_t)d->cfg.interval_ms);
	return 0;
}

static void
sampler_closed_cb(uv_handle_t *h)
{
	free(h->data);
}

void
sampler_stop(struct daemon *d)
{
	struct sampler *sm = d->sampler;
	char cause[256];
	size_t i;
	int rc;

	if (sm == NULL)
		return;
	uv_timer_stop(&sm->timer);
	for (i = 0; i < sm->nsubs; i++)
		sub_clear_pid(&sm->subs[i]);
	free(sm->subs);
	sm->subs = NULL;
	sm->nsubs = sm->cap = 0;
	d->sampler = NULL;
	if (d->store != NULL) {
		cause[0] = '\0';
		rc = store_flush(d->store, cause, sizeof cause);
		if (rc != 0)
			log_warnx("last flush: %s", cause);
	}
	uv_close((uv_handle_t *)&sm->timer, sampler_closed_cb);
}
