"""XID critical errors from NVML's event API, polled without blocking once per round.

The watcher creates one event set (``nvmlEventSetCreate``), registers each physical GPU for
``nvmlEventTypeXidCriticalError`` (``nvmlDeviceRegisterEvents``) and, every round, drains
what arrived with ``nvmlEventSetWait(set, 0)`` until NVML answers ``NVMLError_Timeout``.
GPUs that cannot deliver events (NOT_SUPPORTED, e.g. some virtualised GPUs) simply report no
XID; the sampler's ``xid_count`` for them stays 0.
"""
from __future__ import annotations

import ctypes
from collections import Counter
from dataclasses import dataclass

NO_INSTANCE = 0xFFFFFFFF


@dataclass(frozen=True, slots=True)
class XidEvent:
    """One XID: the device handle NVML gave, the XID code, the GPU instance (None: whole GPU)."""
    device: object
    xid: int
    gpu_instance_id: int | None


def handle_key(handle) -> int:
    """A stable key for an NVML device handle: the pointer value for pynvml's
    ``c_nvmlDevice_t``, the object identity for anything else (the fake's handles)."""
    try:
        return ctypes.cast(handle, ctypes.c_void_p).value or id(handle)
    except (TypeError, ctypes.ArgumentError):
        return id(handle)


class XidWatcher:
    """Collects XID critical-error events for the GPUs registered with it."""

    def __init__(self, nvml, errors: Counter, max_per_round: int = 4096):
        self._nvml = nvml
        self._errors = errors
        self._max = max_per_round
        self._set = None

    def register(self, handle) -> bool:
        """Ask NVML to deliver XID events for this GPU; False when it cannot."""
        n = self._nvml
        try:
            if self._set is None:
                self._set = n.nvmlEventSetCreate()
            n.nvmlDeviceRegisterEvents(handle, n.nvmlEventTypeXidCriticalError, self._set)
            return True
        except (n.NVMLError_NotSupported, n.NVMLError_FunctionNotFound):
            return False
        except n.NVMLError:
            self._errors["xid"] += 1
            return False

    def drain(self) -> list[XidEvent]:
        """Every XID event waiting now (never blocks)."""
        n = self._nvml
        out: list[XidEvent] = []
        if self._set is None:
            return out
        for _ in range(self._max):
            try:
                data = n.nvmlEventSetWait(self._set, 0)
            except n.NVMLError_Timeout:
                break
            except n.NVMLError:
                self._errors["xid"] += 1
                break
            if data.eventType & n.nvmlEventTypeXidCriticalError:
                gi = data.gpuInstanceId
                out.append(XidEvent(data.device, int(data.eventData),
                                    None if gi == NO_INSTANCE else int(gi)))
        return out

    def close(self) -> None:
        """Free the event set."""
        if self._set is not None:
            try:
                self._nvml.nvmlEventSetFree(self._set)
            except self._nvml.NVMLError:
                pass
            self._set = None
