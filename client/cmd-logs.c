/*
 * stageloadctl logs: a job's output, escaped for the terminal unless the
 * socket is one the caller may trust; -f follows it, -n its last lines.
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

#include "cli.h"
#include "proto.h"
#include "text.h"
#include "units.h"

static int cmd_logs(struct cli *, struct cli_args *);

static const struct cli_option logs_options[] = {
    {"follow", 'f', CLI_FLAG, NULL, 0, 0, "follow until the job has ended"},
    {"lines", 'n', CLI_INT, "N", 1, 1000000,
     "only the last N lines (with -f: then follow)"},
    {"raw", 0, CLI_FLAG, NULL, 0, 0,
     "another user's job's output as it is, not escaped"},
    {NULL, 0, 0, NULL, 0, 0, NULL},
};

const struct cli_entry cmd_logs_entry = {
    .name = "logs",
    .summary = "print a detached job's output (-n N: the last N lines, -f: "
               "follow until it ends)",
    .operands = "ID",
    .min_operands = 1,
    .max_operands = 1,
    .options = logs_options,
    .no_json = "it prints the job's own bytes",
    .exec = cmd_logs,
};

/* ---- logs ---- */

/*
 * Where the log goes. A job's output is shown as it is to the job's own
 * user (what cat(1) of their own file would do: their job already runs
 * as them). Anyone else (root) gets it escaped, newlines and tabs kept
 * (PROTO_TEXT_MULTILINE), unless --raw: what another user's job printed
 * must not drive the viewer's terminal (docs/security.md, "Text from
 * users").
 */
struct log_out {
	int err;    /* errno of our own output, told apart from the daemon's
	               connection failing (both could be EPIPE) */
	int escape; /* the viewer is not the job's user */
	char tail[4];
	size_t ntail; /* an incomplete character held for the next chunk */
};

/* Escape data to stdout; flags may hold PROTO_TEXT_PARTIAL, and then an
 * incomplete character at the end is kept in o->tail. */
static int
log_put_escaped(struct log_out *o, const char *data, size_t len, unsigned flags)
{
	char buf[4096];
	size_t done, n;

	while (len > 0) {
		done =
		    proto_text_escape(data, len, PROTO_TEXT_MULTILINE | flags,
		                      0, buf, sizeof buf, &n);
		if (n > 0 && fwrite(buf, 1, n, stdout) != n)
			return -1;
		if (done == 0)
			break; /* an incomplete character: at most 3 bytes */
		data += done;
		len -= done;
	}
	if (len > sizeof o->tail)
		return -1; /* cannot happen: PARTIAL leaves less */
	memcpy(o->tail, data, len);
	o->ntail = len;
	return 0;
}

static int
write_log(void *arg, int64_t offset, const char *data, size_t len)
{
	struct log_out *o = arg;
	char *joined = NULL;
	int rc = 0;

	(void)offset;
	errno = 0;
	if (!o->escape) {
		rc = fwrite(data, 1, len, stdout) != len ? -1 : 0;
	} else {
		if (o->ntail > 0) {
			joined = malloc(o->ntail + len);
			if (joined == NULL) {
				o->err = ENOMEM;
				return -EPIPE;
			}
			memcpy(joined, o->tail, o->ntail);
			memcpy(joined + o->ntail, data, len);
			data = joined;
			len += o->ntail;
			o->ntail = 0;
		}
		rc = log_put_escaped(o, data, len, PROTO_TEXT_PARTIAL);
		free(joined);
	}
	if (rc != 0 || fflush(stdout) != 0) {
		o->err = errno != 0 ? errno : EIO;
		return -EPIPE;
	}
	return 0;
}

/*
 * logs -n: the log is read to its end and only its last n lines are kept
 * (a last line without its newline counts as one), then written as the
 * whole log would be.
 */
struct log_tail {
	char *buf;
	size_t len, cap;
	long n;
};

/* Drop what comes before the last t->n lines. */
static void
log_tail_cut(struct log_tail *t)
{
	size_t i = t->len, start = 0;
	long lines = 0;

	if (i > 0 && t->buf[i - 1] == '\n')
		i--;
	while (i > 0) {
		if (t->buf[i - 1] == '\n' && ++lines == t->n) {
			start = i;
			break;
		}
		i--;
	}
	if (start > 0) {
		memmove(t->buf, t->buf + start, t->len - start);
		t->len -= start;
	}
}

static int
log_tail_add(void *arg, int64_t offset, const char *data, size_t len)
{
	struct log_tail *t = arg;
	char *nb;

	(void)offset;
	if (t->len + len > t->cap) {
		size_t cap = t->cap > 0 ? t->cap : 65536;
		while (cap < t->len + len)
			cap *= 2;
		if ((nb = realloc(t->buf, cap)) == NULL)
			return -ENOMEM;
		t->buf = nb;
		t->cap = cap;
	}
	memcpy(t->buf + t->len, data, len);
	t->len += len;
	/* Bounded by the lines kept, not by the log's size. */
	if (t->len > t->cap / 2)
		log_tail_cut(t);
	return 0;
}

static int logs_one(struct cli *cli, struct cli_args *args, int64_t id,
                    int header);

static int
cmd_logs(struct cli *cli, struct cli_args *args)
{
	int64_t id, *ids;
	int rc, n, k;

	if (cli_parse_id(args->argv[0], &id) == 0) {
		if ((rc = cli_connect(cli)) != 0)
			return rc;
		return logs_one(cli, args, id, 0);
	}
	/* A42: each element's log under a header, in index order (-f
	 * follows each to its end in turn); A42_3: that element's. */
	if ((rc = cli_job_refs(cli, 1, args->argv, &ids, &n)) >= 0)
		return rc;
	for (k = 0, rc = EXIT_OK; k < n && rc == EXIT_OK; k++)
		rc = logs_one(cli, args, ids[k],
		              args->argv[0][strcspn(args->argv[0], "_")] ==
		                  '\0');
	free(ids);
	return rc;
}

/* One job's log; with header, a line naming it first. */
static int
logs_one(struct cli *cli, struct cli_args *args, int64_t id, int header)
{
	struct log_out out = {0, 0, {0}, 0};
	struct sl_job j;
	int rc;

	if (header) {
		int64_t aid, ai;

		if (sl_show(cli->client, id, 0, &j) < 0)
			return cli_fail(cli);
		if (sl_job_get_int(&j, "array_id", &aid) == 0 &&
		    sl_job_get_int(&j, "array_index", &ai) == 0)
			printf("==> A%" PRId64 "_%" PRId64 " (job %" PRId64
			       ") <==\n",
			       aid, ai, id);
		else
			printf("==> job %" PRId64 " <==\n", id);
		fflush(stdout);
		sl_job_clear(&j);
	}
	if (!cli_has(args, "raw")) {
		/* Whose job it is decides whether its bytes are escaped: raw
		 * only for the viewer's own job, the viewer being this
		 * process's uid and who the daemon sees (hello's uid) alike.
		 * What the daemon says is believed only because the socket
		 * passed the checks of sl_connect (root's or ours, in a
		 * directory nobody else writes): a listener of another user's
		 * is refused there, before it could claim our uid. */
		const struct sl_hello *h = sl_hello_info(cli->client);
		int64_t viewer = (int64_t)geteuid();
		if (sl_show(cli->client, id, 0, &j) < 0)
			return cli_fail(cli);
		out.escape = j.uid != viewer || h == NULL || h->uid != viewer;
		sl_job_clear(&j);
	}
	if (cli_has(args, "follow"))
		cli_watch_queued(cli, id);
	if (cli_has(args, "lines")) {
		struct log_tail t = {NULL, 0, 0,
		                     (long)cli_number(args, "lines", 1)};
		int64_t end = 0;
		rc = sl_logs(cli->client, id, 0, 0, log_tail_add, &t, &end);
		if (rc == -ENOMEM) {
			free(t.buf);
			cli_error("out of memory");
			return EXIT_ERR;
		}
		if (rc == 0) {
			log_tail_cut(&t);
			if (t.len > 0)
				write_log(&out, 0, t.buf, t.len);
			if (out.err == 0 && cli_has(args, "follow"))
				rc = sl_logs(cli->client, id, end, 1, write_log,
				             &out, NULL);
		}
		free(t.buf);
	} else {
		rc = sl_logs(cli->client, id, 0, cli_has(args, "follow"),
		             write_log, &out, NULL);
	}
	/* A character the log ended inside: its bytes, escaped. */
	errno = 0;
	if (out.err == 0 && out.ntail > 0 &&
	    (log_put_escaped(&out, out.tail, out.ntail, 0) != 0 ||
	     fflush(stdout) != 0))
		out.err = errno != 0 ? errno : EIO;
	if (out.err != 0) {
		if (out.err != EPIPE) /* a reader that left knows */
			cli_error("cannot write output: %s", strerror(out.err));
		return EXIT_ERR;
	}
	if (rc < 0)
		return cli_fail(cli);
	return EXIT_OK;
}
