"""The project's SQL, shipped as package data: read it with ``base.sqlfiles``."""
