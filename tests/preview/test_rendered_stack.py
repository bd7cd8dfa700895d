"""preview/rendered_stack.py: rendered/<stack>/ read back as the engine registered it (what a pack run on a
rendering analyzes)."""

from __future__ import annotations

import base64
from pathlib import Path

import pytest
from google.protobuf import json_format, struct_pb2
from pulumi.runtime import rpc

from preview import rendering
from preview.mock_runtime import STACK_TYPE, UNKNOWN_TEXT, RecordedResource
from preview.rendered_stack import RenderedStackError, read_rendered

CLOUD_INIT = "#cloud-config\n# options ib_core netns_mode=1\n"
STACK = "urn:pulumi:s::oke-gpu-rdma::pulumi:pulumi:Stack::oke-gpu-rdma-s"
POOL_COMPONENT = "urn:pulumi:s::oke-gpu-rdma::oke-gpu-rdma:index:RdmaGpuNodePool::gpu"
PROVIDER = "urn:pulumi:s::oke-gpu-rdma::pulumi:providers:kubernetes::k8s"


def registered(
    urn: str, engine: dict[str, object], inputs: dict[str, object] | None = None, **links: object
) -> RecordedResource:
    """A registration as the mock runtime records it: `engine` as sent, `inputs` as made readable."""
    struct = struct_pb2.Struct()
    struct.update(engine)
    type_, name = urn.split("::")[2].rsplit("$", 1)[-1], urn.split("::")[3]
    return RecordedResource(
        urn=urn,
        type=type_,
        name=name,
        custom=type_ not in (STACK_TYPE, "oke-gpu-rdma:index:RdmaGpuNodePool"),
        parent=str(links.get("parent", "")),
        inputs=dict(engine if inputs is None else inputs),
        struct=struct,
        id="",
        provider=str(links.get("provider", "")),
        dependencies=list(links.get("dependencies", [])),  # type: ignore[call-overload]
    )


def test_a_rendering_reads_back_as_the_engine_sent_it(tmp_path: Path) -> None:
    user_data = base64.b64encode(CLOUD_INIT.encode()).decode()
    pool = {
        "nodeShape": "BM.GPU.B4.8",
        "nodeMetadata": {"user_data": user_data},
        "kubernetesVersion": rpc.UNKNOWN,
    }
    shown = {**pool, "kubernetesVersion": UNKNOWN_TEXT}
    config_map = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "env", "namespace": "rdma"}}
    resources = [
        registered(STACK, {}),
        registered(PROVIDER, {}, parent=STACK),
        registered(POOL_COMPONENT, {}, parent=STACK),
        registered(
            f"{STACK.split('::pulumi')[0]}::oke-gpu-rdma:index:RdmaGpuNodePool$oci:ContainerEngine/nodePool:NodePool::gpu-nodes",
            pool,
            shown,
            parent=POOL_COMPONENT,
        ),
        registered(
            f"{STACK.split('::pulumi')[0]}::kubernetes:core/v1:ConfigMap::env",
            config_map,
            provider=f"{PROVIDER}::provider-id",
            dependencies=[POOL_COMPONENT],
        ),
    ]
    rendering.write_files(rendering.render_files(resources, {"all": "advisory"}), tmp_path / "s")
    stack = read_rendered("s", tmp_path)
    assert (stack.name, stack.project, stack.pack_config) == ("s", "oke-gpu-rdma", {"all": "advisory"})
    back = {r.urn: r for r in stack.resources}
    assert sorted(back) == sorted(r.urn for r in resources)
    for r in resources:
        got = back[r.urn]
        assert (got.type, got.name, got.parent, got.dependencies) == (
            r.type,
            r.name,
            r.parent,
            r.dependencies,
        )
        assert got.provider == r.provider.rsplit("::", 1)[0] if r.provider else got.provider == ""
        assert json_format.MessageToDict(got.struct) == json_format.MessageToDict(r.struct), r.name


def test_the_committed_dev_rendering(tmp_path: Path) -> None:
    stack = read_rendered("dev")
    assert stack.project == "oke-gpu-rdma" and "dranet-child-range" in stack.pack_config
    (pool,) = [r for r in stack.resources if r.name == "gpu-b4-nodes"]
    assert pool.parent.endswith("::gpu-b4") and pool.dependencies
    user_data = pool.inputs["nodeMetadata"]["user_data"]
    assert base64.b64decode(user_data).decode().startswith("#cloud-config\n")
    (release,) = [r for r in stack.resources if r.name == "dranet-release"]
    assert release.provider.endswith("pulumi:providers:kubernetes::oke-k8s")


def test_nothing_to_read(tmp_path: Path) -> None:
    with pytest.raises(RenderedStackError) as missing:
        read_rendered("prod", tmp_path)
    assert str(missing.value) == (
        f"{tmp_path}/prod/ does not exist; run make preview STACK=prod to render it (rendered stacks: none)"
    )
    (tmp_path / "old" / "manifests").mkdir(parents=True)
    with pytest.raises(RenderedStackError) as bare:
        read_rendered("old", tmp_path)
    assert str(bare.value) == (
        f"{tmp_path}/old/ has no resources/ records; run make preview STACK=old to render it again"
    )
