"""``ClsHooksMixin``: a loss that forgets ``cls_hooks`` is named."""
import pytest
import torch

from mmdet_rankloss.losses.score_space import ClsHooksMixin


def test_missing_cls_hooks_names_the_class_and_the_property():

    class HalfDoneLoss(ClsHooksMixin):
        pass

    with pytest.raises(NotImplementedError,
                       match=r'HalfDoneLoss .* cls_hooks property'):
        HalfDoneLoss().get_activation(torch.zeros(2, 4))
