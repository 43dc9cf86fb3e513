#include "health.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "units.h"

void
health_conf_defaults(struct health_conf *c)
{
	memset(c, 0, sizeof *c);
	snprintf(c->socket, sizeof c->socket, "%s", "/var/run/stageload.sock");
	c->free_floor_pct = 10;
	c->free_hold_ms = 30000;
	c->swap_budget = 0;
	snprintf(c->scontrol, sizeof c->scontrol, "%s", "/usr/bin/scontrol");
	/* A run waits on at most five answers (hello, info, history, two
	 * scontrols): 25 s, well within slurmd's 60 s for the program. */
	c->timeout_ms = 5000;
}

static char *
trim(char *s)
{
	char *e;

	while (isspace((unsigned char)*s))
		s++;
	e = s + strlen(s);
	while (e > s && isspace((unsigned char)e[-1]))
		*--e = '\0';
	return s;
}

static int
set_path(char *dst, size_t len, const char *v)
{
	if (strlen(v) >= len)
		return -ENAMETOOLONG;
	memcpy(dst, v, strlen(v) + 1);
	return 0;
}

static int
conf_set(struct health_conf *c, const char *k, const char *v)
{
	char *end;
	uint64_t u;
	int64_t ms;
	double d;

	if (!strcmp(k, "socket"))
		return set_path(c->socket, sizeof c->socket, v);
	if (!strcmp(k, "scontrol"))
		return set_path(c->scontrol, sizeof c->scontrol, v);
	if (!strcmp(k, "slurm_conf"))
		return set_path(c->slurm_conf, sizeof c->slurm_conf, v);
	if (!strcmp(k, "free_floor")) {
		errno = 0;
		d = strtod(v, &end);
		if (end != v && *end == '%')
			end++;
		if (errno || end == v || *end || !(d >= 0 && d <= 100))
			return -EINVAL;
		c->free_floor_pct = d;
		return 0;
	}
	if (!strcmp(k, "free_hold") || !strcmp(k, "timeout")) {
		if (units_parse_duration_ms(v, &ms) < 0 || ms < 0 ||
		    (k[0] == 't' && ms > 10000))
			return -EINVAL;
		if (k[0] == 'f')
			c->free_hold_ms = ms;
		else
			c->timeout_ms = ms > 0 ? ms : 1;
		return 0;
	}
	if (!strcmp(k, "swap_budget")) {
		if (units_parse_size(v, &u) < 0)
			return -EINVAL;
		c->swap_budget = u;
		return 0;
	}
	return -ENOENT;
}

int
health_conf_parse(struct health_conf *c, const char *text, char *err,
                  size_t errlen)
{
	const char *p = text;
	int lineno = 0;

	while (*p) {
		char line[2048], *k, *v, *eq, *hash;
		size_t n = strcspn(p, "\n");
		int rc;

		lineno++;
		if (n >= sizeof line) {
			snprintf(err, errlen, "line %d: longer than %zu bytes",
			         lineno, sizeof line - 1);
			return -EINVAL;
		}
		memcpy(line, p, n);
		line[n] = '\0';
		p += n + (p[n] == '\n');
		if ((hash = strchr(line, '#')))
			*hash = '\0';
		k = trim(line);
		if (!*k)
			continue;
		if (!(eq = strchr(k, '='))) {
			snprintf(err, errlen, "line %d: not \"key = value\"",
			         lineno);
			return -EINVAL;
		}
		*eq = '\0';
		k = trim(k);
		v = trim(eq + 1);
		rc = conf_set(c, k, v);
		if (rc == -ENOENT) {
			snprintf(
			    err, errlen,
			    "line %d: unknown key '%s' (socket, free_floor, "
			    "free_hold, swap_budget, scontrol, slurm_conf, "
			    "timeout)",
			    lineno, k);
			return -EINVAL;
		}
		if (rc < 0) {
			snprintf(err, errlen, "line %d: bad %s '%s'", lineno, k,
			         v);
			return -EINVAL;
		}
	}
	return 0;
}

int
health_conf_load(struct health_conf *c, const char *path, char *err,
                 size_t errlen)
{
	FILE *f = fopen(path, "r");
	char buf[65536];
	size_t n;
	int rc;

	if (!f) {
		rc = -errno;
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return rc;
	}
	n = fread(buf, 1, sizeof buf - 1, f);
	rc = ferror(f) ? -EIO : 0;
	fclose(f);
	if (rc < 0 || n == sizeof buf - 1) {
		snprintf(err, errlen, "%s: %s", path,
		         rc < 0 ? "read error" : "larger than 64 KiB");
		return rc < 0 ? rc : -EFBIG;
	}
	buf[n] = '\0';
	rc = health_conf_parse(c, buf, err, errlen);
	if (rc < 0) {
		char cause[512];

		snprintf(cause, sizeof cause, "%s", err);
		snprintf(err, errlen, "%s: %s", path, cause);
	}
	return rc;
}

int
health_expand(const char *tmpl, const char *node, char *out, size_t len)
{
	size_t o = 0;

	for (const char *p = tmpl; *p; p++) {
		const char *add;
		size_t alen;

		if (*p != '%') {
			add = p;
			alen = 1;
		} else if (p[1] == 'n') {
			add = node;
			alen = strlen(node);
			p++;
		} else if (p[1] == '%') {
			add = p;
			alen = 1;
			p++;
		} else {
			return -EINVAL;
		}
		if (o + alen >= len)
			return -ENAMETOOLONG;
		memcpy(out + o, add, alen);
		o += alen;
	}
	if (o >= len)
		return -ENAMETOOLONG;
	out[o] = '\0';
	return 0;
}

/* The value of " KEY=" in an -o line: up to the next space, or for Reason,
 * which may hold spaces, up to Slurm's " [user@time]" or the line's end
 * (it is the last but few fields; the ones after it have no spaces of their
 * own that start with '['). */
static int
field(const char *line, const char *key, int to_end, char *out, size_t len)
{
	size_t klen = strlen(key);
	const char *p = line, *v, *e;

	for (;;) {
		p = strstr(p, key);
		if (!p)
			return -ENOENT;
		if ((p == line || p[-1] == ' ') && p[klen] == '=')
			break;
		p += klen;
	}
	v = p + klen + 1;
	if (to_end) {
		e = strstr(v, " [");
		if (!e)
			e = v + strcspn(v, "\n");
	} else {
		e = v + strcspn(v, " \n");
	}
	if ((size_t)(e - v) >= len)
		e = v + len - 1;
	memcpy(out, v, (size_t)(e - v));
	out[e - v] = '\0';
	return 0;
}

int
health_node_parse(const char *line, struct health_node *n)
{
	char state[256];

	memset(n, 0, sizeof *n);
	if (field(line, "State", 0, state, sizeof state) < 0)
		return -EINVAL;
	n->drained = strstr(state, "DRAIN") != NULL;
	if (field(line, "Reason", 1, n->reason, sizeof n->reason) < 0)
		n->reason[0] = '\0';
	/* scontrol writes Reason=(null) for none */
	if (!strcmp(n->reason, "(null)"))
		n->reason[0] = '\0';
	return 0;
}

enum health_action
health_decide(const struct health_conf *c, const struct health_node *n,
              const struct health_memory *m, char *why, size_t whylen)
{
	char a[32], b[32], d[32];
	int ours = n->drained && !strncmp(n->reason, HEALTH_REASON_PREFIX,
	                                  strlen(HEALTH_REASON_PREFIX));
	int low, swap_over;

	if (n->drained && !ours) {
		snprintf(why, whylen,
		         "drained by someone else (%s): left alone",
		         n->reason[0] ? n->reason : "no reason");
		return HEALTH_NONE;
	}
	if (!m->answered) {
		/* No news is no evidence either way: a daemon restart must not
		 * drain a node, nor resume one drained for a cause still there.
		 */
		snprintf(why, whylen,
		         "the daemon does not answer: node left %s",
		         n->drained ? "drained" : "as it is");
		return HEALTH_NONE;
	}
	low = c->free_hold_ms > 0 && m->window_covered &&
	      m->window_max_free_pct < c->free_floor_pct;
	swap_over = c->swap_budget > 0 && m->swap_used > c->swap_budget;
	if (!n->drained) {
		if (low) {
			snprintf(why, whylen,
			         HEALTH_REASON_PREFIX
			         " free %.0f%% under %.0f%% for %s",
			         m->window_max_free_pct, c->free_floor_pct,
			         units_format_duration(c->free_hold_ms, d,
			                               sizeof d));
			return HEALTH_DRAIN;
		}
		if (swap_over) {
			snprintf(
			    why, whylen,
			    HEALTH_REASON_PREFIX
			    " swap %s over the node budget %s",
			    units_format_size(m->swap_used, a, sizeof a),
			    units_format_size(c->swap_budget, b, sizeof b));
			return HEALTH_DRAIN;
		}
		snprintf(why, whylen, "free %.0f%%: fine", m->free_pct);
		return HEALTH_NONE;
	}
	/* Ours: back once memory is, now (not just somewhere in the window). */
	if (!swap_over &&
	    (c->free_hold_ms == 0 || m->free_pct >= c->free_floor_pct)) {
		snprintf(why, whylen, "free %.0f%%, swap %s: resumed",
		         m->free_pct,
		         units_format_size(m->swap_used, a, sizeof a));
		return HEALTH_RESUME;
	}
	snprintf(why, whylen, "still %s: stays drained",
	         swap_over ? "over the swap budget" : "under the free floor");
	return HEALTH_NONE;
}
