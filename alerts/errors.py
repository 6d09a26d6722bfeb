"""The errors the alerts engine raises on purpose.

    GpuledgerError (gpuledger.errors)
    └── AlertsError              something about alerting an operator can fix
        ├── RuleError            a rule is unusable: its SQL fails or returns the wrong shape
        ├── SilenceError         a silence request is invalid (bad matcher, no author, unknown id)
        ├── ChannelError         a channel is misconfigured or unknown
        └── DeliveryError        one attempt to deliver a notification failed
            └── RateLimited      the receiver answered 429; ``retry_after`` says when to come back

``DeliveryError.retryable`` says whether trying again can help (network errors, 5xx, 429) or not
(4xx other than 408/429). Messages never contain a channel's URL or password: they name the
channel and, at most, the receiver's scheme and host.
"""
from __future__ import annotations

from gpuledger.errors import GpuledgerError


class AlertsError(GpuledgerError):
    pass


class RuleError(AlertsError):
    pass


class SilenceError(AlertsError):
    pass


class ChannelError(AlertsError):
    pass


class DeliveryError(AlertsError):
    def __init__(self, message: str, *, retryable: bool = True, status: int | None = None,
                 retry_after: float | None = None):
        super().__init__(message)
        self.retryable, self.status, self.retry_after = retryable, status, retry_after


class RateLimited(DeliveryError):
    pass
