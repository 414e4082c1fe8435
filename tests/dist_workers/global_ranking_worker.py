"""Run under torchrun (2 gloo processes): global ranking vs one process.

Every process builds the same global batch from a fixed seed, keeps its
own (unevenly sized) slice, computes each loss with global ranking and
compares the value and its local gradient with one process computing the
same loss on the whole batch. Writes a JSON report from rank 0.
"""
import json
import sys

import torch
import torch.distributed as dist

from mmdet_rankloss.losses import rambo_ap_loss
from mmdet_rankloss.ops import gather_for_ranking

SIZES = (5, 7)  # uneven on purpose


def local_slice(x, rank):
    start = sum(SIZES[:rank])
    return x[start:start + SIZES[rank]]


def report(name, loss, ref_loss, x, ref_x, rank, world, offset=0):
    """One comparison: loss values and the local slice's gradient. DDP
    averages over `world` processes; the gather's backward scales by
    `world` so that the average equals the single-process gradient."""
    ref_grad = local_slice(ref_x.grad, rank)
    return dict(
        name=name, loss=float(loss), ref_loss=float(ref_loss), offset=offset,
        max_grad_err=float((x.grad / world - ref_grad).abs().max()),
        grad_norm=float(ref_grad.abs().sum()))


def check(name, loss_fn, global_inputs, rank, world):
    """loss_fn(*tensors) -> scalar; the first tensor is differentiated."""
    ref_x = global_inputs[0].clone().requires_grad_(True)
    ref_loss = loss_fn(ref_x, *global_inputs[1:])
    ref_loss.backward()

    x = local_slice(global_inputs[0], rank).clone().requires_grad_(True)
    local = [x] + [local_slice(t, rank) for t in global_inputs[1:]]
    gathered, offset = gather_for_ranking(*local)
    loss = loss_fn(*gathered)
    loss.backward()
    ref_grad = local_slice(ref_x.grad, rank)
    return dict(
        name=name,
        loss=float(loss), ref_loss=float(ref_loss),
        offset=offset,
        # DDP averages over `world` processes; the gather's backward scales
        # by `world` so that the average equals the single-process gradient
        max_grad_err=float((x.grad / world - ref_grad).abs().max()),
        grad_norm=float(ref_grad.abs().sum()))


def main(out_path):
    dist.init_process_group('gloo')
    rank, world = dist.get_rank(), dist.get_world_size()
    g = torch.Generator().manual_seed(0)
    n = sum(SIZES)
    scores = torch.randn(n, 6, generator=g, dtype=torch.float64)
    labels = torch.rand(n, 6, generator=g) < 0.3
    results = [
        check('rambo_ap_loss over rows gathered along dim 0',
              lambda s, l: rambo_ap_loss(s.t(), l.t(), 0.5, 0.1),
              (scores, labels), rank, world)
    ]
    results += extra_checks(rank, world, g)
    reports = [None] * world
    dist.all_gather_object(reports, results)
    if rank == 0:
        with open(out_path, 'w') as f:
            json.dump(dict(world=world, reports=reports), f, indent=1)
    dist.destroy_process_group()


def detection_checks(rank, world, g):
    """RaMBOAPLoss with global_ranking over 3 steps (memory 2), against one
    process running the plain loss on the concatenated RoIs."""
    import mmdet_rankloss  # noqa: F401
    from mmdet.registry import MODELS
    # lambda 5: dense enough that every local slice gets a gradient
    cfg = dict(type='RaMBOAPLoss', memory=2, lambda_val=5.0, margin=0.1)
    ours = MODELS.build(dict(cfg, global_ranking=True)).train()
    ref = MODELS.build(cfg).train()
    n, c = sum(SIZES), 4
    out = []
    for step in range(3):
        scores = torch.randn(n, c + 1, generator=g, dtype=torch.float64)
        labels = torch.randint(0, c + 1, (n, ), generator=g)
        ref_x = scores.clone().requires_grad_(True)
        ref_loss = ref(ref_x, labels)  # a Tensor: map + apc
        ref_loss.backward()
        x = local_slice(scores, rank).clone().requires_grad_(True)
        loss = ours(x, local_slice(labels, rank))
        loss.backward()
        out.append(report(f'RaMBOAPLoss(global_ranking=True), step {step}',
                          loss, ref_loss, x, ref_x, rank, world))
    return out


def retrieval_checks(rank, world, g):
    """Every retrieval loss on embeddings gathered as RetrievalModel does
    with global_ranking=True (the recall loss over 2 steps: memory)."""
    import mmdet_rankloss  # noqa: F401
    from mmdet.registry import MODELS
    out = []
    cfgs = [dict(type='RaMBORecallLoss', memory=2, lambda_val=4.0),
            dict(type='FastAPLoss'), dict(type='AUCLoss'),
            dict(type='SoftRankThresholdLoss'),
            dict(type='BatchHardTripletLoss')]
    n = sum(SIZES)
    for cfg in cfgs:
        ours, ref = MODELS.build(cfg).train(), MODELS.build(cfg).train()
        for step in range(2 if 'memory' in cfg else 1):
            emb = torch.nn.functional.normalize(
                torch.randn(n, 8, generator=g, dtype=torch.float64), dim=1)
            labels = torch.arange(n) % 4

            def total(loss_fn, e, l):
                res = loss_fn(e, l)
                if isinstance(res, dict):
                    return sum(v for k, v in res.items() if 'loss' in k)
                return res

            ref_x = emb.clone().requires_grad_(True)
            ref_loss = total(ref, ref_x, labels)
            ref_loss.backward()
            x = local_slice(emb, rank).clone().requires_grad_(True)
            (ge, gl), _ = gather_for_ranking(x, local_slice(labels, rank))
            loss = total(ours, ge, gl)
            loss.backward()
            out.append(report(
                f"{cfg['type']} (gathered embeddings), step {step}", loss,
                ref_loss, x, ref_x, rank, world))
    return out


def extra_checks(rank, world, g):
    return detection_checks(rank, world, g) + retrieval_checks(rank, world, g)


if __name__ == '__main__':
    main(sys.argv[1])
