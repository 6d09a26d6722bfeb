"""``s3://bucket/prefix`` inputs through boto3.

``client()`` builds an S3 client the usual way: credentials, region and profile from the AWS
environment / config files, and a custom endpoint from ``endpoint_url`` or the standard
``AWS_ENDPOINT_URL_S3`` / ``AWS_ENDPOINT_URL`` variables (MinIO, Ceph, LocalStack, moto).
"""
from __future__ import annotations

import hashlib
from pathlib import Path
from urllib.parse import urlparse

from base.errors import InputError


def client(endpoint_url: str | None = None, region: str | None = None):
    import boto3

    return boto3.session.Session().client("s3", endpoint_url=endpoint_url or None, region_name=region)


def split(url: str) -> tuple[str, str]:
    parsed = urlparse(url)
    if parsed.scheme != "s3" or not parsed.netloc:
        raise InputError("not an S3 URL: expected s3://bucket/prefix", path=url)
    return parsed.netloc, parsed.path.lstrip("/")


def list_objects(s3, url: str, suffixes: tuple[str, ...]) -> list[str]:
    """URLs of the objects under ``url`` whose names end in one of ``suffixes``, sorted."""
    from botocore.exceptions import BotoCoreError, ClientError

    bucket, prefix = split(url)
    found = []
    try:
        for page in s3.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix):
            for item in page.get("Contents", []):
                if item["Key"].lower().endswith(suffixes):
                    found.append(f"s3://{bucket}/{item['Key']}")
    except (ClientError, BotoCoreError) as exc:
        raise InputError(f"cannot list objects ({exc}); check the bucket name, credentials (AWS_PROFILE / "
                         "AWS_ACCESS_KEY_ID) and endpoint (AWS_ENDPOINT_URL_S3)", path=url) from None
    if not found:
        raise InputError(f"no billing objects under this prefix (looked for {', '.join(suffixes)})", path=url)
    return sorted(found)


def download(s3, url: str, directory: Path) -> Path:
    """Fetch one object into ``directory`` keeping its file name (and so its type)."""
    from botocore.exceptions import BotoCoreError, ClientError

    bucket, key = split(url)
    target = directory / hashlib.sha1(url.encode()).hexdigest()[:12] / Path(key).name
    target.parent.mkdir(parents=True, exist_ok=True)
    try:
        s3.download_file(bucket, key, str(target))
    except (ClientError, BotoCoreError) as exc:
        raise InputError(f"cannot download ({exc})", path=url) from None
    return target
