"""tools/kube_feature_gates.py: the table regenerates from kube_features.go's VersionedSpecs literals."""

from __future__ import annotations

from pathlib import Path

from oke_gpu_rdma.claims import feature_gate_table
from tools import kube_feature_gates

# The literal form kube_features.go uses (two gates, one not DRA).
SAMPLE = """
var defaultVersionedKubernetesFeatureGates = map[featuregate.Feature]featuregate.VersionedSpecs{
	DRAConsumableCapacity: {
		{Version: version.MustParse("1.34"), Default: false, PreRelease: featuregate.Alpha},
		{Version: version.MustParse("1.36"), Default: true, PreRelease: featuregate.Beta},
	},

	InPlacePodVerticalScaling: {
		{Version: version.MustParse("1.27"), Default: false, PreRelease: featuregate.Alpha},
	},

	DRAAdminAccess: {
		{Version: version.MustParse("1.36"), Default: true, PreRelease: featuregate.GA, LockToDefault: true}, // GA
	},
}
"""


def test_parse_keeps_the_dra_gates_with_their_specs(tmp_path: Path) -> None:
    assert kube_feature_gates.parse(SAMPLE) == {
        "DRAAdminAccess": [(1, 36, True, "GA", True)],
        "DRAConsumableCapacity": [(1, 34, False, "Alpha", False), (1, 36, True, "Beta", False)],
    }
    source = tmp_path / "kube_features.go"
    source.write_text(SAMPLE)
    out = tmp_path / "table.py"
    assert kube_feature_gates.main([str(source), "--source", "test", "--out", str(out)]) == 0
    namespace: dict[str, object] = {}
    exec(compile(out.read_text(), str(out), "exec"), namespace)
    assert namespace["VERSIONED_SPECS"] == {
        "DRAAdminAccess": ((1, 36, True, "GA", True),),
        "DRAConsumableCapacity": ((1, 34, False, "Alpha", False), (1, 36, True, "Beta", False)),
    }


def test_the_committed_table_is_what_the_tool_renders() -> None:
    """Rendering the committed table again gives the same data (it was made by the tool, then ruff-formatted)."""
    gates = {k: list(v) for k, v in feature_gate_table.VERSIONED_SPECS.items()}
    namespace: dict[str, object] = {}
    exec(compile(kube_feature_gates.render(gates, feature_gate_table.SOURCE), "table", "exec"), namespace)
    assert namespace["VERSIONED_SPECS"] == feature_gate_table.VERSIONED_SPECS
    assert namespace["SOURCE"] == feature_gate_table.SOURCE
