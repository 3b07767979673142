"""One exception hierarchy for streamalloc, each class with a stable CLI exit code.

The codes are the contract of formats.md section 5: 3 bad input, 4 infeasible or over a
limit, 5 a plan failed verification, 1 an internal error (a bug), 2 a usage error.
"""

from __future__ import annotations


class StreamallocError(Exception):
    """Base of every error the tool raises on purpose; `exit_code` is what the CLI returns."""

    exit_code = 1


class UsageError(StreamallocError):
    """The command line itself is wrong (unknown option value, missing argument)."""

    exit_code = 2


class InputError(StreamallocError):
    """Bad input: a graph, rule or option file; the message names the file, place, expectation."""

    exit_code = 3


class GraphLoadError(InputError):
    """A graph file (YAML/JSON, ONNX, GE dump) could not be read or is structurally invalid."""


class RuleSchemaError(InputError):
    """A rule file does not follow the rule schema."""


class RuleConflictError(InputError):
    """Rules that cannot all hold: a later rule or GE pass undoes what a rule asks."""


class OptionError(InputError):
    """A graph option has a value GE does not accept."""


class AllocationInfeasible(StreamallocError):
    """No allocation satisfies the rules and options (e.g. a GE error case)."""

    exit_code = 4


class LimitExceeded(AllocationInfeasible):
    """A device limit (streams, tasks, events, notifies, memory) is exceeded; says by how much."""


class PlanVerifyError(StreamallocError):
    """A plan failed verification; the message names the edge, stream or event."""

    exit_code = 5


class GeSyncRace(PlanVerifyError):
    """GE's sync gave a plan that races: several activators start one stream and GE credits
    any one of them (docs/ge-behaviour.md); the message names the streams."""


class InternalError(StreamallocError):
    """An internal invariant broke: a bug in streamalloc, not in the input."""

    exit_code = 1


class InputWarning(UserWarning):
    """Input the tool accepts but suspects (an option it does not read, an unknown op type);
    the command line prints it as one line on stderr."""
