/*
 * libstageload's submit: what only the caller can know, added where the
 * spec does not say (the current directory, and for a detached job this
 * process's environment and umask), the check that what is sent is text
 * the protocol can carry, and the job token the answer holds
 * (sl_job_token, client.c, reads it).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "client-internal.h"
#include "proto.h"
#include "stageload.h"

extern char **environ;

/*
 * This process's umask. Linux shows it in /proc/self/status (4.7 and
 * later); elsewhere it can only be read by setting it, which a thread
 * creating a file at that instant could see, so that is the fallback.
 */
static int
current_umask(void)
{
	char line[256];
	unsigned int m;
	mode_t old;
	FILE *f;

	if ((f = fopen("/proc/self/status", "r")) != NULL) {
		while (fgets(line, sizeof line, f) != NULL)
			if (sscanf(line, "Umask: %o", &m) == 1) {
				fclose(f);
				return (int)(m & 0777);
			}
		fclose(f);
	}
	old = umask(077);
	umask(old);
	return (int)(old & 0777);
}

static cJSON *
strv_json(const char *const *v)
{
	cJSON *a = cJSON_CreateArray();
	size_t i;

	if (a == NULL)
		return NULL;
	for (i = 0; v[i] != NULL; i++) {
		cJSON *s = cJSON_CreateString(v[i]);
		if (s == NULL) {
			cJSON_Delete(a);
			return NULL;
		}
		cJSON_AddItemToArray(a, s);
	}
	return a;
}

static int
utf8_ok(const char *s)
{
	return s == NULL || proto_utf8_valid(s, strlen(s));
}

/* The strings of a JSON array, each valid UTF-8: -1, or the index of the
 * first that is not. */
static long
strv_bad_utf8(const cJSON *a)
{
	const cJSON *it;
	long i = 0;

	cJSON_ArrayForEach(it, a)
	{
		if (cJSON_IsString(it) && !utf8_ok(it->valuestring))
			return i;
		i++;
	}
	return -1;
}

static int
submit_text_check(sl_client *c, const cJSON *params)
{
	const cJSON *env = cJSON_GetObjectItemCaseSensitive(params, "env");
	long i;
	size_t n;

	if ((i = strv_bad_utf8(
	         cJSON_GetObjectItemCaseSensitive(params, "argv"))) >= 0)
		return client_error(c, -EINVAL,
		                    "argument %ld is not valid UTF-8, which "
		                    "the protocol cannot carry",
		                    i);
	if (!utf8_ok(cJSON_GetStringValue(
	        cJSON_GetObjectItemCaseSensitive(params, "cwd"))))
		return client_error(c, -EINVAL,
		                    "the working directory is not valid UTF-8, "
		                    "which the protocol cannot carry");
	if (!utf8_ok(cJSON_GetStringValue(
	        cJSON_GetObjectItemCaseSensitive(params, "name"))))
		return client_error(c, -EINVAL, "the name is not valid UTF-8");
	if ((i = strv_bad_utf8(env)) >= 0) {
		const char *e = cJSON_GetArrayItem(env, (int)i)->valuestring;

		n = strcspn(e, "=");
		return client_error(c, -EINVAL,
		                    "environment variable %.*s is not valid "
		                    "UTF-8, which the protocol cannot carry: "
		                    "unset it for the job",
		                    (int)(n < 64 ? n : 64), e);
	}
	return 0;
}

/* Does the JSON array of "NAME=value" strings set name? */
static int
env_has(const cJSON *env, const char *name)
{
	const cJSON *it;
	size_t n = strlen(name);

	cJSON_ArrayForEach(it, env)
	{
		if (cJSON_IsString(it) &&
		    strncmp(it->valuestring, name, n) == 0 &&
		    it->valuestring[n] == '=')
			return 1;
	}
	return 0;
}

/* What only the caller can know, where the spec does not say: the
 * current directory, and for a detached job this process's environment
 * and umask. 0, -ENOMEM or -EINVAL with the cause. */
static int
submit_fill(sl_client *c, cJSON *params)
{
	const cJSON *argv = cJSON_GetObjectItemCaseSensitive(params, "argv");
	int attached =
	    cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(params, "attached"));
	cJSON *env = cJSON_GetObjectItemCaseSensitive(params, "env");
	char cwd[4096];

	if (!cJSON_IsArray(argv) || cJSON_GetArraySize(argv) == 0)
		return client_error(c, -EINVAL, "no command to submit");
	/* Not a connection error whatever errno says (ENOENT: the
	 * directory was removed). */
	if (!cJSON_HasObjectItem(params, "cwd")) {
		if (getcwd(cwd, sizeof cwd) == NULL)
			return client_error(
			    c, -EINVAL, "cannot tell the current directory: %s",
			    strerror(errno));
		if (cJSON_AddStringToObject(params, "cwd", cwd) == NULL)
			return client_error(c, -ENOMEM, "out of memory");
	}
	if (attached)
		return 0;
	if (env == NULL) {
		if ((env = strv_json((const char *const *)environ)) == NULL ||
		    !cJSON_AddItemToObject(params, "env", env)) {
			cJSON_Delete(env);
			return client_error(c, -ENOMEM, "out of memory");
		}
	}
	/* A detached Python job's print() reaches its log (and logs -f) as
	 * it is written, not when a block fills: its stdout is a pipe. The
	 * daemon runs exactly the environment it is given. */
	if (!env_has(env, "PYTHONUNBUFFERED"))
		cJSON_AddItemToArray(env,
		                     cJSON_CreateString("PYTHONUNBUFFERED=1"));
	/* The job makes its files as its submitter would. */
	if (!cJSON_HasObjectItem(params, "umask") &&
	    proto_add_int(params, "umask", current_umask()) == NULL)
		return client_error(c, -ENOMEM, "out of memory");
	return 0;
}

int
sl_submit(sl_client *c, const sl_job_spec *spec, struct sl_submitted *out)
{
	const cJSON *r;
	cJSON *params, *root;
	int rc;

	if (spec == NULL)
		return client_error(c, -EINVAL, "no command to submit");
	if ((params = client_spec_params(spec)) == NULL)
		return client_error(c, -ENOMEM, "out of memory");
	if ((rc = submit_fill(c, params)) < 0) {
		cJSON_Delete(params);
		return rc;
	}
	/* The protocol carries text: bytes that are not UTF-8 would arrive
	 * replaced, and a detached job would run another command. (An
	 * attached job's argv is only its record: run executes its own.) */
	if (!cJSON_IsTrue(
	        cJSON_GetObjectItemCaseSensitive(params, "attached")) &&
	    (rc = submit_text_check(c, params)) < 0) {
		cJSON_Delete(params);
		return rc;
	}
	rc = client_call(c, "submit", params, c->timeout_ms, &root, &r);
	if (rc < 0)
		return rc;
	{
		const cJSON *tok =
		    cJSON_GetObjectItemCaseSensitive(r, "job_token");
		c->token_id = 0;
		c->token[0] = '\0';
		if (cJSON_IsString(tok) &&
		    strlen(tok->valuestring) < sizeof c->token) {
			c->token_id = client_i64(r, "id", 0);
			snprintf(c->token, sizeof c->token, "%s",
			         tok->valuestring);
		}
	}
	if (out != NULL) {
		out->id = client_i64(r, "id", 0);
		out->position = (int)client_i64(r, "position", 0);
		out->queued = (int)client_i64(r, "queued", 0);
		out->groups_capped = cJSON_IsTrue(
		    cJSON_GetObjectItemCaseSensitive(r, "groups_capped"));
	}
	cJSON_Delete(root);
	return 0;
}
