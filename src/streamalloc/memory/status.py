"""GE status names and the exceptions that carry them.

The variable manager's API mirrors GE's: a call either succeeds (and returns its value) or raises
a `VarManagerError` whose `status` is the GE status GE would have returned (spec conventions:
`FAILED`, `INTERNAL_ERROR`, `PARAM_INVALID`, ...). Calls that GE declares as returning a boolean
or an address keep doing so (`False` / `None` on failure) instead of raising.

The exception class says what the failure means for a streamalloc user (and so the CLI exit code,
errors.py); the `status` says what GE would have returned. They are independent: running out of
RDMA pool memory is a `VarMemoryExhausted` (exit 4) whose status is `INTERNAL_ERROR`, because that
is what GE's `AssignVarMem` returns for it (spec 4.3).
"""

from __future__ import annotations

from enum import StrEnum
from typing import NoReturn

from streamalloc.errors import InputError, LimitExceeded, OptionError, StreamallocError


class Status(StrEnum):
    """GE status codes used by the variable manager (spec conventions)."""

    SUCCESS = "SUCCESS"
    FAILED = "FAILED"
    INTERNAL_ERROR = "INTERNAL_ERROR"
    PARAM_INVALID = "PARAM_INVALID"
    MEMALLOC_FAILED = "MEMALLOC_FAILED"
    GE_GRAPH_OPTIONS_INVALID = "GE_GRAPH_OPTIONS_INVALID"
    GE_GRAPH_VARIABLE_OP_PASS_FAILED = "GE_GRAPH_VARIABLE_OP_PASS_FAILED"
    ACL_ERROR_GE_MEMORY_ALLOCATION = "ACL_ERROR_GE_MEMORY_ALLOCATION"  # numeric 245000


class VarManagerError(StreamallocError):
    """A variable-manager call failed; `status` is the GE status of the failure."""

    def __init__(self, status: Status, message: str) -> None:
        super().__init__(f"{message} (GE status {status})")
        self.status = status
        self.detail = message


class VarMemoryExhausted(VarManagerError, LimitExceeded):
    """Variable memory ran out (pool empty, device full, build over the device size)."""


class VarOptionsInvalid(VarManagerError, OptionError):
    """Memory limits or options GE rejects (e.g. limits over 256 GiB)."""


class VarGraphError(VarManagerError, InputError):
    """A graph the variable passes or the compile driver cannot handle (names the node)."""


def fail(status: Status, message: str, kind: type[VarManagerError] = VarManagerError) -> NoReturn:
    """Raise `kind(status, message)`; the one way this package reports a GE failure."""
    raise kind(status, message)
