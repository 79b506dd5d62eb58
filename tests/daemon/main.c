/*
 * The end-to-end suite's entry point. Most tests share one vyred, started here before the tests
 * run and stopped after them; its exit status (sanitizer reports included: a leak makes it
 * non-zero) and its STOPPING=1 notification are checked last, so the suite fails when the
 * daemon did not end cleanly after serving every test. Tests that need their own daemon (limits,
 * restarts, socket activation) start one with the harness.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>

#include "harness.h"

/* The shared daemon lets the cross-user tests connect (they run as nobody when root). */
static const char shared_config[] = "[daemon]\nsocket_mode = 0666\n";

/* Criterion's workers find main by name in the dynamic symbol table, so it stays visible under
 * the project's -fvisibility=hidden. */
__attribute__((visibility("default"))) int main(int argc, char **argv);

int main(int argc, char **argv)
{
	struct criterion_test_set *tests = criterion_initialize();
	struct vyd shared;
	struct vyd_opts opts = {.config = shared_config, .watchdog = true};
	if (vyd_start(&shared, &opts) != 0) {
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
	bool stopping = vyd_note(&shared, "STOPPING=1", 1000);
	bool watchdog = vyd_note(&shared, "WATCHDOG=1", 0);
	if (status != 0 || !stopping || !watchdog) {
		fprintf(stderr,
			"the shared vyred did not end cleanly: exit status %d, STOPPING=1 %s, "
			"WATCHDOG=1 %s\n",
			status, stopping ? "seen" : "missing", watchdog ? "seen" : "missing");
		vyd_dump_log(&shared);
		result = 1;
	}
	vyd_cleanup(&shared);
	return result;
}
