"""Closed-loop remediation of the GPU pools (health.remediation; docs/remediation.md): a node whose mark outlasts a
threshold is cordoned, its jobs evicted through Kueue and requeued, drained, replaced in its node pool,
checked alone and returned. :mod:`.machine` decides; :mod:`.controller` reads the cluster and acts."""
