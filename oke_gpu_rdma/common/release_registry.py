"""Every Helm release the stack installs, by its facts module: what the policy pack, the claim inventory and
the schedulability check iterate. A new DRA driver or release is one facts module and one line here.

The readers look the tuple up when they run (never a copy taken at import), so what is registered here is
what they see.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

from oke_gpu_rdma.common.release_facts import DriverFacts, ReleaseFacts, Serves
from oke_gpu_rdma.drivers import device_plugin, dranet, nvidia_gpu
from oke_gpu_rdma.drivers import gpu_operator_chart as gpu_operator
from oke_gpu_rdma.monitoring import kube_prometheus_stack
from oke_gpu_rdma.scheduling import kueue_chart as kueue
from oke_gpu_rdma.sriov import network_operator_chart as network_operator

# The GPU driver first: the claim inventory lists a node's slices in this order (the GPU slice, then DRANET's),
# which is the order a first-fit allocation meets their devices in.
RELEASES: Final[tuple[ReleaseFacts, ...]] = (
    nvidia_gpu.FACTS,
    dranet.FACTS,
    gpu_operator.FACTS,
    device_plugin.FACTS,
    network_operator.FACTS,
    kueue.FACTS,
    kube_prometheus_stack.FACTS,
)


def releases() -> tuple[ReleaseFacts, ...]:
    """The registered releases (read at call time: see the module's docstring)."""
    return RELEASES


def dra_drivers() -> tuple[DriverFacts, ...]:
    """Every DRA driver a registered release runs, in registry order."""
    return tuple(driver for release in releases() for driver in release.drivers)


def drivers_serving(serves: Serves) -> frozenset[str]:
    """The names of the registered drivers whose devices are ``serves`` (rails or GPUs)."""
    return frozenset(driver.name for driver in dra_drivers() if driver.serves == serves)


def classes_serving(serves: Serves) -> frozenset[str]:
    """The DeviceClasses the registered drivers of ``serves`` devices come with."""
    return frozenset(
        name for driver in dra_drivers() if driver.serves == serves for name in driver.device_classes
    )


def dra_driver_releases() -> tuple[ReleaseFacts, ...]:
    """The registered releases that run a DRA driver."""
    return tuple(release for release in releases() if release.drivers)


def dra_driver_chart_names() -> tuple[str, ...]:
    """The chart names the policy pack recognises a DRA driver's installation by."""
    return tuple(name for release in dra_driver_releases() for name in release.names)


def device_class_selectors() -> dict[str, tuple[str, ...]]:
    """DeviceClass name -> its CEL selectors, for the classes the registered drivers' charts (or seed 000) create."""
    return {
        name: tuple(selectors)
        for driver in dra_drivers()
        for name, selectors in driver.device_classes.items()
    }


def release_of_chart(chart: str) -> ReleaseFacts | None:
    """The registered release a recorded chart reference names, None for a chart not registered."""
    return next((release for release in releases() if chart in release.references), None)


# The classes of the drivers registered at import: the claim judge's default (a stack adds its own classes).
DEVICE_CLASS_SELECTORS: Final[Mapping[str, tuple[str, ...]]] = device_class_selectors()
