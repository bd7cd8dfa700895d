"""The DRA drivers and the GPU Operator: DRANET, the NVIDIA GPU DRA driver, ComputeDomains, the device plugin."""
