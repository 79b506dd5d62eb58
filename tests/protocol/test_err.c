/* The error-code table: names, numbers, retry classes and formatting. */
#include <criterion/criterion.h>
#include <string.h>

#include "err.h"

Test(err, table_gives_wire_names_and_numbers_of_design)
{
	cr_assert_str_eq(vy_err_name(VY_E_INVALID_PROGRAM), "INVALID_PROGRAM");
	cr_assert_eq(vy_err_num(VY_E_INVALID_PROGRAM), 1006);
	cr_assert_eq(vy_err_num(VY_E_UNSUPPORTED_FEATURE), 1002);
	cr_assert_eq(vy_err_num(VY_E_OUT_OF_MEMORY), 1001);
	cr_assert_eq(vy_err_num(VY_E_KERNEL_COMPILE_FAILED), 1004);
	cr_assert_eq(vy_err_num(VY_E_DISPATCH_FAILED), 1005);
	cr_assert_eq(vy_err_num(VY_E_DEVICE_LOST), 1008);
	cr_assert_eq(vy_err_num(VY_E_INTERNAL), 1999);
	cr_assert_eq(VY_E_INVALID_PROGRAM, -1006);
}

Test(err, every_code_round_trips_through_name_and_number)
{
	static const int codes[] = {
#define X(name, num, retry, desc) VY_E_##name,
		VY_ERR_MAP(X)
#undef X
	};
	for (size_t i = 0; i < sizeof(codes) / sizeof(codes[0]); i++) {
		int c = codes[i];
		cr_assert_eq(vy_err_from_name(vy_err_name(c)), c);
		cr_assert_eq(vy_err_from_num(vy_err_num(c)), c);
		cr_assert(c < 0);
		for (size_t j = 0; j < i; j++) {
			cr_assert_neq(
				vy_err_num(codes[j]), vy_err_num(c), "numbers must be unique");
		}
	}
	cr_assert_eq(vy_err_from_name("NO_SUCH_CODE"), 0);
	cr_assert_str_eq(vy_err_name(-42), "UNKNOWN");
}

Test(err, retry_classes_follow_the_table)
{
	cr_assert_str_eq(vy_err_retry_name(vy_err_retry(VY_E_BUSY)), "later");
	cr_assert_str_eq(vy_err_retry_name(vy_err_retry(VY_E_INVALID_PROGRAM)), "after_fix");
	cr_assert_str_eq(vy_err_retry_name(vy_err_retry(VY_E_BAD_FRAME)), "reconnect");
	cr_assert_str_eq(vy_err_retry_name(vy_err_retry(VY_E_NOT_FOUND)), "never");
}

Test(err, set_fills_and_format_ends_with_fix_line)
{
	struct vy_err e;
	int rc = vy_err_set(
		&e, VY_E_NOT_FOUND, "handle", "allocate the buffer first", "no buffer %d", 7);
	cr_assert_eq(rc, VY_E_NOT_FOUND);
	char buf[1024];
	vy_err_format(&e, buf, sizeof(buf));
	cr_assert_str_eq(buf, "NOT_FOUND: no buffer 7 (at handle). Fix: allocate the buffer first");
	cr_assert_eq(vy_err_set(NULL, VY_E_BUSY, NULL, "x", "y"), VY_E_BUSY);
}

Test(err, list_keeps_at_most_the_limit_and_counts_the_rest)
{
	struct vy_err_list list;
	vy_err_list_init(&list);
	struct vy_err e;
	vy_err_set(&e, VY_E_INVALID_PROGRAM, NULL, "f", "m");
	for (int i = 0; i < VY_ERR_LIST_MAX + 5; i++) {
		vy_err_list_push(&list, &e);
	}
	cr_assert_eq(list.len, VY_ERR_LIST_MAX);
	cr_assert_eq(list.dropped, 5);
	vy_err_list_finish(&list);
	cr_assert_null(list.items);
}
