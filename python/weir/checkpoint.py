"""``flow.checkpoint`` (OneFlow 0.3's model IO) and the variable accessors
``flow.load_variables`` / ``flow.get_all_variables``. Checkpoints use OneFlow's layout: a folder
per variable holding its raw ``out`` bytes and a ``meta`` file, and a ``snapshot_done`` marker."""

from __future__ import annotations

import os
import re

import numpy as np

from weir import _C, _session, dtypes

__all__ = ["save", "get", "load_variables", "get_all_variables", "Variable"]

_META_DTYPES = {"kFloat": np.float32, "kDouble": np.float64, "kInt32": np.int32, "kInt64": np.int64,
                "kUInt8": np.uint8, "kInt8": np.int8, "kBool": np.bool_, "kChar": np.int8}


class Variable:
    """A variable's value (from a checkpoint or the session): ``.numpy()``, ``.shape``, ``.dtype``."""

    def __init__(self, name: str, array: np.ndarray):
        self.name = name
        self._array = array

    def numpy(self) -> np.ndarray:
        return self._array

    @property
    def shape(self) -> tuple:
        return self._array.shape

    @property
    def dtype(self):
        return dtypes.from_numpy(self._array.dtype)

    def __repr__(self) -> str:
        return f"Variable({self.name!r}, shape={self.shape}, dtype={self.dtype!r})"


def _started_session():
    """The default session, started (every job function compiled) and with no call or callback
    pending."""
    session = _session.default_session()
    c_session = session.start()
    c_session.sync()
    return c_session


def _as_array(value, name):
    if isinstance(value, Variable):
        return value.numpy()
    if isinstance(value, np.ndarray):
        return np.ascontiguousarray(value)
    raise TypeError(f"variable {name!r}: expected a numpy array or a flow.checkpoint variable, got {type(value).__name__}")


def save(path, var_dict=None):
    """Writes every variable of the session (or those in `var_dict`) to `path`, which must not
    exist or be empty."""
    path = os.fspath(path)
    if var_dict is not None:
        _refuse_non_empty(path)
        _C.save_checkpoint(path, {name: _as_array(v, name) for name, v in var_dict.items()})
        return
    c_session = _started_session()
    # In a session of several processes rank 0 alone writes, and checks the folder, while the others wait
    # for its outcome: another rank may reach this point after rank 0 has written the folder.
    if not _session.distributed_options():
        _refuse_non_empty(path)
    c_session.save_checkpoint(path)


def _refuse_non_empty(path):
    if os.path.isdir(path) and os.listdir(path):
        raise FileExistsError(f"flow.checkpoint.save: {path!r} is a non-empty folder; remove it or save to another path")


def _read_one(path):
    meta_path = os.path.join(path, "meta")
    if not os.path.exists(meta_path):
        raise FileNotFoundError(f"flow.checkpoint.get: {path} has an 'out' file but no 'meta' (a OneFlow 0.2 save?)")
    with open(meta_path) as f:
        meta = f.read()
    dims = [int(d) for d in re.findall(r"dim:\s*(-?\d+)", meta)]
    dtype = re.search(r"data_type:\s*(\w+)", meta)
    if dtype is None or dtype.group(1) not in _META_DTYPES:
        raise ValueError(f"flow.checkpoint.get: {meta_path} has no data_type Weir knows: {meta!r}")
    array = np.fromfile(os.path.join(path, "out"), dtype=_META_DTYPES[dtype.group(1)])
    return array.reshape(dims)


def get(path):
    """The variables saved at `path` as a dict name -> Variable; if `path` is one variable's
    folder (it holds `out`), that Variable."""
    path = os.fspath(path)
    if os.path.isfile(os.path.join(path, "out")):
        return Variable(os.path.basename(os.path.normpath(path)), _read_one(path))
    return {name: Variable(name, array) for name, array in _C.load_checkpoint(path).items()}


def load_variables(value_dict, ignore_mismatch=True):
    """Assigns values (numpy arrays or Variables) to the session's variables by name. Names no
    variable has are ignored, unless `ignore_mismatch` is False (then RuntimeError, as OneFlow's); a
    value of another shape or dtype is a ValueError, as in ``flow.train.CheckPoint().load``. Nothing
    is assigned when any value is refused."""
    arrays = {name: _as_array(value, name) for name, value in value_dict.items()}
    session = _started_session()
    try:
        session.set_variables(arrays, ignore_unknown=bool(ignore_mismatch))
    except ValueError as error:
        if "no variable named" in str(error):
            raise RuntimeError(str(error)) from error
        raise


def get_all_variables():
    """Every variable of the session as a dict name -> Variable (copies of the current values)."""
    return {name: Variable(name, array) for name, array in _started_session().get_variables().items()}
