#!/usr/bin/env python3
"""CTest for CANOPY_TRACE end to end: runs a Canopy program with
CANOPY_TRACE set, reads the trace it wrote (JSON with traceEvents, every
piece on a named track with its kernel and rows), draws it with
`canopy-plot timeline`, and checks that timeline.png is a valid PNG and that
timeline.svg names every track that holds an event and every kernel. A file
without traceEvents must fail naming the problem. Exits 77 (skipped) with a
message when matplotlib is missing.

  check_timeline.py CANOPY_PLOT WORK_DIR PROGRAM [ARGUMENTS...]
"""

import json
import os
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ElementTree

from check_plot import SKIPPED, check_png, has_matplotlib


def main():
    plot, work, program = sys.argv[1], sys.argv[2], sys.argv[3:]
    if not (has_matplotlib(sys.executable) or has_matplotlib("/usr/bin/python3")):
        print("skipped: matplotlib is not installed (Debian: python3-matplotlib)")
        return SKIPPED
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)

    trace_path = os.path.join(work, "run.json")
    environment = dict(os.environ, CANOPY_TRACE=trace_path)
    result = subprocess.run(program, capture_output=True, text=True, env=environment)
    assert result.returncode == 0, f"{program[0]} failed:\n{result.stdout}{result.stderr}"
    with open(trace_path, encoding="utf-8") as f:
        document = json.load(f)
    events = document["traceEvents"]
    tracks = {e["tid"]: e["args"]["name"] for e in events if e["ph"] == "M" and e["name"] == "thread_name"}
    pieces = [e for e in events if e["ph"] == "X" and e.get("cat") == "piece"]
    assert pieces, f"{trace_path} has no piece"
    for piece in pieces:
        assert piece["tid"] in tracks, f"a piece on a track without a name: {piece}"
        assert piece["args"]["kernel"] == piece["name"], piece
        assert piece["args"]["end"] > piece["args"]["begin"], piece
    used = sorted({tracks[e["tid"]] for e in events if e["ph"] == "X"})
    kernels = sorted({piece["name"] for piece in pieces})
    copies = [e for e in events if e["ph"] == "X" and e.get("cat") == "copy"]
    print(f"{trace_path}: {len(pieces)} pieces of {', '.join(kernels)} on {', '.join(used)}; {len(copies)} copies")

    out = os.path.join(work, "figures")
    result = subprocess.run([sys.executable, plot, "timeline", trace_path, "--out", out], capture_output=True, text=True)
    assert result.returncode == 0, f"canopy-plot timeline failed:\n{result.stdout}{result.stderr}"
    png, svg = os.path.join(out, "timeline.png"), os.path.join(out, "timeline.svg")
    assert png in result.stdout and svg in result.stdout, f"canopy-plot timeline did not list its files:\n{result.stdout}"
    width, height = check_png(png)
    texts = "".join(ElementTree.parse(svg).getroot().itertext())
    for label in used + kernels:
        assert label in texts, f"timeline.svg does not show {label}"
    print(f"timeline: PNG {width}x{height}, SVG names {len(used)} tracks and {len(kernels)} kernels")

    broken = os.path.join(work, "broken.json")
    with open(broken, "w") as f:
        json.dump({"results": []}, f)
    result = subprocess.run([sys.executable, plot, "timeline", broken, "--out", out], capture_output=True, text=True)
    assert result.returncode != 0, "a file without traceEvents was accepted"
    assert 'no "traceEvents" list' in result.stderr, result.stderr
    print("canopy-plot timeline: ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
