/* The counter map (daemon/umap.h): against a plain array as the model,
 * through growth and removals that shift runs back, with keys that collide
 * in the low bits. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

#include "umap.h"

#define NKEYS 5000

static void
check_model(struct umap *m, const uint64_t *keys, const int *in, size_t n)
{
	size_t i, live = 0;

	for (i = 0; i < n; i++) {
		struct umap_slot *s = umap_find(m, keys[i]);

		if (in[i]) {
			assert_non_null(s);
			assert_int_equal(s->key, keys[i]);
			assert_int_equal(s->a, (int64_t)i);
			assert_int_equal(s->b, -(int64_t)i);
			live++;
		} else
			assert_null(s);
	}
	assert_int_equal(m->n, live);
}

static void
test_against_model(void **state)
{
	static uint64_t keys[NKEYS];
	static int in[NKEYS];
	struct umap m = {0};
	unsigned seed = 12345;
	size_t i, round;

	(void)state;
	for (i = 0; i < NKEYS; i++) {
		/* Multiples of a large power of two collide in any small
		 * table; some small sequential ones too. */
		keys[i] = i % 2 ? (uint64_t)(i + 1) << 40 : (uint64_t)i + 1;
		in[i] = 0;
	}
	for (round = 0; round < 4; round++) {
		for (i = 0; i < NKEYS; i++) {
			seed = seed * 1103515245 + 12345;
			if ((seed >> 16) % 3 == 0) {
				umap_del(&m, keys[i]);
				in[i] = 0;
			} else {
				struct umap_slot *s = umap_get(&m, keys[i]);

				assert_non_null(s);
				s->a = (int64_t)i;
				s->b = -(int64_t)i;
				in[i] = 1;
			}
		}
		check_model(&m, keys, in, NKEYS);
	}
	/* Removing every other one, then all. */
	for (i = 0; i < NKEYS; i += 2) {
		umap_del(&m, keys[i]);
		in[i] = 0;
	}
	check_model(&m, keys, in, NKEYS);
	for (i = 0; i < NKEYS; i++) {
		umap_del(&m, keys[i]);
		in[i] = 0;
	}
	check_model(&m, keys, in, NKEYS);
	umap_free(&m);
}

static void
test_reserved_and_clear(void **state)
{
	struct umap m = {0};

	(void)state;
	assert_null(umap_find(&m, 7));
	assert_null(umap_get(&m, 0)); /* 0 marks an empty slot */
	umap_del(&m, 7);              /* absent: nothing happens */
	assert_non_null(umap_get(&m, 7));
	assert_int_equal(umap_get(&m, 7)->a, 0);
	umap_get(&m, 7)->a = 3;
	assert_int_equal(umap_get(&m, 7)->a, 3); /* found, not re-added */
	assert_int_equal(m.n, 1);
	umap_clear(&m);
	assert_int_equal(m.n, 0);
	assert_null(umap_find(&m, 7));
	umap_free(&m);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_against_model),
	    cmocka_unit_test(test_reserved_and_clear),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
