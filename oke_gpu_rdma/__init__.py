"""Domain knowledge for RDMA GPU nodes on OKE, free of Pulumi.

Modules hold one kind of fact each: the shape catalog (shape_catalog, its files in shapes/, their
format in topology), what the DRA drivers publish (inventory), CEL evaluation, the claim judge
(claims/), and address-plan rules.
The Pulumi components and the CrossGuard policy pack both import from here.
"""
