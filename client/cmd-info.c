/* stageloadctl info: the daemon and its latest sample. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "cli.h"
#include "proto.h"

static int cmd_info(struct cli *, struct cli_args *);

const struct cli_entry cmd_info_entry = {
    .name = "info",
    .summary = "daemon version, sample interval and the latest memory sample",
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
