#!/usr/bin/env bash
# libvyre as a user gets it: install the build into a temporary DESTDIR, then build
# client/examples/saxpy.c with nothing but the installed header and `pkg-config --cflags --libs
# vyre`, and run it against a daemon started here. Also checks that the installed header compiles
# alone under -pedantic and that the library exports vy_* symbols only.
#
# Environment (from tests/client/meson.build): VYRED_BUILD_ROOT, VYRED_SOURCE_ROOT, VYRED_BIN.
# Exits 77 (skipped) only when pkg-config or a C compiler is missing.
set -uo pipefail

: "${VYRED_BUILD_ROOT:?run through meson test}" "${VYRED_SOURCE_ROOT:?run through meson test}"
: "${VYRED_BIN:?run through meson test}"
cc=${CC:-cc}
command -v pkg-config >/dev/null || { echo "SKIP: pkg-config is not installed"; exit 77; }
command -v "$cc" >/dev/null || { echo "SKIP: no C compiler ($cc)"; exit 77; }

tmp=$(mktemp -d /tmp/vyre-pkgconfig-XXXXXX) || exit 1
daemon=
cleanup() {
	if [ -n "$daemon" ]; then
		kill "$daemon" 2>/dev/null
		wait "$daemon" 2>/dev/null
	fi
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

fail() {
	echo "FAIL: $*" >&2
	exit 1
}

# The library, its header and its .pc file are tagged devel and runtime; the rest of the install
# (units, man pages) is the install suite's business.
dest=$tmp/dest
if ! meson install -C "$VYRED_BUILD_ROOT" --destdir "$dest" --no-rebuild --quiet \
	--tags devel,runtime >"$tmp/install.log" 2>&1; then
	cat "$tmp/install.log" >&2
	fail "meson install --destdir failed"
fi

pc=$(find "$dest" -name vyre.pc | head -n 1)
[ -n "$pc" ] || fail "no vyre.pc was installed"
# Only the installed file is visible, and its paths point into the DESTDIR.
export PKG_CONFIG_LIBDIR=${pc%/*}
export PKG_CONFIG_PATH=
export PKG_CONFIG_SYSROOT_DIR=$dest
flags=$(pkg-config --cflags --libs vyre) || fail "pkg-config --cflags --libs vyre failed"
# pkgconf puts the sysroot in front of variables too, freedesktop pkg-config only in flags.
inside() {
	case $1 in
	"$dest"/*) echo "$1" ;;
	*) echo "$dest$1" ;;
	esac
}
libdir=$(inside "$(pkg-config --variable=libdir vyre)")
header=$(inside "$(pkg-config --variable=includedir vyre)")/vy/vyre.h
[ -f "$header" ] || fail "vy/vyre.h is not installed under the includedir of vyre.pc"
lib=$(find "$libdir" -maxdepth 1 -name 'libvyre.so.*' | head -n 1)
[ -n "$lib" ] || fail "libvyre.so.* is not installed in $libdir"

# A library built with sanitizers needs its users built with them too.
extra=()
if readelf -d "$lib" | grep -q 'libasan'; then
	extra=(-fsanitize=address,undefined)
fi

# Exports: the public vy_* functions and nothing of the static protocol code inside.
others=$(nm -D --defined-only "$lib" | awk '$2 ~ /^[TDBRVW]$/ { print $3 }' | grep -v '^vy_')
[ -z "$others" ] || fail "libvyre exports symbols outside vy_*: $(echo $others | head -c 300)"
for sym in vy_client_connect vy_dispatch vy_client_reconnect vy_region_attach; do
	nm -D --defined-only "$lib" | grep -q " T $sym\$" || fail "libvyre does not export $sym"
done

# The header alone, as C11 and as C++.
printf '#include <vy/vyre.h>\nint main(void) { return vy_version() == 0; }\n' >"$tmp/alone.c"
# shellcheck disable=SC2086
"$cc" -std=c11 -Wall -Wextra -Wpedantic -Werror "$tmp/alone.c" $flags "${extra[@]}" \
	-o "$tmp/alone" || fail "the installed header does not compile alone"

cp "$VYRED_SOURCE_ROOT/client/examples/saxpy.c" "$tmp/saxpy.c"
# shellcheck disable=SC2086
"$cc" -std=c11 -Wall -Wextra -Werror "$tmp/saxpy.c" $flags "${extra[@]}" -o "$tmp/saxpy" ||
	fail "saxpy.c does not build with pkg-config --cflags --libs vyre ($flags)"

: >"$tmp/vyred.conf"
"$VYRED_BIN" --config "$tmp/vyred.conf" --socket "$tmp/vyred.sock" --cache-dir "$tmp/cache" \
	--backend reference >"$tmp/vyred.log" 2>&1 &
daemon=$!
for _ in $(seq 1 600); do
	[ -S "$tmp/vyred.sock" ] && break
	kill -0 "$daemon" 2>/dev/null || { cat "$tmp/vyred.log" >&2; fail "vyred exited"; }
	sleep 0.1
done
[ -S "$tmp/vyred.sock" ] || fail "vyred did not create its socket within a minute"

out=$(LD_LIBRARY_PATH=$libdir "$tmp/saxpy" "$tmp/vyred.sock" 2>&1)
status=$?
echo "$out"
[ "$status" -eq 0 ] || fail "saxpy exited with $status"
case $out in
*"saxpy: 65536 elements right"*) ;;
*) fail "saxpy did not print its result" ;;
esac
kill "$daemon"
wait "$daemon"
status=$?
daemon=
[ "$status" -eq 0 ] || { cat "$tmp/vyred.log" >&2; fail "vyred exited with $status"; }
echo "every check passed"
