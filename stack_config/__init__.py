"""The stack layer without Pulumi: the stack config model, its loading, and the plans derived from it.

`model` (the root of the pydantic model; each section's model sits in its capability's folder as
`<capability>/*_settings.py`, over the value types of `settings_types`), `loading` (raw config -> a checked
:class:`~.loading.Stack` or one message per problem), and per capability the plans and checks across
values (`nodes/address_plan`, `claims/claim_plan`, ...). `__main__.py` and the offline preview read the
stack through here; `components/` receive its validated objects.
"""
