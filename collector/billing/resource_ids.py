"""One spelling per cloud instance, so billing ResourceIds meet the instance ids collectors report.

=====================================================================  ==========================
ResourceId as billed                                                    normalised (resource_key)
=====================================================================  ==========================
``arn:aws:ec2:us-east-1:123456789012:instance/i-0abc``                   ``i-0abc``
``i-0abc`` (CUR, Cost Explorer, what the AWS collector reports)          ``i-0abc``
``/subscriptions/S/resourceGroups/RG/providers/Microsoft.Compute/…``     the same, lower-cased, no
(ARM ids are case-insensitive; IMDS and exports disagree on case)        trailing ``/``
``//compute.googleapis.com/projects/p/zones/z/instances/123``            ``123``
``projects/p/zones/z/instances/123``, ``https://…/instances/123``        ``123``
anything else                                                           itself, trimmed
=====================================================================  ==========================

The same rules are written in SQL in ``sql/migrations/002_billing_line_items.sql`` (the ``resource_key``
column) and in ``sql/rollup/minute.sql`` (the rollups' ``instance_key``); the tests check
that they agree with this function.
"""
from __future__ import annotations

import re

_ARN_EC2 = re.compile(r"^arn:[^:]+:ec2:[^:]*:[^:]*:instance/([^/]+)$")
_GCP = re.compile(r"/instances/([^/]+)$")


def normalize_resource_id(resource_id: str | None) -> str:
    """The key a billed ResourceId and a collector's instance id are matched on."""
    value = (resource_id or "").strip()
    if value.lower().startswith("/subscriptions/"):
        return value.lower().rstrip("/")
    arn = _ARN_EC2.match(value)
    if arn:
        return arn.group(1)
    gcp = _GCP.search(value)
    if gcp:
        return gcp.group(1)
    return value
