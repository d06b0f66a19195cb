#!/usr/bin/env bash
# Installs the build tree into a temporary prefix, builds programs outside
# the tree against it with find_package(Canopy), and runs them: the MPI one
# under mpirun on two ranks when an mpirun is given (second argument) and
# Canopy was built with MPI.
set -euo pipefail
build_dir=$1
mpirun=${2:-}
source_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cmake --install "$build_dir" --prefix "$work/prefix" >/dev/null
test -f "$work/prefix/include/canopy/canopy.hpp"
test -x "$work/prefix/bin/canopy-bench"
test -x "$work/prefix/bin/canopy-plot" || { echo "canopy-plot was not installed"; exit 1; }
cmake -S "$source_dir/consumer" -B "$work/consumer" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_PREFIX_PATH="$work/prefix" >/dev/null
cmake --build "$work/consumer" >/dev/null
output=$("$work/consumer/consumer")
echo "$output"
[[ $output == "sum 249750.0" ]]
# Without the kernel cache the consumer compiles, which opens the JIT's LLVM
# half (libcanopy_llvm) from the installed lib folder, beside libcanopy_jit.
ls "$work"/prefix/lib*/libcanopy_llvm.so* >/dev/null
output=$(CANOPY_CACHE_DIR=off "$work/consumer/consumer")
[[ $output == "sum 249750.0" ]]
if [[ -n $mpirun ]]; then
  test -x "$work/consumer/consumer_mpi" || { echo "Canopy::canopy_mpi was not installed"; exit 1; }
  output=$("$mpirun" --allow-run-as-root --oversubscribe --mca btl self,vader \
    --mca btl_vader_single_copy_mechanism none -x CANOPY_CACHE_DIR -x CANOPY_DEVICES=cpu \
    -np 2 "$work/consumer/consumer_mpi")
  echo "$output"
  [[ $output == "ranks 2 sum 499500.0" ]]
fi
