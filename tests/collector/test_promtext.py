"""The Prometheus text parser: format corners, and agreement with prometheus_client."""
from __future__ import annotations

import math

import pytest
from prometheus_client.parser import text_string_to_metric_families

from collector.promtext import PromTextError, Sample, parse, unescape


def test_format_corners():
    text = (
        '# HELP http_requests_total The total number\\nof requests, with \\\\ backslash.\n'
        '# TYPE http_requests_total counter\n'
        'http_requests_total{method="post",code="200"} 1027 1395066363000\n'
        'http_requests_total{method="post",code="400"}    3 1395066363000\n'
        '\n'
        '# a comment that is neither HELP nor TYPE\n'
        'msdos_file_access_time_seconds{path="C:\\\\DIR\\\\FILE.TXT",error="Cannot find file:\\n\\"FILE.TXT\\""} 1.458255915e9\n'
        'metric_without_timestamp_and_labels 12.47\n'
        'something_weird{problem="division by zero"} +Inf -3982045\n'
        'minus_inf{} -Inf\n'
        'not_a_number{a="}",b="{,="} NaN\n'
        'trailing_comma{a="1",} 2\r\n'
        '  \n')
    parsed = parse(text)
    assert parsed.types == {"http_requests_total": "counter"}
    assert parsed.help == {"http_requests_total":
                           "The total number\nof requests, with \\ backslash."}
    assert parsed.samples[:6] == [
        Sample("http_requests_total", {"method": "post", "code": "200"}, 1027.0, 1395066363000),
        Sample("http_requests_total", {"method": "post", "code": "400"}, 3.0, 1395066363000),
        Sample("msdos_file_access_time_seconds",
               {"path": "C:\\DIR\\FILE.TXT", "error": 'Cannot find file:\n"FILE.TXT"'},
               1.458255915e9, None),
        Sample("metric_without_timestamp_and_labels", {}, 12.47, None),
        Sample("something_weird", {"problem": "division by zero"}, math.inf, -3982045),
        Sample("minus_inf", {}, -math.inf, None),
    ]
    names = [s.name for s in parsed.samples]
    assert names == ["http_requests_total", "http_requests_total",
                     "msdos_file_access_time_seconds", "metric_without_timestamp_and_labels",
                     "something_weird", "minus_inf", "not_a_number", "trailing_comma"]
    nan = parsed.samples[6]
    assert nan.labels == {"a": "}", "b": "{,="} and math.isnan(nan.value)
    assert parsed.samples[7] == Sample("trailing_comma", {"a": "1"}, 2.0, None)


@pytest.mark.parametrize("line, message", [
    ("metric1", "not a Prometheus sample"),
    ('m{a=b} 1', "malformed label set"),
    ('m{a="1" b="2"} 1', "malformed label set"),
    ('m{1a="x"} 1', "malformed label set"),
    ("m 1x", "is not a sample value"),
    ("# TYPE m gauges", "unknown metric type"),
])
def test_errors_name_the_line(line, message):
    with pytest.raises(PromTextError, match=f"line 2: .*{message}|line 2: {message}"):
        parse("ok 1\n" + line + "\n")


def test_unescape():
    assert unescape(r'a\\b\"c\nd') == 'a\\b"c\nd'
    assert unescape("plain") == "plain"


def test_agrees_with_prometheus_client_on_real_files(shared_data):
    for path in sorted((shared_data / "dcgm").glob("*.prom")):
        text = path.read_text()
        ours = parse(text)
        theirs = [s for fam in text_string_to_metric_families(text) for s in fam.samples]
        assert len(ours.samples) == len(theirs) > 0, path.name
        for a, b in zip(ours.samples, theirs):
            # prometheus_client appends _total to counter sample names; the wire name has none
            assert (a.name, a.labels, a.value) == (b.name.removesuffix("_total"), b.labels,
                                                   b.value), path.name
