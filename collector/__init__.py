"""Producers of records: NVML sampling, owner discovery, exposition and parsers, billing readers.

Nothing in this package knows about ClickHouse; it yields value types whose field names are
the store's column names (see collector.records).
"""
