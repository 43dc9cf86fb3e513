/*
 * How stageloadctl shows learned peaks (docs/jobs.md, "Learned peaks"):
 * where a job's reservation came from, in status and show, and what past
 * runs of its name reached, in show.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "cli.h"

void
cli_job_expect(const struct sl_job *j, char *buf, size_t len)
{
	char e[16];
	size_t n = strlen(buf);

	/* Only while it may still hold memory it has not taken. */
	if (j->expect_bytes == 0 || sl_job_ended(j) || n >= len)
		return;
	cli_size(j->expect_bytes, e, sizeof e);
	if (strcmp(j->expect_source, "learned") == 0)
		snprintf(buf + n, len - n, ", expects %s (learned, %d run%s)",
		         e, j->expect_runs, j->expect_runs == 1 ? "" : "s");
	else
		snprintf(buf + n, len - n, ", expects %s", e);
}

static uint64_t
num(const cJSON *o, const char *name)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, name);

	return cJSON_IsNumber(v) && v->valuedouble > 0
	           ? (uint64_t)v->valuedouble
	           : 0;
}

void
cli_print_learned(const char *show_json, FILE *f)
{
	static const char *const head[] = {"STAGE", "PEAK FOOTPRINT",
	                                   "SWAP GROWTH"};
	static const int right[] = {0, 1, 1};
	const cJSON *l, *name, *stages, *s;
	char safe[1100], fp[16], sw[16];
	struct cli_table t;
	cJSON *r;
	int runs, killed;

	if (show_json == NULL || (r = cJSON_Parse(show_json)) == NULL)
		return;
	l = cJSON_GetObjectItemCaseSensitive(r, "learned");
	name = cJSON_GetObjectItemCaseSensitive(r, "name");
	runs = (int)num(l, "runs");
	if (!cJSON_IsObject(l) || !cJSON_IsString(name) || runs == 0) {
		cJSON_Delete(r);
		return;
	}
	killed = (int)num(l, "killed");
	cli_safe(name->valuestring, 48, safe, sizeof safe);
	fprintf(f,
	        "Learned from the last %d run%s of %s: peak footprint %s, "
	        "the system's swap grew up to %s while it ran",
	        runs, runs == 1 ? "" : "s", safe,
	        cli_size(num(l, "footprint_peak_bytes"), fp, sizeof fp),
	        cli_size(num(l, "swap_growth_peak_bytes"), sw, sizeof sw));
	if (killed > 0)
		fprintf(f, " (%d killed: %s peak is a lower bound)", killed,
		        killed == 1 ? "its" : "their");
	fprintf(f, ".\n");
	stages = cJSON_GetObjectItemCaseSensitive(l, "stages");
	if (cJSON_IsArray(stages) && cJSON_GetArraySize(stages) > 0 &&
	    cli_table_init(&t, 3, head, right) == 0) {
		cJSON_ArrayForEach(s, stages)
		{
			const cJSON *sn =
			    cJSON_GetObjectItemCaseSensitive(s, "name");
			const char *cells[3];

			if (!cJSON_IsString(sn))
				continue;
			cli_safe(sn->valuestring, 40, safe, sizeof safe);
			cells[0] = safe;
			cells[1] = cli_size(num(s, "footprint_peak_bytes"), fp,
			                    sizeof fp);
			cells[2] = cli_size(num(s, "swap_growth_bytes"), sw,
			                    sizeof sw);
			cli_table_add(&t, cells);
		}
		fprintf(f, "Learned stages:\n");
		cli_table_print(&t, f);
		cli_table_free(&t);
	}
	cJSON_Delete(r);
}
