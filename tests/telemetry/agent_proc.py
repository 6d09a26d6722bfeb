"""A collector agent process on a fake 2-GPU node with a deterministic clock, for test_outage.py.

    python -m tests.telemetry.agent_proc SPOOL_DIR PUSH_URL FIRST_ROUND ROUNDS [--die-after-send N]

Round i is sampled at 1784000000 + 10 i seconds. Prints ``spooled i``, ``sent ID``,
``rounds done``, ``drained`` (then exits 0). Without the platform it keeps the batches in the
spool; ``--die-after-send N`` exits hard (as kill -9) right after the Nth batch was stored and
before it was acknowledged; ``--hard-exit`` exits hard right after the last round.
"""
import argparse
import logging
import os
import threading
import time

from collector.agent import Agent, open_sampler
from collector.batches import batches_from_round
from collector.shipper import PushDestination, Shipper
from collector.spool import Spool
from tests.telemetry.helpers import fake_node

BASE = 1_784_000_000.0


def say(text: str) -> None:
    print(text, flush=True)


if __name__ == "__main__":
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    a = argparse.ArgumentParser()
    a.add_argument("spool_dir"), a.add_argument("push_url")
    a.add_argument("first_round", type=int), a.add_argument("rounds", type=int)
    a.add_argument("--die-after-send", type=int), a.add_argument("--hard-exit", action="store_true")
    args = a.parse_args()
    fake = fake_node(gpus=2, seed="outage")
    fake.advance(BASE + 10 * args.first_round - fake.clock())
    sampler, _ = open_sampler(lambda: fake, host="node-o", clock=fake.clock)
    spool = Spool(args.spool_dir, max_bytes=64 << 20)
    sent = [0]

    def on_sent(batch):
        sent[0] += 1
        say(f"sent {batch.id}")
        if args.die_after_send and sent[0] >= args.die_after_send:
            os._exit(137)                     # stored, not acknowledged

    shipper = Shipper(spool, PushDestination(args.push_url, os.environ["INGEST_TOKEN"], timeout_s=5),
                      min_backoff_s=0.2, max_backoff_s=1.0, on_sent=on_sent).start()
    number = [args.first_round]

    def sink(round_):
        for batch in batches_from_round(round_, sampler.host):
            spool.append(batch)
        say(f"spooled {number[0]}")
        number[0] += 1
        fake.advance(10)
        shipper.wake()

    Agent(sampler, interval_s=0.05, sink=sink).run(threading.Event(), rounds=args.rounds)
    say("rounds done")
    if args.hard_exit:
        os._exit(137)
    deadline = time.monotonic() + 120
    while len(spool) and time.monotonic() < deadline:
        time.sleep(0.05)
    shipper.stop(drain_s=0)
    say("drained" if not len(spool) else f"NOT drained: {len(spool)} pending")
