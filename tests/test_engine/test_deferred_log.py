"""DeferredLogHook through MMEngine's Runner: a model whose loss is
``RaMBOAPLoss(log_diagnostics=True)`` logs the same values, at every
iteration and in its checkpoints, with the hook as without it, and its
diagnostics are read once per log interval instead of once per key and
iteration."""
import copy
import sys

import pytest
import torch
import torch.nn as nn
from mmengine.logging import MessageHub
from mmengine.model import BaseModel
from mmengine.runner import Runner

import mmdet_rankloss  # noqa: F401  (registers the hook)
from mmdet_rankloss.losses import RaMBOAPLoss

DIAGNOSTICS = ('rambo_ap', 'rambo_grad_density', 'rambo_pos_grad_frac',
               'rambo_neg_grad_frac')


class RankedModel(BaseModel):
    """A linear classifier of 5 classes (and background) trained with the
    RaMBO AP loss and its diagnostics."""

    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(4, 6)
        self.loss_cls = RaMBOAPLoss(memory=2, log_diagnostics=True)

    def forward(self, inputs, labels, mode='tensor'):
        scores = self.fc(inputs)
        if mode == 'loss':
            return self.loss_cls(scores, labels)
        return scores


class Batches(torch.utils.data.Dataset):

    def __init__(self) -> None:
        gen = torch.Generator().manual_seed(3)
        self.x = torch.randn(64, 4, generator=gen)
        self.y = torch.randint(0, 6, (64, ), generator=gen)

    def __len__(self):
        return len(self.x)

    def __getitem__(self, i):
        return dict(inputs=self.x[i], labels=self.y[i])


def train(work_dir, hooks):
    torch.manual_seed(0)
    runner = Runner(
        model=RankedModel(),
        work_dir=str(work_dir),
        experiment_name=work_dir.name,
        train_dataloader=dict(
            dataset=Batches(),
            sampler=dict(type='DefaultSampler', shuffle=False),
            batch_size=8,
            num_workers=0,
            collate_fn=dict(type='default_collate')),
        optim_wrapper=dict(optimizer=dict(type='SGD', lr=0.1)),
        train_cfg=dict(by_epoch=False, max_iters=7),
        default_hooks=dict(
            checkpoint=dict(type='CheckpointHook', interval=2,
                            by_epoch=False),
            logger=dict(type='LoggerHook', interval=3)),
        custom_hooks=copy.deepcopy(hooks),
        default_scope='mmdet')
    runner.train()
    return runner


def histories(hub_state):
    return {
        key: buffer.data[0].tolist()
        for key, buffer in hub_state['log_scalars'].items()
        if key.startswith('train/') and 'time' not in key
    }


@pytest.mark.slow
def test_same_logs_one_read_per_interval(tmp_path, monkeypatch):
    updates, reads = [], []
    update_scalar = MessageHub.update_scalar

    def recording(self, key, value, *args, **kwargs):
        updates.append((key, isinstance(value, torch.Tensor)))
        return update_scalar(self, key, value, *args, **kwargs)

    tolist = torch.Tensor.tolist

    def counting(self):
        if sys._getframe(1).f_code.co_filename.endswith('hooks.py'):
            reads.append(self.numel())
        return tolist(self)

    monkeypatch.setattr(MessageHub, 'update_scalar', recording)
    plain = train(tmp_path / 'plain', [])
    per_step = [key for key, tensor in updates
                if tensor and key[6:] in DIAGNOSTICS]
    assert len(per_step) == 7 * len(DIAGNOSTICS)  # one read each
    updates.clear()
    monkeypatch.setattr(torch.Tensor, 'tolist', counting)
    deferred = train(tmp_path / 'deferred', [dict(type='DeferredLogHook')])
    monkeypatch.undo()
    assert not [key for key, tensor in updates if key[6:] in DIAGNOSTICS
                and tensor]
    # one read of all values kept: at the checkpoints of iterations 2, 4
    # and 7 and the logs of iterations 3 and 6 (4 diagnostics a step)
    assert reads == [2 * 4, 4, 4, 2 * 4, 4]
    assert histories(deferred.message_hub.state_dict()) == \
        histories(plain.message_hub.state_dict())
    for name in ('iter_2.pth', 'iter_4.pth'):
        saved = [
            histories(torch.load(str(tmp_path / run / name),
                                 weights_only=False)['message_hub'])
            for run in ('plain', 'deferred')
        ]
        assert saved[0] == saved[1] and len(
            saved[0]['train/rambo_ap']) == int(name[5])
