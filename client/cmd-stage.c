/*
 * stage: tell the daemon which stage a job is in, for shell pipelines
 * inside a job (`stageloadctl stage encode; ...; stageloadctl stage
 * decode`). The job is $STAGELOAD_JOB_ID unless --job says. A job that has
 * ended is warned about and is not an error: a pipeline that outlived its
 * job has nothing left to label.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "cli.h"

static int cmd_stage(struct cli *, struct cli_args *);

static const struct cli_option stage_options[] = {
    {"job", 0, CLI_ID, "ID", 0, 0,
     "the job (default: $STAGELOAD_JOB_ID, which every job has)"},
    {NULL, 0, 0, NULL, 0, 0, NULL},
};

const struct cli_entry cmd_stage_entry = {
    .name = "stage",
    .summary = "inside a job: say it entered stage NAME (for show and kills)",
    .operands = "NAME",
    .min_operands = 1,
    .max_operands = 1,
    .options = stage_options,
    .no_json = "it prints nothing",
    .exec = cmd_stage,
};

static int
cmd_stage(struct cli *cli, struct cli_args *args)
{
	const char *idtext = getenv("STAGELOAD_JOB_ID");
	int64_t id;
	int code;

	/* Connected first, as every command: no daemon is said before
	 * anything else. */
	if ((code = cli_connect(cli)) != 0)
		return code;
	if (cli_has(args, "job"))
		id = cli_number(args, "job", 0);
	else if (idtext == NULL || idtext[0] == '\0')
		return cli_usage_error(cli,
		                       "not inside a job (STAGELOAD_JOB_ID "
		                       "is not set) and no --job given");
	else if (cli_parse_id(idtext, &id) != 0)
		return cli_usage_error(
		    cli, "bad job id '%s' in STAGELOAD_JOB_ID", idtext);
	if (sl_stage(cli->client, id, args->argv[0]) < 0) {
		code = sl_errcode(cli->client);
		if (code == SL_E_STATE) {
			cli_error("warning: job %" PRId64 ": %s; stage not "
			          "recorded",
			          id, sl_errmsg(cli->client));
			return EXIT_OK;
		}
		return cli_fail_job(cli, id);
	}
	return EXIT_OK;
}

/* The stages of a `show` answer (JSON text) as a table, or nothing when
 * the job reported none. */
void
cli_print_stages(const char *show_json, int64_t now, FILE *f)
{
	static const char *const head[] = {"STAGE", "START", "DURATION",
	                                   "PEAK FOOTPRINT", "SWAP GROWTH"};
	static const int right[] = {0, 0, 1, 1, 1};
	struct cli_table t;
	const cJSON *stages, *s;
	cJSON *r;

	if (show_json == NULL || (r = cJSON_Parse(show_json)) == NULL)
		return;
	stages = cJSON_GetObjectItemCaseSensitive(r, "stages");
	if (!cJSON_IsArray(stages) || cJSON_GetArraySize(stages) == 0 ||
	    cli_table_init(&t, 5, head, right) != 0) {
		cJSON_Delete(r);
		return;
	}
	cJSON_ArrayForEach(s, stages)
	{
		const cJSON *name = cJSON_GetObjectItemCaseSensitive(s, "name");
		const cJSON *st =
		    cJSON_GetObjectItemCaseSensitive(s, "started_at_ms");
		const cJSON *en =
		    cJSON_GetObjectItemCaseSensitive(s, "ended_at_ms");
		const cJSON *fp =
		    cJSON_GetObjectItemCaseSensitive(s, "footprint_peak_bytes");
		const cJSON *sw =
		    cJSON_GetObjectItemCaseSensitive(s, "swap_growth_bytes");
		char safe[1100], start[32], dur[48], fps[16], sws[16];
		const char *cells[5];
		int64_t t0 = cJSON_IsNumber(st) ? (int64_t)st->valuedouble : 0;
		int64_t t1 = cJSON_IsNumber(en) ? (int64_t)en->valuedouble : 0;

		if (!cJSON_IsString(name))
			continue;
		cli_safe(name->valuestring, 40, safe, sizeof safe);
		cli_time(t0, 0, start, sizeof start);
		/* the clock time only: the date is in the paragraph */
		cells[1] = strlen(start) > 11 ? start + 11 : start;
		cli_duration((t1 > 0 ? t1 : now) - t0, dur, sizeof dur);
		if (t1 <= 0)
			strncat(dur, " (now)", sizeof dur - strlen(dur) - 1);
		cells[0] = safe;
		cells[2] = dur;
		cells[3] =
		    cli_size(cJSON_IsNumber(fp) ? (uint64_t)fp->valuedouble : 0,
		             fps, sizeof fps);
		cells[4] =
		    cli_size(cJSON_IsNumber(sw) ? (uint64_t)sw->valuedouble : 0,
		             sws, sizeof sws);
		cli_table_add(&t, cells);
	}
	fprintf(f, "Stages:\n");
	cli_table_print(&t, f);
	cli_table_free(&t);
	cJSON_Delete(r);
}
