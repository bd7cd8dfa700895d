"""The change plan: from a base rendering to the new one, what `pulumi up` would update, replace or refuse.

- :mod:`preview.plan.change_plan`: the steps, their changed paths, replacements spread as the engine spreads them.
- :mod:`preview.plan.replace_rules`: update or replace for each changed input, from the providers' own rules.
- :mod:`preview.plan.oci_updatable`: pulumi-oci's "(Updatable)" marks, read from the installed SDK.
- :mod:`preview.plan.gpu_impact`: the plan's first lines, what a change does to the GPU nodes.
"""
