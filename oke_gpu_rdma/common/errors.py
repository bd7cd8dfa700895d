"""Exceptions a caller can cause, each with a one-line message that says what is wrong and the fix.

Every class derives from :class:`ValueError`, so a caller that only wants "bad input" can catch that.
"""

from __future__ import annotations


class TopologyError(ValueError):
    """A shape topology is unknown, unverified, or a user-supplied topology is malformed."""


class TopologyFormatError(TopologyError):
    """A topology (a ``shapeTopologies`` entry or a shape file) does not fit the format.

    ``problems`` holds one message per problem, each naming the key and, where it helps, the value.
    """

    def __init__(self, problems: list[str]) -> None:
        self.problems = tuple(problems)
        super().__init__("; ".join(problems))


class UnverifiedTopologyError(TopologyError):
    """The catalog knows the shape, but not its GPU/NIC pairing well enough to judge claims."""


class ResourceSliceDumpError(ValueError):
    """A ResourceSlice dump lacks what a shape's topology needs (a driver's slices, an attribute)."""


class ClaimError(ValueError):
    """A claim cannot be analysed: it is malformed, or the allocation aborted."""


class ClaimValidationError(ClaimError):
    """The claim fails Kubernetes API validation (resource.k8s.io/v1 rules and limits).

    ``problems`` holds one message per problem, each naming the request or constraint.
    """

    def __init__(self, problems: list[str]) -> None:
        self.problems = tuple(problems)
        first = problems[0] if problems else "invalid claim"
        more = f" (and {len(problems) - 1} more problem(s))" if len(problems) > 1 else ""
        super().__init__(first + more)


class SelectorError(ClaimError):
    """A CEL selector failed to compile or to evaluate; the scheduler aborts the allocation.

    ``expression`` is the selector text; ``device`` names the device it failed on (runtime errors).
    """

    def __init__(self, message: str, expression: str, device: str | None = None) -> None:
        self.expression = expression
        self.device = device
        super().__init__(message)


class AllocationAbortedError(ClaimError):
    """The structured allocator stops with an error instead of trying other devices."""


class PairingError(ValueError):
    """A GPU count cannot be split into pairs that each sit on one PCIe root of a shape."""
