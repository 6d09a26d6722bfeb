"""Derived data, computed in ClickHouse by the scheduler: rollups, idle windows, cost of every
GPU-hour, attribution, team spend, compliance findings. See ``derive.derive``."""
