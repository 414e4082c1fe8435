#!/usr/bin/env python
"""Training curves of a study: val AP50 and training loss against epoch.

    python tools/analysis_tools/plot_study_curves.py SPEC OUT.png \
        [--methods ce margin0 rambo_bce] [--work-dir work_dirs/studies] \
        [--loss-key loss]

Reads the finished runs of a ``tools/study.py`` study (nothing is re-run):
for each method its learning rate selected on val and every seed trained at
that rate. Left panel: val AP50 after each epoch; right panel: the logged
training loss (``--loss-key``, MMEngine's total ``loss`` by default)
averaged over each epoch's logged iterations. Lines are the mean over
seeds, bands the min..max. The losses of different methods are different
functions (cross-entropy is unbounded, the AP loss is 1 - AP, in [0, 1]):
compare each curve's shape, not the heights across methods.
"""
import argparse
import os.path as osp
from collections import defaultdict
from typing import Dict, List, Optional, Sequence

from rankloss_lab.run_logs import plot_mean_band, read_records, save_figure


def epoch_losses(run_dir: str, key: str = 'loss') -> List[float]:
    """Mean of ``key`` over each epoch's logged training iterations, epoch
    1 first; a resumed run's later log replaces overlapping iterations."""
    by_iter = {
        int(r['iter']): r
        for r in read_records(run_dir, key, train_only=True) if 'iter' in r
    }
    per_epoch = defaultdict(list)
    for record in by_iter.values():
        per_epoch[int(record['epoch'])].append(float(record[key]))
    if not per_epoch:
        raise FileNotFoundError(f'no training log with {key!r} under '
                                f'{run_dir}')
    return [sum(v) / len(v) for _, v in sorted(per_epoch.items())]


def collect_curves(spec_path: str,
                   work_dir: str,
                   methods: Optional[Sequence[str]] = None,
                   loss_key: str = 'loss') -> Dict[str, dict]:
    """``{method: dict(label, lr, seeds, ap50, loss)}`` with ``ap50`` and
    ``loss`` as (seeds, epochs) lists cut to the shortest run."""
    from rankloss_lab import study  # its spec reader and run layout
    spec = study.load_spec(spec_path)
    methods = study.requested_methods(spec, methods)
    results = study.collect_results(spec, work_dir)
    chosen = study.selected_lrs(spec, results)
    curves = {}
    for name in methods:
        if name not in chosen:
            raise SystemExit(f'{name}: no learning rate selected yet under '
                             f'{work_dir} (run the study first)')
        lr = chosen[name]
        seeds = sorted(s for (m, r, s) in results
                       if m == name and r == lr and results[(m, r, s)].get(
                           'val_curve'))
        if not seeds:
            raise SystemExit(f'{name}: no finished run at lr {lr:g}')
        ap50 = [results[(name, lr, s)]['val_curve'] for s in seeds]
        loss = [
            epoch_losses(study.run_dir(work_dir, spec['name'], name, lr, s),
                         loss_key) for s in seeds
        ]
        n_ap, n_loss = min(map(len, ap50)), min(map(len, loss))
        curves[name] = dict(
            label=spec['methods'][name]['label'], lr=lr, seeds=seeds,
            ap50=[[100 * v for v in c[:n_ap]] for c in ap50],
            loss=[c[:n_loss] for c in loss])
    return curves


def plot(curves: Dict[str, dict], out: str, title: str,
         loss_key: str = 'loss') -> str:
    import matplotlib
    matplotlib.use('Agg')
    import matplotlib.pyplot as plt
    fig, (ax_ap, ax_loss) = plt.subplots(1, 2, figsize=(9.6, 3.8), dpi=110)
    for i, (name, c) in enumerate(curves.items()):
        colour = plt.cm.tab10(i % 10)
        label = f'{c["label"]} (lr {c["lr"]:g}, {len(c["seeds"])} seeds)'
        for ax, values in ((ax_ap, c['ap50']), (ax_loss, c['loss'])):
            plot_mean_band(ax, values, label, colour, 'osD^v'[i % 5])
    ax_ap.set_ylabel('val AP50 (%)')
    ax_loss.set_ylabel(f'training {loss_key} (epoch mean)')
    for ax in (ax_ap, ax_loss):
        ax.set_xlabel('epoch')
        ax.grid(alpha=0.3)
    ax_ap.legend(fontsize=7)
    fig.suptitle(f'{title}: mean, band = min..max over seeds', fontsize=9)
    fig.tight_layout()
    return save_figure(fig, out)


def main(argv=None) -> str:
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('spec', help='study spec (lab/rankloss_lab/studies/*.py)')
    parser.add_argument('out', help='PNG to write')
    parser.add_argument('--methods', nargs='+',
                        help='methods to draw (default: all)')
    parser.add_argument('--work-dir', default='work_dirs/studies')
    parser.add_argument('--loss-key', default='loss')
    args = parser.parse_args(argv)
    curves = collect_curves(args.spec, osp.abspath(args.work_dir),
                            args.methods, args.loss_key)
    title = osp.splitext(osp.basename(args.spec))[0]
    path = plot(curves, args.out, title, args.loss_key)
    print(f'wrote {path}')
    return path


if __name__ == '__main__':
    main()
