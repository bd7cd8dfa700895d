"""The existing cluster's version, read from OCI through an invoke the mock runtime answers
(stack_config/nodes/cluster_version.py, components/nodes/cluster.py, preview/mock_runtime.py)."""

from __future__ import annotations

from typing import Any

import pulumi
import pytest

from preview import mock_runtime
from preview.mock_runtime import pulumi_config_map, run_program
from tests.support import as_stack_file, raw_config

CLUSTER = "ocid1.cluster.oc1.iad.aaaaaaaaexampleclustergpurdma"


def run_against_a_cluster_running(version: str, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Run the dev stack while OCI reports `version` for its cluster; the types registered before it stopped."""
    monkeypatch.setattr(mock_runtime.OfflineMocks, "cluster_version", lambda self, cluster_id: version)
    registered: list[str] = []
    original = mock_runtime.RecordingMonitor.RegisterResource

    def register(self: mock_runtime.RecordingMonitor, request: Any) -> Any:
        registered.append(request.type)
        return original(self, request)

    monkeypatch.setattr(mock_runtime.RecordingMonitor, "RegisterResource", register)
    with pytest.raises(pulumi.RunError) as caught:
        run_program("dev", pulumi_config_map(as_stack_file(raw_config("dev"))))
    assert registered == [mock_runtime.STACK_TYPE]  # nothing of the stack's own
    return str(caught.value).splitlines()


def test_the_offline_preview_answers_with_the_configured_version() -> None:
    run = run_program("dev", pulumi_config_map(as_stack_file(raw_config("dev"))))
    assert ("oci:ContainerEngine/getCluster:getCluster", {"clusterId": CLUSTER}) in run.invokes


def test_a_cluster_running_another_version_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    assert run_against_a_cluster_running("v1.35.2", monkeypatch) == [
        "invalid stack config:",
        f"  stacks/Pulumi.dev.yaml: cluster.existing.kubernetesVersion = 'v1.36.4': the cluster {CLUSTER} runs "
        "v1.35.2 (read from OCI); set cluster.existing.kubernetesVersion: v1.35.2, the version the node pools are "
        "created with",
    ]


def test_a_cluster_whose_ranges_differ_from_the_stack_file_is_refused(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Issue 36 item 5: the pack judges the child range against the stack file's pods and services CIDRs, so
    they must be the ones OCI reports for the cluster."""
    networks = [{"kubernetesNetworkConfigs": [{"podsCidr": "10.208.0.0/16", "servicesCidr": "10.96.0.0/16"}]}]
    monkeypatch.setattr(mock_runtime.OfflineMocks, "cluster_networks", lambda self, cluster_id: networks)
    with pytest.raises(pulumi.RunError) as caught:
        run_program("dev", pulumi_config_map(as_stack_file(raw_config("dev"))))
    assert str(caught.value).splitlines() == [
        "invalid stack config:",
        f"  stacks/Pulumi.dev.yaml: cluster.existing.podsCidr = '10.240.0.0/12': the cluster {CLUSTER} uses "
        "10.208.0.0/16 (read from OCI); set cluster.existing.podsCidr: 10.208.0.0/16, so that the DRANET child "
        "range and the VF pool are checked against the cluster's own ranges",
    ]


def test_a_cluster_older_than_1_34_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    assert run_against_a_cluster_running("v1.33.1", monkeypatch) == [
        "invalid stack config:",
        f"  stacks/Pulumi.dev.yaml: cluster.existing.kubernetesVersion = 'v1.36.4': the cluster {CLUSTER} runs "
        "v1.33.1 (read from OCI), older than v1.34: the claim templates and DeviceClasses are resource.k8s.io/v1; "
        "upgrade the cluster to v1.34 or later first (oci ce cluster update), then set this to its version",
    ]


def test_a_cluster_oci_cannot_read_is_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    # The provider's answer to a cluster that is not there: an invoke failure, as the engine returns it.
    answer = mock_runtime.OfflineMocks.call

    def call(self: mock_runtime.OfflineMocks, args: Any) -> Any:
        if args.token == "oci:ContainerEngine/getCluster:getCluster":
            return {}, [
                (
                    "clusterId",
                    "404-NotAuthorizedOrNotFound, Authorization failed or\nrequested resource not found",
                )
            ]
        return answer(self, args)

    monkeypatch.setattr(mock_runtime.OfflineMocks, "call", call)
    with pytest.raises(pulumi.RunError) as caught:
        run_program("dev", pulumi_config_map(as_stack_file(raw_config("dev"))))
    assert str(caught.value).splitlines() == [
        "invalid stack config:",
        f"  stacks/Pulumi.dev.yaml: cluster.existing.id = '{CLUSTER}': OCI could not read this cluster (invoke of "
        "oci:ContainerEngine/getCluster:getCluster failed: 404-NotAuthorizedOrNotFound, Authorization failed or "
        "requested resource not found (clusterId)); check the OCID, oci:region and the credentials",
    ]


def test_a_cluster_that_is_not_enhanced_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(mock_runtime.OfflineMocks, "cluster_type", lambda self, cluster_id: "BASIC_CLUSTER")
    registered: list[str] = []
    original = mock_runtime.RecordingMonitor.RegisterResource

    def register(self: mock_runtime.RecordingMonitor, request: Any) -> Any:
        registered.append(request.type)
        return original(self, request)

    monkeypatch.setattr(mock_runtime.RecordingMonitor, "RegisterResource", register)
    with pytest.raises(pulumi.RunError) as caught:
        run_program("dev", pulumi_config_map(as_stack_file(raw_config("dev"))))
    assert registered == [mock_runtime.STACK_TYPE]
    assert str(caught.value).splitlines() == [
        "invalid stack config:",
        f"  stacks/Pulumi.dev.yaml: cluster.existing.id = '{CLUSTER}': the cluster is a BASIC_CLUSTER (read from "
        "OCI); this stack needs an ENHANCED_CLUSTER, whose limits it is sized by (1,000 nodes a pool, 2,000 a "
        "cluster); upgrade the cluster in place (oci ce cluster update --cluster-id <id> --type ENHANCED_CLUSTER; "
        "it cannot be downgraded later), or use cluster.create",
    ]


def test_the_offline_preview_answers_the_type_the_stack_needs() -> None:
    run = run_program("dev", pulumi_config_map(as_stack_file(raw_config("dev"))))
    assert ("oci:ContainerEngine/getCluster:getCluster", {"clusterId": CLUSTER}) in run.invokes
    assert mock_runtime.OfflineMocks().cluster_type(CLUSTER) == "ENHANCED_CLUSTER"
