"""The lab beside the ``mmdet_rankloss`` library: synthetic benchmarks,
studies, generated docs tables and the code of the repository's tools
(docs/architecture.md); a package of its own (``lab/setup.py``).
"""
