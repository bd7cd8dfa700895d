"""Keys no part of the stack reads are refused with the closest valid key (stack_config/config_namespaces.py)."""

from __future__ import annotations

import inspect

import pulumi_oci as oci
import pytest

from components.component_inputs import schema_name
from preview.mock_runtime import pulumi_config_map
from stack_config import config_namespaces
from stack_config.loading import load_program_stack
from stack_config.model import config_keys
from stack_config.problems import ConfigError
from tests.support import stack_document

SOURCE = "stacks/Pulumi.dev.yaml"


def test_the_oci_keys_are_the_installed_providers_arguments() -> None:
    parameters = inspect.signature(oci.ProviderArgs.__init__).parameters
    assert {schema_name(p) for p in parameters if p != "__self__"} == config_namespaces.OCI_PROVIDER_KEYS


@pytest.mark.parametrize(
    ("key", "line"),
    [
        (
            "oke-gpu-rmda:dranet",
            "oke-gpu-rmda:dranet is in namespace 'oke-gpu-rmda', which nothing of this stack reads (the program "
            "reads oke-gpu-rdma:, the OCI provider oci:, the engine pulumi:); did you mean oke-gpu-rdma:dranet?",
        ),
        (
            "oci:regoin",
            "oci:regoin is not a setting of the OCI provider (pulumi-oci's provider arguments: oci:region, "
            "oci:auth, oci:configFileProfile, ...); did you mean oci:region?",
        ),
        (
            "oci:zzzz",
            "oci:zzzz is not a setting of the OCI provider (pulumi-oci's provider arguments: oci:region, "
            "oci:auth, oci:configFileProfile, ...); fix the key or remove it",
        ),
        (
            "kubernetes:kubeconfig",
            "kubernetes:kubeconfig is read by no provider of this stack: stack config sets only the default "
            "Kubernetes provider, and every Kubernetes resource here uses the provider built from the cluster's "
            "kubeconfig; remove the key",
        ),
        (
            "OKE-GPU-RDMA:dranet",
            "OKE-GPU-RDMA:dranet is in namespace 'OKE-GPU-RDMA', which nothing of this stack reads (the program "
            "reads oke-gpu-rdma:, the OCI provider oci:, the engine pulumi:); did you mean oke-gpu-rdma:dranet?",
        ),
    ],
)
def test_a_key_nothing_reads_is_one_line_with_the_closest_key(key: str, line: str) -> None:
    (problem,) = config_namespaces.problems({key: "x"}, config_keys())
    assert problem.render() == line


def test_keys_the_program_provider_or_engine_read_pass() -> None:
    keys = {
        "oke-gpu-rdma:anything": "x",  # the model judges the program's own keys
        "oci:region": "us-ashburn-1",
        "oci:tenancyOcid": "x",
        "pulumi:disable-default-providers": '["kubernetes"]',
    }
    assert config_namespaces.problems(keys, config_keys()) == []


def test_the_program_refuses_a_misspelt_namespace_before_anything_else() -> None:
    document = stack_document("dev")
    document["config"]["oke-gpu-rmda:dranet"] = {"enabled": False}
    document["config"]["oci:regoin"] = "us-phoenix-1"
    with pytest.raises(ConfigError) as caught:
        load_program_stack(pulumi_config_map(document), "dev")
    assert [f"{SOURCE}: {p.render()}" for p in caught.value.problems] == [
        f"{SOURCE}: oke-gpu-rmda:dranet is in namespace 'oke-gpu-rmda', which nothing of this stack reads (the "
        "program reads oke-gpu-rdma:, the OCI provider oci:, the engine pulumi:); did you mean oke-gpu-rdma:dranet?",
        f"{SOURCE}: oci:regoin is not a setting of the OCI provider (pulumi-oci's provider arguments: oci:region, "
        "oci:auth, oci:configFileProfile, ...); did you mean oci:region?",
    ]


def test_a_misspelt_key_in_place_of_a_required_one_is_one_line() -> None:
    """`oci:regoin` instead of `oci:region`: the misspelling names the fix; the key it meant is not also
    reported missing."""
    document = stack_document("dev")
    document["config"]["oci:regoin"] = document["config"].pop("oci:region")
    with pytest.raises(ConfigError) as caught:
        load_program_stack(pulumi_config_map(document), "dev")
    assert [p.render() for p in caught.value.problems] == [
        "oci:regoin is not a setting of the OCI provider (pulumi-oci's provider arguments: oci:region, "
        "oci:auth, oci:configFileProfile, ...); did you mean oci:region?",
    ]
