"""Every Kubernetes kind the program can declare has its rules in preview/plan/replace_rules.py: the kinds
of the examples' renderings, the kinds the components name (typed classes and custom resources) and the
objects of the vendored manifests the program declares."""

from __future__ import annotations

import ast
import inspect
import re
from pathlib import Path

import pulumi_kubernetes as k8s
import yaml

from preview.plan.replace_rules import KINDS

ROOT = Path(__file__).resolve().parents[3]


def _rendered_kinds() -> set[str]:
    kinds = set()
    for path in ROOT.glob("rendered/*/manifests/*.yaml"):
        for doc in yaml.safe_load_all(path.read_text()):
            kinds.add(f"{doc['apiVersion']}/{doc['kind']}")
    if any(ROOT.glob("rendered/*/resources/kubernetes-helm.sh-v3-release.*.yaml")):
        kinds.add("helm.sh/v3/Release")
    return kinds


def _token_kind(cls: type) -> str:
    """`kubernetes:resource.k8s.io/v1:DeviceClass` in the class's source -> `resource.k8s.io/v1/DeviceClass`."""
    (token,) = set(re.findall(r"'kubernetes:([^':]+):(\w+)'", inspect.getsource(cls)))
    group_version, kind = token
    return f"{group_version.removeprefix('core/')}/{kind}"


def _component_kinds() -> set[str]:
    kinds = set()
    for path in ROOT.glob("components/*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, ast.Call):
                continue
            chain = ast.unparse(node.func).split(".")
            if chain[0] != "k8s" or chain[1] in ("yaml", "apiextensions"):
                keywords = {k.arg: k.value for k in node.keywords}
                api, kind = keywords.get("api_version"), keywords.get("kind")
                if isinstance(api, ast.Constant) and isinstance(kind, ast.Constant):
                    kinds.add(f"{api.value}/{kind.value}")
                continue
            if len(chain) == 4 and chain[3][0].isupper() and not chain[3].endswith("Args"):
                kinds.add(_token_kind(getattr(getattr(getattr(k8s, chain[1]), chain[2]), chain[3])))
    return kinds


def test_the_enumeration_finds_what_the_program_declares() -> None:
    kinds = _rendered_kinds() | _component_kinds()
    for expected in (
        "resource.k8s.io/v1/DeviceClass",
        "resource.k8s.io/v1/ResourceClaimTemplate",
        "v1/Namespace",
        "v1/ConfigMap",
        "helm.sh/v3/Release",
        "kubeflow.org/v2beta1/MPIJob",
        "mellanox.com/v1alpha1/NicClusterPolicy",
        "sriovnetwork.openshift.io/v1/SriovNetworkNodePolicy",
    ):
        assert expected in kinds


def test_every_kind_the_program_can_declare_has_its_rules() -> None:
    missing = (_rendered_kinds() | _component_kinds()) - KINDS
    assert not missing, (
        f"kinds without a rule entry in preview/plan/replace_rules.py KINDS: {sorted(missing)}"
    )
