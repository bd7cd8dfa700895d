"""Scheduling: where pods may run, Kueue's topology-aware scheduling, the MPI operator."""
