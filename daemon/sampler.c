/*
 * The clock (sampler.h): a libuv timer at the configured interval that
 * samples the system and calls the tick. A tick never runs inside another.
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
	int in_tick;
	int sample_failing;
};

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
		sm->tick(d, NULL);
		return;
	}
	if (sm->sample_failing)
		log_info("sampling system memory works again");
	sm->sample_failing = 0;
	s.ts_ms = now_ms();
	sm->tick(d, &s);
}

static void
sampler_timer_cb(uv_timer_t *t)
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
	uv_timer_start(&sm->timer, sampler_timer_cb,
	               (uint64_t)d->cfg.interval_ms,
	               (uint64_t)d->cfg.interval_ms);
	sampler_timer_cb(&sm->timer);
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
