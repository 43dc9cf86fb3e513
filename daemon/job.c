/* The job record: state names and freeing. docs/jobs.md has the machine. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "job.h"

static const char *const job_state_names[] = {
    [JOB_QUEUED] = "queued",       [JOB_ADMITTED] = "admitted",
    [JOB_RUNNING] = "running",     [JOB_EXITED] = "exited",
    [JOB_KILLED] = "killed",       [JOB_FAILED] = "failed",
    [JOB_CANCELLED] = "cancelled", [JOB_LOST] = "lost",
};
#define JOB_NSTATES (sizeof job_state_names / sizeof job_state_names[0])

const char *
job_state_name(enum job_state s)
{
	if ((unsigned)s >= JOB_NSTATES)
		return "unknown";
	return job_state_names[s];
}

int
job_state_parse(const char *name, enum job_state *s)
{
	size_t i;

	if (name == NULL)
		return -EINVAL;
	for (i = 0; i < JOB_NSTATES; i++) {
		if (strcmp(name, job_state_names[i]) == 0) {
			*s = (enum job_state)i;
			return 0;
		}
	}
	return -EINVAL;
}

static void
job_free_strv(char **v)
{
	char **p;

	if (v == NULL)
		return;
	for (p = v; *p != NULL; p++)
		free(*p);
	free(v);
}

void
job_free(struct job *j)
{
	if (j == NULL)
		return;
	free(j->groups);
	free(j->user);
	free(j->name);
	job_free_strv(j->argv);
	free(j->cwd);
	job_free_strv(j->env);
	free(j->end_reason);
	free(j->end_detail);
	free(j->kill);
	free(j);
}
