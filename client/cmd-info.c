/* stageloadctl info: the daemon and its latest sample. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "cli.h"
#include "proto.h"

static int cmd_info(struct cli *, struct cli_args *);

const struct cli_entry cmd_info_entry = {
    .name = "info",
    .summary =
        "the daemon, its config file, job defaults, limits and latest sample",
    .json = "the daemon's answer, with the sample's fields also at the top\n"
            "level (jq .free_pct)",
    .exec = cmd_info,
};

/* --json prints the daemon's answer with the sample's fields also at the
 * top level, so `jq .free_pct` works without knowing the nesting. */
static int
info_json(struct cli *cli)
{
	cJSON *r, *sample, *item;
	char *text = NULL, *out;
	int rc;

	rc = sl_call(cli->client, "info", NULL, &text);
	if (rc < 0)
		return cli_fail(cli);
	r = cJSON_Parse(text);
	sl_free(text);
	if (r == NULL) {
		cli_error("cannot parse the daemon's answer");
		return EXIT_ERR;
	}
	sample = cJSON_GetObjectItemCaseSensitive(r, "sample");
	if (cJSON_IsObject(sample)) {
		cJSON_ArrayForEach(item, sample)
		{
			if (cJSON_GetObjectItemCaseSensitive(r, item->string) ==
			    NULL)
				cJSON_AddItemToObject(r, item->string,
				                      cJSON_Duplicate(item, 1));
		}
	}
	out = proto_print(r, 1);
	cJSON_Delete(r);
	if (out == NULL) {
		cli_error("out of memory");
		return EXIT_ERR;
	}
	printf("%s\n", out);
	free(out);
	return EXIT_OK;
}

static int64_t
info_int(const cJSON *o, const char *name)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, name);

	return cJSON_IsNumber(v) ? (int64_t)v->valuedouble : 0;
}

/* Whether the daemon keeps the machine from idle sleep, and why; nothing
 * from a daemon before keep_awake was in info. */
static void
info_print_awake(const cJSON *r)
{
	const cJSON *ka = cJSON_GetObjectItemCaseSensitive(r, "keep_awake");
	const cJSON *hold, *why, *until;
	char t[64], safe[512];

	if (!cJSON_IsObject(ka))
		return;
	hold = cJSON_GetObjectItemCaseSensitive(ka, "hold");
	why = cJSON_GetObjectItemCaseSensitive(ka, "why");
	until = cJSON_GetObjectItemCaseSensitive(ka, "until_ms");
	printf("awake      %s", !cJSON_IsString(hold) ? "not held"
	                        : strcmp(hold->valuestring, "queue") == 0
	                            ? "held for the queue"
	                            : "held");
	if (cJSON_IsString(why))
		printf(": %s",
		       cli_safe(why->valuestring, 0, safe, sizeof safe));
	if (cJSON_IsNumber(until) && cJSON_IsString(hold))
		printf(", until %s",
		       cli_time((int64_t)until->valuedouble, 0, t, sizeof t));
	printf("\n");
}

/*
 * The config file and the job defaults in effect, from info's config_path
 * and defaults (a daemon before them has neither: nothing is printed).
 */
static void
info_print_config(struct cli *cli)
{
	const cJSON *path, *def, *lim, *mfd;
	char *text = NULL, a[32], b[32], c[32], safe[4200];
	cJSON *r;

	if (sl_call(cli->client, "info", NULL, &text) < 0)
		return;
	r = cJSON_Parse(text);
	sl_free(text);
	path = cJSON_GetObjectItemCaseSensitive(r, "config_path");
	def = cJSON_GetObjectItemCaseSensitive(r, "defaults");
	lim = cJSON_GetObjectItemCaseSensitive(r, "limits");
	if (cJSON_IsString(path))
		printf("config     %s\n",
		       cli_safe(path->valuestring, 0, safe, sizeof safe));
	else if (cJSON_IsNull(path))
		printf("config     none (built-in defaults and options)\n");
	if (cJSON_IsObject(def)) {
		const cJSON *wf =
		    cJSON_GetObjectItemCaseSensitive(def, "wait_free_pct");
		int64_t budget = info_int(def, "swap_budget_bytes");
		int64_t maxrun = info_int(def, "max_running");
		printf(
		    "defaults   wait_free %.0f%%, swap_budget %s, max_running "
		    "%s\n",
		    cJSON_IsNumber(wf) ? wf->valuedouble : 0.0,
		    budget > 0 ? cli_size((uint64_t)budget, a, sizeof a)
		               : "none",
		    maxrun > 0 ? (snprintf(b, sizeof b, "%" PRId64, maxrun), b)
		               : "no limit");
		printf(
		    "           grace %s, settle %s, hol_bound %s\n",
		    cli_duration(info_int(def, "grace_ms"), a, sizeof a),
		    cli_duration(info_int(def, "settle_ms"), b, sizeof b),
		    cli_duration(info_int(def, "hol_bound_ms"), c, sizeof c));
	}
	if (cJSON_IsObject(lim)) {
		mfd = cJSON_GetObjectItemCaseSensitive(lim, "min_free_disk");
		printf("limits     %" PRId64 " queued jobs per user, %" PRId64
		       " connections per user, log %s,\n",
		       info_int(lim, "max_queued_per_uid"),
		       info_int(lim, "max_clients_per_uid"),
		       cli_size((uint64_t)info_int(lim, "max_log_bytes"), a,
		                sizeof a));
		printf("           stored %s per user, min_free_disk %s "
		       "(info --json lists all)\n",
		       cli_size(
		           (uint64_t)info_int(lim, "max_stored_bytes_per_uid"),
		           b, sizeof b),
		       cJSON_IsString(mfd)
		           ? mfd->valuestring
		           : cli_size((uint64_t)info_int(lim, "min_free_disk"),
		                      c, sizeof c));
	}
	info_print_awake(r);
	cJSON_Delete(r);
}

static int
cmd_info(struct cli *cli, struct cli_args *args)
{
	struct sl_info in;
	const struct sl_sample *s = &in.sample;
	char a[32], b[32], t[64];
	int rc;

	if ((rc = cli_connect(cli)) != 0)
		return rc;
	if (cli->json)
		return info_json(cli);
	if (sl_info(cli->client, &in) < 0)
		return cli_fail(cli);

	printf("daemon     stageloadd %s (%s), protocol %d\n",
	       in.daemon_version, in.os, in.version);
	printf("socket     %s\n",
	       in.socket[0] ? in.socket : sl_path(cli->client));
	printf("database   %s (%s)\n", in.db_path,
	       cli_size(in.db_bytes, a, sizeof a));
	if (in.storage_error[0] != '\0')
		printf("STORAGE    %s\n", in.storage_error);
	printf("interval   %s", cli_duration(in.interval_ms, a, sizeof a));
	if (in.sampling_fast)
		printf(" (now %s: %s)",
		       cli_duration(in.sampling_interval_ms, b, sizeof b),
		       in.sampling_reason);
	printf("\n");
	if (in.started_at_ms > 0)
		printf("up since   %s\n",
		       cli_time(in.started_at_ms, 0, t, sizeof t));
	printf("jobs       %d running, %d queued\n", in.jobs_running,
	       in.jobs_queued);
	info_print_config(cli);
	if (!in.has_sample) {
		printf("sample     none yet\n");
		return EXIT_OK;
	}
	printf("sampled    %s\n", cli_time(s->sampled_at_ms, 1, t, sizeof t));
	printf("free       %.1f%% (%s available of %s)\n", s->free_pct,
	       cli_size(s->available_bytes, a, sizeof a),
	       cli_size(s->total_bytes, b, sizeof b));
	printf("swap       %s used of %s\n",
	       cli_size(s->swap_used_bytes, a, sizeof a),
	       cli_size(s->swap_total_bytes, b, sizeof b));
	if (s->has_psi)
		printf("pressure   %s (PSI some avg10 %.2f)\n", s->pressure,
		       s->psi_some_avg10);
	else
		printf("pressure   %s\n", s->pressure);
	if (s->compressed_bytes > 0 || s->wired_bytes > 0)
		printf("compressed %s, wired %s\n",
		       cli_size(s->compressed_bytes, a, sizeof a),
		       cli_size(s->wired_bytes, b, sizeof b));
	return EXIT_OK;
}
