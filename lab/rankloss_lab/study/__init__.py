"""Runs a study: configs x learning rates x seeds through MMDetection's runner.

    python tools/study.py SPEC [--phase select|test|all] [--jobs N]
        [--work-dir work_dirs/studies] [--out-dir docs/evidence]
        [--methods NAME ...] [--dry-run] [--report-only]
    python tools/study.py SPEC --freeze      # pre-register, before the test

SPEC is a Python file (``lab/rankloss_lab/studies/*.py``) naming the methods (a
config, options, a learning-rate grid), the seeds, the baseline and the
data. The protocol is the one a reviewer asks for:

1. ``select``: every method is trained once per learning rate of its grid
   and selection seed (``select_seeds``, two or more seeds, none a test
   seed; or one, ``select_seed``) and scored on **val** (AP50 after the
   last epoch); the learning rate with the best mean over the selection
   seeds is selected (ties: the smaller). Methods with ``lr_from`` take
   another method's selected learning rate (ablations). A spec with
   ``select_only = True`` has no test phase (and needs no test seeds).
2. ``test``: every method is trained with its selected learning rate for
   each seed (all methods of one seed before the next seed, so that a test
   phase stopped half-way leaves paired runs) and evaluated on **test**
   with ``tools/test.py``, once; the
   val and test detections are also scored for precision / recall at the
   usual thresholds and calibration (D-ECE), before and after a monotone
   Platt fit on val (``mmdet_rankloss.evaluation.calibration``).
   ``test_split`` (default ``test``) names the VOC split list evaluated;
   the spec's ``data.make_test`` command writes it when it is missing
   (e.g. ``tools/dataset_converters/make_digits_voc.py {root}
   --fresh-test confirm``).
   ``prepare`` (a list of ``dict(path=..., make=[script, args...])``) names
   other files the runs need (e.g. a pretrained backbone); a missing one is
   written by its command before the first run.
   ``test_phase_options`` (default none, frozen with the settings) are
   ``--cfg-options`` of the test trainings alone, e.g.
   ``train_cfg.val_interval=16``: a test run's val loops decide nothing
   (its report then draws the val curves and budget of its selection runs
   at the selected lr, and says so); a spec whose selection seeds are test
   seeds cannot have them.

Metrics (spec keys ``metric`` and ``extra_metrics``): the learning rates
are selected on the val value of ``metric`` after the last epoch, a key the
configs' evaluator logs (default VOCMetric's ``'pascal_voc/AP50'``);
``extra_metrics`` (default none) are more keys of the same evaluator that
every test run records and the report tabulates (mean +/- std, paired
differences) and compares, e.g. a Mask R-CNN study with ``metric =
'coco/bbox_mAP_50'`` (selected on val box AP50) and ``extra_metrics =
['coco/segm_mAP_50']`` (test mask AP50 beside box AP50). A hypothesis
names its metric (``metric``, default the spec's). A CocoMetric study
(``coco/`` keys) tests the configs' test annotation file and takes the val
values of its runs from the training's last val loop (the configs'
val_dataloader and val_evaluator: no second val evaluation); it fits no
calibration (that needs val detections), and its report says so; its oLRP
is read from the test dataset as MMDetection builds it.

Seeds: without ``select_seeds``, the selection seed (``select_seed``)
defaults to the smallest seed >= 0 that is not a test seed, so selection
and test seeds are disjoint. The
DigitsVOC studies set ``select_seed = 0``, also their first test seed (the
test row of seed 0 is the run that selected the lr); their reports say so.
A method may also carry a learning rate selected before (``lr``, with
``selected_on=dict(study=..., seeds=[...])``): it has no grid here.

Pre-registration (``--freeze``): writes ``<out-dir>/<study>_preregistration
.json`` and ``.md`` before any test run: the ``hypotheses`` (spec key: a list
of ``dict(method, baseline, alternative='greater'|'less'|'two-sided')``; by
default every method against the baseline, two-sided), the test seeds, the
selected settings of the declared methods (config, options, lr), the date
and a SHA-256 of those settings. It refuses while a declared method has no
selected lr or already has a test result. Once a freeze exists (and always
for a spec with ``preregistered = True``), the test phase refuses to run
when the settings differ from the frozen ones (naming each field and both
values), tests only the declared methods (others with ``--exploratory``),
and stamps each test run with its start time and the frozen hash; the
report refuses to report when the settings differ or a declared test run
did not start after the freeze, and labels undeclared rows exploratory.

Every run is ``tools/train.py`` (then ``tools/test.py``) in its own process
and work directory, ``<work-dir>/<study>/<method>/lr<lr>_seed<seed>/``.
Runs are resumable: a finished run (its ``result.json``) is skipped, an
interrupted one continues from its last checkpoint (``--resume``). Each
result is also kept in ``<records-dir>/<study>/`` (default
``<out-dir>/runs``, committed with the report): a study resumes, and its
report is written, from those records when the work directories are gone,
e.g. on another machine. Each run
prints a progress line with an ETA. ``--jobs N`` runs N at once (on a
2-core CPU that slows each; use it on a GPU or a bigger machine). A GPU is
used when present (MMEngine's default).

The report (``--out-dir``): ``<study>.csv`` (one row per run: final and
per-epoch val AP50, test AP50, times, calibration), ``<study>.md`` (the
selection grid; mean +/- std over seeds; each method's paired difference to
the baseline on the same seeds with a 95 % t confidence interval and,
beside it, the Bonferroni interval at level 1 - alpha / m over the study's
m comparisons; paired t-test and Holm-adjusted p-values; threshold and
calibration table), ``<study>_comparisons.csv`` (one row per comparison,
raw and corrected) and ``<study>_curves.png`` (val AP50 against epoch, mean
and band over seeds). Pre-registered hypotheses form one family, the other
comparisons an exploratory one: every other method against the baseline,
plus the pairs the spec lists in ``exploratory_comparisons`` (e.g. against
a baseline row added after a test result).

Fair baselines (spec key ``fair_selection``): with ``fair_selection =
True`` ``--freeze`` refuses unless every declared method was selected in
this study (its own grid, the study's selection seeds: no ``lr`` +
``selected_on`` from another study, no ``lr_from``) on the mean of two or
more seeds (``select_seeds``; checked when a pre-registration is written:
those written before this rule are not frozen again), every declared grid
has the same density (one ratio between neighbouring lrs), no declared
method's best (mean) sits at an edge of its grid (unless the run at the
next grid point beyond that edge diverged), and, in a one-seed study, a
method that collapsed on the selection seed (best val AP50 below
``rankloss_lab.stats.COLLAPSE_BELOW``) was re-selected: the selection phase
runs its grid again with ``reselect_seed`` (default: the next seed after
``select_seed`` that is no test seed) and selects the lr with the best mean
over both seeds. ``fair_selection = False`` waives the rules (the
pre-registration says so); a spec that says neither cannot be frozen
(the studies frozen before the rules keep their reports). A training that fails on a NaN or inf loss or score is recorded
as ``diverged`` (no val AP50: never selected). A report marks a method
whose test values are bimodal (``rankloss_lab.stats.bimodal``: some seeds
trained, some collapsed) with "k of n seeds trained" beside its mean and
flags its comparisons.

The package, one module per phase (``python -m rankloss_lab.study`` is
``tools/study.py``):

* :mod:`~rankloss_lab.study.spec`: reading and checking a spec;
* :mod:`~rankloss_lab.study.selection`: the selection plan, the selected
  learning rates and the seeds that chose them;
* :mod:`~rankloss_lab.study.freeze`: the pre-registration and its checks;
  :mod:`~rankloss_lab.study.fairness`: the fair-baseline rules it enforces;
* :mod:`~rankloss_lab.study.test`: the test plan and the methods tested;
* :mod:`~rankloss_lab.study.runs`: one run and a plan of runs (both phases),
  the data they need;
* :mod:`~rankloss_lab.study.report`, :mod:`~rankloss_lab.study.comparisons`,
  :mod:`~rankloss_lab.study.curves`: the report;
* :mod:`~rankloss_lab.study.cli`: the command line;
  :mod:`~rankloss_lab.study.common`: what they share.

Every public name is also an attribute of the package
(``from rankloss_lab.study import load_spec``). Setting one on the package
(a test's ``monkeypatch.setattr(study, 'run_logged', fake)``) sets it in the
modules that use it too, as when the tool was one module.
"""
import sys
import time  # noqa: F401  (``study.time``: the clock of the runs)
import types

from rankloss_lab import run_logs, runner  # noqa: F401
from rankloss_lab.run_logs import machine_name  # noqa: F401
from rankloss_lab.runner import (last_checkpoint, lr_tag,  # noqa: F401
                                read_json, run_dir, write_json)
from rankloss_lab.stats import (ALTERNATIVES, corrected_family,  # noqa: F401
                               holm, interval_text, mean_std,
                               paired_difference, paired_t_pvalue,
                               t_interval, t_quantile)

from . import (cli, common, comparisons, curves, fairness,
               freeze as _freeze, report, runs, selection, spec, test)
from .cli import main, parse_args, select_phase
from .common import (METRIC, METRIC_LABELS, ROOT, SPEC_DIR, THRESHOLDS,
                     PreregistrationError, collect_results, declared_methods,
                     hypothesis_metric, is_coco, metric_label, record_path,
                     study_metrics, val_by_epoch)
from .comparisons import (bimodal_sides, comparisons_markdown,
                          study_comparisons, write_comparisons_csv)
from .curves import curve_runs, plot_curves
from .fairness import (check_fair_selection, fairness_problems, grid_step,
                       one_seed_problems)
from .freeze import (check_preregistration, current_paths,
                     fairness_paragraph, freeze, preregistration_markdown, preregistration_paths,
                     read_preregistration, settings_differences,
                     settings_hash, study_settings)
from .report import (check_reportable, preregistration_sentence,
                     seeds_sentence, selection_lines, test_values,
                     write_report)
from .runs import (ATTEMPTS, earlier_attempts_seconds, ensure_data,
                   execute_run, last_train_record, load_ground_truth,
                   non_finite_loss, non_finite_reason, olrp_on_dataset,
                   olrp_on_test, pretrained_checkpoint, read_scalars, run_logged, run_plan,
                   score_calibration, start_attempt)
from .selection import (best_lr, grid_scores, grid_selection, mean_scores,
                        reselect_plan, run_score, seed_overlap, select_plan,
                        selected_lrs, selection_note, selection_phrase,
                        selection_seeds)
from .spec import find_spec, load_spec, requested_methods
from .test import test_methods, test_plan

__all__ = [
    'ROOT', 'SPEC_DIR', 'METRIC', 'METRIC_LABELS', 'THRESHOLDS',
    'PreregistrationError', 'study_metrics', 'metric_label', 'is_coco',
    'hypothesis_metric', 'test_values',
    'find_spec', 'load_spec', 'requested_methods', 'select_plan',
    'selected_lrs', 'selection_seeds', 'seed_overlap', 'selection_note',
    'test_plan', 'test_methods', 'read_scalars', 'last_train_record',
    'run_logged', 'load_ground_truth', 'score_calibration', 'olrp_on_test',
    'olrp_on_dataset',
    'ATTEMPTS',
    'start_attempt', 'earlier_attempts_seconds', 'execute_run',
    'pretrained_checkpoint', 'record_path', 'collect_results', 'ensure_data',
    'run_plan', 'declared_methods', 'preregistration_paths', 'study_settings',
    'settings_hash', 'settings_differences', 'current_paths',
    'read_preregistration',
    'check_preregistration', 'freeze', 'preregistration_markdown',
    'write_report', 'check_reportable', 'study_comparisons',
    'comparisons_markdown', 'write_comparisons_csv', 'seeds_sentence',
    'preregistration_sentence', 'plot_curves', 'curve_runs', 'val_by_epoch',
    'parse_args', 'main',
    'reselect_plan', 'run_score', 'grid_scores', 'grid_selection',
    'non_finite_reason', 'non_finite_loss', 'grid_step', 'fairness_problems',
    'check_fair_selection', 'bimodal_sides', 'selection_lines',
    'select_phase', 'fairness_paragraph', 'best_lr', 'mean_scores',
    'selection_phrase', 'one_seed_problems'
]

_MODULES = (common, spec, selection, runs, test, fairness, _freeze,
            comparisons, curves, report, cli)


class _Package(types.ModuleType):
    """The package's module type: a public name set on the package is set
    in each of its modules that holds that name (where the functions that
    call it look it up), so that patching ``study.run_logged`` reaches
    ``execute_run`` as it did when the tool was one module."""

    def __setattr__(self, name, value):
        super().__setattr__(name, value)
        if name in __all__:
            for module in _MODULES:
                if name in vars(module):
                    setattr(module, name, value)


sys.modules[__name__].__class__ = _Package
