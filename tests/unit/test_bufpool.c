// SPDX-License-Identifier: MIT
/*
 * Fixed buffers kept between pipeline runs: a set comes back zeroed to a
 * run of the same layout, never to two runs at once, and idle memory stays
 * under the cap.
 */
#include <string.h>

#include "bufpool.h"
#include "testutil.h"

static const size_t layout[3] = { 65536, 4096, 8192 };

static bool all_zero(const struct ring_mem *m)
{
	for (size_t i = 0; i < m->len; i++)
		if (((const unsigned char *)m->base)[i])
			return false;
	return true;
}

static void a_returned_set_comes_back_zeroed_to_the_same_layout(void **state)
{
	struct bufpool bp;
	struct ring_mem m;
	void *base;

	(void)state;
	bufpool_init(&bp, 1 << 20);
	assert_int_equal(bufpool_get(&bp, &m, layout, 3), 0);
	base = m.base;
	memset(m.base, 0xa5, m.len);
	bufpool_put(&bp, &m);
	assert_null(m.base);
	assert_int_equal(bufpool_get(&bp, &m, layout, 3), 1);
	assert_ptr_equal(m.base, base);
	assert_int_equal(m.nr, 3);
	assert_int_equal(m.iov[1].iov_len, 4096);
	assert_true(all_zero(&m));
	assert_int_equal(bp.reused, 1);
	assert_int_equal(bp.mapped, 1);
	bufpool_put(&bp, &m);
	bufpool_destroy(&bp);
}

static void another_layout_gets_new_memory(void **state)
{
	const size_t other[3] = { 65536, 4096, 4096 };
	struct bufpool bp;
	struct ring_mem a, b;

	(void)state;
	bufpool_init(&bp, 1 << 20);
	assert_int_equal(bufpool_get(&bp, &a, layout, 3), 0);
	bufpool_put(&bp, &a);
	assert_int_equal(bufpool_get(&bp, &b, other, 3), 0);
	assert_int_equal(bufpool_get(&bp, &a, layout, 2), 0);
	assert_int_equal(bp.reused, 0);
	bufpool_put(&bp, &a);
	bufpool_put(&bp, &b);
	bufpool_destroy(&bp);
}

static void a_set_in_use_is_not_handed_out_again(void **state)
{
	struct bufpool bp;
	struct ring_mem a, b, c;

	(void)state;
	bufpool_init(&bp, 1 << 20);
	assert_int_equal(bufpool_get(&bp, &a, layout, 3), 0);
	assert_int_equal(bufpool_get(&bp, &b, layout, 3), 0);
	assert_ptr_not_equal(a.base, b.base);
	bufpool_put(&bp, &a);
	bufpool_put(&bp, &b);
	/* the most recent first, each once */
	assert_int_equal(bufpool_get(&bp, &a, layout, 3), 1);
	assert_int_equal(bufpool_get(&bp, &b, layout, 3), 1);
	assert_ptr_not_equal(a.base, b.base);
	/* a third run while both are out: new memory */
	assert_int_equal(bufpool_get(&bp, &c, layout, 3), 0);
	assert_ptr_not_equal(c.base, a.base);
	assert_ptr_not_equal(c.base, b.base);
	bufpool_put(&bp, &a);
	bufpool_put(&bp, &b);
	bufpool_put(&bp, &c);
	bufpool_destroy(&bp);
}

static void idle_memory_stays_under_the_cap(void **state)
{
	struct bufpool bp;
	struct ring_mem a, b;
	size_t one;

	(void)state;
	bufpool_init(&bp, 0);
	assert_int_equal(bufpool_get(&bp, &a, layout, 3), 0);
	one = a.len;
	bufpool_put(&bp, &a);
	assert_int_equal(bp.idle_bytes, 0);
	assert_int_equal(bufpool_get(&bp, &a, layout, 3), 0);

	bufpool_set_limit(&bp, one);
	assert_int_equal(bufpool_get(&bp, &b, layout, 3), 0);
	bufpool_put(&bp, &a);
	bufpool_put(&bp, &b);		/* keeps b, unmaps a, the older */
	assert_int_equal(bp.idle_bytes, one);
	bufpool_set_limit(&bp, 0);	/* a lower cap applies now */
	assert_int_equal(bp.idle_bytes, 0);
	assert_null(bp.idle);
	bufpool_destroy(&bp);
}

static void no_pool_maps_and_unmaps_each_time(void **state)
{
	struct ring_mem m;

	(void)state;
	assert_int_equal(bufpool_get(NULL, &m, layout, 3), 0);
	bufpool_put(NULL, &m);
	assert_null(m.base);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(a_returned_set_comes_back_zeroed_to_the_same_layout),
		cmocka_unit_test(another_layout_gets_new_memory),
		cmocka_unit_test(a_set_in_use_is_not_handed_out_again),
		cmocka_unit_test(idle_memory_stays_under_the_cap),
		cmocka_unit_test(no_pool_maps_and_unmaps_each_time),
	};

	return cmocka_run_group_tests_name("bufpool", tests, NULL, NULL);
}
