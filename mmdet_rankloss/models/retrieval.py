"""An embedding model for image retrieval trained with a metric loss."""
from typing import Dict, List, Optional, Sequence, Union

import torch
import torch.nn as nn
import torch.nn.functional as F
from mmengine.model import BaseModel
from mmengine.structures import BaseDataElement
from torch import Tensor

from mmdet.registry import MODELS
from ..ops.distributed import gather_for_ranking

__all__ = ['RetrievalModel']

_POOLINGS = ('avg', 'max')


@MODELS.register_module()
class RetrievalModel(BaseModel):
    """Backbone, global pooling, linear embedding, L2 normalisation.

    The metric learning architecture of RaMBO section 5.1 and FastAP section 5:
    a backbone, a linear embedding layer (the attribute ``embedding``, for
    ``paramwise_cfg.custom_keys``) normalised to the unit sphere, and any
    registered loss called as ``loss(embeddings, labels)`` on the whole batch
    (docs/retrieval.md). :meth:`forward` modes: ``'loss'`` (a dict),
    ``'predict'`` (data samples with ``pred_embedding`` (D,)) and ``'tensor'``
    (embeddings (B, D)).

    Args:
        backbone (dict): Backbone config, e.g. mmdet's ``ResNet`` with
            ``out_indices=(3,)``; the last output feature map is pooled.
        loss (dict): Metric loss config, e.g. ``dict(type='RaMBORecallLoss')``.
        in_channels (int): Channels of the pooled feature map. Defaults to 2048
            (ResNet-50).
        embed_dim (int): Embedding dimension. Defaults to 512.
        pooling (str): Global ``'avg'`` or ``'max'`` pooling. Defaults to
            ``'avg'``.
        hidden_dims (Sequence[int]): Widths of fully connected + ReLU layers
            before the embedding layer, e.g. ``(1024,)`` (the SRT recipe).
            Defaults to ().
        global_ranking (bool): Under distributed training, rank the gathered
            embeddings of all processes (:func:`~mmdet_rankloss.ops.
            gather_for_ranking`): the single-process loss of the concatenated
            batch. Defaults to False.
        data_preprocessor (dict, optional): Stacks and normalises images.
            Defaults to None.
        init_cfg (dict, optional): Initialisation config, e.g.
            ``dict(type='Orthogonal', override=dict(name='embedding'))`` (the
            AUC loss recipe). Defaults to None.
    """

    def __init__(self,
                 backbone: dict,
                 loss: dict,
                 in_channels: int = 2048,
                 embed_dim: int = 512,
                 pooling: str = 'avg',
                 hidden_dims: Sequence[int] = (),
                 global_ranking: bool = False,
                 data_preprocessor: Optional[dict] = None,
                 init_cfg: Optional[dict] = None) -> None:
        super().__init__(
            data_preprocessor=data_preprocessor, init_cfg=init_cfg)
        for name, value in (('in_channels', in_channels),
                            ('embed_dim', embed_dim)):
            if isinstance(value, bool) or not isinstance(value,
                                                         int) or value < 1:
                raise ValueError(f'{name} must be an int >= 1, got {value!r}')
        if pooling not in _POOLINGS:
            raise ValueError(
                f'pooling must be one of {_POOLINGS}, got {pooling!r}')
        self.backbone = MODELS.build(backbone)
        self.pooling = pooling
        self.pool = nn.AdaptiveAvgPool2d(1) if pooling == 'avg' else \
            nn.AdaptiveMaxPool2d(1)
        widths = [in_channels] + list(hidden_dims)
        if any(isinstance(w, bool) or not isinstance(w, int) or w < 1
               for w in widths[1:]):
            raise ValueError(
                f'hidden_dims must be ints >= 1, got {hidden_dims!r}')
        self.hidden = nn.Sequential(*[
            layer for a, b in zip(widths[:-1], widths[1:])
            for layer in (nn.Linear(a, b), nn.ReLU(inplace=True))
        ])
        self.embedding = nn.Linear(widths[-1], embed_dim)
        self.global_ranking = bool(global_ranking)
        self.metric_loss = MODELS.build(loss)

    def extract_feat(self, inputs: Tensor) -> Tensor:
        """Pooled features of the backbone's last output, (B, in_channels)."""
        feats = self.backbone(inputs)
        if isinstance(feats, (list, tuple)):
            feats = feats[-1]
        if feats.dim() != 4:
            raise ValueError('the backbone must return (B, C, H, W) feature '
                             f'maps, got shape {tuple(feats.shape)}')
        pooled = self.pool(feats).flatten(1)
        expected = (self.hidden[0].in_features
                    if len(self.hidden) else self.embedding.in_features)
        if pooled.shape[1] != expected:
            raise ValueError(
                f'the backbone gives {pooled.shape[1]} channels but '
                f'in_channels={expected}')
        return pooled

    def embed(self, inputs: Tensor) -> Tensor:
        """L2-normalised embeddings (B, embed_dim) of preprocessed images."""
        hidden = self.hidden(self.extract_feat(inputs))
        return F.normalize(self.embedding(hidden), dim=1)

    def forward(self,
                inputs: Tensor,
                data_samples: Optional[List[BaseDataElement]] = None,
                mode: str = 'tensor'
                ) -> Union[Dict[str, Tensor], list, Tensor]:
        """Dispatch on ``mode``: ``'loss'``, ``'predict'`` or ``'tensor'``.

        Args:
            inputs (Tensor): Preprocessed images (B, C, H, W).
            data_samples (list, optional): One per image, with ``gt_label``
                (needed for ``'loss'``). Defaults to None.
            mode (str): Defaults to ``'tensor'``.

        Returns:
            dict | list | Tensor: See the class docstring.
        """
        if mode == 'loss':
            return self.loss(inputs, data_samples)
        if mode == 'predict':
            return self.predict(inputs, data_samples)
        if mode == 'tensor':
            return self.embed(inputs)
        raise ValueError(f'mode must be "loss", "predict" or "tensor", got '
                         f'{mode!r}')

    @staticmethod
    def _labels(data_samples: Optional[Sequence[BaseDataElement]],
                batch_size: int, device: torch.device) -> Tensor:
        if data_samples is None or len(data_samples) != batch_size:
            raise ValueError(
                f'loss mode needs one data sample with gt_label per image '
                f'({batch_size}), got '
                f'{None if data_samples is None else len(data_samples)}')
        labels = [
            torch.as_tensor(s.gt_label).reshape(-1) for s in data_samples
        ]
        if any(t.numel() != 1 for t in labels):
            raise ValueError('each data sample needs one class in gt_label')
        return torch.cat(labels).to(device=device, dtype=torch.int64)

    def loss(self, inputs: Tensor,
             data_samples: Sequence[BaseDataElement]) -> Dict[str, Tensor]:
        """Metric loss of the batch's embeddings.

        Args:
            inputs (Tensor): Preprocessed images (B, C, H, W).
            data_samples (Sequence[BaseDataElement]): With ``gt_label``.

        Returns:
            dict[str, Tensor]: The loss module's dict, or
            ``{'loss_metric': loss}`` for a loss that returns a tensor.
        """
        embeddings = self.embed(inputs)
        labels = self._labels(data_samples, embeddings.shape[0],
                              embeddings.device)
        if self.global_ranking:
            (embeddings, labels), _ = gather_for_ranking(embeddings, labels)
        out = self.metric_loss(embeddings, labels)
        if isinstance(out, Tensor):
            return dict(loss_metric=out)
        if not isinstance(out, dict) or not any('loss' in k for k in out):
            raise ValueError(
                'the metric loss must return a tensor or a dict with at '
                f'least one "loss" key, got {type(out).__name__}'
                f'{sorted(out) if isinstance(out, dict) else ""}')
        return out

    def predict(self,
                inputs: Tensor,
                data_samples: Optional[List[BaseDataElement]] = None
                ) -> List[BaseDataElement]:
        """Embeddings as ``pred_embedding`` of each data sample.

        Args:
            inputs (Tensor): Preprocessed images (B, C, H, W).
            data_samples (list, optional): Updated in place; new ones are
                made when None. Defaults to None.

        Returns:
            list[BaseDataElement]: With ``pred_embedding`` (D,).
        """
        embeddings = self.embed(inputs).detach()
        if data_samples is None:
            data_samples = [BaseDataElement() for _ in range(len(embeddings))]
        for sample, emb in zip(data_samples, embeddings):
            sample.pred_embedding = emb
        return data_samples
