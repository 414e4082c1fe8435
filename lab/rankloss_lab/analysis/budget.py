"""The training budget of a confirmation, chosen on val: the epoch at which
a method's val curve has flattened (docs/evidence.md#protocol, "Budget").

``python -m rankloss_lab.analysis.budget SPEC`` reads a ``select_only`` study's
long constant-lr runs; the rule, fixed before those runs, is worded by
:func:`budget_markdown`.
"""
import argparse
import math
from typing import Dict, List, Optional, Sequence

from rankloss_lab.stats import COLLAPSE_BELOW

#: The rule's constants: smoothing window, look-ahead, least gain (AP50 in
#: [0, 1]: 0.01 is one point), rounding of the budget.
WINDOW = 3
HORIZON = 8
MIN_GAIN = 0.01
MULTIPLE = 4


def mean_curve(curves: Sequence[Sequence[float]]) -> List[float]:
    """Per-epoch mean over the seeds' curves (all of one length)."""
    if not curves or len({len(c) for c in curves}) != 1 or not curves[0]:
        raise ValueError('mean_curve: curves must be one or more non-empty '
                         'lists of one length, got lengths '
                         f'{[len(c) for c in curves]}')
    return [math.fsum(values) / len(values) for values in zip(*curves)]


def smoothed(curve: Sequence[float], window: int = WINDOW) -> List[float]:
    """Trailing mean over ``window`` epochs (first item: epoch ``window``)."""
    return [math.fsum(curve[i + 1 - window:i + 1]) / window
            for i in range(window - 1, len(curve))]


def flattening_epoch(curve: Sequence[float], window: int = WINDOW,
                     horizon: int = HORIZON, min_gain: float = MIN_GAIN,
                     floor: float = COLLAPSE_BELOW) -> Optional[int]:
    """The first epoch (1-based) at which the ``window``-smoothed curve is
    at least ``floor`` and gains less than ``min_gain`` over the next
    ``horizon`` epochs; None where none does."""
    s = smoothed(curve, window)
    for i in range(len(s) - horizon):
        if s[i] >= floor and max(s[i + 1:i + 1 + horizon]) - s[i] < min_gain:
            return i + window
    return None


def confirmation_schedule(epochs: Sequence[Optional[int]],
                          multiple: int = MULTIPLE) -> Optional[dict]:
    """``dict(max_epochs, milestone)`` for the methods' flattening epochs:
    the largest, rounded up to a multiple of ``multiple``, with the lr drop
    after 3/4 of it; None where a method has not flattened."""
    if not epochs or any(e is None for e in epochs):
        return None
    total = -(-max(epochs) // multiple) * multiple
    return dict(max_epochs=total, milestone=total * 3 // 4)


def schedule_options(schedule: dict, step: int = 1) -> List[str]:
    """The ``--cfg-options`` of a schedule on a config whose
    ``param_scheduler[step]`` is its ``MultiStepLR``."""
    e, m = schedule['max_epochs'], schedule['milestone']
    return [f'train_cfg.max_epochs={e}', f'param_scheduler.{step}.end={e}',
            f'param_scheduler.{step}.milestones=[{m}]']


def multistep_index(config: str) -> int:
    """Where ``MultiStepLR`` is in a config's ``param_scheduler``."""
    from mmengine.config import Config
    types = [s['type'] for s in Config.fromfile(config).param_scheduler]
    return types.index('MultiStepLR')


def gaps_filled(result: dict) -> tuple:
    """A run's val curve at epochs 1..last, an epoch whose val was not
    logged interpolated linearly; and those epochs."""
    import numpy as np

    from rankloss_lab.study import val_by_epoch
    logged = val_by_epoch(result)
    known = sorted(logged)
    if known[0] != 1:
        raise ValueError(f"{result['method']} seed {result['seed']}: no val "
                         'at epoch 1')
    epochs = range(1, known[-1] + 1)
    curve = np.interp(epochs, known, [logged[e] for e in known]).tolist()
    return curve, [e for e in epochs if e not in logged]


def study_budget(spec: dict, results: Dict[tuple, dict]) -> dict:
    """The rule applied to a study's runs: per method its curves and
    flattening epoch; the schedule (None until all flattened), options."""
    from rankloss_lab.study import selected_lrs
    chosen = selected_lrs(spec, results)
    methods = {}
    for name in spec['methods']:
        if name not in chosen:
            raise ValueError(f"{spec['name']}: {name} has no finished run on "
                             f"every seed of {spec['select_seeds']} yet")
        runs = [results[(name, chosen[name], s)] for s in spec['select_seeds']]
        diverged = [r['seed'] for r in runs if r.get('val_ap50') is None]
        if diverged:
            raise ValueError(f"{spec['name']}: {name} diverged with seeds "
                             f'{diverged}: it has no curve to read')
        curves = [gaps_filled(r) for r in runs]
        curve = mean_curve([c for c, _ in curves])
        methods[name] = dict(lr=chosen[name], seeds=list(spec['select_seeds']),
                             mean=curve, smoothed=smoothed(curve),
                             epoch=flattening_epoch(curve),
                             filled={r['seed']: f for r, (_, f) in zip(
                                 runs, curves) if f})
    schedule = confirmation_schedule([m['epoch'] for m in methods.values()])
    return dict(methods=methods, schedule=schedule,
                options=schedule_options(schedule, multistep_index(
                    next(iter(spec['methods'].values()))['config']))
                if schedule else None)


def budget_markdown(spec: dict, budget: dict) -> str:
    """The decision in words, with the curves it read."""
    md = [f"# Budget of `{spec['name']}`", '',
          f'Rule: the mean val AP50 over seeds '
          f"{', '.join(map(str, spec['select_seeds']))}, smoothed over "
          f'{WINDOW} epochs (trailing), flattens at the first epoch E at '
          f'which it is at least {100 * COLLAPSE_BELOW:g} % and none of the '
          f'next {HORIZON} epochs exceeds it by {100 * MIN_GAIN:g} point or '
          f'more; the budget is the largest E, rounded up to a multiple of '
          f'{MULTIPLE}, with lr / 10 after 3/4 of it.', '']
    for name, m in budget['methods'].items():
        label = spec['methods'][name].get('label', name)
        md.append(f"- {label} (`{name}`, lr {m['lr']:g}): " + (
            f"flattens at epoch {m['epoch']}" if m['epoch'] else
            f"not flat within its {len(m['mean'])} epochs") + ''.join(
                f"; seed {seed}'s val at epoch {', '.join(map(str, f))} "
                'not logged (stopped during it), interpolated linearly '
                'between its logged neighbours'
                for seed, f in m['filled'].items()))
    md.append('')
    if budget['schedule']:
        sch = budget['schedule']
        md.append(f"Budget: {sch['max_epochs']} epochs, lr / 10 after "
                  f"{sch['milestone']}: " + ' '.join(
                      f'`{o}`' for o in budget['options']))
    else:
        md.append('No budget: a curve has not flattened within the schedule; '
                  'a longer schedule (a new budget study) must decide it.')
    md += ['', '| epoch | ' + ' | '.join(
        f'`{n}` mean | smoothed' for n in budget['methods']) + ' |',
        '|---|' + '---|---|' * len(budget['methods'])]
    def cell(values, i):
        return f'{100 * values[i]:.1f}' if 0 <= i < len(values) else '-'

    length = max(len(m['mean']) for m in budget['methods'].values())
    for e in range(length):
        md.append(f'| {e + 1} | ' + ' | '.join(
            c for m in budget['methods'].values()
            for c in (cell(m['mean'], e), cell(m['smoothed'], e - WINDOW + 1)))
            + ' |')
    return '\n'.join(md) + '\n'


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('spec', help='the budget study (select_only)')
    parser.add_argument('--records-dir', default='docs/evidence/runs')
    parser.add_argument('--work-dir', default='work_dirs/studies')
    parser.add_argument('--out', help='also write the markdown here')
    args = parser.parse_args(argv)
    from rankloss_lab.study import collect_results, load_spec
    spec = load_spec(args.spec)
    results = collect_results(spec, args.work_dir, args.records_dir)
    budget = study_budget(spec, results)
    text = budget_markdown(spec, budget)
    print(text, end='')
    if args.out:
        with open(args.out, 'w', encoding='utf-8') as f:
            f.write(text)
    return budget


if __name__ == '__main__':
    main()
