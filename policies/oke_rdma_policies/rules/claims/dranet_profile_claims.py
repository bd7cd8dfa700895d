"""dranet-oke-profile-claims (resource): `dra.net` claim config the OKE `oke-rdma` profile rejects.

DRANET's OKE provider (kubernetes-sigs/dranet `validateOKEProfileRequest`; seed 003) fails a claim
for an RDMA NIC whose opaque `dra.net` parameters (a NetworkConfig) set `interface.type:
Passthrough`, DHCP (`interface.addressing: DHCP` or the older `interface.dhcp: true`), unnumbered
addressing, or `interface.addresses`: the profile keeps the rail on the host and assigns the
child's address itself. The claim is allocated, then fails when the kubelet prepares it, so the
pod never starts.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from oke_gpu_rdma.drivers import dranet
from oke_rdma_policies.kube import DeviceClasses, PlainResource, request_classes, resource_claim_spec_v1
from oke_rdma_policies.registry import resource_rule
from oke_rdma_policies.report import Reporter
from oke_rdma_policies.stack import claim_validation
from oke_rdma_policies.values import UNKNOWN, as_list, as_map, contains_unknown, dig


def _applies(entry: Mapping[str, Any], spec: Any, classes: DeviceClasses) -> bool:
    """Whether a `dra.net` config entry reaches a request that can get DRANET devices.

    The kubelet hands a driver the claim's opaque config for that driver, and the config applies to the
    devices of the requests it names, or of every request when it names none (k8s.io/api resource/v1
    DeviceClaimConfiguration.requests; the driver filters by `opaque.driver`). So `dra.net` parameters
    reach DRANET only where the claim allocates DRANET devices: not on a claim, or on requests, that
    can only get GPUs. A request whose class is neither known DRANET nor known GPU may get rails.
    """
    used = request_classes(spec)

    def may_get_rails(names: set[Any] | None) -> bool:
        return names is None or bool(names & classes.dranet) or not names <= classes.gpu

    requests = entry.get("requests")
    if not isinstance(requests, list) or not requests:
        return not used or any(may_get_rails(names) for names in used.values())
    return any(may_get_rails(used.get(str(name).split("/")[0])) for name in requests)


def problems(interface: Mapping[str, Any], where: str) -> list[str]:
    found = []
    kind = interface.get("type")
    if isinstance(kind, str) and kind.lower() == "passthrough":
        found.append(
            f"{where}.type: {kind} asks DRANET to move the RDMA NIC into the pod; the oke-rdma profile keeps "
            "the rail on the host and gives the pod an IPvlan child, so it fails the claim "
            '("remove interface.type: Passthrough"). Fix: remove interface.type'
        )
    addressing = interface.get("addressing")
    if isinstance(addressing, str) and addressing.lower() in ("dhcp", "unnumbered"):
        found.append(
            f"{where}.addressing: {addressing}: the oke-rdma profile supports only the static child address "
            "it computes from the node's address, so it fails the claim. Fix: remove interface.addressing"
        )
    if interface.get("dhcp") is True:
        found.append(
            f"{where}.dhcp: true: the oke-rdma profile does not support DHCP, so it fails the claim. "
            "Fix: remove interface.dhcp"
        )
    addresses = interface.get("addresses")
    if isinstance(addresses, list) and addresses:
        shown = ", ".join(str(a) for a in addresses[:3])
        found.append(
            f"{where}.addresses: [{shown}]: the oke-rdma profile assigns each child its address in the child "
            "range (rail base + node position), so it fails a claim that brings its own "
            '("remove interface.addresses"). Fix: remove interface.addresses'
        )
    return found


def check(res: PlainResource, reporter: Reporter) -> None:
    spec = resource_claim_spec_v1(res)
    if spec is UNKNOWN:
        reporter.unchecked(f"{res.label}: spec unknown until apply")
        return
    base = "spec.spec.devices.config" if res.kind == "ResourceClaimTemplate" else "spec.devices.config"
    config = dig(spec, "devices.config")
    if config is UNKNOWN:
        reporter.unchecked(f"{res.label}: {base} unknown until apply")
        return
    classes = DeviceClasses()
    for i, entry in enumerate(as_list(config, base)):
        where = f"{base}[{i}]"
        entry = as_map(entry, where)
        opaque = entry.get("opaque")
        if opaque is UNKNOWN:
            reporter.unchecked(f"{res.label}: {where}.opaque unknown until apply")
            continue
        opaque = as_map(opaque, f"{where}.opaque")
        driver = opaque.get("driver")
        if driver is UNKNOWN:
            reporter.unchecked(f"{res.label}: {where}.opaque.driver unknown until apply")
            continue
        if driver != dranet.DRIVER or not _applies(entry, spec, classes):
            continue
        interface = dig(opaque, "parameters.interface", f"{where}.opaque")
        if interface is None:
            continue
        if interface is UNKNOWN:
            reporter.unchecked(f"{res.label}: {where}.opaque.parameters.interface unknown until apply")
            continue
        interface = as_map(interface, f"{where}.opaque.parameters.interface")
        for problem in problems(interface, f"{where}.opaque.parameters.interface"):
            reporter.violation(f"{res.label}: {problem}", res.urn)
        unknown = contains_unknown(interface, f"{where}.opaque.parameters.interface")
        if unknown:
            reporter.unchecked(f"{res.label}: {', '.join(unknown[:3])} unknown until apply")


RULE = resource_rule(
    name="dranet-oke-profile-claims",
    level="mandatory",
    description=(
        "dra.net claim config must not set what DRANET's oke-rdma profile rejects: interface.type "
        "Passthrough, DHCP or unnumbered addressing, or interface.addresses."
    ),
    validate=claim_validation(check),
)
