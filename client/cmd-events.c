/*
 * stageloadctl events: the event log, the newest first (-n) or followed
 * (-f), filtered by job, time, or the daemon's job filter (user, state,
 * name).
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "clock.h"
#include "cli.h"
#include "proto.h"
#include "text.h"
#include "units.h"

static int cmd_events(struct cli *, struct cli_args *);

static const struct cli_option events_options[] = {
    {"lines", 'n', CLI_INT, "N", 1, 100000,
     "the newest N events (default 20); with -f, N of\nbacklog first"},
    {"follow", 'f', CLI_FLAG, NULL, 0, 0, "keep following"},
    {"since", 0, CLI_TEXT, "T", 0, 0,
     "events at or after T: a duration back from now\n(1h), an epoch or "
     "\"2026-11-30 05:00\""},
    {"until", 0, CLI_TEXT, "T", 0, 0, "events before T (not with -f)"},
    {"job", 0, CLI_ID, "ID", 0, 0, "only that job's events"},
    {"after", 0, CLI_INT, "ID", 0, 0x7fffffffL,
     "oldest first, from after that event id"},
    {"limit", 0, CLI_INT, "N", 1, 10000,
     "oldest first, N at a time (default 100): without\n-f only the first "
     "N after --after"},
    {NULL, 0, 0, NULL, 0, 0, NULL},
};

const struct cli_entry cmd_events_entry = {
    .name = "events",
    .summary = "the event log: the newest 20 (-n N), -f: follow",
    .options = events_options,
    .more_options = cli_filter_options,
    .json = "one event object per line",
    .exec = cmd_events,
};

/* ---- events ---- */

static void
print_event(const struct sl_event *e, int json)
{
	char t[64], job[32];

	if (json) {
		cJSON *o = cJSON_CreateObject(), *d;
		char *text;
		if (o == NULL)
			return;
		cJSON_AddNumberToObject(o, "id", (double)e->id);
		cJSON_AddNumberToObject(o, "ts_ms", (double)e->ts_ms);
		if (e->job_id > 0)
			cJSON_AddNumberToObject(o, "job_id", (double)e->job_id);
		else
			cJSON_AddNullToObject(o, "job_id");
		/* The daemon's own events have no user: null, as it sent
		 * them (no user name is empty). */
		if (e->user[0] != '\0')
			cJSON_AddStringToObject(o, "user", e->user);
		else
			cJSON_AddNullToObject(o, "user");
		cJSON_AddStringToObject(o, "kind", e->kind);
		/* The detail is the daemon's object: pass it on as one. */
		if (e->detail != NULL && (d = cJSON_Parse(e->detail)) != NULL)
			cJSON_AddItemToObject(o, "detail", d);
		else if (e->detail != NULL)
			cJSON_AddStringToObject(o, "detail", e->detail);
		else
			cJSON_AddNullToObject(o, "detail");
		text = proto_print(o, 0);
		if (text != NULL)
			cli_print_json(stdout, text);
		free(text);
		cJSON_Delete(o);
	} else {
		if (e->job_id > 0)
			snprintf(job, sizeof job, "job %" PRId64, e->job_id);
		else
			snprintf(job, sizeof job, "-");
		char user[64];
		/* The detail is the daemon's object as JSON text: escaped as
		 * JSON, so it stays JSON (a name's ESC is already "\u001b" in
		 * it); any other text as text. */
		char *detail = NULL;
		if (e->detail != NULL && e->detail[0] == '{')
			detail =
			    proto_text_escape_dup(e->detail, strlen(e->detail),
			                          PROTO_TEXT_JSON, NULL);
		else if (e->detail != NULL)
			detail = cli_safe_dup(e->detail);

		printf("%7" PRId64 "  %s  %-8s %-10s %-10s %s\n", e->id,
		       cli_time(e->ts_ms, 0, t, sizeof t), job,
		       e->user[0] ? cli_safe(e->user, 32, user, sizeof user)
		                  : "-",
		       e->kind, detail != NULL ? detail : "");
		free(detail);
	}
	fflush(stdout);
}

/* What events prints: --job, --since and --until; the filter options
 * (--user, --mine, --state, --name) are the daemon's. */
struct events_filter {
	int64_t job_id; /* 0: any */
	const sl_filter *daemon;
	int64_t since_ms, until_ms; /* 0: none */
};

static int
events_match(const struct events_filter *f, const struct sl_event *e)
{
	if (f->job_id > 0 && e->job_id != f->job_id)
		return 0;
	if (f->since_ms > 0 && e->ts_ms < f->since_ms)
		return 0;
	if (f->until_ms > 0 && e->ts_ms >= f->until_ms)
		return 0;
	return 1;
}

/*
 * The newest n events that match, as journalctl -n shows them: the log is
 * read newest first (before_id), a page of up to 10000 at a time, until n
 * match or the log (or --since) is behind; they are printed oldest first.
 * --job asks the daemon for that job's alone: an old job's few events are
 * read by their index, not found by walking the whole log back to them.
 * *last gets the newest id there is, where a follow goes on from.
 */
static int
events_tail(struct cli *cli, const struct events_filter *f, long n,
            int64_t *last)
{
	struct sl_events_query q = {0, -1, f->job_id, 10000, 0};
	struct sl_event *kept, *ev;
	size_t nev, i, nkept = 0;
	int rc = EXIT_OK, older = 1;

	if ((kept = calloc((size_t)n, sizeof *kept)) == NULL) {
		cli_error("out of memory");
		return EXIT_ERR;
	}
	*last = 0;
	while (older && nkept < (size_t)n) {
		if (sl_events_filtered(cli->client, &q, f->daemon, &ev, &nev) <
		    0) {
			rc = cli_fail(cli);
			break;
		}
		/* A page may end early (its time or size is up: PROTOCOL.md,
		 * events), but is never empty while older events remain. */
		older = nev > 0;
		for (i = 0; i < nev; i++) {
			if (ev[i].id > *last)
				*last = ev[i].id;
			q.before_id = ev[i].id;
			if (f->since_ms > 0 && ev[i].ts_ms < f->since_ms)
				older = 0; /* the rest is older still */
			if (nkept == (size_t)n || !events_match(f, &ev[i]))
				continue;
			/* Kept, detail and all. */
			kept[nkept++] = ev[i];
			ev[i].detail = NULL;
		}
		sl_events_free(ev, nev);
	}
	for (i = nkept; i-- > 0;) {
		if (rc == EXIT_OK)
			print_event(&kept[i], cli->json);
		free(kept[i].detail);
	}
	free(kept);
	return rc;
}

static int
events_run(struct cli *cli, struct cli_args *args, struct events_filter *fp,
           sl_filter *df)
{
	int follow = cli_has(args, "follow");
	int forward = cli_has(args, "after") || cli_has(args, "limit");
	int64_t after = cli_number(args, "after", 0);
	long limit = (long)cli_number(args, "limit", 0);
	struct events_filter f = *fp;
	struct sl_events_query q;
	struct sl_notification n;
	struct sl_event *ev;
	size_t nev, i;
	int64_t last;
	int rc;

	f.daemon = df;
	if (follow && f.until_ms > 0)
		return cli_usage_error(cli, "--until cannot be used with -f");
	if (forward && cli_has(args, "lines"))
		return cli_usage_error(cli, "-n shows the newest events; "
		                            "--after and --limit list from "
		                            "the oldest: not both");
	if ((rc = cli_connect(cli)) != 0)
		return rc;
	if (!forward) {
		/* The newest -n, then (following) what comes after them. */
		if ((rc = events_tail(cli, &f,
		                      (long)cli_number(args, "lines", 20),
		                      &last)) != EXIT_OK ||
		    !follow)
			return rc;
		after = last;
	}
	/*
	 * Following, the backlog comes a page at a time until a page is not
	 * full, and only then do notifications take over; the daemon starts
	 * them with the last page, so an event seen twice (a notification
	 * and a page) is printed once, by id.
	 */
	last = after;
	memset(&q, 0, sizeof q);
	q.job_id = f.job_id;
	q.limit = limit > 0 ? (int)limit : 100; /* the daemon's default */
	q.follow = follow;
	do {
		q.after_id = last;
		if (sl_events_filtered(cli->client, &q, df, &ev, &nev) < 0)
			return cli_fail(cli);
		for (i = 0; i < nev; i++)
			if (ev[i].id > last) {
				if (events_match(&f, &ev[i]))
					print_event(&ev[i], cli->json);
				last = ev[i].id;
			}
		sl_events_free(ev, nev);
	} while (follow && nev == (size_t)q.limit);
	while (follow) {
		rc = sl_next_notification(cli->client, -1, &n);
		if (rc == -EINTR)
			continue;
		if (rc < 0)
			return cli_fail(cli);
		if (n.kind == SL_N_EVENT && n.event.id > last) {
			if (events_match(&f, &n.event))
				print_event(&n.event, cli->json);
			last = n.event.id;
		}
		sl_notification_clear(&n);
	}
	return EXIT_OK;
}

static int
cmd_events(struct cli *cli, struct cli_args *args)
{
	struct events_filter f;
	int64_t now = clock_wall_ms();
	sl_filter *df = NULL;
	int rc;

	memset(&f, 0, sizeof f);
	f.job_id = cli_number(args, "job", 0);
	if ((rc = cli_time_option(cli, args, "since", NULL, now,
	                          &f.since_ms)) >= 0 ||
	    (rc = cli_time_option(cli, args, "until", NULL, now,
	                          &f.until_ms)) >= 0)
		return rc;
	if ((rc = cli_filter(cli, args, &df)) >= 0)
		return rc;
	rc = events_run(cli, args, &f, df);
	sl_filter_free(df);
	return rc;
}
