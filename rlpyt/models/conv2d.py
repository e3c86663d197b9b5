"""Convolutional feature extractors for image observations."""

from __future__ import annotations

from collections.abc import Sequence

import torch

from rlpyt.models.mlp import MlpModel
from rlpyt.utils.tensor import infer_leading_dims, restore_leading_dims


def _conv_out_length(length: int, kernel_size: int, stride: int, padding: int) -> int:
    """Output length of a conv or max-pool layer along one spatial axis (dilation 1)."""
    return (length + 2 * padding - kernel_size) // stride + 1


class Conv2dModel(torch.nn.Module):
    """A stack of 2-D convolutions, each followed by a nonlinearity.

    Input ``[..., C, H, W]`` (any leading dims), output ``[..., C', H', W']``.

    Args:
        in_channels: channels of the input image (e.g. stacked frames).
        channels: output channels of each conv layer.
        kernel_sizes: kernel size of each conv layer.
        strides: stride of each conv layer.
        paddings: zero-padding of each conv layer; ``None`` (default) means no padding.
        nonlinearity: module class applied after each conv layer (default ``torch.nn.ReLU``).
        use_maxpool: if True, every conv has stride 1 and is followed by a ``MaxPool2d`` with the
            given stride (downsampling by pooling instead of strided convolution). Default False.
        head_sizes: not supported here because the flattened size depends on the image size,
            which this model does not know; pass ``None`` and use ``Conv2dHeadModel`` for a conv
            stack with an MLP head.
    """

    def __init__(
        self,
        in_channels: int,
        channels: Sequence[int],
        kernel_sizes: Sequence[int],
        strides: Sequence[int],
        paddings: Sequence[int] | None = None,
        nonlinearity: type[torch.nn.Module] = torch.nn.ReLU,
        use_maxpool: bool = False,
        head_sizes: Sequence[int] | None = None,
    ):
        super().__init__()
        if head_sizes is not None:
            raise ValueError(
                f"Conv2dModel got head_sizes={head_sizes!r}, but it cannot size an MLP head "
                "without the image shape; use Conv2dHeadModel(image_shape, ..., hidden_sizes=...)"
            )
        if paddings is None:
            paddings = [0] * len(channels)
        lengths = {
            "channels": len(channels),
            "kernel_sizes": len(kernel_sizes),
            "strides": len(strides),
            "paddings": len(paddings),
        }
        if len(set(lengths.values())) != 1:
            raise ValueError(f"Conv2dModel needs one entry per layer in each list, got {lengths}")
        layers: list[torch.nn.Module] = []
        last_channels = in_channels
        for out_channels, kernel, stride, padding in zip(channels, kernel_sizes, strides, paddings):
            conv_stride = 1 if use_maxpool else stride
            layers += [
                torch.nn.Conv2d(last_channels, out_channels, kernel, conv_stride, padding),
                nonlinearity(),
            ]
            if use_maxpool and stride > 1:
                layers.append(torch.nn.MaxPool2d(stride))
            last_channels = out_channels
        self.conv = torch.nn.Sequential(*layers)

    def forward(self, input: torch.Tensor) -> torch.Tensor:
        lead_shape = input.shape[:-3]
        output = self.conv(input.reshape(-1, *input.shape[-3:]))
        return output.reshape(*lead_shape, *output.shape[1:])

    def conv_out_size(self, h: int, w: int, c: int | None = None) -> int:
        """Number of features output for an ``h x w`` image (``c`` is accepted and unused:
        the channel count is fixed by the first conv layer)."""
        channels = c
        for layer in self.conv:
            if isinstance(layer, torch.nn.Conv2d):
                h = _conv_out_length(h, layer.kernel_size[0], layer.stride[0], layer.padding[0])
                w = _conv_out_length(w, layer.kernel_size[1], layer.stride[1], layer.padding[1])
                channels = layer.out_channels
            elif isinstance(layer, torch.nn.MaxPool2d):
                h = _conv_out_length(h, layer.kernel_size, layer.stride, layer.padding)
                w = _conv_out_length(w, layer.kernel_size, layer.stride, layer.padding)
            else:
                continue
            if h < 1 or w < 1:
                raise ValueError(f"the conv layers shrink the image to {h} x {w}; use a larger one")
        return h * w * channels


class Conv2dHeadModel(torch.nn.Module):
    """Conv layers, flattened, then an MLP: ``[..., C, H, W] -> [..., output_size]``.

    Args:
        image_shape: ``(C, H, W)`` of one input image.
        channels, kernel_sizes, strides, paddings, nonlinearity, use_maxpool: as ``Conv2dModel``.
        hidden_sizes: hidden layer widths of the MLP head (int, sequence or ``None``).
        output_size: width of a final linear layer; ``None`` (default) ends at the last hidden
            layer (with its nonlinearity).
    """

    def __init__(
        self,
        image_shape: Sequence[int],
        channels: Sequence[int],
        kernel_sizes: Sequence[int],
        strides: Sequence[int],
        hidden_sizes: int | Sequence[int] | None,
        output_size: int | None = None,
        paddings: Sequence[int] | None = None,
        nonlinearity: type[torch.nn.Module] = torch.nn.ReLU,
        use_maxpool: bool = False,
    ):
        super().__init__()
        if len(image_shape) != 3:
            raise ValueError(f"image_shape must be (C, H, W), got {tuple(image_shape)!r}")
        c, h, w = image_shape
        self.conv = Conv2dModel(
            in_channels=c,
            channels=channels,
            kernel_sizes=kernel_sizes,
            strides=strides,
            paddings=paddings,
            nonlinearity=nonlinearity,
            use_maxpool=use_maxpool,
        )
        conv_out_size = self.conv.conv_out_size(h, w)
        if hidden_sizes or output_size is not None:
            self.head = MlpModel(conv_out_size, hidden_sizes, output_size, nonlinearity)
            self._output_size = self.head.output_size
        else:
            self.head = torch.nn.Identity()
            self._output_size = conv_out_size

    def forward(self, input: torch.Tensor) -> torch.Tensor:
        lead_dim, T, B, _ = infer_leading_dims(input, 3)
        features = self.conv(input.reshape(T * B, *input.shape[lead_dim:]))
        output = self.head(features.reshape(T * B, -1))
        return restore_leading_dims(output, lead_dim, T, B)

    @property
    def output_size(self) -> int:
        return self._output_size
