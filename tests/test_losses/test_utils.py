import torch

from mmdet_rankloss.losses import RaMBOAPLoss
from mmdet_rankloss.losses.utils import zero_loss


def test_zero_loss_of_many_fp16_scores_is_zero():
    """The sum of 400k fp16 logits at -4.6 is -inf in fp16; the zero loss
    of such a batch must still be 0 (not inf * 0 = NaN), in fp32, with a
    zero gradient reaching every score."""
    scores = torch.full((20000, 20), -4.6, dtype=torch.float16,
                        requires_grad=True)
    assert torch.isinf(scores.detach().sum())
    loss = zero_loss(scores)
    assert loss.dtype == torch.float32 and loss.item() == 0
    loss.backward()
    assert scores.grad is not None and not scores.grad.any()


def test_rambo_loss_of_a_dense_fp16_batch_without_positives_is_finite():
    """A dense head's batch with no positive anchor: fp16 scores give a zero
    loss, not NaN (the mixed-precision case of the RaMBO dense heads)."""
    loss_fn = RaMBOAPLoss(score_space='sigmoid', margin=0.0, memory=0)
    scores = torch.full((20000, 20), -4.6, dtype=torch.float16,
                        requires_grad=True)
    labels = torch.full((20000, ), 20, dtype=torch.long)  # all background
    losses = loss_fn(scores, labels)
    values = losses.values() if isinstance(losses, dict) else [losses]
    for value in values:
        if torch.is_tensor(value) and value.is_floating_point():
            assert torch.isfinite(value).all(), losses
