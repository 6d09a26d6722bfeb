"""Delivery: backoff, 429 Retry-After, exactly-once after failures, dead channels, attempts recorded."""
import logging

from alerts import outbox
from alerts.config import ChannelConfig, DeliveryConfig
from alerts.delivery.retry import attempts
from tests.helpers import free_port

from .conftest import make_engine, slack_channel, src_rule, webhook_channel


def test_429_retry_after_is_honoured(astore, source, receiver, clock):
    receiver.reply(429, {"Retry-After": "30"})
    engine = make_engine(astore, [src_rule()], [webhook_channel(receiver)], clock)
    source.set(("vision", "h1", 91.0))
    report = engine.run_once()
    assert report.delivery.delivered == [] and len(report.delivery.retrying) == 1
    [entry] = outbox.entries(astore)
    assert (entry.next_attempt_at - clock()).total_seconds() == 30
    clock.advance(29)
    engine.deliver()
    assert len(receiver.requests) == 1                  # not before Retry-After
    clock.advance(1)
    assert len(engine.deliver().delivered) == 1
    assert len(receiver.requests) == 2 and len(receiver.delivered()) == 1
    recorded = attempts(astore, entry.key)
    assert [(a["attempt"], a["ok"], a["status_code"], a["retry_after_s"]) for a in recorded] == \
        [(1, False, 429, 30.0), (2, True, 0, 0.0)]


def test_a_short_retry_after_is_waited_inline(astore, source, receiver, clock):
    receiver.reply(429, {"Retry-After": "2"})
    engine = make_engine(astore, [src_rule()], [webhook_channel(receiver)], clock,
                         delivery=DeliveryConfig(inline_wait_max_s=5))
    source.set(("vision", "h1", 91.0))
    report = engine.run_once()
    assert len(report.delivery.delivered) == 1 and clock.slept == [2.0]


def test_fails_three_times_then_recovers_delivers_exactly_once(astore, source, receiver, clock):
    receiver.reply(503, times=3)
    engine = make_engine(astore, [src_rule()], [webhook_channel(receiver)], clock,
                         delivery=DeliveryConfig(backoff_initial_s=10, inline_wait_max_s=0))
    source.set(("vision", "h1", 91.0))
    for _ in range(12):                     # rounds every 10 s: retries at +10, +30, +70 s (backoff 10, 20, 40)
        engine.run_once()
        clock.advance(10)
    assert len(receiver.requests) == 4 and len(receiver.delivered()) == 1
    [entry] = outbox.entries(astore)
    assert entry.status == "delivered" and entry.attempts == 4
    assert [a["ok"] for a in attempts(astore)] == [False, False, False, True]
    times = [a["ts"] for a in attempts(astore)]
    assert [(b - a).total_seconds() for a, b in zip(times, times[1:])] == [10, 20, 40]


def test_a_dead_channel_never_blocks_the_others(astore, source, receiver, clock):
    dead = ChannelConfig(name="dead", type="webhook", endpoint=f"http://127.0.0.1:{free_port()}/x", timeout_s=2)
    engine = make_engine(astore, [src_rule(group_by=("alertname", "host"))], [dead, webhook_channel(receiver)], clock)
    source.set(("vision", "h1", 91.0), ("vision", "h2", 92.0))
    report = engine.run_once()
    assert len(receiver.delivered()) == 2 and len(report.delivery.delivered) == 2
    assert len(report.delivery.retrying) == 1           # one attempt at the dead channel, its 2nd waits
    assert "did not answer" in report.delivery.skipped_channels["dead"]
    assert {e.channel: e.status for e in outbox.entries(astore, "pending")} == {"dead": "pending"}


def test_a_client_error_is_not_retried(astore, source, receiver, clock):
    receiver.reply(400, body=b"no such team")
    engine = make_engine(astore, [src_rule()], [webhook_channel(receiver)], clock)
    source.set(("vision", "h1", 91.0))
    report = engine.run_once()
    assert list(report.delivery.failed.values()) == [f"channel hook: http://127.0.0.1:{int(receiver.url.rsplit(':', 1)[1])} answered HTTP 400: no such team"]
    clock.advance(3600)
    engine.deliver()
    assert len(receiver.requests) == 1 and outbox.entries(astore)[0].status == "failed"


def test_undelivered_notification_gives_up_after_the_limit(astore, source, receiver, clock):
    receiver.reply(500, times=100)
    engine = make_engine(astore, [src_rule()], [webhook_channel(receiver)], clock,
                         delivery=DeliveryConfig(backoff_initial_s=60, backoff_max_s=600, give_up_after="1h",
                                                 inline_wait_max_s=0))
    source.set(("vision", "h1", 91.0))
    engine.run_once()
    for _ in range(10):
        clock.advance(600)
        engine.deliver()
    assert outbox.entries(astore)[0].status == "failed"
    count = len(receiver.requests)
    clock.advance(600)
    engine.deliver()
    assert len(receiver.requests) == count


def test_restart_with_undelivered_notification_delivers_it_once(astore, source, receiver, clock):
    receiver.reply(500)
    channels = [webhook_channel(receiver)]
    source.set(("vision", "h1", 91.0))
    make_engine(astore, [src_rule()], channels, clock).run_once()
    clock.advance(5)
    make_engine(astore, [src_rule()], channels, clock).run_once()     # restarted; retry due after 1 s
    clock.advance(60)
    make_engine(astore, [src_rule()], channels, clock).run_once()
    assert len(receiver.requests) == 2 and len(receiver.delivered()) == 1


def test_secret_url_is_never_logged_or_recorded(astore, source, receiver, clock, caplog):
    receiver.reply(500, body=b"bad gateway", times=2)
    engine = make_engine(astore, [src_rule()], [slack_channel(receiver)], clock)
    source.set(("vision", "h1", 91.0))
    with caplog.at_level(logging.DEBUG):
        engine.run_once()
        clock.advance(5)
        engine.run_once()
    recorded = " ".join(a["error"] for a in attempts(astore))
    assert "answered HTTP 500" in recorded
    assert "s3cr3tT0ken" not in recorded and "s3cr3tT0ken" not in caplog.text
    assert "s3cr3tT0ken" not in repr(engine.channels) and "s3cr3tT0ken" not in repr(engine.cfg)


def test_a_resolve_never_overtakes_the_firing_it_resolves(astore, source, receiver, clock):
    receiver.reply(503)
    engine = make_engine(astore, [src_rule()], [webhook_channel(receiver)], clock,
                         delivery=DeliveryConfig(backoff_initial_s=120, inline_wait_max_s=0))
    source.set(("vision", "h1", 91.0))
    engine.run_once()                                   # firing: 503, retried at +120 s
    clock.advance(60)
    source.set()
    report = engine.run_once()                          # resolved: decided, held behind the firing
    assert len(report.notifications) == 1 and report.delivery.delivered == []
    assert len(receiver.requests) == 1
    clock.advance(60)
    report = engine.run_once()                          # the firing, then the resolve, in order
    assert len(report.delivery.delivered) == 2
    assert [r.json()["status"] for r in receiver.delivered()] == ["firing", "resolved"]


def test_other_groups_go_on_while_one_waits_for_a_retry(astore, source, receiver, clock):
    receiver.reply(503)
    engine = make_engine(astore, [src_rule(group_by=("alertname", "host"))], [webhook_channel(receiver)], clock,
                         delivery=DeliveryConfig(backoff_initial_s=600, inline_wait_max_s=0))
    source.set(("vision", "h1", 91.0))
    engine.run_once()                                   # h1: 503, retried in 10 min
    clock.advance(60)
    source.set(("vision", "h1", 91.0), ("vision", "h2", 92.0))
    report = engine.run_once()
    assert len(report.delivery.delivered) == 1
    assert [a["labels"]["host"] for r in receiver.delivered() for a in r.json()["alerts"]] == ["h2"]
