/*
 * stageloadctl logs: a job's output, escaped for the terminal unless the
 * socket is one the caller may trust; -f follows it, -n its last lines.
 * An array's logs (A42) are printed one after another under headers, or
 * with -f followed all at once, as tail -f follows several files.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <pthread.h>
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
	/* An array's element: its header, and the output shared with the
	 * other elements' followers (NULL for a job alone). */
	struct log_print *pr;
	int64_t id;
	char label[64];
};

/* The output an array's logs share: whose bytes came last, so that a
 * header is written each time the output passes to another element. */
struct log_print {
	pthread_mutex_t lock;
	int64_t last; /* 0: nothing written yet */
};

/* Called with pr->lock held: o's header, unless its bytes came last. */
static void
log_header(struct log_out *o)
{
	if (o->pr->last == o->id)
		return;
	printf("%s==> %s <==\n", o->pr->last != 0 ? "\n" : "", o->label);
	o->pr->last = o->id;
}

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
	if (o->pr != NULL) {
		pthread_mutex_lock(&o->pr->lock);
		log_header(o);
	}
	errno = 0;
	if (!o->escape) {
		rc = fwrite(data, 1, len, stdout) != len ? -1 : 0;
	} else {
		if (o->ntail > 0) {
			joined = malloc(o->ntail + len);
			if (joined == NULL) {
				o->err = ENOMEM;
				rc = -1;
				goto out;
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
		rc = -1;
	}
out:
	if (o->pr != NULL)
		pthread_mutex_unlock(&o->pr->lock);
	return rc != 0 ? -EPIPE : 0;
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
                    struct log_print *pr);

/*
 * logs -f A42: one follower per element at a time, at most LOGS_FOLLOWERS
 * at once, each on its own connection (a follow holds one until its job
 * ends), taking the elements in index order. The daemon sends each log
 * from its start, so an element followed late loses nothing.
 */
#define LOGS_FOLLOWERS 16

struct log_follow {
	struct cli *cli;
	struct cli_args *args;
	struct log_print pr;
	const int64_t *ids;
	int n, next; /* the next element to follow: under pr.lock */
	int rc;      /* the first failure's exit status */
};

static void *
log_follower(void *arg)
{
	struct log_follow *f = arg;
	struct cli c = *f->cli;
	int k, rc = EXIT_OK;

	c.client = NULL;
	for (;;) {
		pthread_mutex_lock(&f->pr.lock);
		k = f->rc == EXIT_OK && f->next < f->n ? f->next++ : -1;
		pthread_mutex_unlock(&f->pr.lock);
		if (k < 0)
			break;
		if ((rc = cli_connect(&c)) != EXIT_OK ||
		    (rc = logs_one(&c, f->args, f->ids[k], &f->pr)) != EXIT_OK)
			break;
	}
	pthread_mutex_lock(&f->pr.lock);
	if (rc != EXIT_OK && f->rc == EXIT_OK)
		f->rc = rc;
	pthread_mutex_unlock(&f->pr.lock);
	sl_client_free(c.client);
	return NULL;
}

static int
logs_follow_all(struct cli *cli, struct cli_args *args, const int64_t *ids,
                int n)
{
	struct log_follow f;
	pthread_t t[LOGS_FOLLOWERS];
	int k, started;

	memset(&f, 0, sizeof f);
	f.cli = cli;
	f.args = args;
	f.ids = ids;
	f.n = n;
	f.rc = EXIT_OK;
	pthread_mutex_init(&f.pr.lock, NULL);
	for (started = 0; started < n && started < LOGS_FOLLOWERS; started++)
		if (pthread_create(&t[started], NULL, log_follower, &f) != 0)
			break;
	if (started == 0) /* no thread: the elements in turn */
		log_follower(&f);
	for (k = 0; k < started; k++)
		pthread_join(t[k], NULL);
	pthread_mutex_destroy(&f.pr.lock);
	return f.rc;
}

static int
cmd_logs(struct cli *cli, struct cli_args *args)
{
	struct log_print pr;
	int64_t id, *ids;
	int rc, n, k;

	if (cli_parse_id(args->argv[0], &id) == 0) {
		if ((rc = cli_connect(cli)) != 0)
			return rc;
		return logs_one(cli, args, id, NULL);
	}
	/* A42_3: that element's log alone; A42: each element's under a
	 * header, in index order, or with -f all at once. */
	if ((rc = cli_job_refs(cli, 1, args->argv, &ids, &n)) >= 0)
		return rc;
	if (args->argv[0][strcspn(args->argv[0], "_")] != '\0')
		rc = logs_one(cli, args, ids[0], NULL);
	else if (cli_has(args, "follow"))
		rc = logs_follow_all(cli, args, ids, n);
	else {
		pthread_mutex_init(&pr.lock, NULL);
		pr.last = 0;
		for (k = 0, rc = EXIT_OK; k < n && rc == EXIT_OK; k++)
			rc = logs_one(cli, args, ids[k], &pr);
		pthread_mutex_destroy(&pr.lock);
	}
	free(ids);
	return rc;
}

/* One job's log; with pr, an array's element, whose header comes before
 * its bytes (and first, when its elements are printed in turn). */
static int
logs_one(struct cli *cli, struct cli_args *args, int64_t id,
         struct log_print *pr)
{
	struct log_out out;
	struct sl_job j;
	int rc;

	memset(&out, 0, sizeof out);
	out.pr = pr;
	out.id = id;
	if (sl_show(cli->client, id, 0, &j) < 0)
		return cli_fail(cli);
	if (pr != NULL) {
		int64_t aid, ai;

		if (sl_job_get_int(&j, "array_id", &aid) == 0 && aid > 0 &&
		    sl_job_get_int(&j, "array_index", &ai) == 0)
			snprintf(out.label, sizeof out.label,
			         "A%" PRId64 "_%" PRId64 " (job %" PRId64 ")",
			         aid, ai, id);
		else
			snprintf(out.label, sizeof out.label, "job %" PRId64,
			         id);
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
		out.escape = j.uid != viewer || h == NULL || h->uid != viewer;
	}
	sl_job_clear(&j);
	if (pr != NULL && !cli_has(args, "follow")) {
		pthread_mutex_lock(&pr->lock);
		log_header(&out);
		fflush(stdout);
		pthread_mutex_unlock(&pr->lock);
	}
	/* One job's wait in the queue is shown; an array's elements just
	 * wait, their headers coming with their output. */
	if (cli_has(args, "follow") && pr == NULL)
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
	if (out.err == 0 && out.ntail > 0) {
		if (pr != NULL) {
			pthread_mutex_lock(&pr->lock);
			log_header(&out);
		}
		if (log_put_escaped(&out, out.tail, out.ntail, 0) != 0 ||
		    fflush(stdout) != 0)
			out.err = errno != 0 ? errno : EIO;
		if (pr != NULL)
			pthread_mutex_unlock(&pr->lock);
	}
	if (out.err != 0) {
		if (out.err != EPIPE) /* a reader that left knows */
			cli_error("cannot write output: %s", strerror(out.err));
		return EXIT_ERR;
	}
	if (rc < 0)
		return cli_fail(cli);
	return EXIT_OK;
}
