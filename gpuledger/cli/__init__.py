"""The ``gpuledger`` command: the composition root of every process.

One module per command group adds its commands to the parser: ``data`` (init, ingest, query,
rollup), ``collect`` (the node agent), ``platform`` (up, sim, demo), ``alerts`` and ``ops``
(schema, bench). Each command reads the configuration once, builds the few real objects it
needs and calls one library function; nothing heavy is imported before a command runs.
``GpuledgerError`` becomes one clean line on stderr and exit status 2; anything else is a bug
and keeps its traceback.
"""
from __future__ import annotations

import argparse
import logging
import sys

from base.errors import GpuledgerError
from base.version import version
from gpuledger import config as configuration
from gpuledger.cli import alerts, collect, data, ops, platform

GROUPS = (collect, data, platform, alerts, ops)


class _Version(argparse.Action):
    """``--version``, read from the package's metadata only when asked (not at every start)."""

    def __call__(self, parser, namespace, values, option_string=None):
        print(f"gpuledger {version()}")
        parser.exit()


def parser() -> argparse.ArgumentParser:
    top = argparse.ArgumentParser(prog="gpuledger", description="GPU fleet observability and cost governance on ClickHouse.")
    top.add_argument("--config", help="config file (default: $GPULEDGER_CONFIG or ./gpuledger.toml)")
    top.add_argument("--store", help="store DSN, overriding the config (chdb:///dir or http://user:pass@host:8123/db)")
    top.add_argument("--cluster", metavar="NAME",
                     help="run against this ClickHouse cluster (remote_servers name), overriding store.cluster")
    top.add_argument("-v", "--verbose", action="store_true", help="log debug detail")
    top.add_argument("--version", action=_Version, nargs=0, help="print the version and exit")
    sub = top.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for group in GROUPS:
        group.add_commands(sub)
    return top


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    args = parser().parse_args(argv)
    args.argv = argv           # what a command sends to the platform it runs through (gpuledger.link)
    logging.basicConfig(level=logging.DEBUG if args.verbose else logging.INFO,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    for noisy in ("clickhouse_connect", "apscheduler", "werkzeug"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
    try:
        cfg = configuration.load(args.config)
        if args.cluster:
            configuration.override_cluster(cfg, args.cluster)
        return args.func(args, cfg)
    except GpuledgerError as exc:
        print(f"gpuledger: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
