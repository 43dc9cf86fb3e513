/*
 * Job arrays (docs/jobs.md, "Arrays"): the SPEC of `submit --array` and
 * the `{}` of an element's argv. Shared by the daemon, which parses the
 * submit parameter `array` and substitutes each element's argv when it
 * starts it, and the clients, which name arrays and their elements as
 * A42 and A42_3.
 */
#ifndef SL_ARRAY_SPEC_H
#define SL_ARRAY_SPEC_H

#include <stddef.h>
#include <stdint.h>

/* The largest index a SPEC may name. */
#define ARRAY_INDEX_MAX 1000000000
/* The forms a SPEC takes, for the messages that refuse one. */
#define ARRAY_SPEC_FORMS                                                       \
	"1-100, 1,5,9 or 0-100:10 (START-END:STEP), each optionally "          \
	"followed by %N for at most N running at once (1-100%4)"

struct array_spec {
	int64_t *indices; /* in the order given; no index twice */
	size_t n;
	int limit; /* %N; 0: none */
};

/*
 * Parse text ("1-100%4", "1,5,9", "0-100:10") into spec: items separated
 * by commas, each N, N-M or N-M:S (N <= M, S >= 1), indices 0 to
 * ARRAY_INDEX_MAX, none twice, at most max_n in all, then an optional %N
 * (N >= 1). 0, or -EINVAL with the cause (which names the valid forms) or
 * -ENOMEM. spec->indices is malloc'd: array_spec_free.
 */
int array_spec_parse(const char *text, size_t max_n, struct array_spec *spec,
                     char *cause, size_t causelen);
void array_spec_free(struct array_spec *spec);

/*
 * One word of an element's argv: each "{}" becomes the index, each
 * "{{}}" a literal "{}", anywhere in the word (as GNU parallel replaces
 * within words). A malloc'd string, or NULL when out of memory.
 */
char *array_subst_word(const char *word, int64_t index);

/*
 * A job id as the clients write it: "42" (a job), "A42" (every element of
 * array 42), "A42_3" (its element of index 3). Sets *id to 42, *index to
 * 3, or -1 for a whole array; *is_array says whether an A form was given.
 * 0, or -EINVAL.
 */
int array_id_parse(const char *text, int64_t *id, int *is_array,
                   int64_t *index);

#endif
