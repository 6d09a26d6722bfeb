"""``gpuledger collect``: the collector agent on a GPU node (its loop is ``collector.agent.run_agent``).

Samples the node's GPUs through NVML every ``--interval`` seconds, serves the last round on
``http://LISTEN:PORT/metrics`` (dcgm-exporter's names and labels, port 9400 by default), and
ships every round to the store through a durable on-disk spool:

* ``--push-url http://platform:8050`` — to ``gpuledger up``'s batch endpoint (any store mode);
* otherwise, with a server store DSN (``--store http://user:pass@host:8123/db`` or
  ``store.dsn``), straight into ClickHouse;
* otherwise nothing is shipped: ``/metrics`` only, for a Prometheus or ``[[scrape]]`` to pull.

Stops cleanly on SIGTERM / SIGINT, giving the shipper a few seconds to send what is pending;
whatever is still unsent stays in the spool for the next start.
"""
from __future__ import annotations

import dataclasses
import logging
import signal
import threading

from base.errors import ConfigError
from collector.config import LABEL_KEYS, CollectorConfig

log = logging.getLogger("gpuledger.collect")


def add_commands(subparsers) -> None:
    p = subparsers.add_parser("collect", help="run the collector agent on a GPU node (NVML -> /metrics and the store)")
    p.add_argument("--interval", type=float, help="seconds between samples (default: collector.interval_s, 10)")
    p.add_argument("--listen", help="address to serve /metrics on (default: collector.listen, 0.0.0.0)")
    p.add_argument("--port", type=int, help="port for /metrics, 0 for none (default: collector.port, 9400)")
    p.add_argument("--spool-dir", help="durable spool directory (default: collector.spool_dir)")
    p.add_argument("--spool-max-mb", type=float, help="spool size limit; oldest unsent batches are dropped past it (default 256)")
    p.add_argument("--push-url", help="base URL of `gpuledger up` to push batches to, e.g. http://platform:8050")
    p.add_argument("--host-name", help="host name written on samples (default: this machine's)")
    p.add_argument("--kubelet-url", help="the node's kubelet, to name the pods on its GPUs, e.g. "
                                         "https://$(HOST_IP):10250 (default: collector.kubelet_url, none)")
    p.add_argument("--label", action="append", default=[], metavar="KEY=VALUE",
                   help=f"a label column for every sample ({', '.join(LABEL_KEYS)}); repeatable")
    p.add_argument("--rounds", type=int, help="stop after this many rounds (default: run until stopped)")
    p.set_defaults(func=cmd_collect)


def settings(args, cfg) -> CollectorConfig:
    """The collector section of the config with the command line's flags applied."""
    base = getattr(cfg, "collector", None) or CollectorConfig()
    labels = dict(base.labels)
    for item in args.label:
        key, sep, value = item.partition("=")
        if not sep or key not in LABEL_KEYS:
            raise ConfigError(f"--label {item!r}: expected KEY=VALUE with KEY one of {', '.join(LABEL_KEYS)}")
        labels[key] = value
    overrides = {"interval_s": args.interval, "listen": args.listen, "port": args.port,
                 "spool_dir": args.spool_dir, "spool_max_mb": args.spool_max_mb,
                 "push_url": args.push_url, "host": args.host_name, "kubelet_url": args.kubelet_url}
    merged = dataclasses.replace(base, labels=labels, **{k: v for k, v in overrides.items() if v is not None})
    problem = merged.validate()
    if problem:
        raise ConfigError(f"collector.{problem[0]}: expected {problem[1]}")
    return merged


def destination_for(c: CollectorConfig, dsn: str | None):
    """Where batches go (see the module docstring), or None."""
    from collector.shipper import PushDestination

    if c.push_url:
        return PushDestination(c.push_url, c.push_token.get() if c.push_token else None)
    if dsn and dsn.startswith(("http://", "https://")):
        from ingest.schema import open_store
        from ingest.store import parse_dsn
        from ingest.writer import StoreDestination

        return StoreDestination(lambda: open_store(dsn), name=str(parse_dsn(dsn)))
    return None


def cmd_collect(args, cfg) -> int:
    from collector.agent import run_agent
    from collector.nvml import load_pynvml

    c = settings(args, cfg)
    dsn = args.store or cfg.store_dsn()
    destination = destination_for(c, dsn)
    stop = threading.Event()
    if threading.current_thread() is threading.main_thread():
        def on_signal(signum, _frame):
            log.info("received %s, stopping", signal.Signals(signum).name)
            stop.set()
        for sig in (signal.SIGTERM, signal.SIGINT):
            signal.signal(sig, on_signal)
    rounds = run_agent(c, destination, load_pynvml, stop, rounds=args.rounds)
    print(f"collected {rounds} round(s)")
    return 0
