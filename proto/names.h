/*
 * The protocol's words, each declared once: what a queued job waits for
 * (waiting_for) with the words each shows in status, top, show, the run
 * line and the page, job states, end reasons, pressure levels and event
 * kinds. The daemon, stageloadctl, stageload-web and libstageload read
 * them from here; tests/names.py holds the Python package and
 * proto/PROTOCOL.md against this file, so a word added here and missed
 * there fails a test.
 */
#ifndef SL_NAMES_H
#define SL_NAMES_H

/*
 * waiting_for: X(ENUM, wire value, column, line, sentence). The wire value
 * is the Job's waiting_for (and info's waiting_for key, and the label of
 * /metrics' stageload_jobs_waiting); column is the REASON of status and
 * top, line follows "queued: position P of N, " in run, wait, logs -f and
 * on the page, sentence follows "Waiting for 2m so far: " in show.
 * client/cli-reason.c expands them: "%F" the free memory compared with
 * what the job waits for, "%f" the free %, "%w" what the job waits for
 * (a % or, with wait_free_bytes, a size), "%R" the bytes promised to
 * running jobs, "%a" the job it starts after and "%i" the job's own id
 * (the release that lets a held one go; "ID" where it is not known), "%g"
 * its group's name ("NAME" where it is not known) and "%b" when it may
 * begin (--begin: a clock time, with the date when not today). The order
 * is admission's (daemon/admit.h) and none is first.
 */
#define NAMES_WAIT_LIST(X)                                                     \
	X(NONE, "none", "-", "free %f, being admitted",                        \
	  "nothing holds it back: it is being admitted")                       \
	X(FREE, "free", "free %F", "free %F",                                  \
	  "free memory is %F (its --wait-free)")                               \
	X(SETTLE, "settle", "settle",                                          \
	  "free %f, waiting for the last job to settle",                       \
	  "the job admitted before it is still growing (settle)")              \
	X(EXPECT, "expect", "expect %R reserved",                              \
	  "free %f, less than %w once %R promised to running jobs counts",     \
	  "%R of memory is promised to running jobs (--expect), which "        \
	  "leaves less than the %w free it waits for")                         \
	X(EXCLUSIVE, "exclusive", "exclusive",                                 \
	  "free %f, waiting to run alone",                                     \
	  "it or a running job has to run alone (--exclusive)")                \
	X(MAX_RUNNING, "max_running", "max_running",                           \
	  "free %f, too many jobs running",                                    \
	  "the daemon already runs as many jobs as its max_running allows")    \
	X(HEAD, "head", "head", "free %f, waiting for the jobs ahead",         \
	  "a job ahead of it holds the head of the queue")                     \
	X(STORAGE, "storage", "storage",                                       \
	  "free %f, waiting for the daemon's database to work again",          \
	  "the daemon's database fails, so nothing is admitted (storage)")     \
	X(CLIENT, "client", "client",                                          \
	  "free %f, waiting for its stageloadctl to come back",                \
	  "its stageloadctl has not come back since the daemon restarted")     \
	X(HELD, "held", "held", "free %f, held: stageloadctl release %i",      \
	  "it is held (hold): it starts only once released "                   \
	  "(stageloadctl release %i)")                                         \
	X(AFTER, "after", "after %a", "free %f, waiting for job %a to end",    \
	  "job %a, which it starts after (--after), has not ended")            \
	X(GROUP, "group", "group",                                             \
	  "free %f, its group (or its user's share of it) is full",            \
	  "its group already has as many jobs running as the daemon's "        \
	  "group.%g.max_running allows, or its user holds half of them "       \
	  "(rounded up) while another user's job in the group waits")          \
	X(BEGIN, "begin", "begin %b", "free %f, waiting to begin at %b",       \
	  "it starts no earlier than %b (--begin)")

/* The list expands to the enumerators. */
/* clang-format off */
enum names_wait {
#define NAMES_X(e, name, column, line, sentence) NAMES_WAIT_##e,
	NAMES_WAIT_LIST(NAMES_X)
#undef NAMES_X
	NAMES_WAIT_COUNT
};
/* clang-format on */

struct names_wait_words {
	const char *name;     /* on the wire */
	const char *column;   /* status, top */
	const char *line;     /* run, wait, logs -f, the page */
	const char *sentence; /* show */
};
extern const struct names_wait_words names_wait_words[NAMES_WAIT_COUNT];

/* The wire value; "unknown" out of range. */
const char *names_wait_name(int w);
/* The value of a wire name ("after N" is after), or -1: one this build
 * does not know, which clients show as "other" (PROTOCOL.md, Job). */
int names_wait_parse(const char *name);

/* Job states, X(ENUM, name), in the daemon's order: the ended ones last,
 * from EXITED (daemon/job.h). */
#define NAMES_STATE_LIST(X)                                                    \
	X(QUEUED, "queued")                                                    \
	X(ADMITTED, "admitted")                                                \
	X(RUNNING, "running")                                                  \
	X(EXITED, "exited")                                                    \
	X(KILLED, "killed")                                                    \
	X(FAILED, "failed")                                                    \
	X(CANCELLED, "cancelled")                                              \
	X(LOST, "lost")

/* The list expands to the enumerators. */
/* clang-format off */
enum names_state {
#define NAMES_X(e, name) NAMES_STATE_##e,
	NAMES_STATE_LIST(NAMES_X)
#undef NAMES_X
	NAMES_STATE_COUNT
};
/* clang-format on */
/* "unknown" out of range. */
const char *names_state_name(int s);
/* The state of a name, or -1. */
int names_state_parse(const char *name);

/* Why a job ended (end_reason): X(ENUM, name, what show says). A job that
 * ended on its own has none (null). */
#define NAMES_END_LIST(X)                                                      \
	X(SWAP_BUDGET, "swap_budget",                                          \
	  "the system's swap grew past its budget while it ran")               \
	X(CANCEL, "cancel", "it was cancelled")                                \
	X(CLIENT_GONE, "client_gone",                                          \
	  "the stageloadctl that ran it went away")                            \
	X(SPAWN, "spawn", "it could not be started")                           \
	X(LOST, "lost", "the daemon lost track of it")                         \
	X(DEPENDENCY, "dependency",                                            \
	  "a job it starts after did not end as it needed")                    \
	X(NO_REPORT, "no_report", "root did not report how it ended")          \
	X(TIME_LIMIT, "time_limit", "it ran past its time limit")

/* The list expands to the enumerators. */
/* clang-format off */
enum names_end {
	NAMES_END_NONE = 0, /* ended on its own, or not ended */
#define NAMES_X(e, name, text) NAMES_END_##e,
	NAMES_END_LIST(NAMES_X)
#undef NAMES_X
	NAMES_END_OTHER, /* a reason this build does not know */
	NAMES_END_COUNT
};
/* clang-format on */
/* "" for none, "other" for other and out of range. */
const char *names_end_name(int e);
/* NAMES_END_NONE for NULL, NAMES_END_OTHER for one not in the list. */
int names_end_parse(const char *name);
/* What show says of the reason, or NULL when the list has none. */
const char *names_end_text(const char *name);

/*
 * Memory pressure: X(ENUM, value, name, level). value is the daemon's (and
 * the store's samples.pressure column: macOS's
 * kern.memorystatus_vm_pressure_level 1, 2, 4), name the wire's, level
 * what /metrics and the plots draw (-1 unknown).
 */
#define NAMES_PRESSURE_LIST(X)                                                 \
	X(UNKNOWN, 0, "unknown", -1)                                           \
	X(NORMAL, 1, "normal", 0)                                              \
	X(WARN, 2, "warn", 1)                                                  \
	X(CRITICAL, 4, "critical", 2)

enum names_pressure {
#define NAMES_X(e, value, name, level) NAMES_PRESSURE_##e = value,
	NAMES_PRESSURE_LIST(NAMES_X)
#undef NAMES_X
};
/* The name of a value; "unknown" for one not in the list. */
const char *names_pressure_name(int value);
/* The level of a name (NULL or not in the list: -1). */
int names_pressure_level(const char *name);
/* The name of a level; "unknown" for one not in the list. */
const char *names_pressure_level_name(int level);

/* Event kinds (PROTOCOL.md, events): X(ENUM, name). An ended job's event
 * is named after its state. */
#define NAMES_EVENT_LIST(X)                                                    \
	X(SUBMITTED, "submitted")                                              \
	X(ADMITTED, "admitted")                                                \
	X(STARTED, "started")                                                  \
	X(BREACH, "breach")                                                    \
	X(KILLED, "killed")                                                    \
	X(EXITED, "exited")                                                    \
	X(FAILED, "failed")                                                    \
	X(CANCELLED, "cancelled")                                              \
	X(LOST, "lost")                                                        \
	X(REQUEUED, "requeued")                                                \
	X(STAGE, "stage")                                                      \
	X(STAGE_END, "stage_end")                                              \
	X(HELD, "held")                                                        \
	X(RELEASED, "released")                                                \
	X(UPDATED, "updated")                                                  \
	X(ON_END, "on_end")                                                    \
	X(GROUPS_DROPPED, "groups_dropped")                                    \
	X(OUTPUT_DROPPED, "output_dropped")                                    \
	X(DAEMON_START, "daemon_start")                                        \
	X(DAEMON_STOP, "daemon_stop")

/* The list expands to the enumerators. */
/* clang-format off */
enum names_event {
#define NAMES_X(e, name) NAMES_EVENT_##e,
	NAMES_EVENT_LIST(NAMES_X)
#undef NAMES_X
	NAMES_EVENT_COUNT
};
/* clang-format on */
/* "unknown" out of range. */
const char *names_event_name(int e);

#endif
