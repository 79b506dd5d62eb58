# shellcheck shell=bash
# The check counter of the multidev scripts, sourced by them: `check STATUS TEXT` prints "ok -" or
# "FAIL -" with TEXT and counts it in $checks and $failures.
checks=0
failures=0

check() {
	checks=$((checks + 1))
	if [ "$1" = 0 ]; then
		echo "ok - $2"
	else
		failures=$((failures + 1))
		echo "FAIL - $2"
	fi
}
