"""`python -m streamalloc` runs the command line."""

from streamalloc.cli import main

raise SystemExit(main())
