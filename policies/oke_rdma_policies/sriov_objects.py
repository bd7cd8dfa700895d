"""SR-IOV objects as the engine sends them: node policies, networks and their CNI chains, IPPools, node selection.

The rules themselves (limits, names, the rdmaQoS check) are :mod:`oke_gpu_rdma.sriov.operator_objects`, shared with the
program. Here: reading the objects through the value guards, and matching node selectors and node
affinity against the labels a node pool's nodes start with.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from oke_gpu_rdma.common import resource_types
from oke_gpu_rdma.nodes.labels import INSTANCE_TYPE_LABEL
from oke_gpu_rdma.scheduling.node_selection import SelectionError, affinity_matches, selector_matches
from oke_gpu_rdma.sriov import operator_objects as sriov

from .kube import PlainResource
from .stack import StackView, node_cloud_init, node_pool_labels
from .values import UNKNOWN, PropertyTypeError, as_list, as_map, dig

NETWORK_TYPES: Final = (resource_types.SRIOV_NETWORK, resource_types.NETWORK_ATTACHMENT)
_NETNS_MODE: Final = re.compile(r"options\s+ib_core\s+netns_mode=([01])")


@dataclass
class Chain:
    """A network's CNI plugins as the operator (or Multus) runs them; ``field`` names where they come from."""

    plugins: list[Any]
    field: str
    single: bool = False
    """A NetworkAttachmentDefinition config that is one plugin, not a list."""

    def where(self, index: int) -> str:
        return self.field if self.single else f"{self.field}[{index}]"


class ChainError(ValueError):
    """A network whose CNI configuration text does not parse; the message says where and why."""


def _text(res: PlainResource, path: str, expected: str) -> str | Any | None:
    """The CNI configuration text at ``path``: a string, None when absent, UNKNOWN until apply;
    PropertyTypeError (saying it is ``expected``) for anything else."""
    text = dig(res.props, path)
    if text is None or text is UNKNOWN or isinstance(text, str):
        return text
    raise PropertyTypeError(path, expected, text)


def network_chain(res: PlainResource) -> Chain | Any | None:
    """The CNI chain of a SriovNetwork (its metaPlugins) or a NetworkAttachmentDefinition (spec.config).

    None when the network has no chain to check, UNKNOWN when the text is unknown until apply.
    """
    if res.type == resource_types.SRIOV_NETWORK:
        text = _text(res, "spec.metaPlugins", "a string of JSON plugin objects")
        if not isinstance(text, str):
            return text
        try:
            return Chain(sriov.parse_meta_plugins(text), "spec.metaPlugins")
        except sriov.MetaPluginsError as err:
            raise ChainError(f"spec.metaPlugins {err}") from None
    text = _text(res, "spec.config", "a string of CNI JSON")
    if not isinstance(text, str):
        return text
    try:
        config = json.loads(text)
    except json.JSONDecodeError as err:
        raise ChainError(f"spec.config is not JSON ({err.msg}); Multus cannot run this network") from None
    config = as_map(config, "spec.config")
    plugins = config.get("plugins")
    if plugins is None:
        return Chain([config], "spec.config", single=True)
    return Chain(as_list(plugins, "spec.config.plugins"), "spec.config.plugins")


def node_policies(view: StackView) -> list[PlainResource]:
    return view.of_type(resource_types.SRIOV_NODE_POLICY)


def spec_of(res: PlainResource) -> Mapping[str, Any] | Any:
    spec = res.props.get("spec")
    return spec if spec is UNKNOWN else as_map(spec, "spec")


def resource_of(res: PlainResource) -> Any:
    """spec.resourceName (a string, UNKNOWN or None)."""
    spec = spec_of(res)
    return UNKNOWN if spec is UNKNOWN else spec.get("resourceName")


def num_vfs(spec: Mapping[str, Any]) -> Any:
    value = spec.get("numVfs")
    if value is None or value is UNKNOWN:
        return value
    if isinstance(value, bool) or not isinstance(value, int):
        raise PropertyTypeError("spec.numVfs", "a whole number", value)
    return value


def _nic_selector_list(spec: Mapping[str, Any], key: str) -> list[Any] | Any:
    """A list of a node policy's spec.nicSelector (empty when absent), or UNKNOWN until apply."""
    selector = spec.get("nicSelector")
    if selector is UNKNOWN:
        return UNKNOWN
    values = as_map(selector, "spec.nicSelector").get(key)
    return values if values is UNKNOWN else as_list(values, f"spec.nicSelector.{key}")


def root_devices(spec: Mapping[str, Any]) -> list[Any] | Any:
    return _nic_selector_list(spec, "rootDevices")


def pf_names(spec: Mapping[str, Any]) -> list[Any] | Any:
    return _nic_selector_list(spec, "pfNames")


def shape_of(spec: Mapping[str, Any]) -> Any:
    """The shape a node policy's nodeSelector names (instance-type), or None."""
    selector = spec.get("nodeSelector")
    if selector is UNKNOWN:
        return UNKNOWN
    return as_map(selector, "spec.nodeSelector").get(INSTANCE_TYPE_LABEL)


# --- node selection ------------------------------------------------------------------------------------


def selects(selector: Any, affinity: Any, labels: Mapping[str, Any]) -> bool:
    """Whether a nodeSelector map and a node affinity (required terms) both admit a node with ``labels``.

    Either may be None (no constraint); the rules are the scheduler's (oke_gpu_rdma.scheduling.node_selection).
    A malformed affinity, or one that decides by node fields, may select the node: it is counted in.
    """
    if isinstance(selector, Mapping) and not selector_matches(selector, labels):
        return False
    if not isinstance(affinity, Mapping):
        return True
    try:
        return affinity_matches(affinity, labels) is not False
    except SelectionError:
        return True


@dataclass
class Pool:
    """A GPU node pool of the stack and the labels its nodes start with."""

    res: PlainResource
    labels: dict[str, Any]

    @property
    def label(self) -> str:
        return f"node pool {self.res.name} ({self.labels.get(INSTANCE_TYPE_LABEL)})"


def known_pools(view: StackView, unchecked: list[str]) -> list[Pool]:
    """The stack's GPU node pools with known labels; pools with labels unknown until apply go to ``unchecked``."""
    found = []
    for pool in view.gpu_node_pools():
        try:
            labels = node_pool_labels(pool)
        except PropertyTypeError:
            continue  # gpu-device-plugin-off reports the malformed label list
        if labels is UNKNOWN:
            unchecked.append(f"node pool {pool.name}: initialNodeLabels unknown until apply")
            continue
        found.append(Pool(pool, labels))
    return found


def rdma_netns(pool: PlainResource) -> str | Any | None:
    """`shared` or `exclusive` from the ib_core option the pool's cloud-init writes; None if it writes none."""
    text = node_cloud_init(pool)
    if text is UNKNOWN:
        return UNKNOWN
    if text is None:
        return None
    found = _NETNS_MODE.findall(text)
    if not found:
        return None
    return "shared" if found[-1] == "1" else "exclusive"
