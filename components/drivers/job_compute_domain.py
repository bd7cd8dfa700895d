"""A ComputeDomain for one training job: the IMEX domain its pods share GPU memory in over multi-node NVLink.

The component declares the ComputeDomain (oke_gpu_rdma/drivers/compute_domains.py manifest); the driver's controller then
writes the channel ResourceClaimTemplate the job's pods claim beside their aligned GPU/rail claim. Its outputs are
what a pod template needs: the entry for spec.resourceClaims and the one for the container's resources.claims.
"""

import typing
from typing import Any, NotRequired, TypedDict

import pulumi
import pulumi_kubernetes as k8s

from components.component_inputs import ComponentInputError, from_wire, value_problems
from oke_gpu_rdma.common import resource_types
from oke_gpu_rdma.drivers import compute_domains
from stack_config.problems import ConfigProblem
from stack_config.settings_types import DnsLabel


class JobComputeDomainArgs(TypedDict):
    """The inputs of a job's ComputeDomain. The Kubernetes provider of the cluster comes from the resource options
    (``providers``); it waits for the component's ``depends_on`` (the driver's releases: their chart brings the
    CRD)."""

    namespace: str
    """The job's namespace (the channel template is made there)."""
    domain: NotRequired[str]
    """The ComputeDomain's name (default: the component's name); its channel template is `<domain>-channel`."""
    allocation_mode: NotRequired[str]
    """Single (default: one IMEX channel per pod) or All (every channel of the IMEX domain)."""


def _problems(args: JobComputeDomainArgs, name: str) -> list[ConfigProblem]:
    given = typing.cast(dict[str, Any], args)
    found = value_problems("namespace", given.get("namespace"), DnsLabel)
    found += value_problems("domain", given.get("domain", name), DnsLabel)
    mode = given.get("allocation_mode", "Single")
    if mode not in compute_domains.ALLOCATION_MODES:
        found.append(
            ConfigProblem(
                "allocationMode",
                mode,
                "is not an allocation mode of the driver's ComputeDomain (its CRD's enum: Single or All); use Single "
                "for one channel per pod",
            )
        )
    return found


class JobComputeDomain(pulumi.ComponentResource):
    """A ComputeDomain (resource.nvidia.com/v1beta1) for one job, and the claims its pods name."""

    domain: pulumi.Output[str]
    """The ComputeDomain's name."""
    channel_template: pulumi.Output[str]
    """The ResourceClaimTemplate of its channels (written by the driver's controller)."""
    pod_claim: pulumi.Output[dict[str, str]]
    """The entry of a pod's spec.resourceClaims that claims a channel."""
    container_claim: pulumi.Output[dict[str, str]]
    """The entry of a container's resources.claims that gets the channel device."""

    def __init__(
        self, name: str, args: JobComputeDomainArgs, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        super().__init__(resource_types.JOB_COMPUTE_DOMAIN_COMPONENT, name, None, opts)
        args = typing.cast(JobComputeDomainArgs, from_wire(args))
        found = _problems(args, name)
        if found:
            raise ComponentInputError("JobComputeDomain", name, found)
        domain = args.get("domain", name)
        mode = typing.cast(compute_domains.AllocationMode, args.get("allocation_mode", "Single"))
        manifest = compute_domains.manifest(domain, args["namespace"], mode)
        k8s.apiextensions.CustomResource(
            f"{name}-compute-domain",
            api_version=compute_domains.API_VERSION,
            kind=compute_domains.KIND,
            metadata=k8s.meta.v1.ObjectMetaArgs(name=domain, namespace=args["namespace"]),
            spec=manifest["spec"],
            # The CRD makes the spec immutable (`self == oldSelf`): a change is a new ComputeDomain.
            opts=pulumi.ResourceOptions(parent=self, replace_on_changes=["spec"], delete_before_replace=True),
        )
        self.domain = pulumi.Output.from_input(domain)
        self.channel_template = pulumi.Output.from_input(compute_domains.channel_template_name(domain))
        self.pod_claim = pulumi.Output.from_input(compute_domains.pod_claim(domain))
        self.container_claim = pulumi.Output.from_input(compute_domains.container_claim())
        self.register_outputs(
            {
                "domain": self.domain,
                "channelTemplate": self.channel_template,
                "podClaim": self.pod_claim,
                "containerClaim": self.container_claim,
            }
        )
