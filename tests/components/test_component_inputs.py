"""How components check plain inputs (components/component_inputs.py), and the Args a component is
checked from when another program's values reach it (the node pool, the DRA drivers, the templates)."""

from __future__ import annotations

import asyncio

import pulumi
import pytest

from components.claims.rdma_workloads import GpuRailClaimTemplatesArgs, planned_templates
from components.component_inputs import (
    ComponentInputError,
    PoolTaint,
    from_wire,
    is_known,
    taints,
    value_problems,
)
from components.drivers.dra_drivers import Dranet, _driver_settings
from components.nodes.gpu_node_pool import RdmaGpuNodePoolArgs, pool_config
from oke_gpu_rdma.sriov.operator_objects import RdmaPath
from stack_config.drivers.driver_settings import DranetConfig
from stack_config.nodes.pool_settings import Taint
from stack_config.settings_types import KubernetesVersion

IMAGE = "ocid1.image.oc1.iad.aaaaaaaaexampleimage"


def pool(**changes: object) -> RdmaGpuNodePoolArgs:
    args = RdmaGpuNodePoolArgs(
        compartment_id="ocid1.compartment.oc1..aaaaaaaaexample",
        cluster_id="ocid1.cluster.oc1.iad.aaaaaaaaexample",
        kubernetes_version="v1.34.1",
        worker_subnet_id="ocid1.subnet.oc1.iad.aaaaaaaaexample",
        image_id=IMAGE,
        count=2,
        availability_domain="Uocm:US-ASHBURN-AD-1",
    )
    args.update(changes)  # type: ignore[typeddict-item]
    return args


def an_output() -> pulumi.Output[str]:
    future: asyncio.Future[str] = asyncio.get_event_loop().create_future()
    future.set_result("ocid1.image.oc1.iad.aaaaaaaafromanotherresource")
    return pulumi.Output.from_input(future)


def test_defaults_are_the_stack_configs() -> None:
    config = pool_config("gpu-b4", pool())
    assert config.shape == "BM.GPU.B4.8" and config.rdma is RdmaPath.DRANET
    assert config.taints == [Taint(key="nvidia.com/gpu", value="present", effect="NoSchedule")]
    assert config.delete_before_replace and config.boot_volume_size_gbs == 500


def test_an_output_is_not_checked_but_the_rest_is() -> None:
    output = an_output()
    assert not is_known(output) and is_known(IMAGE)
    # The image OCID from another resource stands in; the shape check still runs.
    assert pool_config("gpu-b4", pool(image_id=output)).image_id != IMAGE
    with pytest.raises(ComponentInputError) as raised:
        pool_config("gpu-b4", pool(image_id=output, shape="VM.GPU.A10.1"))
    assert "shape VM.GPU.A10.1 is a VM shape but rdma is dranet" in str(raised.value)


def test_every_bad_input_is_one_line_with_its_value() -> None:
    with pytest.raises(ComponentInputError) as raised:
        pool_config("gpu-b4", pool(count=0, kubernetes_version="1.34", cni_type="CALICO"))
    lines = str(raised.value).splitlines()
    assert lines[0] == "RdmaGpuNodePool 'gpu-b4': invalid inputs:"
    assert "  input count = 0: must be at least 1" in lines
    assert any(
        line.startswith("  input kubernetesVersion = '1.34': is not a Kubernetes version") for line in lines
    )
    assert "  input cniType = 'CALICO': takes one of: FLANNEL_OVERLAY, OCI_VCN_IP_NATIVE" in lines
    # RunError: the program ends with the message, no traceback.
    assert isinstance(raised.value, pulumi.RunError)


def test_vcn_native_pods_need_the_pod_subnet() -> None:
    with pytest.raises(
        ComponentInputError, match="input podSubnetId is missing; OCI_VCN_IP_NATIVE pods need"
    ):
        pool_config("gpu-b4", pool(cni_type="OCI_VCN_IP_NATIVE"))


def test_numbers_from_the_wire_are_ints_again() -> None:
    assert from_wire({"count": 2.0, "cycling": {"maximumSurge": 1.0}, "x": [0.5, True]}) == {
        "count": 2,
        "cycling": {"maximumSurge": 1},
        "x": [0.5, True],
    }
    assert pool_config("gpu-b4", pool(count=2.0)).count == 2


def test_taints_are_named_by_index() -> None:
    given = [PoolTaint(key="ok"), PoolTaint(key="bad key")]
    with pytest.raises(ComponentInputError) as raised:
        taints(given, "Dranet", "dranet")
    assert "input taints[1]: taint key 'bad key' is not a valid Kubernetes label key" in str(raised.value)


def test_value_problems_use_the_stack_configs_types() -> None:
    assert value_problems("kubernetesVersion", "v1.36.4", KubernetesVersion) == []
    (problem,) = value_problems("kubernetesVersion", "v1.30.0", KubernetesVersion)
    assert problem.path == "kubernetesVersion" and "is older than v1.34" in problem.message


def test_a_driver_needs_its_pools() -> None:
    with pytest.raises(ComponentInputError, match="input pools is empty; name the GPU node pools"):
        _driver_settings(DranetConfig, {"pools": []}, ("chart_version",), Dranet.__name__, "dranet")


def test_claim_templates_name_a_shape_without_topology() -> None:
    args = GpuRailClaimTemplatesArgs(
        shapes=["BM.GPU.B4.8", "BM.GPU.H100.8"],
        namespace="training",
        claim_templates=[{"name": "aligned", "gpus_per_worker": 8}],
    )
    with pytest.raises(ComponentInputError) as raised:
        planned_templates("claim-templates", args)
    message = str(raised.value)
    assert message.splitlines()[1:] == [
        "  input shapes[1] = 'BM.GPU.H100.8': BM.GPU.H100.8 has no GPU/NIC topology to build and judge claim "
        "templates on (the catalog lists it unverified: 16 x 200 Gb/s rails (8 dual-port ConnectX-7), a GPU and a NIC per PCIe switch, 2 NUMA nodes; PCIe roots not published); add shapeTopologies.BM.GPU.H100.8 (`make topology` prints it "
        "from the ResourceSlices of a node of the shape where DRANET and the GPU DRA driver run), leave "
        "BM.GPU.H100.8 out of shapes until then, or ask for no templates (claimTemplates [] and no "
        "railsOnlyTemplate)"
    ]


def test_two_shapes_get_templates_named_and_pinned_by_shape() -> None:
    from oke_gpu_rdma.nodes.shape_catalog import CATALOG
    from tests.support import topology_to_dict

    args = GpuRailClaimTemplatesArgs(
        shapes=["BM.GPU.B4.8", "BM.GPU.H100.8"],
        namespace="training",
        claim_templates=[{"name": "aligned", "gpus_per_worker": 8}],
        shape_topologies={"BM.GPU.H100.8": topology_to_dict(CATALOG.topology("BM.GPU.B4.8"))},
    )
    names = [t.name for t in planned_templates("claim-templates", args)]
    # The first shape keeps the shape-free name as well, with its pinned spec (as the stack's templates).
    assert names == ["aligned-bm-gpu-b4-8", "aligned-bm-gpu-h100-8", "aligned"]


def test_a_pool_names_a_bad_boot_volume_key_and_pod_nsgs_without_native_pods() -> None:
    with pytest.raises(ComponentInputError) as raised:
        pool_config("gpu-b4", pool(kms_key_id="ocid1.vault.oc1.iad.aaaaaaaaexample", pod_nsg_ids=["x"]))
    lines = str(raised.value).splitlines()
    assert (
        "  input kmsKeyId = 'ocid1.vault.oc1.iad.aaaaaaaaexample': is a vault OCID; this key takes a key OCID "
        "(ocid1.key.oc1.<region>.<unique id>)"
    ) in lines
    assert (
        "  input podNsgIds is set, but pods take NSGs only with OCI_VCN_IP_NATIVE; remove it or set cniType"
        in lines
    )


def test_a_pool_refuses_in_transit_encryption_on_a_bare_metal_gpu_shape() -> None:
    with pytest.raises(
        ComponentInputError, match=r"inTransitEncryption is true, but BM\.GPU\.B4\.8 is a bare metal"
    ):
        pool_config("gpu-b4", pool(in_transit_encryption=True))


def test_an_existing_cluster_refuses_a_secrets_key() -> None:
    from components.nodes.cluster import OkeClusterArgs, new_cluster

    args = OkeClusterArgs(
        compartment_id="ocid1.compartment.oc1..aaaaaaaaexample",
        existing_cluster_id="ocid1.cluster.oc1.iad.aaaaaaaaexample",
        kms_key_id="ocid1.key.oc1.iad.bbpvrcsjaaaae.abuwcljrexample",
    )
    with pytest.raises(ComponentInputError) as raised:
        new_cluster("oke", args)
    assert (
        "  input kmsKeyId is set for an existing cluster; OKE sets a cluster's secrets key when it creates it, so "
        "it cannot be set here: remove it"
    ) in str(raised.value).splitlines()
