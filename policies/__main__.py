"""Entry point the Pulumi CLI runs (`python -m pulumi.policy <engine> <this dir>`): build the pack.

`PolicyPack(...)` prints its port and serves until the CLI stops it, so nothing imports this file;
the policies live in the `oke_rdma_policies` package, which tests and preview/policy_check.py use.
"""

from oke_rdma_policies import serve

serve()
