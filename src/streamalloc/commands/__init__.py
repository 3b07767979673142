"""Commands that compose layers: each loads its inputs, runs several components and returns
the text to print and the exit code, CLI-free (docs/architecture.md, layer L10).

A command that only loads its own inputs and runs one component stays in that component's
package (`verify.verify_command`, `memory.vars_command`); one that composes allocation,
verification and emulation lives here, so that no library package imports a layer above it.
"""

from streamalloc.commands.emulate import emulate_command, ge_plan

__all__ = ["emulate_command", "ge_plan"]
