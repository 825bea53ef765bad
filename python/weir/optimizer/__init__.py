"""``flow.optimizer``: optimizers and learning-rate schedulers. Inside a train job,
``flow.optimizer.SGD(scheduler, momentum=0).minimize(loss)`` makes every call run the backward
pass and one update per trainable variable."""

from __future__ import annotations

from weir import _C, _context
from weir._blob import is_blob
from weir.optimizer import grad_clipping, loss_scale, warmup
from weir.optimizer import grad_clipping as _grad_clipping

__all__ = [
    "SGD", "Adam", "AdamW", "LazyAdam", "RMSProp", "LAMB", "LARS", "CombinedOptimizer",
    "PiecewiseConstantScheduler", "PiecewiseScalingScheduler", "CosineScheduler", "PolynomialScheduler",
    "PolynomialSchduler", "ExponentialScheduler", "InverseTimeScheduler", "NaturalExpScheduler",
    "LinearCosineScheduler", "grad_clipping", "warmup", "loss_scale",
]


# --- learning-rate schedulers ------------------------------------------------------------


class LrScheduler:
    """A learning-rate schedule driven by the job's train-step counter."""

    def __init__(self, c_schedule):
        self._c = c_schedule

    def learning_rate(self, train_step: int) -> float:
        """The rate used at `train_step` (0 for the first call)."""
        return self._c.learning_rate(int(train_step))

    def __repr__(self) -> str:
        return repr(self._c)


def _warmup(value):
    if value is None:
        return _C.Warmup()
    if not isinstance(value, warmup.Warmup):
        raise TypeError(f"warmup must come from flow.optimizer.warmup.constant/linear, got {value!r}")
    return value._c


class PiecewiseConstantScheduler(LrScheduler):
    """values[i] while boundaries[i-1] <= step < boundaries[i]; ([], [0.1]) is a constant 0.1."""

    def __init__(self, boundaries, values, warmup=None):
        super().__init__(_C.piecewise_constant_scheduler([int(b) for b in boundaries], [float(v) for v in values],
                                                         _warmup(warmup)))


class PiecewiseScalingScheduler(LrScheduler):
    def __init__(self, base_lr, boundaries, scale, warmup=None):
        scales = [float(s) for s in scale] if isinstance(scale, (list, tuple)) else None
        if scales is None:  # one factor, applied again at every boundary
            scales = [float(scale) ** (i + 1) for i in range(len(boundaries))]
        super().__init__(_C.piecewise_scaling_scheduler(float(base_lr), [int(b) for b in boundaries], scales,
                                                        _warmup(warmup)))


class CosineScheduler(LrScheduler):
    def __init__(self, base_lr, steps, alpha=0.0, warmup=None):
        super().__init__(_C.cosine_scheduler(float(base_lr), int(steps), float(alpha), _warmup(warmup)))


class PolynomialScheduler(LrScheduler):
    def __init__(self, base_lr, steps, end_learning_rate=0.0001, power=1.0, cycle=False, warmup=None):
        super().__init__(_C.polynomial_scheduler(float(base_lr), int(steps), float(end_learning_rate), float(power),
                                                 bool(cycle), _warmup(warmup)))


PolynomialSchduler = PolynomialScheduler  # OneFlow 0.2's spelling


class ExponentialScheduler(LrScheduler):
    def __init__(self, base_lr, steps, decay_rate, staircase=False, warmup=None):
        super().__init__(_C.exponential_scheduler(float(base_lr), int(steps), float(decay_rate), bool(staircase),
                                                  _warmup(warmup)))


class InverseTimeScheduler(LrScheduler):
    def __init__(self, base_lr, steps, decay_rate, staircase=False, warmup=None):
        super().__init__(_C.inverse_time_scheduler(float(base_lr), int(steps), float(decay_rate), bool(staircase),
                                                   _warmup(warmup)))


class NaturalExpScheduler(LrScheduler):
    def __init__(self, base_lr, steps, decay_rate, staircase=False, warmup=None):
        super().__init__(_C.natural_exp_scheduler(float(base_lr), int(steps), float(decay_rate), bool(staircase),
                                                  _warmup(warmup)))


class LinearCosineScheduler(LrScheduler):
    def __init__(self, base_lr, steps, num_periods=0.5, alpha=0.0, beta=0.001, warmup=None):
        super().__init__(_C.linear_cosine_scheduler(float(base_lr), int(steps), float(num_periods), float(alpha),
                                                    float(beta), _warmup(warmup)))


# --- optimizers ------------------------------------------------------------------------------


def _schedule(lr_scheduler, what):
    if isinstance(lr_scheduler, LrScheduler):
        return lr_scheduler._c
    if isinstance(lr_scheduler, (int, float)) and not isinstance(lr_scheduler, bool):
        return _C.piecewise_constant_scheduler([], [float(lr_scheduler)], _C.Warmup())
    raise TypeError(f"{what}: lr_scheduler must be a flow.optimizer scheduler or a number, got {lr_scheduler!r}")


def _set_loss_scale(c_optimizer, name, loss_scale_factor, loss_scale_policy):
    """Sets what an optimizer's loss_scale_factor= or loss_scale_policy= asks for on `c_optimizer`."""
    if loss_scale_policy is not None and loss_scale_factor is not None:
        raise ValueError(f"{name}: give loss_scale_factor or loss_scale_policy, not both")
    if isinstance(loss_scale_policy, loss_scale.static_loss_scale):
        loss_scale_factor = loss_scale_policy.loss_scale_factor
    elif isinstance(loss_scale_policy, loss_scale.dynamic_loss_scale):
        c_optimizer.set_dynamic_loss_scale(loss_scale_policy.initial_loss_scale, loss_scale_policy.increment_period,
                                           loss_scale_policy.multiplier)
    elif loss_scale_policy is not None:
        raise TypeError(f"{name}: loss_scale_policy must come from flow.optimizer.loss_scale, got {loss_scale_policy!r}")
    if loss_scale_factor is not None:
        c_optimizer.loss_scale_factor = float(loss_scale_factor)


def _set_weight_decay_filter(c_optimizer, name, includes, excludes):
    """The variables a decoupled weight decay applies to, by name: those in which an `includes` pattern
    is found (a regular-expression search), or all but those an `excludes` pattern is found in."""
    if includes is not None and excludes is not None:
        raise ValueError(f"{name}: give weight_decay_includes or weight_decay_excludes, not both")

    def patterns(value, what):
        if value is None:
            return []
        values = [value] if isinstance(value, str) else list(value)
        if not all(isinstance(v, str) for v in values):
            raise TypeError(f"{name}: {what} must be a string or a sequence of strings, got {value!r}")
        return values

    c_optimizer.weight_decay_includes = patterns(includes, "weight_decay_includes")
    c_optimizer.weight_decay_excludes = patterns(excludes, "weight_decay_excludes")


class Optimizer:
    """Base of the optimizers: ``minimize(loss)`` inside a train job."""

    def __init__(self, c_optimizer, loss_scale_factor=None, grad_clipping=None, loss_scale_policy=None,
                 variables=None):
        if variables is not None and not callable(variables) and not isinstance(variables, (list, tuple)):
            raise TypeError(f"{type(self).__name__}: variables must be a list of variable names (or blobs), or a "
                            f"function returning one, got {variables!r}")
        self._variables = variables
        if grad_clipping is not None:
            if not isinstance(grad_clipping, _grad_clipping.GlobalNormClip):
                raise TypeError(f"grad_clipping must be flow.optimizer.grad_clipping.by_global_norm(...), got {grad_clipping!r}")
            c_optimizer = _C.clip_by_global_norm(c_optimizer, grad_clipping.clip_norm)
        _set_loss_scale(c_optimizer, type(self).__name__, loss_scale_factor, loss_scale_policy)
        self._loss_scale_policy = loss_scale_policy
        self._c = c_optimizer

    def minimize(self, loss):
        """Trains on `loss` (a blob, or a list of blobs of one shape, which are summed). A
        per-example loss trains on its mean, as in OneFlow."""
        context = _context.current(f"flow.optimizer.{type(self).__name__}.minimize")
        if not context.is_train:
            raise RuntimeError(
                f"{context.function_name} is a predict job: an optimizer needs "
                "@flow.global_function(type=\"train\")"
            )
        if context.minimized:
            raise RuntimeError(f"{context.function_name}: minimize() may be called once per job")
        losses = list(loss) if isinstance(loss, (list, tuple)) else [loss]
        if not losses or not all(is_blob(l) for l in losses):
            raise TypeError(f"minimize: expected a blob or a list of blobs, got {loss!r}")
        total = losses[0]
        for other in losses[1:]:
            if other.shape != total.shape:
                raise ValueError(f"minimize: losses of different shapes {total.shape} and {other.shape}")
            total = total + other
        context.builder.minimize(self._resolved(), total._c)
        context.minimized = True

    def _resolved(self):
        """The optimizer to train with, its variables= resolved (a function is called in the job)."""
        if self._variables is not None:
            self._c.variables = self._variable_names(self._variables() if callable(self._variables) else self._variables)
        return self._c

    def _variable_names(self, variables) -> list:
        # OneFlow's variables=: names (as flow.get_all_variables() keys them), or the variables' blobs.
        names = []
        for v in variables:
            if is_blob(v):
                names.append(v.op_name)
            elif isinstance(v, str):
                names.append(v)
            else:
                raise TypeError(f"{type(self).__name__}: variables must hold variable names or blobs, got {v!r}")
        if not names:
            raise ValueError(f"{type(self).__name__}: variables is empty: give the variables to train")
        return names


class SGD(Optimizer):
    """OneFlow's SGD: default momentum 0.9 (pass momentum=0 for plain SGD)."""

    def __init__(self, lr_scheduler, loss_scale_factor=None, momentum=0.9, grad_clipping=None, train_step_lbn=None,
                 loss_scale_policy=None, variables=None):
        super().__init__(_C.sgd(_schedule(lr_scheduler, "SGD"), float(momentum)), loss_scale_factor, grad_clipping,
                         loss_scale_policy, variables=variables)


class Adam(Optimizer):
    """Adam without bias correction unless asked for (OneFlow's default)."""

    def __init__(self, lr_scheduler, beta1=0.9, beta2=0.999, epsilon=1e-8, do_bias_correction=False,
                 loss_scale_factor=None, grad_clipping=None, train_step_lbn=None, loss_scale_policy=None,
                 variables=None):
        super().__init__(_C.adam(_schedule(lr_scheduler, "Adam"), float(beta1), float(beta2), float(epsilon),
                                 bool(do_bias_correction)), loss_scale_factor, grad_clipping, loss_scale_policy,
                         variables=variables)


class AdamW(Optimizer):
    def __init__(self, lr_scheduler, beta1=0.9, beta2=0.999, epsilon=1e-8, do_bias_correction=False,
                 loss_scale_factor=None, weight_decay=None, weight_decay_includes=None, weight_decay_excludes=None,
                 grad_clipping=None, train_step_lbn=None, loss_scale_policy=None, variables=None):
        c_optimizer = _C.adamw(_schedule(lr_scheduler, "AdamW"), float(weight_decay or 0.0), float(beta1),
                               float(beta2), float(epsilon), bool(do_bias_correction))
        _set_weight_decay_filter(c_optimizer, "AdamW", weight_decay_includes, weight_decay_excludes)
        super().__init__(c_optimizer, loss_scale_factor, grad_clipping, loss_scale_policy, variables=variables)


class LazyAdam(Optimizer):
    """Adam with bias correction that leaves an element alone where its gradient is 0 (OneFlow's
    LazyAdam): embedding rows a batch did not read keep their values and moments."""

    def __init__(self, lr_scheduler, beta1=0.9, beta2=0.999, epsilon=1e-8, loss_scale_factor=None, grad_clipping=None,
                 train_step_lbn=None, loss_scale_policy=None, variables=None):
        c_optimizer = _C.adam(_schedule(lr_scheduler, "LazyAdam"), float(beta1), float(beta2), float(epsilon), True)
        c_optimizer.lazy = True
        super().__init__(c_optimizer, loss_scale_factor, grad_clipping, loss_scale_policy, variables=variables)


class RMSProp(Optimizer):
    def __init__(self, lr_scheduler, decay_rate=0.99, epsilon=1e-8, centered=False, loss_scale_factor=None,
                 grad_clipping=None, train_step_lbn=None, loss_scale_policy=None, variables=None):
        super().__init__(_C.rmsprop(_schedule(lr_scheduler, "RMSProp"), float(decay_rate), float(epsilon),
                                    bool(centered)), loss_scale_factor, grad_clipping, loss_scale_policy,
                         variables=variables)


class LAMB(Optimizer):
    def __init__(self, lr_scheduler, beta1=0.9, beta2=0.999, epsilon=1e-6, weight_decay=0.0, loss_scale_factor=None,
                 grad_clipping=None, train_step_lbn=None, loss_scale_policy=None, weight_decay_includes=None,
                 weight_decay_excludes=None, variables=None):
        c_optimizer = _C.lamb(_schedule(lr_scheduler, "LAMB"), float(beta1), float(beta2), float(epsilon),
                              float(weight_decay or 0.0))
        _set_weight_decay_filter(c_optimizer, "LAMB", weight_decay_includes, weight_decay_excludes)
        super().__init__(c_optimizer, loss_scale_factor, grad_clipping, loss_scale_policy, variables=variables)


class LARS(Optimizer):
    """OneFlow's LARS: for each variable the rate lr · lars_coefficient · ‖w‖ / (epsilon + ‖g‖) (g with
    the variable's regularizer, norms over the whole variable), then momentum: v = momentum_beta · v −
    rate · g, w += v."""

    def __init__(self, lr_scheduler, momentum_beta=0.9, epsilon=1e-9, lars_coefficient=0.0001, loss_scale_factor=None,
                 grad_clipping=None, train_step_lbn=None, loss_scale_policy=None, variables=None):
        c_optimizer = _C.lars(_schedule(lr_scheduler, "LARS"), float(momentum_beta), float(epsilon),
                              float(lars_coefficient))
        super().__init__(c_optimizer, loss_scale_factor, grad_clipping, loss_scale_policy, variables=variables)


class CombinedOptimizer(Optimizer):
    """OneFlow's CombinedOptimizer: several optimizers in one train job. Each trains the variables its
    ``variables=`` names (no variable in two of them; the job's variables that none names keep their
    values), with its own learning rate, gradient clipping and weight decay. The loss scale is the
    combined optimizer's: its parts take none."""

    def __init__(self, optimizers, loss_scale_factor=None, train_step_lbn=None, loss_scale_policy=None):
        if not isinstance(optimizers, (list, tuple)) or not optimizers:
            raise TypeError(f"CombinedOptimizer: optimizers must be a non-empty list of optimizers, got {optimizers!r}")
        for i, part in enumerate(optimizers):
            if isinstance(part, CombinedOptimizer) or not isinstance(part, Optimizer):
                raise TypeError(f"CombinedOptimizer: optimizers[{i}] must be a flow.optimizer optimizer other than "
                                f"CombinedOptimizer, got {part!r}")
            if part._c.loss_scale_factor != 1.0 or part._loss_scale_policy is not None:
                raise ValueError(f"CombinedOptimizer: optimizers[{i}] ({type(part).__name__}) has a loss scale of its "
                                 "own: give loss_scale_factor or loss_scale_policy to CombinedOptimizer")
        self._parts = list(optimizers)
        super().__init__(_C.combined([]), loss_scale_factor, None, loss_scale_policy)

    def _resolved(self):
        # The parts' variables= are resolved in the job, like a single optimizer's.
        self._c.parts = [part._resolved() for part in self._parts]
        return self._c

