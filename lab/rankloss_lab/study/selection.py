"""The selection phase: each grid's val runs, each method's lr and its seeds.

A grid method's lr is the best mean val AP50 over ``select_seeds`` (ties:
the smaller lr), or its best on one ``select_seed``; a diverged run scores
below all. With one seed and ``fair_selection = True`` a collapsed best
reruns its grid with ``reselect_seed``. The stability rule
(:func:`stable_lr`, declared 2026-11-29): docs/evidence.md#protocol.
"""
import math
from typing import Dict, List, Optional, Sequence, Tuple

from rankloss_lab.stats import COLLAPSE_BELOW, collapse_floor, trained


def select_plan(spec: dict, methods: Sequence[str]) -> List[Tuple]:
    """(method, lr, seed) of the selection phase, seed by seed."""
    return [(name, float(lr), seed) for seed in spec['select_seeds']
            for name in methods for lr in spec['methods'][name].get('lrs', [])]


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
    """``{lr: val AP50}`` of a method's grid on ``seed``; None until done."""
    scores = {}
    for lr in spec['methods'][name]['lrs']:
        score = run_score(results.get((name, float(lr), seed)))
        if score is None:
            return None
        scores[float(lr)] = score
    return scores


#: Scores closer than this are a tie (means summed in another order may
#: differ in their last bit).
TIE = 1e-9


def best_lr(scores: Dict[float, float]) -> float:
    """The lr of the best score (of ties within :data:`TIE`, the smallest)."""
    top = max(scores.values())
    return min(lr for lr, v in scores.items()
               if v >= top or math.isclose(v, top, rel_tol=0, abs_tol=TIE))


def mean_scores(grids: Sequence[Dict[float, float]]) -> Dict[float, float]:
    """``{lr: mean score}`` over several seeds' grids (-inf: one diverged)."""
    return {lr: math.fsum(g[lr] for g in grids) / len(grids)
            for lr in grids[0]}


#: The studies selected before the stability rule was declared: their
#: selections stand as run (``tests/test_tools/test_stability_rule.py``).
BEFORE_THE_RULE = frozenset((
    'confirm_dense_long', 'confirm_digitsvoc', 'confirm_frcnn_thresholds',
    'digit_instances_losses', 'digitsvoc_dense_atss_16e',
    'digitsvoc_dense_atss_16e_mix_logits_lr',
    'digitsvoc_dense_atss_rank_sort_16e', 'digitsvoc_dense_budget',
    'digitsvoc_dense_budget_96e', 'digitsvoc_dense_fcos_16e',
    'digitsvoc_dense_fixed_16e', 'digitsvoc_dense_retinanet_16e',
    'digitsvoc_dense_retinanet_rank_sort_16e', 'digitsvoc_finetune_4e',
    'digitsvoc_mask_rcnn_16e', 'digitsvoc_pretrained_12e',
    'digitsvoc_rank_sort_frcnn_16e', 'digitsvoc_scratch_16e',
    'digitsvoc_scratch_32e', 'digitsvoc_scratch_8e',
    'digitsvoc_scratch_8e_mix'))


def stable_lr(lr: float, grids: Sequence[Dict[float, float]]) -> float:
    """The stability rule: ``lr`` (selected on ``grids``, one ``{lr: val
    AP50}`` per selection seed), or the next smaller grid lr where the next
    larger one collapsed on any seed (below the collapse floor of ``lr``'s
    scores) and the smaller one did not."""
    lrs = sorted(grids[0])
    i = lrs.index(lr)
    if i + 1 == len(lrs) or i == 0:
        return lr
    floor = collapse_floor([max(g[lr], 0.0) for g in grids])

    def collapsed(other):
        return any(not trained(g[other], floor) for g in grids)

    if collapsed(lrs[i + 1]) and not collapsed(lrs[i - 1]):
        return lrs[i - 1]
    return lr


def grid_selection(spec: dict, results: Dict[Tuple, dict], name: str) -> dict:
    """How a grid method's lr is selected from ``results``.

    Returns ``dict(lr, seeds, scores, collapsed, pending, first)``: ``lr``
    (None: not yet), the selection ``seeds``, ``scores`` ``{lr: val AP50}``
    (the mean over ``seeds`` when re-selected or with ``select_seeds``; None
    while incomplete), ``collapsed`` (the first seed's best collapsed, in
    ``fair_selection`` studies: re-selected), ``pending`` (``'select'``,
    ``'reselect'`` or None), ``first`` (the first seed's scores); with
    ``select_seeds`` also ``per_seed`` ``{seed: {lr: val AP50} or None}``.
    """
    seed = spec['select_seed']
    first = grid_scores(spec, results, name, seed)
    if len(spec['select_seeds']) > 1:
        per_seed = {s: grid_scores(spec, results, name, s)
                    for s in spec['select_seeds']}
        out = dict(lr=None, seeds=list(spec['select_seeds']), scores=None,
                   first=first, per_seed=per_seed, collapsed=False,
                   pending='select')
        if all(g is not None for g in per_seed.values()):
            out.update(scores=mean_scores(list(per_seed.values())),
                       pending=None)
            out['lr'] = _stable(spec, best_lr(out['scores']),
                                list(per_seed.values()), out)
        return out
    out = dict(lr=None, seeds=[seed], scores=first, first=first,
               collapsed=False, pending=None)
    if first is None:
        out['pending'] = 'select'
        return out
    lr = best_lr(first)
    if spec.get('fair_selection') is not True or trained(first[lr],
                                                         COLLAPSE_BELOW):
        out['lr'] = _stable(spec, lr, [first], out)
        return out
    again = spec['reselect_seed']
    out.update(collapsed=True, collapsed_lr=lr, seeds=[seed, again])
    second = grid_scores(spec, results, name, again)
    if second is None:
        out['pending'] = 'reselect'
        return out
    out['scores'] = mean_scores([first, second])
    out['lr'] = _stable(spec, best_lr(out['scores']), [first, second], out)
    return out


def _stable(spec: dict, lr: float, grids: Sequence[Dict[float, float]],
            out: dict) -> float:
    """``lr`` after the stability rule where the spec applies it; the best
    lr it replaced in ``out['unstable_lr']``."""
    if spec['name'] in BEFORE_THE_RULE:
        return lr
    stable = stable_lr(lr, grids)
    if stable != lr:
        out['unstable_lr'] = lr
    return stable


def selected_lrs(spec: dict, results: Dict[Tuple, dict]) -> Dict[str, float]:
    """Each method's selected lr (:func:`grid_selection`, lr or lr_from)."""
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
            return list(spec['select_seeds'])
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


def selection_phrase(spec: dict) -> str:
    """How grids select: ``'seed 5'`` or ``'the mean over seeds 5, 11'``."""
    seeds = spec['select_seeds']
    if len(seeds) > 1:
        return f"the mean over seeds {', '.join(map(str, seeds))}"
    return f"seed {spec['select_seed']}"


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
            text = (f'best mean val AP50 over seeds {seeds[0]} and '
                    f'{seeds[1]} of the grid {{{grid}}}, in this study (re-'
                    f'selected: on seed {seeds[0]} its best, '
                    f"{100 * sel['first'][sel['collapsed_lr']]:.1f} at lr "
                    f"{sel['collapsed_lr']:g}, had collapsed)")
        elif len(spec['select_seeds']) > 1:
            text = (f'best mean val AP50 over seeds '
                    f"{', '.join(map(str, spec['select_seeds']))} of the grid "
                    f'{{{grid}}}, in this study')
        else:
            text = (f'best val AP50 of the grid {{{grid}}}, seed '
                    f"{spec['select_seed']}, in this study")
        if 'unstable_lr' in sel:
            text += (f"; the stability rule took it over the best, lr "
                     f"{sel['unstable_lr']:g}, whose next larger grid lr "
                     'collapsed on a selection seed')
        return text
    on = m.get('selected_on')
    if not on:
        return 'declared in the spec (no selection record)'
    seeds = on.get('seeds', [])
    plural = 's' if len(seeds) != 1 else ''
    text = ('declared in the spec; selected on val in '
            f"`{on.get('study', '?')}` with seed{plural} "
            f"{', '.join(map(str, seeds)) or '?'}")
    return text + (f"; {on['note']}" if on.get('note') else '')
