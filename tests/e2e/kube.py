"""A small Kubernetes REST client for the e2e tests: server-side apply with strict field validation, create,
get, list, patch, delete, discovery of kinds, and impersonation or a service account's token.

Requests go to kube-apiserver as `kubectl` sends them (server-side apply: PATCH with
application/apply-patch+yaml, fieldManager, force; validation: the fieldValidation query parameter, as
`kubectl apply --server-side --validate=strict` sets it). A refusal raises ApiError with the server's
Status message.
"""

from __future__ import annotations

import json
import urllib.parse
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import requests
import urllib3

# The API server's serving certificate is self-signed for this run (its --cert-dir); loopback only.
urllib3.disable_warnings(urllib3.exceptions.InsecureRequestWarning)

FIELD_MANAGER = "oke-gpu-rdma-e2e"


class ApiError(Exception):
    def __init__(self, status: int, reason: str, message: str, what: str) -> None:
        super().__init__(f"{what}: HTTP {status} {reason}: {message}")
        self.status, self.reason, self.message = status, reason, message


@dataclass(frozen=True)
class Kind:
    group_version: str
    plural: str
    namespaced: bool

    def path(self, namespace: str | None, name: str | None = None) -> str:
        base = "/api/v1" if self.group_version == "v1" else f"/apis/{self.group_version}"
        if self.namespaced and namespace:
            base += f"/namespaces/{namespace}"
        base += f"/{self.plural}"
        return f"{base}/{name}" if name else base


def describe(obj: Mapping[str, Any]) -> str:
    meta = obj.get("metadata") or {}
    where = f"{meta.get('namespace')}/" if meta.get("namespace") else ""
    return f"{obj.get('kind')} {where}{meta.get('name')}"


class Kube:
    def __init__(self, server: str, token: str, headers: Mapping[str, str] | None = None) -> None:
        self.server = server
        self.token = token
        self.session = requests.Session()
        # No proxy and no CA bundle from the environment: the server is on loopback with a self-signed cert.
        self.session.trust_env = False
        self.session.verify = False
        self.session.headers["Authorization"] = f"Bearer {token}"
        self.session.headers.update(headers or {})
        self._kinds: dict[tuple[str, str], Kind] = {}

    # -- identities --------------------------------------------------------------------------------------
    def as_user(self, user: str, extra: Mapping[str, list[str]] | None = None) -> Kube:
        """This client impersonating ``user`` (a service account's groups are added by the API server's
        impersonation filter, staging/src/k8s.io/apiserver/pkg/endpoints/filters/impersonation.go)."""
        headers = {"Impersonate-User": user}
        for key, values in (extra or {}).items():
            # One value per key here; the header name carries the key percent-encoded.
            [value] = values
            headers[f"Impersonate-Extra-{urllib.parse.quote(key, safe='')}"] = value
        return Kube(self.server, self.token, headers)

    def with_token(self, token: str) -> Kube:
        return Kube(self.server, token)

    # -- raw ---------------------------------------------------------------------------------------------
    def request(self, method: str, path: str, what: str, **kwargs: Any) -> Any:
        response = self.session.request(method, self.server + path, timeout=60, **kwargs)
        if response.status_code >= 400:
            try:
                status = response.json()
                message, reason = status.get("message", response.text), status.get("reason", "")
            except ValueError:
                message, reason = response.text, ""
            raise ApiError(response.status_code, reason, message, what)
        if not response.content:
            return None
        return response.json() if "json" in response.headers.get("Content-Type", "") else response.text

    def raw_get(self, path: str) -> Any:
        return self.request("GET", path, f"GET {path}")

    def get(self, path: str) -> Any:
        """The object at ``path``, or None when it does not exist."""
        try:
            return self.request("GET", path, f"GET {path}")
        except ApiError as err:
            if err.status == 404:
                return None
            raise

    # -- discovery ---------------------------------------------------------------------------------------
    def kind(self, api_version: str, kind: str) -> Kind:
        key = (api_version, kind)
        if key not in self._kinds:
            path = "/api/v1" if api_version == "v1" else f"/apis/{api_version}"
            listing = self.get(path) or {"resources": []}
            for resource in listing["resources"]:
                if "/" not in resource["name"]:
                    found = Kind(api_version, resource["name"], resource["namespaced"])
                    self._kinds[(api_version, resource["kind"])] = found
            if key not in self._kinds:
                raise ApiError(404, "NotFound", f"the server serves no {kind} in {api_version}", kind)
        return self._kinds[key]

    def forget_kinds(self) -> None:
        """Discover kinds again on next use (after CRDs were added)."""
        self._kinds.clear()

    def path_of(self, obj: Mapping[str, Any]) -> str:
        meta = obj["metadata"]
        return self.kind(obj["apiVersion"], obj["kind"]).path(meta.get("namespace"), meta["name"])

    # -- writes ------------------------------------------------------------------------------------------
    def apply(self, obj: Mapping[str, Any], manager: str = FIELD_MANAGER) -> Any:
        """Server-side apply with field validation Strict (an unknown or duplicate field is an error)."""
        return self.request(
            "PATCH",
            self.path_of(obj),
            f"apply {describe(obj)}",
            params={"fieldManager": manager, "fieldValidation": "Strict", "force": "true"},
            data=json.dumps(obj),
            headers={"Content-Type": "application/apply-patch+yaml"},
        )

    def create(self, obj: Mapping[str, Any], subresource: str = "") -> Any:
        meta = obj.get("metadata") or {}
        kind = self.kind(obj["apiVersion"], obj["kind"])
        path = kind.path(meta.get("namespace"), meta["name"] + subresource if subresource else None)
        return self.request(
            "POST", path, f"create {describe(obj)}", params={"fieldValidation": "Strict"}, json=obj
        )

    def post(self, path: str, body: Mapping[str, Any]) -> Any:
        return self.request("POST", path, f"POST {path}", json=body)

    def patch(self, path: str, body: Any, patch_type: str = "merge", what: str = "") -> Any:
        content = {
            "merge": "application/merge-patch+json",
            "strategic": "application/strategic-merge-patch+json",
            "json": "application/json-patch+json",
        }[patch_type]
        return self.request(
            "PATCH", path, what or f"patch {path}", data=json.dumps(body), headers={"Content-Type": content}
        )

    def delete(self, path: str, propagation: str = "Background", grace_seconds: int | None = None) -> None:
        """DELETE, gone already being fine; ``grace_seconds`` 0 for a pod no kubelet will finish deleting."""
        body: dict[str, Any] = {"propagationPolicy": propagation}
        if grace_seconds is not None:
            body["gracePeriodSeconds"] = grace_seconds
        try:
            self.request("DELETE", path, f"DELETE {path}", json=body)
        except ApiError as err:
            if err.status != 404:
                raise

    # -- reads -------------------------------------------------------------------------------------------
    def list(self, api_version: str, kind: str, namespace: str | None = None, **params: str) -> list[Any]:
        path = self.kind(api_version, kind).path(namespace)
        listing = self.request("GET", path, f"list {kind}", params=params)
        items: list[Any] = listing["items"]
        return items
