"""The lab beside the ``mmdet_rankloss`` library: the synthetic benchmarks
(:mod:`rankloss_lab.datasets`), the studies that train many runs and report
on them (:mod:`rankloss_lab.study`, ``retrieval_study``, ``reproduce_voc``,
with ``runner``, ``stats`` and ``run_logs``), the generated docs tables
(``results``, ``metafile_results``, ``claims``, ``verdict``) and the code of
the repository's tools. Its layout: docs/architecture.md. A package of its
own (``lab/setup.py``), installed editable by ``tools/install.sh``;
``pip install .`` installs the library alone.
"""
