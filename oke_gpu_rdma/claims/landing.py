"""Where a claim can land in a mixed fleet: the shapes whose nodes have the devices it asks for.

The scheduler places a pod only on a node where each of its claims can be allocated
(kubernetes `pkg/scheduler/framework/plugins/dynamicresources`: Filter rejects a node whose
ResourceSlices cannot satisfy the claim). A claim for DRANET rails is therefore never placed on an
inference pool of GPUs without rails: its rail request matches no device there. Such a shape says
nothing about the claim, so the claim is judged on the shapes where every request (some subrequest of a
``firstAvailable`` request) has a device that its class and selectors accept.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from oke_gpu_rdma.claims.candidates import ClaimToAllocate
from oke_gpu_rdma.claims.inventory import shape_inventory
from oke_gpu_rdma.claims.spec import parse_claim
from oke_gpu_rdma.errors import AllocationAbortedError, ClaimValidationError, SelectorError
from oke_gpu_rdma.topology import Topology


def devices_exist(
    claim: Mapping[str, Any],
    topology: Topology,
    device_classes: Mapping[str, Sequence[str]],
    api_version: str | None = None,
) -> bool:
    """Whether a node of ``topology`` has, for every request of ``claim``, a device the request accepts.

    True as well when the question has no answer here (an invalid claim, a CEL error, an unknown
    DeviceClass): the judge reports those on every shape alike.
    """
    try:
        spec = parse_claim(claim, api_version=api_version)
        prepared = ClaimToAllocate(spec, shape_inventory(topology).devices(), device_classes)
    except (ClaimValidationError, SelectorError, AllocationAbortedError):
        return True
    return all(any(alt.candidates for alt in alts) for alts in prepared.requests)
