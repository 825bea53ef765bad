"""``flow.optimizer.loss_scale``: how an optimizer scales the loss before the backward pass (OneFlow's
``loss_scale_policy=``). ``static_loss_scale(f)`` multiplies the loss by f and divides every gradient
by f before the update (the optimizer's ``loss_scale_factor``). ``dynamic_loss_scale`` keeps float16
gradients finite, as OneFlow's: the scale lives in the variable ``System-Train-LossScale-<job>``; a step
whose gradients are not all finite updates no variable (nor optimizer slot), divides the scale by
``multiplier`` (not below 1) and counts itself in ``System-Train-SkippedSteps-<job>``; after
``increment_period`` finite steps in a row (``System-Train-LossScaleGoodSteps-<job>``) the scale is
multiplied by ``multiplier``. Read them like any variable (``flow.get_all_variables()``, checkpoints).
The train step counts skipped steps too. bfloat16 (Weir's mixed precision on the CPU) has float32's
range and needs no scaling, but accepts either policy."""

from __future__ import annotations

__all__ = ["LossScalePolicy", "static_loss_scale", "dynamic_loss_scale"]


class LossScalePolicy:
    """Base of the loss-scale policies an optimizer takes as ``loss_scale_policy``."""


class static_loss_scale(LossScalePolicy):  # noqa: N801 (OneFlow's name)
    """The loss times `loss_scale_factor`, every gradient divided by it before the update."""

    def __init__(self, loss_scale_factor: float):
        factor = float(loss_scale_factor)
        if not factor > 0:
            raise ValueError(f"static_loss_scale: loss_scale_factor must be > 0, got {loss_scale_factor!r}")
        self.loss_scale_factor = factor

    def __repr__(self) -> str:
        return f"static_loss_scale({self.loss_scale_factor})"


class dynamic_loss_scale(LossScalePolicy):  # noqa: N801 (OneFlow's name)
    """A factor that starts at `initial_loss_scale`, is divided by `multiplier` after a step whose
    gradients are not finite (that step updates nothing) and multiplied by it after
    `increment_period` finite steps in a row: for float16 training."""

    def __init__(self, initial_loss_scale=2 ** 30, increment_period=2000, multiplier=2.0):
        if not float(initial_loss_scale) > 0:
            raise ValueError(f"dynamic_loss_scale: initial_loss_scale must be > 0, got {initial_loss_scale!r}")
        if int(increment_period) < 1:
            raise ValueError(f"dynamic_loss_scale: increment_period must be >= 1, got {increment_period!r}")
        if not float(multiplier) > 1:
            raise ValueError(f"dynamic_loss_scale: multiplier must be > 1, got {multiplier!r}")
        self.initial_loss_scale = float(initial_loss_scale)
        self.increment_period = int(increment_period)
        self.multiplier = float(multiplier)

    def __repr__(self) -> str:
        return (f"dynamic_loss_scale(initial_loss_scale={self.initial_loss_scale}, "
                f"increment_period={self.increment_period}, multiplier={self.multiplier})")
