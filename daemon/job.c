/* The job record: state names and freeing. docs/jobs.md has the machine. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "job.h"
#include "proto.h"
#include "text.h"

const char *
job_state_name(enum job_state s)
{
	return names_state_name((int)s);
}

int
job_state_parse(const char *name, enum job_state *s)
{
	int i = names_state_parse(name);

	if (i < 0)
		return -EINVAL;
	*s = (enum job_state)i;
	return 0;
}

const char *
job_expect_source_name(enum job_expect_source e)
{
	switch (e) {
	case JOB_EXPECT_GIVEN:
		return "given";
	case JOB_EXPECT_LEARNED:
		return "learned";
	case JOB_EXPECT_NONE:
		break;
	}
	return NULL;
}

enum job_expect_source
job_expect_source_parse(const char *name)
{
	if (name != NULL && strcmp(name, "given") == 0)
		return JOB_EXPECT_GIVEN;
	if (name != NULL && strcmp(name, "learned") == 0)
		return JOB_EXPECT_LEARNED;
	return JOB_EXPECT_NONE;
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
	free(j->command);
	free(j->kill);
	free(j->attempts);
	free(j->after);
	free(j->group);
	free(j->array);
	free(j->on_end);
	free(j->exit_reporter);
	free(j->job_token);
	free(j);
}

int
job_drop_args(struct job *j)
{
	char cmd[JOB_COMMAND_MAX + 1];

	if (j->command == NULL) {
		job_command(j->argv, cmd, sizeof cmd);
		if ((j->command = strdup(cmd)) == NULL)
			return -ENOMEM;
	}
	job_free_strv(j->argv);
	job_free_strv(j->env);
	j->argv = NULL;
	j->env = NULL;
	return 0;
}

size_t
job_command(char *const *argv, char *out, size_t outlen)
{
	/* Room for one more byte than the cap, so a cut is seen. */
	char buf[JOB_COMMAND_MAX + 8];
	size_t n = 0, cap = JOB_COMMAND_MAX + 1;
	const char *a;

#define PUT(c)                                                                 \
	do {                                                                   \
		if (n == cap)                                                  \
			goto cut;                                              \
		buf[n++] = (c);                                                \
	} while (0)
	for (size_t i = 0; argv != NULL && argv[i] != NULL; i++) {
		if (i > 0)
			PUT(' ');
		if (proto_shell_plain(argv[i])) {
			for (a = argv[i]; *a != '\0'; a++)
				PUT(*a);
			continue;
		}
		PUT('\'');
		for (a = argv[i]; *a != '\0'; a++) {
			if (*a == '\'') {
				PUT('\'');
				PUT('\\');
				PUT('\'');
			}
			PUT(*a);
		}
		PUT('\'');
	}
#undef PUT
	if (n > JOB_COMMAND_MAX)
		goto cut;
	buf[n] = '\0';
	snprintf(out, outlen, "%s", buf);
	return n;
cut:
	/* At most JOB_COMMAND_MAX bytes with the 3 of the ellipsis, cut
	 * before a UTF-8 continuation byte never. */
	n = JOB_COMMAND_MAX - 3;
	while (n > 0 && ((unsigned char)buf[n] & 0xC0) == 0x80)
		n--;
	memcpy(buf + n, "\xE2\x80\xA6", 3);
	n += 3;
	buf[n] = '\0';
	snprintf(out, outlen, "%s", buf);
	return n;
}

void
job_add_int_or_null(struct cJSON *o, const char *name, int64_t v, int present)
{
	if (present)
		proto_add_int(o, name, v);
	else
		cJSON_AddNullToObject(o, name);
}

cJSON *
job_attempts_json(const struct job *j, int ended, int64_t ended_ms)
{
	cJSON *a = j->attempts != NULL ? cJSON_Parse(j->attempts) : NULL;
	cJSON *e, *last;
	int64_t queued = j->submitted_ms;

	if (a == NULL || !cJSON_IsArray(a)) {
		cJSON_Delete(a);
		a = cJSON_CreateArray();
	}
	if (a == NULL || (e = cJSON_CreateObject()) == NULL) {
		cJSON_Delete(a);
		return NULL;
	}
	/* queued when submitted, or when the attempt before ended */
	last = cJSON_GetArrayItem(a, cJSON_GetArraySize(a) - 1);
	if (last != NULL) {
		const cJSON *x =
		    cJSON_GetObjectItemCaseSensitive(last, "ended_at_ms");
		if (cJSON_IsNumber(x))
			queued = (int64_t)x->valuedouble;
	}
	proto_add_int(e, "attempt", j->attempt);
	proto_add_int(e, "queued_at_ms", queued);
	job_add_int_or_null(e, "admitted_at_ms", j->admitted_ms,
	                    j->admitted_ms > 0);
	job_add_int_or_null(e, "started_at_ms", j->started_ms,
	                    j->started_ms > 0);
	job_add_int_or_null(e, "ended_at_ms", ended_ms, ended && ended_ms > 0);
	if (ended && j->end_reason != NULL)
		cJSON_AddStringToObject(e, "end_reason", j->end_reason);
	else
		cJSON_AddNullToObject(e, "end_reason");
	cJSON_AddItemToArray(a, e);
	return a;
}
