#!/usr/bin/env bash
# Install into a temporary DESTDIR and check that every file lands where this configuration, the
# units and the man pages say it does, and that the units, sysusers.d and tmpfiles.d entries agree
# with one another (the users, groups and folders one names are the ones another creates).
here=$(dirname "$(readlink -f "$0")")
. "$here/lib.sh"
vy_setup
vy_install

# file PATH [-x]: PATH (an installed path) exists in the DESTDIR, executable with -x.
file() {
	if [ ! -f "$dest$1" ]; then
		vy_fail "$1 is not installed"
	elif [ "${2:-}" = -x ] && [ ! -x "$dest$1" ]; then
		vy_fail "$1 is installed but not executable"
	fi
}

file "$VYRED_SBINDIR/vyred" -x
file "$VYRED_BINDIR/vyrectl" -x
file "$VYRED_SYSCONFDIR/vyred/vyred.conf"
file "$VYRED_SYSUSERSDIR/vyred.conf"
file "$VYRED_TMPFILESDIR/vyred.conf"
units="vyred.service vyred.socket vyred@.service vyred@.socket"
for u in $units; do
	file "$VYRED_UNITDIR/$u"
done

# The commands of each service (ExecStart=, ExecReload=) exist: the daemon in the DESTDIR, any
# other command on this system; so does every installed file a command line names.
for u in vyred.service vyred@.service; do
	unit=$dest$VYRED_UNITDIR/$u
	[ -f "$unit" ] || continue
	for key in ExecStart ExecReload; do
		line=$(vy_unit_value "$unit" "$key")
		[ -n "$line" ] || {
			vy_fail "$u has no $key="
			continue
		}
		read -r -a words <<<"$line"
		cmd=${words[0]}
		case $cmd in
		"$VYRED_PREFIX"/*) file "$cmd" -x ;;
		/*) [ -x "$cmd" ] || vy_fail "$u: $key runs $cmd, which does not exist" ;;
		*) vy_fail "$u: $key runs $cmd, not an absolute path" ;;
		esac
		for w in "${words[@]:1}"; do
			case $w in
			"$VYRED_PREFIX"/* | "$VYRED_SYSCONFDIR"/*) file "$w" ;;
			esac
		done
	done
	grep -q "^ExecStart=$VYRED_SBINDIR/vyred " "$unit" ||
		vy_fail "$u does not start $VYRED_SBINDIR/vyred"
done

# The units' users, groups and folders come from the sysusers.d and tmpfiles.d entries.
sysusers=$dest$VYRED_SYSUSERSDIR/vyred.conf
tmpfiles=$dest$VYRED_TMPFILESDIR/vyred.conf
has_user() { grep -Eq "^u[!]?[[:space:]]+$1[[:space:]]" "$sysusers"; }
has_group() { has_user "$1" || grep -Eq "^g[[:space:]]+$1[[:space:]]" "$sysusers"; }
service=$dest$VYRED_UNITDIR/vyred.service
socket=$dest$VYRED_UNITDIR/vyred.socket
if [ -f "$service" ] && [ -f "$sysusers" ] && [ -f "$tmpfiles" ]; then
	user=$(vy_unit_value "$service" User)
	if [ -z "$user" ] || ! has_user "$user"; then
		vy_fail "User=$user is not created by $VYRED_SYSUSERSDIR"
	fi
	for g in $(vy_unit_value "$service" Group) $(vy_unit_value "$service" SupplementaryGroups); do
		has_group "$g" || vy_fail "group $g of vyred.service is not declared in sysusers.d"
	done
	sg=$(vy_unit_value "$socket" SocketGroup)
	if [ -z "$sg" ] || ! has_group "$sg"; then
		vy_fail "SocketGroup=$sg is not declared in sysusers.d"
	fi
	listen=$(vy_unit_value "$socket" ListenStream)
	rundir=/run/$(vy_unit_value "$service" RuntimeDirectory)
	[ "$(dirname "$listen")" = "$rundir" ] ||
		vy_fail "ListenStream=$listen is not inside RuntimeDirectory $rundir"
	grep -Eq "^d[[:space:]]+${rundir}[[:space:]]+[0-7]+[[:space:]]+${user}[[:space:]]" "$tmpfiles" ||
		vy_fail "tmpfiles.d does not create $rundir for $user"
	cachedir=/var/cache/$(vy_unit_value "$service" CacheDirectory)
	grep -Eq "^d[[:space:]]+${cachedir}[[:space:]]+[0-7]+[[:space:]]+${user}[[:space:]]" "$tmpfiles" ||
		vy_fail "tmpfiles.d does not create $cachedir for $user"
	[ "$(vy_unit_value "$service" Type)" = notify ] || vy_fail "vyred.service is not Type=notify"
	# The per-GPU template hands the instance to the daemon and gives it its own socket and cache.
	tservice=$dest$VYRED_UNITDIR/vyred@.service
	tsocket=$dest$VYRED_UNITDIR/vyred@.socket
	tstart=$(vy_unit_value "$tservice" ExecStart)
	for want in "--device %i" "--socket $(vy_unit_value "$tsocket" ListenStream)" \
		"--cache-dir /var/cache/$(vy_unit_value "$tservice" CacheDirectory)"; do
		case " $tstart " in
		*" $want "*) ;;
		*) vy_fail "vyred@.service ExecStart does not pass $want: $tstart" ;;
		esac
	done
	case $(vy_unit_value "$tsocket" ListenStream) in
	*%i*) ;;
	*) vy_fail "vyred@.socket does not listen on a per-instance path" ;;
	esac
fi

# The installed configuration shows every key the installed daemon knows (`vyred --help` lists
# them as "  [section] key = default", * marking reloadable ones) commented out, with its
# default, in its section, after a comment that explains it.
conf=$dest$VYRED_SYSCONFDIR/vyred/vyred.conf
if [ -f "$conf" ] && [ -x "$dest$VYRED_SBINDIR/vyred" ]; then
	# A comment explains the keys that follow it up to the next blank line.
	awk '/^\[/ { section = $0 }
		/^$/ { explained = 0 }
		/^# [^ ]/ { explained = 1 }
		/^#[a-z_]+ =/ {
			value = $0
			sub(/^#[a-z_]+ = ?/, "", value)
			print section " " substr($1, 2) " = " value (explained ? "" : " (no comment)")
		}' "$conf" >"$tmp/conf.keys"
	"$dest$VYRED_SBINDIR/vyred" --help |
		sed -nE 's/^  (\[[a-z]+\]) ([a-z_]+)\*? = ?(.*)$/\1 \2 = \3/p' >"$tmp/help.keys"
	[ -s "$tmp/help.keys" ] || vy_fail "vyred --help lists no configuration key"
	while IFS= read -r want; do
		key=$(cut -d ' ' -f 2 <<<"$want")
		grep -qxF -- "$want" "$tmp/conf.keys" ||
			vy_fail "vyred.conf lacks \"#${want#* }\" in ${want%% *} after a comment; it has: $(
				grep -F " $key = " "$tmp/conf.keys" || echo nothing)"
	done <"$tmp/help.keys"
fi

# The man pages, in the sections their names give; the pages the units list under
# Documentation=; and every installed path the pages name.
if [ -n "${VYRED_MAN_PAGES:-}" ]; then
	for page in $VYRED_MAN_PAGES; do
		name=$(basename "$page")
		file "$VYRED_MANDIR/man${name##*.}/$name"
	done
	for u in $units; do
		[ -f "$dest$VYRED_UNITDIR/$u" ] || continue
		for doc in $(sed -n 's/^Documentation=//p' "$dest$VYRED_UNITDIR/$u"); do
			case $doc in
			man:*)
				ref=${doc#man:}
				name=${ref%%(*}
				section=${ref#*(}
				section=${section%)}
				file "$VYRED_MANDIR/man$section/$name.$section"
				;;
			esac
		done
	done
	# The roff text without font changes and zero-width escapes (vyred.\&conf).
	plain() { sed 's/\\&//g; s/\\f[BIRP]//g' "$1"; }
	for page in $VYRED_MAN_PAGES; do
		for dir in "$VYRED_UNITDIR" "$VYRED_SYSUSERSDIR" "$VYRED_TMPFILESDIR" \
			"$VYRED_SYSCONFDIR/vyred"; do
			for path in $(plain "$page" | grep -oE "$dir/[^ ]+"); do
				path=${path%[.,;:)]}
				file "$path"
			done
		done
	done
	if [ -f "$dest$VYRED_MANDIR/man8/vyred.8" ]; then
		plain "$dest$VYRED_MANDIR/man8/vyred.8" >"$tmp/vyred.8.txt"
		grep -qF "$VYRED_SYSCONFDIR/vyred/vyred.conf" "$tmp/vyred.8.txt" ||
			vy_fail "vyred(8) does not name the installed configuration file"
	fi
else
	echo "scdoc is missing: the man pages are not built, so they are not checked"
fi

# libvyre, once client/include/vy/vyre.h exists: the header, the library, and a pkg-config file
# whose folders are where the header and library really are.
if [ -f "$VYRED_SOURCE_ROOT/client/include/vy/vyre.h" ]; then
	file "$VYRED_INCLUDEDIR/vy/vyre.h"
	compgen -G "$dest$VYRED_LIBDIR/libvyre.so*" >/dev/null ||
		compgen -G "$dest$VYRED_LIBDIR/libvyre.a" >/dev/null ||
		vy_fail "libvyre is not installed in $VYRED_LIBDIR"
	pcs=$(compgen -G "$dest$VYRED_LIBDIR/pkgconfig/*vyre*.pc")
	if [ -z "$pcs" ]; then
		vy_fail "no pkg-config file for libvyre in $VYRED_LIBDIR/pkgconfig"
	elif command -v pkg-config >/dev/null; then
		for pc in $pcs; do
			name=$(basename "$pc" .pc)
			got=$(PKG_CONFIG_PATH=$(dirname "$pc") pkg-config --variable=includedir "$name")
			[ "$got" = "$VYRED_INCLUDEDIR" ] ||
				vy_fail "$name.pc says includedir=$got, the header is in $VYRED_INCLUDEDIR"
			got=$(PKG_CONFIG_PATH=$(dirname "$pc") pkg-config --variable=libdir "$name")
			[ "$got" = "$VYRED_LIBDIR" ] ||
				vy_fail "$name.pc says libdir=$got, the library is in $VYRED_LIBDIR"
		done
	fi
fi

# The vyre Python package, where client/python/meson.build puts it: its modules, importable from
# the DESTDIR by the Python it was installed for (run outside the source tree), in a folder that
# Python searches when the prefix is one it searches.
if [ -n "${VYRED_PYTHON_DIR:-}" ]; then
	for m in __init__ arrays client errors kernel examples/__init__ examples/saxpy \
		examples/histogram examples/prefix_sum examples/softmax examples/resident_chain; do
		file "$VYRED_PYTHON_DIR/vyre/$m.py"
	done
	got=$(cd "$tmp" && PYTHONPATH=$dest$VYRED_PYTHON_DIR "$VYRED_PYTHON" -c \
		"import vyre, vyre.examples.saxpy as s; print(vyre.__file__); print(s.build().name)" 2>&1)
	[ "$got" = "$dest$VYRED_PYTHON_DIR/vyre/__init__.py"$'\n'"saxpy" ] ||
		vy_fail "the installed vyre package does not import from $VYRED_PYTHON_DIR: $got"
	searched=$("$VYRED_PYTHON" -c 'import sys; print(sys.argv[1] in sys.path)' "$VYRED_PYTHON_DIR")
	case $VYRED_PREFIX in
	/usr | /usr/local)
		[ "$searched" = True ] ||
			vy_fail "$VYRED_PYTHON does not search $VYRED_PYTHON_DIR, where vyre is installed"
		;;
	esac
fi

vy_finish
