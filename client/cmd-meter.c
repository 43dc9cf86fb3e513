/*
 * stageloadctl meter: a JSONL trace of the daemon's samples, optionally
 * with one process tree's memory, for plotting a run afterwards.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "units.h"

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

int
cmd_meter(struct cli *cli, int argc, char **argv)
{
	static const struct option longopts[] = {
	    {"interval", required_argument, NULL, 'i'},
	    {"count", required_argument, NULL, 'c'},
	    {"pid", required_argument, NULL, 'p'},
	    {"out", required_argument, NULL, 'o'},
	    {"json", no_argument, NULL, 'j'},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	int64_t interval_ms = 0, daemon_ms = 0, last_ms = -1;
	long count = 0, pid = 0, written = 0;
	const char *out_path = NULL;
	struct sl_notification n;
	FILE *out = stdout;
	int ch, rc, status = EXIT_OK;

	while ((ch = getopt_long(argc, argv, "+h", longopts, NULL)) != -1) {
		switch (ch) {
		case 'i':
			if (units_parse_duration_ms(optarg, &interval_ms) < 0 ||
			    interval_ms <= 0) {
				cli_error("bad --interval '%s' (seconds, e.g. "
				          "0.5 or 2s)",
				          optarg);
				return EXIT_USAGE;
			}
			break;
		case 'c':
			if (cli_parse_int(optarg, 1, 0x7fffffffL, &count) < 0) {
				cli_error("bad --count '%s'", optarg);
				return EXIT_USAGE;
			}
			break;
		case 'p':
			if (cli_parse_int(optarg, 1, 0x7fffffffL, &pid) < 0) {
				cli_error("bad --pid '%s'", optarg);
				return EXIT_USAGE;
			}
			break;
		case 'o':
			out_path = optarg;
			break;
		case 'j':
			break; /* the output is JSON already */
		case 'h':
			return cli_help("meter");
		default:
			return cli_usage("meter");
		}
	}
	if (optind != argc)
		return cli_usage("meter");
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
