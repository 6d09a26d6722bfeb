"""An agent process for the fault tests: the real spool and shipper, rounds from procs.agent_batch.

    python -m tests.deploy.agent_proc SPOOL_DIR PUSH_URL AGENT FIRST_ROUND ROUNDS [--every S] [--max-mb MB]

Spools round FIRST_ROUND..FIRST_ROUND+ROUNDS-1 of agent AGENT (8 GPUs each) every S seconds,
ships them to PUSH_URL, prints ``sent <round>`` per stored batch and ``drained`` once the
spool is empty, then exits 0. While the platform is down, batches wait in the spool and are
retried, exactly like ``gpuledger collect``.
"""
import argparse
import gzip
import logging
import time

from collector.batches import Batch
from collector.shipper import PushDestination, Shipper
from collector.spool import Spool
from tests.deploy.procs import TOKEN, agent_batch


def say(text: str) -> None:
    print(text, flush=True)


if __name__ == "__main__":
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    a = argparse.ArgumentParser()
    a.add_argument("spool_dir"), a.add_argument("push_url")
    a.add_argument("agent", type=int), a.add_argument("first_round", type=int), a.add_argument("rounds", type=int)
    a.add_argument("--every", type=float, default=0.02), a.add_argument("--max-mb", type=float, default=64)
    args = a.parse_args()
    spool = Spool(args.spool_dir, max_bytes=int(args.max_mb * 1024 * 1024))
    shipper = Shipper(spool, PushDestination(args.push_url, TOKEN, timeout_s=10), min_backoff_s=0.1,
                      max_backoff_s=0.5, on_sent=lambda b: say(f"sent {b.id.rsplit('/', 1)[1]}")).start()
    for r in range(args.first_round, args.first_round + args.rounds):
        spool.append(Batch.from_json(gzip.decompress(agent_batch(args.agent, r)[1])))
        shipper.wake()
        time.sleep(args.every)
    say("rounds done")
    deadline = time.monotonic() + 180
    while len(spool) and time.monotonic() < deadline:
        time.sleep(0.05)
    shipper.stop(drain_s=0)
    spool.close()
    say("drained" if not len(spool) else f"NOT drained: {len(spool)} pending")
