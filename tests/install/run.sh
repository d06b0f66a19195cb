#!/usr/bin/env bash
# Installs the build tree into a temporary prefix, builds a program outside
# the tree against it with find_package(Canopy), and runs that program.
set -euo pipefail
build_dir=$1
source_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cmake --install "$build_dir" --prefix "$work/prefix" >/dev/null
test -f "$work/prefix/include/canopy/canopy.hpp"
test -x "$work/prefix/bin/canopy-bench"
cmake -S "$source_dir/consumer" -B "$work/consumer" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_PREFIX_PATH="$work/prefix" >/dev/null
cmake --build "$work/consumer" >/dev/null
output=$("$work/consumer/consumer")
echo "$output"
[[ $output == "sum 249750.0" ]]
