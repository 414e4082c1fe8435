"""The selection phase: the runs of each learning-rate grid on val, the
learning rate each method takes, and the seeds that chose it."""
from typing import Dict, List, Optional, Sequence, Tuple


def select_plan(spec: dict, methods: Sequence[str]) -> List[Tuple]:
    """(method, lr, seed) of the selection phase."""
    plan = []
    for name in methods:
        for lr in spec['methods'][name].get('lrs', []):
            plan.append((name, float(lr), spec['select_seed']))
    return plan


def selected_lrs(spec: dict, results: Dict[Tuple, dict]) -> Dict[str, float]:
    """Best val AP50 of each grid (ties: smaller lr); lr_from follows.

    A method whose grid is not complete has no selection yet.
    """
    chosen = {}
    for name, m in spec['methods'].items():
        if 'lrs' not in m:
            continue
        scores = []
        for lr in m['lrs']:
            res = results.get((name, float(lr), spec['select_seed']))
            if res is None or res.get('val_ap50') is None:
                break
            scores.append((-res['val_ap50'], float(lr)))
        else:
            chosen[name] = min(scores)[1]
    for name, m in spec['methods'].items():
        if 'lr' in m:  # selected before this study (``selected_on``)
            chosen[name] = float(m['lr'])
    for name, m in spec['methods'].items():
        if 'lr_from' in m and m['lr_from'] in chosen:
            chosen[name] = chosen[m['lr_from']]
    return chosen


def selection_seeds(spec: dict, name: str) -> Optional[List[int]]:
    """The seeds that selected a method's lr (None: not recorded)."""
    m = spec['methods'][name]
    if 'lr_from' in m:
        return selection_seeds(spec, m['lr_from'])
    if 'lrs' in m:
        return [spec['select_seed']]
    on = m.get('selected_on')
    return None if on is None else sorted(on.get('seeds', []))


def seed_overlap(spec: dict, methods: Sequence[str]) -> Dict[str, List[int]]:
    """``{method: test seeds that also selected its lr}``, overlaps only."""
    out = {}
    for name in methods:
        both = sorted(set(selection_seeds(spec, name) or [])
                      & set(spec['seeds']))
        if both:
            out[name] = both
    return out


def selection_note(spec: dict, name: str) -> str:
    """How a method's learning rate was chosen, in words."""
    m = spec['methods'][name]
    if 'lr_from' in m:
        return (f"the lr of `{m['lr_from']}` "
                f"({selection_note(spec, m['lr_from'])})")
    if 'lrs' in m:
        grid = ', '.join(f'{lr:g}' for lr in m['lrs'])
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
