"""The SR-IOV path: VFs per rail from the NVIDIA Network Operator."""
