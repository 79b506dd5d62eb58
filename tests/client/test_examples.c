/*
 * The examples of client/examples, built by meson against libvyre, run against the suite's daemon
 * as a user would run them: each must exit 0 and print its result line.
 */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "lv.h"

static void run_example(const char *env, const char *expect)
{
	const char *path = getenv(env);
	cr_assert(path && *path, "%s does not name the example (run through meson test)", env);
	char out[4096];
	char *argv[] = {(char *)path, (char *)lv_socket(), NULL};
	int status = lv_run(argv, out, sizeof(out));
	cr_assert_eq(status, 0, "%s exited with %d; it printed:\n%s", path, status, out);
	cr_assert(strstr(out, expect), "%s printed:\n%s", path, out);
}

Test(examples, saxpy)
{
	run_example("VYRE_EXAMPLE_SAXPY", "saxpy: 65536 elements right");
}

Test(examples, resident_chain)
{
	run_example(
		"VYRE_EXAMPLE_RESIDENT_CHAIN", "resident_chain: 10 dispatches, b[4095] = 40950");
}

Test(examples, async_pipeline)
{
	run_example("VYRE_EXAMPLE_ASYNC_PIPELINE", "256 done, 0 wrong, 0 failed");
}

Test(examples, graph_chain)
{
	run_example("VYRE_EXAMPLE_GRAPH_CHAIN", "graph_chain: 10 steps in one request, y[4095] = ");
}
