"""`gpuledger up` with the telemetry parts, as its own process on its own embedded store.

Used by test_outage.py (a store that can go away): ``python -m tests.ingest.platform_proc
STORE_DIR PORT`` with the receiver token in $GPULEDGER_INGEST_TOKEN. Stops on SIGTERM.
"""
import logging
import os
import sys

from base.settings import Secret
from collector.config import CollectorConfig
from gpuledger.config import Config
from gpuledger.platform import Platform
from ingest.schema import prepare
from ingest.store import connect
from ingest.telemetry import register_telemetry
from ingest.telemetry_config import ReceiverConfig

if __name__ == "__main__":
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    store_dir, port = sys.argv[1], int(sys.argv[2])
    store = connect(f"chdb://{store_dir}")
    prepare(store)
    cfg = Config()
    cfg.receiver = ReceiverConfig(token=Secret(os.environ["GPULEDGER_INGEST_TOKEN"], "env GPULEDGER_INGEST_TOKEN"))
    cfg.collector = CollectorConfig(local_sampling=False)
    cfg.scrape = []
    platform = Platform(cfg, store)
    register_telemetry(platform, store, cfg)
    platform.serve("127.0.0.1", port)
