"""The Grafana dashboard of the GPUs and rails, per node and per job (a pod holding GPUs), generated here
rather than copied: every query is PromQL over the metrics the pinned exporters document (the tests parse
each one with Prometheus' own grammar and look each metric up in metric_catalog.json).

Per node: the GPUs (utilisation, memory, temperature, power, last XID, remapped rows) by the DCGM exporter's
Hostname label, and the rails (transmit and receive Gb/s, port state, link-down count) by the node exporter's
instance label, which the stack sets to the node's name. Per job: the GPUs and rails of the nodes the chosen
pods run on (kube_pod_info's node). Not the pods' own GPUs: the DCGM exporter maps no DRA-allocated GPU to its
pod on this stack (stack_config/drivers/gpu_operator_plan.py service_monitor_values says why), so a job is followed
through its nodes; exact for jobs that hold whole nodes, and on a node two jobs share the panels show both.
"""

from __future__ import annotations

from typing import Any, Final

from oke_gpu_rdma.health.remediation import controller as remediation_controller

from .rules import BITS_PER_BYTE, FABRIC_CHECK_CONDITION

UID: Final = "oke-gpu-rdma-fabric"
TITLE: Final = "OKE GPU RDMA: GPUs and rails"
CONFIGMAP_KEY: Final = "oke-gpu-rdma-fabric.json"
# The datasource kube-prometheus-stack's Grafana provisions (grafana.sidecar.datasources, uid prometheus).
DATASOURCE: Final = {"type": "prometheus", "uid": "${datasource}"}

_NODE_GPU = 'Hostname=~"$node"'


def _job_nodes(label: str) -> str:
    """The nodes the chosen pods run on, one series each, with the node's name as ``label`` (the DCGM
    exporter's Hostname, the node exporter's instance)."""
    return (
        'label_replace(max by (node) (kube_pod_info{namespace=~"$namespace", pod=~"$pod"}), '
        f'"{label}", "$1", "node", "(.*)")'
    )


def _on_job_nodes(query: str, label: str) -> str:
    return f"{query} * on ({label}) group_left () {_job_nodes(label)}"


def _rail_rate(counter: str, selector: str) -> str:
    return f"sum by (instance, device) (rate({counter}{{{selector}}}[2m])) * {BITS_PER_BYTE} / 1e9"


# (row, [(panel title, unit, [(query, legend)])])
PANELS: Final[tuple[tuple[str, tuple[tuple[str, str, tuple[tuple[str, str], ...]], ...]], ...]] = (
    (
        "GPUs per node",
        (
            (
                "GPU utilisation",
                "percent",
                ((f"DCGM_FI_DEV_GPU_UTIL{{{_NODE_GPU}}}", "{{Hostname}} gpu {{gpu}}"),),
            ),
            (
                "Tensor pipe active",
                "percentunit",
                ((f"DCGM_FI_PROF_PIPE_TENSOR_ACTIVE{{{_NODE_GPU}}}", "{{Hostname}} gpu {{gpu}}"),),
            ),
            (
                "Framebuffer used",
                "decmbytes",
                ((f"DCGM_FI_DEV_FB_USED{{{_NODE_GPU}}}", "{{Hostname}} gpu {{gpu}}"),),
            ),
            (
                "GPU temperature",
                "celsius",
                ((f"DCGM_FI_DEV_GPU_TEMP{{{_NODE_GPU}}}", "{{Hostname}} gpu {{gpu}}"),),
            ),
            ("Power", "watt", ((f"DCGM_FI_DEV_POWER_USAGE{{{_NODE_GPU}}}", "{{Hostname}} gpu {{gpu}}"),)),
            ("Last XID", "none", ((f"DCGM_FI_DEV_XID_ERRORS{{{_NODE_GPU}}}", "{{Hostname}} gpu {{gpu}}"),)),
            (
                "Remapped rows (uncorrectable ECC)",
                "none",
                ((f"DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS{{{_NODE_GPU}}}", "{{Hostname}} gpu {{gpu}}"),),
            ),
            (
                "NVLink bandwidth",
                "Bps",
                (
                    (
                        f"rate(DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL{{{_NODE_GPU}}}[2m])",
                        "{{Hostname}} gpu {{gpu}}",
                    ),
                ),
            ),
        ),
    ),
    (
        "Rails per node",
        (
            (
                "Rail transmit (Gb/s)",
                "none",
                (
                    (
                        _rail_rate("node_infiniband_port_data_transmitted_bytes_total", 'instance=~"$node"'),
                        "{{instance}} {{device}}",
                    ),
                ),
            ),
            (
                "Rail receive (Gb/s)",
                "none",
                (
                    (
                        _rail_rate("node_infiniband_port_data_received_bytes_total", 'instance=~"$node"'),
                        "{{instance}} {{device}}",
                    ),
                ),
            ),
            (
                "Port state (4 = ACTIVE)",
                "none",
                (('node_infiniband_state_id{instance=~"$node"}', "{{instance}} {{device}}"),),
            ),
            (
                "Link down events (1h)",
                "none",
                (
                    (
                        'increase(node_infiniband_link_downed_total{instance=~"$node"}[1h])',
                        "{{instance}} {{device}}",
                    ),
                ),
            ),
            (
                "DRANET published devices",
                "none",
                (('dranet_driver_published_devices_total{instance=~"$node"}', "{{instance}} {{feature}}"),),
            ),
            (
                "Health marks",
                "none",
                (
                    ('kube_node_spec_taint{key=~"oke-gpu-rdma/.*", node=~"$node"}', "{{node}} {{key}}"),
                    (
                        f'kube_node_status_condition{{condition="{FABRIC_CHECK_CONDITION}", status="true", '
                        'node=~"$node"}',
                        "{{node}} fabric check failed",
                    ),
                ),
            ),
        ),
    ),
    (
        "Per job",
        (
            (
                "GPU utilisation, nodes of the job",
                "percent",
                ((_on_job_nodes("DCGM_FI_DEV_GPU_UTIL", "Hostname"), "{{Hostname}} gpu {{gpu}}"),),
            ),
            (
                "Framebuffer used, nodes of the job",
                "decmbytes",
                ((_on_job_nodes("DCGM_FI_DEV_FB_USED", "Hostname"), "{{Hostname}} gpu {{gpu}}"),),
            ),
            (
                "Rails transmit (Gb/s), nodes of the job",
                "none",
                (
                    (
                        _on_job_nodes(
                            f"({_rail_rate('node_infiniband_port_data_transmitted_bytes_total', '')})",
                            "instance",
                        ),
                        "{{instance}} {{device}}",
                    ),
                ),
            ),
        ),
    ),
    (
        # The remediation controller's own series (oke_gpu_rdma/health/remediation/controller.py; docs/remediation.md):
        # empty where the stack remediates no pool.
        "Remediation",
        (
            (
                "Nodes by remediation state",
                "none",
                (
                    (
                        f"sum by (pool, state) ({remediation_controller.NODES_METRIC}) > 0",
                        "{{pool}} {{state}}",
                    ),
                ),
            ),
            (
                "Remediation steps, last hour",
                "none",
                (
                    (
                        f"sum by (pool, reason) (increase({remediation_controller.EVENTS_METRIC}[1h])) > 0",
                        "{{pool}} {{reason}}",
                    ),
                ),
            ),
        ),
    ),
)


def _variable(name: str, query: str, include_all: bool = True) -> dict[str, Any]:
    return {
        "name": name,
        "type": "query",
        "datasource": DATASOURCE,
        "query": {"query": query, "refId": name},
        "definition": query,
        "refresh": 2,
        "includeAll": include_all,
        "multi": True,
        "allValue": ".*",
        "current": {"text": "All", "value": "$__all"},
    }


def dashboard() -> dict[str, Any]:
    """The dashboard's JSON model (Grafana's dashboard schema: panels on a 24-column grid)."""
    panels: list[dict[str, Any]] = []
    next_id = 1
    y = 0
    for row, row_panels in PANELS:
        panels.append(
            {
                "id": next_id,
                "type": "row",
                "title": row,
                "collapsed": False,
                "gridPos": {"x": 0, "y": y, "w": 24, "h": 1},
                "panels": [],
            }
        )
        next_id += 1
        y += 1
        for i, (title, unit, queries) in enumerate(row_panels):
            panels.append(
                {
                    "id": next_id,
                    "type": "timeseries",
                    "title": title,
                    "datasource": DATASOURCE,
                    "fieldConfig": {"defaults": {"unit": unit}, "overrides": []},
                    "gridPos": {"x": (i % 3) * 8, "y": y + (i // 3) * 8, "w": 8, "h": 8},
                    "targets": [
                        {
                            "refId": chr(ord("A") + j),
                            "datasource": DATASOURCE,
                            "expr": expr,
                            "legendFormat": legend,
                        }
                        for j, (expr, legend) in enumerate(queries)
                    ],
                }
            )
            next_id += 1
        y += ((len(row_panels) + 2) // 3) * 8
    return {
        "uid": UID,
        "title": TITLE,
        "tags": ["oke-gpu-rdma", "gpu", "rdma"],
        "timezone": "utc",
        "schemaVersion": 39,
        "editable": True,
        "time": {"from": "now-6h", "to": "now"},
        "refresh": "1m",
        "templating": {
            "list": [
                {"name": "datasource", "type": "datasource", "query": "prometheus", "current": {}},
                _variable("node", "label_values(kube_node_info, node)"),
                _variable("namespace", "label_values(kube_pod_info, namespace)"),
                _variable("pod", 'label_values(kube_pod_info{namespace=~"$namespace"}, pod)'),
            ]
        },
        "panels": panels,
    }


def queries(model: dict[str, Any]) -> list[str]:
    """Every PromQL query of a dashboard model: its panels' targets."""
    return [target["expr"] for panel in model["panels"] for target in panel.get("targets", [])]
