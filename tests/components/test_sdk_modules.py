"""Only the SDK modules the program uses are loaded (components/sdk_modules.py), and every name resolves
to what the SDK's own package exports."""

from __future__ import annotations

import json
import subprocess
import sys

from preview.mock_runtime import ROOT

CHECK = """
import json, sys, importlib
import components  # installs the deferral, as __main__.py's imports do
import pulumi_oci as oci, pulumi_kubernetes as k8s
pairs = [
    (oci.identity.Policy, "pulumi_oci.identity.policy", "Policy"),
    (oci.core.Vcn, "pulumi_oci.core.vcn", "Vcn"),
    (oci.core.get_services, "pulumi_oci.core.get_services", "get_services"),
    (oci.core.GetServicesFilterArgs, "pulumi_oci.core._inputs", "GetServicesFilterArgs"),
    (oci.containerengine.NodePoolNodeConfigDetailsArgs, "pulumi_oci.containerengine._inputs",
     "NodePoolNodeConfigDetailsArgs"),
    (k8s.helm.v3.ReleaseArgs, "pulumi_kubernetes.helm.v3.Release", "ReleaseArgs"),
    (k8s.core.v1.Namespace, "pulumi_kubernetes.core.v1.Namespace", "Namespace"),
    (k8s.meta.v1.ObjectMetaArgs, "pulumi_kubernetes.meta.v1._inputs", "ObjectMetaArgs"),
]
same = [value is getattr(importlib.import_module(module), name) for value, module, name in pairs]
loaded = sorted(m for m in sys.modules if m.startswith("pulumi_oci.identity."))
print(json.dumps({"same": same, "identity": loaded}))
"""

FALLBACK = """
import components, pulumi_oci as oci
# A name no module of its own name defines: the package's own __init__ runs, and it resolves.
print(oci.identity.DomainsAppArgs is __import__("pulumi_oci.identity.domains_app", fromlist=["x"]).DomainsAppArgs)
try:
    oci.identity.NoSuchThing
except AttributeError as err:
    print(err)
"""


def _run(script: str) -> str:
    result = subprocess.run(
        [sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=300
    )
    assert result.returncode == 0, result.stderr
    return result.stdout


def test_names_resolve_to_the_sdks_own_objects_loading_only_their_modules() -> None:
    found = json.loads(_run(CHECK))
    assert found["same"] == [True] * 8
    # Of identity's 230 modules, the policy's (the program's one IAM resource) alone.
    assert found["identity"] == ["pulumi_oci.identity.policy"]


def test_every_name_of_a_package_still_resolves() -> None:
    assert _run(FALLBACK).splitlines() == [
        "True",
        "module 'pulumi_oci.identity' has no attribute 'NoSuchThing'",
    ]
