"""``EmbeddingLoss``: a subclass that forgets ``loss`` is named."""
import pytest
import torch

from mmdet_rankloss.losses.pairwise import EmbeddingLoss


def test_missing_loss_names_the_subclass_and_the_method():

    class HalfDoneLoss(EmbeddingLoss):
        pass

    with pytest.raises(NotImplementedError,
                       match=r'HalfDoneLoss .* loss\(embeddings, labels\)'):
        HalfDoneLoss()(torch.randn(4, 3), torch.tensor([0, 0, 1, 1]))
