"""Write the facts of a node's published ResourceSlices as a `kubectl get resourceslices -o yaml` fixture.

DRANET publishes the ResourceSlices of a live BM.GPU.GB200-v3.4 node (the NVIDIA GPU DRA driver's and its
own) in kubernetes-sigs/dranet `examples/oci_oke_examples/BM.GPU.GB200-v3.4/resourceslice-gpu.yaml` and
`resourceslice-dranet.yaml`. This reads them from a snapshot of that repository (a git directory, at a
commit) and writes one List with only what this project reads of them: per device its name, the
attributes `make topology` and the claim templates' selectors use, and the GPU memory capacity. MACs,
UUIDs, driver versions and the (redacted) IMDS ids are left out. The output is
tests/fixtures/resourceslices/gb200-v3.4-published.yaml; rerunning the tool on that file gives it back.

    python -m tools.published_slices --git-dir /work/.mirror/kubernetes-sigs+dranet/repo > <file>
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Final

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from oke_gpu_rdma.common import yamltext
from oke_gpu_rdma.drivers import attributes as attr
from oke_gpu_rdma.drivers import dranet, nvidia_gpu

REPOSITORY: Final = "kubernetes-sigs/dranet"
COMMIT: Final = "f258477cbea0551b7ad239e3873a997a7a3d116b"
DIRECTORY: Final = "examples/oci_oke_examples/BM.GPU.GB200-v3.4"
FILES: Final = ("resourceslice-gpu.yaml", "resourceslice-dranet.yaml")

# What is kept of each driver's devices: the attributes make topology reads (oke_gpu_rdma/
# topology_from_slices.py) and the templates select on (oke_gpu_rdma/claims/pairing.py), and the capacity.
KEPT_ATTRIBUTES: Final = {
    nvidia_gpu.DRIVER: (nvidia_gpu.GPU_TYPE, nvidia_gpu.GPU_PRODUCT_NAME, attr.PCI_BUS_ID, attr.PCIE_ROOT),
    dranet.DRIVER: (
        dranet.IF_NAME,
        dranet.RDMA,
        dranet.VIRTUAL,
        dranet.PCI_ADDRESS,
        dranet.NUMA_NODE,
        dranet.RDMA_DEVICE,
        dranet.OKE_SHAPE,
        attr.PCIE_ROOT,
    ),
}
KEPT_CAPACITY: Final = {nvidia_gpu.DRIVER: (nvidia_gpu.GPU_MEMORY_CAPACITY,), dranet.DRIVER: ()}


def _device(driver: str, raw: Mapping[str, Any]) -> dict[str, Any]:
    kept: dict[str, Any] = {"name": raw["name"]}
    attributes = raw.get("attributes") or {}
    kept["attributes"] = {k: attributes[k] for k in KEPT_ATTRIBUTES[driver] if k in attributes}
    capacity = {k: raw["capacity"][k] for k in KEPT_CAPACITY[driver] if k in (raw.get("capacity") or {})}
    if capacity:
        kept["capacity"] = capacity
    return kept


def facts(slices: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The List of ``slices`` with only the kept facts of each device."""
    items = []
    for item in slices:
        spec = item["spec"]
        driver = spec["driver"]
        items.append(
            {
                "apiVersion": item["apiVersion"],
                "kind": item["kind"],
                "metadata": {"name": item["metadata"]["name"]},
                "spec": {
                    "driver": driver,
                    "nodeName": spec["nodeName"],
                    "pool": spec["pool"],
                    "devices": [_device(driver, d) for d in spec["devices"]],
                },
            }
        )
    return {"apiVersion": "v1", "kind": "List", "items": items}


def header() -> str:
    lines = [
        "# The ResourceSlices of a live BM.GPU.GB200-v3.4 node (10.140.65.248) as kubernetes-sigs/dranet publishes",
        f"# them: {REPOSITORY}@{COMMIT}",
        *(f"# {DIRECTORY}/{name}" for name in FILES),
        "# Only the facts this project reads (device names, the attributes make topology and the templates use,",
        "# the GPU memory), written by `python -m tools.published_slices`, of which it is a fixed point",
        "# (tests/tools/test_published_slices.py). The DRANET slice lists the 8 RDMA NICs only (its comment says",
        "# the node also has eth0, eth1 and virtual interfaces); the GPU driver publishes no NUMA node.",
    ]
    return "\n".join(lines) + "\n"


def read(git_dir: str, commit: str = COMMIT) -> list[dict[str, Any]]:
    """The two published slices, from the repository snapshot at ``git_dir``."""
    found = []
    for name in FILES:
        text = subprocess.run(
            ["git", f"--git-dir={git_dir}", "show", f"{commit}:{DIRECTORY}/{name}"],
            check=True,
            capture_output=True,
            text=True,
        ).stdout
        found += [d for d in yaml.safe_load_all(text) if d]
    return found


def render(slices: Sequence[Mapping[str, Any]]) -> str:
    return header() + yamltext.dump(facts(slices))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="published_slices", description=__doc__.splitlines()[0])
    parser.add_argument("--git-dir", required=True, help=f"a git directory holding {REPOSITORY}")
    args = parser.parse_args(argv)
    try:
        slices = read(args.git_dir)
    except subprocess.CalledProcessError as err:
        print(f"error: {args.git_dir}: {err.stderr.strip()}", file=sys.stderr)
        return 1
    print(render(slices), end="")
    return 0


if __name__ == "__main__":
    sys.exit(main())
