"""Honest PyTorch rewrite for level 3, task 7 (ResNet basic block, inference).

Each inference BatchNorm is a per-channel affine map, so it folds into the convolution before
it: the filters of output channel c are scaled by ``s_c = gamma_c / sqrt(var_c + eps)`` and the
convolution gets the bias ``beta_c - mean_c * s_c``. The folds cost a few thousand multiplies
per call (done in ``forward``, so they always follow the current weights and statistics) and
remove both BatchNorm passes over the feature maps; the ReLUs and the residual add run in place
on the convolutions' fresh outputs.
"""

import torch
import torch.nn as nn
import torch.nn.functional as F


def _folded(conv: nn.Conv2d, bn: nn.BatchNorm2d) -> tuple[torch.Tensor, torch.Tensor]:
    """The weight and bias of ``bn(conv(x))`` as one convolution (eval mode only)."""
    scale = bn.weight * torch.rsqrt(bn.running_var + bn.eps)
    return conv.weight * scale.reshape(-1, 1, 1, 1), bn.bias - bn.running_mean * scale


class ModelNew(nn.Module):
    def __init__(self, channels: int):
        super().__init__()
        self.conv1 = nn.Conv2d(channels, channels, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(channels)
        self.conv2 = nn.Conv2d(channels, channels, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(channels)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.training:
            raise RuntimeError("the folded block needs running statistics: call .eval()")
        w1, b1 = _folded(self.conv1, self.bn1)
        w2, b2 = _folded(self.conv2, self.bn2)
        out = F.conv2d(x, w1, b1, padding=1).clamp_min_(0.0)
        out = F.conv2d(out, w2, b2, padding=1)
        return out.add_(x).clamp_min_(0.0)
