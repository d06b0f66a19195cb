#!/usr/bin/env python3
"""CTest for tools/canopy-plot: draws a tiny rodinia JSON and a tiny sweep
JSON (two workloads, so the heatmap is drawn too) written here, and checks
that every figure exists and is a valid PNG (signature, IHDR with a size) or
SVG (XML whose root is <svg>); a JSON row without seconds must fail naming
the row. Exits 77 (skipped) with a message when matplotlib is missing.

  check_plot.py CANOPY_PLOT WORK_DIR
"""

import json
import os
import shutil
import struct
import subprocess
import sys
import xml.etree.ElementTree as ElementTree

SKIPPED = 77


def has_matplotlib(python):
    return subprocess.run([python, "-c", "import matplotlib"], capture_output=True).returncode == 0


def check_png(path):
    with open(path, "rb") as f:
        head = f.read(24)
    assert head[:8] == b"\x89PNG\r\n\x1a\n", f"{path}: no PNG signature"
    assert head[12:16] == b"IHDR", f"{path}: the first chunk is not IHDR"
    width, height = struct.unpack(">II", head[16:24])
    assert width > 100 and height > 100, f"{path}: {width}x{height} pixels"
    return width, height


def check_svg(path):
    root = ElementTree.parse(path).getroot()
    assert root.tag.endswith("svg"), f"{path}: the root element is {root.tag}"
    texts = "".join(root.itertext())
    return root, texts


def run(plot, *args):
    return subprocess.run([sys.executable, plot, *args], capture_output=True, text=True)


def main():
    plot, work = sys.argv[1], sys.argv[2]
    if not (has_matplotlib(sys.executable) or has_matplotlib("/usr/bin/python3")):
        print("skipped: matplotlib is not installed (Debian: python3-matplotlib)")
        return SKIPPED
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)

    rodinia = {"results": []}
    for workload, cpu, opencl in [("hotspot", 0.5, 0.25), ("srad_v2", 0.2, 0.4), ("pathfinder", 0.1, 0.1)]:
        rodinia["results"] += [
            {"workload": workload, "impl": "canopy", "device": "cpu", "seconds": cpu, "check": "ok"},
            {"workload": workload, "impl": "openmp", "device": "cpu", "seconds": 0.5, "check": "ok"},
            {"workload": workload, "impl": "canopy", "device": "opencl", "seconds": opencl, "check": "ok"},
            {"workload": workload, "impl": "opencl", "device": "opencl", "seconds": 0.5, "check": "ok"},
        ]
    sweep = {"results": []}
    for workload, scale in [("hotspot", 1.0), ("srad_v2", 3.0)]:
        for percent in range(0, 101, 10):
            seconds = scale * (1.0 + abs(percent - 60) / 50.0)
            sweep["results"].append(
                {"workload": workload, "size": "small", "devices": "cpu,opencl", "split_cpu_percent": percent,
                 "seconds": seconds, "check": "ok"}
            )
    paths = {}
    for name, document in [("rodinia", rodinia), ("sweep", sweep)]:
        paths[name] = os.path.join(work, name + ".json")
        with open(paths[name], "w") as f:
            json.dump(document, f)

    out = os.path.join(work, "figures")
    expected = {
        "rodinia": ["rodinia_ratios"],
        "sweep": ["sweep_lines", "sweep_heatmap"],
    }
    for kind, stems in expected.items():
        result = run(plot, kind, paths[kind], "--out", out)
        assert result.returncode == 0, f"canopy-plot {kind} failed:\n{result.stdout}{result.stderr}"
        for stem in stems:
            png, svg = os.path.join(out, stem + ".png"), os.path.join(out, stem + ".svg")
            assert png in result.stdout and svg in result.stdout, f"canopy-plot {kind} did not list {stem}"
            width, height = check_png(png)
            _, texts = check_svg(svg)
            print(f"{stem}: PNG {width}x{height}, SVG {os.path.getsize(svg)} bytes")

    # The bars carry the ratios (baseline / canopy): hotspot on the CPU is 1.00, on OpenCL 2.00.
    _, texts = check_svg(os.path.join(out, "rodinia_ratios.svg"))
    for label in ["hotspot", "srad_v2", "pathfinder", "geomean", "2.00", "1.00", "2.50", "1.25"]:
        assert label in texts, f"rodinia_ratios.svg does not show {label}"

    broken = os.path.join(work, "broken.json")
    with open(broken, "w") as f:
        json.dump({"results": [{"workload": "hotspot", "split_cpu_percent": 10}]}, f)
    result = run(plot, "sweep", broken, "--out", out)
    assert result.returncode != 0, "a row without seconds was accepted"
    assert "row 0 has no seconds" in result.stderr, result.stderr
    print("canopy-plot: ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
