"""The stack layer without Pulumi: the stack config model, its loading, and the plans derived from it.

`model` (pydantic, every key documented), `loading` (raw config -> a checked :class:`~.loading.Stack`
or one message per problem), `address_plan` and `claim_plan` (checks across values; claim templates
judged once), `pack_config` (the policy pack's config for the stack). `__main__.py` and the offline
preview read the stack through here; `components/` receive its validated objects.
"""
