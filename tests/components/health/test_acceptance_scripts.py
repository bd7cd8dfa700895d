"""The acceptance gates' own scripts (components/health/scripts/), run for real on the seeds' output.

The launchers of the acceptance MPIJobs run these files as they are (components/health/acceptance_jobs.py
writes them into the launcher), so a test here runs the same parsing and threshold logic a cluster
does. ssh (how the launcher reaches the workers, as mpirun does) is a stand-in on PATH that answers
with the seeds' rail maps and perftest's ib_write_bw report.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

from components.claims.rdma_workloads import SCRIPTS
from components.health.mpijob_specs import RAIL_CHECK, RAIL_GATE_FUNCTIONS, run_script
from oke_gpu_rdma.health.acceptance import SEED_NCCL_BUSBW_GBS, SEED_RAIL_GBPS

# seed 000, NCCL all_reduce_perf on 16 GPUs (2 x BM.GPU.B4.8), verbatim: the header and its two rows.
SEED_000_NCCL = """\
#       size         count      type   redop    root     time   algbw   busbw  #wrong     time   algbw   busbw  #wrong
  4294967296    1073741824     float     sum      -1  42529.3  100.99  189.35       0  42578.6  100.87  189.13       0
  8589934592    2147483648     float     sum      -1  84488.8  101.67  190.63       0  84502.1  101.65  190.60       0
"""
# seed 001, 1 VF per PF, verbatim.
SEED_001_NCCL = """\
#       size         count      type   redop    root     time   algbw   busbw  #wrong     time   algbw   busbw  #wrong
  4294967296    1073741824     float     sum      -1  42530.7  100.99  189.35       0  42573.0  100.88  189.16       0
  8589934592    2147483648     float     sum      -1  84524.1  101.63  190.55       0  84890.4  101.19  189.73       0
"""


def nccl_check(tmp_path: Path, minimum: float, output: str) -> subprocess.CompletedProcess[str]:
    log = tmp_path / "all_reduce.log"
    log.write_text(output)
    return subprocess.run(
        ["bash", str(SCRIPTS / "nccl-busbw-check.sh"), str(minimum), str(log)],
        capture_output=True,
        text=True,
        timeout=30,
    )


def test_nccl_gate_passes_the_seeds_run_at_the_default_threshold(tmp_path: Path) -> None:
    result = nccl_check(tmp_path, SEED_NCCL_BUSBW_GBS["dranet"][8], "NCCL version 2.32.3\n" + SEED_000_NCCL)
    assert result.returncode == 0, result.stdout
    assert result.stdout.splitlines() == [
        "NCCL all_reduce busbw at 8589934592 bytes: 190.63 GB/s out of place, 190.60 GB/s in place "
        "(threshold 190.13 GB/s)",
        "NCCL all_reduce: PASS",
    ]
    assert nccl_check(tmp_path, SEED_NCCL_BUSBW_GBS["sriov"][8], SEED_001_NCCL).returncode == 0


def test_nccl_gate_fails_below_the_threshold(tmp_path: Path) -> None:
    result = nccl_check(tmp_path, 190.70, SEED_000_NCCL)
    assert result.returncode == 1
    assert (
        result.stdout.splitlines()[-1]
        == "NCCL all_reduce: FAIL: 190.63 GB/s is below the threshold 190.7 GB/s"
    )
    # seed 000, run 1 with GPUs from the device plugin: 4.27 GB/s for a 4-GPU job (its row, from the table).
    device_plugin = SEED_000_NCCL.splitlines()[0] + (
        "\n  8589934592    2147483648     float     sum      -1  4023370.2    2.14    4.27       0"
        "  2835062.6    3.03    6.06       0\n"
    )
    result = nccl_check(tmp_path, SEED_NCCL_BUSBW_GBS["dranet"][4], device_plugin)
    assert result.returncode == 1
    assert "FAIL: 4.27 GB/s is below the threshold 96.29 GB/s" in result.stdout


def test_nccl_gate_fails_on_wrong_results_or_no_result(tmp_path: Path) -> None:
    wrong = SEED_000_NCCL.replace("190.63       0", "190.63       3")
    result = nccl_check(tmp_path, 190.13, wrong)
    assert (
        result.returncode == 1 and result.stdout.splitlines()[-1] == "NCCL all_reduce: FAIL: 3 wrong results"
    )
    crashed = "[1,0]<stderr>: NCCL WARN NET/IB : Got completion with error 12\n"
    result = nccl_check(tmp_path, 190.13, crashed)
    assert result.returncode == 1
    assert result.stdout == "NCCL all_reduce: FAIL: no result row in the output\n"


# --- the rail gates: ssh stands in for the two workers ---------------------------------------------------

# perftest's ib_write_bw client report (-F --report_gbits -D 5); the figure is BW average, column 4.
IB_WRITE_BW = """\
---------------------------------------------------------------------------------------
                    RDMA_Write BW Test
 Dual-port       : OFF          Device         : {device}
 Number of qps   : 1            Transport type : IB
 Connection type : RC           Using SRQ      : OFF
 TX depth        : 128
 CQ Moderation   : 100
 Mtu             : 4096[B]
 Link type       : Ethernet
 GID index       : 5
 Max inline data : 0[B]
 rdma_cm QPs     : OFF
 Data ex. method : Ethernet
---------------------------------------------------------------------------------------
 #bytes     #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   MsgRate[Mpps]
 65536      923507           0.00               {gbps}                 0.184784
---------------------------------------------------------------------------------------
"""

FAKE_SSH = """#!/bin/bash
# Stand-in for ssh from the launcher to a worker: logs the call, answers from $FAKE.
while [ "$1" = -o ]; do shift 2; done
host=$1
shift
echo "$host $*" >> "$FAKE/calls"
case "$*" in
  *rail-map.sh*|*/sys/class/net/net*) cat "$FAKE/$host.map" ;;
  *ib_write_bw*)
    last=${!#}
    case "$last" in
      [0-9]*.[0-9]*) dev=$(sed -n 's/.*-d \\([^ ]*\\) .*/\\1/p' <<<"$*"); [ -f "$FAKE/bw.$dev" ] && cat "$FAKE/bw.$dev" ;;
    esac ;;
esac
exit 0
"""


def seed_000_rail_map(node: int) -> str:
    """rail-map.sh on a seed 000 pod: rdmaN, the child's address in its rail's /19, device, GID index 5."""
    lines = []
    for rail in range(16):
        block = 32 * rail + 2 + node
        lines.append(f"rdma{rail} 10.{208 + block // 256}.{block % 256}.66 mlx5_{(rail + 5) % 18} 5")
    return "\n".join(lines) + "\n"


def fake_workers(tmp_path: Path, server_map: str, client_map: str, gbps: dict[str, str]) -> dict[str, str]:
    fake = tmp_path / "fake"
    (fake / "bin").mkdir(parents=True)
    ssh = fake / "bin" / "ssh"
    ssh.write_text(FAKE_SSH)
    ssh.chmod(0o755)
    (fake / "server-0.map").write_text(server_map)
    (fake / "worker-1.map").write_text(client_map)
    for device, figure in gbps.items():
        (fake / f"bw.{device}").write_text(IB_WRITE_BW.format(device=device, gbps=figure))
    return {"PATH": f"{fake / 'bin'}:/usr/bin:/bin", "FAKE": str(fake)}


def run_gate(script: str, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["bash", str(SCRIPTS / script), *args], capture_output=True, text=True, env=env, timeout=120
    )


def with_sleep_stub(env: dict[str, str]) -> dict[str, str]:
    """The scripts give each ib_write_bw server 2 s to listen, as the seed's did; the stand-in needs none."""
    stub = Path(env["FAKE"]) / "bin" / "sleep"
    stub.write_text("#!/bin/sh\nexit 0\n")
    stub.chmod(0o755)
    return env


def client_devices(client_map: str) -> list[str]:
    return [line.split()[2] for line in client_map.splitlines()]


def test_rail_gate_passes_seed_000s_rails(tmp_path: Path) -> None:
    server, client = seed_000_rail_map(0), seed_000_rail_map(1)
    figures = {dev: ("96.87" if i % 2 else "96.88") for i, dev in enumerate(client_devices(client))}
    env = with_sleep_stub(fake_workers(tmp_path, server, client, figures))
    threshold = str(SEED_RAIL_GBPS["dranet"])
    result = run_gate("rail-bandwidth.sh", env, threshold, "server-0", "worker-1", "/opt/rdma-dranet")
    assert result.returncode == 0, result.stdout + result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == "rdma0 mlx5_5 -> 10.208.2.66 96.88 Gb/s"
    assert lines[1] == "rdma1 mlx5_6 -> 10.208.34.66 96.87 Gb/s"
    assert len(lines) == 17 and lines[-1] == "ib_write_bw per rail: PASS (16 rails, threshold 96.87 Gb/s)"
    calls = (tmp_path / "fake" / "calls").read_text().splitlines()
    # Each rail: the server on its own device and GID, the client to the server's address on the same rail.
    assert "server-0 ib_write_bw -d mlx5_5 -x 5 -F --report_gbits -D 5 --tclass=41 -p 18515" in calls
    assert (
        "worker-1 ib_write_bw -d mlx5_5 -x 5 -F --report_gbits -D 5 --tclass=41 -p 18515 10.208.2.66" in calls
    )
    assert calls[0] == "server-0 /opt/rdma-dranet/rail-map.sh"


def test_rail_gate_fails_a_slow_rail_a_rail_without_gid_and_a_rail_without_result(tmp_path: Path) -> None:
    server = seed_000_rail_map(0)
    client = seed_000_rail_map(1).replace("mlx5_9 5", "mlx5_9 none")  # rdma4: no RoCE v2 GID
    devices = client_devices(client)
    figures = {dev: "96.88" for dev in devices}
    figures[devices[3]] = "43.20"  # seed 001: traffic class 0
    del figures[devices[7]]  # rdma7: ib_write_bw printed no report
    env = with_sleep_stub(fake_workers(tmp_path, server, client, figures))
    result = run_gate("rail-bandwidth.sh", env, "96.87", "server-0", "worker-1", "/opt/rdma-dranet")
    assert result.returncode == 1
    lines = result.stdout.splitlines()
    assert "rdma3 mlx5_8 -> 10.208.98.66 43.20 Gb/s: FAIL: below the threshold 96.87 Gb/s" in lines
    assert "rdma4: FAIL: no RoCE v2 GID for the child address; is the rail claimed?" in lines
    assert "rdma7 mlx5_12 -> 10.208.226.66: FAIL: no result" in lines
    assert "rdma0 mlx5_5 -> 10.208.2.66 96.88 Gb/s" in lines
    assert lines[-1] == "ib_write_bw per rail: FAIL (16 rails, threshold 96.87 Gb/s)"


def test_the_launchers_copy_of_the_rail_gate_runs_with_the_functions_it_sources(tmp_path: Path) -> None:
    # What the launcher runs: the files written by run_script, in a folder of their own (/tmp there).
    server, client = seed_000_rail_map(0), seed_000_rail_map(1)
    env = with_sleep_stub(
        fake_workers(tmp_path, server, client, dict.fromkeys(client_devices(client), "96.88"))
    )
    launcher = tmp_path / "launcher"
    launcher.mkdir()
    lines = run_script(RAIL_CHECK, "96.87 server-0 worker-1 /opt/rdma-dranet", [RAIL_GATE_FUNCTIONS])
    result = subprocess.run(
        ["bash", "-c", lines.replace("/tmp/", f"{launcher}/")],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert sorted(p.name for p in launcher.iterdir()) == ["rail-bandwidth.sh", "rail-gate.sh"]
    assert result.stdout.splitlines()[-1] == "ib_write_bw per rail: PASS (16 rails, threshold 96.87 Gb/s)"


def test_rail_gate_fails_without_rails(tmp_path: Path) -> None:
    env = with_sleep_stub(fake_workers(tmp_path, "", "", {}))
    result = run_gate("rail-bandwidth.sh", env, "96.87", "server-0", "worker-1", "/opt/rdma-dranet")
    assert result.returncode == 1
    assert result.stdout == "ib_write_bw per rail: FAIL: server-0 holds no rail\n"


# seed 001's rail PFs in rail order (rails-vf.sh) and a VF of each in a pod: "<PF> <netN> <address> <device>".
SEED_001_PFS = "0c:00.0 0c:00.1 16:00.0 16:00.1 47:00.0 47:00.1 4b:00.0 4b:00.1 89:00.0 89:00.1 93:00.0 93:00.1 c3:00.0 c3:00.1 d1:00.0 d1:00.1"


def vf_map(node: int) -> str:
    return "".join(
        f"0000:{pf} net{i + 1} 192.168.{node}.{10 + i} mlx5_{18 + i}\n"
        for i, pf in enumerate(SEED_001_PFS.split())
    )


def test_vf_rail_gate_pairs_vfs_by_pf_and_holds_each_to_the_threshold(tmp_path: Path) -> None:
    figures = {f"mlx5_{18 + i}": "96.86" for i in range(16)}
    env = with_sleep_stub(fake_workers(tmp_path, vf_map(0), vf_map(1), figures))
    threshold = str(SEED_RAIL_GBPS["sriov"])
    result = run_gate("vf-rail-bandwidth.sh", env, threshold, "server-0", "worker-1")
    assert result.returncode == 0, result.stdout + result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == "0000:0c:00.0 net1 mlx5_18 -> 192.168.0.10 96.86 Gb/s"
    assert lines[-1] == "ib_write_bw per rail: PASS (16 rails, threshold 96.86 Gb/s)"
    calls = (tmp_path / "fake" / "calls").read_text().splitlines()
    assert (
        "worker-1 ib_write_bw -d mlx5_18 -x 3 -F --report_gbits -D 5 --tclass=41 -p 18515 192.168.0.10"
        in calls
    )
    # seed 001's exclusive mode without rdmaQoS: 43.20 to 59.45 Gb/s per rail.
    figures["mlx5_20"] = "59.45"
    env = with_sleep_stub(fake_workers(tmp_path / "slow", vf_map(0), vf_map(1), figures))
    result = run_gate("vf-rail-bandwidth.sh", env, threshold, "server-0", "worker-1")
    assert result.returncode == 1
    assert "0000:16:00.0 net3 mlx5_20 -> 192.168.0.12 59.45 Gb/s: FAIL: below the threshold 96.86 Gb/s" in (
        result.stdout.splitlines()
    )
