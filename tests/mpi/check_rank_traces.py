#!/usr/bin/env python3
"""CTest for CANOPY_TRACE under MPI: runs an mpirun command with
CANOPY_TRACE=WORK_DIR/run.json (the command passes it on with -x CANOPY_TRACE)
and checks that each of the RANKS ranks wrote its own run.<rank>.json, valid
JSON named "canopy rank <rank>" holding pieces, and that no rank wrote
run.json itself.

  check_rank_traces.py WORK_DIR RANKS COMMAND [ARGUMENTS...]
"""

import json
import os
import shutil
import subprocess
import sys


def main():
    work, ranks, command = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    base = os.path.join(work, "run.json")
    result = subprocess.run(command, capture_output=True, text=True, env=dict(os.environ, CANOPY_TRACE=base))
    assert result.returncode == 0, f"{' '.join(command)} failed:\n{result.stdout}{result.stderr}"
    assert not os.path.exists(base), "a rank wrote run.json instead of run.<rank>.json"
    for rank in range(ranks):
        path = os.path.join(work, f"run.{rank}.json")
        assert os.path.exists(path), f"rank {rank} wrote no {path}; the folder holds {sorted(os.listdir(work))}"
        with open(path, encoding="utf-8") as f:
            events = json.load(f)["traceEvents"]
        names = [e["args"]["name"] for e in events if e["ph"] == "M" and e["name"] == "process_name"]
        assert names == [f"canopy rank {rank}"], f"{path}: process named {names}"
        pieces = [e for e in events if e["ph"] == "X" and e.get("cat") == "piece"]
        assert pieces, f"{path} has no piece"
        assert all(e["pid"] == rank for e in events), f"{path}: an event not of process {rank}"
        print(f"rank {rank}: {len(pieces)} pieces in {path}")
    print("rank traces: ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
