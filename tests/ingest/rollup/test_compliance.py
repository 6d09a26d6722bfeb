"""Compliance findings, hand-computed: GPU health counts errors where they happen (not a count
that stays where it was), drift says since when and uses attributed teams, residency regions
match without regard to case, and a backfill of some days keeps the other days' findings."""
from datetime import date

from ingest.rollup.compliance import derive_findings
from ingest.rollup.config import AttributionRule, ResidencyPolicy
from ingest.rollup.run import rollup
from tests.ingest.rollup.conftest import at, insert_samples, series

DGX = {"environment": "onprem", "pool": "dgx", "util_gpu": 60.0, "util_mem": 30.0, "process_count": 1}


def findings(store, policy: str) -> dict[str, tuple]:
    rows = store.rows("SELECT finding_key, severity, summary, first_seen, last_seen, team FROM compliance_findings "
                      "WHERE policy = {p:String}", {"p": policy})
    return {key: rest for key, *rest in rows}


def naive(text: str):
    return at(text).replace(tzinfo=None)


def test_gpu_health_counts_errors_where_they_happen(store, cfg):
    def gpu(uuid, start="2026-02-27T00:00", end="2026-03-02T12:00", **values):
        return series(start, end, 300, host="dgx-1", gpu_uuid=uuid, **DGX, **values)
    rows = (
        # dcgm-exporter: DCGM_FI_DEV_XID_ERRORS is the last XID, no count: XID 79 from 10:00 is one event
        gpu("GPU-xid", end="2026-03-02T10:00") + gpu("GPU-xid", start="2026-03-02T10:00", xid_last=79)
        # an XID from days before, reported ever since: no new event
        + gpu("GPU-stale-xid", xid_last=48)
        # our agent: one event counted on the sample that saw it (and its code on that sample only)
        + gpu("GPU-agent", end="2026-03-02T11:30")
        + gpu("GPU-agent", start="2026-03-02T11:30", end="2026-03-02T11:35", xid_count=1, xid_last=13)
        + gpu("GPU-agent", start="2026-03-02T11:35")
        # volatile uncorrected ECC: 0, then 2 at 09:00, a reboot resets it at 10:00, then 1 at 11:00: 3 errors
        + gpu("GPU-ecc", end="2026-03-02T09:00", ecc_uncorrected_volatile=0)
        + gpu("GPU-ecc", start="2026-03-02T09:00", end="2026-03-02T10:00", ecc_uncorrected_volatile=2)
        + gpu("GPU-ecc", start="2026-03-02T10:00", end="2026-03-02T11:00", ecc_uncorrected_volatile=0)
        + gpu("GPU-ecc", start="2026-03-02T11:00", ecc_uncorrected_volatile=1)
        # a count of 3 from before, unchanged: no new error
        + gpu("GPU-stale-ecc", ecc_uncorrected_volatile=3)
    )
    insert_samples(store, rows)
    rollup(store, cfg, since=date(2026, 2, 27), until=date(2026, 3, 2), now=at("2026-03-03T00:00"))
    derive_findings(store, cfg, since=date(2026, 3, 2), until=date(2026, 3, 2))
    found = findings(store, "gpu_health")
    assert sorted(found) == ["health/dgx-1/GPU-agent", "health/dgx-1/GPU-ecc", "health/dgx-1/GPU-xid"]
    severity, summary, first, last, _ = found["health/dgx-1/GPU-xid"]
    assert (severity, first, last) == ("critical", naive("2026-03-02T10:00"), naive("2026-03-02T11:00"))
    assert summary.endswith(": 1 XID events (last XID 79)")
    assert found["health/dgx-1/GPU-agent"][1].endswith(": 1 XID events (last XID 13)")
    severity, summary, first, last, _ = found["health/dgx-1/GPU-ecc"]
    assert summary.endswith(": 3 uncorrected ECC errors")
    assert (severity, first, last) == ("critical", naive("2026-03-02T09:00"), naive("2026-03-02T12:00"))


def test_drift_says_since_when_and_uses_the_attributed_team(store, cfg):
    cfg.attribution = [AttributionRule(name="research namespaces", team="research",
                                       when={"k8s_namespace": "research-*"})]
    base = {"driver_version": "550.90.07", "cuda_version": "12.4.1"}
    day = ("2026-03-02T00:00", "2026-03-03T00:00")
    insert_samples(store, series(*day, 300, host="dgx-1", gpu_uuid="GPU-1", k8s_namespace="research-a", **DGX, **base)
                   + series(*day, 300, host="dgx-3", gpu_uuid="GPU-3", **DGX, **base)
                   + series("2026-03-02T00:00", "2026-03-02T12:00", 300, host="dgx-2", gpu_uuid="GPU-2", **DGX, **base)
                   + series("2026-03-02T12:00", "2026-03-03T00:00", 300, host="dgx-2", gpu_uuid="GPU-2", **DGX,
                            driver_version="560.35.03", cuda_version="12.6.0")
                   # the same team in AWS on CUDA 12.2: its team comes from the rule, not a label
                   + series(*day, 300, host="aws-1", gpu_uuid="GPU-9", environment="aws", pool="p4d",
                            instance_type="p4d.24xlarge", k8s_namespace="research-b", util_gpu=60.0, process_count=1,
                            driver_version="535.183.01", cuda_version="12.2.0"))
    rollup(store, cfg, since=date(2026, 3, 2), until=date(2026, 3, 2), now=at("2026-03-03T00:00"))
    found = findings(store, "runtime_drift")
    assert sorted(found) == ["drift-team/research", "drift/dgx/dgx-2"]
    _, summary, first, last, _ = found["drift/dgx/dgx-2"]
    assert "runs driver 560.35.03 / CUDA 12.6.0" in summary
    assert (first, last) == (naive("2026-03-02T12:00"), naive("2026-03-03T00:00"))   # drifting since 12:00
    _, summary, *_, team = found["drift-team/research"]
    assert team == "research" and "12.2 in aws" in summary and "12.4 in onprem" in summary


def test_residency_regions_match_whatever_their_case_and_a_backfill_keeps_other_days(store, cfg):
    cfg.policies.residency = [ResidencyPolicy(team="clinical", allowed=["onprem", "azure:westeurope"])]
    held = {"team": "clinical", "util_gpu": 50.0, "process_count": 1}
    insert_samples(store, series("2026-03-01T10:00", "2026-03-01T12:00", 300, host="gc-1", gpu_uuid="GPU-g",
                                 environment="gcp", region="us-east4", **held)
                   # Azure's telemetry says WestEurope, the policy westeurope: allowed
                   + series("2026-03-02T10:00", "2026-03-02T12:00", 300, host="az-1", gpu_uuid="GPU-z",
                            environment="azure", region="WestEurope", **held))
    rollup(store, cfg, since=date(2026, 3, 1), until=date(2026, 3, 2), now=at("2026-03-03T00:00"))
    expected = {"residency/clinical/gcp/us-east4": ("critical", naive("2026-03-01T10:00"), naive("2026-03-01T12:00"))}
    assert {k: (v[0], v[2], v[3]) for k, v in findings(store, "residency").items()} == expected
    # a backfill of 2 March alone: the finding of 1 March (inside the lookback) stays as it was
    rollup(store, cfg, since=date(2026, 3, 2), until=date(2026, 3, 2), now=at("2026-03-03T00:00"), force=True)
    assert {k: (v[0], v[2], v[3]) for k, v in findings(store, "residency").items()} == expected


def test_untagged_and_unattributed_gpu_spend(store, cfg, tmp_path):
    from ingest.billing.load import ingest_billing
    from tests.ingest.rollup.conftest import focus_file

    cfg.policies.untagged_tag_keys = ["team", "cost-center"]
    day = ("2026-03-02T00:00", "2026-03-03T00:00")
    aws = {"environment": "aws", "instance_type": "p4d.24xlarge", "util_gpu": 50.0, "process_count": 1}
    insert_samples(store, [s for i in (1, 2, 3) for s in series(*day, 300, host=f"aws-{i}", gpu_uuid=f"GPU-{i}",
                                                                 instance_id=f"i-{i}", **aws)])
    tags = {1: '{"cost-center": "cc-42"}', 2: '{"team": "nlp"}', 3: "{}"}   # no rule reads cost-center
    ingest_billing(store, [focus_file(tmp_path / "bill.csv", [
        {"start": day[0], "end": day[1], "cost": "96", "resource": f"i-{i}", "tags": tags[i]} for i in (1, 2, 3)])],
        progress=lambda m: None)
    rollup(store, cfg, since=date(2026, 3, 2), until=date(2026, 3, 2), now=at("2026-03-03T00:00"))
    rows = store.rows("SELECT finding_key, summary, cost_usd FROM compliance_findings WHERE policy = 'untagged_spend' "
                      "ORDER BY finding_key")
    assert rows == [
        ("untagged/i-1", "aws GPU instance i-1 (us-east-1) has 96 USD of spend that no attribution rule gives to a team",
         96.0),
        ("untagged/i-3", "aws GPU instance i-3 (us-east-1) has 96 USD of spend without any of the tags team, cost-center",
         96.0)]
