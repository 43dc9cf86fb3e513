/*
 * stageloadctl's job options, from proto/job-fields.h's JOB_CLI: the
 * option rows of submit, run and update, and the parameters the options
 * given set in a spec. A new option is a row there and nothing here.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "job-fields.h"

/* Each field by its member, with its wire name and submit's type. */
enum field_param {
	FP_P_NO,
	FP_P_INT,
	FP_P_NUM,
	FP_P_BOOL,
	FP_P_STRING,
	FP_P_STRING_REQ,
	FP_P_STRV,
	FP_P_STRV_REQ,
	FP_P_INTV,
};
#define FIELD_INDEX(m, ...) JF_##m,
enum { JOB_FIELDS(FIELD_INDEX) JF_none };
#define FIELD_ROW(m, w, store, col, job, vis, submit, ...) {w, FP_##submit},
static const struct {
	const char *wire;
	enum field_param param;
} fields[] = {JOB_FIELDS(FIELD_ROW){NULL, FP_P_NO}};

/* The option rows, filtered by the table's cmds and update columns. */
#define OPT_ROW(opt, letter, metavar, value, lo, hi, help)                     \
	{opt, letter, value, metavar, lo, hi, help},
#define OPT_IF_JOB_JOB(...) __VA_ARGS__
#define OPT_IF_JOB_SUBMIT(...)
#define OPT_IF_SUBMIT_SUBMIT(...) __VA_ARGS__
#define OPT_IF_SUBMIT_JOB(...)
#define OPT_IF_UPDATE_1(...) __VA_ARGS__
#define OPT_IF_UPDATE_0(...)
#define OPT_JOB(m, opt, l, mv, v, lo, hi, also, cmds, upd, help)               \
	OPT_IF_JOB_##cmds(OPT_ROW(opt, l, mv, v, lo, hi, help))
#define OPT_SUBMIT(m, opt, l, mv, v, lo, hi, also, cmds, upd, help)            \
	OPT_IF_SUBMIT_##cmds(OPT_ROW(opt, l, mv, v, lo, hi, help))
#define OPT_UPDATE(m, opt, l, mv, v, lo, hi, also, cmds, upd, help)            \
	OPT_IF_UPDATE_##upd(OPT_ROW(opt, l, mv, v, lo, hi, help))
#define OPT_END                                                                \
	{                                                                      \
		NULL, 0, 0, NULL, 0, 0, NULL                                   \
	}

/* The rows of the table that JOB_CLI(OPT_*) names are read by
 * tests/lib/cli_entries.py too. */
const struct cli_option cli_job_options[] = {
    JOB_CLI(OPT_JOB) OPT_END,
};
const struct cli_option cli_submit_queue_options[] = {
    JOB_CLI(OPT_SUBMIT){"shell", 0, CLI_FLAG, NULL, 0, 0,
                        "run the words of CMD as one /bin/sh -c script,\n"
                        "pipes and redirections too ('a | b')"},
    OPT_END,
};
const struct cli_option cli_update_options[] = {
    JOB_CLI(OPT_UPDATE) OPT_END,
};

/* What each option sets. */
enum opt_cmds { OPT_CMDS_JOB, OPT_CMDS_SUBMIT };
struct job_option {
	const char *option;
	int field, also;
	enum cli_value value;
	enum opt_cmds cmds;
	int update;
};
#define JOB_OPTION(m, opt, l, mv, v, lo, hi, also, cmds, upd, help)            \
	{opt, JF_##m, JF_##also, v, OPT_CMDS_##cmds, upd},
static const struct job_option job_options[] = {JOB_CLI(JOB_OPTION)};
#define NJOB_OPTIONS (sizeof job_options / sizeof job_options[0])

static int
option_used(const struct job_option *o, enum cli_job_use use)
{
	switch (use) {
	case CLI_USE_RUN:
		return o->cmds == OPT_CMDS_JOB;
	case CLI_USE_SUBMIT:
		return 1;
	case CLI_USE_UPDATE:
		return o->update;
	}
	return 0;
}

/* "4,7" (or "#4,#7") to field's ids; -1, or the exit status. */
static int
set_ids(struct cli *cli, const struct job_option *o, const char *list,
        sl_job_spec *spec)
{
	char *copy = strdup(list), *tok, *save = NULL;
	int64_t *v = NULL, *nv, id;
	size_t n = 0, cap = 0;
	int rc = 0;

	if (copy == NULL)
		rc = -ENOMEM;
	for (tok = copy != NULL ? strtok_r(copy, ",", &save) : NULL;
	     tok != NULL && rc == 0; tok = strtok_r(NULL, ",", &save)) {
		if (cli_parse_id(tok, &id) < 0) {
			/* tok is in copy: the error first, then the frees. */
			rc = cli_usage_error(cli, "--%s: bad job id '%s'",
			                     o->option, tok);
			free(copy);
			free(v);
			return rc;
		}
		if (n == cap) {
			cap = cap ? cap * 2 : 8;
			if ((nv = realloc(v, cap * sizeof *v)) == NULL) {
				rc = -ENOMEM;
				break;
			}
			v = nv;
		}
		v[n++] = id;
	}
	free(copy);
	if (rc == 0 && n == 0)
		return cli_usage_error(cli, "--%s: no job id", o->option);
	if (rc == 0)
		rc = sl_job_spec_set_ids(spec, fields[o->field].wire, v, n);
	free(v);
	if (rc == 0)
		return -1;
	cli_error("--%s: %s", o->option,
	          rc == -ENOMEM ? "out of memory" : "out of range");
	return EXIT_ERR;
}

/* The option's parameters into spec: 0 or -errno. */
static int
set_value(const struct cli_args *a, const struct job_option *o,
          sl_job_spec *spec)
{
	const char *wire = fields[o->field].wire;
	double pct;
	int rc;

	switch (o->value) {
	case CLI_FLAG:
		return sl_job_spec_set_bool(spec, wire, 1);
	case CLI_TEXT:
		return sl_job_spec_set_str(spec, wire,
		                           cli_text(a, o->option, NULL));
	case CLI_PCT:
		return sl_job_spec_set_num(spec, wire,
		                           cli_pct(a, o->option, 0));
	case CLI_FREE:
		/* A size is that much available and no percentage. */
		if ((pct = cli_pct(a, o->option, -1)) >= 0)
			return sl_job_spec_set_num(spec, wire, pct);
		rc = sl_job_spec_set_int(spec, fields[o->also].wire,
		                         cli_number(a, o->option, 0));
		return rc == 0 ? sl_job_spec_set_num(spec, wire, 0) : rc;
	case CLI_INT:
	case CLI_SIZE:
	case CLI_DURATION:
	case CLI_LIMIT:
	case CLI_BEGIN:
	case CLI_ID:
		return sl_job_spec_set_int(spec, wire,
		                           cli_number(a, o->option, 0));
	case CLI_CHOICE:
		break;
	}
	return -EINVAL;
}

int
cli_job_options_set(struct cli *cli, const struct cli_args *a,
                    enum cli_job_use use, sl_job_spec *spec, int *given)
{
	const struct job_option *o, *seen[JF_none + 1] = {NULL};
	int rc;

	if (given != NULL)
		*given = 0;
	for (o = job_options; o < job_options + NJOB_OPTIONS; o++) {
		if (!option_used(o, use) || !cli_has(a, o->option))
			continue;
		if (seen[o->field] != NULL)
			return cli_usage_error(
			    cli, "--%s and --%s: give one of them",
			    seen[o->field]->option, o->option);
		seen[o->field] = o;
		if (given != NULL)
			(*given)++;
		if (o->value == CLI_TEXT &&
		    fields[o->field].param == FP_P_INTV) {
			if ((rc = set_ids(cli, o, cli_text(a, o->option, ""),
			                  spec)) >= 0)
				return rc;
			rc = 0;
		} else {
			rc = set_value(a, o, spec);
		}
		if (rc == 0 && o->also != JF_none && o->value != CLI_FREE)
			rc =
			    sl_job_spec_set_bool(spec, fields[o->also].wire, 1);
		if (rc != 0) {
			/* The options' own ranges are narrower than the
			 * daemon's. */
			cli_error("--%s: %s", o->option,
			          rc == -ENOMEM ? "out of memory"
			                        : "out of range");
			return EXIT_ERR;
		}
	}
	return -1;
}

const char *
cli_job_option_param(const char *option)
{
	const struct job_option *o;

	for (o = job_options; o < job_options + NJOB_OPTIONS; o++)
		if (strcmp(o->option, option) == 0)
			return fields[o->field].wire;
	return NULL;
}

const char *
cli_job_options_list(enum cli_job_use use, char *buf, size_t len)
{
	const struct job_option *o;
	size_t n = 0, i = 0, out = 0;

	for (o = job_options; o < job_options + NJOB_OPTIONS; o++)
		n += option_used(o, use);
	buf[0] = '\0';
	for (o = job_options; o < job_options + NJOB_OPTIONS && out < len;
	     o++) {
		if (!option_used(o, use))
			continue;
		i++;
		out += (size_t)snprintf(buf + out, len - out, "%s--%s",
		                        i == 1   ? ""
		                        : i == n ? " or "
		                                 : ", ",
		                        o->option);
	}
	return buf;
}

sl_job_spec *
cli_job_spec(struct cli *cli, const struct cli_args *a, enum cli_job_use use,
             int *status)
{
	sl_job_spec *spec = sl_job_spec_new();

	if (spec == NULL) {
		cli_error("out of memory");
		*status = EXIT_ERR;
		return NULL;
	}
	/* Only what is given: the rest is the daemon's default. */
	if ((*status = cli_job_options_set(cli, a, use, spec, NULL)) >= 0) {
		sl_job_spec_free(spec);
		return NULL;
	}
	if (sl_job_spec_set_strv(spec, "argv", (const char *const *)a->argv) !=
	    0) {
		cli_error("out of memory");
		*status = EXIT_ERR;
		sl_job_spec_free(spec);
		return NULL;
	}
	return spec;
}
