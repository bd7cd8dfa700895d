"""The cloud-init a custom-image RDMA GPU node boots with (plain text, no Pulumi).

A node pool with a custom image gets no default cloud-init from OKE, so this document both
prepares the node for the DRA path and joins it to the cluster: CRI-O NRI for DRANET (seed 000; the
30 s plugin timeout as oracle-quickstart/oci-hpc-oke's DRANET branches set it), unlimited memlock so
pods need no IPC_LOCK (seeds 000 and 001), ib_core in shared namespace mode for DRANET's oke-rdma
profile (DRANET's OKE documentation: it fails claims with "use shared RDMA mode" otherwise), and
systemd-networkd leaving the Oracle Cloud Agent's per-rail policy routes alone (oci-hpc-oke
`terraform/files/oke-ubuntu-cloud-init.sh`), and the node's place on the RDMA fabric as node labels from
its first registration (scripts/rdma-topology-labels.sh; docs/gpu-nodes.md "Fabric topology labels").
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from importlib import resources
from typing import Literal

import yaml

from oke_gpu_rdma.common.yamltext import dump
from oke_gpu_rdma.nodes.labels import (
    GPU_MEMORY_FABRIC_LABEL,
    RDMA_HPC_ISLAND_LABEL,
    RDMA_LOCAL_BLOCK_LABEL,
    RDMA_NETWORK_BLOCK_LABEL,
)

NRI_CONF = """\
# DRANET changes containers through NRI; moving RDMA devices can exceed the 2 s default timeout.
[crio.nri]
enable_nri = true
nri_listen = "/var/run/nri/nri.sock"
nri_plugin_request_timeout = "30s"
"""

MEMLOCK_CONF = """\
# RDMA pins memory (ibv_reg_mr); with no limit, pods need no IPC_LOCK and Pod Security baseline admits them.
[crio.runtime]
default_ulimits = [
  "memlock=-1:-1",
]
"""

IB_CORE_CONF = """\
# Shared RDMA namespace mode: DRANET's oke-rdma profile fails claims with "use shared RDMA mode" otherwise.
options ib_core netns_mode=1
"""

# SR-IOV pools in the exclusive mode: the RDMA CNI moves each VF's RDMA device into its pod (seed 001).
IB_CORE_EXCLUSIVE_CONF = """\
# Exclusive RDMA namespace mode: the RDMA CNI moves each VF's RDMA device into its pod's namespace.
options ib_core netns_mode=0
"""

NETWORKD_CONF = """\
# Keep the Oracle Cloud Agent's per-rail routes and rules when systemd-networkd reconfigures links.
[Network]
ManageForeignRoutes=no
ManageForeignRoutingPolicyRules=no
"""

# Joins the node to OKE: images with the `oke` node client bootstrap with it, others run the init
# script OKE publishes in the instance metadata (as OKE's own default cloud-init does). Arguments: the
# kubelet's extra flags, then optionally a command whose output adds flags (the topology labeller); it
# fails the bootstrap when it fails, so no RDMA node joins without its fabric labels.
BOOTSTRAP_SH = """\
#!/usr/bin/env bash
set -euo pipefail
kubelet_args="${1-}"
if [ $# -gt 1 ]; then
  shift
  more_args=$("$@")
  kubelet_args="${kubelet_args:+$kubelet_args }$more_args"
fi
if [ -n "$kubelet_args" ]; then set -- --kubelet-extra-args "$kubelet_args"; else set --; fi
if command -v oke >/dev/null 2>&1; then
  oke bootstrap "$@"
else
  curl --fail -H "Authorization: Bearer Oracle" -L0 \\
    http://169.254.169.254/opc/v2/instance/metadata/oke_init_script | base64 --decode >/var/run/oke-init.sh
  bash /var/run/oke-init.sh "$@"
fi
"""

# Paths on the node; tests and docs refer to them by these names.
NRI_PATH = "/etc/crio/crio.conf.d/60-dranet-nri.conf"
MEMLOCK_PATH = "/etc/crio/crio.conf.d/61-memlock.conf"
IB_CORE_PATH = "/etc/modprobe.d/ib_core.conf"
NETWORKD_PATH = "/etc/systemd/networkd.conf.d/60-foreign-routes.conf"
BOOTSTRAP_PATH = "/usr/local/sbin/oke-gpu-rdma-bootstrap.sh"
TOPOLOGY_LABELS_PATH = "/usr/local/sbin/oke-gpu-rdma-topology-labels.sh"

# Reads the instance metadata's RDMA topology and prints `--node-labels=...` (the script's header says
# how values are derived, and what a tenancy without RDMA topology data gets). The kubelet applies its
# --node-labels when it registers the node, so the labels are there before any pod can be placed. It may
# set any key outside the kubernetes.io and k8s.io namespaces: the kubelet refuses other keys of those
# namespaces at start (kubernetes cmd/kubelet/app/options/options.go ValidateKubeletFlags, with
# k8s.io/kubelet pkg/apis/well_known_labels.go IsKubeletLabel) and NodeRestriction refuses them and the
# node-restriction.kubernetes.io/ prefix (plugin/pkg/admission/noderestriction/admission.go). Our own
# oke-gpu-rdma/ prefix passes both. A second --node-labels (OKE's own bootstrap may pass one) merges with
# ours rather than replacing it: the flag is a MapStringString whose Set adds pairs after the first call
# (k8s.io/component-base cli/flag/map_string_string.go).
TOPOLOGY_LABELS_SH = resources.files(__package__).joinpath("scripts/rdma-topology-labels.sh").read_text()
# Multi-node NVLink shapes only: runs the labeller and adds the node's GPU memory fabric (the script's header).
FABRIC_LABEL_PATH = "/usr/local/sbin/oke-gpu-rdma-gpu-memory-fabric-label.sh"
FABRIC_LABEL_SH = resources.files(__package__).joinpath("scripts/gpu-memory-fabric-label.sh").read_text()
# The label keys, passed as arguments so labels.py stays their one home.
TOPOLOGY_LABELS_COMMAND = (
    TOPOLOGY_LABELS_PATH,
    RDMA_HPC_ISLAND_LABEL,
    RDMA_NETWORK_BLOCK_LABEL,
    RDMA_LOCAL_BLOCK_LABEL,
)


# libyaml's loader where PyYAML has it (the wheels do): the pack reads every pool's cloud-init.
_LOADER: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

TAINTS_FLAG = "--register-with-taints="
_TAINTS = re.compile(re.escape(TAINTS_FLAG) + r"(\S*)")


def registered_taints(text: str) -> tuple[str, ...]:
    """The taints (`key=value:Effect`) a node registers with, read back from a cloud-init that
    :func:`render_cloud_init` wrote (the last ``--register-with-taints=`` wins, as the kubelet's flag)."""
    found = _TAINTS.findall(text)
    return tuple(t for t in found[-1].strip("'\"").split(",") if t) if found else ()


@functools.lru_cache(maxsize=64)
def registered_label_keys(text: str) -> tuple[str, ...]:
    """The label keys a node registers with from the topology labeller, read back from a cloud-init that
    :func:`render_cloud_init` wrote (the arguments after :data:`TOPOLOGY_LABELS_PATH` in its runcmd); ()
    without it or when the text is no cloud-config. The values exist only on the node; the kubelet adds
    kubernetes.io/hostname itself."""
    try:
        document = yaml.load(text, Loader=_LOADER)
    except yaml.YAMLError:
        return ()
    commands = document.get("runcmd") if isinstance(document, dict) else None
    for command in commands if isinstance(commands, list) else ():
        if isinstance(command, list) and TOPOLOGY_LABELS_PATH in command:
            keys = tuple(str(k) for k in command[command.index(TOPOLOGY_LABELS_PATH) + 1 :])
            if FABRIC_LABEL_PATH in command:
                keys += (str(command[command.index(FABRIC_LABEL_PATH) + 1]),)
            return keys
    return ()


@dataclass(frozen=True)
class NodeBootstrap:
    """What differs between pools: the taints the kubelet registers the node with, the RDMA namespace mode."""

    taints: tuple[str, ...]
    rdma_netns: Literal["shared", "exclusive"] | None = "shared"
    """None: a pool without rails (rdma: none), whose nodes get only the OKE bootstrap with their taints."""
    gpu_memory_fabric: bool = False
    """A shape with multi-node NVLink: its nodes also register their GPU memory fabric (labels.py
    GPU_MEMORY_FABRIC_LABEL). Off for every other shape, so their cloud-init, and with it their node spec, is as
    before."""

    def kubelet_extra_args(self) -> str:
        return f"{TAINTS_FLAG}{','.join(self.taints)}" if self.taints else ""


@functools.lru_cache(maxsize=64)
def render_cloud_init(bootstrap: NodeBootstrap) -> str:
    """The `#cloud-config` document for one node pool, stable text for reviewable diffs.

    A pool without rails (``rdma_netns`` None) needs none of the RDMA preparation (NRI for DRANET, memlock,
    the namespace mode, the rail routes); its custom image still gets no default cloud-init from OKE, so it
    keeps the bootstrap that joins the node and registers its taints.
    """
    if bootstrap.rdma_netns is None:
        return "#cloud-config\n" + dump(
            {
                "write_files": [
                    {
                        "path": BOOTSTRAP_PATH,
                        "permissions": "0755",
                        "owner": "root:root",
                        "content": BOOTSTRAP_SH,
                    }
                ],
                "runcmd": [[BOOTSTRAP_PATH, bootstrap.kubelet_extra_args()]],
            }
        )
    files = [
        (NRI_PATH, NRI_CONF, "0644"),
        (MEMLOCK_PATH, MEMLOCK_CONF, "0644"),
        (IB_CORE_PATH, IB_CORE_CONF if bootstrap.rdma_netns == "shared" else IB_CORE_EXCLUSIVE_CONF, "0644"),
        (NETWORKD_PATH, NETWORKD_CONF, "0644"),
        (TOPOLOGY_LABELS_PATH, TOPOLOGY_LABELS_SH, "0755"),
        *(((FABRIC_LABEL_PATH, FABRIC_LABEL_SH, "0755"),) if bootstrap.gpu_memory_fabric else ()),
        (BOOTSTRAP_PATH, BOOTSTRAP_SH, "0755"),
    ]
    document = {
        "write_files": [
            {"path": path, "permissions": mode, "owner": "root:root", "content": content}
            for path, content, mode in files
        ],
        "runcmd": [
            # Persist netns_mode in the initramfs (ib_core loads early) and apply it to this boot too,
            # before the kubelet creates any pod namespace.
            ["update-initramfs", "-u"],
            # rdma(8): the mode can change only while no other network namespace exists; the initramfs
            # copy applies it from the next boot on.
            ["sh", "-c", f"rdma system set netns {bootstrap.rdma_netns} || true"],
            ["systemctl", "restart", "systemd-networkd"],
            # CRI-O reads its drop-ins when it starts; an image that already runs it must restart it.
            ["sh", "-c", "if systemctl is-active --quiet crio; then systemctl restart crio; fi"],
            # List form: cloud-init runs it without a shell, so the taint list needs no quoting. The
            # topology labeller adds the fabric labels every RDMA node registers with.
            [
                BOOTSTRAP_PATH,
                bootstrap.kubelet_extra_args(),
                *((FABRIC_LABEL_PATH, GPU_MEMORY_FABRIC_LABEL) if bootstrap.gpu_memory_fabric else ()),
                *TOPOLOGY_LABELS_COMMAND,
            ],
        ],
    }
    return "#cloud-config\n" + dump(document)
