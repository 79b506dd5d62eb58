/*
 * The libvyre suite's entry point. One vyred serves most tests; it starts before them and its
 * exit is checked after them (status 0, sanitizers included), so a test that leaves the daemon
 * in a bad state fails the suite. Tests that restart a daemon or need a fake one make their own.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>

#include "harness.h"

/* Criterion's workers find main in the dynamic symbol table; the build hides symbols. */
__attribute__((visibility("default"))) int main(int argc, char **argv);

int main(int argc, char **argv)
{
	struct criterion_test_set *tests = criterion_initialize();
	struct vyd shared;
	if (vyd_start(&shared, NULL) != 0) {
		fprintf(stderr, "the shared vyred did not start\n");
		vyd_cleanup(&shared);
		criterion_finalize(tests);
		return 1;
	}
	setenv("VYRED_TEST_SOCKET", shared.sock, 1);
	int result = 0;
	if (criterion_handle_args(argc, argv, true)) {
		result = !criterion_run_all_tests(tests);
	}
	criterion_finalize(tests);
	int status = vyd_stop(&shared);
	if (status != 0) {
		fprintf(stderr, "the shared vyred exited with status %d\n", status);
		vyd_dump_log(&shared);
		result = 1;
	}
	vyd_cleanup(&shared);
	return result;
}
