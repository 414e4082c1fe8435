"""The fair-baseline rules ``--freeze`` enforces where ``fair_selection =
True`` (no method of a comparison tuned less than another):

1. every declared method is selected in this study on its own ``lrs`` grid
   with its selection seeds;
2. every declared grid has one density (one ratio of neighbouring lrs);
3. no declared best sits at a grid edge unless the next point beyond it
   diverged on a selection seed;
4. a collapsed best was re-selected on ``reselect_seed`` (one-seed specs);
5. each lr is the best mean over at least two ``select_seeds`` (for
   studies frozen from now on).
"""
import math
from typing import Dict, List, Optional, Tuple

from rankloss_lab.stats import COLLAPSE_BELOW
from .common import PreregistrationError, declared_methods
from .selection import grid_selection


def grid_step(lrs) -> Optional[float]:
    """The ratio of a grid's neighbouring lrs, or None (one lr, uneven)."""
    lrs = sorted(float(lr) for lr in lrs)
    ratios = [b / a for a, b in zip(lrs, lrs[1:])]
    if not ratios or any(not math.isclose(r, ratios[0], rel_tol=1e-6)
                         for r in ratios):
        return None
    return ratios[0]


def _grid(lrs) -> str:
    return '{' + ', '.join(f'{lr:g}' for lr in sorted(lrs)) + '}'


def _diverged_at(results: Dict[Tuple, dict], name: str, lr: float,
                 seeds) -> bool:
    return any(res.get('diverged') for (m, r, s), res in results.items()
               if m == name and s in seeds
               and math.isclose(r, lr, rel_tol=1e-6))


def _borrowed(spec: dict, name: str) -> Optional[str]:
    """Why a declared method's lr is not selected in this study, or None."""
    m = spec['methods'][name]
    seeds = spec['select_seeds']
    fix = (f"give it its own grid (lrs) with the study's density, selected "
           f"here with seed{'s' if len(seeds) > 1 else ''} "
           f"{', '.join(map(str, seeds))} as the others")
    if 'lr' in m:
        on = m.get('selected_on') or {}
        where = f"in `{on['study']}`" if on.get('study') else \
            'before this study'
        seeds = on.get('seeds')
        return (f'{name}: its lr {m["lr"]:g} was selected {where}'
                + (f" with seed{'s' if len(seeds) != 1 else ''} "
                   f"{', '.join(map(str, seeds))}" if seeds else '')
                + f', not in this study: {fix}')
    if 'lr_from' in m:
        return (f"{name}: it takes the lr of `{m['lr_from']}` (lr_from), "
                f'not its own: {fix}')
    return None


def _density(spec: dict, grids: Dict[str, list]) -> List[str]:
    """Rule 2: one ratio of neighbouring lrs, the same for every grid."""
    problems, steps = [], {}
    for name, lrs in grids.items():
        step = grid_step(lrs)
        if step is None:
            ratios = sorted(lrs)
            ratios = ', '.join(f'{b / a:.3g}' for a, b in zip(ratios,
                                                              ratios[1:]))
            problems.append(
                f'{name}: its grid {_grid(lrs)} has '
                + ('one lr, no density' if len(lrs) < 2 else
                   f'uneven steps (ratios {ratios})')
                + ': give it a grid whose neighbouring lrs stand in one ratio'
                ', the same for every method')
        else:
            steps[name] = step
    if steps:
        def sharing(n):  # how many grids step as n's does
            return sum(math.isclose(steps[n], s, rel_tol=1e-6)
                       for s in steps.values())

        # the reference: the baseline's grid, else the most common step
        ref_name = spec['baseline'] if spec['baseline'] in steps else max(
            steps, key=sharing)
        ref = steps[ref_name]
        for name, step in steps.items():
            if not math.isclose(step, ref, rel_tol=1e-6):
                problems.append(
                    f'{name}: its grid {_grid(grids[name])} steps by a factor '
                    f'{step:.3g}, the grid of `{ref_name}` by {ref:.3g}: '
                    'every declared method needs the same grid density')
    return problems


def _edges(spec: dict, results: Dict[Tuple, dict], name: str,
           sel: dict, fallback: float) -> List[str]:
    """Rule 3: a grid's best is inside it, or the step beyond diverged."""
    lrs = sorted(float(lr) for lr in spec['methods'][name]['lrs'])
    best = sel['lr']
    score = sel['scores'][best]
    how = (f'mean val AP50 over seeds {", ".join(map(str, sel["seeds"]))}'
           if len(sel['seeds']) > 1 else
           f'val AP50 on seed {sel["seeds"][0]}')
    problems = []
    for edge, index, word in (('upper', -1, 'largest'),
                              ('lower', 0, 'smallest')):
        if not math.isclose(best, lrs[index], rel_tol=1e-9):
            continue
        step = (lrs[-1] / lrs[-2] if edge == 'upper' else lrs[1] / lrs[0]) \
            if len(lrs) > 1 else fallback
        beyond = best * step if edge == 'upper' else best / step
        if _diverged_at(results, name, beyond, sel['seeds']):
            continue
        problems.append(
            f'{name}: its best {how} ({100 * score:.1f}) is at lr {best:g}, '
            f'the {edge} edge ({word} lr) of its grid {_grid(lrs)}: add lr '
            f'{beyond:.4g} to its grid and run --phase select (a run at lr '
            f'{beyond:.4g} that diverged would settle it too)')
    return problems


def one_seed_problems(spec: dict, results: Dict[Tuple, dict]) -> List[str]:
    """Rule 5: the declared grids selected on one seed, in one line or none."""
    single = [name for name in declared_methods(spec)
              if 'lrs' in spec['methods'][name] and len(
                  grid_selection(spec, results, name)['seeds']) < 2]
    if not single:
        return []
    seed = spec['select_seed']
    again = spec['reselect_seed'] if spec['reselect_seed'] is not None \
        else seed + 1
    return ['selected on one seed (' + str(seed) + '): ' + ', '.join(
        f'`{name}`' for name in single) + '. fair_selection = True selects '
        'each lr on the best mean val AP50 over at least two seeds: set '
        f'select_seeds = [{seed}, {again}] (two or more seeds, none a test '
        'seed) in the spec and run --phase select']


def fairness_problems(spec: dict, results: Dict[Tuple, dict],
                      new: bool = False) -> List[str]:
    """What keeps a study from meeting the fair-baseline rules, one line
    per method and rule (empty: none); ``new``: rule 5 applies."""
    problems = one_seed_problems(spec, results) if new else []
    grids = {}
    for name in declared_methods(spec):
        why = _borrowed(spec, name)
        if why:
            problems.append(why)
        else:
            grids[name] = [float(lr) for lr in spec['methods'][name]['lrs']]
    problems += _density(spec, grids)
    steps = [s for s in map(grid_step, grids.values()) if s is not None]
    fallback = steps[0] if steps else 2.0
    for name in grids:
        sel = grid_selection(spec, results, name)
        if sel['pending'] == 'reselect':
            seed, lr = sel['seeds'][0], sel['collapsed_lr']
            problems.append(
                f'{name}: collapsed on seed {seed}: its best val AP50 is '
                f"{100 * sel['first'][lr]:.1f} at lr {lr:g}, below "
                f'{100 * COLLAPSE_BELOW:g} %: run --phase select to re-select '
                f"it (its grid again with seed {sel['seeds'][1]}; the lr with "
                'the best mean over both seeds is selected)')
        elif sel['lr'] is not None:
            problems += _edges(spec, results, name, sel, fallback)
    return problems


def check_fair_selection(spec: dict, results: Dict[Tuple, dict],
                         new: bool = False) -> None:
    """Raises unless the study may be frozen under its ``fair_selection``
    (said, and if True, every rule met); ``new``: rule 5 applies."""
    fair = spec.get('fair_selection')
    if fair is None:
        raise PreregistrationError(
            f"cannot freeze {spec['name']!r}: its spec does not say "
            'fair_selection. Set fair_selection = True to have the freeze '
            'check the fair-baseline rules (every declared method selected '
            'in this study on the mean of two or more seeds, grids of one '
            'density, no best at a grid edge), or fair_selection = False to '
            'waive them (the pre-registration then says so)')
    if fair:
        problems = fairness_problems(spec, results, new)
        if problems:
            raise PreregistrationError(
                f"cannot freeze {spec['name']!r}: the fair-baseline rules "
                '(fair_selection = True) are not met:\n- ' +
                '\n- '.join(problems))
