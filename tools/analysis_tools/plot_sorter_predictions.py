#!/usr/bin/env python
"""SoDeep sorters: predicted ranks against true ranks on held-out sequences.

    python tools/analysis_tools/plot_sorter_predictions.py \
        [--out docs/images/sodeep_sorter_predictions.png] \
        [--checkpoint work_dirs/sorters/lstm_d100.pth ...] [--seq-len 100] \
        [--num-sequences 300] [--seed 20190616] [--lambda-val 10]

One panel per sorter: every element of ``--num-sequences`` random score
vectors (SoDeep section 3.1.2, :func:`~mmdet_rankloss.networks.sorters.
synthetic_scores`, all four kinds mixed) placed at its exact normalised rank
(x) and the rank the sorter predicts (y); a perfect sorter puts them on the
diagonal. The first panel is the handcrafted sorter (Eq. 11-12, no
training), then one per ``--checkpoint`` written by
``tools/misc/pretrain_sorter.py train``. The default seed is the held-out seed of
``tools/misc/pretrain_sorter.py evaluate``, which training draws never use; the
L1 in each title is that tool's Table 1 measure on this smaller sample. A
second row shows one sequence, sorted by true rank, with each prediction.
"""
import argparse
import os.path as osp
import sys
from typing import List, Tuple

import torch

ROOT = osp.dirname(osp.dirname(osp.dirname(osp.abspath(__file__))))
from mmdet_rankloss.networks.sorters import (
    HandcraftedSorter, load_sorter, normalized_ranks, synthetic_scores)
from rankloss_lab.run_logs import save_figure

DEFAULT_OUT = osp.join(ROOT, 'docs', 'images',
                       'sodeep_sorter_predictions.png')
HELD_OUT_SEED = 20190616  # tools/misc/pretrain_sorter.py's held-out set


def load_sorters(checkpoints: List[str], seq_len: int,
                 lambda_val: float) -> List[Tuple[str, torch.nn.Module]]:
    """The handcrafted sorter, then each checkpoint, as (title, sorter)."""
    sorters = [(f'handcrafted (lambda {lambda_val:g}, no training)',
                HandcraftedSorter(seq_len, lambda_val))]
    for path in checkpoints:
        if not osp.isfile(path):
            raise FileNotFoundError(f'--checkpoint {path}: no such file')
        sorter = load_sorter(path)
        if sorter.seq_len != seq_len:
            raise ValueError(
                f'--checkpoint {path} sorts sequences of length '
                f'{sorter.seq_len}, not --seq-len {seq_len}')
        meta = torch.load(path, weights_only=True).get('meta', {})
        trained = ''
        if 'steps' in meta:
            trained = (f', {meta["steps"]} steps / '
                       f'{meta.get("train_seconds", "?")} s')
        sorters.append(
            (f'{type(sorter).__name__} ({osp.basename(path)}{trained})',
             sorter))
    return sorters


@torch.no_grad()
def predictions(sorter: torch.nn.Module,
                scores: torch.Tensor) -> Tuple[torch.Tensor, torch.Tensor]:
    """Exact and predicted normalised ranks (N, d) of scores (N, d)."""
    was_training = sorter.training
    sorter.eval()
    try:
        return normalized_ranks(scores), sorter(scores)
    finally:
        sorter.train(was_training)


def plot(rows, out: str, example: int = 0) -> None:
    import matplotlib
    matplotlib.use('Agg')
    import matplotlib.pyplot as plt
    cols = len(rows)
    fig, axes = plt.subplots(
        2, cols, figsize=(4.2 * cols, 7.6), squeeze=False,
        constrained_layout=True)
    for col, (title, true, pred) in enumerate(rows):
        l1 = float((pred - true).abs().mean())
        ax = axes[0, col]
        ax.scatter(true.flatten().numpy(), pred.flatten().numpy(), s=1,
                   alpha=0.15, color='tab:blue', rasterized=True)
        ax.plot([0, 1], [0, 1], color='black', lw=0.8, ls='--')
        ax.set_xlim(0, 1)
        ax.set_ylim(min(0.0, float(pred.min())), max(1.0, float(pred.max())))
        ax.set_xlabel('true rank / d')
        ax.set_ylabel('predicted rank / d')
        ax.set_title(f'{title}\nmean L1 {l1:.4f} over {true.shape[0]} '
                     f'held-out sequences', fontsize=9)
        ax.grid(alpha=0.3)
        axe = axes[1, col]
        order = true[example].argsort()
        axe.plot(true[example][order].numpy(), color='black', lw=1.2,
                 label='true')
        axe.plot(pred[example][order].numpy(), color='tab:orange', lw=1.0,
                 label='predicted')
        axe.set_xlabel('element, by true rank')
        axe.set_ylabel('rank / d')
        axe.set_title(f'one held-out sequence (d = {true.shape[1]})',
                      fontsize=9)
        axe.legend(fontsize=8)
        axe.grid(alpha=0.3)
    save_figure(fig, out, dpi=100)


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--out', default=DEFAULT_OUT, help='PNG to write')
    parser.add_argument('--checkpoint', nargs='*', default=[],
                        help='learned sorters (tools/misc/pretrain_sorter.py)')
    parser.add_argument('--seq-len', type=int, default=100)
    parser.add_argument('--num-sequences', type=int, default=300)
    parser.add_argument('--seed', type=int, default=HELD_OUT_SEED)
    parser.add_argument('--lambda-val', type=float, default=10.0,
                        help='sharpness of the handcrafted sorter')
    args = parser.parse_args(argv)
    if args.seq_len < 2 or args.num_sequences < 1:
        parser.error(f'need --seq-len >= 2 and --num-sequences >= 1, got '
                     f'{args.seq_len} and {args.num_sequences}')
    return args


def main(argv=None) -> int:
    args = parse_args(argv)
    sorters = load_sorters(args.checkpoint, args.seq_len, args.lambda_val)
    g = torch.Generator().manual_seed(args.seed)
    scores = synthetic_scores(args.num_sequences, args.seq_len, generator=g)
    rows = [(title, *predictions(sorter, scores))
            for title, sorter in sorters]
    plot(rows, args.out)
    for title, true, pred in rows:
        print(f'{title}: mean L1 {float((pred - true).abs().mean()):.4f}')
    print(f'sorter predictions written to {args.out}')
    return 0


if __name__ == '__main__':
    sys.exit(main())
