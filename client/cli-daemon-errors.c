/*
 * A daemon's refusal as the command line says it: the wire names of job
 * options turned back into the options that set them, byte counts into
 * sizes, and the job's id said once.
 */
#include <ctype.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

/* The wire names of job options a daemon's refusal may use, and the
 * options that set them; _bytes ones are followed by a byte count. */
static const struct {
	const char *wire, *option;
	int bytes;
} wire_words[] = {
    {"wait_free_bytes", "--wait-free", 1},
    {"swap_budget_bytes", "--swap-budget", 1},
    {"expect_bytes", "--expect", 1},
    {"wait_free_pct", "--wait-free", 0},
    {"retry_on_breach", "--retry-on-breach", 0},
};

void
cli_daemon_words(const char *msg, char *buf, size_t len)
{
	size_t out = 0, i, n;
	const char *p = msg, *q;
	char size[24];
	int done;

	if (len == 0)
		return;
	while (*p != '\0' && out + 1 < len) {
		done = 0;
		for (i = 0; i < sizeof wire_words / sizeof wire_words[0]; i++) {
			n = strlen(wire_words[i].wire);
			/* whole words only */
			if (strncmp(p, wire_words[i].wire, n) != 0 ||
			    (p > msg &&
			     (p[-1] == '_' || isalnum((unsigned char)p[-1]))) ||
			    p[n] == '_' || isalnum((unsigned char)p[n]))
				continue;
			q = p + n;
			if (wire_words[i].bytes && q[0] == ' ' &&
			    isdigit((unsigned char)q[1])) {
				unsigned long long v =
				    strtoull(q + 1, (char **)&q, 10);
				cli_size(v, size, sizeof size);
				out += (size_t)snprintf(
				    buf + out, len - out, "%s %s",
				    wire_words[i].option, size);
			} else {
				out +=
				    (size_t)snprintf(buf + out, len - out, "%s",
				                     wire_words[i].option);
			}
			p = q;
			done = 1;
			break;
		}
		if (out >= len) {
			out = len - 1;
			break;
		}
		if (done)
			continue;
		/* "(25276502016 bytes, 24G)": the size says it */
		if (p[0] == '(' && isdigit((unsigned char)p[1])) {
			q = p + 1 + strspn(p + 1, "0123456789");
			if (strncmp(q, " bytes, ", 8) == 0) {
				buf[out++] = '(';
				p = q + 8;
				continue;
			}
		}
		buf[out++] = *p++;
	}
	buf[out] = '\0';
}

int
cli_fail(struct cli *cli)
{
	int code = sl_errcode(cli->client);
	char msg[1024];

	cli_daemon_words(sl_errmsg(cli->client), msg, sizeof msg);
	cli_error("%s", msg);
	return cli_exit_for_error(code);
}

int
cli_fail_job(struct cli *cli, int64_t id)
{
	int code = sl_errcode(cli->client);
	char msg[1024], name[32];
	const char *p;
	size_t n;

	cli_daemon_words(sl_errmsg(cli->client), msg, sizeof msg);
	/* "job 4: job 4 is not yours" says the id twice */
	n = (size_t)snprintf(name, sizeof name, "job %" PRId64, id);
	for (p = strstr(msg, name); p != NULL; p = strstr(p + 1, name))
		if ((p == msg || !isalnum((unsigned char)p[-1])) &&
		    !isdigit((unsigned char)p[n]))
			break;
	if (p != NULL)
		cli_error("%s", msg);
	else
		cli_error("%s: %s", name, msg);
	return cli_exit_for_error(code);
}
