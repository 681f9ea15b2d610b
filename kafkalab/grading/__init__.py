"""Grading helpers for the course's exercises.

The exercise notebooks' tests call the checks below. Each passes quietly or raises
:class:`Feedback` whose message explains *why* an answer is wrong: for a rule, the scenario step
where it parts ways with Kafka's; for a scenario file, what it did next to what was asked; for a
configuration, what the timed simulations measured. Learners' code runs under a time limit, so
an endless loop fails its check instead of hanging the notebook.

Importing this package loads only the simulator; the tools that build and grade assignments
(:mod:`kafkalab.grading.assignments`) import otter-grader when they are called.
"""

from kafkalab.grading.checks import (
    Case,
    Feedback,
    check_answer,
    check_function,
    check_rule_in_scenario,
    time_limit,
)
from kafkalab.grading.config_checks import check_durability_target, check_lag_time_target
from kafkalab.grading.delivery_checks import check_consumer_loop
from kafkalab.grading.scenario_checks import ANOMALIES, Want, check_scenario_text

__all__ = [
    "ANOMALIES",
    "Case",
    "Feedback",
    "Want",
    "check_answer",
    "check_consumer_loop",
    "check_durability_target",
    "check_function",
    "check_lag_time_target",
    "check_rule_in_scenario",
    "check_scenario_text",
    "time_limit",
]
