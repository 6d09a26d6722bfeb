"""Silences: created with author and comment, matched by labels, suppress, and expiry restores."""
import pytest

from alerts.silences import create_silence, expire_silence, list_silences
from base.errors import SilenceError

from .conftest import make_engine, src_rule, webhook_channel


def test_silence_suppresses_and_expiry_restores(astore, source, receiver, clock):
    engine = make_engine(astore, [src_rule()], [webhook_channel(receiver)], clock)
    silence = create_silence(astore, ["team=vision", "alertname=~gpu_.*"], author="ana", comment="maintenance",
                             now=clock(), duration_s=7200)
    source.set(("vision", "h1", 91.0), ("nlp", "h3", 93.0))
    report = engine.run_once()
    [body] = [r.json() for r in receiver.delivered()]
    assert [a["labels"]["host"] for a in body["alerts"]] == ["h3"]
    assert sorted(report.muted.values()) == [f"silenced by {silence.id}"]
    for _ in range(5):
        clock.advance(60)
        engine.run_once()
    assert len(receiver.delivered()) == 1
    expire_silence(astore, silence.id, now=clock(), author="ana")
    clock.advance(60)
    engine.run_once()
    assert len(receiver.delivered()) == 2
    assert sorted(a["labels"]["host"] for a in receiver.delivered()[1].json()["alerts"]) == ["h1", "h3"]


def test_silence_ends_by_itself(astore, source, receiver, clock):
    engine = make_engine(astore, [src_rule()], [webhook_channel(receiver)], clock)
    create_silence(astore, ["host=h1"], author="ana", comment="reboot", now=clock(), duration_s=600)
    source.set(("vision", "h1", 91.0))
    engine.run_once()
    clock.advance(540)
    engine.run_once()
    assert receiver.requests == []
    clock.advance(60)
    engine.run_once()
    assert len(receiver.delivered()) == 1


def test_resolve_of_a_silenced_alert_is_not_sent(astore, source, receiver, clock):
    engine = make_engine(astore, [src_rule()], [webhook_channel(receiver)], clock)
    source.set(("vision", "h1", 91.0))
    engine.run_once()
    create_silence(astore, ["host=h1"], author="ana", comment="known", now=clock(), duration_s=3600)
    clock.advance(60)
    source.set()
    engine.run_once()
    assert len(receiver.delivered()) == 1
    for _ in range(3):                      # nor when the silence ends (it resolved while silenced)
        clock.advance(1800)
        engine.run_once()
    assert len(receiver.delivered()) == 1


def test_silence_needs_author_comment_and_sane_matchers(astore, clock):
    with pytest.raises(SilenceError, match="author"):
        create_silence(astore, ["team=a"], author=" ", comment="x", now=clock(), duration_s=60)
    with pytest.raises(SilenceError, match="comment"):
        create_silence(astore, ["team=a"], author="ana", comment="", now=clock(), duration_s=60)
    with pytest.raises(SilenceError, match="not like name=value"):
        create_silence(astore, ["team"], author="ana", comment="x", now=clock(), duration_s=60)
    with pytest.raises(SilenceError, match="match every alert"):
        create_silence(astore, ["team=~.*"], author="ana", comment="x", now=clock(), duration_s=60)
    with pytest.raises(SilenceError, match="no silence with id"):
        expire_silence(astore, "nope", now=clock())


def test_list_shows_active_and_optionally_expired(astore, clock):
    a = create_silence(astore, ["team=a"], author="ana", comment="one", now=clock(), duration_s=60)
    b = create_silence(astore, ["team!=b", "host=x"], author="bo", comment="two", now=clock(), duration_s=3600)
    clock.advance(120)
    assert [s.id for s in list_silences(astore, clock())] == [b.id]
    listed = {s.id: s for s in list_silences(astore, clock(), include_expired=True)}
    assert set(listed) == {a.id, b.id} and listed[a.id].state(clock()) == "expired"
    assert [str(m) for m in listed[b.id].matchers] == ["team!=b", "host=x"]
    assert listed[b.id].created_by == "bo" and listed[b.id].comment == "two"
