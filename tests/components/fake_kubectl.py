#!/usr/bin/env python3
"""A fake kubectl for the rail health agent's tests: it records every call (argv and stdin) in
$FAKE_KUBE/calls.jsonl and keeps the little cluster state the agent reads back (DeviceTaintRules by name,
the node's taints), answering the way kubectl does for the commands the agent uses and failing on any other."""

from __future__ import annotations

import json
import os
import re
import sys
from pathlib import Path

home = Path(os.environ["FAKE_KUBE"])
rules = home / "rules"
rules.mkdir(parents=True, exist_ok=True)
taints_file = home / "node-taints.json"
args = sys.argv[1:]
if (home / "down").exists():  # the API server does not answer
    print("The connection to the server was refused", file=sys.stderr)
    sys.exit(1)
stdin = sys.stdin.read() if args[:2] == ["create", "-f"] else ""
with (home / "calls.jsonl").open("a") as calls:
    calls.write(json.dumps({"args": args, "stdin": stdin}) + "\n")
taints = json.loads(taints_file.read_text()) if taints_file.exists() else []


def save_taints() -> None:
    taints_file.write_text(json.dumps(taints))


if args[:3] == ["create", "-f", "-"]:
    rule = json.loads(stdin)
    name = rule["metadata"]["name"]
    if (rules / name).exists():
        print(f'Error from server (AlreadyExists): devicetaintrules.resource.k8s.io "{name}" already exists')
        sys.exit(1)
    (rules / name).write_text(stdin)
    print(f"devicetaintrule.resource.k8s.io/{name} created")
elif args[:2] == ["delete", "devicetaintrule"] and args[3:] == ["--ignore-not-found"]:
    (rules / args[2]).unlink(missing_ok=True)
elif args[:2] == ["get", "devicetaintrule"] and args[3:] == ["-o", "name", "--ignore-not-found"]:
    if (rules / args[2]).exists():
        print(f"devicetaintrule.resource.k8s.io/{args[2]}")
elif args[:2] == ["get", "node"] and len(args) == 5 and args[3] == "-o":
    found = re.fullmatch(r'jsonpath=\{\.spec\.taints\[\?\(@\.key=="([^"]+)"\)\]\.value\}', args[4])
    if not found:
        sys.exit(f"fake kubectl: unexpected output {args[4]}")
    print(" ".join(t.get("value", "") for t in taints if t["key"] == found.group(1)), end="")
elif args[:2] == ["taint", "node"] and len(args) == 4:
    spec = args[3]
    if spec.endswith("-"):
        key, effect = spec[:-1].split(":")
        taints = [t for t in taints if not (t["key"] == key and t["effect"] == effect)]
    else:
        pair, effect = spec.rsplit(":", 1)
        key, value = pair.split("=", 1)
        if any(t["key"] == key and t["effect"] == effect for t in taints):
            sys.exit(f"error: node already has {key}:{effect}")
        taints.append({"key": key, "value": value, "effect": effect})
    save_taints()
else:
    sys.exit(f"fake kubectl: unexpected call {args}")
