"""Runs a study: configs x learning rates x seeds through MMDetection's runner.

``python tools/study.py SPEC``, SPEC a ``lab/rankloss_lab/studies/*.py`` file
(:mod:`.spec`; the protocol: docs/evidence.md#protocol). Each run is
``tools/train.py`` (then ``tools/test.py``) in
``<work-dir>/<study>/<method>/lr<lr>_seed<seed>/``, its result also in
``<records-dir>/<study>/``. One module per phase; a public name set on the
package is set in the modules that use it (:class:`_Package`).
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
                                paired_difference, paired_t_pvalue, t_interval,
                                t_quantile)
from . import (cli, common, comparisons, curves, fairness, freeze as _freeze,
               report, runs, selection, spec, test)
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
from .freeze import (check_preregistration, current_paths, fairness_paragraph,
                     freeze, preregistration_markdown, preregistration_paths,
                     read_preregistration, settings_differences, settings_hash,
                     study_settings)
from .report import (check_reportable, preregistration_sentence,
                     seeds_sentence, selection_lines, test_values,
                     write_report)
from .runs import (ATTEMPTS, earlier_attempts_seconds, ensure_data,
                   execute_run, keep_test_detections, last_train_record,
                   load_ground_truth, non_finite_loss, non_finite_reason,
                   olrp_on_dataset, olrp_on_test, pretrained_checkpoint,
                   read_scalars, resume_checkpoint, run_logged, run_plan,
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
    'hypothesis_metric', 'test_values', 'find_spec', 'load_spec',
    'requested_methods', 'select_plan', 'selected_lrs', 'selection_seeds',
    'seed_overlap', 'selection_note', 'test_plan', 'test_methods',
    'read_scalars', 'last_train_record', 'run_logged', 'load_ground_truth',
    'score_calibration', 'olrp_on_test', 'olrp_on_dataset',
    'keep_test_detections', 'ATTEMPTS', 'start_attempt', 'resume_checkpoint',
    'earlier_attempts_seconds', 'execute_run', 'pretrained_checkpoint',
    'record_path', 'collect_results', 'ensure_data', 'run_plan',
    'declared_methods', 'preregistration_paths', 'study_settings',
    'settings_hash', 'settings_differences', 'current_paths',
    'read_preregistration', 'check_preregistration', 'freeze',
    'preregistration_markdown', 'write_report', 'check_reportable',
    'study_comparisons', 'comparisons_markdown', 'write_comparisons_csv',
    'seeds_sentence', 'preregistration_sentence', 'plot_curves', 'curve_runs',
    'val_by_epoch', 'parse_args', 'main', 'reselect_plan', 'run_score',
    'grid_scores', 'grid_selection', 'non_finite_reason', 'non_finite_loss',
    'grid_step', 'fairness_problems', 'check_fair_selection', 'bimodal_sides',
    'selection_lines', 'select_phase', 'fairness_paragraph', 'best_lr',
    'mean_scores', 'selection_phrase', 'one_seed_problems'
]

_MODULES = (common, spec, selection, runs, test, fairness, _freeze,
            comparisons, curves, report, cli)


class _Package(types.ModuleType):
    """The package's module type: a public name set on the package is set
    in each of its modules that holds it, so that patching
    ``study.run_logged`` reaches ``execute_run``."""

    def __setattr__(self, name, value):
        super().__setattr__(name, value)
        if name in __all__:
            for module in _MODULES:
                if name in vars(module):
                    setattr(module, name, value)


sys.modules[__name__].__class__ = _Package
