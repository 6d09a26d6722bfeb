"""``gpuledger rollup`` and the ``rollup`` job of ``gpuledger up``: everything derived from samples and
bills, computed in ClickHouse: rollups, idle windows, cost of every GPU-hour, attribution, team
spend, compliance findings. See ``run.rollup``."""
