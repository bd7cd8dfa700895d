"""The stacks the e2e tests apply: the program (__main__.py) run offline on a stack file, as `make preview`
runs it, and what it declares: the validated config, the Kubernetes objects, the Helm releases' values and
the node pools' cloud-init."""

from __future__ import annotations

import base64
import functools
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from preview import rendering
from preview.cli import stack_file
from preview.mock_runtime import RecordedResource, pulumi_config_map, run_program
from preview.stacks import EXAMPLES
from stack_config.loading import Stack, load_program_stack
from tests.strict_yaml import load_file

ROOT = Path(__file__).resolve().parents[2]
FIXTURE_STACKS = ROOT / "tests" / "fixtures" / "stacks"
# The example stacks (fleet: B4.8 beside GB200-v3.4 with Kueue and the default templates), and B4.8 beside
# GB200-v3.4 on the seed's existing cluster with templates of its own (tests/fixtures/stacks/Pulumi.gb200-b4.yaml).
STACKS = {
    "dev": EXAMPLES,
    "full": EXAMPLES,
    "sriov": EXAMPLES,
    "fleet": EXAMPLES,
    "gb200": EXAMPLES,
    "gb200-b4": FIXTURE_STACKS,
}
NODE_POOL_TYPE = "oci:ContainerEngine/nodePool:NodePool"
HELM_RELEASE_TYPE = "kubernetes:helm.sh/v3:Release"


@dataclass(frozen=True)
class RenderedStack:
    name: str
    stack: Stack
    resources: tuple[RecordedResource, ...]

    @functools.cached_property
    def manifests(self) -> dict[str, dict[str, Any]]:
        """rendered/<stack>/manifests/ as the program declares it now: file name -> object."""
        return rendering.manifests(self.resources)

    def helm_release(self, chart_suffix: str) -> dict[str, Any] | None:
        """The inputs of the Helm release whose chart ends with ``chart_suffix``, None without one."""
        for r in self.resources:
            if r.type == HELM_RELEASE_TYPE and str(r.inputs.get("chart", "")).endswith(chart_suffix):
                return dict(r.inputs)
        return None

    def helm_values(self, chart_suffix: str) -> dict[str, Any] | None:
        release = self.helm_release(chart_suffix)
        return None if release is None else dict(release.get("values") or {})

    def kueue_manager_config(self) -> dict[str, Any] | None:
        """The Configuration the stack gives Kueue's chart (managerConfig.controllerManagerConfigYaml)."""
        values = self.helm_values("/kueue")
        if values is None:
            return None
        config: dict[str, Any] = yaml.safe_load(values["managerConfig"]["controllerManagerConfigYaml"])
        return config

    def user_data(self, pool: str) -> str:
        """The cloud-init document of node pool ``pool`` (nodeMetadata.user_data, base64 as OCI takes it)."""
        for r in self.resources:
            if r.type == NODE_POOL_TYPE and r.inputs.get("name") == pool:
                return base64.b64decode(r.inputs["nodeMetadata"]["user_data"]).decode()
        raise KeyError(f"stack {self.name} declares no node pool {pool}")


@functools.cache
def rendered(name: str) -> RenderedStack:
    document = load_file(stack_file(name, [STACKS[name]]))
    config = pulumi_config_map(document)
    run = run_program(name, config)
    return RenderedStack(name, load_program_stack(config, name), tuple(run.resources))
