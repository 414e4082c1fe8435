"""Pre-trains a SoDeep sorter on synthetic data, or compares sorters.

Training (SoDeep 4.1.1): score vectors from the distributions of 3.1.2,
the L1 loss of Eq. 1 on normalised ranks, Adam lr 1e-3 halved every
``--halve-every`` steps, batches of 512; the checkpoint holds tensors and
plain settings (:func:`mmdet_rankloss.networks.sorters.load_sorter`).
Evaluation (Table 1): mean L1 rank error on a held-out set (10,000 vectors,
a seed training never uses). Examples::

    python tools/misc/pretrain_sorter.py train --arch lstm --seq-len 100 \\
        --time-limit 300 --out work_dirs/sorters/lstm_d100.pth
    python tools/misc/pretrain_sorter.py evaluate --seq-len 100 \\
        work_dirs/sorters/lstm_d100.pth work_dirs/sorters/cnn_d100.pth
"""
import argparse
import os
import os.path as osp
import sys
import time

import torch

from mmdet_rankloss.networks.sorters import (SYNTHETIC_KINDS, CNNSorter,
                                             HandcraftedSorter, LSTMSorter,
                                             load_sorter, normalized_ranks,
                                             save_sorter, synthetic_scores)
from rankloss_lab.runner import clock

ARCHS = {'lstm': LSTMSorter, 'cnn': CNNSorter}
VAL_SEED = 20190616  # held-out set; training draws use --seed instead


def held_out_set(size: int, seq_len: int, kind: str = 'all',
                 seed: int = VAL_SEED) -> torch.Tensor:
    """The fixed synthetic test set of Table 1."""
    g = torch.Generator().manual_seed(seed)
    return synthetic_scores(size, seq_len, kind, generator=g)


@torch.no_grad()
def l1_error(sorter: torch.nn.Module, scores: torch.Tensor,
             chunk: int = 2000) -> float:
    """Mean |predicted - exact| normalised rank over all elements."""
    was_training = sorter.training
    sorter.eval()
    total = 0.0
    for start in range(0, len(scores), chunk):
        y = scores[start:start + chunk]
        total += (sorter(y) - normalized_ranks(y)).abs().sum().item()
    sorter.train(was_training)
    return total / scores.numel()


def eta(step: int, total_steps: int, elapsed: float,
        time_limit: float) -> float:
    """Seconds left: to the last step at the rate so far, or to the time
    limit if that comes first."""
    left = elapsed / max(step, 1) * (total_steps - step)
    return min(left, max(time_limit - elapsed, 0.0)) if time_limit else left


def train(args) -> None:
    torch.manual_seed(args.seed)
    gen = torch.Generator().manual_seed(args.seed)
    kwargs = dict(seq_len=args.seq_len)
    if args.arch == 'lstm':
        kwargs.update(hidden_size=args.hidden_size,
                      num_layers=args.num_layers)
    elif args.channels:
        kwargs.update(channels=args.channels)
    sorter = ARCHS[args.arch](**kwargs)
    optim = torch.optim.Adam(sorter.parameters(), lr=args.lr)
    sched = torch.optim.lr_scheduler.StepLR(optim, args.halve_every, 0.5)
    val = held_out_set(args.val_size, args.seq_len)
    num_params = sum(p.numel() for p in sorter.parameters())
    print(f'[pretrain] {args.arch} sorter, seq_len {args.seq_len}, '
          f'{num_params} parameters; at most {args.steps} steps of '
          f'{args.batch_size}' +
          (f' or {args.time_limit:.0f} s' if args.time_limit else ''),
          flush=True)
    start = last_print = time.time()
    step, running = 0, None
    while step < args.steps:
        if args.time_limit and time.time() - start > args.time_limit:
            break
        y = synthetic_scores(args.batch_size, args.seq_len, generator=gen)
        loss = (sorter(y) - normalized_ranks(y)).abs().mean()
        optim.zero_grad()
        loss.backward()
        optim.step()
        sched.step()
        step += 1
        running = loss.item() if running is None else \
            0.98 * running + 0.02 * loss.item()
        now = time.time()
        if step % args.log_interval == 0 or \
                now - last_print >= args.log_seconds:
            last_print, elapsed = now, now - start
            print(f'[pretrain] step {step:6d}/{args.steps}  train L1 '
                  f'{running:.5f}  lr {sched.get_last_lr()[0]:.2e}  elapsed '
                  f'{clock(elapsed)}, ETA '
                  f'{clock(eta(step, args.steps, elapsed, args.time_limit))}',
                  flush=True)
        if args.val_interval and step % args.val_interval == 0:
            print(f'[pretrain] step {step:6d}  held-out L1 '
                  f'{l1_error(sorter, val):.5f}', flush=True)
    seconds = time.time() - start
    val_l1 = l1_error(sorter, val)
    print(f'[pretrain] done: {step} steps in {seconds:.1f} s, held-out L1 '
          f'{val_l1:.5f} ({args.val_size} vectors)', flush=True)
    os.makedirs(osp.dirname(osp.abspath(args.out)), exist_ok=True)
    save_sorter(
        sorter.eval(), args.out, steps=step, batch_size=args.batch_size,
        train_seconds=round(seconds, 1), val_l1=val_l1,
        val_size=args.val_size, seed=args.seed, lr=args.lr,
        halve_every=args.halve_every)
    print(f'[pretrain] saved {args.out}', flush=True)


def evaluate(args) -> None:
    val = held_out_set(args.val_size, args.seq_len)
    rows = [('handcrafted (lambda 10)', HandcraftedSorter(args.seq_len, 10.0),
             '-')]
    for path in args.checkpoints:
        sorter = load_sorter(path)
        if sorter.seq_len != args.seq_len:
            raise ValueError(f'{path} sorts sequences of length '
                             f'{sorter.seq_len}, not --seq-len {args.seq_len}')
        meta = torch.load(path, weights_only=True).get('meta', {})
        rows.append((f'{type(sorter).__name__} ({osp.basename(path)})', sorter,
                     f"{meta.get('steps', '?')} steps, "
                     f"{meta.get('train_seconds', '?')} s"))
    kinds = SYNTHETIC_KINDS if args.per_kind else ()
    header = '| sorter | training | L1 (all) |' + ''.join(
        f' L1 ({k}) |' for k in kinds)
    table = [header, '|' + '---|' * (3 + len(kinds))]
    start = time.time()
    for i, (name, sorter, training) in enumerate(rows, 1):
        cells = [f'{l1_error(sorter, val):.4f}']
        for k in kinds:
            subset = held_out_set(args.val_size, args.seq_len, k)
            cells.append(f'{l1_error(sorter, subset):.4f}')
        table.append(f'| {name} | {training} | ' + ' | '.join(cells) + ' |')
        elapsed = time.time() - start
        print(f'[evaluate] {i}/{len(rows)} {name}: L1 {cells[0]}; elapsed '
              f'{clock(elapsed)}, ETA '
              f'{clock(eta(i, len(rows), elapsed, 0))}', flush=True)
    print('\n'.join(table), flush=True)
    if args.out:
        os.makedirs(osp.dirname(osp.abspath(args.out)), exist_ok=True)
        with open(args.out, 'w', encoding='utf-8') as f:
            f.write('\n'.join(table) + '\n')
        print(f'[evaluate] table written to {args.out}', flush=True)
    else:
        print('[evaluate] table printed above (--out FILE also saves it)',
              flush=True)


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    sub = parser.add_subparsers(dest='command', required=True)
    tr = sub.add_parser('train', help='pre-train an LSTM or CNN sorter')
    tr.add_argument('--arch', choices=sorted(ARCHS), required=True)
    tr.add_argument('--out', required=True, help='checkpoint file')
    tr.add_argument('--steps', type=int, default=100000)
    tr.add_argument('--time-limit', type=float, default=0,
                    help='stop after this many seconds (0: no limit)')
    tr.add_argument('--batch-size', type=int, default=512)
    tr.add_argument('--lr', type=float, default=1e-3)
    tr.add_argument('--halve-every', type=int, default=20000,
                    help='steps between learning-rate halvings')
    tr.add_argument('--hidden-size', type=int, default=64, help='LSTM only')
    tr.add_argument('--num-layers', type=int, default=2, help='LSTM only')
    tr.add_argument('--channels', type=int, nargs=7, default=None,
                    help='CNN only: widths of the first 7 blocks')
    tr.add_argument('--log-interval', type=int, default=50)
    tr.add_argument('--log-seconds', type=float, default=30,
                    help='also log when this many seconds passed')
    tr.add_argument('--val-interval', type=int, default=0,
                    help='steps between held-out evaluations (0: at the end)')
    tr.add_argument('--seed', type=int, default=0)
    ev = sub.add_parser('evaluate', help='Table 1: L1 of sorters on held-out '
                        'synthetic data (handcrafted always included)')
    ev.add_argument('checkpoints', nargs='*')
    ev.add_argument('--per-kind', action='store_true',
                    help='also report each distribution separately')
    ev.add_argument('--out', help='also write the table to this file')
    for p in (tr, ev):
        p.add_argument('--seq-len', type=int, default=100)
        p.add_argument('--val-size', type=int, default=10000)
        p.add_argument('--threads', type=int, default=0,
                       help='torch CPU threads (0: torch default)')
    args = parser.parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    return args


def main(argv=None) -> int:
    args = parse_args(argv)
    train(args) if args.command == 'train' else evaluate(args)
    return 0


if __name__ == '__main__':
    sys.exit(main())
