"""The lab beside the ``mmdet_rankloss`` library: the synthetic benchmarks,
the studies that train many runs and report on them, and the code of the
repository's tools.

* :mod:`rankloss_lab.datasets`: the toy VOC, DigitsVOC, glyphs, digit scenes
  and digit retrieval sets (configs import it through ``custom_imports``).
* :mod:`rankloss_lab.batch`, :mod:`rankloss_lab.mmdet_tools`,
  :mod:`rankloss_lab.held_out`: what ``tools/`` runs (the batch table,
  MMDetection's own scripts with the package set up, held-out checks).

* :mod:`rankloss_lab.runner`: a plan of runs, resumable run folders, the job
  pool, progress lines with an ETA, markdown tables.
* :mod:`rankloss_lab.stats`: mean and standard deviation over seeds, paired
  differences with t intervals, the paired t-test, Bonferroni and Holm.
* :mod:`rankloss_lab.run_logs`: MMEngine's JSON logs of a run, the machine,
  a logged subprocess, figures.
* :mod:`rankloss_lab.study` (``tools/study.py``): the DigitsVOC detection
  studies, specs in ``lab/rankloss_lab/studies/``;
  :mod:`rankloss_lab.retrieval_study` (``tools/retrieval_study.py``): the
  retrieval-loss studies; :mod:`rankloss_lab.reproduce_voc`
  (``tools/reproduce_voc.py``): the RaMBO paper's VOC table.

* :mod:`rankloss_lab.results`: the one reader of a report's CSV and the
  results rows the docs quote; :mod:`rankloss_lab.metafile_results`,
  :mod:`rankloss_lab.claims`, :mod:`rankloss_lab.verdict` build on it.
* :mod:`rankloss_lab.analysis`: the budget rule of a confirmation.

A package of its own (``lab/setup.py``), installed editable by
``tools/install.sh``; ``pip install .`` installs the library alone.
"""
