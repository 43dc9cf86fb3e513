/*
 * libstageload: the C client of stageloadd.
 *
 * Every call goes over the daemon's Unix socket with the protocol of
 * proto/PROTOCOL.md; docs/client.md has a tour with examples. The library
 * never prints and never exits: each function returns 0 (or a documented
 * non-negative value) on success and a negative code on failure, and the
 * client keeps a readable message for the last failure (sl_errmsg()).
 *
 * Error codes are either a negative errno (-ENOENT, -ECONNREFUSED,
 * -ETIMEDOUT, -EPIPE, -ENOMEM, -EPROTO, ...) or a JSON-RPC error code
 * answered by the daemon (SL_E_NOJOB = -32003, ...). The two ranges never
 * overlap.
 *
 * Threads: an sl_client is not thread-safe. Use one client per thread, or
 * serialise every call on a client yourself. Different clients are
 * independent.
 *
 * Calls block until the daemon answers or the client's timeout passes
 * (sl_set_timeout(); 30 s by default, never for sl_wait() and followed
 * logs). Notifications (samples, queue updates, ...) that arrive while a
 * call waits for its answer are buffered and handed out in order by
 * sl_next_notification(). To drive a client from your own event loop,
 * watch sl_fd() for reading and call sl_process_input(), then drain
 * sl_next_notification() with a zero timeout.
 */
#ifndef STAGELOAD_H
#define STAGELOAD_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The API is what the shared library exports; the rest of it is hidden. */
#if defined(__GNUC__) || defined(__clang__)
#pragma GCC visibility push(default)
#endif

/* The protocol version asked for first; a daemon that does not speak it is
 * asked for version 1 (sl_hello_info() says which one was agreed). */
#define SL_PROTOCOL_VERSION 2

/* JSON-RPC errors the daemon answers with; PROTOCOL.md explains each. */
#define SL_E_PARSE (-32700)
#define SL_E_INVALID_REQUEST (-32600)
#define SL_E_METHOD (-32601)
#define SL_E_PARAMS (-32602)
#define SL_E_INTERNAL (-32603)
#define SL_E_HELLO (-32000)
#define SL_E_VERSION (-32001)
#define SL_E_PERM (-32002)
#define SL_E_NOJOB (-32003)
#define SL_E_LIMIT (-32004)
#define SL_E_STATE (-32005)
#define SL_E_STORAGE (-32006)
#define SL_E_NOPROC (-32007)

/* 1 when code is an errno-style failure of the connection itself (the
 * daemon is not running, went away, or timed out), as opposed to an error
 * the daemon answered or a mistake of the caller's (-EINVAL, -ERANGE,
 * -E2BIG) or -ENOMEM. */
int sl_error_is_connection(int code);

/* A short static description of a code ("no such job", "connection
 * refused"). The client's sl_errmsg() is more specific. */
const char *sl_strerror(int code);

typedef struct sl_client sl_client;

/* NULL when out of memory. The client starts disconnected. */
sl_client *sl_client_new(void);
/* Closes the connection and frees everything. NULL is fine. */
void sl_client_free(sl_client *c);

/*
 * The socket the library would connect to without an explicit path: the
 * first of $STAGELOAD_SOCKET (when set and not empty), the system socket
 * /var/run/stageload.sock if it exists, then the per-user socket
 * $XDG_RUNTIME_DIR/stageload.sock, ~/.stageload/stageload.sock (a home of
 * the user's own) or /tmp/stageload-$UID/stageload.sock. An explicit
 * non-NULL, non-empty path wins over all of them. Returns 0, or
 * -ENAMETOOLONG when buf is too small.
 */
int sl_socket_path(const char *explicit_path, char *buf, size_t len);

/*
 * Connect to path (NULL or "" resolves it as sl_socket_path() does) and
 * say hello. A connected client is closed first, so this also reconnects.
 * When the daemon does not run: -ENOENT or -ECONNREFUSED with the message
 * "daemon not running at PATH (start it with: stageloadd)". A socket that
 * is not the caller's or root's, or is in a directory others can write,
 * is refused before anything is sent: -EPERM, the message naming its
 * owner and the way out (docs/client.md).
 */
int sl_connect(sl_client *c, const char *path);
/* Drop the connection; buffered notifications are discarded. */
void sl_close(sl_client *c);
int sl_is_connected(const sl_client *c);
/* The path of the last connect attempt ("" before any). */
const char *sl_path(const sl_client *c);

/* The last failure on this client: code and readable message. */
int sl_errcode(const sl_client *c);
const char *sl_errmsg(const sl_client *c);

/* Milliseconds a call waits for the daemon to take its request and answer
 * it; -1 waits forever. Default 30000. A request the daemon does not take
 * in time leaves the connection closed (half of it may have been sent).
 * Returns the previous value. */
int sl_set_timeout(sl_client *c, int timeout_ms);

/* What the daemon said to hello. */
struct sl_hello {
	int version;
	char daemon_version[64];
	char os[32];
	int64_t interval_ms;
	int64_t uid; /* the peer uid the daemon sees */
};
const struct sl_hello *sl_hello_info(const sl_client *c);

/*
 * The generic call: method and params as JSON text (an object, or NULL
 * for none); on success *result_json is the result as malloc'd JSON text,
 * freed with sl_free(). result_json may be NULL when the caller does not
 * need the result.
 */
int sl_call(sl_client *c, const char *method, const char *params_json,
            char **result_json);
void sl_free(void *p);
/*
 * A paged method (PROTOCOL.md: status and events in protocol version 2
 * answer a page and a next_cursor): call it with params_json (as
 * sl_call), then again with each answer's next_cursor as "cursor" (in
 * place of after_id and before_id, the place a cursor replaces), until an
 * answer has none. Each answer's items (its member called items,
 * e.g. "jobs"; "[]" when it has none) go to each as JSON text, an array,
 * valid during the call; each returns 0 for the next page, 1 to stop
 * there, or a negative errno to stop with that error. Returns 0 or a
 * negative code (sl_errmsg says why).
 */
int sl_call_pages(sl_client *c, const char *method, const char *params_json,
                  const char *items,
                  int (*each)(const char *items_json, void *arg), void *arg);

/* ---- samples ---- */

struct sl_sample {
	int64_t sampled_at_ms;
	uint64_t total_bytes;
	uint64_t available_bytes;
	double free_pct;
	uint64_t swap_total_bytes;
	uint64_t swap_used_bytes;
	char pressure[16]; /* normal, warn, critical, unknown */
	int has_psi;
	double psi_some_avg10;
	uint64_t compressed_bytes;
	uint64_t wired_bytes;
	/* set in samples of a subscription with a pid */
	int has_pid;
	int64_t pid;
	uint64_t footprint_bytes;
	int has_swap_bytes; /* per-process swap is known (Linux) */
	uint64_t swap_bytes;
	int nprocs;
};

struct sl_info {
	char daemon_version[64];
	int version;
	char os[32];
	int64_t interval_ms;
	int64_t started_at_ms;
	char socket[1024];
	char db_path[1024];
	uint64_t db_bytes;
	char storage_error[256]; /* "" while storage works */
	int has_sample;          /* 0 before the daemon's first sample */
	struct sl_sample sample;
	int jobs_queued;
	int jobs_running;
	/* The rate in force: the fast interval while fast, and why
	 * (docs/jobs.md, "Sampling rate"); "" when not fast. */
	int64_t sampling_interval_ms;
	int sampling_fast;
	char sampling_reason[64];
};
int sl_info(sl_client *c, struct sl_info *info);

/* ---- history ---- */

struct sl_stat {
	double min, avg, max;
};

struct sl_bucket {
	int64_t ts_ms;
	int64_t n;
	/* system history */
	struct sl_stat free_pct;
	struct sl_stat swap_used_bytes;
	struct sl_stat available_bytes;
	char pressure_max[16];
	int gap;
	/* job history */
	struct sl_stat footprint_bytes;
	struct sl_stat swap_bytes;
};

struct sl_history {
	char tier[8];   /* raw, 10s, 1m, 10m; "" for job history */
	int64_t job_id; /* 0 for system history */
	int64_t step_ms;
	int64_t since_ms;
	int64_t until_ms;
	size_t nbuckets;
	struct sl_bucket *buckets;
	/* job history: the stage of each bucket (docs/jobs.md, "Stages"),
	 * NULL where it had none; the array is NULL when no bucket has one */
	char **stages;
};

/* until_ms and step_ms 0 mean the daemon's defaults; job_id 0 asks for
 * system history. Free *out with sl_history_free(). */
int sl_history(sl_client *c, int64_t since_ms, int64_t until_ms,
               int64_t step_ms, int64_t job_id, struct sl_history **out);
void sl_history_free(struct sl_history *h);

/* ---- report: accounting of ended jobs ---- */

/* What report asks (PROTOCOL.md, "report"): the days that hold since_ms
 * to until_ms (until_ms 0: now), by "user", "name" or "user,name" (NULL:
 * "user,name"), of the jobs that pass filter (NULL: every job; see
 * sl_filter below: its user, mine and name, as status takes them; the
 * daemon refuses a state, -32602, as a rollup counts ended jobs only). */
struct sl_filter;
struct sl_report_query {
	int64_t since_ms, until_ms;
	const char *by;
	const struct sl_filter *filter;
};

struct sl_report_kill {
	char *reason; /* an end reason (proto/names.h), as the daemon said it */
	int64_t jobs;
};

/* One row: the jobs of a user, a name or both that ended in those days.
 * runs is the sum of the seven outcomes. */
struct sl_report_row {
	int64_t uid; /* -1 when summed over users */
	char *user;  /* NULL when summed over users */
	char *name;  /* NULL when summed over names */
	int64_t runs, exited_0, exited_nonzero, failed, killed, cancelled, lost;
	size_t nkilled_by;
	struct sl_report_kill *killed_by;
	int64_t ran;                /* of them, started: their run times */
	int64_t run_time_ms;        /* the sum */
	int64_t run_time_median_ms; /* -1 when none ran */
	int64_t time_waited_ms;     /* the sum */
	uint64_t footprint_peak_bytes, swap_growth_peak_bytes;
};

struct sl_report {
	char by[16];
	int64_t since_ms, until_ms;
	int64_t oldest_ms; /* the oldest day the daemon keeps; -1: none */
	size_t nrows;
	struct sl_report_row *rows;
};

/* Free *out with sl_report_free(). */
int sl_report(sl_client *c, const struct sl_report_query *q,
              struct sl_report **out);
void sl_report_free(struct sl_report *r);

/* ---- subscriptions and notifications ---- */

/* pid 0: system samples only. *interval_ms (may be NULL) gets the
 * daemon's sample interval. */
int sl_subscribe(sl_client *c, int samples, int events, int64_t pid,
                 int64_t *interval_ms);
int sl_unsubscribe(sl_client *c);

struct sl_event {
	int64_t id;
	int64_t ts_ms;
	int64_t job_id; /* 0 when the event is not about a job */
	char user[64];
	char kind[32];
	char *detail; /* malloc'd, may be NULL: the detail object as JSON */
};

enum sl_notification_kind {
	SL_N_OTHER = 0, /* a notification this library does not know */
	SL_N_SAMPLE,
	SL_N_PROCESS_GONE,
	SL_N_EVENT,
	SL_N_QUEUE,
	SL_N_ADMITTED,
	SL_N_BREACH,
	SL_N_LOG,
	SL_N_ENDED,
};

struct sl_notification {
	enum sl_notification_kind kind;
	char method[32];
	char *params_json;       /* always set; malloc'd */
	struct sl_sample sample; /* SL_N_SAMPLE */
	struct sl_event event;   /* SL_N_EVENT */
	int64_t pid;             /* SL_N_PROCESS_GONE */
	struct {
		int64_t id;
		int position, of;
		double free_pct, wait_free_pct;
		char waiting_for[32];
	} queue; /* SL_N_QUEUE */
	struct {
		int64_t id;
		int attempt;
	} admitted; /* SL_N_ADMITTED */
	struct {
		int64_t id;
		uint64_t swap_growth_bytes, swap_budget_bytes;
		int requeued;
	} breach; /* SL_N_BREACH */
	struct {
		int64_t id, offset;
		char *data; /* malloc'd, NUL-terminated */
		size_t len;
	} log; /* SL_N_LOG */
	struct {
		int64_t id;
		char state[16]; /* exited, killed, failed, cancelled, lost */
		char end_reason[32]; /* "" when none */
	} ended; /* SL_N_ENDED: an attached job of this connection ended */
};

/*
 * Hand out the next notification, waiting up to timeout_ms (0: only what
 * has already arrived or is readable now; -1: forever). Returns 1 with *n
 * filled (release it with sl_notification_clear()), 0 on timeout, -EINTR
 * when a signal interrupted the wait (so a program with signal handlers
 * can look at its flags), or another negative code (the connection
 * dropped). Calls, by contrast, carry on through signals.
 */
int sl_next_notification(sl_client *c, int timeout_ms,
                         struct sl_notification *n);
void sl_notification_clear(struct sl_notification *n);

/*
 * The next `sample` notification, discarding others on the way. Returns 1
 * with *s filled, SL_GONE when a `process_gone` arrived instead (s->pid is
 * set), 0 on timeout, or a negative code.
 */
#define SL_GONE 2
int sl_next_sample(sl_client *c, int timeout_ms, struct sl_sample *s);

/* For your own event loop: the connection's descriptor (-1 when not
 * connected), and a non-blocking read of whatever is available. Returns
 * the number of notifications now buffered, or a negative code when the
 * connection dropped. */
int sl_fd(const sl_client *c);
int sl_process_input(sl_client *c);
/* Notifications buffered and not yet handed out. */
size_t sl_pending(const sl_client *c);

/* ---- jobs ---- */

/*
 * What to submit: submit's params (PROTOCOL.md, submit), set by their
 * protocol names. A new spec has none set: each unset one is the daemon's
 * default, except that sl_submit fills what only the caller can know.
 * cwd: the current directory. env (a detached job): this process's
 * environment; either way PYTHONUNBUFFERED=1 is added unless it sets
 * PYTHONUNBUFFERED. umask (a detached job): this process's.
 *
 * Each setter checks the name against the daemon's table of job fields:
 * -EINVAL for a name submit does not take with that type, -ERANGE for a
 * number out of its range (priority -1000..1000, wait_free_pct 0..100,
 * retry_on_breach 0..100, umask 0..0777, sizes >= 0, after ids >= 1),
 * -ENOMEM; nothing is set then. A NULL string or vector, or no ids,
 * unsets. The getters answer what is set: -ENOENT (NULL) when it is not.
 *
 *   sl_job_spec *s = sl_job_spec_new();
 *   sl_job_spec_set_strv(s, "argv", argv);
 *   sl_job_spec_set_str(s, "name", "qwen-1024");
 *   sl_job_spec_set_int(s, "swap_budget_bytes", 8LL << 30);
 *   sl_submit(c, s, &submitted);
 *   sl_job_spec_free(s);
 *
 * The names and their types are PROTOCOL.md's (submit): argv and env
 * are vectors, after ids, wait_free_pct a number, the flags bools.
 */
typedef struct sl_job_spec sl_job_spec;
/* NULL when out of memory. */
sl_job_spec *sl_job_spec_new(void);
void sl_job_spec_free(sl_job_spec *spec);
int sl_job_spec_set_int(sl_job_spec *spec, const char *name, int64_t v);
int sl_job_spec_set_num(sl_job_spec *spec, const char *name, double v);
int sl_job_spec_set_bool(sl_job_spec *spec, const char *name, int v);
int sl_job_spec_set_str(sl_job_spec *spec, const char *name, const char *v);
int sl_job_spec_set_strv(sl_job_spec *spec, const char *name,
                         const char *const *v);
/* after as refs ("42", "A42", "A42_3": sl_resolve): an array named
 * whole counts each of its elements. -EINVAL for another form. */
int sl_job_spec_set_refs(sl_job_spec *spec, const char *name,
                         const char *const *refs, size_t n);
int sl_job_spec_set_ids(sl_job_spec *spec, const char *name, const int64_t *ids,
                        size_t n);
/* An int or a bool (0, 1). */
int sl_job_spec_get_int(const sl_job_spec *spec, const char *name,
                        int64_t *out);
int sl_job_spec_get_num(const sl_job_spec *spec, const char *name, double *out);
const char *sl_job_spec_get_str(const sl_job_spec *spec, const char *name);
/* The i-th string of a vector, NULL past its end. */
const char *sl_job_spec_get_strv(const sl_job_spec *spec, const char *name,
                                 size_t i);

struct sl_submitted {
	int64_t id;
	int position; /* 1-based place in the queue */
	int queued;   /* jobs queued in all */
	/* the caller's process has as many groups as the system passes on
	 * to the daemon (macOS: 16): a detached job gets those, and any
	 * more the caller's account has are left out */
	int groups_capped;
};
/* -EINVAL, with nothing sent, for a detached job whose argv, cwd, name or
 * environment is not valid UTF-8 (the protocol carries text; the bytes
 * would arrive replaced) and when the current directory cannot be told. */
int sl_submit(sl_client *c, const sl_job_spec *spec, struct sl_submitted *out);

/*
 * A job as the daemon reports it: opaque (since SOVERSION 1). The
 * functions below that answer a Job fill one you made with sl_job_new();
 * sl_status answers an array of them, read with sl_job_at(). Read its
 * members by their names in the Job (PROTOCOL.md), checked against the
 * daemon's table of job fields: -EINVAL (NULL) for a name the Job does
 * not have, -ENOENT (NULL) for a member that is null, missing (a private
 * one the caller may not see) or of another type. A member the daemon
 * adds later is read the same way, with no new function and no change of
 * ABI.
 *
 *   sl_job *j = sl_job_new();
 *   int64_t peak;
 *   if (sl_show(c, id, 0, j) == 0 &&
 *       sl_job_get_int(j, "footprint_peak_bytes", &peak) == 0)
 *           printf("%s: %lld\n", sl_job_get_str(j, "state"),
 *                  (long long)peak);
 *   sl_job_free(j);
 */
typedef struct sl_job sl_job;
/* NULL when out of memory. */
sl_job *sl_job_new(void);
/* sl_job_clear, then frees it. */
void sl_job_free(sl_job *j);
/* The i-th job of an array from sl_status. */
const sl_job *sl_job_at(const sl_job *jobs, size_t i);
/* An integer or a bool (0, 1). */
int sl_job_get_int(const sl_job *j, const char *name, int64_t *out);
int sl_job_get_num(const sl_job *j, const char *name, double *out);
const char *sl_job_get_str(const sl_job *j, const char *name);
/* The i-th string of an array (argv, env), NULL past its end. */
const char *sl_job_get_strv(const sl_job *j, const char *name, size_t i);
/* Any member as JSON text (kill, after, ...): malloc'd, NULL as above. */
char *sl_job_get_json(const sl_job *j, const char *name);
/* Drops what a job holds; it may be filled again. */
void sl_job_clear(struct sl_job *j);
/* 1 when state is exited, killed, failed, cancelled or lost. */
int sl_job_ended(const struct sl_job *j);

/* all: include ended jobs (at most limit of them; limit 0 = the daemon's
 * default, 50). With protocol version 2 the list is read in pages of up
 * to 1000 jobs, as many as it takes, and its jobs have command instead of
 * argv. Free with sl_jobs_free(). */
int sl_status(sl_client *c, int all, int limit, struct sl_job **jobs,
              size_t *njobs);
void sl_jobs_free(struct sl_job *jobs, size_t njobs);

/*
 * Which jobs a list or a bulk cancel is about (PROTOCOL.md, "Job
 * filters"): opaque, made empty (every job) by sl_filter_new(); each set
 * narrows it, and NULL (0) takes a member back out. user is a login name
 * (or a uid as digits), mine the caller's own jobs (not with user), a
 * state is added to the states any of which will do (-EINVAL for a word
 * that is not a job state), name an fnmatch(3) pattern of the job's
 * name. The daemon refuses an unknown user (-32602).
 */
typedef struct sl_filter sl_filter;
sl_filter *sl_filter_new(void);
void sl_filter_free(sl_filter *f);
int sl_filter_set_user(sl_filter *f, const char *user);
int sl_filter_set_mine(sl_filter *f, int mine);
int sl_filter_add_state(sl_filter *f, const char *state);
int sl_filter_set_name(sl_filter *f, const char *glob);
/* sl_status of the jobs that pass f (NULL: all); a state that is an end
 * reads the ended jobs too, as all does. */
int sl_status_filtered(sl_client *c, int all, int limit, const sl_filter *f,
                       struct sl_job **jobs, size_t *njobs);
/* Cancel, in one call, the caller's live jobs that pass f (NULL: all of
 * them): always the caller's own, unless root names a user, or root gives
 * all_users (everyone's; -32002 for anyone else). *cancelled (may be
 * NULL) gets how many were. Blocks as long as that takes, whatever the
 * client's timeout. */
int sl_cancel_matching(sl_client *c, const sl_filter *f, int all_users,
                       int64_t *cancelled);
int sl_show(sl_client *c, int64_t id, int env, struct sl_job *out);
/*
 * Job arrays (docs/jobs.md, "Arrays"; submit one with the spec's "array",
 * a SPEC such as "1-100%4"; an element's Job has array_id, array_index
 * and array_limit). ref names jobs as the daemon reads them: "42" a job,
 * "A42" every element of array 42, "A42_3" its element of index 3. *ids
 * (malloc'd, free with sl_free) gets their job ids, by index; *array_id
 * the array's id, or 0 when ref named one job. -EINVAL without sending
 * for a ref of another form.
 */
int sl_resolve(sl_client *c, const char *ref, int64_t **ids, size_t *n,
               int64_t *array_id);
/* out may be NULL. */
int sl_cancel(sl_client *c, int64_t id, struct sl_job *out);
/* A queued job (the caller's own; root: any) is held: it keeps its
 * place and is never admitted until released. -32005 (SL_E_STATE) when it
 * is not queued. out may be NULL. */
int sl_hold(sl_client *c, int64_t id, struct sl_job *out);
int sl_release(sl_client *c, int64_t id, struct sl_job *out);
/* Submit again a detached job of the caller's (ended or not): the same
 * argv, cwd, environment and options, as a new job; out gets its id. Only
 * the job's owner (root too: for root's own jobs). */
int sl_resubmit(sl_client *c, int64_t id, struct sl_submitted *out);
/* Change a queued job's options: each has_ member says whether its value
 * is sent; submit's checks apply. out may be NULL. */
/* update: changes holds the new values, set as for submit by their
 * protocol names; -EINVAL without sending when it holds one update does
 * not change (PROTOCOL.md, update: priority, wait_free_pct,
 * wait_free_bytes, swap_budget_bytes, expect_bytes). */
int sl_update(sl_client *c, int64_t id, const sl_job_spec *changes,
              struct sl_job *out);
/* Blocks until the job has ended, whatever the client's timeout. */
int sl_wait(sl_client *c, int64_t id, struct sl_job *out);
int sl_resume(sl_client *c, int64_t id, struct sl_job *out);
/* Attached jobs: report the command's pid, then its end (exit_code >= 0,
 * or signal > 0 with exit_code -1). out may be NULL. */
int sl_job_pid(sl_client *c, int64_t id, int64_t pid);
int sl_job_exit(sl_client *c, int64_t id, int exit_code, int signal,
                struct sl_job *out);
/* A running job (detached or attached; its owner or root) entered the
 * stage name (1-256 bytes). -32005 (SL_E_STATE) once the job has ended.
 * When id is $STAGELOAD_JOB_ID (the call comes from inside the job) the
 * report carries $STAGELOAD_JOB_TOKEN: a daemon whose job of that id has
 * another token refuses it, -32002 (SL_E_PERM). */
int sl_stage(sl_client *c, int64_t id, const char *name);
/* The token the daemon gave the attached job id when this client
 * submitted it (the last one submitted), for its command's
 * STAGELOAD_JOB_TOKEN; NULL for another id or a daemon without tokens. */
const char *sl_job_token(const sl_client *c, int64_t id);

/*
 * Stream a job's log from offset: cb gets every chunk as it arrives
 * (return non-zero from it to stop early: sl_logs then returns that value
 * after closing the connection, since the daemon cannot be told to stop,
 * and cb is not called again). cb must not use the client: a call from it
 * returns -EBUSY. The timeout counts from the last chunk, so a long log
 * that keeps coming is not cut off.
 * With follow the call returns only once the job has ended and its whole
 * log was sent. *end_offset (may be NULL) gets the offset after the last
 * byte.
 */
typedef int (*sl_log_cb)(void *arg, int64_t offset, const char *data,
                         size_t len);
int sl_logs(sl_client *c, int64_t id, int64_t offset, int follow, sl_log_cb cb,
            void *arg, int64_t *end_offset);

/* Events after after_id, oldest first, at most limit (0: the daemon's
 * default, 100): one page; the next begins after the last one's id. With
 * follow, later events arrive as SL_N_EVENT notifications. Free with
 * sl_events_free(). */
int sl_events(sl_client *c, int64_t after_id, int limit, int follow,
              struct sl_event **events, size_t *nevents);
/* The same newest first: events before before_id (0: the newest), at
 * most limit; the next page is before the last one's id. */
int sl_events_before(sl_client *c, int64_t before_id, int limit,
                     struct sl_event **events, size_t *nevents);
/* Either of those, and of one job alone: zero it, set what is wanted. */
struct sl_events_query {
	int64_t after_id;  /* oldest first, after it */
	int64_t before_id; /* > 0: newest first, below it; -1: the newest */
	int64_t job_id;    /* > 0: this job's events alone (by its index) */
	int limit;         /* 0: the daemon's default, 100 */
	int follow;        /* not with before_id */
};
int sl_events_query(sl_client *c, const struct sl_events_query *q,
                    struct sl_event **events, size_t *nevents);
/* sl_events_query of the events that pass f (NULL: all): an event of a
 * job passes by its job's user and name, and by a state when it is how
 * the job entered it (PROTOCOL.md, "Job filters"). */
int sl_events_filtered(sl_client *c, const struct sl_events_query *q,
                       const sl_filter *f, struct sl_event **events,
                       size_t *nevents);
void sl_events_free(struct sl_event *events, size_t nevents);

#if defined(__GNUC__) || defined(__clang__)
#pragma GCC visibility pop
#endif

#ifdef __cplusplus
}
#endif

#endif
