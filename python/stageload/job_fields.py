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
}
