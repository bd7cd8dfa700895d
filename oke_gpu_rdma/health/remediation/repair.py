"""The repair Job's program: ask OKE to replace one node's instance in its node pool.

OCI Container Engine DeleteNode (``DELETE /nodePools/{nodePoolId}/node/{nodeId}``, oci-python-sdk 2.189.0
``ContainerEngineClient.delete_node``) with ``is_decrement_size=False``: the pool keeps its size and launches a
replacement from its own node config, so in its compute cluster (``nodeConfigDetails.computeClusterId``). The
node was drained already (the remediation controller), hence no eviction grace (``PT0M``). The Job's pod signs
with OKE Workload Identity (``get_oke_workload_identity_resource_principal_signer``): its service account is
the principal an IAM policy names (docs/health.md). pulumi-oci 5.5.0 has no GPU host repair resource and the
OCI API of OKE's in-cluster GPU host repair (NodeRepairConfig) is not in the SDK, so replacement is the repair.

Run by ``python3 repair.py`` with NODE_NAME, NODE_OCID (the node's providerID) and NODE_POOL_ID set; the SDK is
installed by the Job from the hashed lock beside this file.
"""

from __future__ import annotations

import importlib
import os
import sys


def main() -> int:
    # Installed in the Job's pod only (from repair.lock), never by the program's requirements.
    oci = importlib.import_module("oci")

    node, instance, pool = os.environ["NODE_NAME"], os.environ["NODE_OCID"], os.environ["NODE_POOL_ID"]
    if not instance.startswith("ocid1.instance."):
        print(f"{node}: providerID {instance!r} is not an instance OCID; not replaced", file=sys.stderr)
        return 1
    signer = oci.auth.signers.get_oke_workload_identity_resource_principal_signer()
    client = oci.container_engine.ContainerEngineClient({"region": signer.region}, signer=signer)
    response = client.delete_node(
        pool,
        instance,
        is_decrement_size=False,
        override_eviction_grace_duration="PT0M",
        is_force_deletion_after_override_grace_duration=True,
    )
    print(
        f"{node}: replacement of {instance} in node pool {pool} accepted, work request "
        f"{response.headers.get('opc-work-request-id', '?')}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
