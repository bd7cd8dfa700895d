"""`make topology SLICES=<file> [NODE=<node>] [SHAPE=<shape>]`: a shape's topology from the cluster.

Reads a dump of `kubectl get resourceslices -o yaml` and prints the `shapeTopologies` entry the node's
ResourceSlices describe (oke_gpu_rdma/topology_from_slices.py says what it reads), ready to paste
under `oke-gpu-rdma:shapeTopologies` in a stack file. A dump that lacks what the topology needs is
one line on stderr naming what is missing, and exit status 1.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from oke_gpu_rdma import yamltext
from oke_gpu_rdma.errors import ResourceSliceDumpError
from oke_gpu_rdma.topology_from_slices import DUMP_COMMAND, load_dump, topology_entry


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="make topology", description="Print the shapeTopologies entry of a node's ResourceSlices."
    )
    parser.add_argument("slices", help=f"the output of `{DUMP_COMMAND}`")
    parser.add_argument(
        "--node", help="the node to read (default: every node with DRANET or GPU driver slices)"
    )
    parser.add_argument("--shape", help="the node's shape (its node.kubernetes.io/instance-type label)")
    args = parser.parse_args(argv)
    path = Path(args.slices)
    try:
        text = path.read_text()
    except OSError as err:
        print(
            f"error: SLICES={args.slices}: cannot read it ({err.strerror}); write it with `{DUMP_COMMAND} > {args.slices}`",
            file=sys.stderr,
        )
        return 1
    try:
        shape, entry = topology_entry(load_dump(text, path.name), path.name, args.node, args.shape)
    except ResourceSliceDumpError as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    print(f"# {entry['source']}: paste under oke-gpu-rdma:shapeTopologies in stacks/Pulumi.<stack>.yaml")
    print(yamltext.dump({shape: entry}), end="")
    return 0


if __name__ == "__main__":
    sys.exit(main())
