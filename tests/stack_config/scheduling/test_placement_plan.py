"""The program's early schedulability check (stack_config/scheduling/placement_plan.py)."""

from __future__ import annotations

import pytest

from stack_config.loading import load_stack
from stack_config.problems import ConfigError
from stack_config.scheduling.placement_plan import controllers
from tests.support import EXAMPLE_REGION, raw_config

WHERE = "(chart network-operator, release network-operator)"


def test_the_sriov_stack_checks_the_network_operators_deployments_and_hook_jobs_early() -> None:
    config = load_stack(raw_config("sriov"), "sriov", EXAMPLE_REGION).config
    assert [p.name for p in controllers(config)] == [
        "Deployment kube-system/coredns (OKE cluster add-on)",
        f"Deployment network-operator {WHERE}",
        f"Job network-operator-keep-ncp (pre-install/pre-upgrade hook) {WHERE}",
        f"Job network-operator-upgrade-crd (pre-install/pre-upgrade hook) {WHERE}",
        f"Deployment network-operator-sriov-network-operator {WHERE}",
        f"Job network-operator-sriov-network-operator-pre-delete-hook (pre-delete hook) {WHERE}",
        "Deployment mpi-operator/mpi-operator",
    ]


def test_the_charts_nfd_is_checked_only_when_the_stack_deploys_it() -> None:
    raw = raw_config("sriov")
    raw["networkOperator"]["deployNfd"] = True
    names = [p.name for p in controllers(load_stack(raw, "sriov", EXAMPLE_REGION).config)]
    assert f"Deployment network-operator-node-feature-discovery-master {WHERE}" in names
    assert f"Deployment network-operator-node-feature-discovery-gc {WHERE}" in names
    # DaemonSets are judged at preview, against the pools and the objects the run declares.
    assert f"DaemonSet network-operator-node-feature-discovery-worker {WHERE}" not in names


def test_the_nfd_worker_value_repeats_the_charts_tolerations_and_adds_the_pools() -> None:
    from stack_config.nodes.pool_settings import GPU_TAINT, Taint
    from stack_config.sriov.network_operator_values import NFD_WORKER_TOLERATIONS, release_values
    from stack_config.sriov.sriov_settings import NetworkOperatorConfig

    dedicated = Taint(key="dedicated", value="training")
    # Off, or only taints the chart tolerates: the chart's list stands.
    assert "node-feature-discovery" not in release_values(NetworkOperatorConfig(), [dedicated])
    on = NetworkOperatorConfig(deployNfd=True)
    assert "node-feature-discovery" not in release_values(on, [GPU_TAINT])
    assert release_values(on, [GPU_TAINT, dedicated])["node-feature-discovery"] == {
        "worker": {
            "tolerations": [
                *NFD_WORKER_TOLERATIONS,
                {"key": "dedicated", "operator": "Exists", "effect": "NoSchedule"},
            ]
        }
    }


def test_kueues_controller_is_placed_early_when_the_stack_schedules_through_it() -> None:
    name = "Deployment kueue-controller-manager (chart kueue)"
    full = load_stack(raw_config("full"), "full", EXAMPLE_REGION).config
    assert name in [p.name for p in controllers(full)]
    raw = raw_config("full")
    raw["workloads"]["scheduling"]["enabled"] = False
    assert name not in [p.name for p in controllers(load_stack(raw, "full", EXAMPLE_REGION).config)]
    # With every pool tainted and no system pool, no pool admits it: the problem names it (with the other
    # controllers of the same reason, a line each under it), before anything exists.
    raw = raw_config("full")
    raw["systemPool"]["enabled"] = False
    with pytest.raises(ConfigError) as err:
        load_stack(raw, "full", EXAMPLE_REGION)
    message = str(err.value)
    assert "\n  full: systemPool: 14 pods fit no node pool of the stack: " in message
    assert f"\n    - {name}\n" in message
