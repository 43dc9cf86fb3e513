/* Job arrays' SPEC, {} and A42_3 (proto/array-spec.h). */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "array-spec.h"

static void
check_spec(const char *text, const int64_t *want, size_t n, int limit)
{
	struct array_spec s;
	char cause[512] = "";
	size_t i;

	if (array_spec_parse(text, 1000, &s, cause, sizeof cause) != 0)
		fail_msg("'%s' refused: %s", text, cause);
	if (s.n != n)
		fail_msg("'%s': %zu indices, not %zu", text, s.n, n);
	for (i = 0; i < n; i++)
		assert_int_equal(s.indices[i], want[i]);
	assert_int_equal(s.limit, limit);
	array_spec_free(&s);
}

static void
test_spec_ok(void **state)
{
	static const int64_t one_to_5[] = {1, 2, 3, 4, 5};
	static const int64_t list[] = {1, 5, 9};
	static const int64_t step[] = {0,  10, 20, 30, 40, 50,
	                               60, 70, 80, 90, 100};
	static const int64_t step3[] = {0, 3, 6, 9};
	static const int64_t mixed[] = {7, 1, 2, 3, 20, 22};
	static const int64_t zero[] = {0};

	(void)state;
	check_spec("1-5", one_to_5, 5, 0);
	check_spec("1,5,9", list, 3, 0);
	check_spec("0-100:10", step, 11, 0);
	check_spec("0-10:3", step3, 4, 0); /* the step need not reach END */
	check_spec("1-5%2", one_to_5, 5, 2);
	check_spec("7,1-3,20-22:2%1", mixed, 6, 1);
	check_spec("0", zero, 1, 0);
}

static void
test_spec_bad(void **state)
{
	static const char *const bad[] = {
	    "",        "-1",         "1-",    "5-1",   "1,,2",    "1,",
	    ",1",      "a",          "1-5:0", "1-5:",  "1-5%0",   "1-5%",
	    "1-5%x",   "1 -5",       "1,1",   "1-3,2", "1-5%2%3", "1.5",
	    "1-5:2:3", "1000000001", "0x10",  "+1",
	};
	struct array_spec s;
	char cause[512];
	size_t i;

	(void)state;
	for (i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		cause[0] = '\0';
		if (array_spec_parse(bad[i], 1000, &s, cause, sizeof cause) !=
		    -EINVAL)
			fail_msg("'%s' accepted", bad[i]);
		/* the valid forms in the message */
		if (strstr(cause, "1-100") == NULL ||
		    strstr(cause, "1,5,9") == NULL ||
		    strstr(cause, "0-100:10") == NULL ||
		    strstr(cause, "1-100%4") == NULL)
			fail_msg("'%s': the message names no forms: %s", bad[i],
			         cause);
		assert_null(s.indices);
	}
}

static void
test_spec_bounded(void **state)
{
	struct array_spec s;
	char cause[512];

	(void)state;
	assert_int_equal(array_spec_parse("1-10", 10, &s, cause, sizeof cause),
	                 0);
	array_spec_free(&s);
	assert_int_equal(array_spec_parse("1-11", 10, &s, cause, sizeof cause),
	                 -EINVAL);
	assert_non_null(strstr(cause, "more than 10 elements"));
	/* a huge range is refused at the bound, not built */
	assert_int_equal(
	    array_spec_parse("0-1000000000", 1000, &s, cause, sizeof cause),
	    -EINVAL);
	assert_non_null(strstr(cause, "more than 1000 elements"));
}

static void
test_subst(void **state)
{
	static const struct {
		const char *word, *out;
	} cases[] = {
	    {"{}", "7"},          {"seed={}", "seed=7"}, {"{{}}", "{}"},
	    {"a{}b{}c", "a7b7c"}, {"{x}", "{x}"},        {"{", "{"},
	    {"}{", "}{"},         {"{{}}{}", "{}7"},     {"", ""},
	    {"{{{}}}", "{{}}"},
	};
	size_t i;

	(void)state;
	for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		char *out = array_subst_word(cases[i].word, 7);

		assert_non_null(out);
		if (strcmp(out, cases[i].out) != 0)
			fail_msg("'%s' gave '%s', not '%s'", cases[i].word, out,
			         cases[i].out);
		free(out);
	}
}

static void
test_id_parse(void **state)
{
	int64_t id, index;
	int is_array;

	(void)state;
	assert_int_equal(array_id_parse("42", &id, &is_array, &index), 0);
	assert_true(id == 42 && !is_array && index == -1);
	assert_int_equal(array_id_parse("A42", &id, &is_array, &index), 0);
	assert_true(id == 42 && is_array && index == -1);
	assert_int_equal(array_id_parse("A42_3", &id, &is_array, &index), 0);
	assert_true(id == 42 && is_array && index == 3);
	assert_int_equal(array_id_parse("A42_0", &id, &is_array, &index), 0);
	assert_true(index == 0);
	assert_int_equal(array_id_parse("42_3", &id, &is_array, &index),
	                 -EINVAL);
	assert_int_equal(array_id_parse("A", &id, &is_array, &index), -EINVAL);
	assert_int_equal(array_id_parse("A0", &id, &is_array, &index), -EINVAL);
	assert_int_equal(array_id_parse("A42_", &id, &is_array, &index),
	                 -EINVAL);
	assert_int_equal(array_id_parse("B42", &id, &is_array, &index),
	                 -EINVAL);
	assert_int_equal(array_id_parse("", &id, &is_array, &index), -EINVAL);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_spec_ok),
	    cmocka_unit_test(test_spec_bad),
	    cmocka_unit_test(test_spec_bounded),
	    cmocka_unit_test(test_subst),
	    cmocka_unit_test(test_id_parse),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
