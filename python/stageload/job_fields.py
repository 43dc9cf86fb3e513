"""The job fields of proto/job-fields.h, for Python.

Written by scripts/gen-job-fields.py from the C table; do not edit.
The job_fields test fails when it differs from the table.
"""
from typing import Dict, NamedTuple, Optional, Tuple


class Param(NamedTuple):
    type: str  # int number bool string strv intv
    required: bool
    lo: Optional[int]  # int, number and intv: the range
    hi: Optional[int]
    unit: str  # size duration time percent count, or ''


class Option(NamedTuple):
    param: str  # the parameter it sets
    value: str  # how it is read: flag text int size duration limit begin pct free
    metavar: str  # '' for a flag
    run: bool  # run and guard take it too, not submit alone
    update: bool
    help: str


# The Job's members (PROTOCOL.md, Job), in its order.
JOB_MEMBERS: Tuple[str, ...] = (
    'id',
    'user',
    'uid',
    'name',
    'state',
    'attached',
    'priority',
    'wait_free_pct',
    'wait_free_bytes',
    'swap_budget_bytes',
    'expect_bytes',
    'expect_source',
    'expect_runs',
    'name_given',
    'exclusive',
    'retry_on_breach',
    'attempt',
    'attempts',
    'time_limit_ms',
    'time_limit_per_attempt_ms',
    'begin_ms',
    'after',
    'after_any',
    'held',
    'group',
    'position',
    'waiting_for',
    'waiting_on',
    'waiting_until_ms',
    'submitted_at_ms',
    'admitted_at_ms',
    'started_at_ms',
    'ended_at_ms',
    'pid',
    'footprint_bytes',
    'footprint_peak_bytes',
    'swap_growth_bytes',
    'swap_growth_peak_bytes',
    'job_swap_bytes',
    'exit_code',
    'signal',
    'end_reason',
    'kill',
    'slurm_job_id',
    'slurm_step_id',
    'slurm_task_id',
    'exit_reporter',
    'command',
    'argv',
    'cwd',
    'on_end',
    'end_detail',
    'env',
)

# Those only the job's owner and root see.
OWNER_MEMBERS: Tuple[str, ...] = (
    'argv',
    'cwd',
    'on_end',
    'end_detail',
    'env',
)

# submit's parameters.
SUBMIT_PARAMS: Dict[str, Param] = {
    'name': Param('string', False, None, None, ''),
    'attached': Param('bool', False, None, None, ''),
    'priority': Param('int', False, -1000, 1000, 'count'),
    'wait_free_pct': Param('number', False, 0, 100, 'percent'),
    'wait_free_bytes': Param('int', False, 0, 9223372036854775807, 'size'),
    'swap_budget_bytes': Param('int', False, 0, 9223372036854775807, 'size'),
    'expect_bytes': Param('int', False, 0, 9223372036854775807, 'size'),
    'exclusive': Param('bool', False, None, None, ''),
    'retry_on_breach': Param('int', False, 0, 100, 'count'),
    'time_limit_ms': Param('int', False, 0, 9223372036854775807, 'duration'),
    'time_limit_per_attempt_ms': Param('int', False, 0, 9223372036854775807, 'duration'),
    'begin_ms': Param('int', False, 0, 9223372036854775807, 'time'),
    'after': Param('intv', False, 1, 9223372036854775807, ''),
    'after_any': Param('bool', False, None, None, ''),
    'held': Param('bool', False, None, None, ''),
    'group': Param('string', False, None, None, ''),
    'slurm_job_id': Param('int', False, 1, 4294967295, ''),
    'slurm_step_id': Param('int', False, 0, 4294967295, ''),
    'slurm_task_id': Param('int', False, 0, 4294967295, ''),
    'exit_reporter': Param('string', False, None, None, ''),
    'argv': Param('strv', True, None, None, ''),
    'cwd': Param('string', True, None, None, ''),
    'on_end': Param('string', False, None, None, ''),
    'env': Param('strv', False, None, None, ''),
    'umask': Param('int', False, 0, 511, ''),
}

# update's, besides id.
UPDATE_PARAMS: Dict[str, Param] = {
    'priority': Param('int', False, -1000, 1000, 'count'),
    'wait_free_pct': Param('number', False, 0, 100, 'percent'),
    'wait_free_bytes': Param('int', False, 0, 9223372036854775807, 'size'),
    'swap_budget_bytes': Param('int', False, 0, 9223372036854775807, 'size'),
    'expect_bytes': Param('int', False, 0, 9223372036854775807, 'size'),
    'time_limit_ms': Param('int', False, 0, 9223372036854775807, 'duration'),
    'time_limit_per_attempt_ms': Param('int', False, 0, 9223372036854775807, 'duration'),
    'begin_ms': Param('int', False, 0, 9223372036854775807, 'time'),
}

# stageloadctl's job options (JOB_CLI), by long option.
CLI_OPTIONS: Dict[str, Option] = {
    'after': Option('after', 'text', 'ID[,ID...]', False, False,
           'start after these jobs exited 0; if one\nfails, is killed or cancelled, this one is cancelled'),
    'after-any': Option('after', 'text', 'ID[,ID...]', False, False,
           'start after these jobs ended, however they ended'),
    'hold': Option('held', 'flag', '', False, False,
           "queue it held: it starts only after 'release ID'"),
    'group': Option('group', 'text', 'NAME', False, False,
           "its group: the daemon may limit how many of a\ngroup's jobs run at once (group.NAME.max_running)"),
    'on-end': Option('on_end', 'text', 'CMD', False, False,
           "when the job ends, the daemon runs CMD (/bin/sh -c)\nas you, its output appended to the job's log"),
    'wait-free': Option('wait_free_pct', 'free', 'PCT|SIZE', True, True,
           'start only when free memory is >= PCT%, or\n(a size, 30G) when that much is available'),
    'swap-budget': Option('swap_budget_bytes', 'size', 'SIZE', True, True,
           "kill it when the system's swap grows by more than\nSIZE while it runs (0: none)"),
    'expect': Option('expect_bytes', 'size', 'SIZE', True, True,
           'memory it will use: held back from others until reached'),
    'priority': Option('priority', 'int', 'N', True, True,
           "-1000..1000, higher runs first (default 0;\nabove 0: root and the daemon's admin_group only)"),
    'name': Option('name', 'text', 'NAME', True, False,
           "a label (default: the command's name)"),
    'exclusive': Option('exclusive', 'flag', '', True, False,
           'run only when no other job runs'),
    'retry-on-breach': Option('retry_on_breach', 'int', 'N', True, False,
           'requeue up to N times after a breach'),
    'time': Option('time_limit_ms', 'limit', 'DUR', True, True,
           'kill it once it has run that long (90m, 2h, 1d;\n0: none), summed over its attempts'),
    'time-per-attempt': Option('time_limit_per_attempt_ms', 'limit', 'DUR', True, True,
           'kill an attempt once it has run that long'),
    'begin': Option('begin_ms', 'begin', 'TIME', True, True,
           'start no earlier than TIME (+30m, 23:10,\n2026-12-24T08:00)'),
}
