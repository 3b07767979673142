"""`python -m streamalloc` runs the command line."""

try:
    from streamalloc.cli import console_main
except KeyboardInterrupt:  # Ctrl-C while starting: the same one line as during a command
    print("streamalloc: interrupted", file=__import__("sys").stderr)
    raise SystemExit(130) from None

console_main()
