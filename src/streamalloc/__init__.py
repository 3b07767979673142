"""streamalloc: stream allocation, synchronization and variable memory planning for DL graphs."""

__version__ = "0.1.0"
