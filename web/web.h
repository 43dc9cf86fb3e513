/*
 * stageload-web: an unprivileged, read-only HTTP front of the daemon
 * (docs/dashboards.md). It is a client through libstageload like any
 * other; it serves only what any local user may see, and builds every
 * answer from an allow-list of public members (web-json.c), so a private
 * member the daemon sends (a command, a cwd, a detail) never reaches it.
 *
 * Files: stageload-web.c (options, listening, the HTTP front and its
 * checks), web-daemon.c (the connection to the daemon and its
 * snapshots), web-json.c (the public objects), web-metrics.c (/metrics),
 * web-page.c (/), web-api.c (/api/...), and svg-plot.c, the renderer
 * shared with `stageloadctl plot`.
 */
#ifndef SL_WEB_H
#define SL_WEB_H

#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "stageload.h"
#include "svg-plot.h"

#define WEB_DEFAULT_PORT 9473

/* Ended jobs a page asks for at most (lanes and latest kills). */
#define WEB_ENDED_MAX 200
/* Queued jobs a page keeps (in queue order); the rest are counted. */
#define WEB_QUEUED_MAX 100
/* Lanes drawn at most; the rest are counted below the plot. */
#define WEB_LANES_MAX 40
/* Events of one job a job page reads at most (its stages and end). */
#define WEB_JOB_EVENTS 1000

/* The connection to the daemon, used from the HTTP thread only. */
struct web_daemon {
	const char *socket; /* --socket, or NULL */
	sl_client *c;
	int64_t started_at_ms; /* the daemon's, as last seen */
	uint64_t restarts;     /* started_at_ms changed while we watched */
	uint64_t reconnects;   /* connections made after the first */
	int64_t connected_at_ms;
	int64_t last_restart_ms; /* when we saw it restarted */
	int ever;                /* connected once */
	/* The latest WEB_EVENTS_KEPT public events, oldest first, kept
	 * between answers so that each reads only the events after them
	 * (events_last: the newest one's id); NULL until read once, and
	 * again after the daemon restarted (its ids may begin anew). */
	cJSON *events;
	int64_t events_last;
	char error[256]; /* why the last attempt failed, "" when up */
	/* --db: a sanitised copy of the database (docs/storage.md), whose
	 * history the page draws while the daemon is down; NULL without */
	const char *db;
};

/* What one answer is built from. Each member is NULL when not asked for
 * or not had; the whole is freed with web_snap_free. */
struct web_snap {
	int up;          /* the daemon answered */
	cJSON *info;     /* info result */
	cJSON *jobs;     /* array of Job: live, then ended (if asked) */
	cJSON *events;   /* array of Event, oldest first: the daemon's
	                  * cache (wd->events), not freed with the snap */
	cJSON *history;  /* history result */
	int queued_left; /* queued jobs past WEB_QUEUED_MAX, not in jobs */
	int64_t now_ms;
};

enum {
	WEB_SNAP_JOBS = 1,
	WEB_SNAP_ENDED = 2, /* with ended jobs, newest first */
	WEB_SNAP_EVENTS = 4,
	/* only the jobs holding memory (the head of the status list): one
	 * small page however long the queue is */
	WEB_SNAP_HELD = 8,
	/* every queued job, not only the first WEB_QUEUED_MAX */
	WEB_SNAP_QUEUE_ALL = 16,
};

void web_daemon_init(struct web_daemon *wd, const char *socket);
void web_daemon_close(struct web_daemon *wd);
/* Fill snap with info and what `what` asks; ended jobs back to
 * since_ms. On failure snap->up is 0 and wd->error says why. */
void web_snap_take(struct web_daemon *wd, int what, int64_t since_ms,
                   struct web_snap *snap);
void web_snap_free(struct web_snap *snap);
/* One call, reconnecting once when the connection had dropped. */
int web_daemon_call(struct web_daemon *wd, const char *method,
                    const char *params, cJSON **result);
/* Job id's events into the array into, public members only, oldest
 * first, at most WEB_JOB_EVENTS: every page read (a page may end early,
 * its slice of the daemon's loop over, with the rest to come). */
int web_daemon_job_events(struct web_daemon *wd, int64_t id, cJSON *into);

/* web-json.c: the public members only; new objects. */
cJSON *web_public_job(const cJSON *job);
cJSON *web_public_event(const cJSON *ev);
cJSON *web_public_info(const cJSON *info);
/* JSON text with < > & as \u escapes (safe inside HTML too). */
char *web_json_print(const cJSON *o);
/* Helpers to read a member: a number (def when absent or null), a
 * string (NULL when absent or not a string). */
double web_num(const cJSON *o, const char *name, double def);
const char *web_str(const cJSON *o, const char *name);

/* web-offline.c: a sanitised copy of the database (--db), read through
 * daemon/store-read.c while the daemon is down. Open checks that the file
 * opens read-only and holds nothing private (web_offline_check at start:
 * the cause says why not); the rest read the open copy into the objects
 * the daemon answers with, public members only. */
struct web_offline {
	struct sqlite3 *db;
};
int web_offline_check(const char *path, char *cause, size_t len);
int web_offline_open(struct web_offline *off, const char *path, char *cause,
                     size_t len);
void web_offline_close(struct web_offline *off);
/* The time of the newest sample, job end or event in the copy, 0 when
 * it has no sample. */
int web_offline_last_ms(struct web_offline *off, int64_t *last, char *cause,
                        size_t len);
/* A history result as the daemon's `history` answers it. */
int web_offline_history(struct web_offline *off, int64_t since, int64_t until,
                        int64_t step, cJSON **out, char *cause, size_t len);
/* snap's jobs (those whose lives meet [t0, t1], newest first) and
 * *events (of [t0, t1], oldest first; snap->events points at them, and
 * the caller frees them after web_snap_free); snap->up stays 0. */
int web_offline_snap(struct web_offline *off, int64_t t0, int64_t t1,
                     struct web_snap *snap, cJSON **events, char *cause,
                     size_t len);
/* One job of the copy for /job/ID: its public Job, its history as the
 * daemon's history {job_id} answers it, and its events (its stages)
 * appended to events; -ENOENT when the copy has no such job. */
int web_offline_job(struct web_offline *off, int64_t id, cJSON **job,
                    cJSON **history, cJSON *events, char *cause, size_t len);

/* The pages. Each appends its body to out and returns the HTTP status;
 * *type is the Content-Type. */
struct web_request {
	const char *path;
	/* query parameters, looked up by name (NULL when absent) */
	const char *(*arg)(void *ctx, const char *name);
	/* the first parameter whose name is not in known (NULL-ended), into
	 * buf; 0 when there is none */
	int (*unknown)(void *ctx, const char *const *known, char *buf,
	               size_t len);
	void *ctx;
};
int web_metrics(struct web_daemon *wd, const struct web_request *rq,
                struct svgp_buf *out, const char **type);
int web_page(struct web_daemon *wd, const struct web_request *rq,
             struct svgp_buf *out, const char **type);
/* /job/ID: one job's public fields, its plot and its marks; 404 for no
 * such job. */
int web_job_page(struct web_daemon *wd, const struct web_request *rq,
                 struct svgp_buf *out, const char **type);
int web_api(struct web_daemon *wd, const struct web_request *rq,
            struct svgp_buf *out, const char **type);

/* Query parameters: an integer in [min, max], or a duration ("15m",
 * "1h", "7d", plain seconds). -1 when malformed, 0 when absent. */
int web_arg_int(const struct web_request *rq, const char *name, int64_t min,
                int64_t max, int64_t *out);
int web_arg_duration_ms(const struct web_request *rq, const char *name,
                        int64_t *out);

#endif
