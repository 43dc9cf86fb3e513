/*
 * stageloadctl meter: a JSONL trace of the daemon's samples, optionally
 * with one process tree's memory, for plotting a run afterwards.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"

static int cmd_meter(struct cli *, struct cli_args *);

static const struct cli_option meter_options[] = {
    {"interval", 0, CLI_DURATION, "S", 0, 0,
     "seconds between lines (default: the daemon's interval);\n"
     "coarser than the daemon's keeps every Nth sample"},
    {"count", 0, CLI_INT, "N", 1, 0x7fffffffL, "stop after N lines"},
    {"pid", 0, CLI_INT, "PID", 1, 0x7fffffffL,
     "add that process tree's footprint_bytes and swap_bytes"},
    {"out", 0, CLI_TEXT, "FILE", 0, 0, "write to FILE instead of stdout"},
    {NULL, 0, 0, NULL, 0, 0, NULL},
};

const struct cli_entry cmd_meter_entry = {
    .name = "meter",
    .summary = "a JSONL trace of memory, one line per sample",
    .options = meter_options,
    .json = "accepted: the trace is JSON lines already",
    .exec = cmd_meter,
};

static void
print_sample(FILE *f, const struct sl_sample *s)
{
	fprintf(f,
	        "{\"ts_ms\":%" PRId64 ",\"free_pct\":%.15g,"
	        "\"available_bytes\":%" PRIu64 ",\"swap_used_bytes\":%" PRIu64
	        ",\"pressure\":\"%s\"",
	        s->sampled_at_ms, s->free_pct, s->available_bytes,
	        s->swap_used_bytes, s->pressure);
	if (s->has_pid) {
		fprintf(f, ",\"pid\":%" PRId64 ",\"footprint_bytes\":%" PRIu64,
		        s->pid, s->footprint_bytes);
		if (s->has_swap_bytes)
			fprintf(f, ",\"swap_bytes\":%" PRIu64, s->swap_bytes);
		else
			fprintf(f, ",\"swap_bytes\":null");
		fprintf(f, ",\"nprocs\":%d", s->nprocs);
	}
	fprintf(f, "}\n");
}

static int
cmd_meter(struct cli *cli, struct cli_args *args)
{
	int64_t interval_ms = cli_number(args, "interval", 0), daemon_ms = 0;
	int64_t count = cli_number(args, "count", 0);
	int64_t pid = cli_number(args, "pid", 0), last_ms = -1, written = 0;
	const char *out_path = cli_text(args, "out", NULL);
	struct sl_notification n;
	FILE *out = stdout;
	int rc, status = EXIT_OK;

	if ((rc = cli_connect(cli)) != 0)
		return rc;
	if (sl_subscribe(cli->client, 1, 0, pid, &daemon_ms) < 0)
		return cli_fail(cli);
	if (interval_ms > 0 && daemon_ms > 0 && interval_ms < daemon_ms) {
		char d[32];
		cli_error("the daemon samples every %s; metering at that rate",
		          cli_duration(daemon_ms, d, sizeof d));
	}
	if (out_path != NULL) {
		out = fopen(out_path, "w");
		if (out == NULL) {
			cli_error("cannot write %s: %s", out_path,
			          strerror(errno));
			return EXIT_ERR;
		}
	}

	while (count == 0 || written < count) {
		rc = sl_next_notification(cli->client, -1, &n);
		if (rc == -EINTR)
			continue;
		if (rc < 0) {
			status = cli_fail(cli);
			break;
		}
		if (n.kind == SL_N_PROCESS_GONE) {
			cli_error("process %" PRId64 " has gone", n.pid);
			sl_notification_clear(&n);
			break;
		}
		if (n.kind == SL_N_SAMPLE &&
		    cli_meter_due(last_ms, n.sample.sampled_at_ms, interval_ms,
		                  daemon_ms)) {
			print_sample(out, &n.sample);
			/* Each line is complete on disk, so a trace cut by
			 * Ctrl-C is still valid JSONL. */
			if (fflush(out) != 0) {
				cli_error("cannot write %s: %s",
				          out_path ? out_path : "output",
				          strerror(errno));
				status = EXIT_ERR;
				sl_notification_clear(&n);
				break;
			}
			last_ms = n.sample.sampled_at_ms;
			written++;
		}
		sl_notification_clear(&n);
	}
	if (out != stdout && fclose(out) != 0 && status == EXIT_OK) {
		cli_error("cannot write %s: %s", out_path, strerror(errno));
		status = EXIT_ERR;
	}
	return status;
}
