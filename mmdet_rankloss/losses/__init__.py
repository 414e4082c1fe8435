"""Rank-based losses, registered in ``mmdet.registry.MODELS``.

Layout (``docs/architecture.md``): a functional core per loss plus a thin
registered module; shared parts in their own modules: the checks
(:mod:`mmdet_rankloss.ops.checks`), :mod:`.utils` (reductions, zero loss,
diagnostics), :mod:`.pairwise` (the retrieval problem and
:class:`EmbeddingLoss`), :mod:`.memory` (:class:`ScoreMemory`) and
:mod:`.score_space` (:class:`ScoreSpace`, the detection head hooks). The
error-driven losses (AP, RS, aLRP) share :mod:`.error_driven` (the core),
:mod:`.error_driven_modes` (the positives' errors per mode),
:mod:`.error_driven_negatives` (the sorted negatives) and
:mod:`.error_driven_head` (the detection module).
"""
from .alrp_loss import ALRPLoss, ALRPSelfBalanceHook, alrp_loss
from .ap_loss import (RaMBOAPLoss,
                      average_precision_loss as average_precision_loss,
                      rambo_ap_loss)
from .ap_rankers import BlackboxRanker, SigmoidRanker, SorterRanker
from .auc_loss import AUCLoss, auc_loss, auc_sigmoid_slope, relaxed_auc
from .error_driven import error_driven_loss, error_driven_terms, smoothed_step
from .error_driven_head import ErrorDrivenDetectionLoss
from .fastap_loss import FastAPLoss, fastap, fastap_loss
from .memory import ScoreMemory
from .mixed_loss import MixedRankLoss
from .pairwise import (EmbeddingLoss, RetrievalPairs, check_embeddings_labels,
                       retrieval_pairs, unit_length)
from .rank_sort_loss import (ErrorDrivenAPLoss, RankSortLoss,
                             error_driven_ap_loss, rank_sort_loss)
from .recall_loss import RaMBORecallLoss, rambo_recall_loss, recall_rank_weight
from .score_space import ScoreSpace
from .sodeep_loss import (SoDeepAPLoss, SoDeepRecallLoss, SoDeepSpearmanLoss,
                          sodeep_ap_loss, sodeep_recall_loss,
                          sodeep_spearman_loss, spearman_loss as spearman_loss)
from .srt_loss import (SoftRankThresholdLoss, soft_rank_threshold_loss,
                       srt_loss as srt_loss, srt_row_losses)
from .triplet_loss import (BatchHardTripletLoss, WilcoxonLoss,
                           batch_hard_triplet_loss, wilcoxon_loss)

#: The losses: (function, module) pairs with the same stem, arguments and
#: defaults (``tests/test_losses/test_loss_contract.py``).
__all__ = [
    'rambo_ap_loss', 'RaMBOAPLoss', 'rambo_recall_loss', 'RaMBORecallLoss',
    'rank_sort_loss', 'RankSortLoss', 'alrp_loss', 'ALRPLoss',
    'error_driven_ap_loss', 'ErrorDrivenAPLoss', 'fastap_loss', 'FastAPLoss',
    'auc_loss', 'AUCLoss', 'soft_rank_threshold_loss',
    'SoftRankThresholdLoss', 'sodeep_ap_loss', 'SoDeepAPLoss',
    'sodeep_recall_loss', 'SoDeepRecallLoss', 'sodeep_spearman_loss',
    'SoDeepSpearmanLoss', 'batch_hard_triplet_loss', 'BatchHardTripletLoss',
    'wilcoxon_loss', 'WilcoxonLoss'
]
#: A combinator, the AP back-ends, shared parts and helpers
__all__ += [
    'MixedRankLoss', 'BlackboxRanker', 'SigmoidRanker', 'SorterRanker',
    'ScoreMemory', 'ScoreSpace', 'EmbeddingLoss', 'ErrorDrivenDetectionLoss',
    'ALRPSelfBalanceHook', 'RetrievalPairs', 'check_embeddings_labels',
    'retrieval_pairs', 'unit_length', 'recall_rank_weight',
    'auc_sigmoid_slope', 'relaxed_auc', 'fastap', 'srt_row_losses',
    'error_driven_loss', 'error_driven_terms', 'smoothed_step'
]
#: Deprecated names (imported above as ``x as x``), not in ``__all__``
#: (removed in the next release; they warn)
DEPRECATED = {'average_precision_loss': 'rambo_ap_loss',
              'srt_loss': 'soft_rank_threshold_loss',
              'spearman_loss': 'sodeep_spearman_loss'}
