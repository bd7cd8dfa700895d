"""Kubernetes' CEL libraries (k8s.io/apiserver/pkg/cel/library): semver, quantity, IP and CIDR, evaluated in
selectors on the modelled node."""

from __future__ import annotations

import pytest

from oke_gpu_rdma.claims.device_cel import compile_selector, selector_matches
from oke_gpu_rdma.claims.inventory import node_inventory, shape_inventory
from oke_gpu_rdma.common.errors import SelectorError
from oke_gpu_rdma.nodes.shape_catalog import CATALOG

B4 = CATALOG.topology("BM.GPU.B4.8")
GPU0 = node_inventory(B4).device("gpu-0")


def test_semver_library() -> None:
    """library/semverlib.go; version attributes are Semver values (compile.go getAttributeValue)."""
    version = 'device.attributes["gpu.nvidia.com"].driverVersion'
    assert selector_matches(f'{version}.isGreaterThan(semver("500.0.0"))', GPU0)
    assert not selector_matches(f'{version}.isLessThan(semver("500.0.0"))', GPU0)
    assert selector_matches(f"{version}.major() == 550 && {version}.minor() == 0", GPU0)
    assert selector_matches(f'{version}.compareTo(semver("v550", true)) == 0', GPU0)
    assert selector_matches('semver("1.2.3-rc.1").isLessThan(semver("1.2.3")) && isSemver("1.0.0")', GPU0)
    assert not selector_matches('isSemver("1.0")', GPU0)
    with pytest.raises(SelectorError, match="runtime error"):
        selector_matches('semver("not a version").major() == 1', GPU0)
    with pytest.raises(SelectorError, match="no matching overload"):
        compile_selector(f'{version} == semver("550.0.0") && semver("1.0.0") == "1.0.0"')


def test_quantity_library() -> None:
    """library/quantity.go; capacity values are Quantity (compile.go DeviceMatches)."""
    memory = 'device.capacity["gpu.nvidia.com"].memory'
    assert selector_matches(f'{memory}.isGreaterThan(quantity("39Gi"))', GPU0)  # A100-SXM4-40GB
    assert not selector_matches(f'{memory}.isGreaterThan(quantity("40Gi"))', GPU0)
    assert selector_matches(f'{memory}.compareTo(quantity("40Gi")) == 0', GPU0)
    assert selector_matches(f"{memory}.asInteger() == 40 * 1024 * 1024 * 1024", GPU0)
    assert selector_matches(
        'quantity("1.5k").add(500).isGreaterThan(quantity("1999")) && quantity("2").sign() == 1', GPU0
    )
    assert selector_matches('isQuantity("10Mi") && !isQuantity("10 Mi")', GPU0)
    assert selector_matches(
        'quantity("500m").asApproximateFloat() == 0.5 && !quantity("500m").isInteger()', GPU0
    )


# -- the IP and CIDR libraries (k8s.io/apiserver/pkg/cel/library/ip.go, cidr.go): selectors on the child range


def test_ip_and_cidr_functions_evaluate_on_the_child_range() -> None:
    rail = next(
        d
        for d in shape_inventory(CATALOG.topology("BM.GPU.B4.8"), "10.176.0.0/12").devices()
        if d.kind == "rail"
    )
    child = 'cidr(device.attributes["oke.dra.net"].rdmaChildIpv4Cidr)'
    cases = {
        f'{child}.containsIP("10.176.3.4")': True,
        f'{child}.containsIP(ip("10.208.0.1"))': False,
        f"{child}.prefixLength() == 12": True,
        f'cidr("10.0.0.0/8").containsCIDR({child})': True,
        f'{child}.containsCIDR("10.0.0.0/8")': False,
        'cidr("10.1.2.3/8").masked() == cidr("10.0.0.0/8") && cidr("10.1.2.3/8").ip() == ip("10.1.2.3")': True,
        'ip("10.0.0.1").family() == 4 && !isCIDR("10.0.0.0/33") && ip.isCanonical("10.0.0.1")': True,
        'ip("127.0.0.1").isLoopback() && ip("169.254.1.1").isLinkLocalUnicast() && ip("10.1.1.1").isGlobalUnicast()': True,
        'ip("224.0.0.1").isLinkLocalMulticast() && ip("::").isUnspecified() && !ip("::").isGlobalUnicast()': True,
        'isIP("fe80::1%eth0") || isIP("::ffff:1.2.3.4") || isIP("010.0.0.1")': False,
    }
    for expression, expected in cases.items():
        compiled = compile_selector(expression)
        assert compiled.unsupported is None, expression
        assert compiled.matches(rail) is expected, expression
    with pytest.raises(SelectorError, match="IPv4-mapped IPv6 address is not allowed"):
        compile_selector('ip("::ffff:1.2.3.4").family() == 6').matches(rail)
