"""Work shared out among handles on one store, side by side (the derivation's days, runs of days
and tables that do not read each other)."""
from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor


def in_parallel(handles, items: list, work, *, share_cores: bool = True) -> None:
    """Run ``work(handle, item)`` for every item (a day, a run of days, a job), in order, each on
    the next handle that is free (items take unequal time: runs of days are up to 8 days long).
    With more items than handles, each handle's queries use its share of the cores
    (Store.sharing_cores) unless not ``share_cores``."""
    if len(handles) == 1:
        for item in items:
            work(handles[0], item)
        return
    todo, taking = iter(items), threading.Lock()
    sharing = len(handles) if share_cores and len(items) > len(handles) else 1

    def worker(handle):
        with handle.sharing_cores(sharing):
            while True:
                with taking:
                    item = next(todo, todo)
                if item is todo:
                    return
                work(handle, item)
    with ThreadPoolExecutor(len(handles)) as pool:
        list(pool.map(worker, handles))


def run_jobs(handles, jobs: list[Callable]) -> None:
    """Run each ``job(handle)`` (tables that do not read each other), as many at once as handles;
    each query with every core (the jobs take unequal time: the longest runs on alone)."""
    in_parallel(handles, jobs, lambda handle, job: job(handle), share_cores=False)
