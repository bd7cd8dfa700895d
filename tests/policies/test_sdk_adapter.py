"""The pack's one use of pulumi-policy internals is pinned to the SDK release it copies.

`oke_rdma_policies.sdk_adapter` re-writes the SDK servicer's Analyze and AnalyzeStack and reads its
private names. These tests fail on an SDK upgrade until someone has compared the copied methods with
the new release and updated the pins (tests/test_layout.py keeps every other module off the
internals).
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import inspect
import re
from pathlib import Path

import pytest
from pulumi_policy import StackValidationArgs
from pulumi_policy.policy import _PolicyAnalyzerServicer

from preview import policy_check  # noqa: F401  (puts policies/ on sys.path)

from oke_rdma_policies import sdk_adapter  # isort: skip

ROOT = Path(__file__).resolve().parents[2]

# sha256 of the SDK methods PackAnalyzer re-writes, as pulumi-policy SDK_VERSION ships them.
COPIED_SOURCE = {
    "Analyze": "75db9cf8fc9d158596909b9b3f77bf48815990a6f513f2bb35728a67e4d8a515",
    "AnalyzeStack": "3917a008482c2387d7da37f65d889970933e8df8efc57270559e20b36be837bf",
}


def test_the_installed_sdk_is_the_release_the_adapter_copies() -> None:
    assert importlib.metadata.version("pulumi-policy") == sdk_adapter.SDK_VERSION


def test_the_pack_pins_the_release_the_adapter_copies() -> None:
    pins = re.findall(r"^pulumi-policy==(\S+)", (ROOT / "policies" / "requirements.txt").read_text(), re.M)
    assert pins == [sdk_adapter.SDK_VERSION]


@pytest.mark.parametrize("method", sdk_adapter.COPIED)
def test_the_copied_sdk_methods_are_unchanged(method: str) -> None:
    source = inspect.getsource(getattr(_PolicyAnalyzerServicer, method))
    assert hashlib.sha256(source.encode()).hexdigest() == COPIED_SOURCE[method], (
        f"pulumi-policy's _PolicyAnalyzerServicer.{method} changed: port the change to "
        f"oke_rdma_policies/sdk_adapter.py, then update SDK_VERSION and this pin"
    )


def test_stack_state_builds_each_kind_once_per_request() -> None:
    state = sdk_adapter.StackState()
    built: list[int] = []

    def build() -> list[int]:
        built.append(1)
        return [len(built)]

    first = state.get(list, build)
    assert state.get(list, build) is first and built == [1]
    assert sdk_adapter.StackState().get(list, build) == [2]


def test_args_the_sdks_own_policy_pack_made_get_a_state_of_their_own() -> None:
    """Under a plain PolicyPack each stack policy gets its own args: a state for them alone, kept for
    the rest of that policy's run."""
    args, other = StackValidationArgs([]), StackValidationArgs([])
    state = sdk_adapter.stack_state(args)
    assert sdk_adapter.stack_state(args) is state and sdk_adapter.stack_state(other) is not state
