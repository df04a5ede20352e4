"""``python -m runner.passes.warm``: ``serve`` runs the fork server (``WarmServer`` starts
it), ``check`` warms up, prints what was imported and exits."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from runner.passes import warm
from runner.passes.warm.preload import CONFIGURATION_MODULES, probe_collection_paths, warm_up
from runner.passes.warm.server import serve


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m runner.passes.warm", description=warm.__doc__.split("\n")[0]
    )
    commands = parser.add_subparsers(dest="command", required=True)
    serve_parser = commands.add_parser("serve", help="run the fork server")
    serve_parser.add_argument("directory", type=Path)
    serve_parser.add_argument("--cwd", type=Path, default=None)
    check = commands.add_parser("check", help="warm up, print what was imported, exit")
    check.add_argument("--no-collection", action="store_true")
    args = parser.parse_args(argv)
    if args.command == "serve":
        return serve(args.directory, args.cwd)
    paths, scan = (None, False) if args.no_collection else probe_collection_paths()
    report = warm_up(paths, scan)
    report["configuration_imported"] = sorted(CONFIGURATION_MODULES & set(sys.modules))
    print(json.dumps(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
