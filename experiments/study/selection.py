"""The selection phase: the runs of each learning-rate grid on val, the
learning rate each method takes, and the seeds that chose it.

A grid method's lr is the best val AP50 of its grid on the selection seed
(ties: the smaller lr); a run that diverged scores below every other. In a
study with ``fair_selection = True``, a method whose best val AP50 is below
:data:`experiments.stats.COLLAPSE_BELOW` (it collapsed) is re-selected: its
grid runs again with ``reselect_seed`` and the lr with the best mean over
both seeds is selected; until then it has no selection.
"""
import math
from typing import Dict, List, Optional, Sequence, Tuple

from experiments.stats import trained


def select_plan(spec: dict, methods: Sequence[str]) -> List[Tuple]:
    """(method, lr, seed) of the selection phase."""
    plan = []
    for name in methods:
        for lr in spec['methods'][name].get('lrs', []):
            plan.append((name, float(lr), spec['select_seed']))
    return plan


def reselect_plan(spec: dict, methods: Sequence[str],
                  results: Dict[Tuple, dict]) -> List[Tuple]:
    """(method, lr, reselect_seed) of the grids of the ``methods`` that
    collapsed on the selection seed (``fair_selection`` studies only)."""
    plan = []
    for name in methods:
        if 'lrs' in spec['methods'][name] and grid_selection(
                spec, results, name)['collapsed']:
            plan += [(name, float(lr), spec['reselect_seed'])
                     for lr in spec['methods'][name]['lrs']]
    return plan


def run_score(res: Optional[dict]) -> Optional[float]:
    """The val AP50 a selection run scores: None where it has not finished,
    -inf where it diverged (``diverged`` in its result: never selected)."""
    if res is None:
        return None
    if res.get('diverged'):
        return -math.inf
    return res.get('val_ap50')


def grid_scores(spec: dict, results: Dict[Tuple, dict], name: str,
                seed: int) -> Optional[Dict[float, float]]:
    """``{lr: val AP50}`` of a method's grid on ``seed``; None until every
    lr of the grid has finished."""
    scores = {}
    for lr in spec['methods'][name]['lrs']:
        score = run_score(results.get((name, float(lr), seed)))
        if score is None:
            return None
        scores[float(lr)] = score
    return scores


def _best(scores: Dict[float, float]) -> float:
    return min(scores, key=lambda lr: (-scores[lr], lr))


def grid_selection(spec: dict, results: Dict[Tuple, dict],
                   name: str) -> dict:
    """How a grid method's lr is selected from ``results``.

    Returns ``dict(lr, seeds, scores, collapsed, pending)``: ``lr`` the
    selected lr (None: not yet), ``seeds`` the selection seeds, ``scores``
    ``{lr: val AP50}`` (the mean over ``seeds`` when re-selected; None
    while the first grid is incomplete), ``collapsed`` whether the best on
    the selection seed collapsed (``fair_selection`` studies only: it is
    then re-selected), ``pending`` ``'select'`` (the grid is not finished),
    ``'reselect'`` (collapsed, the second grid is not finished) or None;
    ``first``: the scores on the selection seed.
    """
    seed = spec['select_seed']
    first = grid_scores(spec, results, name, seed)
    out = dict(lr=None, seeds=[seed], scores=first, first=first,
               collapsed=False, pending=None)
    if first is None:
        out['pending'] = 'select'
        return out
    lr = _best(first)
    if spec.get('fair_selection') is not True or trained(first[lr]):
        out['lr'] = lr
        return out
    again = spec['reselect_seed']
    out.update(collapsed=True, collapsed_lr=lr, seeds=[seed, again])
    second = grid_scores(spec, results, name, again)
    if second is None:
        out['pending'] = 'reselect'
        return out
    out['scores'] = {k: (first[k] + second[k]) / 2 for k in first}
    out['lr'] = _best(out['scores'])
    return out


def selected_lrs(spec: dict, results: Dict[Tuple, dict]) -> Dict[str, float]:
    """Best val AP50 of each grid (ties: smaller lr); lr_from follows.

    A method whose grid is not complete (or, collapsed, whose re-selection
    grid is not) has no selection yet.
    """
    chosen = {}
    for name, m in spec['methods'].items():
        if 'lrs' not in m:
            continue
        lr = grid_selection(spec, results, name)['lr']
        if lr is not None:
            chosen[name] = lr
    for name, m in spec['methods'].items():
        if 'lr' in m:  # selected before this study (``selected_on``)
            chosen[name] = float(m['lr'])
    for name, m in spec['methods'].items():
        if 'lr_from' in m and m['lr_from'] in chosen:
            chosen[name] = chosen[m['lr_from']]
    return chosen


def selection_seeds(spec: dict, name: str,
                    results: Optional[Dict[Tuple, dict]] = None
                    ) -> Optional[List[int]]:
    """The seeds that selected a method's lr (None: not recorded); with
    ``results``, both seeds of a re-selected grid."""
    m = spec['methods'][name]
    if 'lr_from' in m:
        return selection_seeds(spec, m['lr_from'], results)
    if 'lrs' in m:
        if results is None:
            return [spec['select_seed']]
        return grid_selection(spec, results, name)['seeds']
    on = m.get('selected_on')
    return None if on is None else sorted(on.get('seeds', []))


def seed_overlap(spec: dict, methods: Sequence[str],
                 results: Optional[Dict[Tuple, dict]] = None
                 ) -> Dict[str, List[int]]:
    """``{method: test seeds that also selected its lr}``, overlaps only."""
    out = {}
    for name in methods:
        both = sorted(set(selection_seeds(spec, name, results) or [])
                      & set(spec['seeds']))
        if both:
            out[name] = both
    return out


def selection_note(spec: dict, name: str,
                   results: Optional[Dict[Tuple, dict]] = None) -> str:
    """How a method's learning rate was chosen, in words."""
    m = spec['methods'][name]
    if 'lr_from' in m:
        return (f"the lr of `{m['lr_from']}` "
                f"({selection_note(spec, m['lr_from'], results)})")
    if 'lrs' in m:
        grid = ', '.join(f'{lr:g}' for lr in m['lrs'])
        sel = (grid_selection(spec, results, name) if results is not None
               else dict(collapsed=False))
        if sel['collapsed']:
            seeds = sel['seeds']
            return (f'best mean val AP50 over seeds {seeds[0]} and '
                    f'{seeds[1]} of the grid {{{grid}}}, in this study (re-'
                    f'selected: on seed {seeds[0]} its best, '
                    f"{100 * sel['first'][sel['collapsed_lr']]:.1f} at lr "
                    f"{sel['collapsed_lr']:g}, had collapsed)")
        return (f'best val AP50 of the grid {{{grid}}}, seed '
                f"{spec['select_seed']}, in this study")
    on = m.get('selected_on')
    if not on:
        return 'declared in the spec (no selection record)'
    seeds = on.get('seeds', [])
    text = ('declared in the spec; selected on val in '
            f"`{on.get('study', '?')}` with seed{'s' if len(seeds) != 1 else ''} "
            f"{', '.join(map(str, seeds)) or '?'}")
    return text + (f"; {on['note']}" if on.get('note') else '')
