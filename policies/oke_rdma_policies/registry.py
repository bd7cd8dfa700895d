"""How the pack's policies register: each module of `rules/` declares one :class:`Rule`, the pack collects them.

A policy module builds its rule with :func:`stack_rule` or :func:`resource_rule`: its name, its
default enforcement level, its settings model (a :class:`~oke_gpu_rdma.common.pack_settings.PolicySettings`,
or none) and the function that validates, and binds it to ``RULE``. :func:`collect` imports every
module of the package's capability folders (`rules/<capability>/`, `pkgutil`, in module name order)
and returns their rules; adding a policy is one module there and its test, with no list to edit.

The sections the program writes (child range, claims, VF pool) keep their models in the domain
library (:mod:`oke_gpu_rdma.common.pack_settings`), where the writer imports them too; their rules name the
policy by the model's :attr:`~oke_gpu_rdma.common.pack_settings.PolicySettings.policy`.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable
from dataclasses import dataclass, replace
from types import ModuleType
from typing import Any, Final

from pulumi_policy import (
    EnforcementLevel,
    Policy,
    PolicyConfigSchema,
    ResourceValidationPolicy,
    StackValidationPolicy,
)

from oke_gpu_rdma.common.pack_settings import Level, PolicySettings

from .report import Reporter
from .sdk_adapter import NOT_A_FAILURE

RULE_ATTRIBUTE: Final = "RULE"


class RegistryError(Exception):
    """A module of `rules/` that does not declare a usable rule; the message names the module."""


@dataclass(frozen=True)
class Rule:
    """One policy of the pack: the SDK's policy object and the model of its pack-config section."""

    policy: Policy
    settings: type[PolicySettings] | None
    module: str = ""
    """The module that declares it (set by :func:`collect`)."""

    @property
    def name(self) -> str:
        return str(self.policy.name)


def _schema(settings: type[PolicySettings] | None) -> PolicyConfigSchema | None:
    """The config schema GetAnalyzerInfo reports (None for a policy without properties)."""
    properties = settings.properties_schema() if settings is not None else {}
    return PolicyConfigSchema(properties=properties) if properties else None


def guarded(validate: Callable[..., Any]) -> Callable[..., Any]:
    """``validate`` with whatever it lets escape turned into one violation of its policy naming the
    resource it was judging (or the stack), at the policy's own level (:meth:`Reporter.failed`): so
    every rule fails closed and the engine gets a verdict instead of an RPC error that loses every
    policy's findings. Rules built on :func:`~oke_rdma_policies.report.guarded` catch their own
    failures item by item; this catches the rest. The SDK's own signals (an unknown value during
    preview, not applicable) pass through to the SDK."""

    def run(args: Any, report_violation: Callable[..., None]) -> Any:
        try:
            return validate(args, report_violation)
        except NOT_A_FAILURE:
            raise
        except Exception as err:  # any defect of a policy becomes its violation
            urn = getattr(args, "urn", None)
            label = f"{args.resource_type} {args.name}" if urn else "the stack"
            Reporter(report_violation).failed(label, urn, err)
            return None

    run.__doc__ = validate.__doc__
    return run


def _rule(
    kind: type[StackValidationPolicy] | type[ResourceValidationPolicy],
    name: str,
    level: Level,
    description: str,
    validate: Callable[..., Any],
    settings: type[PolicySettings] | None,
) -> Rule:
    """The SDK's policy object of ``kind``, its settings model checked against its name."""
    if settings is not None and settings.policy != name:
        raise RegistryError(f"policy {name}: its settings model {settings.__name__} is for {settings.policy}")
    policy = kind(
        name=name,
        description=description,
        validate=guarded(validate),
        enforcement_level=EnforcementLevel(level),
        config_schema=_schema(settings),
    )
    return Rule(policy, settings)


def stack_rule(
    *,
    name: str,
    level: Level,
    description: str,
    validate: Callable[..., Any],
    settings: type[PolicySettings] | None = None,
) -> Rule:
    """A stack policy (it sees every resource of the stack at once)."""
    return _rule(StackValidationPolicy, name, level, description, validate, settings)


def resource_rule(
    *,
    name: str,
    level: Level,
    description: str,
    validate: Callable[..., Any],
    settings: type[PolicySettings] | None = None,
) -> Rule:
    """A resource policy (the engine sends it one resource at a time)."""
    return _rule(ResourceValidationPolicy, name, level, description, validate, settings)


def collect(package: ModuleType) -> list[Rule]:
    """The rule of every module in ``package``'s capability folders, in module name order (the folder
    is where a policy lives, not its place in the pack); RegistryError if one has none."""
    rules: list[Rule] = []
    seen: dict[str, str] = {}
    for name in sorted(_policy_modules(package), key=lambda dotted: dotted.rsplit(".", 1)[-1]):
        module = importlib.import_module(name)
        rule = getattr(module, RULE_ATTRIBUTE, None)
        if not isinstance(rule, Rule):
            raise RegistryError(
                f"{module.__name__} declares no {RULE_ATTRIBUTE}: a module of {package.__name__} is one policy, "
                "built with registry.stack_rule or registry.resource_rule; put helpers beside the package"
            )
        if rule.name in seen:
            raise RegistryError(f"{module.__name__} and {seen[rule.name]} both declare policy {rule.name}")
        seen[rule.name] = module.__name__
        rules.append(replace(rule, module=module.__name__))
    return rules


def _policy_modules(package: ModuleType) -> list[str]:
    """Dotted names of the modules of ``package`` and of its subpackages (one level: the capabilities)."""
    names: list[str] = []
    for info in pkgutil.iter_modules(package.__path__):
        dotted = f"{package.__name__}.{info.name}"
        if info.ispkg:
            sub = importlib.import_module(dotted)
            names += [
                f"{dotted}.{inner.name}" for inner in pkgutil.iter_modules(sub.__path__) if not inner.ispkg
            ]
        else:
            names.append(dotted)
    return names
