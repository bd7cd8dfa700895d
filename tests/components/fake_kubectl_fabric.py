#!/usr/bin/env python3
"""A stand-in for kubectl on PATH for the fabric-check controller's tests: it answers from a cluster state
(JSON at $FAKE_STATE) and appends every call, with what it read on stdin, to $FAKE_LOG (one JSON line each).

State: nodes [{name, pool, unschedulable?, taints?}], pods [{node?, namespace, name, phase, claims}], jobs
{rail|nccl: {state: "Succeeded"|"Failed"|"", log}}, slices (ResourceSlice items).
"""

from __future__ import annotations

import json
import os
import re
import sys
from pathlib import Path


def main(argv: list[str]) -> int:
    state = json.loads(Path(os.environ["FAKE_STATE"]).read_text())
    args = list(argv)
    if args[:1] == ["-n"]:
        args = args[2:]
    stdin = sys.stdin.read() if "-f" in args and "-" in args else None
    with Path(os.environ["FAKE_LOG"]).open("a") as log:
        log.write(json.dumps({"args": argv, "stdin": stdin}) + "\n")
    verb, rest = args[0], args[1:]
    if verb == "get" and rest[:2] == ["pods", "-A"]:
        items = [
            {
                "metadata": {"namespace": p["namespace"], "name": p["name"]},
                "spec": ({"nodeName": p["node"]} if p.get("node") else {})
                | ({"resourceClaims": [{"name": "c"}]} if p["claims"] else {}),
                "status": {"phase": p["phase"]},
            }
            for p in state["pods"]
        ]
        print(json.dumps({"items": items}))
    elif verb == "get" and rest[0] == "nodes":
        pool = rest[rest.index("-l") + 1].split("=", 1)[1]
        items = [
            {"metadata": {"name": n["name"]}, "spec": {"unschedulable": n.get("unschedulable", False)}}
            for n in state["nodes"]
            if n["pool"] == pool
        ]
        print(json.dumps({"items": items}))
    elif verb == "get" and rest[0] == "node":
        node = next(n for n in state["nodes"] if n["name"] == rest[1])
        key = re.search(r'@\.key=="([^"]+)"', rest[-1])
        assert key is not None
        print(" ".join(t["value"] for t in node.get("taints", []) if t["key"] == key.group(1)), end="")
    elif verb == "get" and rest[0] == "mpijob":
        print(state["jobs"][rest[1].split("-")[2]]["state"], end="")
    elif verb == "get" and rest[0] == "resourceslices":
        print(json.dumps({"items": state["slices"]}))
    elif verb == "logs":
        print(state["jobs"][rest[0].split("-")[2]]["log"], end="")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
