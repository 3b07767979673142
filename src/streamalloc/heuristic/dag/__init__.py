"""GE's mini DAG allocator (`MiniDAGStreamPass`, ge-logical-streams.md section 6), in parts.

Pure functions over small immutable values, one step per module, in the order GE runs them:

| module | spec 6 step |
|---|---|
| `profiling` | 2: execution times from the op_summary CSV (`MINIDAG_PROFILING_PATH`) |
| `model` | 2: the mini DAG, one node per direct node of a graph |
| `residual` | 4: weighted non-serial nodes, transitive edges, levels |
| `path_cover` | 5: minimum path cover by unit-capacity max flow (Dinic) |
| `units`, `load_balance`, `main_stream` | 6: merging routes into at most N streams |
| `allocate` | 3 and 7: strategy choice, stream offsets per node |

`streamalloc.heuristic.mini_dag` is the pass itself: ids, write-back, dynamic recompaction.
"""
