"""Cloud billing readers: provider data in, FOCUS rows out. Nothing here talks to ClickHouse.

* ``focus``        the FOCUS columns and header matching
* ``aws_cur``      AWS Cost and Usage Report (CUR 2.0 and legacy) -> FOCUS
* ``aws_ce``       AWS Cost Explorer ``get_cost_and_usage`` -> FOCUS
* ``azure``        Azure Cost Management exports (actual / amortized) -> FOCUS
* ``azure_query``  Azure Cost Management Query REST API -> FOCUS
* ``gcp``          GCP Cloud Billing export rows (BigQuery schema) -> FOCUS
* ``s3``           listing and fetching ``s3://bucket/prefix`` objects through boto3
* ``resource_ids`` the normalised ResourceId that joins billing to collector instance ids
"""
