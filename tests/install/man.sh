#!/usr/bin/env bash
# The man pages were built, and `man -l` renders each at 80 columns without a single warning from
# groff and without a line wider than the page. The pages also stay in step with the code:
# vyred.conf(5) describes every configuration key with its default, and vyre-protocol(7) lists
# every error code with its number.
here=$(dirname "$(readlink -f "$0")")
. "$here/lib.sh"
[ -n "${VYRED_MAN_PAGES:-}" ] || vy_skip "scdoc is not installed, so no man page was built"
command -v man >/dev/null || vy_skip "man is not installed (apt-get install man-db)"
command -v col >/dev/null || vy_skip "col is not installed (apt-get install bsdextrautils)"
vy_setup

for page in $VYRED_MAN_PAGES; do
	name=$(basename "$page")
	if [ ! -s "$page" ]; then
		vy_fail "$name was not built"
		continue
	fi
	if ! MANWIDTH=80 man -l --warnings "$page" >"$tmp/out" 2>"$tmp/err"; then
		vy_fail "man -l $name failed"
	fi
	if [ -s "$tmp/err" ]; then
		cat "$tmp/err" >&2
		vy_fail "man -l --warnings $name printed warnings"
	fi
	[ -s "$tmp/out" ] || vy_fail "$name renders to nothing"
	# groff breaks filled text itself, but a literal block wider than the page runs off it.
	width=$(col -b <"$tmp/out" | LC_ALL=C.UTF-8 wc -L)
	[ "$width" -le 80 ] || vy_fail "$name renders lines $width columns wide at MANWIDTH=80"
done

# `man -l` output without formatting, for the checks below.
render() {
	local page
	for page in $VYRED_MAN_PAGES; do
		case $page in
		*/"$1") MANWIDTH=1000 man -l "$page" 2>/dev/null | col -b ;;
		esac
	done
}

# Every key `vyred --help` lists, as "  [section] key* = default".
render vyred.conf.5 >"$tmp/conf.txt"
keys=0
while read -r section key eq default; do
	[ "$eq" = "=" ] || continue
	key=${key%\*}
	keys=$((keys + 1))
	grep -qF "$key = " "$tmp/conf.txt" || vy_fail "vyred.conf(5) does not describe $key"
	line=$(grep -F "$key = " "$tmp/conf.txt" | head -n 1)
	case $line in
	*"(default: ${default:-empty})"*) ;;
	*) vy_fail "vyred.conf(5) gives $key another default than ${default:-empty}: $line" ;;
	esac
	grep -q "^SECTION \\$section" "$tmp/conf.txt" ||
		vy_fail "vyred.conf(5) has no section for $section"
done < <("$VYRED_BUILD_ROOT/daemon/vyred" --help | grep -E '^  \[[a-z]+\] ')
[ "$keys" -gt 0 ] || vy_fail "vyred --help listed no configuration key"

# Every error code of protocol/err.h, as X(NAME, number, ...).
render vyre-protocol.7 >"$tmp/protocol.txt"
codes=0
while read -r code num; do
	codes=$((codes + 1))
	grep -qE "^ *$code \\($num," "$tmp/protocol.txt" ||
		vy_fail "vyre-protocol(7) does not list $code ($num)"
done < <(sed -nE 's/.*X\(([A-Z_]+), ([0-9]+), .*/\1 \2/p' "$VYRED_SOURCE_ROOT/protocol/err.h")
[ "$codes" -gt 0 ] || vy_fail "no error code found in protocol/err.h"

vy_finish
