"""How batch size, processes and ``auto_scale_lr`` combine in MMEngine 0.10.7
(``Runner.scale_lr``; docs/multi_gpu.md), from the config alone.

``python -m rankloss_lab.batch CONFIG`` prints :func:`resolve_batch`'s
table, or with ``--print-options`` only the ``KEY=VALUE`` options of
``--total-batch`` (for ``tools/dist_train.sh``).
"""
import argparse
import sys
from typing import Dict, List, NamedTuple, Optional, Sequence

#: Types whose ``global_ranking=True`` ranks the batch of all processes
#: together (``docs/multi_gpu.md``).
GLOBAL_RANKING = ('RaMBOAPLoss', 'RetrievalModel')

__all__ = ['BatchPlan', 'optimizer_lr', 'resolve_batch', 'per_process_batch',
           'total_batch_options', 'format_options', 'ranking_losses',
           'load_config']


class BatchPlan(NamedTuple):
    """What MMEngine trains with for one number of processes."""
    processes: int  # the world size
    per_process: int  # train_dataloader.batch_size
    total: int  # processes x per_process, images per optimizer step
    base_batch: Optional[int]  # auto_scale_lr.base_batch_size, or None
    scaled: bool  # whether MMEngine scales the lr (auto_scale_lr.enable)
    config_lr: float  # the optimizer's lr as written in the config
    lr: float  # the lr MMEngine starts from (before the schedulers)

    @property
    def factor(self) -> float:
        """``lr / config_lr``: the scaling MMEngine applies (1 if none)."""
        return self.lr / self.config_lr if self.config_lr else 1.0


def _get(node, key, default=None):
    """``node[key]`` for dicts and MMEngine ``ConfigDict`` alike."""
    return node.get(key, default) if hasattr(node, 'get') else default


def optimizer_lr(cfg) -> float:
    """The lr of ``optim_wrapper.optimizer`` of a config (ValueError
    without a single optimizer with an lr)."""
    optimizer = _get(_get(cfg, 'optim_wrapper'), 'optimizer')
    lr = _get(optimizer, 'lr')
    if lr is None:
        raise ValueError('the config has no optim_wrapper.optimizer.lr')
    return float(lr)


def _check_count(name: str, value) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f'{name} must be an int >= 1, got {value!r}')
    return value


def resolve_batch(cfg, processes: int,
                  options: Optional[Dict[str, object]] = None,
                  auto_scale_lr: bool = False) -> BatchPlan:
    """The batch per process and in total, and the lr, that MMEngine trains a
    config with on ``processes`` processes (as ``Runner.scale_lr``), the
    world size (``GPUS x NNODES``; 1 for ``train.py``), after the
    ``--cfg-options`` ``options``; ``auto_scale_lr``: ``tools/train.py
    --auto-scale-lr``. ValueError without a batch size or optimizer lr, or
    for an enabled ``auto_scale_lr`` without ``base_batch_size``.
    """
    _check_count('processes', processes)
    if options:
        from mmengine.config import Config

        # only the keys MMEngine reads for the batch and lr
        keys = ('train_dataloader', 'optim_wrapper', 'auto_scale_lr')
        cfg = Config({key: _get(cfg, key) for key in keys
                      if _get(cfg, key) is not None})
        cfg.merge_from_dict(dict(options))
    per_process = _get(_get(cfg, 'train_dataloader'), 'batch_size')
    if per_process is None:
        raise ValueError('the config has no train_dataloader.batch_size')
    _check_count('train_dataloader.batch_size', per_process)
    config_lr = optimizer_lr(cfg)
    scale_cfg = _get(cfg, 'auto_scale_lr')
    base = _get(scale_cfg, 'base_batch_size')
    scaled = bool(_get(scale_cfg, 'enable', False)) or (
        auto_scale_lr and scale_cfg is not None)
    if auto_scale_lr and scale_cfg is None:
        # MMDetection's train.py stops with a RuntimeError here
        raise ValueError('--auto-scale-lr needs auto_scale_lr in the config')
    total = processes * per_process
    lr = config_lr
    if scaled:
        if base is None:
            raise ValueError('auto_scale_lr is enabled without '
                             'base_batch_size (MMEngine asserts on it)')
        lr = config_lr * float(total) / float(base)
    return BatchPlan(processes, per_process, total, base, scaled, config_lr,
                     lr)


def per_process_batch(total: int, processes: int) -> int:
    """``total / processes``; ValueError unless a whole number."""
    _check_count('the total batch', total)
    _check_count('the number of processes', processes)
    if total % processes:
        fits = [n for n in range(1, total + 1) if total % n == 0]
        raise ValueError(
            f'a total batch of {total} does not split evenly over '
            f'{processes} processes; use {", ".join(map(str, fits))} '
            'processes, or another total batch (the lr then follows it, '
            'docs/multi_gpu.md)')
    return total // processes


def total_batch_options(cfg, total: int, processes: int) -> Dict[str, int]:
    """``--cfg-options`` for a total batch ``total`` on ``processes``
    processes: ``train_dataloader.batch_size`` and, for a sampler that plans
    whole batches (``PKSampler``), its ``batch_size`` too."""
    per = per_process_batch(total, processes)
    options = {'train_dataloader.batch_size': per}
    sampler = _get(_get(cfg, 'train_dataloader'), 'sampler')
    if _get(sampler, 'batch_size') is not None:
        options['train_dataloader.sampler.batch_size'] = per
    return options


def format_options(options: Dict[str, object]) -> List[str]:
    """``['KEY=VALUE', ...]`` for ``--cfg-options``."""
    return [f'{key}={value}' for key, value in options.items()]


def ranking_losses(node, path: str = 'model') -> List[tuple]:
    """``(path, global_ranking)`` of every loss config under ``node`` that
    can rank the batch of all processes together (a dict that sets
    ``global_ranking``, or of a type of :data:`GLOBAL_RANKING`)."""
    found = []
    if hasattr(node, 'items'):
        if 'global_ranking' in node or node.get('type') in GLOBAL_RANKING:
            found.append((path, bool(node.get('global_ranking', False))))
        for key, value in node.items():
            found += ranking_losses(value, f'{path}.{key}')
    elif isinstance(node, (list, tuple)):
        for i, value in enumerate(node):
            found += ranking_losses(value, f'{path}[{i}]')
    return found


def _describe(plan: BatchPlan) -> str:
    how = (f'auto_scale_lr: x {plan.total}/{plan.base_batch} = '
           f'x {plan.factor:g}' if plan.scaled else
           'auto_scale_lr off: lr as written')
    return (f'{plan.processes} process(es) x {plan.per_process} = total '
            f'batch {plan.total}, lr {plan.lr:g} ({how})')


def parse_args(argv: Optional[Sequence[str]] = None):
    from mmengine.config import DictAction
    parser = argparse.ArgumentParser(
        description='The total batch and lr MMEngine trains a config with.')
    parser.add_argument('config')
    parser.add_argument('--processes', type=int, nargs='+', default=[1, 2, 8],
                        help='world sizes to resolve (default: 1 2 8)')
    parser.add_argument('--total-batch', type=int,
                        help='split this total batch over the processes '
                        '(what tools/dist_train.sh --total-batch does)')
    parser.add_argument('--print-options', action='store_true',
                        help='print only the KEY=VALUE options of '
                        '--total-batch for the one --processes value')
    parser.add_argument('--auto-scale-lr', action='store_true',
                        help="as MMDetection's tools/train.py")
    parser.add_argument('--cfg-options', nargs='+', action=DictAction,
                        default={}, help='as tools/train.py')
    return parser.parse_args(argv)


def load_config(path: str):
    """``Config.fromfile`` without importing ``custom_imports`` (no wait for
    torch); ``mmdet_rankloss`` is imported only for a config whose bases
    name ``mmdet_rankloss::``."""
    from mmengine.config import Config
    try:
        return Config.fromfile(path, import_custom_modules=False)
    except AssertionError as e:
        if 'mmdet_rankloss' not in str(e):
            raise
    import mmdet_rankloss  # noqa: F401  (registers mmdet_rankloss::)
    return Config.fromfile(path, import_custom_modules=False)


def main(argv: Optional[Sequence[str]] = None) -> int:
    args = parse_args(argv)
    cfg = load_config(args.config)
    if args.cfg_options:
        cfg.merge_from_dict(args.cfg_options)
    if args.print_options:
        if args.total_batch is None or len(args.processes) != 1:
            raise SystemExit('--print-options needs --total-batch and one '
                             '--processes value')
        try:
            options = total_batch_options(cfg, args.total_batch,
                                          args.processes[0])
        except ValueError as e:
            raise SystemExit(f'--total-batch {args.total_batch}: {e}')
        print(' '.join(format_options(options)))
        plan = resolve_batch(cfg, args.processes[0], options,
                             args.auto_scale_lr)
        print(f'[total batch] {args.config}: {_describe(plan)}',
              file=sys.stderr)
        _warn_local_ranking(cfg, plan)
        return 0
    for n in args.processes:
        options = {}
        if args.total_batch is not None:
            try:
                options = total_batch_options(cfg, args.total_batch, n)
            except ValueError as e:
                print(f'{n} process(es): {e}')
                continue
        plan = resolve_batch(cfg, n, options, args.auto_scale_lr)
        extra = f"  [--cfg-options {' '.join(format_options(options))}]" \
            if options else ''
        print(_describe(plan) + extra)
    return 0


def _warn_local_ranking(cfg, plan: BatchPlan) -> None:
    """A rank loss that ranks each process's slice only, when the batch is
    split: the loss differs from the one-process loss on the total batch."""
    if plan.processes == 1:
        return
    for path, global_ranking in ranking_losses(_get(cfg, 'model') or {}):
        if not global_ranking:
            print(f'[total batch] note: {path} ranks each process\'s '
                  f'{plan.per_process} image(s) only; '
                  f'--cfg-options {path}.global_ranking=True ranks the '
                  'whole batch of '
                  f'{plan.total} as one process does', file=sys.stderr)


if __name__ == '__main__':
    sys.exit(main())
