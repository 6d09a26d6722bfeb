"""Identifiers that look like the real ones, drawn from a seeded generator."""
from __future__ import annotations

import numpy as np


def hex_digits(rng: np.random.Generator, n: int) -> str:
    """``n`` lowercase hex digits."""
    return "".join("0123456789abcdef"[d] for d in rng.integers(0, 16, size=n))


def gpu_uuid(rng: np.random.Generator) -> str:
    """An NVML GPU UUID: ``GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx``."""
    h = hex_digits(rng, 32)
    return f"GPU-{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


def guid(rng: np.random.Generator) -> str:
    """A lowercase GUID, as Azure subscription ids are written."""
    h = hex_digits(rng, 32)
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


def aws_account(rng: np.random.Generator) -> str:
    """A 12-digit AWS account id."""
    return str(int(rng.integers(100_000_000_000, 999_999_999_999)))


def aws_instance_id(rng: np.random.Generator) -> str:
    """An EC2 instance id: ``i-0`` and 16 hex digits."""
    return "i-0" + hex_digits(rng, 16)


def aws_hostname(rng: np.random.Generator, region: str) -> str:
    """The private DNS name an EC2 instance reports as its hostname."""
    a, b, c = (int(x) for x in rng.integers(1, 254, size=3))
    domain = "ec2.internal" if region == "us-east-1" else f"{region}.compute.internal"
    return f"ip-10-{a}-{b}-{c}.{domain}"


def gcp_instance_path(project: str, zone: str, name: str) -> str:
    """The resource path GCP billing and the metadata server use for an instance."""
    return f"projects/{project}/zones/{zone}/instances/{name}"


def azure_vm_id(subscription: str, resource_group: str, name: str) -> str:
    """A full ARM resource id of a virtual machine."""
    return (f"/subscriptions/{subscription}/resourceGroups/{resource_group}"
            f"/providers/Microsoft.Compute/virtualMachines/{name}")


def short_type(instance_type: str) -> str:
    """A short, hostname-safe form of an instance type: ``Standard_NC24ads_A100_v4`` -> ``nc24ads``."""
    name = instance_type.removeprefix("Standard_").lower()
    return name.split("_")[0].split(".")[0]
