"""DRANET's cloud-provider hint and options, read the way DRANET and its chart read them.

Sources: seed 003 (the DRANET OKE provider page: "Set the range with the cloud provider option
oke.rdma-child-ipv4-cidr. Each --cloud-provider-options flag takes one option"; the Helm form
``args.cloudProviderOptions.oke.rdma-child-ipv4-cidr``; "DRANET stops at startup when the value is not a
valid range. DRANET also stops at startup when --cloud-provider-hint names a provider other than OKE").
kubernetes-sigs/dranet: ``cmd/dranet/app.go`` (--cloud-provider-hint, "Supported values: (AWS, GCE,
AZURE, OKE, ALIBABA, webhook, NONE)"), ``pkg/cloudprovider/discovery`` (``GetInstanceProperties``: any
other hint is "unknown cloud provider hint"; ``ParseProviderOptions``: keys are ``<provider>.<option>``,
"provider X defines no options" for every provider but ``oke``, "oke options: unknown option" for an
OKE key it does not know, duplicates refused; ``CheckHint``: OKE options with another hint stop DRANET),
``deployments/helm/dranet/values.schema.json`` (``args.cloudProviderHint`` is an enum, case-sensitive;
``args`` has ``additionalProperties: false``, so `helm install` refuses what the schema does not name).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Final

from oke_gpu_rdma.drivers import dranet

# values.schema.json args.cloudProviderHint enum; the binary also takes "none" and "" (auto-discovery).
PROVIDER_HINTS: Final = ("GCE", "AZURE", dranet.OKE_HINT, "AWS", "ALIBABA", "webhook", "NONE")
FLAG_ONLY_HINTS: Final = ("none", "")
# ParseProviderOptions: the providers that define options and the options each knows.
OKE_OPTIONS_PROVIDER: Final = "oke"
PROVIDER_OPTIONS: Final[Mapping[str, tuple[str, ...]]] = {OKE_OPTIONS_PROVIDER: (dranet.CHILD_RANGE_KEY,)}
OPTIONS_VALUE: Final = "args.cloudProviderOptions"
HINT_FLAG: Final = "cloud-provider-hint"
OPTIONS_FLAG: Final = "cloud-provider-options"


@dataclass
class DranetOptions:
    """The hint and the OKE child range one installation runs with, and what DRANET would refuse."""

    hint: str | None = None  # None: auto-discovery
    child_range: object = None  # the configured value as written; None: DRANET's default
    problems: list[str] = field(default_factory=list)

    @property
    def runs_oke(self) -> bool:
        """Whether the OKE provider (and so the child range) applies: hint OKE, or auto-discovery on OKE."""
        return self.hint in (None, "", dranet.OKE_HINT)


def _check(
    found: DranetOptions, options: Mapping[str, Mapping[str, object]], where: str, hint_where: str
) -> None:
    for provider in sorted(options):
        known = PROVIDER_OPTIONS.get(provider)
        if known is None:
            found.problems.append(
                f"{where} names provider {provider!r}, which defines no options (DRANET knows "
                f"{', '.join(f'{p}.*' for p in PROVIDER_OPTIONS)}; the provider is lower-case): DRANET stops at "
                "startup"
            )
            continue
        for key in sorted(options[provider]):
            if key not in known:
                found.problems.append(
                    f"{where} sets {provider}.{key}, an option DRANET's {provider} provider does not know "
                    f"(known: {', '.join(known)}): DRANET stops at startup"
                )
    if OKE_OPTIONS_PROVIDER in options and not found.runs_oke:
        found.problems.append(
            f"{where} sets {OKE_OPTIONS_PROVIDER}.* options, but {hint_where} is {found.hint!r}: DRANET stops "
            f"at startup when the hint names a provider other than {dranet.OKE_HINT}"
        )


def helm_options(args: Mapping[str, object]) -> DranetOptions:
    """The chart's ``args`` (values) as DRANET will run with them; type problems name the values path."""
    found = DranetOptions()
    hint = args.get("cloudProviderHint")
    if hint is not None:
        if not isinstance(hint, str) or hint not in PROVIDER_HINTS:
            found.problems.append(
                f"values.{dranet.PROVIDER_HINT_VALUE} is {hint!r}; the chart's values schema accepts "
                f"{', '.join(PROVIDER_HINTS)} (case-sensitive), so helm install fails"
            )
            return found
        found.hint = hint
    raw = args.get("cloudProviderOptions")
    if raw is None:
        return found
    where = f"values.{OPTIONS_VALUE}"
    if not isinstance(raw, Mapping):
        found.problems.append(
            f"{where} must be an object of providers, like {{oke: {{{dranet.CHILD_RANGE_KEY}: ...}}}}"
        )
        return found
    options: dict[str, Mapping[str, object]] = {}
    for provider, values in raw.items():
        if not isinstance(values, Mapping):
            found.problems.append(f"{where}.{provider} must be an object of options")
            continue
        options[str(provider)] = values
    _check(found, options, where, f"values.{dranet.PROVIDER_HINT_VALUE}")
    found.child_range = options.get(OKE_OPTIONS_PROVIDER, {}).get(dranet.CHILD_RANGE_KEY)
    return found


def flag_values(tokens: Sequence[str], flag: str) -> list[str]:
    """Values of a Go flag given as --flag=v, -flag=v, --flag v or -flag v."""
    found = []
    for i, token in enumerate(tokens):
        for dash in ("--", "-"):
            if token.startswith(f"{dash}{flag}="):
                found.append(token.split("=", 1)[1])
            elif token == f"{dash}{flag}" and i + 1 < len(tokens):
                found.append(tokens[i + 1])
    return found


def flag_options(tokens: Sequence[str]) -> DranetOptions:
    """The DRANET command line as DRANET parses it (one ``<provider>.<option>=<value>`` per flag)."""
    found = DranetOptions()
    hints = flag_values(tokens, HINT_FLAG)
    if hints:
        hint = hints[-1]  # Go's flag package: the last occurrence wins
        if hint not in PROVIDER_HINTS and hint not in FLAG_ONLY_HINTS:
            found.problems.append(
                f"--{HINT_FLAG}={hint} is not a provider DRANET knows ({', '.join(PROVIDER_HINTS)}; "
                "case-sensitive): 'unknown cloud provider hint', and no OKE provider runs"
            )
            return found
        found.hint = None if hint == "" else hint
    options: dict[str, dict[str, object]] = {}
    for pair in flag_values(tokens, OPTIONS_FLAG):
        if not pair.strip():
            continue
        key, sep, value = pair.partition("=")
        key, value = key.strip(), value.strip()
        provider, dot, name = key.partition(".")
        where = f"--{OPTIONS_FLAG}={pair}"
        if not sep or not dot or not provider or not name:
            found.problems.append(f"{where} is not <provider>.<option>=<value>: DRANET stops at startup")
            continue
        if name in options.get(provider, {}):
            found.problems.append(f"{where} repeats option {key}: DRANET stops at startup")
            continue
        options.setdefault(provider, {})[name] = value
    _check(found, options, f"--{OPTIONS_FLAG}", f"--{HINT_FLAG}")
    found.child_range = options.get(OKE_OPTIONS_PROVIDER, {}).get(dranet.CHILD_RANGE_KEY)
    return found
