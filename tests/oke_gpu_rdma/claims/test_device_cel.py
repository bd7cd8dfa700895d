"""CEL selectors evaluated with the semantics of Kubernetes DRA (real outcomes on the modelled node)."""

from __future__ import annotations

import pytest

from oke_gpu_rdma.claims.candidates import ClaimToAllocate
from oke_gpu_rdma.claims.device_cel import compile_selector, selector_matches
from oke_gpu_rdma.claims.inventory import Device, ResourceSlice, node_inventory
from oke_gpu_rdma.claims.spec import parse_claim
from oke_gpu_rdma.common.errors import SelectorError
from oke_gpu_rdma.drivers import dranet, nvidia_gpu
from oke_gpu_rdma.nodes.shape_catalog import CATALOG

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


def test_a_remembered_outcome_raises_again_with_the_same_message() -> None:
    """Each selector evaluates once per device; a runtime error is remembered and raised on every use,
    as evaluating again would."""
    compiled = compile_selector('device.attributes["dra.net"].ifName == "remembered"')
    messages = []
    for _ in range(2):
        with pytest.raises(SelectorError) as info:
            compiled.matches(GPU0)
        messages.append((str(info.value), info.value.expression, info.value.device))
    assert messages[0] == messages[1] and "gpu-0" in messages[0][0]
    assert compiled.matches(RDMA0) is False and compiled.matches(RDMA0) is False


# Selectors whose domain lookups are rewritten for evaluation; each must type-check as written does.
REWRITTEN = (
    'device.attributes["dra.net"].rdma',
    'device.attributes["dra.net"].ifName == "rdma0"',
    'has(device.attributes["nope"].x)',
    'device.capacity["gpu.nvidia.com"].memory.isGreaterThan(quantity("1Gi"))',
    'device.capacity["gpu.nvidia.com"].memory > 1',  # Quantity and int: no overload, as written
    'device.capacity["gpu.nvidia.com"].memory',  # a Quantity, not a bool
    'device.attributes["dra.net"]',  # a map, not a bool
    "device.attributes[1].rdma",  # a map of strings indexed by an int
    'device.attributes["dra" + ".net"].size() == 0',
    'device.attributes[device.attributes["dra.net"].ifName].x == 1',
    'device.attributes["dra.net"].ifName.startsWith(',  # a syntax error
    'device.attributes["resource.kubernetes.io"].pcieRoot == device.attributes["dra.net"].?x.orValue("")',
)


@pytest.mark.parametrize("expression", REWRITTEN)
def test_the_rewritten_domain_lookup_type_checks_as_the_selector_as_written(expression: str) -> None:
    """The judge compiles only the rewritten selector when it compiles; that is sound only if it is
    accepted exactly when the selector as written is, with the same result type."""
    from oke_gpu_rdma.claims.device_cel import _ENV, _rewrite_domain_lookups

    rewritten = _rewrite_domain_lookups(expression)
    assert rewritten != expression

    def checked(text: str) -> str | None:
        try:
            return str(_ENV.compile(text).return_type().name())
        except Exception:
            return None

    assert checked(rewritten) == checked(expression)


def test_domain_lookups_run_inside_cel_and_leave_nothing_behind() -> None:
    """cel-expr-python keeps the arguments of Python functions that take maps or messages alive; the
    empty-map default for unknown domains is an optional index instead, so evaluating leaves no objects
    (a lookup function written in Python left the device's attribute maps behind on every call)."""
    import gc

    from oke_gpu_rdma.claims.device_cel import device_variable

    program = compile_selector(
        'has(device.attributes["nope"].x) || device.attributes["dra.net"].rdma'
    ).program
    data = [device_variable(d) for d in (RDMA0, ETH1)]
    program.eval(data=data[0])
    gc.collect()
    before = len(gc.get_objects())
    for _ in range(50):
        for variable in data:
            program.eval(data=variable)
    gc.collect()
    assert len(gc.get_objects()) - before < 20


def test_the_lookup_helpers_are_not_functions_a_selector_can_call() -> None:
    """Kubernetes declares no such function, so a selector calling one is invalid at admission."""
    with pytest.raises(SelectorError, match="undeclared reference"):
        compile_selector('__dra_attributes(device.attributes, "dra.net").size() == 0')


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
