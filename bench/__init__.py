"""The streamalloc benchmark: `python -m bench` from a checkout (see bench/__main__.py).

Modules: `inputs` (the graphs), `stacks` (transformer stacks), `runner` (measured child
processes), `suite` (one row per input and mode), `report` (JSON, markdown, plot, README block).
The older one-off scripts beside them (`bench_load.py`, `compare_real_models.py`, ...) run on
their own: `python bench/<script>.py`.
"""
