"""The base every other package builds on; it imports nothing of ours.

* ``errors``: every error an operator can see, in one tree;
* ``settings``: validating config sections into dataclasses, and ``Secret``;
* ``sqlfiles``: the one loader of the SQL in ``sql/``.
"""
