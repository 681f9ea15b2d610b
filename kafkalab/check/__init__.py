"""Named invariants and the end-of-run report."""

from kafkalab.check.invariants import INVARIANTS, InvariantViolation, Report

__all__ = ["INVARIANTS", "InvariantViolation", "Report"]
