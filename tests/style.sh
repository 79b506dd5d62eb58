#!/usr/bin/env bash
# The house style (STYLE.md): every tracked C file is clang-format clean.
set -euo pipefail
cd "$1"
files=$(git ls-files '*.c' '*.h' | grep -v '^build-aux/')
if ! clang-format --dry-run --Werror $files; then
	echo "Fix: run clang-format -i on the files above" >&2
	exit 1
fi
echo "clang-format: $(echo "$files" | wc -l) files clean"
