"""Pre-trains DigitsVOC's R18-w32 backbone as a classifier of printed glyphs.

The stand-in for ImageNet (:mod:`rankloss_lab.datasets.glyphs`), fresh
renders each epoch; SGD with label smoothing, one warm-up epoch then cosine
to zero. OUT holds the backbone's ``state_dict`` for ``init_cfg=dict(
type='Pretrained', checkpoint=OUT)`` (``configs/digitsvoc/*-glyphs_*.py``)
and the held-out top-1, also in ``OUT.json``::

    python tools/misc/pretrain_backbone.py checkpoints/r18-w32_glyphs.pth
"""
import argparse
import json
import math
import os
import os.path as osp
import time

import matplotlib
import numpy as np
import PIL
import torch
import torch.nn.functional as F

from rankloss_lab.datasets.glyphs import GLYPH_CLASSES, make_glyph_set
from rankloss_lab.runner import clock

HELD_OUT_SEED = 20200325  # no training epoch draws with this seed
# MMDetection's DetDataPreprocessor defaults (RGB order)
MEAN = (123.675, 116.28, 103.53)
STD = (58.395, 57.12, 57.375)


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('out', help='checkpoint to write (.pth)')
    parser.add_argument('--epochs', type=int, default=5)
    parser.add_argument('--images-per-epoch', type=int, default=30000)
    parser.add_argument('--held-out', type=int, default=3100,
                        help='held-out renders for the top-1 accuracy')
    parser.add_argument('--batch-size', type=int, default=128)
    parser.add_argument('--lr', type=float, default=0.2)
    parser.add_argument('--size', type=int, default=64)
    parser.add_argument('--seed', type=int, default=0)
    parser.add_argument('--threads', type=int, default=None,
                        help='torch intra-op threads (default: torch\'s)')
    parser.add_argument('--log-interval', type=int, default=50)
    parser.add_argument('--preview', default=None,
                        help='also write a grid of 4 x 16 held-out renders '
                        'to this image file (.jpg or .png)')
    args = parser.parse_args(argv)
    for name in ('epochs', 'images_per_epoch', 'held_out', 'batch_size'):
        if getattr(args, name) < 1:
            parser.error(f'--{name.replace("_", "-")} must be >= 1, got '
                         f'{getattr(args, name)}')
    if not args.out.endswith('.pth'):
        parser.error(f'out must end in .pth, got {args.out!r}')
    return args


class GlyphClassifier(torch.nn.Module):
    """The detectors' backbone, a global average pool and a linear layer."""

    def __init__(self, num_classes: int = len(GLYPH_CLASSES)):
        super().__init__()
        from mmdet.models.backbones import ResNet
        self.backbone = ResNet(depth=18, base_channels=32, out_indices=(3, ),
                               frozen_stages=-1, norm_eval=False)
        self.fc = torch.nn.Linear(256, num_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc(self.backbone(x)[-1].mean(dim=(2, 3)))


def to_input(images: np.ndarray) -> torch.Tensor:
    """(N, H, W, 3) uint8 RGB -> (N, 3, H, W) normalised floats."""
    x = torch.from_numpy(images).permute(0, 3, 1, 2).float()
    mean = torch.tensor(MEAN).view(1, 3, 1, 1)
    std = torch.tensor(STD).view(1, 3, 1, 1)
    return (x - mean) / std


@torch.no_grad()
def accuracy(model: torch.nn.Module, images: np.ndarray,
             labels: np.ndarray, chunk: int = 500) -> dict:
    """Top-1 accuracy over all classes and over the ten digits."""
    model.eval()
    pred = torch.cat([model(to_input(images[i:i + chunk])).argmax(1)
                      for i in range(0, len(images), chunk)]).numpy()
    model.train()
    right = pred == labels
    digits = labels < 10
    return dict(top1=float(right.mean()),
                top1_digits=float(right[digits].mean()))


def lr_at(step: int, steps_per_epoch: int, total: int, base: float) -> float:
    """Linear warm-up over the first epoch, then cosine to zero."""
    if step < steps_per_epoch:
        return base * (step + 1) / steps_per_epoch
    t = (step - steps_per_epoch) / max(1, total - steps_per_epoch)
    return base * 0.5 * (1 + math.cos(math.pi * t))


def write_preview(path: str, images: np.ndarray, rows: int = 4,
                  cols: int = 16) -> None:
    """A grid of the first ``rows x cols`` images."""
    from PIL import Image
    n = min(len(images), rows * cols)
    rows = -(-n // cols)
    h, w = images.shape[1:3]
    grid = np.zeros((rows * h, cols * w, 3), np.uint8)
    for i in range(n):
        r, c = divmod(i, cols)
        grid[r * h:(r + 1) * h, c * w:(c + 1) * w] = images[i]
    os.makedirs(osp.dirname(osp.abspath(path)), exist_ok=True)
    Image.fromarray(grid).save(path, quality=90)


def save(path: str, model: GlyphClassifier, meta: dict) -> None:
    """Writes the backbone's weights and ``meta`` atomically."""
    os.makedirs(osp.dirname(osp.abspath(path)), exist_ok=True)
    state = {k: v.detach().clone()
             for k, v in model.backbone.state_dict().items()}
    tmp = path + '.tmp'
    torch.save(dict(state_dict=state, meta=meta), tmp)
    os.replace(tmp, path)
    with open(osp.splitext(path)[0] + '.json', 'w') as f:
        json.dump(meta, f, indent=1)


def main(argv=None) -> dict:
    args = parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    model = GlyphClassifier()
    params = list(model.parameters())
    optim = torch.optim.SGD([
        dict(params=[p for p in params if p.ndim > 1], weight_decay=1e-4),
        dict(params=[p for p in params if p.ndim <= 1], weight_decay=0.0)],
                            lr=args.lr, momentum=0.9, nesterov=True)
    held_images, held_labels = make_glyph_set(args.held_out, HELD_OUT_SEED,
                                              args.size)
    if args.preview:
        write_preview(args.preview, held_images)
        print(f'[pretrain] preview of the held-out renders: {args.preview}')
    steps_per_epoch = math.ceil(args.images_per_epoch / args.batch_size)
    total = steps_per_epoch * args.epochs
    log, step, start = [], 0, time.time()
    for epoch in range(args.epochs):
        images, labels = make_glyph_set(args.images_per_epoch,
                                        args.seed * 1000 + epoch, args.size)
        order = torch.randperm(len(images))
        running = []
        for i in range(steps_per_epoch):
            idx = order[i * args.batch_size:(i + 1) * args.batch_size].numpy()
            for group in optim.param_groups:
                group['lr'] = lr_at(step, steps_per_epoch, total, args.lr)
            loss = F.cross_entropy(model(to_input(images[idx])),
                                   torch.from_numpy(labels[idx]),
                                   label_smoothing=0.1)
            optim.zero_grad()
            loss.backward()
            optim.step()
            running.append(loss.item())
            step += 1
            if step % args.log_interval == 0 or step == total:
                spent = time.time() - start
                print(f'[pretrain] epoch {epoch + 1}/{args.epochs} iter '
                      f'{step}/{total} loss {np.mean(running[-50:]):.3f} lr '
                      f'{optim.param_groups[0]["lr"]:.4f} elapsed '
                      f'{clock(spent)} ETA '
                      f'{clock(spent / step * (total - step))}', flush=True)
        acc = accuracy(model, held_images, held_labels)
        log.append(dict(epoch=epoch + 1, loss=float(np.mean(running)), **acc))
        print(f'[pretrain] epoch {epoch + 1}: held-out top-1 '
              f'{100 * acc["top1"]:.1f} % '
              f'(digits {100 * acc["top1_digits"]:.1f} %)', flush=True)
    meta = dict(
        what='R18-w32 backbone (mmdet ResNet depth 18, base_channels 32) '
        'pretrained as a 62-class classifier of printed glyphs '
        '(rankloss_lab.datasets.glyphs)',
        classes=GLYPH_CLASSES, held_out_seed=HELD_OUT_SEED,
        held_out_images=args.held_out, top1=log[-1]['top1'],
        top1_digits=log[-1]['top1_digits'], epochs=log,
        settings=dict(vars(args)), seconds=round(time.time() - start, 1),
        threads=torch.get_num_threads(), torch=str(torch.__version__),
        # the renders depend on these (matplotlib's fonts, drawn by Pillow)
        render=dict(numpy=np.__version__, pillow=PIL.__version__,
                    matplotlib=matplotlib.__version__))
    save(args.out, model, meta)
    print(f'[pretrain] backbone weights: {args.out} (held-out top-1 '
          f'{100 * meta["top1"]:.1f} %); log: '
          f'{osp.splitext(args.out)[0]}.json')
    return meta


if __name__ == '__main__':
    main()
