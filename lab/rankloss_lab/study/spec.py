"""The study spec (``lab/rankloss_lab/studies/*.py``): read, checked and
completed with its defaults; its hypotheses and exploratory comparisons."""
import os.path as osp
from typing import List, Optional, Sequence

from rankloss_lab.stats import ALTERNATIVES
from .common import (METRIC, ROOT, SPEC_DIR, _is_number, hypothesis_text,
                     is_coco, study_metrics, threshold_metric)


def find_spec(path: str) -> str:
    """``path``, or where a spec named by its old place (``tools/studies/``)
    is now."""
    if osp.isfile(path):
        return path
    head, name = osp.split(osp.normpath(path))
    if osp.basename(head) == 'studies' and osp.basename(
            osp.dirname(head)) == 'tools':
        moved = osp.join(ROOT, SPEC_DIR, name)
        if osp.isfile(moved):
            print(f'[study] {path} moved to {osp.join(SPEC_DIR, name)}',
                  flush=True)
            return moved
    raise FileNotFoundError(f'study spec not found: {path}')


def load_spec(path: str) -> dict:
    """Reads and checks a study spec; returns a plain dict."""
    from mmengine.config import Config
    path = find_spec(path)
    cfg = Config.fromfile(path).to_dict()
    cfg.setdefault('name', osp.splitext(osp.basename(path))[0])
    select_only = cfg.setdefault('select_only', False)
    if not isinstance(select_only, bool):
        raise ValueError(f'{path}: select_only must be True or False, got '
                         f'{select_only!r}')
    if select_only:  # no test phase: no test seeds needed
        cfg.setdefault('seeds', [])
    for key in ('methods', 'seeds', 'baseline'):
        if key not in cfg:
            raise ValueError(f'{path}: the study spec needs {key!r}')
    methods = cfg['methods']
    if not isinstance(methods, dict) or not methods:
        raise ValueError(f'{path}: methods must be a non-empty dict')
    if cfg['baseline'] not in methods:
        raise ValueError(f"{path}: baseline {cfg['baseline']!r} is not one "
                         f'of the methods {sorted(methods)}')
    seeds = cfg['seeds']
    if not isinstance(seeds, (list, tuple)) or (
            not seeds and not select_only) or not _distinct_ints(seeds):
        raise ValueError(f'{path}: seeds must be distinct ints, got {seeds}')
    _selection_seed_keys(cfg, path)
    _fair_selection_keys(cfg, path)
    _metric_keys(cfg, path)
    _score_threshold_keys(cfg, path)
    cfg.setdefault('options', [])
    _test_phase_options(cfg, path)
    cfg.setdefault('test_split', 'test')
    cfg.setdefault('alpha', 0.05)
    cfg.setdefault('preregistered', False)
    if not isinstance(cfg['test_split'], str) or not cfg['test_split']:
        raise ValueError(f'{path}: test_split must name a VOC split list, '
                         f"got {cfg['test_split']!r}")
    if is_coco(cfg) and cfg['test_split'] != 'test':
        raise ValueError(f'{path}: a CocoMetric study tests the annotation '
                         "file of its configs' test_dataloader: test_split "
                         f"must be 'test', got {cfg['test_split']!r}")
    if not 0 < cfg['alpha'] < 1:
        raise ValueError(f"{path}: alpha must lie in (0, 1), got "
                         f"{cfg['alpha']!r}")
    for name, m in methods.items():
        where = f'{path}: method {name!r}'
        if 'config' not in m or not osp.isfile(osp.join(ROOT, m['config'])):
            raise ValueError(f"{where}: config {m.get('config')!r} not found")
        kinds = [k for k in ('lrs', 'lr', 'lr_from') if k in m]
        if len(kinds) != 1:
            raise ValueError(f'{where}: give exactly one of lrs (a grid '
                             'searched on val), lr (a learning rate selected '
                             'before, see selected_on) and lr_from (another '
                             "method's selected lr)")
        if 'lrs' in m and (not m['lrs'] or not all(
                _is_number(lr) and lr > 0 for lr in m['lrs'])):
            raise ValueError(f"{where}: lrs must be positive numbers, got "
                             f"{m['lrs']}")
        if 'lr' in m and not (_is_number(m['lr']) and m['lr'] > 0):
            raise ValueError(f"{where}: lr must be a positive number, got "
                             f"{m['lr']!r}")
        if 'lr_from' in m and (m['lr_from'] not in methods or not (
                {'lrs', 'lr'} & set(methods[m['lr_from']]))):
            raise ValueError(f"{where}: lr_from {m['lr_from']!r} must name a "
                             'method with its own lrs or lr')
        on = m.get('selected_on')
        if on is not None and not (isinstance(on, dict) and all(
                isinstance(s, int) for s in on.get('seeds', [None]))):
            raise ValueError(f'{where}: selected_on must be a dict with the '
                             f'seeds (ints) the lr was selected with, got '
                             f'{on!r}')
        m.setdefault('options', [])
        m.setdefault('label', name)
    cfg.setdefault('prepare', [])
    for item in cfg['prepare']:
        if not (isinstance(item, dict) and isinstance(item.get('path'), str)
                and isinstance(item.get('make'), (list, tuple))
                and item['make']):
            raise ValueError(f'{path}: each prepare entry must be '
                             "dict(path='<file>', make=[<script>, <args>...])"
                             f', got {item!r}')
    cfg['hypotheses'] = _hypotheses(cfg, path)
    cfg['exploratory_comparisons'] = _exploratory_comparisons(cfg, path)
    return cfg


def _test_phase_options(cfg: dict, path: str) -> None:
    """``test_phase_options``: ``--cfg-options`` of the test phase's
    trainings alone, after ``options`` (e.g. ``train_cfg.val_interval=16``);
    only where no selection seed is a test seed."""
    extra = cfg.setdefault('test_phase_options', [])
    if not isinstance(extra, (list, tuple)) or not all(
            isinstance(o, str) and '=' in o for o in extra):
        raise ValueError(f'{path}: test_phase_options must be a list of '
                         f"'key=value' strings, got {extra!r}")
    if extra and set(cfg['select_seeds']) & set(cfg['seeds']):
        raise ValueError(
            f'{path}: test_phase_options needs selection seeds apart from '
            f"the test seeds, got select_seeds {cfg['select_seeds']} and "
            f"seeds {cfg['seeds']}: a selection run reused as a test run "
            'trained without them')
    cfg['test_phase_options'] = list(extra)


def _distinct_ints(values) -> bool:
    return len(set(values)) == len(values) and all(
        isinstance(v, int) and not isinstance(v, bool) for v in values)


def _selection_seed_keys(cfg: dict, path: str) -> None:
    """``select_seeds`` (two or more, none a test seed) or ``select_seed``
    (one; default: the smallest seed >= 0 that is no test seed); completes
    both (``select_seed`` is the first of ``select_seeds``)."""
    seeds = cfg['seeds']
    many = cfg.get('select_seeds')
    if many is None:
        cfg.setdefault('select_seed', min(set(range(len(seeds) + 1)) -
                                          set(seeds)))
        cfg['select_seeds'] = [cfg['select_seed']]
        return
    if not isinstance(many, (list, tuple)) or len(many) < 2 or \
            not _distinct_ints(many) or set(many) & set(seeds):
        raise ValueError(f'{path}: select_seeds must be two or more distinct '
                         f'ints, none of them a test seed {list(seeds)}, got '
                         f'{many!r}')
    if cfg.get('select_seed') not in (None, many[0]):
        raise ValueError(f'{path}: select_seed {cfg["select_seed"]!r} and '
                         f'select_seeds {list(many)} disagree: give '
                         'select_seeds alone (select_seed is its first seed)')
    cfg['select_seeds'] = list(many)
    cfg['select_seed'] = many[0]


def _metric_keys(cfg: dict, path: str) -> None:
    """``metric`` (default ``'pascal_voc/AP50'``): the logged key the lrs
    are selected on and the first test metric; ``extra_metrics`` (default
    none): more keys of the same evaluator that the test runs record."""
    cfg.setdefault('metric', METRIC)
    extra = cfg.setdefault('extra_metrics', [])
    if not isinstance(extra, (list, tuple)):
        raise ValueError(f'{path}: extra_metrics must be a list of logged '
                         f'metric keys, got {extra!r}')
    cfg['extra_metrics'] = list(extra)
    keys = study_metrics(cfg)
    for key in keys:
        if not (isinstance(key, str) and
                key.startswith(('pascal_voc/', 'coco/'))):
            raise ValueError(f"{path}: metric and extra_metrics must be keys "
                             "that VOCMetric ('pascal_voc/...') or CocoMetric "
                             f"('coco/...') logs, got {key!r}")
    if len(set(keys)) != len(keys):
        raise ValueError(f'{path}: metric and extra_metrics repeat a key: '
                         f'{keys}')
    if len({k.split('/')[0] for k in keys}) > 1:
        raise ValueError(f'{path}: metric and extra_metrics must come from '
                         f'one evaluator (one prefix), got {keys}')


def _score_threshold_keys(cfg: dict, path: str) -> None:
    """``score_thresholds`` (default none; VOCMetric only): test thresholds
    to compare at, e.g. ``[0.05, 0.0]``; each adds ``<metric>@<threshold>``
    to ``extra_metrics``, VOC AP50 re-scored from each run's stored test
    detections (runs are tested at or below the lowest)."""
    thrs = cfg.setdefault('score_thresholds', [])
    if not isinstance(thrs, (list, tuple)) or not all(
            _is_number(t) and 0 <= t < 1 for t in thrs) or \
            len(set(thrs)) != len(thrs):
        raise ValueError(f'{path}: score_thresholds must be distinct '
                         f'numbers in [0, 1), got {thrs!r}')
    if thrs and cfg['metric'] != METRIC:
        raise ValueError(f'{path}: score_thresholds re-score VOCMetric\'s '
                         f"AP50 ({METRIC!r}) alone; the metric is "
                         f"{cfg['metric']!r}")
    keys = [threshold_metric(cfg['metric'], t) for t in thrs]
    if set(keys) & set(cfg['extra_metrics']):
        raise ValueError(f'{path}: extra_metrics names {keys}: '
                         'score_thresholds adds them itself')
    cfg['score_thresholds'] = [float(t) for t in thrs]
    cfg['extra_metrics'] += keys


def _fair_selection_keys(cfg: dict, path: str) -> None:
    """``fair_selection`` (True: ``--freeze`` checks the rules of
    :mod:`rankloss_lab.study.fairness` and collapsed grids are re-selected;
    False: waived; absent: not frozen until it says) and ``reselect_seed``
    (default: the next seed after the selection seed that is no test seed;
    None with ``select_seeds``)."""
    fair = cfg.setdefault('fair_selection', None)
    if fair is not None and not isinstance(fair, bool):
        raise ValueError(f'{path}: fair_selection must be True or False, got '
                         f'{fair!r}')
    if len(cfg['select_seeds']) > 1:
        if cfg.get('reselect_seed') is not None:
            raise ValueError(
                f"{path}: reselect_seed {cfg['reselect_seed']!r} re-selects "
                'a collapsed grid of a one-seed selection; with select_seeds '
                'every lr is selected on the mean over them: drop it')
        cfg['reselect_seed'] = None
        return
    seeds, select = cfg['seeds'], cfg['select_seed']
    again = select + 1
    while again in seeds:
        again += 1
    again = cfg.setdefault('reselect_seed', again)
    if not (isinstance(again, int) and not isinstance(again, bool)) or \
            again in seeds or again == select:
        raise ValueError(f'{path}: reselect_seed must be an int that is '
                         f'neither the selection seed ({select}) nor a test '
                         f'seed {seeds}, got {again!r}')


def _hypotheses(cfg: dict, path: str) -> List[dict]:
    """The spec's ``hypotheses``, checked and completed: each
    ``dict(method, baseline=<the spec's>, alternative='two-sided' |
    'greater' (method - baseline > 0) | 'less', metric=<the spec's>)``, the
    metric as frozen text (``'test AP50'``); by default every method
    against the baseline."""
    methods = cfg['methods']
    declared = cfg.get('hypotheses')
    if declared is None:
        declared = [dict(method=m) for m in methods if m != cfg['baseline']]
    out, seen = [], set()
    for i, h in enumerate(declared):
        if not isinstance(h, dict) or 'method' not in h:
            raise ValueError(f'{path}: hypothesis {i + 1} must be a dict '
                             f'with a method, got {h!r}')
        h = dict(h)
        h.setdefault('baseline', cfg['baseline'])
        h.setdefault('alternative', 'two-sided')
        key = h.setdefault('metric', cfg['metric'])
        if key not in study_metrics(cfg):
            raise ValueError(f'{path}: hypothesis {i + 1}: metric must be '
                             'the spec\'s metric or one of its '
                             f'extra_metrics {study_metrics(cfg)}, got '
                             f'{key!r}')
        _check_pair(h, methods, seen, f'{path}: hypothesis {i + 1}')
        if h['alternative'] not in ALTERNATIVES:
            raise ValueError(f'{path}: hypothesis {i + 1}: alternative must '
                             f'be one of {ALTERNATIVES}, got '
                             f"{h['alternative']!r}")
        h.setdefault('id', f'H{i + 1}')
        h['metric'] = hypothesis_text(key)
        out.append(h)
    return out


def _check_pair(pair: dict, methods: dict, seen: set, where: str) -> None:
    """One comparison of a spec: both sides name distinct methods, and the
    pair (with its ``metric``) is not in ``seen``, to which it is added."""
    for key in ('method', 'baseline'):
        if pair[key] not in methods:
            raise ValueError(f'{where}: {key} {pair[key]!r} is not one of '
                             f'the methods {sorted(methods)}')
    if pair['method'] == pair['baseline']:
        raise ValueError(f"{where} compares {pair['method']!r} with itself")
    key = (pair['method'], pair['baseline'], pair.get('metric'))
    if key in seen:
        raise ValueError(f'{where} repeats a hypothesis or an earlier '
                         f'comparison: {key[0]} against {key[1]}' +
                         (f' on {key[2]}' if key[2] else ''))
    seen.add(key)


def _exploratory_comparisons(cfg: dict, path: str) -> List[dict]:
    """The spec's ``exploratory_comparisons``, checked: pairs
    ``dict(method=..., baseline=...)`` beyond every method against the
    baseline, in the exploratory family; a hypothesis' pair is refused."""
    methods = cfg['methods']
    declared = cfg.get('exploratory_comparisons', [])
    if not isinstance(declared, (list, tuple)):
        raise ValueError(f'{path}: exploratory_comparisons must be a list of '
                         f'dict(method, baseline), got {declared!r}')
    taken = {(h['method'], h['baseline'], None) for h in cfg['hypotheses']}
    out = []
    for i, c in enumerate(declared):
        if not (isinstance(c, dict) and set(c) == {'method', 'baseline'}):
            raise ValueError(f'{path}: exploratory comparison {i + 1} must be '
                             f'dict(method=..., baseline=...), got {c!r}')
        _check_pair(c, methods, taken,
                    f'{path}: exploratory comparison {i + 1}')
        out.append(dict(c))
    return out


def requested_methods(spec: dict, methods: Optional[Sequence[str]]
                      ) -> List[str]:
    """``--methods`` (all of the spec's when None), checked."""
    methods = list(methods or spec['methods'])
    unknown = sorted(set(methods) - set(spec['methods']))
    if unknown:
        raise SystemExit(f'unknown methods {unknown}; the spec has '
                         f'{sorted(spec["methods"])}')
    return methods
