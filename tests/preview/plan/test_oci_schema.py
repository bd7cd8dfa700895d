"""Update or replace for OCI inputs from terraform-provider-oci's schema (preview/plan/oci_schema.py,
tools/oci_schema_rules.py), and the plans that follow from it on the example stacks."""

from __future__ import annotations

import functools
import json
import textwrap
from pathlib import Path
from typing import Any

import pytest
import yaml

from preview.mock_runtime import ROOT
from preview.plan import oci_schema
from preview.rendering import RESOURCES
from tools import oci_schema_rules

NODE_POOL = "oci:ContainerEngine/nodePool:NodePool"
CLUSTER = "oci:ContainerEngine/cluster:Cluster"
SUBNET = "oci:Core/subnet:Subnet"


@pytest.mark.parametrize(
    ("token", "path", "old", "new", "replaces"),
    [
        # ForceNew in the schema although the SDK's docstring says "(Updatable)".
        (NODE_POOL, ("nodeConfigDetails", "nodePoolPodNetworkOptionDetails", "cniType"), "A", "B", True),
        (NODE_POOL, ("nodeConfigDetails", "size"), 2, 3, False),
        (NODE_POOL, ("nodeConfigDetails", "computeClusterId"), "a", "b", True),
        (NODE_POOL, ("nodeConfigDetails", "placementConfigs", 0, "availabilityDomain"), "a", "b", False),
        (NODE_POOL, ("nodeMetadata", "user_data"), "a", "b", False),
        (NODE_POOL, ("name",), "a", "b", False),
        # Not ForceNew although the docstring lacks "(Updatable)".
        (CLUSTER, ("endpointConfig", "isPublicIpEnabled"), False, True, False),
        (CLUSTER, ("endpointConfig", "nsgIds", 0), None, "ocid1.nsg", False),
        (CLUSTER, ("options", "addOns", "isKubernetesDashboardEnabled"), False, True, False),
        # customdiff.ForceNewIfChange("endpoint_config.0.subnet_id"): once set, a change replaces.
        (CLUSTER, ("endpointConfig", "subnetId"), "ocid1.subnet.a", "ocid1.subnet.b", True),
        (CLUSTER, ("endpointConfig", "subnetId"), None, "ocid1.subnet.b", False),
        (CLUSTER, ("vcnId",), "a", "b", True),
        (SUBNET, ("prohibitPublicIpOnVnic",), True, False, True),
        (SUBNET, ("ipv4cidrBlocks", 0), None, "10.0.0.0/24", False),
        (SUBNET, ("cidrBlock",), "10.0.0.0/24", "10.0.0.0/23", False),
        # A set of blocks: a changed element is removed and added; nothing in it is ForceNew.
        ("oci:Core/securityList:SecurityList", ("ingressSecurityRules", 0, "tcpOptions", "max"), 1, 2, False),
        ("oci:Core/computeCluster:ComputeCluster", ("placementConstraintDetails", "type"), "a", "b", False),
        ("oci:Core/computeCluster:ComputeCluster", ("availabilityDomain",), "a", "b", True),
        ("oci:Identity/policy:Policy", ("name",), "a", "b", True),
        ("oci:Identity/policy:Policy", ("statements", 0), "a", "b", False),
    ],
)
def test_schema_verdicts(token: str, path: tuple[str | int, ...], old: Any, new: Any, replaces: bool) -> None:
    verdict = oci_schema.verdict(token, path, old, new)
    assert verdict.known and verdict.replaces is replaces, verdict.why


def test_an_added_block_replaces_when_a_field_it_sets_is_force_new() -> None:
    # nodePoolPodNetworkOptionDetails is no ForceNew block, but its cniType is: adding the block sets it.
    path = ("nodeConfigDetails", "nodePoolPodNetworkOptionDetails")
    added = oci_schema.verdict(NODE_POOL, path, None, {"cniType": "OCI_VCN_IP_NATIVE"})
    assert added.replaces and "cniType ForceNew" in added.why
    # A block with nothing ForceNew in it is added in place.
    assert not oci_schema.verdict(
        NODE_POOL, ("nodeEvictionNodePoolSettings",), None, {"evictionGraceDuration": "PT1H"}
    ).replaces


def test_unknown_types_and_inputs_are_named_not_guessed() -> None:
    unknown_type = oci_schema.verdict("oci:Core/instance:Instance", ("shape",), "a", "b")
    assert unknown_type.replaces and not unknown_type.known
    unknown_input = oci_schema.verdict(NODE_POOL, ("noSuchInput",), "a", "b")
    assert not unknown_input.known and "has no input noSuchInput" in unknown_input.why


def _leaves(value: Any, path: tuple[str | int, ...] = ()) -> list[tuple[str | int, ...]]:
    if isinstance(value, dict):
        return [p for key, item in value.items() for p in _leaves(item, (*path, key))]
    if isinstance(value, list):
        return [p for i, item in enumerate(value) for p in _leaves(item, (*path, i))] or [path]
    return [path]


@functools.cache
def _rendered_oci_records() -> list[dict[str, Any]]:
    records = []
    for folder in sorted((ROOT / "examples").glob("Pulumi.*.yaml")):
        stack = folder.name.removeprefix("Pulumi.").removesuffix(".yaml")
        for path in sorted((ROOT / "rendered" / stack / RESOURCES).glob("oci-*.yaml")):
            records.append(yaml.safe_load(path.read_text()))
    return records


def test_every_oci_type_the_examples_render_is_in_the_generator_and_the_data() -> None:
    types = {r["type"] for r in _rendered_oci_records()}
    assert types, "no OCI records rendered"
    assert types <= set(oci_schema_rules.RESOURCE_TYPES)
    assert set(oci_schema_rules.RESOURCE_TYPES) == set(oci_schema.rules()["resources"])


def test_every_input_path_the_program_sets_has_a_rule() -> None:
    missing = [
        f"{r['type']} {r['name']} {path}"
        for r in _rendered_oci_records()
        for path in _leaves(r["inputs"])
        if not oci_schema.verdict(r["type"], path, "old", "new").known
    ]
    assert missing == []


def test_the_data_file_says_where_it_comes_from() -> None:
    data = json.loads(oci_schema.DATA_FILE.read_text())
    provenance = data["provenance"]
    assert provenance["version"].startswith("v") and len(provenance["commit"]) == 40
    assert (
        provenance["pulumiOci"] == (ROOT / "requirements.txt").read_text().split("pulumi-oci==")[1].split()[0]
    )
    for token, entry in data["resources"].items():
        assert entry["file"].startswith("internal/service/") and entry["terraform"].startswith("oci_"), token
        # The checkout's inputs are the SDK's: a checkout at another version would show here.
        assert "notInSdk" not in entry, token


def test_the_docstrings_are_a_cross_check_listing_where_they_are_wrong() -> None:
    wrong = {
        (token.rsplit(":", 1)[1], path): says_update
        for token, path, says_update in oci_schema.docstring_disagreements()
    }
    # Dangerous: the docstring says update, the provider replaces.
    assert wrong[("NodePool", "nodeConfigDetails.nodePoolPodNetworkOptionDetails.cniType")] is True
    # Noisy: the docstring says replace, the provider updates in place.
    for noisy in [
        ("Cluster", "endpointConfig.isPublicIpEnabled"),
        ("Cluster", "endpointConfig.nsgIds"),
        ("Cluster", "options.addOns.isKubernetesDashboardEnabled"),
        ("ComputeCluster", "placementConstraintDetails.targetNetworkBlockIds"),
        ("Subnet", "ipv4cidrBlocks"),
        ("Vcn", "isIpv6enabled"),
        ("SecurityList", "ingressSecurityRules.tcpOptions.max"),
    ]:
        assert wrong[noisy] is False, noisy


GO_SOURCE = textwrap.dedent(
    """
    func ExampleThingResource() *schema.Resource {
        return &schema.Resource{
            Timeouts: tfresource.DefaultTimeout,
            Schema: map[string]*schema.Schema{
                // Required
                "compartment_id": {
                    Type:     schema.TypeString,
                    Required: true,
                    ForceNew: true,
                },
                "note": {
                    Type:     schema.TypeString,
                    Optional: true,
                    Default:  "a } brace, in a string",
                },
                "config": {
                    Type:     schema.TypeList,
                    Optional: true,
                    MaxItems: 1,
                    Elem: &schema.Resource{
                        Schema: map[string]*schema.Schema{
                            /* a comment { with a brace */
                            "subnet_id": {Type: schema.TypeString, Required: true},
                            "tags": {Type: schema.TypeSet, Optional: true, ForceNew: true, Elem: &schema.Schema{Type: schema.TypeString}},
                        },
                    },
                },
                "state": {
                    Type:     schema.TypeString,
                    Computed: true,
                },
            },
            CustomizeDiff: customdiff.All(
                customdiff.ForceNewIfChange("config.0.subnet_id", func(ctx context.Context, old, new, meta interface{}) bool {
                    // Once set, the subnet cannot change.
                    return len(old.(string)) > 0
                }),
            )}
    }
    """
)


def test_the_go_schema_parser_reads_literals_as_the_sdk_declares_them(tmp_path: Path) -> None:
    fields, force_new_if_change, other = oci_schema_rules.parse_resource(GO_SOURCE, "ExampleThingResource")
    assert set(fields) == {"compartment_id", "note", "config", "state"}
    assert fields["compartment_id"].force_new and fields["compartment_id"].is_input
    assert not fields["state"].is_input
    config = fields["config"]
    assert (config.kind, config.collection, config.max_items) == ("block", "list", 1)
    assert (
        config.fields is not None and config.fields["tags"].force_new and config.fields["tags"].kind == "set"
    )
    assert force_new_if_change == [
        {"path": "config.0.subnet_id", "condition": "Once set, the subnet cannot change."}
    ]
    assert other == []
    assert oci_schema_rules.pulumi_path("config.0.subnet_id", fields, {}) == "config.subnetId"


def test_a_schema_given_by_an_expression_is_refused_by_name() -> None:
    source = 'func XResource() *schema.Resource {\n return &schema.Resource{\n Schema: map[string]*schema.Schema{\n "tags": tfresource.TagsSchema(),\n },\n }\n}\n'
    with pytest.raises(oci_schema_rules.SchemaParseError, match="field tags: schema given by an expression"):
        oci_schema_rules.parse_resource(source, "XResource")
