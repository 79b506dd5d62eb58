#!/bin/bash
# vyred --emit-glsl (vyred(8)): the GLSL and SPIR-V the Vulkan backend generates for
# tests/programs/saxpy.json under the lavapipe and nvidia float profiles, with the lines where the
# profiles differ pinned; a program of two grid_sync segments; the device profile against the
# named profile of the device found; and the exit statuses of a bad program, profile and file.
set -u
: "${VYRED_BIN:?set VYRED_BIN to the vyred executable}"
: "${VY_SOURCE_DIR:?set VY_SOURCE_DIR to the source tree}"
PROGRAMS="$VY_SOURCE_DIR/tests/programs"
SAXPY="$PROGRAMS/saxpy.json"
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
failures=0

fail() {
	echo "FAIL: $*"
	failures=$((failures + 1))
}

# emit NAME ARGS...: run vyred with ARGS, stdout to $TMP/NAME.out, stderr to $TMP/NAME.err, the
# exit status to $TMP/NAME.rc.
emit() {
	local name=$1
	shift
	"$VYRED_BIN" "$@" >"$TMP/$name.out" 2>"$TMP/$name.err"
	echo $? >"$TMP/$name.rc"
}

expect_rc() {
	local got
	got=$(cat "$TMP/$1.rc")
	[ "$got" = "$2" ] || fail "$1: exit status $got, expected $2 (stderr: $(cat "$TMP/$1.err"))"
}

# has NAME TEXT / lacks NAME TEXT: a fixed line fragment in NAME's stdout, or its absence.
has() {
	grep -qF -- "$2" "$TMP/$1.out" || fail "$1: no line holds \"$2\""
}
lacks() {
	! grep -qF -- "$2" "$TMP/$1.out" || fail "$1: a line holds \"$2\""
}

count_of() {
	grep -cF -- "$2" "$TMP/$1.out"
}

# The GLSL of each profile.
for profile in lavapipe nvidia; do
	emit "$profile" --emit-glsl "$SAXPY" --profile "$profile"
	expect_rc "$profile" 0
	[ -s "$TMP/$profile.err" ] && fail "$profile: stderr not empty: $(cat "$TMP/$profile.err")"
	[ "$(head -n 1 "$TMP/$profile.out" | cut -d: -f1)" = "// float profile $profile" ] ||
		fail "$profile: the first line does not name the profile"
	[ "$(count_of "$profile" '#version 450')" = 1 ] || fail "$profile: not one #version 450"
	[ "$(count_of "$profile" 'void main()')" = 1 ] || fail "$profile: not one main function"
	has "$profile" "grid_sync segment 1 of 1: 3 buffer binding(s), 0 spec constant(s)"
	has "$profile" "layout(std430, set = 0, binding = 2) buffer VyBuf2 {"
	has "$profile" "uint vy_ffma(uint a, uint b, uint c)"
	# Nothing but comments comes before #version: one segment compiles as printed.
	first=$(grep -vn '^//' "$TMP/$profile.out" | head -n 1)
	[ "$first" = "9:#version 450" ] || fail "$profile: the first line of code is \"$first\""
done
# Where the profiles differ: lavapipe's fma() is not fused, so vyre's fma runs in doubles;
# NVIDIA's is, so it is the builtin.
has lavapipe "//   fma() fused: no; '/' correctly rounded: yes; sqrt() correctly rounded: yes"
has lavapipe "//   subgroup operations: yes (8 lanes)"
has lavapipe "//   loop passes per invocation: at most 65535"
has lavapipe "//   workgroups: 1024 invocations, 1024 x 1024 x 1024; shared memory: 32768 bytes"
has lavapipe "needs shaderFloat64: yes"
has lavapipe "precise double p = double(uintBitsToFloat(a)) * double(uintBitsToFloat(b));"
lacks lavapipe "fma(uintBitsToFloat(a)"
has nvidia "//   fma() fused: yes; '/' correctly rounded: no; sqrt() correctly rounded: no"
has nvidia "//   subgroup operations: yes (32 lanes)"
has nvidia "//   loop passes per invocation: no limit found"
has nvidia "//   workgroups: 1024 invocations, 1024 x 1024 x 64; shared memory: 49152 bytes"
has nvidia "needs shaderFloat64: no"
has nvidia "precise float r = fma(uintBitsToFloat(a), uintBitsToFloat(b), uintBitsToFloat(c));"
lacks nvidia "double"
# lavapipe folds constant operands and selects between constants inexactly: add and mul decide
# special operands by integer tests, and selected and assigned words pass through vy_z.
has lavapipe "//   constant operands folded exactly: no; selects between constants exact: no"
has nvidia "//   constant operands folded exactly: yes; selects between constants exact: yes"
has lavapipe "//   flags of speculated products and fmas sound: yes"
has nvidia "//   flags of speculated products and fmas sound: yes"
has lavapipe "uint vy_z;"
has lavapipe "	vy_z = vy_pc.opaque_zero;"
lacks nvidia "vy_z"
# saxpy is elementwise (vk_coarse.c): its entry is vy_main, x and y its registers (params is read
# at index 0, not at gid), and the coarse spec constant picks how many logical workgroups run.
for profile in lavapipe nvidia; do
	has "$profile" "layout(constant_id = 67) const uint vy_kc = 1u;"
	has "$profile" "void vy_main(uvec3 vy_gid, inout uint vy_st, inout uint vy_r1, inout uint vy_r2)"
	has "$profile" "		vy_main(vy_g3, vy_st3, vy_r1_3, vy_r2_3);"
	has "$profile" "		b2_y.d[vy_g3.x] = vy_r2_3;"
done
# NVIDIA's fused fma gives back the device's NaN, so saxpy's store canonicalizes its result there.
has nvidia "		vy_r2 = vy_canon(t5);"
has lavapipe "		vy_r2 = t5;"
# Only the profile's comments, its helpers, vy_z and that store differ: the code is otherwise
# the same.
sed -n '/^void vy_main(/,$p' "$TMP/lavapipe.out" | grep -vF 'vy_z = vy_pc.opaque_zero;' \
	>"$TMP/lavapipe.main"
sed -n '/^void vy_main(/,$p' "$TMP/nvidia.out" | sed 's/vy_r2 = vy_canon(t5);/vy_r2 = t5;/' \
	>"$TMP/nvidia.main"
[ -s "$TMP/nvidia.main" ] || fail "nvidia: no vy_main"
cmp -s "$TMP/lavapipe.main" "$TMP/nvidia.main" || fail "the main functions differ between profiles"

# Standard input reads the same program.
emit stdin --emit-glsl - --profile nvidia <"$SAXPY"
expect_rc stdin 0
cmp -s "$TMP/stdin.out" "$TMP/nvidia.out" || fail "stdin: not the text of the file"

# SPIR-V, compiled as the backend compiles it.
for profile in lavapipe nvidia; do
	emit "$profile-spv" --emit-glsl "$SAXPY" --profile "$profile" --spirv
	expect_rc "$profile-spv" 0
	has "$profile-spv" "; float profile $profile: "
	has "$profile-spv" "; spirv-val: valid"
	has "$profile-spv" "; Version: 1.5"
	has "$profile-spv" "OpEntryPoint GLCompute %"
	has "$profile-spv" "OpExecutionMode %"
	has "$profile-spv" " LocalSize 256 1 1"
	lacks "$profile-spv" "#version"
done
has lavapipe-spv "OpCapability Float64"
lacks nvidia-spv "OpCapability Float64"

# A program split at a grid_sync barrier: one shader per segment.
emit split --emit-glsl "$PROGRAMS/grid_sync_two_phase.json"
expect_rc split 0
has split "// float profile lavapipe: "
has split "// grid_sync segment 1 of 2: "
has split "// grid_sync segment 2 of 2: "
[ "$(count_of split '#version 450')" = 2 ] || fail "split: not two #version 450"

# The device profile: on lavapipe and on NVIDIA GPUs the probe must find the named profile.
emit device --emit-glsl "$SAXPY" --profile device
if [ "$(cat "$TMP/device.rc")" = 1 ] && grep -qF "the device did not open" "$TMP/device.err"; then
	echo "SKIP: the device profile: no Vulkan device opens here"
else
	expect_rc device 0
	head -n 1 "$TMP/device.out" | grep -q '^// float profile device: ' ||
		fail "device: the first line does not name the profile"
	named=
	case "$(head -n 1 "$TMP/device.out")" in
	*llvmpipe*) named=lavapipe ;;
	*NVIDIA*) named=nvidia ;;
	esac
	if [ -n "$named" ]; then
		tail -n +2 "$TMP/device.out" >"$TMP/device.rest"
		tail -n +2 "$TMP/$named.out" >"$TMP/named.rest"
		cmp -s "$TMP/device.rest" "$TMP/named.rest" ||
			fail "device: $(head -n 1 "$TMP/device.out") does not give the $named profile"
	else
		echo "SKIP: the device profile of $(head -n 1 "$TMP/device.out") has no named twin"
	fi
fi

# Errors: an invalid program (3, its location and Fix line), an unknown profile (2), a missing
# file (4), --spirv alone (2).
cat >"$TMP/bad.json" <<'JSON'
{"vyre": 1, "workgroup_size": [64, 1, 1],
 "buffers": [{"name": "o", "binding": 0, "access": "read_write", "type": "f32", "count": 4}],
 "entry": [["store", "o", ["u32", 0], ["add", ["f32", 1.0], ["u32", 2]]]]}
JSON
emit bad --emit-glsl "$TMP/bad.json" --profile nvidia
expect_rc bad 3
[ -s "$TMP/bad.out" ] && fail "bad: printed code"
grep -qF "is refused under float profile nvidia:" "$TMP/bad.err" || fail "bad: no headline"
grep -qF "INVALID_PROGRAM: add operands differ in type: a is f32, b is u32 (at entry[0].store.value.add.b). Fix: cast b to f32" \
	"$TMP/bad.err" || fail "bad: no error with its location and Fix: $(cat "$TMP/bad.err")"
emit amd --emit-glsl "$SAXPY" --profile amd
expect_rc amd 2
grep -qF 'there is no float profile "amd". Fix: name one of the profiles lavapipe, nvidia or device' \
	"$TMP/amd.err" || fail "amd: no Fix line: $(cat "$TMP/amd.err")"
emit missing --emit-glsl "$TMP/missing.json"
expect_rc missing 4
grep -qF "Fix: check the path" "$TMP/missing.err" || fail "missing: no Fix line"
emit alone --spirv
expect_rc alone 2

if [ "$failures" -ne 0 ]; then
	echo "$failures failure(s)"
	exit 1
fi
echo "all --emit-glsl checks passed"
