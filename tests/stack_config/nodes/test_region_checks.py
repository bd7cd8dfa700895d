"""Checks that tie a stack to its region and to what OKE can run (stack_config/nodes/region_checks.py, model.py)."""

from __future__ import annotations

from typing import Any

import pytest

from oke_gpu_rdma.common import resource_types
from preview.mock_runtime import pulumi_config_map, run_program
from stack_config.loading import load_stack
from stack_config.problems import ConfigError
from tests.support import EXAMPLE_REGION, Run, as_stack_file, raw_config

SOURCE = "stacks/Pulumi.dev.yaml"


def problems(raw: dict[str, Any], region: str | None = EXAMPLE_REGION) -> list[str]:
    with pytest.raises(ConfigError) as caught:
        load_stack(raw, SOURCE, region)
    return [f"{SOURCE}: {p.render()}" for p in caught.value.problems]


def test_kubernetes_older_than_1_34_is_refused() -> None:
    raw = raw_config("dev")
    raw["cluster"]["existing"]["kubernetesVersion"] = "v1.33.1"
    (line,) = problems(raw)
    assert line == (
        f"{SOURCE}: cluster.existing.kubernetesVersion = 'v1.33.1': is older than v1.34: the claim templates and "
        "DeviceClasses are resource.k8s.io/v1, which Kubernetes serves from v1.34; use an OKE version v1.34.x "
        "or later"
    )


def test_an_availability_domain_of_another_region_is_refused() -> None:
    raw = raw_config("dev")
    raw["nodePools"][0]["availabilityDomain"] = "Uocm:PHX-AD-1"
    (line,) = problems(raw)
    assert line.startswith(
        f"{SOURCE}: nodePools[0].availabilityDomain = 'Uocm:PHX-AD-1': is not an availability domain of "
        "oci:region us-ashburn-1"
    )


def test_ocids_of_another_region_are_refused() -> None:
    raw = raw_config("dev")
    raw["nodePools"][0]["imageId"] = "ocid1.image.oc1.phx.aaaaaaaaexampleimage"
    raw["cluster"]["existing"]["id"] = "ocid1.cluster.oc1.eu-frankfurt-1.aaaaaaaaexamplecluster"
    found = problems(raw)
    assert [line.split(" = ")[0] for line in found] == [
        f"{SOURCE}: cluster.existing.id",
        f"{SOURCE}: nodePools[0].imageId",
    ]
    assert "belongs to another region than oci:region us-ashburn-1" in found[0]


def test_tenancy_wide_ocids_and_other_regions_keys_and_names_pass() -> None:
    # The compartment OCID has no region; Frankfurt OCIDs carry the region name, Ashburn's its key.
    raw = raw_config("dev")
    load_stack(raw, SOURCE, EXAMPLE_REGION)
    raw["nodePools"][0]["availabilityDomain"] = "Uocm:EU-FRANKFURT-1-AD-2"
    raw["homeRegion"] = "us-ashburn-1"
    for key in ("vcnId",):
        raw["network"]["existing"][key] = "ocid1.vcn.oc1.eu-frankfurt-1.aaaaaaaaexamplevcn"
    raw["network"]["existing"]["workerSubnet"]["id"] = "ocid1.subnet.oc1.fra.aaaaaaaaexamplesubnet"
    raw["cluster"]["existing"]["id"] = "ocid1.cluster.oc1.eu-frankfurt-1.aaaaaaaaexamplecluster"
    raw["nodePools"][0]["imageId"] = "ocid1.image.oc1.eu-frankfurt-1.aaaaaaaaexampleimage"
    load_stack(raw, SOURCE, "eu-frankfurt-1")


def test_the_home_region_is_required_for_the_launch_policy() -> None:
    raw = raw_config("dev")
    del raw["homeRegion"]
    (line,) = problems(raw)
    assert line.startswith(f"{SOURCE}: homeRegion is required with createComputeClusterPolicy (the default)")
    raw["createComputeClusterPolicy"] = False
    load_stack(raw, SOURCE, EXAMPLE_REGION)


def test_a_stack_without_a_region_is_refused() -> None:
    (line,) = problems(raw_config("dev"), region=None)
    assert (
        line
        == f"{SOURCE}: oci:region is missing; set the stack's region (pulumi config set oci:region us-ashburn-1)"
    )


def test_the_offline_run_follows_the_stacks_region() -> None:
    # No region is built into the mock runtime: OCIDs and ADs it makes up follow oci:region.
    raw = raw_config("full")
    for pool in raw["nodePools"]:
        pool["availabilityDomain"] = "Uocm:EU-FRANKFURT-1-AD-1"
        pool["imageId"] = "ocid1.image.oc1.eu-frankfurt-1.aaaaaaaaexampleimage"
    raw["systemPool"]["availabilityDomains"] = ["Uocm:EU-FRANKFURT-1-AD-1"]
    raw["systemPool"]["imageId"] = "ocid1.image.oc1.eu-frankfurt-1.aaaaaaaaexampleolimage"
    run = Run(run_program("full", pulumi_config_map(as_stack_file(raw, region="eu-frankfurt-1"))))
    assert run.one(resource_types.VCN).id.startswith("ocid1.vcn.oc1.fra.")
    assert run.one(resource_types.CLUSTER).id.startswith("ocid1.cluster.oc1.fra.")


def test_a_misspelt_region_is_one_line_with_the_closest_known_name() -> None:
    # Without the region check, the AD and every regional OCID of the stack were blamed instead.
    (line,) = problems(raw_config("dev"), region="us-ashburn1")
    assert line == (
        f"{SOURCE}: oci:region = 'us-ashburn1': is not a known OCI region identifier; did you mean us-ashburn-1? "
        "(regions are named like us-ashburn-1: oci iam region list)"
    )


def test_a_misspelt_home_region_is_one_line_with_the_closest_known_name() -> None:
    raw = raw_config("dev")
    raw["homeRegion"] = "us-ashbrun-1"
    (line,) = problems(raw)
    assert line == (
        f"{SOURCE}: homeRegion = 'us-ashbrun-1': is not a known OCI region identifier; did you mean "
        "us-ashburn-1? (regions are named like us-ashburn-1: oci iam region list)"
    )


def test_a_region_like_no_known_one_gets_no_guess() -> None:
    (line,) = problems(raw_config("dev"), region="mars-olympus-9")
    assert line == (
        f"{SOURCE}: oci:region = 'mars-olympus-9': is not a known OCI region identifier (regions are named like "
        "us-ashburn-1: oci iam region list)"
    )


def test_both_regions_misspelt_are_one_line_each() -> None:
    # A config the model refuses (homeRegion) still hears about oci:region, which needs no model.
    raw = raw_config("dev")
    raw["homeRegion"] = "eu-frankfrut-1"
    assert [line.split(": ", 2)[1] for line in problems(raw, region="eu-frankfrut-1")] == [
        "oci:region = 'eu-frankfrut-1'",
        "homeRegion = 'eu-frankfrut-1'",
    ]


@pytest.mark.parametrize(
    ("key", "value", "region", "message"),
    [
        (
            "nodePools[0].availabilityDomain",
            "Uocm:US-ASHBURN-AD-4",
            "us-ashburn-1",
            "names AD 4, but us-ashburn-1 has 3 availability domains; use Uocm:US-ASHBURN-AD-1, "
            "Uocm:US-ASHBURN-AD-2 or Uocm:US-ASHBURN-AD-3 with your tenancy's prefix (oci iam availability-domain "
            "list)",
        ),
        (
            "nodePools[0].availabilityDomain",
            "Uocm:US-ASHBURN-1-AD-1",
            "us-ashburn-1",
            "spells the region as OCI does not; use Uocm:US-ASHBURN-AD-1, Uocm:US-ASHBURN-AD-2 or "
            "Uocm:US-ASHBURN-AD-3 with your tenancy's prefix (oci iam availability-domain list)",
        ),
        (
            "nodePools[0].availabilityDomain",
            "uocm:us-ashburn-ad-1",
            "us-ashburn-1",
            "is not an availability domain name (<prefix>:<REGION>-AD-<n>, e.g. <prefix>:US-ASHBURN-AD-1); use "
            "<prefix>:US-ASHBURN-AD-1, <prefix>:US-ASHBURN-AD-2 or <prefix>:US-ASHBURN-AD-3 with your tenancy's "
            "prefix (oci iam availability-domain list)",
        ),
        (
            "nodePools[0].availabilityDomain",
            "Uocm:US-ASHBURN-AD-01",
            "us-ashburn-1",
            "writes the AD number as OCI does not (01); use Uocm:US-ASHBURN-AD-1, Uocm:US-ASHBURN-AD-2 or "
            "Uocm:US-ASHBURN-AD-3 with your tenancy's prefix (oci iam availability-domain list)",
        ),
        (
            "nodePools[0].availabilityDomain",
            "Uocm:US-PHOENIX-1-AD-1",
            "us-phoenix-1",
            "spells the region as OCI does not; use Uocm:PHX-AD-1, Uocm:PHX-AD-2 or Uocm:PHX-AD-3 with your "
            "tenancy's prefix (oci iam availability-domain list)",
        ),
        (
            "nodePools[0].availabilityDomain",
            "xxxx:AP-SINGAPORE-1-AD-2",
            "ap-singapore-1",
            "names AD 2, but ap-singapore-1 has 1 availability domain; use xxxx:AP-SINGAPORE-1-AD-1 with your "
            "tenancy's prefix (oci iam availability-domain list)",
        ),
        (
            "systemPool.availabilityDomains[1]",
            "Uocm:EU-FRANKFURT-1-AD-1",
            "us-ashburn-1",
            "is not an availability domain of oci:region us-ashburn-1; use Uocm:US-ASHBURN-AD-1, "
            "Uocm:US-ASHBURN-AD-2 or Uocm:US-ASHBURN-AD-3 with your tenancy's prefix (oci iam availability-domain "
            "list), or change oci:region",
        ),
    ],
)
def test_every_availability_domain_has_its_regions_form_and_number(
    key: str, value: str, region: str, message: str
) -> None:
    raw = raw_config("full")
    if key.startswith("systemPool"):
        raw["systemPool"]["availabilityDomains"][1] = value
    else:
        raw["nodePools"][0]["availabilityDomain"] = value
    found = [line for line in problems(raw, region) if line.startswith(f"{SOURCE}: {key} ")]
    assert found == [f"{SOURCE}: {key} = {value!r}: {message}"]


def test_the_ads_oci_prints_pass() -> None:
    # Ashburn and Phoenix keep their old names; newer regions carry the region identifier.
    raw = raw_config("full")
    raw["nodePools"][1]["availabilityDomain"] = "xxxx:US-ASHBURN-AD-3"
    raw["systemPool"]["availabilityDomains"] = ["Uocm:US-ASHBURN-AD-1", "xxxx:US-ASHBURN-AD-3"]
    load_stack(raw, SOURCE, EXAMPLE_REGION)


def test_an_availability_domain_listed_twice_is_refused() -> None:
    raw = raw_config("full")
    raw["systemPool"]["availabilityDomains"].append("Uocm:US-ASHBURN-AD-1")
    assert problems(raw) == [
        f"{SOURCE}: systemPool.availabilityDomains[2] = 'Uocm:US-ASHBURN-AD-1': is listed twice; list each "
        "availability domain once"
    ]
