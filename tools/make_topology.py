"""`make topology SLICES=<file> [NODE=<node>] [SHAPE=<shape>] [NODES=<file>]`: a shape's topology from
the cluster.

Reads a dump of `kubectl get resourceslices -o yaml` (and, for the nodes' shapes, optionally one of
`kubectl get nodes -o yaml`) and prints the `shapeTopologies` entry the node's ResourceSlices describe
(oke_gpu_rdma/nodes/topology_from_slices.py says what it reads), ready to paste under
`oke-gpu-rdma:shapeTopologies` in a stack file. A root with GPUs and no rail (BM.GPU.GB200-v3.4) gets
the NUMA node of its PCI domain's rails and says so (`numaFrom: pciDomain`). A dump that lacks what the
topology needs is one line on stderr naming what is missing, and exit status 1.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from oke_gpu_rdma.common import yamltext
from oke_gpu_rdma.common.errors import ResourceSliceDumpError
from oke_gpu_rdma.nodes.topology_from_slices import (
    DUMP_COMMAND,
    NODES_COMMAND,
    load_dump,
    node_shapes,
    topology_entry,
)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="make topology", description="Print the shapeTopologies entry of a node's ResourceSlices."
    )
    parser.add_argument("slices", help=f"the output of `{DUMP_COMMAND}`")
    parser.add_argument(
        "--node", help="the node to read (default: every node with DRANET or GPU driver slices)"
    )
    parser.add_argument("--shape", help="the node's shape (its node.kubernetes.io/instance-type label)")
    parser.add_argument(
        "--nodes", help=f"the output of `{NODES_COMMAND}`: the nodes' shapes from their labels"
    )
    args = parser.parse_args(argv)
    texts: dict[str, str] = {}
    for key, given, command in (("SLICES", args.slices, DUMP_COMMAND), ("NODES", args.nodes, NODES_COMMAND)):
        if given is None:
            continue
        try:
            texts[key] = Path(given).read_text()
        except OSError as err:
            print(
                f"error: {key}={given}: cannot read it ({err.strerror}); write it with `{command} > {given}`",
                file=sys.stderr,
            )
            return 1
    name = Path(args.slices).name
    try:
        labels = node_shapes(texts["NODES"], Path(args.nodes).name) if args.nodes else None
        shape, entry = topology_entry(load_dump(texts["SLICES"], name), name, args.node, args.shape, labels)
    except ResourceSliceDumpError as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    print(f"# {entry['source']}: paste under oke-gpu-rdma:shapeTopologies in stacks/Pulumi.<stack>.yaml")
    print(yamltext.dump({shape: entry}), end="")
    return 0


if __name__ == "__main__":
    sys.exit(main())
