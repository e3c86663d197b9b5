"""Model sizes for Atari Q models: image observations and a discrete action set."""

from __future__ import annotations

__all__ = ["AtariMixin"]


class AtariMixin:
    """Put before a Q agent class: the model gets ``image_shape`` and ``output_size``."""

    def make_env_to_model_kwargs(self, env_spaces) -> dict:
        image_shape = tuple(env_spaces.observation.shape)
        if len(image_shape) != 3:
            raise ValueError(
                f"{type(self).__name__} needs image observations (C, H, W), got shape "
                f"{image_shape}; use the generic agent (e.g. DqnAgent) for vector observations"
            )
        return dict(image_shape=image_shape, output_size=int(env_spaces.action.n))
