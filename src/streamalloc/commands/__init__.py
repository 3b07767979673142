"""Commands that compose layers: each loads its inputs, runs several components and returns
the text to print and the exit code, CLI-free (docs/architecture.md, layer L10).

A command that only loads its own inputs and runs one component stays in that component's
package (`verify.verify_command`, `memory.vars_command`); one that composes allocation,
verification and emulation lives here, so that no library package imports a layer above it.

The package imports none of its commands: each is imported where it runs (`allocate` needs
neither the emulator nor the variable manager).
"""
