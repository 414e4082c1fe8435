"""The project's experiments: what trains many runs and reports on them.

* :mod:`experiments.runner`: a plan of runs, resumable run folders, the job
  pool, progress lines with an ETA, markdown tables.
* :mod:`experiments.stats`: mean and standard deviation over seeds, paired
  differences with t intervals, the paired t-test, Bonferroni and Holm.
* :mod:`experiments.run_logs`: MMEngine's JSON logs of a run, the machine,
  a logged subprocess, figures.
* :mod:`experiments.study` (``tools/study.py``): the DigitsVOC detection
  studies, specs in ``experiments/studies/``;
  :mod:`experiments.retrieval_study` (``tools/retrieval_study.py``): the
  retrieval-loss studies; :mod:`experiments.reproduce_voc`
  (``tools/reproduce_voc.py``): the RaMBO paper's VOC table.

* :mod:`experiments.results`: the one reader of a report's CSV and the
  results rows the docs quote; :mod:`experiments.metafile_results`,
  :mod:`experiments.claims`, :mod:`experiments.verdict` build on it.
* :mod:`experiments.analysis`: the project's own measurement scripts.

Not part of the ``mmdet_rankloss`` library and in no install (``setup.py``
lists the library alone): the tools import it from their checkout, which
they put first on ``sys.path``; tests and ``python -m experiments...`` find
it in the current directory, the checkout's root.
"""
