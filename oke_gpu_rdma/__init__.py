"""Domain knowledge for RDMA GPU nodes on OKE, free of Pulumi.

One folder per capability (docs/contributing/architecture.md): claims/ (the claim judge), drivers/,
nodes/ (shapes, boot, address plan), sriov/, scheduling/, health/, monitoring/, and common/ for what
several of them share. The Pulumi components and the CrossGuard policy pack both import from here.
"""
