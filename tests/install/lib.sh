# Shared by the install tests (sourced, not run). tests/install/meson.build passes the build and
# source folders and every install folder of this configuration as VYRED_* variables.
#
# vy_setup makes a temporary folder ($tmp) that is removed at exit, whatever the outcome;
# vy_install installs the build into $dest (a DESTDIR inside $tmp); vy_fail counts a failure and
# vy_finish exits 1 if there was any. A test exits 77 (skipped) only when a tool it needs is
# missing.

set -uo pipefail

failures=0
tmp=
dest=

vy_fail() {
	echo "FAIL: $*" >&2
	failures=$((failures + 1))
}

vy_skip() {
	echo "SKIP: $*" >&2
	exit 77
}

vy_finish() {
	if [ "$failures" -ne 0 ]; then
		echo "$failures check(s) failed" >&2
		exit 1
	fi
	echo "every check passed"
	exit 0
}

vy_cleanup() {
	if [ -n "${vy_cleanup_hook:-}" ]; then
		"$vy_cleanup_hook"
	fi
	if [ -n "$tmp" ] && [ -d "$tmp" ]; then
		rm -rf "$tmp"
	fi
}

vy_setup() {
	: "${VYRED_BUILD_ROOT:?run through meson test}" "${VYRED_SOURCE_ROOT:?run through meson test}"
	tmp=$(mktemp -d /tmp/vyred-install-XXXXXX) || exit 1
	trap vy_cleanup EXIT
	trap 'exit 130' INT TERM
	dest=$tmp/dest
}

# Install the build tree into $dest, as a packager does.
vy_install() {
	if ! meson install -C "$VYRED_BUILD_ROOT" --destdir "$dest" --no-rebuild --quiet \
		>"$tmp/install.log" 2>&1; then
		cat "$tmp/install.log" >&2
		echo "FAIL: meson install --destdir failed" >&2
		exit 1
	fi
}

# The value of KEY= in a unit file (the last one, as systemd takes it for single-value keys).
vy_unit_value() {
	sed -n "s/^$2=//p" "$1" | tail -n 1
}

# A python3 that has the msgpack module, or nothing.
vy_python_msgpack() {
	local py
	for py in python3 /usr/bin/python3; do
		if command -v "$py" >/dev/null 2>&1 && "$py" -c 'import msgpack' 2>/dev/null; then
			command -v "$py"
			return 0
		fi
	done
	return 1
}
