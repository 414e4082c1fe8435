"""Checkpoint faults: a kill while writing, truncated files, pickled code.

The checkpoints come from MMEngine's Runner (a small model, our resume
hooks), loaded the way ``--resume`` and ``load_from`` load them
(MMEngine's ``_load_checkpoint`` with the patch ``checkpoint_loader`` of
``mmdet_rankloss.patches``: the fixture ``checked_loader``);
the training script enables every patch of ``mmdet_rankloss.patches``
(the atomic checkpoint writes, the checked loader) as ``tools/train.py``
does.
"""
import os
import os.path as osp
import pickle
import subprocess
import sys
import textwrap

import numpy as np
import pytest
import torch
from mmengine.runner.checkpoint import _load_checkpoint

from mmdet_rankloss.utils import (CorruptCheckpointError,
                                  UnsafeCheckpointError, checkpoint_globals)

ROOT = osp.dirname(osp.dirname(osp.dirname(osp.abspath(__file__))))

# A small Runner: 2 epochs of 3 iterations, a checkpoint per epoch. KILL
# names a checkpoint during whose write the process SIGKILLs itself (after
# the bytes are written, before the rename that publishes them); KEEP is
# the CheckpointHook's max_keep_ckpts.
SCRIPT = textwrap.dedent('''
    import os, signal, sys
    import torch, torch.nn as nn
    from mmengine.model import BaseModel
    from mmengine.runner import Runner
    import mmdet_rankloss
    from mmdet_rankloss import patches
    patches.enable_all()  # as tools/train.py does

    work_dir, max_epochs, resume, kill, keep = sys.argv[1:6]

    if kill != 'none':
        replace = os.replace
        def killing_replace(src, dst):
            if dst.endswith(kill):
                os.kill(os.getpid(), signal.SIGKILL)
            replace(src, dst)
        patches.os.replace = killing_replace

    class Model(BaseModel):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(4, 1)
        def forward(self, inputs, targets, mode='tensor'):
            loss = (self.fc(inputs) - targets).pow(2).mean()
            return dict(loss=loss) if mode == 'loss' else loss

    torch.manual_seed(0)
    data = [dict(inputs=torch.randn(4), targets=torch.randn(1))
            for _ in range(12)]
    runner = Runner(
        model=Model(), work_dir=work_dir,
        train_dataloader=dict(dataset=data, batch_size=4, num_workers=0,
                              sampler=dict(type='DefaultSampler',
                                           shuffle=True),
                              collate_fn=dict(type='default_collate')),
        optim_wrapper=dict(optimizer=dict(type='SGD', lr=0.1)),
        train_cfg=dict(by_epoch=True, max_epochs=int(max_epochs)),
        default_hooks=dict(checkpoint=dict(type='CheckpointHook',
                                           interval=1,
                                           max_keep_ckpts=int(keep))),
        custom_hooks=[dict(type='RandomStateHook')],
        randomness=dict(seed=0), resume=resume == 'resume',
        default_scope='mmdet')
    runner.train()
    print('finished at epoch', runner.epoch)
''')


def run_script(tmp_path, work_dir, max_epochs, resume=False, kill='none',
               keep=-1):
    script = tmp_path / 'train_toy.py'
    script.write_text(SCRIPT)
    env = dict(os.environ, OMP_NUM_THREADS='1')
    env['PYTHONPATH'] = ROOT + os.pathsep + env.get('PYTHONPATH', '')
    return subprocess.run(
        [sys.executable, str(script), str(work_dir), str(max_epochs),
         'resume' if resume else 'new', kill, str(keep)],
        env=env, capture_output=True, text=True, timeout=300)


@pytest.fixture(scope='module')
def killed(tmp_path_factory):
    """A run SIGKILLed while writing epoch_2.pth, then resumed."""
    tmp = tmp_path_factory.mktemp('kill')
    work = tmp / 'work'
    proc = run_script(tmp, work, 2, kill='epoch_2.pth')
    listing = sorted(os.listdir(work))
    last = (work / 'last_checkpoint').read_text()
    resumed = run_script(tmp, work, 2, resume=True)
    return proc, listing, last, resumed, work


@pytest.mark.slow
def test_kill_during_write_leaves_previous_checkpoint(killed):
    proc, listing, last, _, _ = killed
    assert proc.returncode == -9, proc.stderr[-3000:]
    assert 'epoch_1.pth' in listing and 'epoch_2.pth' not in listing
    assert any(name.startswith('epoch_2.pth.tmp-') for name in listing)
    assert last.endswith('epoch_1.pth')


@pytest.mark.slow
def test_resume_after_kill_uses_previous_checkpoint(killed):
    _, _, _, resumed, work = killed
    out = resumed.stdout + resumed.stderr
    assert resumed.returncode == 0, out[-3000:]
    assert 'resumed epoch: 1, iter: 3' in out
    assert 'finished at epoch 2' in out
    assert osp.isfile(work / 'epoch_2.pth')


@pytest.mark.slow
def test_keeping_one_checkpoint_loses_it_to_a_kill(tmp_path):
    """max_keep_ckpts=1: MMEngine's CheckpointHook deletes epoch_1.pth
    *before* it writes epoch_2.pth, so a kill during that write leaves no
    published checkpoint (only the unpublished temporary file), and
    --resume stops with an error naming the checkpoint that is gone
    (last_checkpoint still points to it): nothing resumes into a wrong
    state, but the run must start again."""
    work = tmp_path / 'work'
    proc = run_script(tmp_path, work, 2, kill='epoch_2.pth', keep=1)
    assert proc.returncode == -9, proc.stderr[-3000:]
    listing = sorted(os.listdir(work))
    assert not any(name.endswith('.pth') for name in listing), listing
    assert any(name.startswith('epoch_2.pth.tmp-') for name in listing)
    last = (work / 'last_checkpoint').read_text()
    assert last.endswith('epoch_1.pth')
    resumed = run_script(tmp_path, work, 2, resume=True, keep=1)
    assert resumed.returncode != 0
    assert last in resumed.stderr and 'finished' not in resumed.stdout


@pytest.fixture
def checked_loader(mmengine_patches):
    """MMEngine's local loader through the patch ``checkpoint_loader``
    (the conftest fixture ``mmengine_patches`` applies it)."""
    return _load_checkpoint


@pytest.fixture(scope='module')
def checkpoint(killed):
    """The complete epoch-1 checkpoint the killed run left."""
    return killed[-1] / 'epoch_1.pth'


@pytest.mark.slow
def test_our_checkpoints_load_weights_only(checkpoint, checked_loader):
    with torch.serialization.safe_globals(checkpoint_globals()):
        ckpt = torch.load(str(checkpoint), weights_only=True)
    assert {'state_dict', 'optimizer', 'message_hub', 'random_state'} <= set(
        ckpt)
    assert checked_loader(str(checkpoint))['meta']['epoch'] == 1


def cut(checkpoint, tmp_path, keep):
    data = checkpoint.read_bytes()
    keep = keep if keep >= 0 else len(data) + keep
    path = tmp_path / 'cut.pth'
    path.write_bytes(data[:keep])
    return path


@pytest.mark.slow
@pytest.mark.parametrize('keep', [0, 1, 64, 1000, -1000, -1],
                         ids=lambda k: f'keep{k}')
def test_truncated_checkpoint_names_the_file(checkpoint, checked_loader,
                                            tmp_path, keep):
    path = cut(checkpoint, tmp_path, keep)
    with pytest.raises(CorruptCheckpointError,
                       match=rf'checkpoint {path} \(\d+ bytes\) is truncated'):
        checked_loader(str(path))


@pytest.mark.parametrize('seed', range(64))
def test_garbage_checkpoint_names_the_file(checked_loader, tmp_path, seed):
    """Random bytes fail in many ways inside torch.load: of these 64,
    54 raise UnpicklingError, 5 IndexError (a pop from the unpickler's
    empty stack; seed 13), 4 UnicodeDecodeError (seed 5), 1 KeyError (seed
    3). Each is reported as a corrupt checkpoint naming the file (one
    os.urandom draw used to find the rarer ones by chance: a flaky test)."""
    path = tmp_path / 'garbage.pth'
    path.write_bytes(np.random.RandomState(seed).bytes(4096))
    with pytest.raises(CorruptCheckpointError, match=rf"checkpoint {path} "):
        checked_loader(str(path))


def test_missing_checkpoint_names_the_file(checked_loader, tmp_path):
    with pytest.raises(FileNotFoundError, match='nothere.pth'):
        checked_loader(str(tmp_path / 'nothere.pth'))


class Payload:
    """Unpickling this object would create a file (stands for any code)."""

    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return (open, (self.marker, 'w'))


@pytest.mark.slow
def test_pickled_code_is_refused_not_run(checkpoint, checked_loader,
                                        tmp_path):
    marker = tmp_path / 'EXECUTED'
    ckpt = torch.load(str(checkpoint), weights_only=False)
    ckpt['meta']['extra'] = Payload(str(marker))
    path = tmp_path / 'evil.pth'
    torch.save(ckpt, str(path))
    with pytest.raises(UnsafeCheckpointError,
                       match=rf'{path} holds a pickled object .*NOT '
                       r'executed.*open') as info:
        checked_loader(str(path))
    assert isinstance(info.value, pickle.UnpicklingError)
    assert not marker.exists()


@pytest.mark.slow
def test_resume_from_truncated_checkpoint_fails_clearly(checkpoint, tmp_path):
    path = cut(checkpoint, tmp_path, len(checkpoint.read_bytes()) // 2)
    work = tmp_path / 'work'
    work.mkdir()
    (work / 'last_checkpoint').write_text(str(path))
    proc = run_script(tmp_path, work, 2, resume=True)
    assert proc.returncode != 0
    assert f'CorruptCheckpointError: checkpoint {path}' in proc.stderr


@pytest.fixture
def small_checkpoint(tmp_path):
    """A valid, tiny ``torch.save`` checkpoint."""
    path = tmp_path / 'small.pth'
    torch.save(dict(state_dict=dict(w=torch.ones(3)), meta=dict(epoch=1)),
               str(path))
    return path


@pytest.mark.parametrize('device', ['cuda', 'cuda:1', 'xpu', 'mps'])
def test_unavailable_device_is_not_a_corrupt_checkpoint(
        checked_loader, small_checkpoint, device):
    """A good file loaded with ``map_location`` naming a device that is not
    there fails with torch's own error (it names the device), not with
    CorruptCheckpointError's advice to resume from the previous one."""
    backend = getattr(torch.backends, 'mps', None) if device == 'mps' else \
        getattr(torch, device.split(':')[0], None)
    if backend is not None and backend.is_available():
        pytest.skip(f'{device} is available here')
    with pytest.raises(RuntimeError) as info:
        checked_loader(str(small_checkpoint), map_location=device)
    assert not isinstance(info.value, CorruptCheckpointError), info.value
    assert 'corrupt' not in str(info.value)
    # the same file loads on the CPU
    assert checked_loader(str(small_checkpoint),
                          map_location='cpu')['meta']['epoch'] == 1


@pytest.mark.parametrize('kind', ['OutOfMemoryError', 'RuntimeError',
                                  'cpu'])
def test_out_of_memory_is_not_a_corrupt_checkpoint(
        checked_loader, small_checkpoint, monkeypatch, kind):
    """An out-of-memory error while loading (torch's OutOfMemoryError, an
    older plain RuntimeError, the CPU allocator's) is raised unchanged."""
    error = {
        'OutOfMemoryError': lambda: torch.cuda.OutOfMemoryError(
            'CUDA out of memory. Tried to allocate 20.00 MiB'),
        'RuntimeError': lambda: RuntimeError('CUDA error: out of memory'),
        'cpu': lambda: RuntimeError(
            "[enforce fail at alloc_cpu.cpp:117] data. DefaultCPUAllocator: "
            "can't allocate memory: you tried to allocate 1073741824 bytes"),
    }[kind]()

    def load(*args, **kwargs):
        raise error

    monkeypatch.setattr(torch, 'load', load)
    with pytest.raises(RuntimeError) as info:
        checked_loader(str(small_checkpoint), map_location='cpu')
    assert info.value is error


def test_other_errors_on_an_intact_file_are_not_corruption(
        checked_loader, small_checkpoint, monkeypatch):
    """An error torch's message does not classify, raised while loading an
    intact archive, is raised unchanged; the same error on a damaged file
    is a corrupt checkpoint."""
    error = RuntimeError('some new torch failure')

    def load(*args, **kwargs):
        raise error

    monkeypatch.setattr(torch, 'load', load)
    with pytest.raises(RuntimeError) as info:
        checked_loader(str(small_checkpoint))
    assert info.value is error
    data = small_checkpoint.read_bytes()
    damaged = small_checkpoint.parent / 'damaged.pth'
    damaged.write_bytes(data[:len(data) // 2])
    with pytest.raises(CorruptCheckpointError, match=str(damaged)):
        checked_loader(str(damaged))


@pytest.mark.parametrize('keep', [0, 1, 64, 200, -100, -1],
                         ids=lambda k: f'keep{k}')
def test_truncated_small_checkpoint_names_the_file(
        checked_loader, small_checkpoint, tmp_path, keep):
    """The fast twin of test_truncated_checkpoint_names_the_file (a tiny
    torch.save file, no Runner)."""
    path = cut(small_checkpoint, tmp_path, keep)
    with pytest.raises(CorruptCheckpointError,
                       match=rf'checkpoint {path} \(\d+ bytes\) is truncated'):
        checked_loader(str(path))

