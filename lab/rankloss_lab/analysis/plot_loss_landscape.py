#!/usr/bin/env python
"""RaMBO's loss landscape: the true ``1 - AP`` and its blackbox interpolation.

    python -m rankloss_lab.analysis.plot_loss_landscape \
        [--out docs/images/rambo_loss_landscape.png] [--lambdas 0.1 0.5 2.5] \
        [--num-scores 8] [--num-positives 3] [--seed 0] [--extent 2.0] \
        [--steps 801] [--grid 161]

The idea of Fig. 1 and Fig. 5 of RaMBO (Rolinek et al., CVPR 2020): ``1 - AP``
of a fixed example (``--num-scores`` scores, ``--num-positives`` of them
relevant) is piecewise constant in the scores, so its true gradient is zero
almost everywhere. Blackbox differentiation (Vlastelica et al., ICLR 2020,
RaMBO section 3.2) returns instead the gradient of a piecewise-linear
interpolation ``f_lambda``, which this script evaluates along the line
``s0 + t * d`` (top panel) and on the plane ``s0 + t * d + u * e`` (bottom
panels) for each ``--lambdas`` value.

With the ranker as a solver, ``rk(w) = argmin_pi w . pi`` (Proposition 1),
and ``rk_lambda(w) = rk(w + lambda * dL/drk)`` the ranking of Algorithm 1's
perturbed scores, the interpolation of the blackbox framework is

    f_lambda(w) = L(rk_lambda(w)) + (1 / lambda) * w . (rk_lambda(w) - rk(w))

whose gradient, where it exists, is ``-(rk(w) - rk_lambda(w)) / lambda``: the
gradient our op returns (Eq. 10). Everything is read from the package:
:class:`~mmdet_rankloss.losses.BlackboxRanker` gives ``L`` (the exact
``1 - AP``) and the score gradient ``g`` that Algorithm 1 computes in its
forward pass, so ``rk_lambda = rk + lambda * g`` and
``f_lambda(w) = L(rk_lambda) + w . g``. The ranks are normalised (``rk / n``,
the package default), so ``lambda`` acts as ``lambda * n`` on integer ranks.
Small ``lambda`` stays on the true steps; large ``lambda`` gives wider ramps,
i.e. gradient further from a jump, at the price of faithfulness. For a loss
linear in the ranks ``f_lambda`` is continuous (RaMBO's Fig. 6 uses one);
``1 - AP`` is not linear, so ``dL/drk`` changes where the ranking does and
``f_lambda`` may jump there (visible at large ``lambda``).
"""
import argparse
import os.path as osp
import sys
from typing import Dict, Sequence, Tuple

import torch
from rankloss_lab.paths import ROOT

from mmdet_rankloss.losses import BlackboxRanker
from mmdet_rankloss.ops import exact_rank
from rankloss_lab.run_logs import save_figure

DEFAULT_OUT = osp.join(ROOT, 'docs', 'images', 'rambo_loss_landscape.png')


def make_example(num_scores: int, num_positives: int,
                 seed: int) -> Tuple[torch.Tensor, ...]:
    """The fixed example: scores ``s0``, two unit directions, the labels.

    Returns:
        tuple: ``s0`` (n,), ``d`` (n,), ``e`` (n,) orthogonal to ``d``, and
        bool labels (n,) with ``num_positives`` True, all fp64.
    """
    if not isinstance(num_scores, int) or num_scores < 2:
        raise ValueError(f'--num-scores must be an int >= 2, got '
                         f'{num_scores!r}')
    if not isinstance(num_positives, int) or not \
            1 <= num_positives < num_scores:
        raise ValueError(f'--num-positives must be in [1, --num-scores - 1 '
                         f'= {num_scores - 1}] (AP needs a positive and a '
                         f'negative), got {num_positives!r}')
    g = torch.Generator().manual_seed(seed)
    s0 = torch.randn(num_scores, generator=g, dtype=torch.float64) * 0.5
    d = torch.randn(num_scores, generator=g, dtype=torch.float64)
    d = d / d.norm()
    e = torch.randn(num_scores, generator=g, dtype=torch.float64)
    e = e - (e @ d) * d
    e = e / e.norm()
    labels = torch.zeros(num_scores, dtype=torch.bool)
    labels[torch.randperm(num_scores, generator=g)[:num_positives]] = True
    return s0, d, e, labels


def landscape(scores: torch.Tensor, labels: torch.Tensor,
              lambda_val: float) -> Tuple[torch.Tensor, torch.Tensor]:
    """True ``1 - AP`` and its blackbox interpolation at many score vectors.

    Args:
        scores (Tensor): Score vectors (R, n), fp64 for exact sums.
        labels (Tensor): Bool relevance (n,), shared by every row.
        lambda_val (float): Algorithm 1's interpolation strength, > 0.

    Returns:
        tuple[Tensor, Tensor]: ``1 - AP`` (R,) and ``f_lambda`` (R,).
    """
    ranker = BlackboxRanker(lambda_val=lambda_val, normalize_ranks=True)
    positives = labels.expand_as(scores)
    # 'sum': each row's gradient is its own (a mean would divide by R)
    out = ranker(scores, positives, 0.0, reduction='sum', with_grad=True)
    n = scores.shape[-1]
    perturbed = exact_rank(scores, normalize=True) + lambda_val * out.grad
    # Algorithm 1's perturbed ranking must again be a permutation of 1..n
    integer = perturbed * n
    if not torch.allclose(integer, integer.round(), atol=1e-6):
        raise RuntimeError('rk + lambda * grad is not a ranking: the op no '
                           'longer returns (rk_lambda - rk) / lambda')
    # L of the perturbed ranking: 1 - AP of scores ordered as rk_lambda
    ap_perturbed = ranker(-integer.round(), positives, 0.0,
                          reduction='sum').ap
    return 1 - out.ap, (1 - ap_perturbed) + (scores * out.grad).sum(-1)


def line_and_plane(s0, d, e, labels, lambdas: Sequence[float],
                   extent: float, steps: int,
                   grid: int) -> Dict[str, torch.Tensor]:
    """``1 - AP`` and ``f_lambda`` along ``s0 + t d`` and on the plane
    ``s0 + t d + u e``, ``t, u`` in ``[-extent, extent]``."""
    t = torch.linspace(-extent, extent, steps, dtype=torch.float64)
    tg = torch.linspace(-extent, extent, grid, dtype=torch.float64)
    tt, uu = torch.meshgrid(tg, tg, indexing='xy')
    line = s0 + t[:, None] * d
    plane = s0 + tt.reshape(-1, 1) * d + uu.reshape(-1, 1) * e
    result = dict(t=t, grid=tg)
    for lam in [None] + list(lambdas):
        true_line, interp_line = landscape(line, labels, lam or 1.0)
        true_plane, interp_plane = landscape(plane, labels, lam or 1.0)
        if lam is None:
            result['true_line'] = true_line
            result['true_plane'] = true_plane.reshape(grid, grid)
        else:
            result[f'line_{lam:g}'] = interp_line
            result[f'plane_{lam:g}'] = interp_plane.reshape(grid, grid)
    return result


def plot(result, lambdas, labels, out: str, extent: float) -> None:
    import matplotlib
    matplotlib.use('Agg')
    import matplotlib.pyplot as plt
    import numpy as np
    result = {k: v.numpy() for k, v in result.items()}
    cols = 1 + len(lambdas)
    fig = plt.figure(figsize=(3.2 * cols, 6.4), constrained_layout=True)
    grid = fig.add_gridspec(2, cols, height_ratios=(1.0, 1.1))
    ax = fig.add_subplot(grid[0, :])
    ax.step(result['t'], result['true_line'], where='mid', color='black',
            lw=2.0, label='true 1 - AP (piecewise constant)')
    colours = plt.cm.viridis(np.linspace(0.15, 0.85, len(lambdas)))
    for lam, colour in zip(lambdas, colours):
        ax.plot(result['t'], result[f'line_{lam:g}'], color=colour, lw=1.5,
                label=f'blackbox interpolation, lambda = {lam:g}')
    ax.set_xlabel('t  (scores = s0 + t * d)')
    ax.set_ylabel('loss')
    n, p = labels.numel(), int(labels.sum())
    ax.set_title(f'RaMBO AP loss along a line in score space ({n} scores, '
                 f'{p} positive; normalised ranks)')
    ax.legend(fontsize=8, loc='best')
    ax.grid(alpha=0.3)
    planes = [('true 1 - AP', result['true_plane'])] + [
        (f'lambda = {lam:g}', result[f'plane_{lam:g}']) for lam in lambdas]
    vmin = min(float(v.min()) for _, v in planes)
    vmax = max(float(v.max()) for _, v in planes)
    for i, (title, values) in enumerate(planes):
        axp = fig.add_subplot(grid[1, i])
        image = axp.imshow(values, origin='lower', cmap='magma',
                           extent=(-extent, extent, -extent, extent),
                           vmin=vmin, vmax=vmax)
        axp.axhline(0.0, color='white', ls='--', lw=0.8)
        axp.set_title(title, fontsize=9)
        axp.set_xlabel('t (along d)', fontsize=8)
        if i == 0:
            axp.set_ylabel('u (along e)', fontsize=8)
        axp.tick_params(labelsize=7)
    fig.colorbar(image, ax=fig.axes[1:], shrink=0.8, label='loss')
    save_figure(fig, out, dpi=110)


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--out', default=DEFAULT_OUT, help='PNG to write')
    parser.add_argument('--lambdas', type=float, nargs='+',
                        default=[0.1, 0.5, 2.5])
    parser.add_argument('--num-scores', type=int, default=8)
    parser.add_argument('--num-positives', type=int, default=3)
    parser.add_argument('--seed', type=int, default=0)
    parser.add_argument('--extent', type=float, default=2.0,
                        help='t and u range over [-extent, extent]')
    parser.add_argument('--steps', type=int, default=801,
                        help='points along the line')
    parser.add_argument('--grid', type=int, default=161,
                        help='points per side of the plane')
    args = parser.parse_args(argv)
    bad = [lam for lam in args.lambdas if not lam > 0]
    if bad:
        parser.error(f'--lambdas must be > 0, got {bad}')
    if args.extent <= 0 or args.steps < 2 or args.grid < 2:
        parser.error(f'need --extent > 0, --steps >= 2 and --grid >= 2, got '
                     f'{args.extent}, {args.steps}, {args.grid}')
    return args


def main(argv=None) -> int:
    args = parse_args(argv)
    s0, d, e, labels = make_example(args.num_scores, args.num_positives,
                                    args.seed)
    result = line_and_plane(s0, d, e, labels, args.lambdas, args.extent,
                            args.steps, args.grid)
    plot(result, args.lambdas, labels, args.out, args.extent)
    print(f'loss landscape written to {args.out}')
    return 0


if __name__ == '__main__':
    sys.exit(main())
