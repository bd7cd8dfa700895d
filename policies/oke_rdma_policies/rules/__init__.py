"""The pack's policies, one module each; every module declares its ``RULE`` (:mod:`oke_rdma_policies.registry`).

The pack collects whatever modules this package holds: a new policy is a new module here and its test.
"""
