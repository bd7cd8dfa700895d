"""The oke-gpu-rdma policy pack: its policies, and the analyzer the CLI (or preview/policy_check.py) talks to.

Every module of :mod:`oke_rdma_policies.rules` is one policy and declares its rule (name, default
level, settings model, validate; :mod:`oke_rdma_policies.registry`); :data:`RULES` is what the pack
collected from them. `policies/__main__.py` calls :func:`serve`; tests and the offline preview call
:func:`servicer`, the same servicer :func:`serve` puts behind gRPC
(:class:`sdk_adapter.PackAnalyzer`, the SDK's servicer deserializing the stack once for all stack
policies).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from pulumi_policy import Policy

from . import registry, rules, sdk_adapter, settings
from .sdk_adapter import PackAnalyzer
from .values import LazyProps

PACK_NAME: Final = "oke-gpu-rdma"
# The CLI takes the pack's version from PulumiPolicy.yaml; the SDK reports this one otherwise.
SDK_VERSION: Final = "0.0.1"
DESCRIPTION: Final = (
    "RDMA GPU clusters on OKE with DRA: DRANET child range, GPU/rail claim alignment, "
    "no device-plugin GPUs next to DRA rails, DRANET oke-rdma profile rules; with SR-IOV VFs: rdmaQoS, "
    "RDMA CNI mode, VF limits and rail PFs, a resource per rail, network references, the VF pool."
)

RULES: Final[list[registry.Rule]] = registry.collect(rules)
POLICIES: Final[list[Policy]] = [rule.policy for rule in RULES]


def validate_file(config: Mapping[str, Any]) -> list[str]:
    """Problems of a whole pack-config file for this pack's policies (what the CLI refuses), one per line."""
    return settings.validate_file(config, RULES)


def servicer() -> PackAnalyzer:
    """The analyzer servicer `serve()` puts behind gRPC, for in-process use."""
    return PackAnalyzer(PACK_NAME, SDK_VERSION, POLICIES, DESCRIPTION, LazyProps)


def serve() -> None:
    """Serve the pack as the Pulumi CLI expects: print the port, block until killed."""
    sdk_adapter.serve(servicer())
