"""Filters from the URL: presets, fixed windows, many values, and hostile values dropped or bound
as plain values, never SQL text; the same for the Idle & waste page's focus (gpu, mig, window)."""
from __future__ import annotations

from datetime import date, datetime

from dashboard import focus, ids
from dashboard.filters import Filters, parse
from dashboard.probe import call, call_page, page_callbacks

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


def test_the_idle_focus_from_the_url():
    f = focus.parse({"gpu": "GPU-1", "mig": "9", "window": "2026-03-20T01:02:03Z"})
    assert (f.gpu, f.mig, f.window, f.notes) == ("GPU-1", "9", datetime(2026, 3, 20, 1, 2, 3), ())
    assert f.describe() == "GPU-1 MIG 9" and f.query() == {"gpu": "GPU-1", "mig": "9", "window": "2026-03-20T01:02:03Z"}
    assert focus.Focus.from_data(f.to_data()) == f
    # an offset, milliseconds: the same second in UTC
    assert focus.parse({"gpu": "g", "window": "2026-03-20T03:02:03.999+02:00"}).window == datetime(2026, 3, 20, 1, 2, 3)
    assert not focus.parse({}) and focus.parse({"gpu": "GPU-1"}).query() == {"gpu": "GPU-1"}


def test_hostile_focus_values_are_dropped_with_a_note():
    f = focus.parse({"gpu": ["x' OR 1=1 --", "GPU-2"], "mig": "9" * 200, "window": "2026-03-20'; DROP TABLE x"})
    assert (f.gpu, f.mig, f.window) == ("x' OR 1=1 --", "", None) and len(f.notes) == 3
    assert focus.parse({"gpu": "GPU-\x00"}).gpu == "" and focus.parse({"gpu": "A" * 129}).notes
    f = focus.parse({"mig": "3", "window": "2026-03-20T01:02:03Z"})
    assert not f and f.notes == ("mig and window ignored: they need gpu (the GPU's UUID)",)
    assert focus.Focus.from_data({"gpu": 1, "window": "x"}) == focus.NO_FOCUS
    assert focus.Focus.from_data({"gpu": "g", "window": "not a time"}) == focus.NO_FOCUS


def test_hostile_focus_data_sent_to_the_idle_callbacks_is_harmless(site):
    client = site.platform.web.test_client()
    client.environ_base["HTTP_AUTHORIZATION"] = site.auth
    before = site.store.rows("SELECT count() FROM idle_windows")[0][0]
    filters = parse({}, date.today()).to_data()
    for data in ({"gpu": "' OR ''='", "mig": "\\'; SELECT 1 --", "window": "2026-01-01T00:00:00Z"},
                 {"gpu": ["a"], "mig": {"b": 1}, "window": "'"}, "garbage", None):
        for dep in page_callbacks(client, "idle"):
            got = call(client, "idle", dep, filters, {ids.IDLE_FOCUS: data})
            assert got.status == 200, (data, dep["output"])
    assert site.store.rows("SELECT count() FROM idle_windows")[0][0] == before


NOW = datetime(2026, 11, 21, 14, 23, 5)      # the clock: a Saturday afternoon, UTC


def test_last_24_hours_is_the_24_hours_up_to_now_not_today():
    f = parse({"range": "1d"}, NOW)
    assert f.window() == (datetime(2026, 11, 20, 15), datetime(2026, 11, 21, 15))
    assert (f.start, f.end, f.hours, f.whole_days) == (date(2026, 11, 20), date(2026, 11, 22), 24, False)
    assert f.partial_from("hour") == datetime(2026, 11, 21, 14) and f.partial_from("day") == datetime(2026, 11, 21)
    assert f.params()["start"] == datetime(2026, 11, 20, 15) and f.params()["start_day"] == date(2026, 11, 20)
    # an aware clock is the same instant
    from datetime import timedelta, timezone
    aware = NOW.replace(tzinfo=timezone.utc).astimezone(timezone(timedelta(hours=-5)))
    assert parse({"range": "1d"}, aware).window() == f.window()
    # just after midnight: the window is mostly yesterday
    g = parse({"range": "1d"}, datetime(2026, 11, 21, 0, 5))
    assert g.window() == (datetime(2026, 11, 20, 1), datetime(2026, 11, 21, 1)) and g.partial_from() == datetime(2026, 11, 21)
    assert Filters.from_data(f.to_data(), NOW) == f and Filters.from_data(f.to_data(), NOW).now == NOW


def test_rolling_days_are_whole_utc_days_ending_today():
    for key, n in (("7d", 7), ("30d", 30), ("90d", 90)):
        f = parse({"range": key}, NOW)
        assert f.window() == (datetime(2026, 11, 22) - n * (datetime(2026, 1, 2) - datetime(2026, 1, 1)), datetime(2026, 11, 22))
        assert f.whole_days and f.days == n and f.partial_from() == datetime(2026, 11, 21)
        assert f.budget_month == date(2026, 11, 1) and f.budget_month_is_current


def test_month_presets_at_month_and_year_boundaries():
    cases = [  # clock, mtd, this month, last month (each [first day, day after))
        (NOW, ("2026-11-01", "2026-11-22"), ("2026-11-01", "2026-12-01"), ("2026-10-01", "2026-11-01")),
        (datetime(2026, 1, 1, 0, 30), ("2026-01-01", "2026-01-02"), ("2026-01-01", "2026-02-01"), ("2025-12-01", "2026-01-01")),
        (datetime(2026, 12, 31, 23, 59), ("2026-12-01", "2027-01-01"), ("2026-12-01", "2027-01-01"), ("2026-11-01", "2026-12-01")),
        (datetime(2028, 3, 1, 12), ("2028-03-01", "2028-03-02"), ("2028-03-01", "2028-04-01"), ("2028-02-01", "2028-03-01")),
    ]
    for now, mtd, month, last in cases:
        for key, (a, b) in (("mtd", mtd), ("month", month), ("last-month", last)):
            f = parse({"range": key}, now)
            assert (f.start, f.end) == (date.fromisoformat(a), date.fromisoformat(b)), (now, key)
            assert f.whole_days and f.query() == {"range": key} and f.budget_month == date.fromisoformat(a)
            assert f.budget_month_is_current == (key != "last-month")
            assert (f.partial_from() is None) == (key == "last-month")
    feb = parse({"range": "last-month"}, datetime(2028, 3, 1, 12))
    assert feb.days == 29 and feb.describe().startswith("Last month (2028-02-01 to 2028-02-29)")


def test_fixed_windows_and_the_budget_month():
    f = parse({"from": "2026-09-10", "to": "2026-10-03"}, NOW)
    assert f.budget_month == date(2026, 10, 1) and not f.budget_month_is_current and f.partial_from() is None
    assert f.params()["month"] == date(2026, 10, 1) and f.params()["today"] == NOW.date()
    assert parse({"from": "2026-11-20", "to": "2026-11-30"}, NOW).partial_from() == datetime(2026, 11, 21)


def test_invalid_ranges_fall_back_with_a_note():
    for bad in ("24h", "month'--", "LAST-MONTH", "1m"):
        f = parse({"range": bad}, NOW)
        assert f.preset == "30d" and len(f.notes) == 1 and "unknown time range" in f.notes[0], bad
    f = parse({"from": "2026-02-30", "to": "2026-03-01"}, NOW)
    assert f.preset == "30d" and "from/to" in f.notes[0]
    assert parse({}, NOW, default_range="last-month").window() == (datetime(2026, 10, 1), datetime(2026, 11, 1))
    # a tampered store: hour bounds outside the days, or not whole hours, are dropped (whole days)
    data = parse({"range": "1d"}, NOW).to_data()
    for start_at in ("2026-11-19T15:00:00", "2026-11-20T15:30:00", "x"):
        got = Filters.from_data({**data, "start_at": start_at}, NOW)
        assert got.whole_days and (got.start, got.end) == (date(2026, 11, 20), date(2026, 11, 22))
