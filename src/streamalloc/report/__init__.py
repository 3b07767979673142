"""Human-readable tables and machine-readable JSON for command output."""
