"""Which scores should the RaMBO AP loss rank? Gradient density and direction.

Builds Faster R-CNN-like RoI batches (2 images x 512 RoIs, 20 classes, 25 %
foreground) whose classification logits come from a stock MMDetection
``Shared2FCBBoxHead`` (fc_cls initialised normal std 0.01) fed with random
RoI features, in two states:

* ``fresh``: the head as initialised, features unrelated to the labels;
* ``partly trained``: features with a class-dependent mean and a head trained
  a few dozen cross-entropy steps on them (the script prints its accuracy).

For each state it fills the score memory with ``tau`` batches, then takes the
gradient of ``RaMBOAPLoss`` (margin 0.15, lambda 0.5, 2:1 weights) on one more
batch, for every score space ('logits', 'softmax', 'sigmoid'), integer or
normalised ranks, and with or without Algorithm 1 through the rank among
positives (``positive_rank_grad``). It reports the share of ranked scores and
of logits that receive any gradient, and the share of positive scores pushed
up / down and of negative scores pushed down / up (sign of the gradient of
the ranked score; gradient descent moves against it).

It then trains a fresh fc_cls on frozen features for each score space (a
linear probe; cross-entropy for reference) and reports held-out mAP: does
the loss train at all with the paper's margin and lambda?

Run (CPU, about ten minutes on a busy two-core VM)::

    python -m rankloss_lab.analysis.score_space_density [--seed 0] [--lambda-val 0.5]
"""
import argparse
import copy
import itertools
import logging
import os.path as osp
import time
from functools import partial

import torch
import torch.nn.functional as F

from mmdet.registry import MODELS
from mmengine.logging import MMLogger
from mmdet_rankloss.losses import RaMBOAPLoss, average_precision_loss

NUM_CLASSES = 20
ROIS_PER_IMAGE = 512
IMAGES = 2
FG_FRACTION = 0.25


def build_head() -> torch.nn.Module:
    """The box head of MMDetection's Faster R-CNN R50 FPN
    (``Shared2FCBBoxHead``, C + 1 logits) for 20 classes, freshly
    initialised."""
    import mmdet
    from mmengine.config import Config
    model = Config.fromfile(
        osp.join(osp.dirname(mmdet.__file__), '.mim', 'configs', '_base_',
                 'models', 'faster-rcnn_r50_fpn.py')).model
    head = MODELS.build(
        dict(model.roi_head.bbox_head, num_classes=NUM_CLASSES))
    # silence the per-parameter init report
    MMLogger.get_current_instance().setLevel(logging.WARNING)
    head.init_weights()
    return head


def sample_labels(num_rois: int, gen: torch.Generator) -> torch.Tensor:
    """Labels as the RandomSampler gives them: 25 % foreground per image."""
    labels = torch.full((num_rois, ), NUM_CLASSES, dtype=torch.long)
    num_fg = int(num_rois * FG_FRACTION)
    fg = torch.randperm(num_rois, generator=gen)[:num_fg]
    labels[fg] = torch.randint(0, NUM_CLASSES, (num_fg, ), generator=gen)
    return labels


def roi_features(labels, prototypes, strength, gen):
    """RoI features N(0, 1), plus ``strength`` x a per-class prototype."""
    noise = torch.randn(len(labels), 256, 7, 7, generator=gen)
    return noise + strength * prototypes[labels]


def make_batches(head, prototypes, strength, count, gen):
    batches = []
    with torch.no_grad():
        for _ in range(count):
            labels = sample_labels(IMAGES * ROIS_PER_IMAGE, gen)
            cls_score, _ = head(roi_features(labels, prototypes, strength,
                                             gen))
            batches.append((cls_score, labels))
    return batches


def train_with_ce(head, prototypes, strength, steps, gen):
    """A few CE steps so that the head is partly trained; returns fg acc."""
    params = [p for n, p in head.named_parameters() if 'fc_reg' not in n]
    optim = torch.optim.SGD(params, lr=0.02, momentum=0.9)
    for _ in range(steps):
        labels = sample_labels(256, gen)
        cls_score, _ = head(roi_features(labels, prototypes, strength, gen))
        optim.zero_grad()
        F.cross_entropy(cls_score, labels).backward()
        optim.step()
    return foreground_accuracy(head, prototypes, strength, gen)


def foreground_accuracy(head, prototypes, strength, gen):
    with torch.no_grad():
        labels = sample_labels(1024, gen)
        cls_score, _ = head(roi_features(labels, prototypes, strength, gen))
    fg = labels < NUM_CLASSES
    return float((cls_score[fg].argmax(1) == labels[fg]).float().mean())


def head_output(cls_score, space):
    """A sigmoid-space head has C channels: the first C of the logits."""
    return cls_score[:, :NUM_CLASSES] if space == 'sigmoid' else cls_score


def ranked_scores(cls_score, space):
    """The (N, C) scores that ``RaMBOAPLoss(score_space=space)`` ranks."""
    if space == 'softmax':
        return cls_score.softmax(-1)[:, :NUM_CLASSES]
    if space == 'sigmoid':  # what a C-channel head gives: first C logits
        return cls_score[:, :NUM_CLASSES].sigmoid()
    return cls_score[:, :NUM_CLASSES]


def measure(batches, space, normalize, positive_rank_grad, args):
    """Gradient statistics of the last batch, memory filled by the others.

    The ranked scores are computed here and handed to the loss in the
    'logits' space (with a dummy background column), which ranks its input
    as is: the same loss, but the gradient w.r.t. the ranked scores is
    observable. The module's own diagnostics must agree; checked below.
    """
    make = dict(memory=args.tau, margin=args.margin,
                lambda_val=args.lambda_val, normalize_ranks=normalize,
                positive_rank_grad=positive_rank_grad)
    probe = RaMBOAPLoss(score_space='logits', **make)
    module = RaMBOAPLoss(score_space=space, **make)
    for cls_score, labels in batches[:-1]:
        probe(F.pad(ranked_scores(cls_score, space), (0, 1)), labels)
        module(head_output(cls_score, space), labels)
    cls_score, labels = batches[-1]
    logits = cls_score.clone().requires_grad_(True)
    scores = ranked_scores(logits, space)
    scores.retain_grad()
    out = probe(F.pad(scores, (0, 1)), labels)
    sum(v for k, v in out.items() if 'loss' in k).backward()
    direct = module(
        head_output(cls_score, space).clone().requires_grad_(True), labels)
    for key in ('loss_rambo_map', 'loss_rambo_apc', 'rambo_pos_grad_frac'):
        assert abs(float(direct[key].detach()) -
                   float(out[key].detach())) < 1e-6, key

    grad = scores.grad
    pos = F.one_hot(labels, NUM_CLASSES + 1)[:, :NUM_CLASSES].bool()
    used = head_output(logits.grad, space)
    return dict(
        scores_with_grad=float((grad != 0).float().mean()),
        logits_with_grad=float((used != 0).float().mean()),
        pos_up=float((grad[pos] < 0).float().mean()),
        pos_down=float((grad[pos] > 0).float().mean()),
        neg_down=float((grad[~pos] > 0).float().mean()),
        neg_up=float((grad[~pos] < 0).float().mean()),
        batch_map=1 - float(average_precision_loss(
            scores.detach().t(), pos.t(), margin=0.0)))


def shared_features(head, prototypes, strength, count, gen):
    """Frozen output of the head's shared fcs for ``count`` batches."""
    batches = []
    with torch.no_grad():
        for _ in range(count):
            labels = sample_labels(IMAGES * ROIS_PER_IMAGE, gen)
            x = roi_features(labels, prototypes, strength, gen).flatten(1)
            for fc in head.shared_fcs:
                x = fc(x).relu()
            batches.append((x, labels))
    return batches


def probe_map(activation, fc, features, labels):
    """Per-class AP of the test-time scores over held-out RoIs, averaged."""
    from sklearn.metrics import average_precision_score
    with torch.no_grad():
        scores = activation(fc(features))
    return sum(
        average_precision_score((labels == c).numpy(), scores[:, c].numpy())
        for c in range(NUM_CLASSES)) / NUM_CLASSES


def linear_probe(train, test, loss_cfg, lr, args):
    """Train a fresh fc_cls (normal std 0.01) on frozen features.

    SGD with momentum 0.9; ``loss_cfg`` None means cross-entropy. Returns
    the held-out mAP (with the loss's test-time activation) after every
    ``args.probe_steps // 3`` steps, and the trained layer.
    """
    torch.manual_seed(args.seed)
    if loss_cfg is None:
        loss, activation = None, partial(F.softmax, dim=-1)
    else:
        loss = RaMBOAPLoss(**{
            **dict(memory=args.tau, margin=args.margin,
                   lambda_val=args.lambda_val),
            **loss_cfg
        })
        activation = loss.get_activation
    channels = NUM_CLASSES + 1 if loss is None else loss.get_cls_channels(
        NUM_CLASSES)
    fc = torch.nn.Linear(train[0][0].shape[1], channels)
    torch.nn.init.normal_(fc.weight, std=0.01)
    torch.nn.init.zeros_(fc.bias)
    optim = torch.optim.SGD(fc.parameters(), lr=lr, momentum=0.9)
    history = []
    for step in range(args.probe_steps):
        x, labels = train[step % len(train)]
        cls_score = fc(x)
        if loss is None:
            value = F.cross_entropy(cls_score, labels)
        else:
            out = loss(cls_score, labels)
            value = sum(v for k, v in out.items() if 'loss' in k)
        optim.zero_grad()
        value.backward()
        optim.step()
        if (step + 1) % max(args.probe_steps // 3, 1) == 0:
            history.append(probe_map(activation, fc, *test))
    return history, fc


def run_probes(train, test, args):
    every = max(args.probe_steps // 3, 1)
    print(f'\n# linear probe: fresh fc_cls on frozen shared-fc features '
          f'(class signal {args.strength}), {args.probe_steps} SGD steps of '
          f'{IMAGES * ROIS_PER_IMAGE} RoIs; held-out mAP after every {every} '
          f'steps, test-time activation of the loss unless stated; chance '
          f'is about {FG_FRACTION / NUM_CLASSES:.4f}')
    print('| loss | lr | held-out mAP |')
    print('|---|---|---|')
    lam = args.lambda_val
    variants = [
        ('cross-entropy', None, 0.02),
        ('RaMBO logits', dict(score_space='logits'), args.probe_lr),
        ('RaMBO softmax', dict(score_space='softmax'), args.probe_lr),
        ('RaMBO sigmoid', dict(score_space='sigmoid'), args.probe_lr),
        ('RaMBO logits, Alg. 1 also on the rank among positives',
         dict(score_space='logits', positive_rank_grad=True), args.probe_lr),
        (f'RaMBO logits, lambda {5 * lam:g}',
         dict(score_space='logits', lambda_val=5 * lam), args.probe_lr),
    ]
    for name, cfg, lr in variants:
        history, fc = linear_probe(train, test, cfg, lr, args)
        print(f"| {name} | {lr} | {' / '.join(f'{m:.3f}' for m in history)} "
              '|', flush=True)
        if cfg is not None and cfg['score_space'] == 'logits' and \
                not cfg.get('positive_rank_grad'):
            # the loss trains the order of each class's logit; a softmax
            # (the test-time activation) can reorder it: compare
            sigmoid = probe_map(lambda x: x[:, :NUM_CLASSES].sigmoid(), fc,
                                *test)
            print(f'| {name}, sigmoid of the C logits at test | {lr} | '
                  f'{sigmoid:.3f} (final) |', flush=True)


def percent(x):
    return f'{100 * x:.1f} %' if x >= 0.001 or x == 0 else f'{100 * x:.2f} %'


def gradient_table(head, prototypes, args):
    """Print the gradient statistics for both head states (the CE steps for
    the partly trained state modify ``head`` in place)."""
    gen = torch.Generator().manual_seed(args.seed)
    states = {}
    states['fresh'] = make_batches(head, prototypes, 0.0, args.tau + 1, gen)
    acc = train_with_ce(head, prototypes, args.strength, args.ce_steps, gen)
    states['partly trained'] = make_batches(head, prototypes, args.strength,
                                            args.tau + 1, gen)
    print(f'# {IMAGES} x {ROIS_PER_IMAGE} RoIs, {NUM_CLASSES} classes, '
          f'{int(FG_FRACTION * 100)} % fg, tau={args.tau}, '
          f'margin={args.margin}, lambda={args.lambda_val}; partly trained '
          f'head: {args.ce_steps} CE steps, fg accuracy {100 * acc:.0f} %')
    for name, batches in states.items():
        logits = batches[-1][0]
        print(f'# {name}: logit std {float(logits.std()):.3f}')
    header = ('| head | ranked scores | ranks | Alg. 1 on rank among '
              'positives | scores with grad | logits with grad | pos up | '
              'pos down | neg down | neg up | batch mAP |')
    print(header)
    print('|' + '---|' * (header.count('|') - 1))
    for name, batches in states.items():
        for space, normalize, prg in itertools.product(
                ('logits', 'softmax', 'sigmoid'), (False, True),
                (False, True)):
            r = measure(batches, space, normalize, prg, args)
            print(f"| {name} | {space} | {'rk / n' if normalize else 'rk'} "
                  f"| {'yes' if prg else 'no'} | "
                  f"{percent(r['scores_with_grad'])} | "
                  f"{percent(r['logits_with_grad'])} | "
                  f"{percent(r['pos_up'])} | {percent(r['pos_down'])} | "
                  f"{percent(r['neg_down'])} | {percent(r['neg_up'])} | "
                  f"{r['batch_map']:.3f} |", flush=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--seed', type=int, default=0)
    parser.add_argument('--tau', type=int, default=7)
    parser.add_argument('--margin', type=float, default=0.15)
    parser.add_argument('--lambda-val', type=float, default=0.5)
    parser.add_argument('--ce-steps', type=int, default=60,
                        help='CE steps for the partly trained head')
    parser.add_argument('--strength', type=float, default=0.2,
                        help='class signal in the partly trained features')
    parser.add_argument('--probe-steps', type=int, default=150,
                        help='linear-probe training steps (0: skip)')
    parser.add_argument('--probe-lr', type=float, default=1.0,
                        help='SGD learning rate of the RaMBO probes')
    parser.add_argument('--probe-only', action='store_true',
                        help='skip the gradient table')
    args = parser.parse_args()
    torch.manual_seed(args.seed)
    start = time.time()
    prototypes = torch.randn(
        NUM_CLASSES + 1, 256, 7, 7,
        generator=torch.Generator().manual_seed(args.seed))
    head = build_head()
    fresh_head = copy.deepcopy(head)  # the table trains ``head`` with CE
    if not args.probe_only:
        gradient_table(head, prototypes, args)
    if args.probe_steps:
        # own generator and the fresh head: the same probe with or without
        # the table
        gen = torch.Generator().manual_seed(args.seed + 1)
        train = shared_features(fresh_head, prototypes, args.strength, 30,
                                gen)
        test = shared_features(fresh_head, prototypes, args.strength, 4, gen)
        test = (torch.cat([x for x, _ in test]),
                torch.cat([y for _, y in test]))
        run_probes(train, test, args)
    print(f'# {time.time() - start:.0f} s')


if __name__ == '__main__':
    main()
