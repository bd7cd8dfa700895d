"""The closing lines of `make e2e`, from what the session wrote (tests/e2e/conftest.py): the known failures
(strict xfails, each naming the issue that fixes it), then

    e2e: N scenarios passed against kube-apiserver vX.Y.Z, kube-scheduler vX.Y.Z, kueue vA.B.C

with the versions the running binaries reported. Exit 1 (and no such line) when the summary is missing or
any scenario failed."""

from __future__ import annotations

import json
import sys
from pathlib import Path


def main(path: str) -> int:
    summary_file = Path(path)
    if not summary_file.exists():
        print(f"e2e: no summary at {summary_file}: the session did not finish", file=sys.stderr)
        return 1
    summary = json.loads(summary_file.read_text())
    counts, versions = summary["counts"], summary["versions"]
    if counts.get("failed") or counts.get("error") or not counts.get("passed"):
        print(f"e2e: {counts.get('failed', 0)} failed, {counts.get('error', 0)} errors", file=sys.stderr)
        return 1
    if counts.get("xfailed"):
        print(
            f"e2e: {counts['xfailed']} known failures, each marked with the issue that fixes it (pytest -rx)"
        )
    print(
        f"e2e: {counts['passed']} scenarios passed against kube-apiserver {versions.get('kube-apiserver')}, "
        f"kube-scheduler {versions.get('kube-scheduler')}, kueue {versions.get('kueue')}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
