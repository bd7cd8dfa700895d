"""rail-map.sh against a fake sysfs tree and a fake `ip` (components/health/scripts/rail-map.sh)."""

from __future__ import annotations

import ipaddress
import os
import subprocess
from pathlib import Path

from components.claims.rdma_workloads import SCRIPTS

# interface -> (IPv4 address or None, RDMA device, GID entries: index -> (type, address or None=unreadable))
NODE = {
    # The child of rdma0: the pod sees the RoCE v2 GID of its own address at index 5 (seed 000).
    "rdma0": ("10.208.2.66", "mlx5_5", {0: ("IB/RoCE v1", "10.208.2.66"), 5: ("RoCE v2", "10.208.2.66")}),
    "rdma1": ("10.208.34.66", "mlx5_6", {3: ("RoCE v2", None), 5: ("RoCE v2", "10.208.34.66")}),
    # Only a GID of another address: the device is known, the index is not trustworthy.
    "rdma2": ("10.208.66.66", "mlx5_7", {2: ("RoCE v2", "10.224.66.66")}),
    # Not configured yet: no address.
    "rdma10": (None, "mlx5_16", {}),
}


def mapped_gid(address: str) -> str:
    packed = ipaddress.IPv4Address(address).packed
    return "0000:0000:0000:0000:0000:ffff:" + f"{packed[0]:02x}{packed[1]:02x}:{packed[2]:02x}{packed[3]:02x}"


def build_sysfs(root: Path) -> None:
    for iface, (_, dev, gids) in NODE.items():
        (root / "class/net" / iface).mkdir(parents=True)
        port = root / "class/infiniband" / dev / "ports/1"
        for sub in ("gid_attrs/ndevs", "gid_attrs/types", "gids"):
            (port / sub).mkdir(parents=True)
        for index, (gid_type, address) in gids.items():
            if address is None:
                # The netdev lives in another namespace: reading its ndevs entry fails.
                (port / "gid_attrs/ndevs" / str(index)).mkdir()
            else:
                (port / "gid_attrs/ndevs" / str(index)).write_text(f"{iface}\n")
            (port / "gid_attrs/types" / str(index)).write_text(f"{gid_type}\n")
            (port / "gids" / str(index)).write_text(mapped_gid(address or "10.224.0.1") + "\n")
    (root / "class/net/eth0").mkdir(parents=True)


def fake_ip(bin_dir: Path) -> None:
    lines = [
        f'  {iface}) echo "4: {iface}    inet {address}/12 brd 10.223.255.255 scope global {iface}" ;;'
        for iface, (address, _, _) in NODE.items()
        if address
    ]
    script = (
        '#!/bin/bash\n# ip -4 -o addr show dev IFACE\ncase "$6" in\n' + "\n".join(lines) + "\n  *) ;;\nesac\n"
    )
    (bin_dir / "ip").write_text(script)
    (bin_dir / "ip").chmod(0o755)


def test_rail_map_reports_each_childs_device_and_gid_index(tmp_path: Path) -> None:
    sysfs, bin_dir = tmp_path / "sys", tmp_path / "bin"
    bin_dir.mkdir()
    build_sysfs(sysfs)
    fake_ip(bin_dir)
    env = {**os.environ, "SYSFS": str(sysfs), "PATH": f"{bin_dir}:{os.environ['PATH']}"}
    result = subprocess.run(
        ["bash", str(SCRIPTS / "rail-map.sh")],
        env=env,
        capture_output=True,
        text=True,
        check=True,
        timeout=30,
    )
    assert result.stdout.splitlines() == [
        "rdma0 10.208.2.66 mlx5_5 5",
        "rdma1 10.208.34.66 mlx5_6 5",
        "rdma2 10.208.66.66 mlx5_7 none",
        "rdma10 none none none",
    ]
    assert result.stderr == ""
