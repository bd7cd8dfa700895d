"""The stack config's `workloads.claimTemplates`: which GPU/rail claim templates a stack asks for."""

from __future__ import annotations

from pydantic import (
    Field,
    StrictInt,
    field_validator,
)

from stack_config.settings_types import ConfigModel, DnsLabel, ShapeName


class ClaimTemplateConfig(ConfigModel):
    """A ResourceClaimTemplate pairing GPUs with the rails on their PCIe roots (or NUMA node)."""

    name: DnsLabel = Field(description="Template name; pods reference it in resourceClaims.")
    gpus_per_worker: StrictInt = Field(
        alias="gpusPerWorker", ge=1, description="GPUs one pod gets (with their rails)."
    )
    namespace: DnsLabel | None = Field(None, description="Defaults to workloads.namespace.")
    shapes: list[ShapeName] | None = Field(
        None,
        min_length=1,
        description="The shapes of the stack's rdma: dranet pools it is made for, each of which must hold it; "
        "default: every such shape whose nodes can align gpusPerWorker GPUs (the preview lists which shapes got "
        "it), refused when none can.",
    )

    @field_validator("shapes")
    @classmethod
    def _distinct_shapes(cls, value: list[str] | None) -> list[str] | None:
        if value is not None and len(set(value)) != len(value):
            repeated = sorted({s for s in value if value.count(s) > 1})
            raise ValueError(f"names a shape twice ({', '.join(repeated)}); list each once")
        return value
