"""The oke-gpu-rdma component package: the program's components as a Pulumi plugin.

The Pulumi CLI runs `<venv python> -u <this folder> <engine address>` from this folder; the SDK's
component host infers the schema from each component's Args TypedDict and output annotations
(pulumi.provider.experimental.analyzer), prints its port and serves GetSchema and Construct. The
type tokens are oke-gpu-rdma:index:<Component>, the ones the program's own components register
(oke_gpu_rdma/common/resource_types.py), so a resource has the same URN whether a Python program declares it
or a program in another language constructs it through this package.
"""

import sys
from pathlib import Path

# The components live at the repository root, beside the Pulumi program that uses them directly;
# this folder is the plugin's own (the root's Pulumi.yaml is the program's).
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from pulumi.provider.experimental import component_provider_host

from components.package import PACKAGE_COMPONENTS, PACKAGE_NAME, PACKAGE_NAMESPACE, PACKAGE_VERSION

if __name__ == "__main__":
    # The version is pyproject.toml's (components/package.py); without one the host serves 0.0.0.
    component_provider_host(
        list(PACKAGE_COMPONENTS), name=PACKAGE_NAME, namespace=PACKAGE_NAMESPACE, version=PACKAGE_VERSION
    )
