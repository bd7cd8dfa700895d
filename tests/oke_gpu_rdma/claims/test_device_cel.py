"""CEL selectors evaluated with the semantics of Kubernetes DRA (real outcomes on the modelled node)."""

from __future__ import annotations

import pytest

from oke_gpu_rdma.claims.candidates import ClaimToAllocate
from oke_gpu_rdma.claims.device_cel import compile_selector, selector_matches
from oke_gpu_rdma.claims.inventory import Device, ResourceSlice, node_inventory
from oke_gpu_rdma.claims.spec import parse_claim
from oke_gpu_rdma.errors import SelectorError
from oke_gpu_rdma.releases import dranet, nvidia_gpu
from oke_gpu_rdma.shape_catalog import CATALOG

B4 = CATALOG.topology("BM.GPU.B4.8")
INV = node_inventory(B4)
RDMA0 = INV.device("rdma0")
ETH1 = INV.device("eth1")
GPU0 = INV.device("gpu-0")
CARELESS = 'device.attributes["dra.net"].ifName.startsWith("rdma")'
# An IB-only device (RDMA without a netdev): DRANET publishes it with rdmaDevice but no ifName.
IB_ONLY = Device(
    "dra.net",
    "node-1",
    "pci-0000-e1-00-0",
    {"dra.net/rdma": True, "dra.net/rdmaDevice": "mlx5_20", "dra.net/pciAddress": "0000:e1:00.0"},
    label="IB-only mlx5_20",
)


def test_driver_and_attributes_by_domain() -> None:
    assert selector_matches(dranet.CLASS_SELECTOR, RDMA0)
    assert not selector_matches(dranet.CLASS_SELECTOR, GPU0)
    assert selector_matches(nvidia_gpu.CLASS_SELECTOR, GPU0)
    assert selector_matches('device.attributes["resource.kubernetes.io"].pcieRoot == "pci0000:3e"', GPU0)
    assert selector_matches('device.capacity["gpu.nvidia.com"].memory.compareTo(quantity("40Gi")) >= 0', GPU0)


def test_capacity_is_a_quantity_so_comparing_it_with_an_int_does_not_compile() -> None:
    """cel/compile.go declares capacity values as apiservercel.QuantityDeclType: `>=` with an int has no
    overload, so the API server rejects the selector at admission."""
    with pytest.raises(SelectorError, match="no matching overload"):
        compile_selector('device.capacity["gpu.nvidia.com"].memory >= 40 * 1024 * 1024 * 1024')


def test_rail_selector_matches_rails_only() -> None:
    matched = [d.display for d in INV.devices() if selector_matches(dranet.RAIL_SELECTOR, d)]
    assert matched == [f"rdma{i}" for i in range(16)]


def test_unknown_domain_is_an_empty_map() -> None:
    assert not selector_matches('has(device.attributes["nope"].x)', RDMA0)
    assert not selector_matches('"x" in device.attributes["nope"]', RDMA0)
    assert not selector_matches("has(device.capacity['nope'].memory)", GPU0)


def test_missing_key_is_a_runtime_error_that_quotes_the_expression() -> None:
    with pytest.raises(SelectorError) as info:
        selector_matches('device.attributes["dra.net"].ifName == "rdma0"', GPU0)
    message = str(info.value)
    assert 'device.attributes["dra.net"].ifName == "rdma0"' in message
    assert "runtime error" in message and "gpu-0" in message
    assert info.value.expression == 'device.attributes["dra.net"].ifName == "rdma0"'


def test_compile_error_quotes_the_expression() -> None:
    with pytest.raises(SelectorError, match=r"CEL compile error in selector 'device\.driver ==='"):
        compile_selector("device.driver ===")


def test_non_bool_result_aborts() -> None:
    """compile.go DeviceMatches: a dyn result that is not a bool is a runtime error."""
    with pytest.raises(SelectorError, match="could not be converted to bool"):
        selector_matches('device.attributes["dra.net"].ifName', RDMA0)


def test_non_bool_type_is_a_compile_error() -> None:
    """compile.go CompileCELExpression: "must evaluate to bool or the unknown type" (driver is a string)."""
    with pytest.raises(SelectorError, match="must evaluate to bool or the unknown type, not string"):
        compile_selector("device.driver")


def test_careless_selector_on_the_modelled_node_does_not_match_eth1() -> None:
    # Every DRANET device on the modelled node has an ifName, so the missing has() does not bite here,
    # and eth1 fails startsWith("rdma"). It still lacks the rdma check the seed selector has.
    assert not selector_matches(CARELESS, ETH1)
    assert [d.display for d in INV.devices() if d.driver == "dra.net" and selector_matches(CARELESS, d)] == [
        f"rdma{i}" for i in range(16)
    ]


def test_careless_selector_errors_on_a_device_without_if_name_and_aborts_allocation() -> None:
    with pytest.raises(SelectorError, match="ifName"):
        selector_matches(CARELESS, IB_ONLY)
    assert not selector_matches(dranet.RAIL_SELECTOR, IB_ONLY)  # has() guards it
    node = INV.with_slices(ResourceSlice("dra.net", "node-1-ib", "node-1", (IB_ONLY,)))
    claim = parse_claim(
        {
            "devices": {
                "requests": [
                    {
                        "name": "rails",
                        "exactly": {
                            "deviceClassName": "dra.net",
                            "count": 1,
                            "selectors": [{"cel": {"expression": CARELESS}}],
                        },
                    }
                ]
            }
        }
    )
    with pytest.raises(SelectorError) as info:
        ClaimToAllocate(claim, node.devices())
    assert CARELESS in str(info.value)


def test_class_selector_short_circuits_request_selector() -> None:
    # The careless selector is never evaluated on GPUs: the dra.net class selector is false first.
    claim = parse_claim(
        {
            "devices": {
                "requests": [
                    {
                        "name": "rails",
                        "exactly": {
                            "deviceClassName": "dra.net",
                            "count": 2,
                            "selectors": [{"cel": {"expression": CARELESS}}],
                        },
                    }
                ]
            }
        }
    )
    (candidates,) = ClaimToAllocate(claim, INV.devices()).requests[0]
    assert [INV.devices()[p].display for p in candidates.candidates] == [f"rdma{i}" for i in range(16)]


def test_compiled_expressions_are_cached() -> None:
    first = compile_selector('device.driver == "cache-test"')
    assert compile_selector('device.driver == "cache-test"') is first


def test_string_extensions_and_bind_are_available() -> None:
    assert selector_matches('device.attributes["dra.net"].ifName.lowerAscii() == "rdma0"', RDMA0)
    assert selector_matches('cel.bind(d, device.attributes["dra.net"], d.rdma && d.numaNode == 3)', RDMA0)


def test_in_sees_only_the_domains_the_device_has() -> None:
    """compile.go newStringInterfaceMapWithDefault: only Find (lookups) falls back to the empty map;
    `in` tests the real keys. Failing variant before the fix: empty maps were pre-filled for every domain
    literal, so this was true on a GPU."""
    assert not selector_matches('"dra.net" in device.attributes && device.attributes["dra.net"].rdma', GPU0)
    assert selector_matches('"dra.net" in device.attributes && device.attributes["dra.net"].rdma', RDMA0)
    assert not selector_matches('"gpu.nvidia.com" in device.capacity', RDMA0)
    assert selector_matches('"gpu.nvidia.com" in device.capacity', GPU0)
    assert selector_matches('device.attributes["dra" + ".net"].size() == 0', GPU0)  # computed domain


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


def test_kubernetes_libraries_not_evaluated_here_compile_as_unsupported_not_invalid() -> None:
    """base.go: Lists, Regex, URLs, IP/CIDR, Sets, Format and two-variable comprehensions are part of the
    environment that validates DRA selectors, so such selectors are valid."""
    for expr in (
        'device.attributes["dra.net"].ifName.find("[0-9]+") == "0"',
        "[1].isSorted()",
        "[1].all(i, v, v > 0)",
    ):
        compiled = compile_selector(expr)
        assert compiled.unsupported
        with pytest.raises(SelectorError, match="does not evaluate"):
            compiled.matches(RDMA0)
    with pytest.raises(SelectorError, match="undeclared reference"):
        compile_selector("noSuchFunction(device.driver)")


# -- the IP and CIDR libraries (k8s.io/apiserver/pkg/cel/library/ip.go, cidr.go): selectors on the child range


def test_ip_and_cidr_functions_evaluate_on_the_child_range() -> None:
    from oke_gpu_rdma.claims.inventory import shape_inventory
    from oke_gpu_rdma.shape_catalog import CATALOG

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
