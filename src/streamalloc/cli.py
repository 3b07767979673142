"""The `streamalloc` command line: parse arguments, call the API, print. Exit codes: errors.py."""

from __future__ import annotations

import argparse
import json
import sys
import traceback
from collections.abc import Sequence

from streamalloc import __version__, api
from streamalloc.errors import StreamallocError
from streamalloc.ir.loaders.graph_schema import GRAPH_SCHEMA
from streamalloc.ir.printer import print_graph
from streamalloc.report.graph_report import graph_summary, graph_summary_json

SCHEMAS = {"graph": GRAPH_SCHEMA}


def _show(args: argparse.Namespace) -> int:
    graph = api.load_graph(args.graph)
    if args.canonical:
        sys.stdout.write(print_graph(graph))
        return 0
    parts = api.partitions(graph)
    if args.json:
        sys.stdout.write(json.dumps(graph_summary_json(graph, parts), indent=1) + "\n")
    else:
        sys.stdout.write(graph_summary(graph, parts))
    return 0


def _import(args: argparse.Namespace) -> int:
    graph = api.convert_graph(args.model, args.output)
    print(f"wrote {args.output}: graph {graph.name}, {graph.node_count()} nodes, "
          f"{len(graph.subgraphs)} subgraphs")
    return 0


def _schema(args: argparse.Namespace) -> int:
    sys.stdout.write(json.dumps(SCHEMAS[args.kind], indent=1) + "\n")
    return 0


def build_parser() -> argparse.ArgumentParser:
    """The argument parser with every subcommand."""
    parser = argparse.ArgumentParser(prog="streamalloc", description=__doc__)
    parser.add_argument("--version", action="version", version=f"streamalloc {__version__}")
    parser.add_argument("--debug", action="store_true", help="show tracebacks on errors")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    show = sub.add_parser("show", help="print nodes, engines and engine subgraphs of a graph")
    show.add_argument("graph", help="graph file: .yaml/.yml/.json, .onnx, or a GE dump")
    fmt = show.add_mutually_exclusive_group()
    fmt.add_argument("--json", action="store_true", help="machine-readable output")
    fmt.add_argument("--canonical", action="store_true", help="the canonical text form")
    show.set_defaults(run=_show)

    imp = sub.add_parser("import", help="convert an ONNX model or GE dump into our graph format")
    imp.add_argument("model", help="an .onnx model or a GE dump (protobuf text or binary)")
    imp.add_argument("-o", "--output", required=True, help="graph file to write (.yaml or .json)")
    imp.set_defaults(run=_import)

    schema = sub.add_parser("schema", help="print the JSON Schema of a file format")
    schema.add_argument("kind", choices=sorted(SCHEMAS))
    schema.set_defaults(run=_schema)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command; returns the exit code (formats.md section 5)."""
    args = build_parser().parse_args(argv)
    try:
        return int(args.run(args))
    except StreamallocError as exc:
        if args.debug:
            traceback.print_exc()
        print(f"streamalloc: error: {exc}", file=sys.stderr)
        return exc.exit_code
    except Exception as exc:  # a bug: say so, and keep the traceback behind --debug
        if args.debug:
            traceback.print_exc()
        print(f"streamalloc: internal error ({type(exc).__name__}): {exc}; rerun with --debug "
              "and report it", file=sys.stderr)
        return 1
