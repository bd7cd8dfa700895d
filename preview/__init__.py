"""The offline preview, `make preview`: what `pulumi preview` and `pulumi up` would do, with no cloud.

- :mod:`preview.cli`: the command (`python -m preview --stack dev [--base REF]`).
- :mod:`preview.mock_runtime`: runs `__main__.py` under Pulumi's mock runtime and records every resource.
- :mod:`preview.rendering`: `rendered/<stack>/`, one file per declared resource, manifests apart.
- :mod:`preview.base_rendering`: the rendering the plan starts from (a git ref's, or a folder).
- :mod:`preview.plan`: the change plan, update or replace per input, and what happens to GPU nodes.
- :mod:`preview.policy_check`: the policy pack on the recorded resources, in-process, through the
  analyzer protocol the Pulumi CLI speaks.
- :mod:`preview.stacks`: where stack files live (standard library only: CI lists stacks before installing).

Kept light: importing the package imports nothing else, so `tools/stack_list.py` can read
:mod:`preview.stacks` with a bare Python.
"""
