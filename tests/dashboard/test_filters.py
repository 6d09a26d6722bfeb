"""Filters from the URL: presets, fixed windows, many values, and hostile values dropped or bound
as plain values, never SQL text."""
from __future__ import annotations

from datetime import date

from dashboard.filters import Filters, parse
from dashboard.probe import call_page

TODAY = date(2026, 11, 21)


def test_presets_and_fixed_windows():
    f = parse({}, TODAY)
    assert (f.start, f.end, f.preset) == (date(2026, 10, 23), date(2026, 11, 22), "30d")
    f = parse({"range": "7d", "env": ["aws", "gcp"], "team": "research"}, TODAY)
    assert (f.days, f.envs, f.teams, f.notes) == (7, ("aws", "gcp"), ("research",), ())
    f = parse({"from": "2026-10-01", "to": "2026-10-31"}, TODAY)
    assert (f.start, f.end, f.preset, f.days) == (date(2026, 10, 1), date(2026, 11, 1), "", 31)
    assert f.search() == "?from=2026-10-01&to=2026-10-31"


def test_a_link_round_trips():
    f = parse({"range": "90d", "env": ["onprem"], "team": ["a b", "c&d=e"]}, TODAY)
    from urllib.parse import parse_qs

    again = parse({k: v if len(v) > 1 else v[0] for k, v in parse_qs(f.search()[1:]).items()}, TODAY)
    assert again == f and Filters.from_data(f.to_data(), TODAY) == f


def test_hostile_values_are_dropped_or_kept_as_plain_values():
    f = parse({"range": "30d' OR 1=1", "env": ['aws" OR "1"="1', "onprem"], "team": ["x' OR 1=1 --", "B" * 200],
               "from": "2026-01-01'); DROP TABLE gpu_hour; --"}, TODAY)
    assert f.preset == "30d" and f.envs == ("onprem",) and f.teams == ("x' OR 1=1 --",)
    assert len(f.notes) == 4 and any("200 characters ignored" in n for n in f.notes)
    assert parse({"from": "2026-11-01", "to": "2026-01-01"}, TODAY).preset == "30d"          # backwards: default
    assert parse({"team": [f"t{i}" for i in range(50)]}, TODAY).teams == tuple(f"t{i}" for i in range(20))
    assert Filters.from_data({"start": "2026-01-01'--", "end": "x", "teams": [1, None]}, TODAY) == parse({}, TODAY)


def test_hostile_filter_data_sent_to_every_callback_is_harmless(site):
    client = site.platform.web.test_client()
    client.environ_base["HTTP_AUTHORIZATION"] = site.auth
    before = site.store.rows("SELECT count() FROM gpu_hour")[0][0]
    hostile = {"start": "2026-01-01", "end": "2026-12-01", "preset": "'; DROP TABLE x; --",
               "envs": ["aws') OR 1=1 --"], "teams": ["' OR ''='", "\\'; SELECT * FROM system.users --", "Z" * 100]}
    for page in ("overview", "utilization", "idle", "spend", "placement", "compliance", "alerts"):
        calls = call_page(client, page, hostile)
        assert calls and all(c.status == 200 for c in calls), page
    assert site.store.rows("SELECT count() FROM gpu_hour")[0][0] == before
