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

Not part of the ``mmdet_rankloss`` library and not in its wheel: the
package is importable from a checkout installed in editable mode
(``pip install -e .``, as ``tools/install.sh`` does), where the tools run.
"""
