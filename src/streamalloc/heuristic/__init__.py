"""The GE-compatible heuristic allocator: GE's pass chain as a fold of rules over plans."""
