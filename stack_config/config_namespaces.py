"""Which `namespace:key` settings of a stack file anything reads, so that no setting is silently ignored.

Pulumi hands a program every key of the stack file, and a key nothing reads does nothing: a
misspelt namespace (`oke-gpu-rmda:dranet`) or provider key (`oci:regoin`) would leave the setting at
its default with no word said. Each namespace has its reader:

- `oke-gpu-rdma:` the program's own keys (stack_config/model.py; unknown ones are reported there,
  with the closest valid key);
- `oci:` the OCI provider: the default provider the engine configures from stack config, and the
  home-region provider the program builds from the same keys (components/nodes/gpu_node_pool.py
  `oci_provider_settings`). Its keys are pulumi-oci's `ProviderArgs` (below);
- `pulumi:` the engine's own namespace (e.g. `pulumi:disable-default-providers`); the program leaves it
  to the engine.

`kubernetes:` is read by nobody here: stack config configures only a provider's *default* instance
(Pulumi docs, "Configuration": provider settings in config apply to the default provider), and every
Kubernetes resource of this program uses the explicit provider built from the cluster's kubeconfig
(components/nodes/cluster.py), so a `kubernetes:` key would be ignored and is refused. Any other namespace
is refused too, with the closest key of the namespaces above.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Mapping
from typing import Final

from .problems import ConfigProblem
from .settings_types import PROJECT

OCI: Final = "oci"
ENGINE: Final = "pulumi"

# The config keys of pulumi-oci's provider: `ProviderArgs.__init__`'s parameters in camelCase
# (pulumi/pulumi-oci v5.5.0, sdk/python/pulumi_oci/provider.py; the version requirements.txt pins).
# tests/stack_config/test_config_namespaces.py checks this list against the installed ProviderArgs.
OCI_PROVIDER_KEYS: Final = frozenset(
    {
        "auth",
        "configFileProfile",
        "disableAutoRetries",
        "dualStackEndpointEnabled",
        "fingerprint",
        "ignoreDefinedTags",
        "privateKey",
        "privateKeyPassword",
        "privateKeyPath",
        "realmSpecificServiceEndpointTemplateEnabled",
        "region",
        "retriesConfigFile",
        "retryDurationSeconds",
        "tenancyOcid",
        "testTimeMaintenanceRebootDue",
        "tokenExchangeAuth",
        "tokenExchangeClientId",
        "tokenExchangeClientSecret",
        "tokenExchangeDomainUrl",
        "tokenExchangePublicKey",
        "tokenExchangeRequestedTokenType",
        "tokenExchangeResourceType",
        "tokenExchangeRpstExp",
        "tokenExchangeSubjectTokenType",
        "userOcid",
        "workloadIdentityTokenPath",
    }
)


def closest(word: str, candidates: Iterable[str]) -> str | None:
    """The candidate closest to ``word`` (difflib), compared without case; None when none is close."""
    by_lower = {c.lower(): c for c in candidates}
    found = difflib.get_close_matches(word.lower(), by_lower, n=1, cutoff=0.6)
    return by_lower[found[0]] if found else None


def _fix(guess: str | None) -> str:
    return f"did you mean {guess}?" if guess else "fix the key or remove it"


def problems(config_map: Mapping[str, object], project_keys: Iterable[str]) -> list[ConfigProblem]:
    """A line for every key of the stack's config map (`namespace:key` -> value) that nothing reads.

    ``project_keys``: the program's top-level keys; an unknown one of them is left to the model, which
    names it in its place.
    """
    project = sorted(project_keys)
    valid = [f"{PROJECT}:{k}" for k in project] + [f"{OCI}:{k}" for k in sorted(OCI_PROVIDER_KEYS)]
    found: list[ConfigProblem] = []
    for full in config_map:
        namespace, sep, key = full.partition(":")
        if not sep or namespace in (PROJECT, ENGINE):
            continue
        if namespace == OCI:
            if key not in OCI_PROVIDER_KEYS:
                setting = closest(key, OCI_PROVIDER_KEYS)
                meant = f"{OCI}:{setting}" if setting else None
                found.append(
                    ConfigProblem(
                        full,
                        None,
                        "is not a setting of the OCI provider (pulumi-oci's provider arguments: oci:region, "
                        f"oci:auth, oci:configFileProfile, ...); {_fix(meant)}",
                        suggests=meant,
                    )
                )
            continue
        if namespace == "kubernetes":
            found.append(
                ConfigProblem(
                    full,
                    None,
                    "is read by no provider of this stack: stack config sets only the default Kubernetes "
                    "provider, and every Kubernetes resource here uses the provider built from the cluster's "
                    "kubeconfig; remove the key",
                )
            )
            continue
        guess = closest(full, valid)
        if guess is None and closest(namespace, [PROJECT, OCI]) is not None:
            guess = f"{closest(namespace, [PROJECT, OCI])}:{key}"
        found.append(
            ConfigProblem(
                full,
                None,
                f"is in namespace {namespace!r}, which nothing of this stack reads (the program reads "
                f"{PROJECT}:, the OCI provider {OCI}:, the engine {ENGINE}:); {_fix(guess)}",
                suggests=guess,
            )
        )
    return found
