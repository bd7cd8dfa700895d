#!/usr/bin/env python3
"""A fake kubectl for the tests of the stack's in-cluster scripts (the rail health agent, rail-health.sh; the
scheduled fabric check, fabric-check.sh): put on PATH (or named by $KUBECTL) through ``install``, it answers from
one small cluster kept in $FAKE_KUBE/state.json, changes it the way kubectl would, records every call (argv and
what it read on stdin) in $FAKE_KUBE/calls.jsonl, and fails on any call it does not know, so a script that
starts calling something new fails its tests until this fake (and the RBAC beside the script) know it too.

State: nodes [{name, pool?, unschedulable?, taints?, labels?}], pods [{node?, namespace, name, phase, claims}], jobs
{<kind>: {state: "Succeeded"|"Failed"|"", log}} for the fabric check's MPIJobs (named fabric-check-<kind>-<run>),
slices (ResourceSlice items), devicetaintrules {name: manifest}.

Faults, each a file in $FAKE_KUBE: ``down`` fails every call as an API server that refuses connections;
``noisy`` answers every call but first prints on stderr the discovery error kubectl prints when an aggregated
API does not answer (client-go discovery/cached/memory memcache.go), which is no part of the answer; ``hang``
never answers: a call bounded by kubectl's global --request-timeout fails with kubectl's timeout message once
it has passed (not waited for here), an unbounded one blocks for an hour. A call's global flags (only
--request-timeout is known) are recorded apart from its args, as ``flags``. ``faults.json`` holds faults for
some calls: a list of {match: [args...], error?: message, delete_node?: name, times?: n}; the first fault whose
``match`` starts the call's args (after ``-n <namespace>``) applies: ``error`` fails the call with that message
on stderr (exit 1), ``delete_node`` deletes that node (and its pods) before the call is answered, as a node
that goes away meanwhile; ``times`` (default: every call) counts down.
"""

from __future__ import annotations

import itertools
import json
import os
import re
import sys
import time
from pathlib import Path
from typing import Any

# The node-pool label (oke_gpu_rdma/nodes/labels.py POOL_LABEL; the tests check they agree).
POOL_LABEL = "oke-gpu-rdma/node-pool"
TAINTS_JSONPATH = re.compile(r'jsonpath=\{\.spec\.taints\[\?\(@\.key=="([^"]+)"\)\]\.value\}')
# Every taint of a node, a line each (key, effect, value by tabs): kubectl's JSONPath unquotes the "\t" and "\n"
# literals (k8s.io/client-go util/jsonpath parser.go parseQuote, strconv.Unquote) and, with
# --allow-missing-template-keys (kubectl's default), prints nothing for a missing value or taint list.
TAINT_LIST_JSONPATH = 'jsonpath={range .spec.taints[*]}{.key}{"\\t"}{.effect}{"\\t"}{.value}{"\\n"}{end}'
# kubectl's JSONPath of one label: dots in the key escaped (k8s.io/client-go util/jsonpath).
LABEL_JSONPATH = re.compile(r"jsonpath=\{\.metadata\.labels\.((?:[^.\\}]|\\\.)+)\}")


def state_path(home: Path) -> Path:
    return home / "state.json"


def read_state(home: Path) -> dict[str, Any]:
    path = state_path(home)
    state: dict[str, Any] = json.loads(path.read_text()) if path.exists() else {}
    for key, empty in (("nodes", []), ("pods", []), ("jobs", {}), ("slices", []), ("devicetaintrules", {})):
        state.setdefault(key, empty)
    return state


def write_json(path: Path, value: Any) -> None:
    """Written whole or not at all: a test polls state.json while the script under test runs this fake, and a
    reader must never see the empty file that a plain write_text truncates to before it writes (rename(2) is
    atomic within one file system)."""
    scratch = path.with_name(f".{path.name}.{os.getpid()}")
    scratch.write_text(json.dumps(value))
    os.replace(scratch, path)


def write_state(home: Path, state: dict[str, Any]) -> None:
    home.mkdir(parents=True, exist_ok=True)
    write_json(state_path(home), state)


def calls(home: Path) -> list[dict[str, Any]]:
    path = home / "calls.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def install(bin_dir: Path) -> Path:
    """A ``kubectl`` in ``bin_dir`` that runs this fake with the tests' interpreter."""
    bin_dir.mkdir(parents=True, exist_ok=True)
    wrapper = bin_dir / "kubectl"
    # -I -S: the fake needs only the standard library, and skipping site (the venv's .pth files) takes a
    # third off each call, which the drills (tests/components/health/rail_drill.py) make thousands of.
    wrapper.write_text(f'#!/bin/bash\nexec "{sys.executable}" -I -S "{Path(__file__).resolve()}" "$@"\n')
    wrapper.chmod(0o755)
    return wrapper


def node_of(state: dict[str, Any], name: str) -> dict[str, Any]:
    found = next((n for n in state["nodes"] if n["name"] == name), None)
    if found is None:
        fail(f'Error from server (NotFound): nodes "{name}" not found')
    return found


def fail(message: str) -> Any:
    print(message, file=sys.stderr)
    sys.exit(1)


def taint(state: dict[str, Any], node: str, spec: str, overwrite: bool) -> None:
    """kubectl taint: ``key[=value]:effect`` adds (or with --overwrite replaces), a trailing ``-`` removes."""
    taints: list[dict[str, str]] = node_of(state, node).setdefault("taints", [])
    if spec.endswith("-"):
        pair, effect = spec[:-1].rsplit(":", 1)
        key = pair.split("=", 1)[0]
        remaining = [t for t in taints if not (t["key"] == key and t["effect"] == effect)]
        if len(remaining) == len(taints):
            # deleteTaints (staging/src/k8s.io/kubectl/pkg/cmd/taint/utils.go): "taint %q not found" of the
            # taint's ToString(), key:effect; cmdutil.CheckErr adds "error: ".
            fail(f'error: taint "{key}:{effect}" not found')
        taints[:] = remaining
        return
    pair, effect = spec.rsplit(":", 1)
    key, value = pair.split("=", 1)
    same = [t for t in taints if t["key"] == key and t["effect"] == effect]
    if same and not overwrite:
        # updateTaints (staging/src/k8s.io/kubectl/pkg/cmd/taint/taint.go): "Node %s already has %v taint(s) with
        # same effect(s) and --overwrite is false", %v of the []v1.Taint asked for (Go's struct form; Taint's
        # String() has a pointer receiver, so a slice of values does not use it).
        fail(
            f"error: Node {node} already has [{{{key} {value} {effect} <nil>}}] taint(s) with same effect(s) and "
            "--overwrite is false"
        )
    taints[:] = [t for t in taints if t not in same] + [{"key": key, "value": value, "effect": effect}]


def label_node(state: dict[str, Any], node: str, specs: list[str], overwrite: bool) -> None:
    """kubectl label: ``key=value`` sets (an existing key only with --overwrite), ``key-`` removes."""
    labels: dict[str, str] = node_of(state, node).setdefault("labels", {})
    for spec in specs:
        if spec.endswith("-"):
            labels.pop(spec[:-1], None)
            continue
        key, value = spec.split("=", 1)
        if key in labels and labels[key] != value and not overwrite:
            fail(f"error: '{key}' already has a value ({labels[key]}), and --overwrite is false")
        labels[key] = value


def create_or_apply(state: dict[str, Any], verb: str, manifest: dict[str, Any]) -> None:
    kind, name = manifest["kind"], manifest["metadata"]["name"]
    if kind == "DeviceTaintRule":
        rules = state["devicetaintrules"]
        if verb == "create" and name in rules:
            fail(
                'Error from server (AlreadyExists): error when creating "STDIN": '
                f'devicetaintrules.resource.k8s.io "{name}" already exists'
            )
        rules[name] = manifest
        print(f"devicetaintrule.resource.k8s.io/{name} {'created' if verb == 'create' else 'configured'}")
    elif kind == "MPIJob" and verb == "create":
        print(f"mpijob.kubeflow.org/{name} created")
    else:
        fail(f"fake kubectl: unexpected {verb} of a {kind}")


def node_object(node: dict[str, Any]) -> dict[str, Any]:
    """A node of the state as the API serves it: ``pool`` is its POOL_LABEL, its uid made from its name."""
    labels = dict(node.get("labels", {})) | ({POOL_LABEL: node["pool"]} if "pool" in node else {})
    spec: dict[str, Any] = {"unschedulable": True} if node.get("unschedulable") else {}
    if node.get("taints"):
        spec["taints"] = node["taints"]
    return {"metadata": {"name": node["name"], "uid": f"uid-{node['name']}", "labels": labels}, "spec": spec}


def fabric_job(state: dict[str, Any], name: str) -> dict[str, Any]:
    """The fabric check's job fabric-check-<kind>-<run>[-launcher]: the outcome the test set for <kind>."""
    job: dict[str, Any] = state["jobs"][name.split("-")[2]]
    return job


GLOBAL_FLAG = re.compile(r"--request-timeout=(\S+)")
REFUSED = "The connection to the server 10.96.0.1:443 was refused - did you specify the right host or port?"
DISCOVERY_NOISE = (
    'E1202 10:00:00.000000      42 memcache.go:265] "Unhandled Error" err="couldn\'t get current server API group '
    'list: the server is currently unable to handle the request"'
)
TIMED_OUT = "Unable to connect to the server: net/http: request canceled (Client.Timeout exceeded while awaiting headers)"


def apply_fault(home: Path, args: list[str]) -> None:
    path = home / "faults.json"
    if not path.exists():
        return
    faults: list[dict[str, Any]] = json.loads(path.read_text())
    fault = next((f for f in faults if args[: len(f["match"])] == f["match"] and f.get("times", 1) > 0), None)
    if fault is None:
        return
    if "times" in fault:
        fault["times"] -= 1
        write_json(path, faults)
    if "delete_node" in fault:
        state = read_state(home)
        state["nodes"] = [n for n in state["nodes"] if n["name"] != fault["delete_node"]]
        state["pods"] = [p for p in state["pods"] if p.get("node") != fault["delete_node"]]
        write_state(home, state)
    if "error" in fault:
        fail(fault["error"])


def main(argv: list[str]) -> int:
    home = Path(os.environ["FAKE_KUBE"])
    flags = [a for a in argv if GLOBAL_FLAG.fullmatch(a)]
    args = [a for a in argv if not GLOBAL_FLAG.fullmatch(a)]
    if (home / "down").exists():
        fail(REFUSED)
    if (home / "hang").exists():
        if flags:
            fail(TIMED_OUT)
        time.sleep(3600)
    if (home / "noisy").exists():
        print(DISCOVERY_NOISE, file=sys.stderr)
    if args[:1] == ["-n"]:
        args = args[2:]
    reads_stdin = any(a == "-f" and b == "-" for a, b in itertools.pairwise(args))
    stdin = sys.stdin.read() if reads_stdin else None
    home.mkdir(parents=True, exist_ok=True)
    with (home / "calls.jsonl").open("a") as log:
        log.write(
            json.dumps({"args": [a for a in argv if a not in flags], "flags": flags, "stdin": stdin}) + "\n"
        )
    apply_fault(home, args)
    state = read_state(home)
    verb, rest = args[0], args[1:]
    if verb in ("create", "apply") and rest == ["-f", "-"]:
        assert stdin is not None
        create_or_apply(state, verb, json.loads(stdin))
    elif verb == "apply" and rest[:1] == ["-f"] and len(rest) == 2:
        pass  # a file the script brought (the fabric check's claim templates): recorded only
    elif verb == "delete" and rest[:1] == ["-f"] and rest[2:] == ["--ignore-not-found"]:
        pass
    elif verb == "delete" and rest[:1] == ["devicetaintrule"] and rest[2:] == ["--ignore-not-found"]:
        state["devicetaintrules"].pop(rest[1], None)
    elif verb == "delete" and rest[:1] in (["mpijob"], ["mpijobs"]):
        pass
    elif (
        verb == "get" and rest[:1] == ["devicetaintrule"] and rest[2:] == ["-o", "name", "--ignore-not-found"]
    ):
        if rest[1] in state["devicetaintrules"]:
            print(f"devicetaintrule.resource.k8s.io/{rest[1]}")
    elif verb == "get" and rest[:2] == ["pods", "-A"]:
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
    elif verb == "get" and rest == ["nodes", "-o", "json"]:
        print(json.dumps({"items": [node_object(n) for n in state["nodes"]]}))
    elif verb == "get" and rest[:2] == ["devicetaintrules", "-l"] and rest[3:] == ["-o", "json"]:
        labelled = [
            r for r in state["devicetaintrules"].values() if rest[2] in r["metadata"].get("labels", {})
        ]
        print(json.dumps({"items": labelled}))
    elif verb == "get" and rest[:1] == ["node"] and rest[2:] == ["-o", "name", "--ignore-not-found"]:
        if any(n["name"] == rest[1] for n in state["nodes"]):
            print(f"node/{rest[1]}")
    elif verb == "get" and rest[:1] == ["node"] and rest[2:3] == ["-o"] and len(rest) == 4:
        found = TAINTS_JSONPATH.fullmatch(rest[3])
        label = LABEL_JSONPATH.fullmatch(rest[3])
        if rest[3] == "jsonpath={.metadata.uid}":
            print(node_object(node_of(state, rest[1]))["metadata"]["uid"], end="")
        elif rest[3] == TAINT_LIST_JSONPATH:
            for t in node_of(state, rest[1]).get("taints", []):
                print(f"{t['key']}\t{t['effect']}\t{t.get('value', '')}")
        elif found is not None:
            taints = node_of(state, rest[1]).get("taints", [])
            print(" ".join(t.get("value", "") for t in taints if t["key"] == found.group(1)), end="")
        elif label is not None:
            # A missing key prints nothing and exits 0 (kubectl's JSONPath allows missing keys by default).
            print(
                node_of(state, rest[1]).get("labels", {}).get(label.group(1).replace("\\.", "."), ""), end=""
            )
        else:
            fail(f"fake kubectl: unexpected output {rest[3]}")
    elif verb == "get" and rest[:1] == ["mpijob"]:
        print(fabric_job(state, rest[1])["state"], end="")
    elif verb == "get" and rest[:1] == ["resourceslices"]:
        print(json.dumps({"items": state["slices"]}))
    elif verb == "logs":
        print(fabric_job(state, rest[0].split("/", 1)[1])["log"], end="")
    elif verb == "taint" and rest[:1] in (["node"], ["nodes"]) and len(rest) in (3, 4):
        taint(state, rest[1], rest[2], overwrite=rest[3:] == ["--overwrite"])
    elif verb == "label" and rest[:1] == ["node"]:
        label_node(state, rest[1], [a for a in rest[2:] if not a.startswith("--")], "--overwrite" in rest)
    elif (verb == "annotate" and rest[:1] == ["node"]) or (
        verb == "patch" and rest[:1] == ["node"] and "--subresource=status" in rest
    ):
        node_of(state, rest[1])
    else:
        fail(f"fake kubectl: unexpected call {argv}")
    write_state(home, state)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
