"""Grafana's admin Secret, made in the cluster: a one-off Job creates monitoring.grafanaAdminSecret when it is
missing (user admin, 32 random bytes from the node's /dev/urandom) and leaves one that exists untouched.

Why a Job and not a Secret the stack declares: the password then exists in the cluster only, never in the
Pulumi program, its state, a stack file or the Helm release (the grafana chart's own admin Secret, which
existingSecret turns off: oke_gpu_rdma/monitoring/chart_pods.py); a Secret you keep (made before the apply,
rotated after it) is never overwritten; and Grafana's pod, which cannot start without the Secret, finds it on a
first `pulumi up` of a cluster the stack creates, where nothing could have been made beforehand. The release
waits for the Job, and pulumi-kubernetes waits for a Job to complete.

Its RBAC is `create` on Secrets of the monitoring namespace (RBAC cannot narrow create by name:
https://kubernetes.io/docs/reference/access-authn-authz/rbac/#referring-to-resources), and a
ValidatingAdmissionPolicy narrows that to the one Secret with the two keys Grafana reads.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

from oke_gpu_rdma.common import admission_cel as cel
from oke_gpu_rdma.common import images

from . import chart_pods

NAME: Final = "grafana-admin-secret"
SCRATCH: Final = "/scratch"
# sh, head, base64, tr, grep and kubectl: the image of the scheduled checks' controller by default.
DEFAULT_IMAGE: Final = images.KUBECTL_SHELL_IMAGE
# kubectl prints `Error from server (AlreadyExists): secrets "<name>" already exists` when the Secret exists
# (k8s.io/apimachinery pkg/api/errors StatusReasonAlreadyExists), which is the Secret the user keeps.
# The scratch folder is $HOME (SCRATCH in the pod), a memory-backed emptyDir.
SCRIPT: Final = """set -eu
umask 077
trap 'rm -f "$HOME/password" "$HOME/user"' EXIT
head -c 32 /dev/urandom | base64 | tr -d '\\n' > "$HOME/password"
printf %s "$ADMIN_USER" > "$HOME/user"
if kubectl -n "$NAMESPACE" create secret generic "$SECRET" \\
    --from-file="$USER_KEY=$HOME/user" --from-file="$PASSWORD_KEY=$HOME/password" 2> "$HOME/err"; then
  echo "created Secret $SECRET"
elif grep -q AlreadyExists "$HOME/err"; then
  echo "kept Secret $SECRET: it exists"
else
  cat "$HOME/err" >&2
  exit 1
fi
"""


def rbac_rules() -> list[dict[str, Any]]:
    return [{"apiGroups": [""], "resources": ["secrets"], "verbs": ["create"]}]


def pod_spec(
    secret: str,
    namespace: str,
    image: str,
    node_selector: Mapping[str, str],
    tolerations: Sequence[Mapping[str, str]],
) -> dict[str, Any]:
    """The Job's pod: Pod Security restricted (the monitoring namespace's level), read-only root, the password
    written to a memory-backed emptyDir only (never an argument or an environment variable)."""
    env = {
        "SECRET": secret,
        "NAMESPACE": namespace,
        "ADMIN_USER": chart_pods.GRAFANA_ADMIN_USER,
        "USER_KEY": chart_pods.GRAFANA_ADMIN_USER_KEY,
        "PASSWORD_KEY": chart_pods.GRAFANA_ADMIN_PASSWORD_KEY,
        # kubectl keeps its discovery cache under $HOME.
        "HOME": SCRATCH,
    }
    spec: dict[str, Any] = {
        "serviceAccountName": NAME,
        "restartPolicy": "Never",
        "securityContext": {
            "runAsNonRoot": True,
            "runAsUser": 65534,
            "runAsGroup": 65534,
            "seccompProfile": {"type": "RuntimeDefault"},
        },
        "containers": [
            {
                "name": "create",
                "image": image,
                "command": ["sh", "-c", SCRIPT],
                "env": [{"name": k, "value": v} for k, v in env.items()],
                "volumeMounts": [{"name": "scratch", "mountPath": SCRATCH}],
                "securityContext": {
                    "allowPrivilegeEscalation": False,
                    "readOnlyRootFilesystem": True,
                    "capabilities": {"drop": ["ALL"]},
                },
                "resources": {"requests": {"cpu": "10m", "memory": "32Mi"}, "limits": {"memory": "64Mi"}},
            }
        ],
        "volumes": [{"name": "scratch", "emptyDir": {"medium": "Memory", "sizeLimit": "1Mi"}}],
    }
    if node_selector:
        spec["nodeSelector"] = dict(node_selector)
    if tolerations:
        spec["tolerations"] = [dict(t) for t in tolerations]
    return spec


def job_spec(pod: Mapping[str, Any], deadline_seconds: int) -> dict[str, Any]:
    """Two retries (a transient API error); ``deadline_seconds`` at most, its pod's wait for a node included (on a
    first apply the nodes may still be joining)."""
    return {"backoffLimit": 2, "activeDeadlineSeconds": deadline_seconds, "template": {"spec": dict(pod)}}


def admission_policy(namespace: str, secret: str) -> dict[str, Any]:
    """The ValidatingAdmissionPolicy spec: the Job's ServiceAccount creates only ``secret`` in ``namespace``,
    with exactly the keys Grafana reads."""
    keys = sorted((chart_pods.GRAFANA_ADMIN_USER_KEY, chart_pods.GRAFANA_ADMIN_PASSWORD_KEY))
    return cel.writer_policy(
        namespace,
        NAME,
        [cel.resource_rule("", ["secrets"], ["CREATE"])],
        [
            {
                "expression": f"request.namespace == '{namespace}' && object.metadata.name == '{secret}' "
                f"&& has(object.data) && object.data.size() == {len(keys)} && "
                + " && ".join(f"'{k}' in object.data" for k in keys),
                "message": f"the Grafana admin Job may create only the Secret {namespace}/{secret} with the keys "
                f"{', '.join(keys)}",
            }
        ],
    )
