"""One training step of the RaMBO quickstart detector through MMEngine's
Runner: the whole batch on one process, or half of it on each of 2 gloo
processes (``torchrun``), to compare the parameter updates.

    python ddp_step_worker.py WORK_DIR DATA_ROOT INIT_CKPT BATCH_SIZE \
        [--launcher pytorch] [--global-ranking]

What is made equal so that the comparison measures the loss and the
gradient reduction, not randomness or normalisation:

* RoI and anchor sampling: ``SeededRandomSampler`` draws with its own
  fixed generator, so an image's sampled RoIs do not depend on which
  process's random stream reaches it first (in real training the draws
  differ by stream, a statistical difference, not a semantic one);
* no random flip, no shuffle (rank r gets image r, the single process
  images 0 and 1 in that order: the gathered RoIs are in the same order);
* BatchNorm with frozen statistics (``norm_eval=True``): with batch
  statistics each DDP process normalises by its own images (CPU has no
  SyncBatchNorm), which is a property of DDP, not of the loss;
* a constant learning rate (no warm-up), the same initial weights
  (``load_from``).
"""
import argparse
import os.path as osp
import sys

import torch

ROOT = osp.dirname(osp.dirname(osp.dirname(osp.abspath(__file__))))
CONFIG = osp.join(ROOT, 'configs', 'quickstart',
                  'faster-rcnn_r18-w32_fpn_rambo_toyvoc.py')


def register_seeded_sampler():
    """``SeededRandomSampler``: mmdet's RandomSampler with a generator of
    its own, reset at every draw (idempotent registration)."""
    from mmdet.models.task_modules.samplers import RandomSampler
    from mmdet.registry import TASK_UTILS
    if 'SeededRandomSampler' in TASK_UTILS.module_dict:
        return

    @TASK_UTILS.register_module()
    class SeededRandomSampler(RandomSampler):

        def random_choice(self, gallery, num):
            assert len(gallery) >= num
            perm = torch.randperm(
                len(gallery), generator=torch.Generator().manual_seed(0))
            gallery = torch.as_tensor(gallery)
            return gallery[perm[:num].to(gallery.device)]


def step_cfg(work_dir, data_root, init_ckpt, batch_size, global_ranking):
    """The quickstart config reduced to one deterministic step."""
    from mmengine.config import Config
    cfg = Config.fromfile(CONFIG)
    cfg.work_dir = work_dir
    cfg.load_from = init_ckpt
    cfg.model.backbone.norm_eval = True
    cfg.model.roi_head.bbox_head.loss_cls.global_ranking = global_ranking
    cfg.model.train_cfg.rpn.sampler.type = 'SeededRandomSampler'
    cfg.model.train_cfg.rcnn.sampler.type = 'SeededRandomSampler'
    cfg.train_dataloader.update(
        batch_size=batch_size, num_workers=0, persistent_workers=False,
        sampler=dict(type='DefaultSampler', shuffle=False))
    cfg.train_dataloader.dataset.data_root = data_root
    cfg.train_dataloader.dataset.pipeline = [
        t for t in cfg.train_dataloader.dataset.pipeline
        if t['type'] != 'RandomFlip'
    ]
    cfg.train_cfg = dict(type='EpochBasedTrainLoop', max_epochs=1)
    cfg.param_scheduler = []
    for split in ('val', 'test'):
        for key in (f'{split}_dataloader', f'{split}_cfg',
                    f'{split}_evaluator'):
            cfg[key] = None
    cfg.default_hooks.logger.interval = 1
    cfg.default_hooks.checkpoint = dict(type='CheckpointHook', interval=1)
    return cfg


def main(argv=None):
    parser = argparse.ArgumentParser()
    parser.add_argument('work_dir')
    parser.add_argument('data_root')
    parser.add_argument('init_ckpt')
    parser.add_argument('batch_size', type=int)
    parser.add_argument('--launcher', default='none')
    parser.add_argument('--global-ranking', action='store_true')
    args = parser.parse_args(argv)
    from mmengine.runner import Runner

    import mmdet_rankloss  # noqa: F401
    from rankloss_lab.cpu_distributed import (close_process_group,
                                              cpu_distributed_args)
    register_seeded_sampler()
    cfg = step_cfg(args.work_dir, args.data_root, args.init_ckpt,
                   args.batch_size, args.global_ranking)
    cfg.launcher = args.launcher
    if cpu_distributed_args(['--launcher', args.launcher])[2:]:
        # what tools/train.py adds on a machine without CUDA
        cfg.env_cfg.dist_cfg.backend = 'gloo'
        cfg.model_wrapper_cfg = dict(
            type='MMDistributedDataParallel', device_ids=None,
            broadcast_buffers=False)
    Runner.from_cfg(cfg).train()
    close_process_group()


if __name__ == '__main__':
    main()
