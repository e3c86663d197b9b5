"""The conv policy/value network of ``rlpyt.models.pg.atari_ff_model.AtariFfModel``,
written in plain torch so that peer loops run the same model without importing rlpyt.

Defaults are ``AtariFfModel``'s: convs of 16 and 32 channels (kernels 8, 4; strides 4,
2; paddings 0, 1), ReLU, a 512-unit fully connected layer, a softmax policy head and a
value head; pixels scaled by 1/255.  ``nature=True`` gives the Nature-DQN convs (32, 64,
64 channels; kernels 8, 4, 3; strides 4, 2, 1; no padding).
"""

from __future__ import annotations

import torch
from torch import nn


class AtariNet(nn.Module):
    def __init__(self, image_shape, n_actions: int, nature: bool = False):
        super().__init__()
        if nature:
            spec = [(32, 8, 4, 0), (64, 4, 2, 0), (64, 3, 1, 0)]
        else:
            spec = [(16, 8, 4, 0), (32, 4, 2, 1)]
        layers, c = [], image_shape[0]
        for out, k, s, p in spec:
            layers += [nn.Conv2d(c, out, k, s, p), nn.ReLU()]
            c = out
        self.conv = nn.Sequential(*layers)
        with torch.no_grad():
            n = self.conv(torch.zeros(1, *image_shape)).numel()
        self.fc = nn.Sequential(nn.Linear(n, 512), nn.ReLU())
        self.pi = nn.Linear(512, n_actions)
        self.value = nn.Linear(512, 1)

    def features(self, obs: torch.Tensor) -> torch.Tensor:
        """The 512 units both heads read; obs ``[N, C, H, W]`` uint8."""
        return self.fc(self.conv(obs.float().mul_(1.0 / 255)).flatten(1))

    def forward(self, obs: torch.Tensor):
        x = self.features(obs)
        return torch.softmax(self.pi(x), dim=-1), self.value(x).squeeze(-1)
