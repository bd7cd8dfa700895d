"""The node cloud-init document (components/cloud_init.py)."""

from __future__ import annotations

import yaml

from oke_gpu_rdma.nodes import cloud_init, labels
from oke_gpu_rdma.nodes.cloud_init import NodeBootstrap, render_cloud_init


def files_of(text: str) -> dict[str, str]:
    document = yaml.safe_load(text)
    return {f["path"]: f["content"] for f in document["write_files"]}


def test_is_a_cloud_config_document() -> None:
    text = render_cloud_init(NodeBootstrap(taints=("nvidia.com/gpu=present:NoSchedule",)))
    assert text.startswith("#cloud-config\n")
    document = yaml.safe_load(text)
    assert set(document) == {"write_files", "runcmd"}


def test_enables_crio_nri_with_a_30s_plugin_timeout() -> None:
    nri = files_of(render_cloud_init(NodeBootstrap(taints=())))[cloud_init.NRI_PATH]
    assert "[crio.nri]" in nri
    assert "enable_nri = true" in nri
    assert 'nri_listen = "/var/run/nri/nri.sock"' in nri
    assert 'nri_plugin_request_timeout = "30s"' in nri


def test_unlimited_memlock_for_containers() -> None:
    conf = files_of(render_cloud_init(NodeBootstrap(taints=())))[cloud_init.MEMLOCK_PATH]
    assert "[crio.runtime]" in conf and '"memlock=-1:-1"' in conf


def test_shared_rdma_namespace_mode_is_persisted_and_applied() -> None:
    text = render_cloud_init(NodeBootstrap(taints=()))
    assert "options ib_core netns_mode=1" in files_of(text)[cloud_init.IB_CORE_PATH]
    commands = [" ".join(c) for c in yaml.safe_load(text)["runcmd"]]
    assert "update-initramfs -u" in commands
    assert any("rdma system set netns shared" in c for c in commands)


def test_networkd_leaves_foreign_routes_and_rules_alone() -> None:
    conf = files_of(render_cloud_init(NodeBootstrap(taints=())))[cloud_init.NETWORKD_PATH]
    assert "ManageForeignRoutes=no" in conf
    assert "ManageForeignRoutingPolicyRules=no" in conf


def test_registers_taints_and_bootstraps_last() -> None:
    text = render_cloud_init(
        NodeBootstrap(
            taints=(
                "nvidia.com/gpu=present:NoSchedule",
                "dedicated:NoExecute",
            )
        )
    )
    commands = yaml.safe_load(text)["runcmd"]
    assert commands[-1] == [
        cloud_init.BOOTSTRAP_PATH,
        "--register-with-taints=nvidia.com/gpu=present:NoSchedule,dedicated:NoExecute",
        *cloud_init.TOPOLOGY_LABELS_COMMAND,
    ]
    bootstrap = files_of(text)[cloud_init.BOOTSTRAP_PATH]
    assert 'set -- --kubelet-extra-args "$kubelet_args"' in bootstrap
    assert 'more_args=$("$@")' in bootstrap
    assert 'oke bootstrap "$@"' in bootstrap
    assert "instance/metadata/oke_init_script" in bootstrap


def test_no_taints_means_no_taint_flag() -> None:
    commands = yaml.safe_load(render_cloud_init(NodeBootstrap(taints=())))["runcmd"]
    assert commands[-1] == [cloud_init.BOOTSTRAP_PATH, "", *cloud_init.TOPOLOGY_LABELS_COMMAND]


def test_crio_picks_up_the_drop_ins_before_the_node_joins() -> None:
    commands = yaml.safe_load(render_cloud_init(NodeBootstrap(taints=())))["runcmd"]
    restart = ["sh", "-c", "if systemctl is-active --quiet crio; then systemctl restart crio; fi"]
    assert commands.index(restart) < len(commands) - 1


def test_a_node_without_rails_gets_only_the_bootstrap_with_its_taints() -> None:
    """rdma: none pools: no NRI, memlock, namespace mode or rail routes; the custom image still joins OKE and
    registers its taints."""
    text = cloud_init.render_cloud_init(
        cloud_init.NodeBootstrap(("nvidia.com/gpu=present:NoSchedule",), None)
    )
    document = yaml.safe_load(text)
    assert text.startswith("#cloud-config\n")
    assert document["write_files"] == [
        {
            "path": cloud_init.BOOTSTRAP_PATH,
            "permissions": "0755",
            "owner": "root:root",
            "content": cloud_init.BOOTSTRAP_SH,
        }
    ]
    assert document["runcmd"] == [
        [cloud_init.BOOTSTRAP_PATH, "--register-with-taints=nvidia.com/gpu=present:NoSchedule"]
    ]
    assert cloud_init.registered_taints(text) == ("nvidia.com/gpu=present:NoSchedule",)


def test_the_registered_label_keys_read_back_from_the_cloud_init() -> None:
    text = render_cloud_init(NodeBootstrap(taints=("nvidia.com/gpu=present:NoSchedule",)))
    assert cloud_init.registered_label_keys(text) == (
        labels.RDMA_HPC_ISLAND_LABEL,
        labels.RDMA_NETWORK_BLOCK_LABEL,
        labels.RDMA_LOCAL_BLOCK_LABEL,
    )
    assert cloud_init.registered_label_keys(render_cloud_init(NodeBootstrap((), None))) == ()
    assert cloud_init.registered_label_keys("#cloud-config\n: [") == ()
