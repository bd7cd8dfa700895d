"""Day-2 health: device taints, rail and fabric checks, acceptance jobs, remediation."""
