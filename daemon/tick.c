/*
 * The tick, top to bottom: measure (the sampler did), enforce and admit
 * (jobs), add the sample to the store's batch (no I/O), tell the clients
 * (notify), then storage housekeeping. Enforcement comes first and never
 * waits on storage or clients (docs/jobs.md): the store is written only at
 * the end, in batches every few seconds, and a failing write is logged
 * once, shown in `info` and retried while sampling goes on.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>

#include "awake.h"
#include "jobs.h"
#include "log.h"
#include "notify.h"
#include "platform.h"
#include "sampler.h"
#include "spawn.h"
#include "store.h"
#include "tick.h"
#include "units.h"

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
/* While storage fails, each failing area is written this often
 * (store_health_probe): a freed disk resumes admissions within a probe
 * and a tick, with nothing else written meanwhile. */
#define PROBE_EVERY_MS 2000

struct tick {
	uint64_t last_checkpoint, last_prune; /* loop time */
	uint64_t last_probe;                  /* loop time */
	int unflushed;                        /* samples since the last flush */
	int mark_pending; /* the start marker is not written yet */
	int unhealthy;    /* the store's health was last seen failing */
	int ckpt_rc;      /* the checkpoint thread's last result, as logged */
	enum awake_hold awake; /* held now (platform_keep_awake) */
	int awake_failed;      /* its last change failed (logged once) */
	int64_t last_admit_ms; /* the latest admission seen, or the start */
};

/* The store owns its health (store_health); this logs its changes. */
static void
tick_health(struct daemon *d, struct tick *t)
{
	const char *health = store_health(d->store);

	if (health != NULL && !t->unhealthy)
		log_warnx("storage: %s (sampling goes on; "
		          "samples are kept in memory and retried; "
		          "admissions wait)",
		          health);
	else if (health == NULL && t->unhealthy)
		log_info("storage works again");
	t->unhealthy = health != NULL;
}

/* The checkpoint thread's failures (I/O, a full disk: the WAL then grows)
 * are logged when its result changes, once a minute at most. */
static void
tick_checkpoint_log(struct daemon *d, struct tick *t)
{
	struct store_ckpt_stats st;

	if (store_checkpoint_stats(d->store, &st) != 0 ||
	    st.last_rc == t->ckpt_rc)
		return;
	if (st.last_rc != 0)
		log_warnx("storage: checkpointing the WAL failed: %s (it "
		          "grows until a checkpoint works)",
		          strerror(-st.last_rc));
	else
		log_info("storage: the WAL is checkpointed again");
	t->ckpt_rc = st.last_rc;
}

/*
 * The database's file system: below the floor (min_free_disk) only root's
 * submits are taken (jobs_submit), so one user filling the disk never
 * stops root's. One statvfs a tick (a few microseconds; looking less
 * often would let the submits in between fill the disk); the submit reads
 * the result.
 */
static void
tick_disk(struct daemon *d)
{
	char dir[1024], *slash, fr[32], fl[32];
	struct statvfs sv;
	uint64_t total, floor, avail;
	int low;

	snprintf(dir, sizeof dir, "%s", d->cfg.db_path);
	if ((slash = strrchr(dir, '/')) == NULL)
		snprintf(dir, sizeof dir, ".");
	else if (slash == dir)
		slash[1] = '\0';
	else
		*slash = '\0';
	if (statvfs(dir, &sv) != 0)
		return; /* keep what was last seen */
	total = (uint64_t)sv.f_blocks * sv.f_frsize;
	avail = (uint64_t)sv.f_bavail * sv.f_frsize;
	if (d->cfg.min_free_disk_auto) {
		floor = total / 20;
		if (floor > ((uint64_t)1 << 30))
			floor = (uint64_t)1 << 30;
	} else
		floor = d->cfg.min_free_disk_bytes;
	low = floor > 0 && avail < floor;
	if (low != d->disk_low) {
		if (units_format_size(avail, fr, sizeof fr) == NULL)
			snprintf(fr, sizeof fr, "%" PRIu64, avail);
		if (units_format_size(floor, fl, sizeof fl) == NULL)
			snprintf(fl, sizeof fl, "%" PRIu64, floor);
		if (low)
			log_warnx("storage: %s has %s free, below "
			          "min_free_disk (%s): only root's submits "
			          "are taken until there is more",
			          dir, fr, fl);
		else
			log_info("storage: %s has %s free again (min_free_disk "
			         "%s): submits are taken from everyone",
			         dir, fr, fl);
	}
	d->disk_free_bytes = avail;
	d->disk_floor_bytes = floor;
	d->disk_low = low;
}

static void
tick_flush(struct daemon *d, struct tick *t)
{
	char cause[256];

	t->unflushed = 0;
	cause[0] = '\0';
	/* The start marker (history shows a gap across a restart) goes with
	 * the samples: while it cannot be written it is retried every tick,
	 * and admissions wait as for any failing write. */
	if (t->mark_pending && store_mark(d->store, d->started_ms, "start",
	                                  cause, sizeof cause) != 0)
		return;
	t->mark_pending = 0;
	store_flush(d->store, cause, sizeof cause);
}

static void
tick_forget_job(void *arg, int64_t id)
{
	struct daemon *d = arg;

	spawn_forget(d->cfg.state_dir, id);
}

/* The checkpoint keeps its own clock, so commits made early for history
 * queries neither delay it nor add to it. */
static void
tick_housekeeping(struct daemon *d, struct tick *t)
{
	uint64_t now = uv_now(d->loop);
	char cause[256];

	t->unflushed++;
	tick_disk(d);
	if (now - t->last_checkpoint >= CHECKPOINT_EVERY_MS) {
		tick_flush(d, t);
		t->last_checkpoint = now;
		tick_checkpoint_log(d, t);
		store_checkpoint(d->store);
	} else if (t->unflushed >= FLUSH_EVERY_SAMPLES || t->mark_pending ||
	           store_health(d->store) != NULL)
		/* While writes fail, every tick tries: health follows the
		 * writes, and admissions resume as soon as they work. */
		tick_flush(d, t);
	if (store_health(d->store) != NULL &&
	    now - t->last_probe >= PROBE_EVERY_MS) {
		t->last_probe = now;
		store_health_probe(d->store);
	}
	if (now - t->last_prune >= PRUNE_EVERY_MS) {
		int64_t ms = clock_wall_ms();

		t->last_prune = now;
		/* The files first: a job whose row goes keeps nothing. */
		if (store_jobs_expiring(d->store, ms, &d->cfg.retention,
		                        tick_forget_job, d) != 0)
			log_warnx("prune: cannot list expired jobs");
		if (store_prune(d->store, ms, &d->cfg.retention, cause,
		                sizeof cause) != 0)
			log_warnx("prune: %s", cause);
	}
	tick_health(d, t);
}

/*
 * While a job holds memory the machine must not idle-sleep under it, and
 * while a queued job could start, an overnight queue must not stall at
 * the first idle timeout: the rule and its bounds are awake_decide's
 * (docs/jobs.md, "Keeping the machine awake").
 */
static void
tick_keep_awake(struct daemon *d, struct tick *t, int stopping)
{
	struct awake_in in = {0};
	struct awake_out out;
	int64_t admitted;
	char cause[256];

	jobs_awake_counts(d, &in.holding, &in.ready, &admitted);
	/* Remembered past the job's end: the bound counts from the last
	 * admission whether or not that job still runs. */
	if (admitted > t->last_admit_ms)
		t->last_admit_ms = admitted;
	in.enabled = !stopping && d->cfg.keep_awake;
	in.queue_ms = d->cfg.keep_awake_queue_ms;
	in.now_ms = clock_wall_ms();
	in.last_admit_ms = t->last_admit_ms;
	awake_decide(&in, &out);
	d->awake.hold = (int)out.hold;
	d->awake.until_ms = out.until_ms;
	d->awake.why = out.why;
	/* Asked again each tick while held: the platform starts its
	 * holder again if it went. */
	if (out.hold == AWAKE_NONE && t->awake == AWAKE_NONE)
		return;
	cause[0] = '\0';
	if (platform_keep_awake((int)out.hold, cause, sizeof cause) != 0) {
		if (!t->awake_failed)
			log_warnx("keep awake: %s", cause);
		t->awake_failed = 1;
		return; /* tried again next tick */
	}
	if (t->awake_failed)
		log_info("keep awake: works again");
	if (out.hold != t->awake)
		log_info("keep awake: %s: %s",
		         out.hold == AWAKE_NONE ? "released" : "held",
		         out.why != NULL ? out.why
		                         : "no job holds memory "
		                           "or could start");
	t->awake_failed = 0;
	t->awake = out.hold;
}

/*
 * A sample in between the normal ones (full 0: the sampler is fast, see
 * jobs_fast_reason) drives enforcement, admission and settle only: what is
 * stored and published stays at the normal interval, so the fast rate
 * costs neither the database nor the clients. The rate for the next
 * sample is chosen last.
 */
void
tick_run(struct daemon *d, const struct sys_sample *s, int full)
{
	if (d->tick == NULL)
		return;
	if (s != NULL) {
		d->last = *s;
		d->have_last = 1;
		/* measure jobs, enforce, admit */
		jobs_on_sample_at(d, s, full);
		if (full) {
			store_add_sample(d->store, s); /* buffered: no I/O */
			notify_sample(d, s); /* subscribers, meters, logs */
			tick_keep_awake(d, d->tick, 0);
		}
	}
	if (full)
		tick_housekeeping(d, d->tick);
	d->fast_reason = s != NULL ? jobs_fast_reason(d, s) : NULL;
	sampler_set_fast(d, d->fast_reason != NULL);
}

int
tick_start(struct daemon *d, char *cause, size_t causelen)
{
	struct tick *t;
	uint64_t now = uv_now(d->loop);

	if ((t = calloc(1, sizeof *t)) == NULL) {
		snprintf(cause, causelen, "out of memory");
		return -ENOMEM;
	}
	t->last_checkpoint = now;
	t->last_prune = now - PRUNE_EVERY_MS + PRUNE_FIRST_MS;
	/* A queue read back at a restart is held for keep_awake_queue from
	 * the start, as if just admitted to. */
	t->last_admit_ms = clock_wall_ms();
	t->mark_pending = 1;
	d->tick = t;
	tick_disk(d);
	tick_flush(d, t);
	tick_health(d, t);
	return 0;
}

void
tick_stop(struct daemon *d)
{
	char cause[256];

	if (d->tick == NULL)
		return;
	/* Running jobs are left to their monitors, but the machine may
	 * sleep again once nobody follows them. */
	tick_keep_awake(d, d->tick, 1);
	free(d->tick);
	d->tick = NULL;
	cause[0] = '\0';
	if (store_flush(d->store, cause, sizeof cause) != 0)
		log_warnx("last flush: %s", cause);
}
