#!/usr/bin/env python
"""Plots logged training scalars of MMEngine runs against the iteration.

    python tools/analysis_tools/plot_train_logs.py OUT.png RUN_DIR [RUN_DIR ...]
        [--keys rambo_ap acc_classes acc rambo_grad_density]
        [--labels NAME ...]

Each RUN_DIR is a ``--work-dir`` of ``tools/train.py`` (its
``<timestamp>/vis_data/<timestamp>.json`` logs are read, resumed runs
included). One panel per key; a run that did not log a key is skipped in
that panel. Used in ``docs/evidence.md`` to show how the RaMBO loss's own
diagnostics (batch AP estimate, gradient density) evolve next to the
classification accuracy of cross-entropy runs.
"""
import argparse
import os.path as osp
from typing import Dict, List

from rankloss_lab.run_logs import (
    read_records, save_figure)


def read_train_scalars(run_dir: str) -> List[Dict[str, float]]:
    """Training records (with ``iter``) of every JSON log of a run, in
    order; a resumed run's later log replaces the overlapping iterations."""
    by_iter = {
        int(record['iter']): record
        for record in read_records(run_dir, 'iter', train_only=True)
    }
    if not by_iter:
        raise FileNotFoundError(f'no training log under {run_dir}')
    return [by_iter[k] for k in sorted(by_iter)]


def main(argv=None) -> str:
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('out')
    parser.add_argument('runs', nargs='+')
    parser.add_argument('--keys', nargs='+',
                        default=['rambo_ap', 'acc_classes', 'acc',
                                 'rambo_grad_density'])
    parser.add_argument('--labels', nargs='+')
    args = parser.parse_args(argv)
    labels = args.labels or [osp.basename(osp.normpath(r)) for r in args.runs]
    if len(labels) != len(args.runs):
        raise SystemExit(f'{len(labels)} labels for {len(args.runs)} runs')
    import matplotlib
    matplotlib.use('Agg')
    import matplotlib.pyplot as plt
    fig, axes = plt.subplots(1, len(args.keys),
                             figsize=(3.6 * len(args.keys), 3.2), dpi=110)
    axes = [axes] if len(args.keys) == 1 else axes
    records = {label: read_train_scalars(run)
               for label, run in zip(labels, args.runs)}
    for ax, key in zip(axes, args.keys):
        for label, recs in records.items():
            pts = [(r['iter'], r[key]) for r in recs if key in r]
            if pts:
                ax.plot(*zip(*pts), label=label, lw=1)
        ax.set_title(key, fontsize=9)
        ax.set_xlabel('iteration')
        ax.grid(alpha=0.3)
    axes[0].legend(fontsize=7)
    fig.tight_layout()
    save_figure(fig, args.out)
    print(f'written {args.out}')
    return args.out


if __name__ == '__main__':
    main()
