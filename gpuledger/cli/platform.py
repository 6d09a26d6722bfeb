"""``gpuledger up | sim | demo``: the long-running platform, and the simulated fleet."""
from __future__ import annotations

from gpuledger.cli.common import open_store, progress


def add_commands(sub) -> None:
    p = sub.add_parser("up", help="run the platform: ingest endpoints, scheduler, alerts, dashboard")
    p.add_argument("--host", help="listen address (default: server.host)")
    p.add_argument("--port", type=int, help="listen port (default: server.port, 8050)")
    p.add_argument("--no-auth", action="store_true",
                   help="serve the dashboard and the ingest endpoints without authentication (local demo only)")
    p.set_defaults(func=cmd_up)

    p = sub.add_parser("sim", help="write a simulated fleet's samples and billing files")
    _sim_args(p)
    p.add_argument("--out", required=True, help="directory to write into")
    p.set_defaults(func=cmd_sim)

    p = sub.add_parser("demo", help="simulate a hybrid fleet, load it, derive everything and serve it")
    _sim_args(p)
    p.add_argument("--no-serve", action="store_true", help="stop after loading instead of serving")
    p.add_argument("--port", type=int, help="dashboard port (default 8050)")
    p.add_argument("--keep", action="store_true", help="keep the demo store's earlier data instead of starting fresh")
    p.add_argument("--no-auth", action="store_true", help="serve the dashboard without authentication (local demo only)")
    p.set_defaults(func=cmd_demo)


def _sim_args(p) -> None:
    p.add_argument("--gpus", type=int, default=64, help="GPUs in the fleet (default 64)")
    p.add_argument("--days", type=int, default=30, help="days of history (default 30)")
    p.add_argument("--interval", type=int, default=60, help="seconds between samples (default 60)")
    p.add_argument("--seed", type=int, default=7, help="random seed (default 7)")


def cmd_up(args, cfg) -> int:
    from gpuledger.platform import build_platform, check_exposure

    host = args.host or cfg.server.host
    check_exposure(cfg, host, auth=not args.no_auth)
    store = open_store(cfg, args.store)
    platform = build_platform(cfg, store, auth=not args.no_auth)
    platform.serve(host, args.port or cfg.server.port)
    return 0


def cmd_sim(args, cfg) -> int:
    from gpuledger.demo import write_simulation

    written = write_simulation(args.out, gpus=args.gpus, days=args.days, interval_s=args.interval, seed=args.seed,
                               progress=progress)
    print(f"wrote {len(written)} files under {args.out}")
    return 0


def cmd_demo(args, cfg) -> int:
    from gpuledger.demo import DEMO_DSN, run_demo

    return run_demo(args.store or DEMO_DSN, gpus=args.gpus, days=args.days, interval_s=args.interval, seed=args.seed,
                    keep=args.keep, serve=not args.no_serve, port=args.port, auth=not args.no_auth, progress=progress)
