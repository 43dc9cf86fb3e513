/*
 * Every field of a job, once: the daemon's struct job member, its store
 * column, its wire name in the Job (proto/PROTOCOL.md), who may see it, and
 * which consumer carries it. The store's column list, binds and row
 * reading (daemon/store-jobs.c), the Job encoder (daemon/wire.c), the
 * submit and update parameter rows and their parsing (daemon/control.c:
 * control_fields_read), update's apply, undo and event (daemon/jobs-deps.c:
 * jobs_update), libstageload's setters and accessors
 * (client/client-spec.c, client/client-job.c), the web program's
 * allow-list (web/web-json.c) and Python's list
 * (python/stageload/job_fields.py, written by scripts/gen-job-fields.py)
 * are all expanded from JOB_FIELDS; stageloadctl's job options from
 * JOB_CLI below. A new field is one row here, its
 * member in struct job (daemon/job.h), its migration (daemon/store.c), its
 * words in PROTOCOL.md, Python's list written again, and the literal
 * lists of tests/test_fields.c: tests/fields-dummy.py adds one so.
 *
 * JOB_FIELDS(X) calls, for each field in the order the Job shows them,
 *
 *   X(member, wire, store, column, job, vis, submit, update, lo, hi, unit,
 *     web)
 *
 * member  struct job's member. The wire name is the same word, but for
 *         five members older than this table (submitted_ms, admitted_ms,
 *         started_ms, ended_ms: the Job says *_at_ms; term_signal:
 *         signal); tests/test_fields.c holds that list, and a new field
 *         may not join it.
 * wire    the Job's member and the parameter's name.
 * store   how the member is kept in a jobs row: S_NO (not a column),
 *         S_INT (any integer, int64 in sqlite: unsigned bit for bit),
 *         S_DBL, S_TEXT (NULL stays NULL), S_STATE (the state's name),
 *         S_EXPECT (expect_source's name or NULL), S_GROUPS (a JSON array
 *         of member[0..n##member]: groups, ngroups), S_IDS (the same for
 *         after, nafter).
 * column  the jobs row's column ("" with S_NO). The schema itself, with
 *         its migrations, is daemon/store.c's.
 * job     how the Job shows it: J_NO (not at all), J_INT, J_BOOL, J_NUM,
 *         J_STR ("" when NULL), J_STRN (null when NULL), J_STATE,
 *         J_EXPECT, J_IDS (an array of ids), J_POS (the number when above
 *         0, else null), J_FN (daemon/wire.c's wire_job_<member> writes
 *         it: a member computed from the live queue, or shown only in
 *         some states).
 * vis     PUBLIC: everyone's; OWNER: the job's owner's and root's only.
 * submit  the submit parameter's type: P_NO, P_INT, P_NUM, P_BOOL (read
 *         by control_fields_read within lo..hi), P_STRING, P_STRV, P_INTV
 *         (read by the handler, which bounds their lengths); *_REQ when
 *         required.
 * update  1: an update parameter too (same type and range), 0: not.
 * lo, hi  a P_INT's or P_NUM's range.
 * unit    U_SIZE (bytes), U_DURATION (ms), U_TIME (ms since the epoch),
 *         U_PERCENT, U_COUNT, U_NONE.
 * web     W_YES: the web program shows it as it comes (a scalar);
 *         W_SPECIAL: shown, but web-json.c copies it by hand (an array or
 *         object whose own members it names); W_NO: never shown.
 *
 * Guards that span fields or depend on the caller (priority above 0,
 * max_wait_free, expect against total memory, owning the after ids) stay
 * in the handlers.
 */
#ifndef SL_JOB_FIELDS_H
#define SL_JOB_FIELDS_H

/* clang-format off */
#define JOB_FIELDS(X) \
X(id,              "id",              S_NO,     "",                J_INT,    PUBLIC, P_NO,         0, 0, 0,           U_COUNT,   W_YES) \
X(user,            "user",            S_TEXT,   "user",            J_STR,    PUBLIC, P_NO,         0, 0, 0,           U_NONE,    W_YES) \
X(uid,             "uid",             S_INT,    "uid",             J_INT,    PUBLIC, P_NO,         0, 0, 0,           U_NONE,    W_YES) \
X(name,            "name",            S_TEXT,   "name",            J_STR,    PUBLIC, P_STRING,     0, 0, 0,           U_NONE,    W_YES) \
X(state,           "state",           S_STATE,  "state",           J_STATE,  PUBLIC, P_NO,         0, 0, 0,           U_NONE,    W_YES) \
X(attached,        "attached",        S_INT,    "attached",        J_BOOL,   PUBLIC, P_BOOL,       0, 0, 1,           U_NONE,    W_YES) \
X(priority,        "priority",        S_INT,    "priority",        J_INT,    PUBLIC, P_INT,        1, -1000, 1000,    U_COUNT,   W_YES) \
X(wait_free_pct,   "wait_free_pct",   S_DBL,    "wait_free_pct",   J_NUM,    PUBLIC, P_NUM,        1, 0, 100,         U_PERCENT, W_YES) \
X(wait_free_bytes, "wait_free_bytes", S_INT,    "wait_free_bytes", J_INT,    PUBLIC, P_INT,        1, 0, INT64_MAX,   U_SIZE,    W_YES) \
X(swap_budget_bytes, "swap_budget_bytes", S_INT, "swap_budget_bytes", J_INT, PUBLIC, P_INT,        1, 0, INT64_MAX,   U_SIZE,    W_YES) \
X(expect_bytes,    "expect_bytes",    S_INT,    "expect_bytes",    J_INT,    PUBLIC, P_INT,        1, 0, INT64_MAX,   U_SIZE,    W_YES) \
X(expect_source,   "expect_source",   S_EXPECT, "expect_source",   J_EXPECT, PUBLIC, P_NO,         0, 0, 0,           U_NONE,    W_YES) \
X(expect_runs,     "expect_runs",     S_INT,    "expect_runs",     J_INT,    PUBLIC, P_NO,         0, 0, 0,           U_COUNT,   W_YES) \
X(name_given,      "name_given",      S_INT,    "name_given",      J_BOOL,   PUBLIC, P_NO,         0, 0, 0,           U_NONE,    W_YES) \
X(exclusive,       "exclusive",       S_INT,    "exclusive",       J_BOOL,   PUBLIC, P_BOOL,       0, 0, 1,           U_NONE,    W_YES) \
X(retry_on_breach, "retry_on_breach", S_INT,    "retry_on_breach", J_INT,    PUBLIC, P_INT,        0, 0, 100,         U_COUNT,   W_YES) \
X(attempt,         "attempt",         S_INT,    "attempt",         J_INT,    PUBLIC, P_NO,         0, 0, 0,           U_COUNT,   W_YES) \
X(attempts,        "attempts",        S_TEXT,   "attempts",        J_FN,     PUBLIC, P_NO,         0, 0, 0,           U_NONE,    W_SPECIAL) \
X(time_limit_ms,   "time_limit_ms",   S_INT,    "time_limit_ms",   J_INT,    PUBLIC, P_INT,        1, 0, INT64_MAX,   U_DURATION, W_YES) \
X(time_limit_per_attempt_ms, "time_limit_per_attempt_ms", S_INT, "time_limit_per_attempt_ms", J_INT, PUBLIC, P_INT, 1, 0, INT64_MAX, U_DURATION, W_YES) \
X(begin_ms,        "begin_ms",        S_INT,    "begin_ms",        J_POS,    PUBLIC, P_INT,        1, 0, INT64_MAX,   U_TIME,    W_YES) \
X(after,           "after",           S_IDS,    "after_ids",       J_IDS,    PUBLIC, P_INTV,       0, 1, INT64_MAX,   U_NONE,    W_SPECIAL) \
X(after_any,       "after_any",       S_INT,    "after_any",       J_BOOL,   PUBLIC, P_BOOL,       0, 0, 1,           U_NONE,    W_YES) \
X(held,            "held",            S_INT,    "held",            J_BOOL,   PUBLIC, P_BOOL,       0, 0, 1,           U_NONE,    W_YES) \
X(group,           "group",           S_TEXT,   "queue_group",     J_STRN,   PUBLIC, P_STRING,     0, 0, 0,           U_NONE,    W_YES) \
X(position,        "position",        S_NO,     "",                J_FN,     PUBLIC, P_NO,         0, 0, 0,           U_COUNT,   W_YES) \
X(waiting_for,     "waiting_for",     S_NO,     "",                J_FN,     PUBLIC, P_NO,         0, 0, 0,           U_NONE,    W_YES) \
X(waiting_on,      "waiting_on",      S_NO,     "",                J_FN,     PUBLIC, P_NO,         0, 0, 0,           U_NONE,    W_SPECIAL) \
X(waiting_until_ms, "waiting_until_ms", S_NO,   "",                J_FN,     PUBLIC, P_NO,         0, 0, 0,           U_TIME,    W_YES) \
X(submitted_ms,    "submitted_at_ms", S_INT,    "submitted_ms",    J_INT,    PUBLIC, P_NO,         0, 0, 0,           U_TIME,    W_YES) \
X(admitted_ms,     "admitted_at_ms",  S_INT,    "admitted_ms",     J_POS,    PUBLIC, P_NO,         0, 0, 0,           U_TIME,    W_YES) \
X(started_ms,      "started_at_ms",   S_INT,    "started_ms",      J_POS,    PUBLIC, P_NO,         0, 0, 0,           U_TIME,    W_YES) \
X(ended_ms,        "ended_at_ms",     S_INT,    "ended_ms",        J_FN,     PUBLIC, P_NO,         0, 0, 0,           U_TIME,    W_YES) \
X(pid,             "pid",             S_INT,    "pid",             J_POS,    PUBLIC, P_NO,         0, 0, 0,           U_NONE,    W_YES) \
X(footprint_bytes, "footprint_bytes", S_INT,    "footprint_bytes", J_INT,    PUBLIC, P_NO,         0, 0, 0,           U_SIZE,    W_YES) \
X(footprint_peak_bytes, "footprint_peak_bytes", S_INT, "footprint_peak_bytes", J_INT, PUBLIC, P_NO, 0, 0, 0,          U_SIZE,    W_YES) \
X(swap_growth_bytes, "swap_growth_bytes", S_NO, "",                J_FN,     PUBLIC, P_NO,         0, 0, 0,           U_SIZE,    W_YES) \
X(swap_growth_peak_bytes, "swap_growth_peak_bytes", S_INT, "swap_growth_peak_bytes", J_INT, PUBLIC, P_NO, 0, 0, 0,    U_SIZE,    W_YES) \
X(job_swap_bytes,  "job_swap_bytes",  S_INT,    "job_swap_bytes",  J_INT,    PUBLIC, P_NO,         0, 0, 0,           U_SIZE,    W_YES) \
X(exit_code,       "exit_code",       S_INT,    "exit_code",       J_FN,     PUBLIC, P_NO,         0, 0, 0,           U_NONE,    W_YES) \
X(term_signal,     "signal",          S_INT,    "term_signal",     J_FN,     PUBLIC, P_NO,         0, 0, 0,           U_NONE,    W_YES) \
X(end_reason,      "end_reason",      S_TEXT,   "end_reason",      J_FN,     PUBLIC, P_NO,         0, 0, 0,           U_NONE,    W_YES) \
X(kill,            "kill",            S_TEXT,   "kill",            J_FN,     PUBLIC, P_NO,         0, 0, 0,           U_NONE,    W_SPECIAL) \
X(slurm_job_id,    "slurm_job_id",    S_INT,    "slurm_job_id",    J_FN,     PUBLIC, P_INT,        0, 1, UINT32_MAX,  U_NONE,    W_YES) \
X(slurm_step_id,   "slurm_step_id",   S_INT,    "slurm_step_id",   J_FN,     PUBLIC, P_INT,        0, 0, UINT32_MAX,  U_NONE,    W_YES) \
X(slurm_task_id,   "slurm_task_id",   S_INT,    "slurm_task_id",   J_FN,     PUBLIC, P_INT,        0, 0, UINT32_MAX,  U_NONE,    W_YES) \
X(exit_reporter,   "exit_reporter",   S_TEXT,   "exit_reporter",   J_STRN,   PUBLIC, P_STRING,     0, 0, 0,           U_NONE,    W_YES) \
X(command,         "command",         S_NO,     "",                J_FN,     PUBLIC, P_NO,         0, 0, 0,           U_NONE,    W_NO) \
X(argv,            "argv",            S_NO,     "",                J_FN,     OWNER,  P_STRV_REQ,   0, 0, 0,           U_NONE,    W_NO) \
X(cwd,             "cwd",             S_TEXT,   "cwd",             J_STR,    OWNER,  P_STRING_REQ, 0, 0, 0,           U_NONE,    W_NO) \
X(on_end,          "on_end",          S_TEXT,   "on_end",          J_STRN,   OWNER,  P_STRING,     0, 0, 0,           U_NONE,    W_NO) \
X(end_detail,      "end_detail",      S_TEXT,   "end_detail",      J_FN,     OWNER,  P_NO,         0, 0, 0,           U_NONE,    W_NO) \
X(env,             "env",             S_NO,     "",                J_FN,     OWNER,  P_STRV,       0, 0, 0,           U_NONE,    W_NO) \
X(umask,           "umask",           S_INT,    "umask",           J_NO,     OWNER,  P_INT,        0, 0, 0777,        U_NONE,    W_NO) \
X(queue_seq,       "queue_seq",       S_INT,    "queue_seq",       J_NO,     OWNER,  P_NO,         0, 0, 0,           U_NONE,    W_NO) \
X(gid,             "gid",             S_INT,    "gid",             J_NO,     OWNER,  P_NO,         0, 0, 0,           U_NONE,    W_NO) \
X(groups,          "groups",          S_GROUPS, "groups",          J_NO,     OWNER,  P_NO,         0, 0, 0,           U_NONE,    W_NO) \
X(pgid,            "pgid",            S_INT,    "pgid",            J_NO,     OWNER,  P_NO,         0, 0, 0,           U_NONE,    W_NO) \
X(start_time,      "start_time",      S_INT,    "start_time",      J_NO,     OWNER,  P_NO,         0, 0, 0,           U_NONE,    W_NO) \
X(monitor_pid,     "monitor_pid",     S_INT,    "monitor_pid",     J_NO,     OWNER,  P_NO,         0, 0, 0,           U_NONE,    W_NO) \
X(swap_base_bytes, "swap_base_bytes", S_INT,    "swap_base_bytes", J_NO,     OWNER,  P_NO,         0, 0, 0,           U_SIZE,    W_NO) \
X(bytes,           "bytes",           S_INT,    "bytes",           J_NO,     OWNER,  P_NO,         0, 0, 0,           U_SIZE,    W_NO) \
X(job_token,       "job_token",       S_TEXT,   "job_token",       J_NO,     OWNER,  P_NO,         0, 0, 0,           U_NONE,    W_NO)
/* clang-format on */

/*
 * stageloadctl's job options, in the order its --help shows them: each
 * sets the submit (and update) parameter of a JOB_FIELDS member, so a new
 * option is one row here. client/cli-job-options.c makes submit's, run's
 * and update's option rows and their params from it; tests/test_fields.c
 * checks each row against its field, and that every submit parameter a
 * user sets has an option or is listed there as set otherwise.
 *
 * JOB_CLI(X) calls, for each option,
 *
 *   X(member, option, letter, metavar, value, lo, hi, also, cmds, update,
 *     help)
 *
 * member  the JOB_FIELDS member whose parameter (its wire name) the
 *         option sets.
 * option  the long option without its "--"; letter: its short form, or 0;
 *         metavar: its value in the usage ("SIZE"), NULL for a flag.
 * value   how stageloadctl reads it (client/cli.h, enum cli_value), and so
 *         what it sets: CLI_FLAG sets a P_BOOL member true; CLI_TEXT a
 *         P_STRING member as typed, or a P_INTV member's job ids ("4,7");
 *         CLI_INT (lo..hi: the field's range), CLI_SIZE (bytes),
 *         CLI_DURATION and CLI_LIMIT (ms) and CLI_BEGIN (ms since the
 *         epoch) a P_INT member; CLI_PCT a P_NUM member;
 *         CLI_FREE a percentage to member, or a size to `also` and 0 to
 *         member.
 * also    none, or a P_BOOL member the option sets true besides (after_any
 *         for --after-any); CLI_FREE's member for a size. Two options of
 *         one member exclude each other ("--after and --after-any: give
 *         one of them").
 * cmds    JOB: submit and run (and guard); SUBMIT: submit only (a detached
 *         job's).
 * update  1: update takes it too; 0: not.
 * help    its lines in --help ("\n" between lines).
 */
/* clang-format off */
#define JOB_CLI(X) \
X(after,             "after",           0, "ID[,ID...]", CLI_TEXT, 0, 0, none,            SUBMIT, 0, \
  "start after these jobs exited 0; if one\n" \
  "fails, is killed or cancelled, this one is cancelled") \
X(after,             "after-any",       0, "ID[,ID...]", CLI_TEXT, 0, 0, after_any,       SUBMIT, 0, \
  "start after these jobs ended, however they ended") \
X(held,              "hold",            0, NULL,         CLI_FLAG, 0, 0, none,            SUBMIT, 0, \
  "queue it held: it starts only after 'release ID'") \
X(group,             "group",           0, "NAME",       CLI_TEXT, 0, 0, none,            SUBMIT, 0, \
  "its group: the daemon may limit how many of a\n" \
  "group's jobs run at once (group.NAME.max_running)") \
X(on_end,            "on-end",          0, "CMD",        CLI_TEXT, 0, 0, none,            SUBMIT, 0, \
  "when the job ends, the daemon runs CMD (/bin/sh -c)\n" \
  "as you, its output appended to the job's log") \
X(wait_free_pct,     "wait-free",       0, "PCT|SIZE",   CLI_FREE, 0, 0, wait_free_bytes, JOB,    1, \
  "start only when free memory is >= PCT%, or\n" \
  "(a size, 30G) when that much is available") \
X(swap_budget_bytes, "swap-budget",     0, "SIZE",       CLI_SIZE, 0, 0, none,            JOB,    1, \
  "kill it when the system's swap grows by more than\n" \
  "SIZE while it runs (0: none)") \
X(expect_bytes,      "expect",          0, "SIZE",       CLI_SIZE, 0, 0, none,            JOB,    1, \
  "memory it will use: held back from others until reached") \
X(priority,          "priority",        0, "N",          CLI_INT,  -1000, 1000, none,     JOB,    1, \
  "-1000..1000, higher runs first (default 0;\n" \
  "above 0: root and the daemon's admin_group only)") \
X(name,              "name",            0, "NAME",       CLI_TEXT, 0, 0, none,            JOB,    0, \
  "a label (default: the command's name)") \
X(exclusive,         "exclusive",       0, NULL,         CLI_FLAG, 0, 0, none,            JOB,    0, \
  "run only when no other job runs") \
X(retry_on_breach,   "retry-on-breach", 0, "N",          CLI_INT,  0, 100, none,          JOB,    0, \
  "requeue up to N times after a breach") \
X(time_limit_ms,     "time",            0, "DUR",        CLI_LIMIT, 0, 0, none,           JOB,    1, \
  "kill it once it has run that long (90m, 2h, 1d;\n" \
  "0: none), summed over its attempts") \
X(time_limit_per_attempt_ms, "time-per-attempt", 0, "DUR", CLI_LIMIT, 0, 0, none,       JOB,    1, \
  "kill an attempt once it has run that long") \
X(begin_ms,          "begin",           0, "TIME",       CLI_BEGIN, 0, 0, none,           JOB,    1, \
  "start no earlier than TIME (+30m, 23:10,\n" \
  "2026-12-24T08:00)")
/* clang-format on */

#endif
