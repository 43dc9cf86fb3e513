/*
 * The clock (sampler.h): a libuv timer at the configured interval, or at
 * the fast interval while the tick asks for it, that samples the system
 * and calls the tick. A tick never runs inside another.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "sampler.h"

struct sampler {
	uv_timer_t timer;
	struct daemon *d;
	sampler_tick_cb tick;
	uint64_t due_ns; /* uv_hrtime() when the next sample is due */
	/* uv_hrtime() from which the next sample is on the normal schedule
	 * (full): stored and published. */
	uint64_t next_full_ns;
	int fast; /* sampling at the fast interval */
	int soon; /* the next sample is sampler_soon's: never full */
	int in_tick;
	int sample_failing;
};

static uint64_t
sampler_fast_ms(const struct daemon *d)
{
	int64_t f = d->cfg.fast_interval_ms;

	return f > 0 && f < d->cfg.interval_ms ? (uint64_t)f
	                                       : (uint64_t)d->cfg.interval_ms;
}

static uint64_t
sampler_period_ms(const struct sampler *sm)
{
	return sm->fast ? sampler_fast_ms(sm->d)
	                : (uint64_t)sm->d->cfg.interval_ms;
}

int64_t
sampler_interval_ms(const struct daemon *d)
{
	const struct sampler *sm = d->sampler;

	return sm != NULL ? (int64_t)sampler_period_ms(sm) : d->cfg.interval_ms;
}

static void
sampler_sample(struct daemon *d, struct sampler *sm, int full)
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
		sm->tick(d, NULL, full);
		return;
	}
	if (sm->sample_failing)
		log_info("sampling system memory works again");
	sm->sample_failing = 0;
	s.ts_ms = clock_wall_ms();
	sm->tick(d, &s, full);
}

static void
sampler_timer_cb(uv_timer_t *t)
{
	struct sampler *sm = t->data;
	struct daemon *d = sm->d;
	uint64_t now = uv_hrtime();
	uint64_t interval_ns = (uint64_t)d->cfg.interval_ms * 1000000;
	/* A timer may fire a little early by the hrtime clock (the loop's
	 * clock is in ms): half a fast interval of slack. */
	uint64_t slack_ns = sampler_fast_ms(d) * 500000;
	int full;

	if (sm->in_tick)
		return;
	sm->due_ns = now + sampler_period_ms(sm) * 1000000;
	/* sampler_soon's sample is an extra one: the normal schedule goes
	 * on as it was. */
	full = !sm->soon && now + slack_ns >= sm->next_full_ns;
	sm->soon = 0;
	if (full)
		sm->next_full_ns = now + interval_ns;
	sm->in_tick = 1;
	sampler_sample(d, sm, full);
	sm->in_tick = 0;
}

/* (Re)start the timer: the first sample after first_ms, then every
 * period. */
static void
sampler_arm(struct sampler *sm, uint64_t first_ms)
{
	uint64_t period = sampler_period_ms(sm);

	sm->due_ns = uv_hrtime() + first_ms * 1000000;
	uv_timer_start(&sm->timer, sampler_timer_cb, first_ms, period);
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
	sampler_arm(sm, sampler_period_ms(sm));
	sampler_timer_cb(&sm->timer);
}

void
sampler_set_fast(struct daemon *d, int fast)
{
	struct sampler *sm = d->sampler;
	uint64_t now, first;

	if (sm == NULL || d->stopping)
		return;
	fast = fast && sampler_fast_ms(d) < (uint64_t)d->cfg.interval_ms;
	if (fast == sm->fast)
		return;
	sm->fast = fast;
	if (fast) {
		first = sampler_fast_ms(d);
	} else {
		/* Back on the normal schedule: the next full sample. */
		now = uv_hrtime();
		first = sm->next_full_ns > now
		            ? (sm->next_full_ns - now + 999999) / 1000000
		            : 0;
	}
	/* A sample asked for at once (sampler_soon) is not put off. */
	sampler_arm(sm, sm->soon ? 0 : first);
}

void
sampler_soon(struct daemon *d)
{
	struct sampler *sm = d->sampler;

	if (sm == NULL || d->stopping)
		return;
	sm->soon = 1;
	sampler_arm(sm, 0);
}

int
sampler_start(struct daemon *d, sampler_tick_cb tick, char *cause,
              size_t causelen)
{
	struct sampler *sm;

	if ((sm = calloc(1, sizeof *sm)) == NULL) {
		snprintf(cause, causelen, "out of memory");
		return -ENOMEM;
	}
	sm->d = d;
	sm->tick = tick;
	uv_timer_init(d->loop, &sm->timer);
	sm->timer.data = sm;
	d->sampler = sm;
	uv_timer_start(&sm->timer, sampler_timer_cb, 0,
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

	if (sm == NULL)
		return;
	uv_timer_stop(&sm->timer);
	d->sampler = NULL;
	uv_close((uv_handle_t *)&sm->timer, sampler_closed_cb);
}
