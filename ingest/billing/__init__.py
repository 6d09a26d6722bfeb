"""Loading cloud bills into the store (the readers that turn provider files into FOCUS rows are
``collector.billing``): ``load`` (``gpuledger ingest billing``), ``read`` (files into a text
staging table), ``stage`` (typed staging and the month swap), ``config`` (scheduled pulls).
"""
