"""Distributed training on CPU-only machines through MMEngine's launcher,
which assumes GPUs (``torch.cuda.set_device``, ``nccl``, DDP
``device_ids``): gloo options and a no-op ``set_device``, and the group
closed while the interpreter lives (else gloo may abort a successful run
with exit code -6).
"""
from typing import List, Sequence

import torch

__all__ = ['cpu_distributed_args', 'close_process_group']


def _uses_pytorch_launcher(argv: Sequence[str]) -> bool:
    argv = list(argv)
    for i, arg in enumerate(argv):
        if arg == '--launcher' and i + 1 < len(argv):
            return argv[i + 1] != 'none'
        if arg.startswith('--launcher='):
            return arg.split('=', 1)[1] != 'none'
    return False


def cpu_distributed_args(argv: Sequence[str]) -> List[str]:
    """The tool's ``argv`` (without the program) plus ``--cfg-options`` for
    gloo and CPU DDP when a launcher runs without CUDA; else unchanged."""
    argv = list(argv)
    if torch.cuda.is_available() or not _uses_pytorch_launcher(argv):
        return argv

    def no_device(_device) -> None:
        """CPU processes have no device to select."""

    torch.cuda.set_device = no_device
    options = ['env_cfg.dist_cfg.backend=gloo',
               'model_wrapper_cfg.type=MMDistributedDataParallel',
               'model_wrapper_cfg.device_ids=None',
               'model_wrapper_cfg.broadcast_buffers=False']
    if '--cfg-options' in argv:
        at = argv.index('--cfg-options') + 1
        return argv[:at] + options + argv[at:]
    return argv + ['--cfg-options'] + options


def close_process_group() -> None:
    """Waits for every rank, frees the finished run's reference cycles (the
    DDP reducer holds the group), then destroys every process group; call
    it after a normal finish only (no-op outside a distributed run)."""
    import gc

    import torch.distributed as dist
    if dist.is_available() and dist.is_initialized():
        dist.barrier()
        gc.collect()
        dist.destroy_process_group()
