"""The pack's policies, one module each in the folder of its capability; every module declares its ``RULE``
(:mod:`oke_rdma_policies.registry`).

The pack collects whatever modules its capability folders hold: a new policy is a new module in one and its test.
"""
