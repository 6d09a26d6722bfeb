"""gpuledger.serving: the platform's server answers with a fixed pool of threads."""
from __future__ import annotations

import threading
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor

from flask import Flask

from gpuledger.config import ServerConfig
from gpuledger.platform import Platform
from gpuledger.serving import PooledWSGIServer
from tests.helpers import ServedPlatform, platform_config


def test_requests_beyond_the_pool_wait_for_a_free_worker_and_are_all_answered():
    web = Flask("pooled")
    release = threading.Event()
    lock = threading.Lock()
    running, most = [0], [0]

    @web.route("/slow/<int:n>")
    def slow(n):
        with lock:
            running[0] += 1
            most[0] = max(most[0], running[0])
        release.wait(10)
        with lock:
            running[0] -= 1
        return str(n)

    server = PooledWSGIServer("127.0.0.1", 0, web, threads=2)
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_port}/slow/"
    try:
        with ThreadPoolExecutor(8) as senders:
            answers = [senders.submit(lambda n=n: urllib.request.urlopen(url + str(n), timeout=30).read()) for n in range(8)]
            threading.Timer(0.5, release.set).start()
            assert sorted(int(a.result()) for a in answers) == list(range(8))
        assert most[0] == 2            # never more requests at once than workers
    finally:
        server.shutdown()
        server.server_close()
    for worker in server._workers:
        worker.join(5)
        assert not worker.is_alive()


def test_the_platform_serves_with_server_threads_workers(store):
    cfg = platform_config(server=ServerConfig(threads=3))
    platform = Platform(cfg, store)
    with ServedPlatform(platform) as served:
        assert isinstance(platform._server, PooledWSGIServer)
        assert len(platform._server._workers) == 3
        assert urllib.request.urlopen(served.url + "/healthz", timeout=10).status == 200


def test_a_stalled_connection_gives_its_worker_back():
    """A connection that sends nothing is closed after ``idle_s``: with one worker, a second client
    is answered although the first keeps its connection open."""
    import socket
    import time

    web = Flask("idle")
    web.add_url_rule("/", "root", lambda: "ok")
    server = PooledWSGIServer("127.0.0.1", 0, web, threads=1, idle_s=0.5)
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
    try:
        idle = socket.create_connection(("127.0.0.1", server.server_port))
        began = time.monotonic()
        assert urllib.request.urlopen(f"http://127.0.0.1:{server.server_port}/", timeout=30).read() == b"ok"
        assert time.monotonic() - began >= 0.3           # it waited for the silent connection to be closed
        assert idle.recv(4096) == b""                    # which the server did
        idle.close()
    finally:
        server.shutdown()
        server.server_close()


def test_a_job_whose_first_turn_comes_late_still_runs_it(store):
    """The first turn of a job is due when it is added; a start slower than APScheduler's default
    grace of 1 s dropped it, and the scheduler's first backfill waited a whole interval (CI)."""
    platform = Platform(platform_config(), store)
    ran = threading.Event()
    platform.add_job("late", ran.set, seconds=3600)
    time.sleep(1.5)                                   # a slow start: the turn is 1.5 s late
    platform.scheduler.start()
    try:
        assert ran.wait(10), "the late first turn was dropped"
        assert platform.parts["late"]["last_ok"] is not None
    finally:
        platform.scheduler.shutdown(wait=False)
