"""JSON Schemas of the files streamalloc writes: plan, variable plan, emulation report, comparison.

`streamalloc schema plan|vars|emulation|compare` prints them (`graph` and `rules`, the files
users write, live beside their loaders); `SWEEP_SCHEMA` (`schema sweep`) describes the results
of `streamalloc sweep` and `SHOW_SCHEMA` (`schema show`) the graph summary `streamalloc show
--json` prints; no command reads either back. `check_document(kind, document, source)`
validates a document against one of them and raises an `InputError` (exit 3) whose message
names the file, the field and what was expected:

    plan.json: field events[0].id: expected an integer >= 0 (up to 2147483647), found 1e+30
    (docs/plan-format.md)

Validation runs a compiled `jsonschema_rs` validator first (a 100k-node plan validates in
milliseconds); only a document that fails is validated again with `jsonschema`, for the
most relevant error and its place. The format strings are constants here, at the bottom of the
layering; the modules that write the files (sync, memory, runtime_emu, report) keep their own
constant, and a test checks that the two agree.
"""

from streamalloc.schemas.checking import (
    SCHEMAS,
    check_document,
    describe,
    expected,
    field_name,
    schema_check,
)
from streamalloc.schemas.parts import (
    COMPARE_FORMAT,
    EMULATION_FORMAT,
    PLAN_FORMAT,
    SHOW_FORMAT,
    SOLVER_STATUSES,
    SWEEP_FORMAT,
    VARS_FORMAT,
)
from streamalloc.schemas.plan import PLAN_SCHEMA
from streamalloc.schemas.reports import EMULATION_SCHEMA, SHOW_SCHEMA, VARS_SCHEMA
from streamalloc.schemas.tables import COMPARE_SCHEMA, SWEEP_SCHEMA

__all__ = ["COMPARE_FORMAT", "COMPARE_SCHEMA", "EMULATION_FORMAT", "EMULATION_SCHEMA",
           "PLAN_FORMAT", "PLAN_SCHEMA", "SCHEMAS", "SHOW_FORMAT", "SHOW_SCHEMA",
           "SOLVER_STATUSES", "SWEEP_FORMAT", "SWEEP_SCHEMA", "VARS_FORMAT", "VARS_SCHEMA",
           "check_document", "describe", "expected", "field_name", "schema_check"]
