"""rail-health.sh against the recorded /sys trees of a healthy and a failing BM.GPU.B4.8 node
(tests/fixtures/sysfs/) and a fake kubectl that records what the agent would send."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from components.claims.rdma_workloads import SCRIPTS
from oke_gpu_rdma.drivers import dranet
from oke_gpu_rdma.health import health_marks as health
from oke_gpu_rdma.nodes.labels import POOL_LABEL, RAIL_UNHEALTHY_TAINT_KEY, RAILS_UNMARKED_LABEL
from oke_gpu_rdma.nodes.shape_catalog import CATALOG
from tests.components import fake_kubectl
from tests.fixtures import sysfs_b48

NODE = "10.140.64.7"
TOPOLOGY = CATALOG.info(sysfs_b48.SHAPE).topology
PCI = {ifname: pci for ifname, pci, _ in sysfs_b48.rails()}
MARK = {"key": RAIL_UNHEALTHY_TAINT_KEY, "value": health.RAIL_AGENT_MARK_VALUE, "effect": "NoSchedule"}


def device_of(ifname: str) -> str:
    """The DRANET device of a rail, as the slice model names it."""
    assert TOPOLOGY is not None
    slice_ = dranet.dranet_slice(TOPOLOGY, NODE)
    return next(d.name for d in slice_.devices if d.attributes.get(dranet.IF_NAME) == ifname)


@dataclass
class Agent:
    """One node's agent: its state directory survives between rounds, like the pod's emptyDir."""

    tmp: Path
    mode: str
    recovery_checks: int = 3
    recovery_seconds: int = 300
    rails_label: str = ""

    def __post_init__(self) -> None:
        self.kube = self.tmp / "kube"
        fake_kubectl.write_state(self.kube, {"nodes": [{"name": NODE, "taints": []}]})
        self.state = self.tmp / "state"
        self.kubectl = fake_kubectl.install(self.tmp / "bin")

    def env(self, sysfs: Path, now: int | None) -> dict[str, str]:
        env = {
            "PATH": os.environ["PATH"],
            "SYSFS": str(sysfs),
            "STATE_DIR": str(self.state),
            "KUBECTL": str(self.kubectl),
            "FAKE_KUBE": str(self.kube),
            "NODE_NAME": NODE,
            "MARK_MODE": self.mode,
            "TAINT_KEY": RAIL_UNHEALTHY_TAINT_KEY,
            "TAINT_VALUE": health.RAIL_AGENT_MARK_VALUE,
            "DRIVER": dranet.DRIVER,
            "RAILS": health.agent_rails(TOPOLOGY) if TOPOLOGY is not None else "",
            "RECOVERY_CHECKS": str(self.recovery_checks),
            "RECOVERY_SECONDS": str(self.recovery_seconds),
            "ERROR_COUNTERS": " ".join(health.DEFAULT_ERROR_COUNTERS),
            "ERROR_THRESHOLD": "0",
            "RAILS_LABEL": self.rails_label,
            "POOL_LABEL": POOL_LABEL,
            "POOLS": "gpu-b4-a gpu-b4-b",
        }
        if now is not None:
            env |= {"NOW": str(now), "ONCE": "1"}
        return env

    def round(self, sysfs: Path, now: int, timeout: float = 60) -> list[str]:
        """One check of every rail at time ``now``; the agent's log lines."""
        env = self.env(sysfs, now)
        result = subprocess.run(
            ["bash", str(SCRIPTS / "rail-health.sh")],
            env=env,
            capture_output=True,
            text=True,
            timeout=timeout,
        )
        assert result.returncode == 0, result.stderr
        assert result.stderr == ""
        return result.stdout.splitlines()

    def calls(self) -> list[dict[str, Any]]:
        return fake_kubectl.calls(self.kube)

    def writes(self) -> list[list[str]]:
        """The calls that change the cluster (create, delete, taint)."""
        return [c["args"] for c in self.calls() if c["args"][0] in ("create", "delete", "taint", "label")]

    def node_labels(self) -> dict[str, str]:
        labels: dict[str, str] = fake_kubectl.read_state(self.kube)["nodes"][0].get("labels", {})
        return labels

    def rules(self) -> dict[str, dict[str, Any]]:
        return dict(sorted(fake_kubectl.read_state(self.kube)["devicetaintrules"].items()))

    def node_taints(self) -> list[dict[str, str]]:
        taints: list[dict[str, str]] = fake_kubectl.read_state(self.kube)["nodes"][0]["taints"]
        return taints

    def set_node_taints(self, taints: list[dict[str, str]]) -> None:
        state = fake_kubectl.read_state(self.kube)
        state["nodes"][0]["taints"] = taints
        fake_kubectl.write_state(self.kube, state)


def rule_name(ifname: str) -> str:
    return f"rail-health.{NODE}.{device_of(ifname)}"


def copy_tree(source: Path, target: Path) -> Path:
    if target.exists():
        shutil.rmtree(target)
    shutil.copytree(source, target, symlinks=True)
    return target


def set_carrier_changes(tree: Path, ifname: str, count: int) -> None:
    (tree / "class/net" / ifname / "carrier_changes").write_text(f"{count}\n")


def test_the_recorded_trees_are_what_the_builder_writes(tmp_path: Path) -> None:
    for name, failing in (("b48-healthy", False), ("b48-failing", True)):
        built = tmp_path / name
        sysfs_b48.write_tree(built, failing)
        recorded = sysfs_b48.TREES / name

        def listing(root: Path) -> dict[str, str]:
            return {
                str(p.relative_to(root)): (f"-> {os.readlink(p)}" if p.is_symlink() else p.read_text())
                for p in sorted(root.rglob("*"))
                if p.is_symlink() or p.is_file()
            }

        assert listing(recorded) == listing(built), f"run python -m tests.fixtures.sysfs_b48 ({name})"
        # git keeps no empty directory: the trees hold none, so a checkout reads as the builder wrote them.
        assert [
            p for p in built.rglob("*") if p.is_dir() and not p.is_symlink() and not any(p.iterdir())
        ] == []


def test_the_agent_names_each_rail_as_dranet_names_its_device() -> None:
    assert TOPOLOGY is not None
    for ifname, pci, _ in sysfs_b48.rails():
        assert device_of(ifname) == "pci-" + pci.replace(":", "-").replace(".", "-")
    assert health.agent_rails(TOPOLOGY).split()[:2] == ["rdma0=0000:0c:00.0", "rdma1=0000:0c:00.1"]
    assert len(health.agent_rails(TOPOLOGY).split()) == 16


def test_a_healthy_node_is_never_marked(tmp_path: Path) -> None:
    agent = Agent(tmp_path, "device")
    assert agent.round(sysfs_b48.HEALTHY, 1000) == []
    assert agent.round(sysfs_b48.HEALTHY, 1030) == []
    assert agent.writes() == []
    # The first round looked for marks an earlier pod of the agent left, one read per rail.
    reads = [c["args"] for c in agent.calls()]
    assert reads == [
        ["get", "devicetaintrule", rule_name(ifname), "-o", "name", "--ignore-not-found"]
        for ifname, _, _ in sysfs_b48.rails()
    ]


def test_each_failing_rail_gets_a_device_taint_rule_on_its_dranet_device(tmp_path: Path) -> None:
    agent = Agent(tmp_path, "device")
    agent.round(sysfs_b48.HEALTHY, 1000)
    lines = agent.round(sysfs_b48.FAILING, 1030)
    assert sorted(agent.rules()) == sorted(rule_name(i) for i in sysfs_b48.FAILING_RAILS)
    for ifname in sysfs_b48.FAILING_RAILS:
        assert agent.rules()[rule_name(ifname)] == {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "DeviceTaintRule",
            "metadata": {
                "name": rule_name(ifname),
                "labels": {"oke-gpu-rdma/rail-health-node": NODE},
                # The node owns the rule: the garbage collector deletes it with the node.
                "ownerReferences": [{"apiVersion": "v1", "kind": "Node", "name": NODE, "uid": f"uid-{NODE}"}],
            },
            "spec": {
                "deviceSelector": {"driver": "dra.net", "pool": NODE, "device": device_of(ifname)},
                "taint": {"key": RAIL_UNHEALTHY_TAINT_KEY, "value": "rail-agent", "effect": "NoSchedule"},
            },
        }
    said = {line.split(": ")[1]: line for line in lines}
    assert "operstate down" in said["rdma3"] and "no carrier" in said["rdma3"]
    assert "port state 1: DOWN" in said["rdma3"] and "phys_state 3: Disabled" in said["rdma3"]
    assert "link flapped (2 carrier changes)" in said["rdma5"]
    assert "no IPv4 address on rdma7" in said["rdma7"]
    assert f"PCI function {PCI['rdma11']} is gone" in said["rdma11"]
    assert "counters/symbol_error +12" in said["rdma14"]
    assert set(said) == set(sysfs_b48.FAILING_RAILS)
    # The node itself is never touched in device mode, and nothing but DeviceTaintRules is written.
    assert all(w[:2] == ["create", "-f"] for w in agent.writes())


def test_a_first_look_at_a_failing_node_marks_what_one_reading_shows(tmp_path: Path) -> None:
    agent = Agent(tmp_path, "device")
    agent.round(sysfs_b48.FAILING, 1000)
    # Flapping and error growth need a reading before; the down, address-less and lost rails do not.
    assert sorted(agent.rules()) == sorted(rule_name(i) for i in ("rdma3", "rdma7", "rdma11"))


def test_a_flapping_rail_stays_marked_and_is_lifted_only_after_recovery(tmp_path: Path) -> None:
    agent = Agent(tmp_path, "device", recovery_checks=3, recovery_seconds=300)
    tree = copy_tree(sysfs_b48.HEALTHY, tmp_path / "sys")
    agent.round(tree, 0)
    changes = 2
    now = 0
    # The link flaps every other check for ten minutes: marked at the first flap, kept all along.
    for step in range(1, 21):
        now = step * 30
        if step % 2:
            changes += 2
            set_carrier_changes(tree, "rdma5", changes)
        agent.round(tree, now)
        assert list(agent.rules()) == [rule_name("rdma5")], f"check {step}"
    last_flap = 19 * 30
    # Steady again: three good checks come before five minutes have passed, so the mark stays until then.
    for step in range(21, 40):
        now = step * 30
        lines = agent.round(tree, now)
        if now - last_flap < 300:
            assert list(agent.rules()) == [rule_name("rdma5")], f"check {step}"
        else:
            assert agent.rules() == {}
            assert lines == ["rail-health 10.140.64.7: rdma5: recovered: mark lifted"]
            break
    assert now - last_flap == 300
    deletes = [w for w in agent.writes() if w[0] == "delete"]
    assert deletes == [["delete", "devicetaintrule", rule_name("rdma5"), "--ignore-not-found"]]
    creates = [w for w in agent.writes() if w[0] == "create"]
    assert len(creates) == 1  # marked once, not once per flap


def test_recovery_needs_the_good_checks_too(tmp_path: Path) -> None:
    agent = Agent(tmp_path, "device", recovery_checks=4, recovery_seconds=0)
    agent.round(sysfs_b48.FAILING, 0)
    for step in range(1, 4):
        agent.round(sysfs_b48.HEALTHY, step * 30)
        assert rule_name("rdma3") in agent.rules()
    agent.round(sysfs_b48.HEALTHY, 120)
    assert agent.rules() == {}


def test_a_restarted_agent_keeps_the_marks_it_left(tmp_path: Path) -> None:
    agent = Agent(tmp_path, "device", recovery_checks=2, recovery_seconds=120)
    agent.round(sysfs_b48.FAILING, 0)
    shutil.rmtree(agent.state)  # a new pod: a fresh emptyDir
    agent.round(sysfs_b48.HEALTHY, 600)
    agent.round(sysfs_b48.HEALTHY, 630)
    assert sorted(agent.rules()) == sorted(rule_name(i) for i in ("rdma3", "rdma7", "rdma11"))
    agent.round(sysfs_b48.HEALTHY, 720)
    assert agent.rules() == {}


def test_on_a_cluster_without_device_taint_rules_the_whole_node_is_marked(tmp_path: Path) -> None:
    agent = Agent(tmp_path, "node", recovery_checks=2, recovery_seconds=60)
    agent.round(sysfs_b48.HEALTHY, 0)
    assert agent.writes() == []
    lines = agent.round(sysfs_b48.FAILING, 30)
    assert agent.node_taints() == [
        {"key": RAIL_UNHEALTHY_TAINT_KEY, "value": "rail-agent", "effect": "NoSchedule"}
    ]
    assert lines[-1] == f"rail-health {NODE}: node marked ({RAIL_UNHEALTHY_TAINT_KEY}=rail-agent:NoSchedule)"
    agent.round(sysfs_b48.FAILING, 60)
    agent.round(sysfs_b48.HEALTHY, 90)
    assert agent.node_taints() != []  # one good check, 60 s after the last bad one: not yet
    agent.round(sysfs_b48.HEALTHY, 120)
    assert agent.node_taints() == []
    assert agent.writes() == [
        ["taint", "node", NODE, f"{RAIL_UNHEALTHY_TAINT_KEY}=rail-agent:NoSchedule"],
        ["taint", "node", NODE, f"{RAIL_UNHEALTHY_TAINT_KEY}:NoSchedule-"],
    ]


def test_another_checkers_node_mark_is_neither_doubled_nor_lifted(tmp_path: Path) -> None:
    agent = Agent(tmp_path, "node", recovery_checks=1, recovery_seconds=0)
    theirs = {"key": RAIL_UNHEALTHY_TAINT_KEY, "value": "bandwidth-check", "effect": "NoSchedule"}
    agent.set_node_taints([theirs])
    agent.round(sysfs_b48.FAILING, 0)
    agent.round(sysfs_b48.HEALTHY, 30)
    agent.round(sysfs_b48.HEALTHY, 60)
    assert agent.node_taints() == [theirs]
    assert agent.writes() == []


@pytest.mark.parametrize("mode", ["device", "node"])
def test_the_agent_never_evicts_and_never_touches_pods(tmp_path: Path, mode: str) -> None:
    agent = Agent(tmp_path, mode, recovery_checks=1, recovery_seconds=0)
    for step, tree in enumerate([sysfs_b48.HEALTHY, sysfs_b48.FAILING, sysfs_b48.HEALTHY, sysfs_b48.HEALTHY]):
        agent.round(tree, step * 30)
    sent = json.dumps(agent.calls())
    assert "NoExecute" not in sent
    kinds = {c["args"][1] for c in agent.calls() if c["args"][0] != "create"}
    assert kinds <= {"devicetaintrule", "node"}


def test_a_rail_handed_to_a_pod_is_left_alone_and_one_without_a_driver_is_marked(tmp_path: Path) -> None:
    agent = Agent(tmp_path, "device")
    tree = copy_tree(sysfs_b48.HEALTHY, tmp_path / "sys")
    agent.round(tree, 0)
    # rdma2's interface leaves the host's namespace (DRANET moved it into a pod); its function stays bound.
    shutil.rmtree(tree / "class/net/rdma2")
    # rdma9's driver let go of its function: no interface either.
    shutil.rmtree(tree / "class/net/rdma9")
    (tree / "bus/pci/devices" / PCI["rdma9"] / "driver").unlink()
    lines = agent.round(tree, 30)
    assert lines == [
        f"rail-health {NODE}: rdma9: bad (PCI function {PCI['rdma9']} has no driver bound (no interface)): marked"
    ]
    assert list(agent.rules()) == [rule_name("rdma9")]


def test_a_restarted_agent_that_cannot_read_its_marks_tries_again_before_it_forgets_one(
    tmp_path: Path,
) -> None:
    agent = Agent(tmp_path, "device", recovery_checks=2, recovery_seconds=0)
    agent.round(sysfs_b48.FAILING, 0)
    shutil.rmtree(agent.state)
    (agent.kube / "down").touch()
    lines = agent.round(sysfs_b48.HEALTHY, 30)
    assert lines == [
        f"rail-health {NODE}: could not read DeviceTaintRule {rule_name('rdma0')}: {fake_kubectl.REFUSED}"
    ]
    (agent.kube / "down").unlink()
    agent.round(sysfs_b48.HEALTHY, 60)  # adopts the three marks; one good check of the two
    assert sorted(agent.rules()) == sorted(rule_name(i) for i in ("rdma3", "rdma7", "rdma11"))
    agent.round(sysfs_b48.HEALTHY, 90)
    assert agent.rules() == {}


def test_in_device_mode_the_node_label_says_whether_any_rail_is_marked(tmp_path: Path) -> None:
    """Issue 34 item 4: Kueue's TAS does not see DeviceTaintRules, so the agent keeps the node label its
    flavors select: false while it marks a rail, true again once every mark is lifted, written only on a
    change."""
    agent = Agent(tmp_path, "device", recovery_checks=2, recovery_seconds=0, rails_label=RAILS_UNMARKED_LABEL)
    lines = agent.round(sysfs_b48.HEALTHY, 0)
    assert agent.node_labels() == {RAILS_UNMARKED_LABEL: "true"}
    assert lines == [f"rail-health {NODE}: node labelled {RAILS_UNMARKED_LABEL}=true"]
    agent.round(sysfs_b48.HEALTHY, 30)
    assert [w for w in agent.writes() if w[0] == "label"] == [
        ["label", "node", NODE, "--overwrite", f"{RAILS_UNMARKED_LABEL}=true"]
    ]
    agent.round(sysfs_b48.FAILING, 60)
    assert agent.node_labels() == {RAILS_UNMARKED_LABEL: "false"}
    assert sorted(agent.rules()) == sorted(rule_name(i) for i in sysfs_b48.FAILING_RAILS)
    agent.round(sysfs_b48.HEALTHY, 90)  # one good check of the two: still marked
    assert agent.node_labels() == {RAILS_UNMARKED_LABEL: "false"}
    agent.round(sysfs_b48.HEALTHY, 120)
    assert agent.rules() == {} and agent.node_labels() == {RAILS_UNMARKED_LABEL: "true"}
    # The node's taints are never touched.
    assert agent.node_taints() == []


def test_an_unanswered_read_of_the_label_writes_nothing(tmp_path: Path) -> None:
    agent = Agent(tmp_path, "device", rails_label=RAILS_UNMARKED_LABEL)
    agent.round(sysfs_b48.HEALTHY, 0)
    (agent.kube / "down").touch()
    lines = agent.round(sysfs_b48.FAILING, 30)
    assert f"rail-health {NODE}: could not read node label {RAILS_UNMARKED_LABEL}" in lines
    (agent.kube / "down").unlink()
    assert agent.node_labels() == {RAILS_UNMARKED_LABEL: "true"}
    agent.round(sysfs_b48.FAILING, 60)  # answered again: the marks and the label follow
    assert agent.node_labels() == {RAILS_UNMARKED_LABEL: "false"}


def test_without_the_label_setting_the_node_is_never_labelled_and_read_once_for_its_uid(
    tmp_path: Path,
) -> None:
    agent = Agent(tmp_path, "device")
    agent.round(sysfs_b48.FAILING, 0)
    agent.round(sysfs_b48.FAILING, 30)
    assert [c["args"] for c in agent.calls() if c["args"][:2] in (["get", "node"], ["label", "node"])] == [
        ["get", "node", NODE, "-o", "jsonpath={.metadata.uid}"]
    ]


def test_a_restarted_node_mode_agent_that_cannot_read_its_mark_keeps_it_until_recovery(
    tmp_path: Path,
) -> None:
    """Issue 35 defect 1: a failed read of the node's mark is not "no mark" (docs/rail-agent-faults.md promises a retry):
    the restarted agent adopts the mark once it can read it, and waits out the recovery before lifting it."""
    agent = Agent(tmp_path, "node", recovery_checks=2, recovery_seconds=300)
    agent.round(sysfs_b48.FAILING, 0)
    assert agent.node_taints() == [MARK]
    shutil.rmtree(agent.state)  # the pod restarted: its emptyDir is new
    (agent.kube / "down").touch()
    lines = agent.round(sysfs_b48.HEALTHY, 30)
    assert lines == [
        f"rail-health {NODE}: could not read the node's mark: {fake_kubectl.REFUSED}; trying again next check"
    ]
    (agent.kube / "down").unlink()
    agent.round(sysfs_b48.HEALTHY, 60)
    agent.round(sysfs_b48.HEALTHY, 90)  # two good checks, but 30 s since the adoption: kept
    assert agent.node_taints() == [MARK]
    agent.round(sysfs_b48.HEALTHY, 360)
    assert agent.node_taints() == []


def test_an_admin_taint_of_another_effect_under_the_key_does_not_block_the_mark(tmp_path: Path) -> None:
    """Issue 35 defect 3: the node's mark is the NoSchedule taint under the key; an admin's PreferNoSchedule
    taint under the same key is neither taken for it nor touched."""
    agent = Agent(tmp_path, "node", recovery_checks=1, recovery_seconds=0)
    admin = {"key": RAIL_UNHEALTHY_TAINT_KEY, "value": "admin", "effect": "PreferNoSchedule"}
    agent.set_node_taints([admin])
    agent.round(sysfs_b48.FAILING, 0)
    assert agent.node_taints() == [admin, MARK]
    agent.round(sysfs_b48.HEALTHY, 30)
    assert agent.node_taints() == [admin]


def test_a_value_less_taint_under_the_key_is_not_retried_every_round(tmp_path: Path) -> None:
    """Issue 35 defect 3: a NoSchedule taint under the key without a value already keeps pods off the node and
    is not the agent's: it adds nothing (kubectl would refuse a second taint of that key and effect) and lifts
    nothing."""
    agent = Agent(tmp_path, "node", recovery_checks=1, recovery_seconds=0)
    theirs = {"key": RAIL_UNHEALTHY_TAINT_KEY, "effect": "NoSchedule"}
    agent.set_node_taints([theirs])
    for step, tree in enumerate([sysfs_b48.FAILING, sysfs_b48.FAILING, sysfs_b48.HEALTHY]):
        agent.round(tree, step * 30)
    assert agent.node_taints() == [theirs]
    assert agent.writes() == []


def rename(tree: Path, ifname: str, new: str) -> None:
    """The rail's interface renamed in the host's namespace (udev, an admin's ip link set name): its class/net
    entry, its function's net/ entry and its GIDs' netdev move to the new name."""
    (tree / "class/net" / ifname).rename(tree / "class/net" / new)
    link = tree / "bus/pci/devices" / PCI[ifname] / "net"
    (link / ifname).unlink()
    (link / new).symlink_to(Path("../../../../../class/net") / new)
    for ndev in tree.glob("class/infiniband/*/ports/1/gid_attrs/ndevs/*"):
        if ndev.read_text().strip() == ifname:
            ndev.write_text(new + "\n")


def take_down(tree: Path, ifname: str) -> None:
    (tree / "class/net" / ifname / "operstate").write_text("down\n")
    (tree / "class/net" / ifname / "carrier").write_text("0\n")


def hand_to_pod(tree: Path, ifname: str) -> None:
    """DRANET moves the rail's interface into a pod's namespace: the host's sysfs lists it nowhere."""
    shutil.rmtree(tree / "class/net" / ifname)
    (tree / "bus/pci/devices" / PCI[ifname] / "net" / ifname).unlink()


def test_a_restarted_agent_is_not_fooled_by_discovery_errors_on_stderr(tmp_path: Path) -> None:
    """Issue 35 defect 2: kubectl prints discovery errors on stderr and still answers; taking them for a
    DeviceTaintRule adopted every rail as marked, and a rail that went bad next was never marked."""
    agent = Agent(tmp_path, "device", recovery_checks=2, recovery_seconds=600)
    agent.round(sysfs_b48.HEALTHY, 0)
    shutil.rmtree(agent.state)
    (agent.kube / "noisy").touch()
    assert agent.round(sysfs_b48.HEALTHY, 30) == []  # nothing adopted: there was no mark
    lines = agent.round(sysfs_b48.FAILING, 60)
    assert sorted(agent.rules()) == sorted(rule_name(i) for i in sysfs_b48.FAILING_RAILS)
    assert len(lines) == len(sysfs_b48.FAILING_RAILS)


def test_a_rail_renamed_on_the_host_is_still_checked_and_marked(tmp_path: Path) -> None:
    """Issue 35 defect 4: a rail whose interface was renamed in the host's namespace was taken for one handed
    to a pod and never checked; its function's net/ entry names it."""
    agent = Agent(tmp_path, "device")
    tree = copy_tree(sysfs_b48.HEALTHY, tmp_path / "sys")
    rename(tree, "rdma2", "eth7")
    assert agent.round(tree, 0) == []  # renamed and healthy: checked under its new name, not marked
    take_down(tree, "eth7")
    lines = agent.round(tree, 30)
    assert list(agent.rules()) == [rule_name("rdma2")]
    assert lines == [f"rail-health {NODE}: rdma2: bad (operstate down;no carrier;now named eth7): marked"]


def test_a_restarted_node_mode_agent_holds_one_node_mark_not_every_rail(tmp_path: Path) -> None:
    """Issue 35 defect 5: the adopted node mark names no rail; it is held as one mark and lifted once the rails
    the agent sees have recovered, not taken as sixteen bad rails."""
    agent = Agent(tmp_path, "node", recovery_checks=2, recovery_seconds=60)
    agent.round(sysfs_b48.FAILING, 0)
    shutil.rmtree(agent.state)
    lines = agent.round(sysfs_b48.HEALTHY, 30)
    assert lines == [
        f"rail-health {NODE}: node marked before this agent started; kept until its rails recover"
    ]
    assert not list(agent.state.glob("rdma*.held"))
    agent.round(sysfs_b48.HEALTHY, 60)
    assert agent.node_taints() == [MARK]  # two good checks, 30 s since the adoption: kept
    assert agent.round(sysfs_b48.HEALTHY, 90) == [f"rail-health {NODE}: node mark lifted"]
    assert agent.node_taints() == []


def test_in_node_mode_a_rail_held_by_a_pod_does_not_keep_the_node_marked(tmp_path: Path) -> None:
    """Issue 35 defect 5: a marked rail that DRANET then hands to a pod cannot be checked nor given to another
    pod: it does not hold the node's mark for the pod's life, and is marked again if it comes back bad."""
    agent = Agent(tmp_path, "node", recovery_checks=1, recovery_seconds=0)
    tree = copy_tree(sysfs_b48.HEALTHY, tmp_path / "sys")
    agent.round(tree, 0)
    take_down(tree, "rdma2")
    agent.round(tree, 30)
    assert agent.node_taints() == [MARK]
    saved = tmp_path / "rdma2"
    shutil.copytree(tree / "class/net/rdma2", saved, symlinks=True)
    hand_to_pod(tree, "rdma2")
    agent.round(tree, 60)
    assert agent.node_taints() == []
    # The pod ended: the rail is back on the host, still down: the node is marked again at once.
    shutil.copytree(saved, tree / "class/net/rdma2", symlinks=True)
    (tree / "bus/pci/devices" / PCI["rdma2"] / "net/rdma2").symlink_to(Path("../../../../../class/net/rdma2"))
    agent.round(tree, 90)
    assert agent.node_taints() == [MARK]


@pytest.mark.parametrize("mode", ["device", "node"])
def test_every_call_is_bounded_and_a_hung_api_server_stalls_no_round(tmp_path: Path, mode: str) -> None:
    """Issue 35 defect 6: no call was bounded; one hung call stalled every check. Each call carries kubectl's
    --request-timeout, a round against an API server that never answers ends, and its next round tries again."""
    agent = Agent(tmp_path, mode, rails_label=RAILS_UNMARKED_LABEL if mode == "device" else "")
    agent.round(sysfs_b48.HEALTHY, 0)
    (agent.kube / "hang").touch()
    lines = agent.round(sysfs_b48.FAILING, 30, timeout=30)
    assert any(fake_kubectl.TIMED_OUT in line for line in lines), lines
    (agent.kube / "hang").unlink()
    agent.round(sysfs_b48.FAILING, 60)
    if mode == "device":
        assert sorted(agent.rules()) == sorted(rule_name(i) for i in sysfs_b48.FAILING_RAILS)
    else:
        assert agent.node_taints() == [MARK]
    assert {tuple(c["flags"]) for c in agent.calls()} == {("--request-timeout=10s",)}


def test_each_round_touches_the_heartbeat_the_liveness_probe_reads(tmp_path: Path) -> None:
    agent = Agent(tmp_path, "device")
    agent.round(sysfs_b48.HEALTHY, 0)
    beat = agent.state / "heartbeat"
    first = beat.stat().st_mtime_ns
    os.utime(beat, ns=(first - 10**9, first - 10**9))
    agent.round(sysfs_b48.HEALTHY, 30)
    assert beat.stat().st_mtime_ns > first - 10**9


def set_pool(agent: Agent, pool: str | None) -> None:
    state = fake_kubectl.read_state(agent.kube)
    state["nodes"][0]["labels"] = {POOL_LABEL: pool} if pool else {}
    fake_kubectl.write_state(agent.kube, state)


def run_until_marked_then_stop(agent: Agent, pool_at_stop: str | None) -> str:
    """The agent's loop (1 s rounds) on the failing node until it has marked, then SIGTERM, as the kubelet sends
    when the pod is deleted; its log."""
    set_pool(agent, "gpu-b4-a")
    env = agent.env(sysfs_b48.FAILING, None) | {"INTERVAL_SECONDS": "1"}
    process = subprocess.Popen(
        ["bash", str(SCRIPTS / "rail-health.sh")],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 30
        # The first look marks the down, address-less and lost rails (three rules; in node mode the taint).
        while len(agent.rules()) < 3 if agent.mode == "device" else not agent.node_taints():
            assert time.monotonic() < deadline, "the agent never marked"
            time.sleep(0.2)
        set_pool(agent, pool_at_stop)
        process.send_signal(signal.SIGTERM)
        out, err = process.communicate(timeout=30)
    finally:
        process.kill()
    assert process.returncode == 0 and err == "", err
    return out


@pytest.mark.parametrize("mode", ["device", "node"])
def test_an_agent_whose_node_left_its_pools_lifts_its_marks_as_it_stops(tmp_path: Path, mode: str) -> None:
    """Issue 35: a mark that outlives its cause is found. The DaemonSet controller deletes the agent's pod once
    its node left the pools; nothing else would lift the agent's marks there, so the agent lifts them as it
    stops."""
    agent = Agent(tmp_path, mode)
    out = run_until_marked_then_stop(agent, pool_at_stop="cpu-system")
    assert agent.rules() == {} and agent.node_taints() == []
    assert out.splitlines()[-1] == (
        f"rail-health {NODE}: the node left the pools gpu-b4-a gpu-b4-b (now cpu-system): every mark of this agent "
        "lifted"
    )


@pytest.mark.parametrize("mode", ["device", "node"])
def test_an_agent_stopped_on_a_node_still_in_its_pools_keeps_its_marks(tmp_path: Path, mode: str) -> None:
    agent = Agent(tmp_path, mode)
    run_until_marked_then_stop(agent, pool_at_stop="gpu-b4-b")
    if mode == "device":
        assert sorted(agent.rules()) == sorted(rule_name(i) for i in ("rdma3", "rdma7", "rdma11"))
    else:
        assert agent.node_taints() == [MARK]


def test_in_a_pod_kubectl_is_given_the_service_accounts_config_so_that_its_request_timeout_holds(
    tmp_path: Path,
) -> None:
    """kubectl with --request-timeout and no kubeconfig goes to http://localhost:8080, not to the in-cluster
    config (kubernetes/kubernetes#93474): the script writes the pod's own config and names it in KUBECONFIG."""
    sa = tmp_path / "sa"
    sa.mkdir()
    for name, text in (("token", "t\n"), ("namespace", "rail-health\n"), ("ca.crt", "")):
        (sa / name).write_text(text)
    calls = tmp_path / "calls"
    kubectl = tmp_path / "kubectl"
    kubectl.write_text(f'#!/bin/bash\necho "$KUBECONFIG $1" >>"{calls}"\nexit 1\n')
    kubectl.chmod(0o755)
    state = tmp_path / "state"
    env = {
        "PATH": "/usr/bin:/bin",
        "SERVICEACCOUNT_DIR": str(sa),
        "KUBERNETES_SERVICE_HOST": "fd00::1",
        "KUBERNETES_SERVICE_PORT": "6443",
        "SYSFS": str(sysfs_b48.TREES / "b48-healthy"),
        "STATE_DIR": str(state),
        "KUBECTL": str(kubectl),
        "NODE_NAME": "n",
        "MARK_MODE": "node",
        "TAINT_KEY": "k",
        "RAILS": "rdma0=0000:0c:00.0",
        "NOW": "0",
        "ONCE": "1",
    }
    subprocess.run(["bash", str(SCRIPTS / "rail-health.sh")], env=env, check=True, capture_output=True)
    config = yaml.safe_load((state / "kubeconfig").read_text())
    assert config["clusters"][0]["cluster"] == {
        "server": "https://[fd00::1]:6443",
        "certificate-authority": f"{sa}/ca.crt",
    }
    assert config["users"][0]["user"] == {"tokenFile": f"{sa}/token"}
    assert config["contexts"][0]["context"]["namespace"] == "rail-health"
    assert calls.read_text().split("\n")[0] == f"{state / 'kubeconfig'} --request-timeout=10s"
