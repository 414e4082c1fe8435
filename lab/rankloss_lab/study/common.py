"""What every phase of a study shares: the metrics, the pre-registration's
error, where a run's result is kept, the finished runs, small helpers."""
import glob
import hashlib
import json
import os.path as osp
from datetime import datetime, timezone
from typing import Dict, List, Optional, Sequence, Tuple

from rankloss_lab.paths import ROOT
from rankloss_lab.runner import lr_tag

SPEC_DIR = osp.join('lab', 'rankloss_lab', 'studies')
METRIC = 'pascal_voc/AP50'
#: The names in the reports of the logged keys a study may select on or
#: report (spec ``metric`` and ``extra_metrics``).
METRIC_LABELS = {
    METRIC: 'AP50',
    'coco/bbox_mAP_50': 'box AP50',
    'coco/bbox_mAP': 'box AP',
    'coco/segm_mAP_50': 'mask AP50',
    'coco/segm_mAP': 'mask AP',
}
THRESHOLDS = (0.05, 0.3, 0.5)
#: The first line of the tool's help (``tools/study.py --help``).
DESCRIPTION = ("Runs a study: configs x learning rates x seeds through "
               "MMDetection's runner.")


class PreregistrationError(RuntimeError):
    """A test run or a report that the study's pre-registration forbids."""


def hypothesis_methods(spec: dict) -> List[str]:
    """The methods the hypotheses name (tested or baseline), spec order."""
    names = {h[k] for h in spec['hypotheses'] for k in ('method', 'baseline')}
    return [m for m in spec['methods'] if m in names]


def declared_methods(spec: dict) -> List[str]:
    """The methods a pre-registration freezes: those its hypotheses name,
    or every method of an exploratory study (no hypotheses)."""
    return (hypothesis_methods(spec) if spec['hypotheses']
            else list(spec['methods']))


def study_metrics(spec: dict) -> List[str]:
    """``metric``, then ``extra_metrics``: every metric test runs record."""
    return [spec['metric']] + list(spec['extra_metrics'])


def threshold_metric(key: str, score_thr: float) -> str:
    """``key`` re-scored at ``score_thr``: ``'pascal_voc/AP50@0.05'``."""
    return f'{key}@{score_thr:g}'


def metric_label(key: str) -> str:
    """A metric's name in the reports: ``'mask AP50'`` for
    ``'coco/segm_mAP_50'``, ``'AP50 at score_thr 0.05'`` for
    ``'pascal_voc/AP50@0.05'``; an unlisted key is its own name."""
    base, at, thr = key.partition('@')
    if at:
        return f'{metric_label(base)} at score_thr {thr}'
    return METRIC_LABELS.get(key, key)


def is_coco(spec: dict) -> bool:
    """Whether the study is scored by CocoMetric (a ``coco/`` metric)."""
    return spec['metric'].startswith('coco/')


def hypothesis_text(key: str) -> str:
    """A hypothesis' frozen ``metric``: ``'test AP50'`` for VOC's AP50 (as
    frozen before ``metric`` existed), else ``'test <key>'``."""
    return 'test AP50' if key == METRIC else f'test {key}'


def hypothesis_metric(hypothesis: dict) -> str:
    """The logged key of a frozen ``metric`` (:func:`hypothesis_text`)."""
    text = hypothesis.get('metric', 'test AP50')
    return METRIC if text == 'test AP50' else text[len('test '):]


def record_path(records: str, spec: dict, method: str, lr: float,
                seed: int) -> str:
    """``<records>/<study>/<method>_lr<lr>_seed<seed>.json``: the copy of a
    run's result kept with the report (a study resumes without work_dirs)."""
    return osp.join(records, spec['name'],
                    f'{method}_{lr_tag(lr)}_seed{seed}.json')


def collect_results(spec: dict, work_dir: str,
                    records: Optional[str] = None) -> Dict[Tuple, dict]:
    """Finished runs of the study, from ``records`` and the work directories
    (of two results of one run, the one with a test result)."""
    out = {}
    patterns = [osp.join(work_dir, spec['name'], '*', '*', 'result.json')]
    if records:
        patterns.insert(0, osp.join(records, spec['name'], '*.json'))
    for pattern in patterns:
        for path in sorted(glob.glob(pattern)):
            with open(path, encoding='utf-8') as f:
                res = json.load(f)
            if res.get('method') not in spec['methods']:
                continue
            key = (res['method'], float(res['lr']), int(res['seed']))
            if 'test_ap50' in res or 'test_ap50' not in out.get(key, {}):
                out[key] = res
    return out


def _is_number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _plain(value):
    """A JSON round trip: tuples become lists, as in the frozen file."""
    return json.loads(json.dumps(value, sort_keys=True))


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec='seconds')


def _file_sha256(path: str) -> str:
    with open(path, 'rb') as f:
        return hashlib.sha256(f.read()).hexdigest()


def val_by_epoch(result: dict) -> Dict[int, float]:
    """``{epoch: val value}`` of a run record: ``val_curve`` at its
    ``val_epochs`` (records before them validated every epoch: 1..n)."""
    curve = result.get('val_curve') or []
    epochs = result.get('val_epochs') or range(1, len(curve) + 1)
    return dict(zip(epochs, curve))


def _fmt(value, digits: int) -> str:
    return '' if value is None else f'{value:.{digits}f}'


def _pct(value: float) -> str:
    return '-' if value != value else f'{100 * value:.1f}'


def run_config(config: str, options: Sequence[str]):
    """``config`` with a run's ``--cfg-options``, merged as by ``train.py``."""
    import argparse

    from mmengine.config import DictAction

    from rankloss_lab.held_out import load_config
    parsed = None
    if options:
        parser = argparse.ArgumentParser()
        parser.add_argument('--o', nargs='+', action=DictAction)
        parsed = parser.parse_args(['--o'] + list(options)).o
    return load_config(osp.join(ROOT, config), parsed)
