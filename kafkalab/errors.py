"""The errors kafkalab raises for a user's mistake.

Every one of them is a :class:`KafkalabError`; the command line prints its message and exits 2
without a traceback. Messages name the bad value and what is allowed.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable

__all__ = [
    "ActionError",
    "ConfigError",
    "InvariantViolation",
    "KafkalabError",
    "ScenarioError",
    "did_you_mean",
]


class KafkalabError(Exception):
    """Base class of every error caused by input rather than by a bug."""


class ConfigError(KafkalabError, ValueError):
    """A config key or value is not allowed."""


class ScenarioError(KafkalabError, ValueError):
    """A scenario file is malformed: the message names the step number and the key."""


class ActionError(KafkalabError, RuntimeError):
    """An action that cannot happen now, such as restarting a broker that is running."""


class InvariantViolation(KafkalabError, AssertionError):
    """A named invariant failed; the message says how to replay the run
    (:mod:`kafkalab.check.invariants` names them)."""


def did_you_mean(word: str, choices: Iterable[str]) -> str:
    """A ' (did you mean ...?)' hint for a misspelt name, or '' when nothing is close."""
    close = difflib.get_close_matches(word, list(choices), n=1, cutoff=0.6)
    return f" (did you mean {close[0]!r}?)" if close else ""
