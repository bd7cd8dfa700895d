"""Kubernetes and option rules for update vs replace (preview/plan/replace_rules.py)."""

from __future__ import annotations

from preview.plan import replace_rules
from preview.plan.replace_rules import UNKNOWN, rule, show

RCT = "kubernetes:resource.k8s.io/v1:ResourceClaimTemplate"
CONFIG_MAP = "kubernetes:core/v1:ConfigMap"


def test_name_and_namespace_replace_any_object() -> None:
    for path in (("metadata", "name"), ("metadata", "namespace")):
        decided = rule("kubernetes:resource.k8s.io/v1:DeviceClass", path, "x")
        assert decided.replaces and decided.provider_rule
    assert not rule("kubernetes:core/v1:Namespace", ("metadata", "labels", "a"), "x").replaces


def test_device_class_spec_updates_in_place() -> None:
    assert rule(
        "kubernetes:resource.k8s.io/v1:DeviceClass", ("spec", "selectors", 0), {}
    ) == replace_rules.Rule(False)


def test_claim_template_spec_is_refused_without_replace_on_changes() -> None:
    bare = rule(RCT, ("spec", "spec", "devices", "requests", 0), {})
    assert not bare.replaces and "the apply fails" in bare.refused
    declared = rule(RCT, ("spec", "spec", "devices", "requests", 0), {}, replace_on_changes=["spec"])
    assert declared.replaces and declared.why == "replaceOnChanges: spec"


def test_config_map_data_replaces_unless_the_provider_makes_it_mutable() -> None:
    assert rule(CONFIG_MAP, ("data", "k"), "v").replaces
    mutable = {"enableConfigMapMutable": True}
    assert not rule(CONFIG_MAP, ("data", "k"), "v", provider_inputs=mutable).replaces
    assert rule(CONFIG_MAP, ("data", "k"), "v", inputs={"immutable": True}, provider_inputs=mutable).replaces


def test_pod_fields() -> None:
    pod = "kubernetes:core/v1:Pod"
    assert rule(pod, ("spec", "containers", 0, "image"), "x").replaces  # provider's forceNew
    assert rule(pod, ("spec", "nodeSelector", "a"), "x").replaces
    refused = rule(pod, ("spec", "resourceClaims", 0), {})
    assert not refused.replaces and refused.refused


def test_helm_release_name_replaces_values_update() -> None:
    assert rule("kubernetes:helm.sh/v3:Release", ("name",), "x").replaces
    assert not rule("kubernetes:helm.sh/v3:Release", ("values", "image", "tag"), "x").replaces


def test_kubernetes_provider_replaced_by_an_unknown_kubeconfig() -> None:
    assert rule("pulumi:providers:kubernetes", ("kubeconfig",), UNKNOWN).replaces
    assert not rule("pulumi:providers:kubernetes", ("enableServerSideApply",), True).replaces


def test_paths_print_like_pulumi() -> None:
    assert show(("a", "b", 0, "c")) == "a.b[0].c"
    assert show(("metadata", "labels", "pod-security.kubernetes.io/enforce")) == (
        'metadata.labels["pod-security.kubernetes.io/enforce"]'
    )
    assert show(replace_rules.PROVIDER_PATH) == "[provider]"


SECRET = "kubernetes:core/v1:Secret"


def test_secret_data_replaces_unless_the_provider_makes_secrets_mutable() -> None:
    for path in (("data", "k"), ("stringData", "k")):
        decided = rule(SECRET, path, "v")
        assert decided == replace_rules.Rule(
            True,
            "pulumi-kubernetes replaces Secret data unless its provider sets enableSecretMutable",
            provider_rule=True,
        )
        mutable = {"enableSecretMutable": True}
        assert rule(SECRET, path, "v", provider_inputs=mutable) == replace_rules.Rule(False)
        assert rule(SECRET, path, "v", inputs={"immutable": True}, provider_inputs=mutable).replaces
    # diff.go: the type replaces a Secret whatever the setting.
    assert rule(SECRET, ("type",), "Opaque", provider_inputs={"enableSecretMutable": True}).replaces


def test_provider_tables_beyond_the_kinds_of_today() -> None:
    assert rule("kubernetes:storage.k8s.io/v1:StorageClass", ("provisioner",), "x").replaces
    assert rule("kubernetes:core/v1:PersistentVolumeClaim", ("spec", "accessModes", 0), "x").replaces
    assert rule("kubernetes:apps/v1:Deployment", ("spec", "selector", "matchLabels", "a"), "x").replaces
    assert not rule("kubernetes:apps/v1:Deployment", ("spec", "replicas"), 2).replaces


def _object(name: str, namespace: str | None = "ns", **annotations: str) -> dict[str, object]:
    metadata: dict[str, object] = {"name": name} if name else {}
    if namespace:
        metadata["namespace"] = namespace
    if annotations:
        metadata["annotations"] = annotations
    return {"metadata": metadata}


def test_the_provider_deletes_first_only_an_object_that_keeps_its_name() -> None:
    data = rule(CONFIG_MAP, ("data", "k"), "v")
    renamed = rule(CONFIG_MAP, ("metadata", "name"), "b")
    deletes_first = replace_rules.provider_deletes_first
    assert deletes_first(CONFIG_MAP, _object("a"), _object("a"), [data])
    # provider.go Diff: a new name or namespace is created before the old object is deleted.
    assert not deletes_first(CONFIG_MAP, _object("a"), _object("b"), [renamed])
    assert not deletes_first(CONFIG_MAP, _object("a", "x"), _object("a", "y"), [data])
    # Autonamed (no name in the program, or the provider's annotation): created first under a new name.
    assert not deletes_first(CONFIG_MAP, _object(""), _object(""), [data])
    autonamed = _object("a", **{"pulumi.com/autonamed": "true"})
    assert not deletes_first(CONFIG_MAP, autonamed, autonamed, [data])
    # replaceOnChanges alone is the engine's, not the provider's: no deleteBeforeReplace from it.
    engine = rule(RCT, ("spec",), {}, replace_on_changes=["spec"])
    assert not deletes_first(RCT, _object("a"), _object("a"), [engine])
    assert not deletes_first("kubernetes:helm.sh/v3:Release", {"name": "a"}, {"name": "a"}, [data])
