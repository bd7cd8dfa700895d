"""The versioned DRA feature gates, read at a release (kube_features.go VersionedSpecs semantics)."""

from __future__ import annotations

import pytest

from oke_gpu_rdma.claims import feature_gates
from oke_gpu_rdma.claims.feature_gate_table import SOURCE, VERSIONED_SPECS


@pytest.mark.parametrize(
    ("gate", "on"),
    [
        # v1.34 / v1.35 / v1.36 defaults, from kubernetes' versioned specs.
        ("DRAPrioritizedList", (True, True, True)),
        ("DRAAdminAccess", (True, True, True)),
        ("DRAConsumableCapacity", (False, False, True)),
        ("DRADeviceTaints", (False, False, True)),
        ("DRAPartitionableDevices", (False, False, True)),
        ("DRAExtendedResource", (False, False, True)),
        ("DRADeviceTaintRules", (False, False, False)),
        ("DRAListTypeAttributes", (False, False, False)),
    ],
)
def test_gate_defaults_per_release(gate: str, on: tuple[bool, bool, bool]) -> None:
    assert tuple(feature_gates.enabled(gate, v) for v in ("v1.34.1", "v1.35.0", "v1.36.4")) == on


def test_states_and_notes() -> None:
    assert feature_gates.state("DRAConsumableCapacity", "v1.36.4") == "beta and on"
    assert feature_gates.state("DRAPrioritizedList", "v1.36.4") == "GA and on"
    assert feature_gates.state("DRAConsumableCapacity", "v1.33.0") == "not in the release"
    assert feature_gates.gate_note("DRADeviceTaints", "v1.35.2") == (
        "feature gate DRADeviceTaints is alpha and off at v1.35; on from v1.36"
    )
    assert feature_gates.release("1.36") == (1, 36)
    with pytest.raises(feature_gates.KubernetesVersionError):
        feature_gates.release("v1")


def test_the_table_cites_its_source_and_covers_every_claim_field_gate() -> None:
    assert "kube_features.go" in SOURCE
    assert set(feature_gates.CLAIM_FIELD_GATES.values()) <= set(VERSIONED_SPECS)


def test_the_claim_fields_a_release_drops() -> None:
    """Each gated claim field whose gate is off at the release, with that gate; none from v1.36."""
    assert feature_gates.disabled_claim_fields("v1.36.4") == {}
    assert feature_gates.disabled_claim_fields("v1.35.0") == {
        "tolerations": "DRADeviceTaints",
        "distinctAttribute": "DRAConsumableCapacity",
        "capacity": "DRAConsumableCapacity",
    }
    assert set(feature_gates.disabled_claim_fields("v1.33")) == set(feature_gates.CLAIM_FIELD_GATES)


def test_a_version_that_is_not_a_string_is_refused_as_malformed() -> None:
    """The release parse is cached by string; anything else still gets the one-line refusal."""
    for version in (["v1.36"], 136, None):
        with pytest.raises(feature_gates.KubernetesVersionError, match=r"is not of the form v1\.36\.4"):
            feature_gates.release(version)  # type: ignore[arg-type]
