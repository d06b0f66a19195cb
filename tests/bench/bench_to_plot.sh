#!/usr/bin/env bash
# CTest: the benchmark harness end to end at the small size. canopy-bench
# rodinia runs every workload on Canopy and its baselines on the CPU leaves
# and on the OpenCL device (it exits non-zero when an output disagrees with
# its baseline); canopy-bench sweep splits hotspot over the CPU leaf and the
# OpenCL device at every percentage; canopy-plot draws both JSON files.
# The plots are skipped (exit 77) only when matplotlib is missing.
#
#   bench_to_plot.sh CANOPY_BENCH CANOPY_PLOT WORK_DIR
set -euo pipefail
bench=$1 plot=$2 work=$3

# The OpenMP baselines run in libgomp, which ThreadSanitizer does not see
# into: it reports libgomp's barriers as races in the baselines' loops.
if ldd "$bench" 2>/dev/null | grep -q libtsan; then
  echo "skipped: canopy-bench is built with ThreadSanitizer, which reports libgomp's barriers as races"
  exit 77
fi
rm -rf "$work" && mkdir -p "$work"

"$bench" rodinia --size small --device all --json "$work/rodinia.json"
"$bench" sweep hotspot --devices cpu,opencl --size small --json "$work/sweep.json"

# Every row of both files was checked, and every workload is there.
python3 - "$work/rodinia.json" "$work/sweep.json" <<'PY'
import json, sys
rodinia = json.load(open(sys.argv[1]))["results"]
names = {r["workload"] for r in rodinia}
expected = {"hotspot", "srad_v2", "pathfinder", "lud", "nw", "gaussian", "backprop", "kmeans", "nn", "bfs", "lavaMD"}
assert names == expected, f"workloads {sorted(names)} != {sorted(expected)}"
impls = {(r["workload"], r["impl"]) for r in rodinia}
for w in ("hotspot", "srad_v2", "pathfinder"):
    assert (w, "opencl") in impls, f"{w} has no plain OpenCL baseline row"
bad = [r for r in rodinia if r.get("check") != "ok" or not r["seconds"] > 0]
assert not bad, f"rows not checked ok: {bad}"
sweep = json.load(open(sys.argv[2]))
rows = sweep["results"] if isinstance(sweep, dict) else sweep
assert len(rows) == 11, f"expected 11 splits (0..100% by 10), got {len(rows)}"
assert all(r.get("check") == "ok" for r in rows), f"sweep rows not checked ok: {rows}"
print(f"{len(rodinia)} rodinia rows and {len(rows)} sweep rows, all checked ok")
PY

# canopy-plot falls back on the system Python when the first python3 on PATH
# has no matplotlib; so does this check.
python3 -c "import matplotlib" 2>/dev/null || /usr/bin/python3 -c "import matplotlib" 2>/dev/null ||
  { echo "matplotlib missing: plots skipped"; exit 77; }
"$plot" rodinia "$work/rodinia.json" --out "$work/plots"
"$plot" sweep "$work/sweep.json" --out "$work/plots"
count=$(find "$work/plots" -name '*.png' -size +1k | wc -l)
((count >= 2)) || { echo "expected PNG figures in $work/plots, found $count"; exit 1; }
echo "figures: $(cd "$work/plots" && ls | tr '\n' ' ')"
