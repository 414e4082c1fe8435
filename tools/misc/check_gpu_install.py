#!/usr/bin/env python
"""Checks an install on a machine with a GPU, and says what it checked.

    python tools/misc/check_gpu_install.py [--fast] [--only LOSS ...]

One line per check (``ok``, ``FAILED``, ``skipped`` and why), exit 1 on a
failure (docs/reliability.md): ``environment``; ``suite`` (:data:`SUITE`,
from a checkout); ``amp`` (one fp16 autocast step per rank loss with a
``GradScaler``: finite gradients, cosine with the fp32 step on the same
rounded scores); ``host syncs`` (``torch.cuda.set_sync_debug_mode``).
"""
import argparse
import json
import os.path as osp
import subprocess
import sys
import warnings

import torch
import torch.nn.functional as F

ROOT = osp.dirname(osp.dirname(osp.dirname(osp.abspath(__file__))))
SUITE = ['tests/test_losses/test_loss_contract.py',
         'tests/test_losses/test_loss_autocast.py']
#: Losses and the settings they need to run on a small batch.
CONFIGS = {
    'RaMBOAPLoss': dict(memory=0),
    'MixedRankLoss': dict(rank_loss=dict(type='RaMBOAPLoss', memory=0)),
    'RaMBORecallLoss': dict(memory=0, log_diagnostics=False),
    'SoDeepAPLoss': dict(sorter=dict(type='HandcraftedSorter', seq_len=15)),
    'SoDeepRecallLoss': dict(
        sorter=dict(type='HandcraftedSorter', seq_len=15)),
}
#: Retrieval losses through a sorter need batches of seq_len + 1.
FIXED_BATCH = {'SoDeepAPLoss': 16, 'SoDeepRecallLoss': 16}
MIN_COSINE, MIN_COSINE_NETWORK = 0.99, 0.9


class Report:
    """The check lines, printed as they come."""

    def __init__(self) -> None:
        self.rows = []

    def add(self, check: str, status: str, detail: str = '') -> None:
        self.rows.append(dict(check=check, status=status, detail=detail))
        print(f'[{status:>7}] {check}: {detail}', flush=True)

    @property
    def failed(self) -> bool:
        return any(r['status'] == 'FAILED' for r in self.rows)


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--fast', action='store_true',
                        help='small batches, few repetitions, no suite')
    parser.add_argument('--no-suite', action='store_true',
                        help='do not run the test subset')
    parser.add_argument('--only', nargs='+', metavar='LOSS',
                        help='check only these registered losses')
    parser.add_argument('--json', help='also write the lines to this file')
    return parser.parse_args(argv)


def rank_losses(only=None):
    """(name, 'detection' or 'embedding') of every registered loss of the
    package (only those named in ``only`` if given)."""
    import inspect

    import mmdet_rankloss.losses as losses
    from mmdet.registry import MODELS
    from mmdet_rankloss.losses.pairwise import EmbeddingLoss
    from mmdet_rankloss.losses.score_space import ClsHooksMixin
    found = []
    for name in sorted(losses.__all__):
        cls = getattr(losses, name)
        if not inspect.isclass(cls) or MODELS.get(name) is not cls or (
                only and name not in only):
            continue
        if issubclass(cls, ClsHooksMixin):
            found.append((name, 'detection'))
        elif issubclass(cls, EmbeddingLoss):
            found.append((name, 'embedding'))
    return found


def build(name):
    from mmdet.registry import MODELS
    return MODELS.build(dict(type=name, **CONFIGS.get(name, {})))


def make_inputs(name, kind, device, fast, seed=0):
    """A head's output (requires grad) and its labels, on ``device``."""
    gen = torch.Generator().manual_seed(seed)
    if kind == 'detection':
        n, classes = (64, 4) if fast else (512, 20)
        labels = torch.randint(0, classes + 1, (n, ), generator=gen)
        x = torch.randn(n, classes + 1, generator=gen)
    else:
        b = FIXED_BATCH.get(name, 32 if fast else 256)
        labels = torch.randint(0, max(2, b // 4), (b, ), generator=gen)
        x = F.normalize(torch.randn(b, 128, generator=gen), dim=1)
    return x.to(device).requires_grad_(True), labels.to(device)


def scalar(out):
    """The summed loss terms of a loss's output."""
    if isinstance(out, dict):
        return sum(v for k, v in out.items() if k.startswith('loss'))
    return out


def check_environment(report, cuda):
    detail = f'torch {torch.__version__}'
    if cuda:
        detail += (f', CUDA {torch.version.cuda}, '
                   f'{torch.cuda.get_device_name(0)}, '
                   f'{torch.cuda.device_count()} GPU(s)')
    else:
        detail += ', CUDA is NOT available'
        if torch.version.cuda is None:
            detail += ' (this torch is built without CUDA)'
    try:
        from mmcv.ops import nms
        boxes = torch.tensor([[0., 0., 1., 1.]],
                             device='cuda' if cuda else 'cpu')
        nms(boxes, boxes.new_ones(1), 0.5)
        detail += ', mmcv ops ok' + (' on CUDA' if cuda else ' on CPU')
        report.add('environment', 'ok', detail)
    except Exception as error:  # noqa: BLE001 (reported, not raised)
        report.add('environment', 'FAILED',
                   f'{detail}; mmcv ops: {type(error).__name__}: {error}')


def check_suite(report, cuda, args):
    if args.fast or args.no_suite:
        report.add('suite', 'skipped', 'not asked (--fast / --no-suite)')
        return
    if not cuda:
        report.add('suite', 'skipped', 'CUDA is not available: its CUDA '
                   'cases would be skipped')
        return
    missing = [p for p in SUITE if not osp.isfile(osp.join(ROOT, p))]
    if missing:
        report.add('suite', 'skipped',
                   f'no checkout here ({missing[0]} missing)')
        return
    proc = subprocess.run(
        [sys.executable, '-m', 'pytest', '-q', '-x', '-p', 'no:cacheprovider']
        + SUITE, cwd=ROOT, capture_output=True, text=True)
    last = (proc.stdout.strip().splitlines() or [''])[-1]
    report.add('suite', 'ok' if proc.returncode == 0 else 'FAILED',
               f'pytest {" ".join(SUITE)}: {last}')
    if proc.returncode:
        print(proc.stdout[-4000:], proc.stderr[-2000:], sep='\n')


def _grad_of(name, kind, device, fast, amp, rounded=True):
    torch.manual_seed(0)
    x, labels = make_inputs(name, kind, device, fast)
    if rounded:  # the values an fp16 head gives, in fp32 for the reference
        x = x.detach().half().float().requires_grad_(True)
    loss = build(name).to(device)
    if not amp:
        scalar(loss(x, labels)).backward()
        return x.grad, True
    scaler = torch.amp.GradScaler('cuda') if hasattr(torch.amp, 'GradScaler') \
        else torch.cuda.amp.GradScaler()
    with torch.autocast('cuda', dtype=torch.float16):
        value = scalar(loss(x.half(), labels))
    scaler.scale(value).backward()
    grad = x.grad / scaler.get_scale()
    return grad, bool(torch.isfinite(grad).all())


def _cosine(a, b):
    return float(F.cosine_similarity(a.double().flatten(),
                                     b.double().flatten(), dim=0))


def check_amp(report, cuda, args):
    if not cuda:
        report.add('amp', 'skipped', 'CUDA is not available')
        return
    for name, kind in rank_losses(args.only):
        try:
            grad16, finite = _grad_of(name, kind, 'cuda', args.fast, True)
            grad32, _ = _grad_of(name, kind, 'cuda', args.fast, False)
            exact, _ = _grad_of(name, kind, 'cuda', args.fast, False, False)
            cosine, rounding = _cosine(grad16, grad32), _cosine(grad32, exact)
            minimum = MIN_COSINE_NETWORK if 'SoDeep' in name else MIN_COSINE
            ok = finite and cosine >= minimum
            report.add(f'amp {name}', 'ok' if ok else 'FAILED',
                       f'finite gradients: {finite}, cosine with fp32 '
                       f'{cosine:.4f} (>= {minimum}); the fp16 rounding of '
                       f'the scores alone: cosine {rounding:.4f}')
        except Exception as error:  # noqa: BLE001
            report.add(f'amp {name}', 'FAILED',
                       f'{type(error).__name__}: {error}')


def check_host_syncs(report, cuda, args):
    if not cuda:
        report.add('host syncs', 'skipped', 'CUDA is not available '
                   '(the tests count them on the meta device instead)')
        return
    for name, kind in rank_losses(args.only):
        x, labels = make_inputs(name, kind, 'cuda', args.fast)
        loss = build(name).to(x.device)
        scalar(loss(x, labels)).backward()  # warm-up
        x.grad = None
        torch.cuda.synchronize()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter('always')
            torch.cuda.set_sync_debug_mode('warn')
            try:
                scalar(loss(x, labels)).backward()
            finally:
                torch.cuda.set_sync_debug_mode('default')
        syncs = sum('synchroniz' in str(w.message) for w in caught)
        report.add(f'host syncs {name}', 'ok',
                   f'{syncs} per call, forward and backward')


def main(argv=None) -> int:
    args = parse_args(argv)
    import mmdet_rankloss  # noqa: F401 (registers the losses)
    cuda = torch.cuda.is_available()
    report = Report()
    if args.only:
        unknown = sorted(set(args.only) - {n for n, _ in rank_losses()})
        if unknown:
            print(f'--only: not a registered rank loss: {unknown}')
            return 2
    if not cuda:
        print('CUDA is not available on this machine: the GPU checks are '
              'skipped, as listed below.')
    check_environment(report, cuda)
    check_suite(report, cuda, args)
    check_amp(report, cuda, args)
    check_host_syncs(report, cuda, args)
    skipped = [r['check'] for r in report.rows if r['status'] == 'skipped']
    print(f'\nchecked {len(report.rows) - len(skipped)}, skipped '
          f'{len(skipped)} ({", ".join(skipped) or "none"}), '
          f'{"FAILED" if report.failed else "no failure"}')
    if args.json:
        with open(args.json, 'w') as f:
            json.dump(dict(cuda=cuda, rows=report.rows), f, indent=1)
    return 1 if report.failed else 0


if __name__ == '__main__':
    sys.exit(main())
