"""An agent process for the outage and fault tests: the real spool and shipper, pushing to a platform.

    python -m tests.agent_proc SPOOL_DIR PUSH_URL FIRST_ROUND ROUNDS [--agent N [--every S]]
                               [--max-mb MB] [--die-after-send N] [--hard-exit]

Rounds FIRST_ROUND..FIRST_ROUND+ROUNDS-1 are spooled and shipped to PUSH_URL with the token in
$GPULEDGER_INGEST_TOKEN:

* by default the collector's own loop samples a fake 2-GPU node (host ``node-o``) on a
  deterministic clock: round i is sampled at 1784000000 + 10 i seconds (``tests/ingest/test_outage.py``);
* with ``--agent N``, round i is ``tests.helpers.agent_batch(N, i)`` (8 GPUs, host ``agent-NNNN``),
  one every S seconds (``tests/deploy/test_faults.py``).

Prints ``spooled <round>`` per round, ``sent <batch id>`` per stored batch, ``rounds done``, then
``drained`` once the spool is empty (``NOT drained: N pending`` after 180 s) and exits 0. While
the platform is down, batches wait in the spool and are retried, exactly like ``gpuledger collect``.
``--die-after-send N`` exits hard (as kill -9) right after the Nth batch was stored and before it
was acknowledged; ``--hard-exit`` exits hard right after the last round.
"""
import argparse
import gzip
import logging
import os
import threading
import time

from collector.agent import Agent, open_sampler
from collector.batches import Batch, batches_from_round
from collector.shipper import PushDestination, Shipper
from collector.spool import Spool
from tests.helpers import agent_batch, fake_node

BASE = 1_784_000_000.0


def say(text: str) -> None:
    print(text, flush=True)


def sampled_rounds(args, spool: Spool, shipper: Shipper) -> None:
    """The collector's loop on a fake node: round i sampled at BASE + 10 i."""
    fake = fake_node(gpus=2, seed="outage")
    fake.advance(BASE + 10 * args.first_round - fake.clock())
    sampler, _ = open_sampler(lambda: fake, host="node-o", clock=fake.clock)
    number = [args.first_round]

    def sink(round_):
        for batch in batches_from_round(round_, sampler.host):
            spool.append(batch)
        say(f"spooled {number[0]}")
        number[0] += 1
        fake.advance(10)
        shipper.wake()

    Agent(sampler, interval_s=0.05, sink=sink).run(threading.Event(), rounds=args.rounds)


def synthetic_rounds(args, spool: Spool, shipper: Shipper) -> None:
    """Agent N's rounds as ``agent_batch`` makes them, one every ``--every`` seconds."""
    for r in range(args.first_round, args.first_round + args.rounds):
        spool.append(Batch.from_json(gzip.decompress(agent_batch(args.agent, r)[1])))
        say(f"spooled {r}")
        shipper.wake()
        time.sleep(args.every)


if __name__ == "__main__":
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    a = argparse.ArgumentParser()
    a.add_argument("spool_dir"), a.add_argument("push_url")
    a.add_argument("first_round", type=int), a.add_argument("rounds", type=int)
    a.add_argument("--agent", type=int), a.add_argument("--every", type=float, default=0.02)
    a.add_argument("--max-mb", type=float, default=64)
    a.add_argument("--die-after-send", type=int), a.add_argument("--hard-exit", action="store_true")
    args = a.parse_args()
    spool = Spool(args.spool_dir, max_bytes=int(args.max_mb * 1024 * 1024))
    sent = [0]

    def on_sent(batch):
        sent[0] += 1
        say(f"sent {batch.id}")
        if args.die_after_send and sent[0] >= args.die_after_send:
            os._exit(137)                     # stored, not acknowledged

    shipper = Shipper(spool, PushDestination(args.push_url, os.environ["GPULEDGER_INGEST_TOKEN"], timeout_s=10),
                      min_backoff_s=0.1, max_backoff_s=0.5, on_sent=on_sent).start()
    (sampled_rounds if args.agent is None else synthetic_rounds)(args, spool, shipper)
    say("rounds done")
    if args.hard_exit:
        os._exit(137)
    deadline = time.monotonic() + 180
    while len(spool) and time.monotonic() < deadline:
        time.sleep(0.05)
    shipper.stop(drain_s=0)
    spool.close()
    say("drained" if not len(spool) else f"NOT drained: {len(spool)} pending")
