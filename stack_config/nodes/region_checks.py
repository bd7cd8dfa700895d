"""Checks that tie the stack to its region: availability domains and OCIDs in `oci:region`, the home
region for IAM, and the pool the acceptance jobs run in.

OCI resolves an availability domain or a regional OCID only in its own region, so a value from another
region fails the first `pulumi up` after some resources exist; IAM writes succeed only in the
tenancy's home region (OCI IAM documentation: "Managing Regions": 403 NotAllowed elsewhere).
"""

from __future__ import annotations

from collections.abc import Iterator

from oke_gpu_rdma.nodes.oci_regions import (
    availability_domain_problem,
    is_known_region,
    ocid_in_region,
    unknown_region,
)
from stack_config.model import StackConfig
from stack_config.problems import ConfigProblem

REGION_KEY = "oci:region"


def problems(config: StackConfig, region: str | None) -> list[ConfigProblem]:
    return list(_home_region(config)) + list(_acceptance_pool(config)) + list(_region(config, region))


def _home_region(config: StackConfig) -> Iterator[ConfigProblem]:
    if config.create_compute_cluster_policy and config.home_region is None:
        yield ConfigProblem(
            "homeRegion",
            None,
            "is required with createComputeClusterPolicy (the default): OCI writes IAM policies only in the "
            "tenancy's home region; set it (pulumi config set oke-gpu-rdma:homeRegion us-ashburn-1), or set "
            "createComputeClusterPolicy: false where the policy already exists",
        )


def _acceptance_pool(config: StackConfig) -> Iterator[ConfigProblem]:
    jobs = config.workloads.acceptance_jobs
    names = [pool.name for pool in config.node_pools]
    if jobs.node_pool is not None and jobs.node_pool not in names:
        yield ConfigProblem(
            "workloads.acceptanceJobs.nodePool",
            jobs.node_pool,
            f"no such pool in nodePools ({', '.join(names)})",
        )


def availability_domains(config: StackConfig) -> Iterator[tuple[str, str]]:
    """(key path, AD name) of every availability domain the stack config names."""
    for i, pool in enumerate(config.node_pools):
        if pool.availability_domain is not None:
            yield f"nodePools[{i}].availabilityDomain", pool.availability_domain
    for i, ad in enumerate(config.system_pool.availability_domains):
        yield f"systemPool.availabilityDomains[{i}]", ad


def regional_ocids(config: StackConfig) -> Iterator[tuple[str, str]]:
    """(key path, OCID) of every OCID the stack config names that lives in one region."""
    existing = config.network.existing
    if existing is not None:
        yield "network.existing.vcnId", existing.vcn_id
        for key, subnet in (
            ("workerSubnet", existing.worker_subnet),
            ("apiEndpointSubnet", existing.api_endpoint_subnet),
            ("loadBalancerSubnet", existing.load_balancer_subnet),
            ("podSubnet", existing.pod_subnet),
        ):
            if subnet is not None:
                yield f"network.existing.{key}.id", subnet.id
    if config.cluster.existing is not None:
        yield "cluster.existing.id", config.cluster.existing.id
    for i, pool in enumerate(config.node_pools):
        yield f"nodePools[{i}].imageId", pool.image_id
        if pool.compute_cluster_id is not None:
            yield f"nodePools[{i}].computeClusterId", pool.compute_cluster_id
    if config.system_pool.image_id is not None:
        yield "systemPool.imageId", config.system_pool.image_id
    # OCI Vault keys are regional; OKE and Block Volume use a key of the cluster's region.
    if config.encryption.kms_key_id is not None:
        yield "encryption.kmsKeyId", config.encryption.kms_key_id


def region_name_problems(region: str | None) -> list[ConfigProblem]:
    """`oci:region` missing or not an OCI region identifier: one line (needs no valid stack config, so a
    config that fails its model still hears about its region)."""
    if not region:
        return [
            ConfigProblem(
                REGION_KEY,
                None,
                "is missing; set the stack's region (pulumi config set oci:region us-ashburn-1)",
            )
        ]
    if not is_known_region(region):
        # One line for the region: every AD and OCID would otherwise be blamed for it.
        return [ConfigProblem(REGION_KEY, region, unknown_region(region))]
    return []


def _region(config: StackConfig, region: str | None) -> Iterator[ConfigProblem]:
    named = region_name_problems(region)
    if named or region is None:
        yield from named
        return
    for path, ad in availability_domains(config):
        problem = availability_domain_problem(ad, region)
        if problem is not None:
            yield ConfigProblem(path, ad, problem)
    listed = config.system_pool.availability_domains
    for i, ad in enumerate(listed):
        if ad in listed[:i]:
            # The pool places one set of nodes per AD: a second entry would be dropped without a word.
            yield ConfigProblem(
                f"systemPool.availabilityDomains[{i}]",
                ad,
                "is listed twice; list each availability domain once",
            )
    for path, ocid in regional_ocids(config):
        if not ocid_in_region(ocid, region):
            yield ConfigProblem(
                path,
                ocid,
                f"belongs to another region than {REGION_KEY} {region}; use the OCID of the resource in "
                f"{region} (a custom image must be imported there), or change oci:region",
            )
