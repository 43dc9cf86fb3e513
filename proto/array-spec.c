/* Job arrays' SPEC, {} and A42_3 (array-spec.h). */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "array-spec.h"

/* A decimal number from *p, 0 to max; advances *p. */
static int
spec_number(const char **p, int64_t max, int64_t *out)
{
	const char *s = *p;
	int64_t v = 0;

	if (*s < '0' || *s > '9')
		return -EINVAL;
	while (*s >= '0' && *s <= '9') {
		v = v * 10 + (*s - '0');
		if (v > max)
			return -ERANGE;
		s++;
	}
	*p = s;
	*out = v;
	return 0;
}

static int
cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return x < y ? -1 : x > y;
}

static int
spec_bad(const char *text, const char *why, char *cause, size_t causelen)
{
	snprintf(cause, causelen, "bad array spec '%.64s': %s; give %s", text,
	         why, ARRAY_SPEC_FORMS);
	return -EINVAL;
}

int
array_spec_parse(const char *text, size_t max_n, struct array_spec *spec,
                 char *cause, size_t causelen)
{
	const char *p = text;
	int64_t lo, hi, step, v, *sorted;
	size_t cap = 0, i;
	int rc;

	memset(spec, 0, sizeof *spec);
	if (text == NULL || *text == '\0')
		return spec_bad("", "it is empty", cause, causelen);
	for (;;) {
		if ((rc = spec_number(&p, ARRAY_INDEX_MAX, &lo)) != 0)
			goto bad_number;
		hi = lo;
		step = 1;
		if (*p == '-') {
			p++;
			if ((rc = spec_number(&p, ARRAY_INDEX_MAX, &hi)) != 0)
				goto bad_number;
			if (hi < lo) {
				array_spec_free(spec);
				return spec_bad(
				    text, "a range's end is below its start",
				    cause, causelen);
			}
			if (*p == ':') {
				p++;
				if ((rc = spec_number(&p, ARRAY_INDEX_MAX,
				                      &step)) != 0 ||
				    step == 0) {
					array_spec_free(spec);
					return spec_bad(
					    text,
					    "a step is a whole number from 1",
					    cause, causelen);
				}
			}
		}
		for (v = lo; v <= hi; v += step) {
			if (spec->n == max_n) {
				char why[96];

				array_spec_free(spec);
				snprintf(
				    why, sizeof why,
				    "more than %zu elements (the most an array "
				    "may have)",
				    max_n);
				return spec_bad(text, why, cause, causelen);
			}
			if (spec->n == cap) {
				int64_t *nv;

				cap = cap == 0 ? 16 : 2 * cap;
				if ((nv = realloc(spec->indices,
				                  cap * sizeof *nv)) == NULL) {
					array_spec_free(spec);
					snprintf(cause, causelen,
					         "out of memory");
					return -ENOMEM;
				}
				spec->indices = nv;
			}
			spec->indices[spec->n++] = v;
		}
		if (*p != ',')
			break;
		p++;
	}
	if (*p == '%') {
		p++;
		if ((rc = spec_number(&p, ARRAY_INDEX_MAX, &v)) != 0 ||
		    v == 0) {
			array_spec_free(spec);
			return spec_bad(text, "%N needs a whole number from 1",
			                cause, causelen);
		}
		spec->limit = (int)v;
	}
	if (*p != '\0') {
		array_spec_free(spec);
		return spec_bad(text, "unexpected text", cause, causelen);
	}
	/* No index twice: each is one job, named A42_INDEX. */
	if ((sorted = malloc(spec->n * sizeof *sorted)) == NULL) {
		array_spec_free(spec);
		snprintf(cause, causelen, "out of memory");
		return -ENOMEM;
	}
	memcpy(sorted, spec->indices, spec->n * sizeof *sorted);
	qsort(sorted, spec->n, sizeof *sorted, cmp_i64);
	for (i = 1; i < spec->n; i++) {
		if (sorted[i] == sorted[i - 1]) {
			char why[64];

			snprintf(why, sizeof why,
			         "index %" PRId64 " is given twice", sorted[i]);
			free(sorted);
			array_spec_free(spec);
			return spec_bad(text, why, cause, causelen);
		}
	}
	free(sorted);
	return 0;
bad_number:
	array_spec_free(spec);
	return spec_bad(text,
	                rc == -ERANGE ? "an index is above 1000000000"
	                              : "expected a number",
	                cause, causelen);
}

void
array_spec_free(struct array_spec *spec)
{
	free(spec->indices);
	spec->indices = NULL;
	spec->n = 0;
	spec->limit = 0;
}

char *
array_subst_word(const char *word, int64_t index)
{
	char num[24], *out, *o;
	size_t numlen, len = 0;
	const char *s;

	numlen = (size_t)snprintf(num, sizeof num, "%" PRId64, index);
	for (s = word; *s != '\0';) {
		if (strncmp(s, "{{}}", 4) == 0) {
			len += 2;
			s += 4;
		} else if (strncmp(s, "{}", 2) == 0) {
			len += numlen;
			s += 2;
		} else {
			len++;
			s++;
		}
	}
	if ((out = malloc(len + 1)) == NULL)
		return NULL;
	for (s = word, o = out; *s != '\0';) {
		if (strncmp(s, "{{}}", 4) == 0) {
			memcpy(o, "{}", 2);
			o += 2;
			s += 4;
		} else if (strncmp(s, "{}", 2) == 0) {
			memcpy(o, num, numlen);
			o += numlen;
			s += 2;
		} else {
			*o++ = *s++;
		}
	}
	*o = '\0';
	return out;
}

int
array_id_parse(const char *text, int64_t *id, int *is_array, int64_t *index)
{
	const char *p = text;
	int64_t v;

	*is_array = 0;
	*index = -1;
	if (*p == 'A' || *p == 'a') {
		*is_array = 1;
		p++;
	}
	if (spec_number(&p, INT64_MAX / 10 - 1, &v) != 0 || v == 0)
		return -EINVAL;
	*id = v;
	if (*is_array && *p == '_') {
		p++;
		if (spec_number(&p, ARRAY_INDEX_MAX, &v) != 0)
			return -EINVAL;
		*index = v;
	}
	return *p == '\0' ? 0 : -EINVAL;
}
