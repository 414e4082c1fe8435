"""Tests of the RaMBO AP loss: values vs sklearn, gradients, memory, mmdet."""
import pytest
import torch
from sklearn.metrics import average_precision_score

from mmdet.registry import MODELS
from mmdet_rankloss.losses import RaMBOAPLoss, rambo_ap_loss

DEVICES = ['cpu'] + (['cuda'] if torch.cuda.is_available() else [])
SPACES = ['sigmoid', 'softmax', 'logits']


def sk_ap(scores, labels):
    return average_precision_score(
        labels.cpu().numpy().ravel(),
        scores.detach().cpu().double().numpy().ravel())


def ranked(cls_score, space):
    """The scores each score space ranks, for the brute-force references."""
    num_classes = cls_score.shape[1] - (space != 'sigmoid')
    if space == 'softmax':
        return cls_score.double().softmax(-1)[:, :num_classes]
    if space == 'sigmoid':
        return cls_score.double().sigmoid()
    return cls_score.double()[:, :num_classes]


def total(out):
    return sum(v for k, v in out.items() if 'loss' in k)


# ----------------------------------------------------------- functional
@pytest.mark.parametrize('positive_rank_grad', [False, True])
def test_functional_equals_one_minus_sklearn_ap(positive_rank_grad):
    torch.manual_seed(0)
    scores = torch.randn(6, 40, dtype=torch.float64)
    labels = torch.rand(6, 40) < 0.3
    labels[:, 0] = True
    labels[5] = False  # a row without positives is skipped
    per_row = [1 - sk_ap(s, t) for s, t in zip(scores[:5], labels[:5])]
    for reduction, expected in (('mean', sum(per_row) / 5),
                                ('sum', sum(per_row))):
        loss = rambo_ap_loss(
            scores, labels, margin=0.0, reduction=reduction,
            positive_rank_grad=positive_rank_grad)
        assert loss.item() == pytest.approx(expected, abs=1e-12)


def test_functional_margin_is_eq14():
    torch.manual_seed(1)
    scores = torch.randn(50, dtype=torch.float64)
    labels = torch.rand(50) < 0.4
    shifted = scores + torch.where(labels, -0.15, 0.15)
    loss = rambo_ap_loss(scores, labels, margin=0.3)
    assert loss.item() == pytest.approx(1 - sk_ap(shifted, labels), abs=1e-12)


def test_functional_docstring_example_and_gradient_signs():
    scores = torch.tensor([[0.9, 0.2, 0.6, 0.1]], requires_grad=True)
    labels = torch.tensor([[1, 0, 0, 1]])
    loss = rambo_ap_loss(scores, labels, margin=0.0)
    assert loss.item() == pytest.approx(0.25)
    loss.backward()
    # the last positive is pushed up, the negative it overtakes down
    assert scores.grad[0, 3] < 0 and scores.grad[0, 1] > 0
    assert scores.grad[0, 0] == 0 and scores.grad[0, 2] == 0


@pytest.mark.parametrize('device', DEVICES)
def test_functional_signs_on_random_rows(device):
    """Negatives are only ever pushed down; moved positives go up."""
    torch.manual_seed(2)
    scores = torch.randn(8, 300, device=device, requires_grad=True)
    labels = torch.rand(8, 300, device=device) < 0.1
    rambo_ap_loss(scores, labels, lambda_val=5.0).backward()
    g = scores.grad
    assert (g[~labels] >= 0).all() and (g[~labels] > 0).any()
    moved = g[labels][g[labels] != 0]
    assert len(moved) > 0.3 * int(labels.sum())
    assert (moved < 0).float().mean() > 0.95


def test_positive_rank_grad_pushes_top_positive_down():
    """The documented reason why the two-ranker reading is off by default."""
    scores = torch.tensor([5.0, 4.9, 4.8, 4.7, -0.9, -1.0],
                          requires_grad=True)
    labels = torch.tensor([1, 1, 1, 1, 0, 1])
    rambo_ap_loss(scores, labels, lambda_val=5.0, margin=0.0,
                  positive_rank_grad=True).backward()
    assert scores.grad[0] > 0  # the best positive would be pushed down
    scores.grad = None
    rambo_ap_loss(scores, labels, lambda_val=5.0, margin=0.0).backward()
    assert scores.grad[0] == 0 and scores.grad[5] < 0 and scores.grad[4] > 0


@pytest.mark.parametrize('kwargs, match', [
    (dict(positives=torch.ones(3, 5)), 'shape'),
    (dict(positives=torch.full((3, 4), 2)), 'binary'),
    (dict(scores=torch.full((3, 4), float('nan'))), 'NaN'),
    (dict(margin=-0.1), 'margin'),
    (dict(lambda_val=0.0), 'lambda_val'),
    (dict(reduction='none'), 'per-element'),
    (dict(reduction='avg'), 'reduction'),
    (dict(scores=torch.zeros(3, 0), positives=torch.zeros(3, 0)), 'n > 0'),
])
def test_functional_bad_input(kwargs, match):
    args = dict(scores=torch.randn(3, 4), positives=torch.ones(3, 4))
    args.update(kwargs)
    with pytest.raises(ValueError, match=match):
        rambo_ap_loss(**args)


@pytest.mark.parametrize('dtype', [torch.float16, torch.bfloat16])
def test_functional_half_precision_and_ties(dtype):
    scores = torch.tensor([[0.5, 0.5, 0.5, 0.25]], dtype=dtype,
                          requires_grad=True)
    labels = torch.tensor([[0, 1, 1, 0]])
    loss = rambo_ap_loss(scores, labels)
    loss.backward()
    assert torch.isfinite(loss) and scores.grad.dtype == dtype
    assert torch.isfinite(scores.grad).all()
    none = rambo_ap_loss(scores, torch.zeros(1, 4))
    assert none.item() == 0 and none.requires_grad


# --------------------------------------------------------------- module
@pytest.mark.parametrize('space', SPACES)
def test_module_values_equal_sklearn_map_and_apc(space, rpn_batch):
    cls_score, labels = rpn_batch(space=space, seed=3)
    loss = RaMBOAPLoss(log_diagnostics=True,
                       memory=0, margin=0.0, map_weight=1.0, apc_weight=1.0,
                       score_space=space)
    out = loss(cls_score, labels)
    probs = ranked(cls_score, space)
    num_classes = probs.shape[1]
    onehot = torch.nn.functional.one_hot(labels, num_classes + 1)[:, :-1]
    present = [c for c in range(num_classes) if onehot[:, c].any()]
    sk_map = sum(sk_ap(probs[:, c], onehot[:, c])
                 for c in present) / len(present)
    assert out['loss_rambo_map'].item() == pytest.approx(1 - sk_map, abs=1e-6)
    assert out['rambo_ap'].item() == pytest.approx(sk_map, abs=1e-6)
    apc = sk_ap(probs.flatten(), onehot.flatten())
    assert out['loss_rambo_apc'].item() == pytest.approx(1 - apc, abs=1e-6)


def test_module_default_weights_are_two_to_one(rpn_batch):
    cls_score, labels = rpn_batch(seed=4)
    out = RaMBOAPLoss(log_diagnostics=True, memory=0)(cls_score, labels)
    ref = RaMBOAPLoss(log_diagnostics=True,
                      memory=0, map_weight=1.0, apc_weight=1.0)(
        cls_score, labels)
    assert out['loss_rambo_map'].item() == pytest.approx(
        2 / 3 * ref['loss_rambo_map'].item())
    assert out['loss_rambo_apc'].item() == pytest.approx(
        1 / 3 * ref['loss_rambo_apc'].item())


def test_memory_keeps_tau_batches_without_gradient(rpn_batch):
    loss = RaMBOAPLoss(log_diagnostics=True,
                       memory=2, margin=0.1, map_weight=1.0, apc_weight=0.0,
                       score_space='logits')
    batches = [rpn_batch(space='logits', seed=s) for s in range(4)]
    outs = []
    for cls_score, labels in batches:
        outs.append(loss(cls_score, labels))
    assert len(loss._memory) == 2
    # the last call ranked batch 3 together with batches 1 and 2
    rows = torch.cat([ranked(b[0], 'logits') for b in (batches[3],
                                                       batches[1],
                                                       batches[2])])
    labels = torch.cat([b[1] for b in (batches[3], batches[1], batches[2])])
    onehot = torch.nn.functional.one_hot(labels, 6)[:, :-1].bool()
    expected = rambo_ap_loss(rows.t(), onehot.t(), margin=0.1)
    assert outs[-1]['loss_rambo_map'].item() == pytest.approx(
        expected.item(), abs=1e-6)
    outs[-1]['loss_rambo_map'].backward()
    assert all(b[0].grad is None for b in batches[:3])  # memory: no gradient
    assert batches[3][0].grad.abs().sum() > 0
    # the memory changes the gradient of the current batch
    fresh = batches[3][0].detach().clone().requires_grad_(True)
    RaMBOAPLoss(log_diagnostics=True,
                memory=0, margin=0.1, map_weight=1.0, apc_weight=0.0,
                score_space='logits')(fresh, batches[3][1])[
                    'loss_rambo_map'].backward()
    assert not torch.equal(fresh.grad, batches[3][0].grad)


def test_memory_zero_eval_mode_and_reset_policy(rpn_batch):
    loss = RaMBOAPLoss(log_diagnostics=True, memory=0)
    for seed in range(3):
        out = loss(*rpn_batch(seed=seed))
        assert len(loss._memory) == 0 and torch.isfinite(total(out))
    loss = RaMBOAPLoss(log_diagnostics=True, memory=3)
    loss(*rpn_batch(seed=0))
    loss.eval()
    loss(*rpn_batch(seed=1))
    assert len(loss._memory) == 1  # eval calls read, but do not append
    loss.train()
    loss(*rpn_batch(num_classes=7, seed=2))  # class count changed: reset
    assert len(loss._memory) == 1
    assert loss._memory[0][0].shape[1] == 7
    loss.reset_memory()
    assert len(loss._memory) == 0
    assert 'memory' not in str(loss.state_dict().keys())


def test_weight_zero_rows_are_left_out(rpn_batch):
    cls_score, labels = rpn_batch(seed=5)
    weight = (torch.rand(len(labels)) < 0.7).float()
    keep = weight > 0
    out = RaMBOAPLoss(log_diagnostics=True,
                      memory=0)(cls_score, labels, weight)
    sub = cls_score.detach()[keep].clone().requires_grad_(True)
    ref = RaMBOAPLoss(log_diagnostics=True, memory=0)(sub, labels[keep])
    total(out).backward()
    total(ref).backward()
    assert total(out).item() == pytest.approx(total(ref).item())
    assert (cls_score.grad[~keep] == 0).all()
    torch.testing.assert_close(cls_score.grad[keep], sub.grad)


@pytest.mark.parametrize('space', SPACES)
def test_module_signs_and_diagnostics(space, rpn_batch):
    cls_score, labels = rpn_batch(num_rois=256, space=space, seed=6,
                                  scale=3.0)
    loss = RaMBOAPLoss(log_diagnostics=True,
                       memory=0, score_space=space, lambda_val=5.0)
    out = loss(cls_score, labels)
    total(out).backward()
    for key in ('rambo_ap', 'rambo_pos_grad_frac', 'rambo_neg_grad_frac',
                'rambo_grad_density'):
        assert 'loss' not in key and 0 < out[key].item() <= 1
    num_classes = cls_score.shape[1] - (space != 'sigmoid')
    is_fg = labels < num_classes
    true_class = cls_score.grad[is_fg, labels[is_fg]]
    # the true-class score of foreground RoIs is pushed up on balance
    assert true_class.sum() < 0
    if space == 'logits':  # ranked scores are the logits: check the stats
        grad = cls_score.grad[:, :num_classes]
        pos = torch.nn.functional.one_hot(labels, 6)[:, :-1].bool()
        assert out['rambo_pos_grad_frac'].item() == pytest.approx(
            (grad[pos] < 0).float().mean().item())
        assert out['rambo_neg_grad_frac'].item() == pytest.approx(
            (grad[~pos] > 0).float().mean().item())
        assert out['rambo_grad_density'].item() == pytest.approx(
            (grad != 0).float().mean().item())
        assert (grad[~pos] >= 0).all()
    with torch.no_grad():  # diagnostics need a gradient: not logged here
        assert 'rambo_pos_grad_frac' not in loss(cls_score, labels)


def test_scale_immunity_through_module(rpn_batch):
    cls_score, labels = rpn_batch(seed=7)
    grads = []
    for weight, factor in ((1.0, 1.0), (3.0, 1.0), (1.0, 1024.0)):
        x = cls_score.detach().clone().requires_grad_(True)
        out = RaMBOAPLoss(log_diagnostics=True,
                          memory=0, loss_weight=weight)(x, labels)
        (total(out) * factor).backward()
        grads.append(x.grad)
    assert grads[0].abs().sum() > 0
    torch.testing.assert_close(grads[1], grads[0] * 3)
    torch.testing.assert_close(grads[2], grads[0] * 1024)


@pytest.mark.parametrize('space', SPACES)
@pytest.mark.parametrize('case', ['empty', 'background_only', 'ties'])
def test_no_nan_on_degenerate_batches(space, case, rpn_batch):
    cls_score, labels = rpn_batch(space=space, seed=8)
    num_classes = cls_score.shape[1] - (space != 'sigmoid')
    if case == 'empty':
        cls_score = cls_score[:0].detach().requires_grad_(True)
        labels = labels[:0]
    elif case == 'background_only':
        labels = torch.full_like(labels, num_classes)
    else:
        cls_score = torch.zeros_like(cls_score, requires_grad=True)
    loss = RaMBOAPLoss(log_diagnostics=True, memory=2, score_space=space)
    for _ in range(2):
        out = loss(cls_score, labels)
        value = total(out)
        value.backward()
        assert torch.isfinite(value)
        assert all(torch.isfinite(v).all() for v in out.values())
        assert torch.isfinite(cls_score.grad).all()
    if case != 'ties':
        assert value.item() == 0


@pytest.mark.parametrize('device', DEVICES)
@pytest.mark.parametrize('dtype', [torch.float16, torch.bfloat16])
def test_module_half_precision(device, dtype, rpn_batch):
    cls_score, labels = rpn_batch(seed=9, device=device)
    x = cls_score.detach().to(dtype).requires_grad_(True)
    out = RaMBOAPLoss(log_diagnostics=True, memory=1)(x, labels)
    total(out).backward()
    assert x.grad.dtype == dtype and torch.isfinite(x.grad).all()
    ref = RaMBOAPLoss(log_diagnostics=True,
                      memory=1)(x.detach().float(), labels)
    assert total(out).item() == pytest.approx(total(ref).item(), abs=1e-6)


def test_reduction_override_none_raises_and_sum_works(rpn_batch):
    cls_score, labels = rpn_batch(seed=10)
    loss = RaMBOAPLoss(log_diagnostics=True, memory=0)
    with pytest.raises(ValueError, match='OHEM'):
        loss(cls_score, labels, reduction_override='none')
    mean = loss(cls_score, labels)['loss_rambo_map']
    summed = loss(cls_score, labels, reduction_override='sum')
    present = len(torch.unique(labels[labels < 5]))
    assert summed['loss_rambo_map'].item() == pytest.approx(
        mean.item() * present)


@pytest.mark.parametrize('kwargs', [
    dict(memory=-1), dict(memory=1.5), dict(score_space='probs'),
    dict(lambda_val=0), dict(margin=-1), dict(loss_weight=-1),
    dict(reduction='none')
])
def test_module_bad_config(kwargs):
    with pytest.raises(ValueError):
        RaMBOAPLoss(**kwargs)


def test_module_bad_input():
    loss = RaMBOAPLoss(log_diagnostics=True, score_space='softmax')
    with pytest.raises(ValueError, match='labels'):
        loss(torch.randn(4, 3), torch.tensor([0, 1, 2, 3]))  # 3 > C = 2
    with pytest.raises(ValueError, match='shape'):
        loss(torch.randn(4, 3), torch.tensor([0, 1]))
    with pytest.raises(ValueError, match='channels'):
        loss(torch.randn(4, 1), torch.tensor([0, 0, 0, 0]))
    with pytest.raises(ValueError, match='weight'):
        loss(torch.randn(4, 3), torch.tensor([0, 1, 2, 2]), torch.ones(3))


# ---------------------------------------------------------------- mmdet
def test_build_from_config_and_hooks():
    loss = MODELS.build(
        dict(type='RaMBOAPLoss', memory=3, margin=0.2, lambda_val=1.0,
             map_weight=0.5, apc_weight=0.5, score_space='softmax',
             loss_weight=2.0, reduction='mean'))
    assert isinstance(loss, RaMBOAPLoss) and loss.memory == 3
    assert loss.custom_cls_channels and loss.custom_activation
    assert loss.get_cls_channels(20) == 21
    assert MODELS.build(dict(type='RaMBOAPLoss',
                             score_space='sigmoid')).get_cls_channels(20) == 20


@pytest.mark.parametrize('space', SPACES)
def test_get_activation_and_accuracy(space, rpn_batch):
    cls_score, labels = rpn_batch(space=space, seed=11)
    loss = RaMBOAPLoss(log_diagnostics=True, score_space=space)
    scores = loss.get_activation(cls_score)
    assert scores.shape == (len(labels), 6)  # C + 1, dummy background last
    assert ((scores >= 0) & (scores <= 1)).all()
    test_time = cls_score.softmax(-1)[:, :5] if space == 'softmax' else \
        cls_score[:, :5].sigmoid()
    torch.testing.assert_close(scores[:, :5], test_time)
    # Within each class, the test-time scores order the RoIs exactly as the
    # scores the loss ranked (ties included): NMS and VOCMetric then measure
    # the ranking that was trained.
    trained = ranked(cls_score, space)
    for c in range(5):
        a, b = trained[:, c], scores[:, c].double()
        assert (torch.sign(a[:, None] - a[None]) == torch.sign(
            b[:, None] - b[None])).all(), f'class {c} reordered'
    acc = loss.get_accuracy(cls_score, labels)
    fg = labels < 5
    expected = (cls_score[fg, :5].argmax(1) == labels[fg]).float().mean() * 100
    assert acc['acc_classes'].item() == pytest.approx(expected.item())


def _head_and_rois(space, num_classes=4, seed=0, ranker=None,
                   log_diagnostics=True):
    from mmengine.config import ConfigDict
    from mmdet.models.task_modules.assigners import MaxIoUAssigner
    from mmdet.models.task_modules.samplers import RandomSampler
    from mmdet.structures.bbox import bbox2roi
    from mmengine.structures import InstanceData
    torch.manual_seed(seed)
    head = MODELS.build(
        dict(
            type='Shared2FCBBoxHead',
            in_channels=8,
            fc_out_channels=32,
            roi_feat_size=3,
            num_classes=num_classes,
            bbox_coder=dict(
                type='DeltaXYWHBBoxCoder',
                target_means=[0.0] * 4,
                target_stds=[0.1, 0.1, 0.2, 0.2]),
            reg_class_agnostic=False,
            # a large lambda: at initialisation the probability spaces get
            # no gradient from the paper's lambda (docs/detection.md)
            loss_cls=dict(type='RaMBOAPLoss', score_space=space, memory=2,
                          lambda_val=50.0, log_diagnostics=log_diagnostics)
            if ranker is None else dict(
                type='RaMBOAPLoss', score_space=space, memory=2,
                ranker=ranker, log_diagnostics=log_diagnostics),
            loss_bbox=dict(type='L1Loss', loss_weight=1.0)))
    head.init_weights()
    assigner = MaxIoUAssigner(pos_iou_thr=0.5, neg_iou_thr=0.5,
                              min_pos_iou=0.5)
    sampler = RandomSampler(num=48, pos_fraction=0.25,
                            add_gt_as_proposals=True)
    sampling_results = []
    for _ in range(2):  # two images
        gt = InstanceData(
            bboxes=torch.tensor([[10., 10., 50., 60.], [40., 30., 90., 80.],
                                 [5., 60., 30., 95.]]),
            labels=torch.randint(0, num_classes, (3, )))
        xy = torch.rand(64, 2) * 70
        wh = torch.rand(64, 2) * 40 + 10
        pred = InstanceData(priors=torch.cat([xy, xy + wh], 1))
        assign = assigner.assign(pred, gt)
        sampling_results.append(sampler.sample(assign, pred, gt))
    rois = bbox2roi([res.priors for res in sampling_results])
    feats = torch.randn(len(rois), 8, 3, 3)
    return head, rois, feats, sampling_results, ConfigDict(pos_weight=-1)


@pytest.mark.parametrize('space', SPACES)
def test_inside_shared2fc_bbox_head_train_and_predict(space):
    from mmengine.config import ConfigDict
    head, rois, feats, sampling_results, train_cfg = _head_and_rois(space)
    expected_channels = 4 if space == 'sigmoid' else 5
    assert head.fc_cls.out_features == expected_channels
    optimizer = torch.optim.SGD(head.parameters(), lr=0.1)
    before = head.fc_cls.weight.detach().clone()
    cls_score, bbox_pred = head(feats)
    result = head.loss_and_target(cls_score, bbox_pred, rois,
                                  sampling_results, train_cfg)
    losses = result['loss_bbox']
    assert {'loss_rambo_map', 'loss_rambo_apc', 'loss_bbox',
            'acc_classes', 'rambo_ap'} <= set(losses)
    loss = sum(v for k, v in losses.items() if 'loss' in k)
    assert torch.isfinite(loss)
    optimizer.zero_grad()
    loss.backward()
    assert head.fc_cls.weight.grad.abs().sum() > 0
    optimizer.step()
    assert not torch.equal(before, head.fc_cls.weight)
    # the plain loss() entry point too, then the test-time path
    labels, label_weights, bbox_targets, bbox_weights = head.get_targets(
        sampling_results, train_cfg)
    cls_score, bbox_pred = head(feats)
    losses = head.loss(cls_score, bbox_pred, rois, labels, label_weights,
                       bbox_targets, bbox_weights)
    assert torch.isfinite(losses['loss_rambo_map'])
    head.eval()
    with torch.no_grad():
        cls_score, bbox_pred = head(feats)
        n = len(sampling_results[0].priors)
        results = head.predict_by_feat(
            rois=(rois[:n], rois[n:]),
            cls_scores=(cls_score[:n], cls_score[n:]),
            bbox_preds=(bbox_pred[:n], bbox_pred[n:]),
            batch_img_metas=[dict(img_shape=(100, 100))] * 2,
            rcnn_test_cfg=ConfigDict(
                score_thr=0.0, nms=dict(type='nms', iou_threshold=0.5),
                max_per_img=20))
    for res in results:
        assert len(res.labels) > 0
        assert ((res.labels >= 0) & (res.labels < 4)).all()


def test_stock_bbox_head_logs_the_total_as_loss_cls_by_default():
    """Without ``log_diagnostics`` the loss is a Tensor: the stock head
    logs it as ``loss_cls``, the sum of the two terms."""
    outs = []
    for log_diagnostics in (False, True):
        head, rois, feats, sampling_results, train_cfg = _head_and_rois(
            'logits', log_diagnostics=log_diagnostics)
        cls_score, bbox_pred = head(feats)
        outs.append(head.loss_and_target(cls_score, bbox_pred, rois,
                                         sampling_results,
                                         train_cfg)['loss_bbox'])
    plain, terms = outs
    assert {'loss_cls', 'loss_bbox', 'acc_classes'} == set(plain)
    assert not any(k.startswith('rambo') for k in plain)
    torch.testing.assert_close(
        plain['loss_cls'], terms['loss_rambo_map'] + terms['loss_rambo_apc'])


@pytest.mark.parametrize('ranker', [
    dict(type='SigmoidRanker', temperature=0.5),
    dict(type='SorterRanker', sorter=dict(type='LSTMSorter', seq_len=16,
                                          hidden_size=8, num_layers=1)),
])
def test_other_rankers_train_a_stock_bbox_head(ranker):
    """The back-end is a config field: the stock head trains with each one,
    and a frozen sorter neither learns nor leaves eval mode."""
    from mmdet_rankloss.losses import SigmoidRanker, SorterRanker
    head, rois, feats, sampling_results, train_cfg = _head_and_rois(
        'logits', ranker=ranker)
    loss_cls = head.loss_cls
    assert isinstance(loss_cls.ranker,
                      SigmoidRanker if 'Sigmoid' in ranker['type'] else
                      SorterRanker)
    head.train()
    cls_score, bbox_pred = head(feats)
    losses = head.loss_and_target(cls_score, bbox_pred, rois,
                                  sampling_results, train_cfg)['loss_bbox']
    assert 'rambo_ap' in losses and 'rambo_grad_density' not in losses
    loss = losses['loss_rambo_map'] + losses['loss_rambo_apc']
    loss.backward()
    assert torch.isfinite(loss) and head.fc_cls.weight.grad.abs().sum() > 0
    if 'Sorter' in ranker['type']:
        sorter = loss_cls.ranker.sorter
        assert not sorter.training
        assert all(p.grad is None and not p.requires_grad
                   for p in sorter.parameters())


@pytest.mark.parametrize('space', SPACES)
def test_calibration_changes_scores_not_rankings(space, rpn_batch):
    cls_score, _ = rpn_batch(space=space, seed=5)
    plain = RaMBOAPLoss(score_space=space).get_activation(cls_score)
    fitted = RaMBOAPLoss(log_diagnostics=True, score_space=space,
                         calibration=(0.5, -1.0)).get_activation(cls_score)
    assert fitted.shape == plain.shape
    assert not torch.allclose(fitted[:, :5], plain[:, :5])
    for c in range(5):  # the same order within every class: AP unchanged
        assert torch.equal(plain[:, c].argsort(), fitted[:, c].argsort())
    if space != 'softmax':
        torch.testing.assert_close(fitted[:, :5],
                                   (0.5 * cls_score[:, :5] - 1).sigmoid())


@pytest.mark.parametrize('bad', [(0.0, 1.0), (-1.0, 0.0), (1.0, ),
                                 (1.0, float('nan')), 'x', (True, 0.0)])
def test_calibration_must_be_monotone(bad):
    with pytest.raises(ValueError, match='calibration'):
        RaMBOAPLoss(calibration=bad)
