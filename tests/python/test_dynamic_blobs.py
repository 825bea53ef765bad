"""Data-dependent shapes, OneFlow's dynamic blobs: flow.argwhere (and flow.where without x and y),
flow.sync_dynamic_resize and flow.tensor_buffer_to_list_of_tensors(dynamic_out=True) make blobs of
which only a leading block is meant, its size known when the job runs. A job returns them cut to
that size; no op reads them; flow.cast_to_static_shape gives the whole value. And the tensor_buffer
conversions (flow.tensor_to_tensor_buffer, tensor_buffer_to_tensor, gen_tensor_buffer)."""

from typing import Tuple

import numpy as np
import pytest
import weir as flow
import weir.typing as tp


def _random(shape, dtype, rng):
    x = (rng.random(shape) < 0.5) * rng.integers(1, 5, size=shape)
    return x.astype(dtype)


def _config(view="consistent"):
    config = flow.FunctionConfig()
    config.default_logical_view(flow.scope.mirrored_view() if view == "mirrored" else flow.scope.consistent_view())
    return config


@pytest.mark.parametrize("shape", [(10,), (30, 4), (8, 25, 20), (2, 3, 1, 4)])
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32, np.int64, np.int8, np.uint8, np.float16])
@pytest.mark.parametrize("index_dtype", [flow.int32, flow.int64])
def test_argwhere_matches_numpy(shape, dtype, index_dtype):
    rng = np.random.default_rng(hash((shape, np.dtype(dtype).name)) % 2**32)
    x = _random(shape, dtype, rng)

    @flow.global_function(function_config=_config())
    def job(x: tp.Numpy.Placeholder(shape, dtype=flow.dtypes.as_dtype(dtype))) -> tp.ListNumpy:
        return flow.argwhere(x, dtype=index_dtype)

    (out,) = job(x)
    assert out.dtype == index_dtype.numpy_dtype
    np.testing.assert_array_equal(out, np.argwhere(x))


def test_argwhere_of_bools_negative_zero_and_nan():
    x = np.array([[0.0, -0.0, np.nan], [1.0, 0.0, -np.inf]], np.float32)

    @flow.global_function()
    def job(x: tp.Numpy.Placeholder((2, 3)), b: tp.Numpy.Placeholder((2, 3), dtype=flow.bool_)
            ) -> Tuple[tp.Numpy, tp.Numpy]:
        return flow.argwhere(x), flow.where(b)

    b = np.array([[True, False, True], [False, False, True]])
    out, where = job(x, b)
    np.testing.assert_array_equal(out, [[0, 2], [1, 0], [1, 2]])  # -0.0 is zero, NaN is not
    np.testing.assert_array_equal(where, np.argwhere(b))


def test_each_call_has_its_own_count_all_zeros_and_all_nonzero():
    @flow.global_function()
    def job(x: tp.Numpy.Placeholder((20, 4), dtype=flow.int32)) -> tp.Numpy:
        return flow.argwhere(x, dtype=flow.int64)

    rng = np.random.default_rng(3)
    for x in [_random((20, 4), np.int32, rng) for _ in range(3)] + [np.zeros((20, 4), np.int32),
                                                                     np.ones((20, 4), np.int32)]:
        out = job(x)
        assert out.shape == (np.count_nonzero(x), 2)
        np.testing.assert_array_equal(out, np.argwhere(x))


def test_mirrored_devices_each_cut_to_their_own_count():
    flow.config.cpu_device_num(2)

    @flow.global_function(function_config=_config("mirrored"))
    def job(x: tp.ListNumpy.Placeholder((10, 5))) -> tp.ListNumpy:
        return flow.argwhere(x)

    rng = np.random.default_rng(4)
    a, b = _random((10, 5), np.float32, rng), _random((10, 5), np.float32, rng)
    b[:] = 0
    b[3, 4] = 7
    out = job([a, b])
    np.testing.assert_array_equal(out[0], np.argwhere(a))
    np.testing.assert_array_equal(out[1], [[3, 4]])


def test_async_callbacks_and_futures_get_the_cut_rows():
    x = np.array([0, 3, 0, 5], np.float32)

    @flow.global_function()
    def job(x: tp.Numpy.Placeholder((4,))) -> tp.Callback[tp.Numpy]:
        return flow.argwhere(x)

    got = []
    job(x)(got.append)
    flow.sync_default_session()
    np.testing.assert_array_equal(got[0], [[1], [3]])

    @flow.global_function()
    def legacy(x: tp.Numpy.Placeholder((4,))):
        return flow.argwhere(x)

    np.testing.assert_array_equal(legacy(x).get().numpy_list()[0], [[1], [3]])


@pytest.mark.parametrize("size_dtype", [flow.int32, flow.int64])
@pytest.mark.parametrize("shape", [(100,), (100, 1), (30, 10), (10, 10, 20)])
def test_sync_dynamic_resize_returns_the_leading_rows(size_dtype, shape):
    @flow.global_function()
    def job(x: tp.Numpy.Placeholder(shape, dtype=flow.float64),
            size: tp.Numpy.Placeholder((1,), dtype=size_dtype)) -> tp.ListNumpy:
        return flow.sync_dynamic_resize(x, size)

    x = np.random.default_rng(5).random(shape)
    for rows in (0, 3, shape[0]):
        (out,) = job(x, np.array([rows], size_dtype.numpy_dtype))
        np.testing.assert_array_equal(out, x[:rows])
    with pytest.raises(ValueError, match=r"its size is \[-1\], outside its blob's shape"):
        job(x, np.array([-1], size_dtype.numpy_dtype))
    with pytest.raises(ValueError, match="outside its blob's shape"):
        job(x, np.array([shape[0] + 1], size_dtype.numpy_dtype))


def test_no_op_reads_a_dynamic_blob_but_cast_to_static_shape_gives_it_whole():
    x = np.array([[0, 2], [3, 0], [0, 0]], np.float32)

    @flow.global_function()
    def job(x: tp.Numpy.Placeholder((3, 2))) -> tp.Numpy:
        found = flow.argwhere(x)
        assert found.is_dynamic and found.static_shape == (6, 2)
        with pytest.raises(ValueError, match=r"\[reduce_sum\] input 'x' .* has a data-dependent number of rows"):
            flow.math.reduce_sum(found)
        with pytest.raises(ValueError, match=r"\[watch\] blob .* data-dependent"):
            flow.watch(found, print)
        return flow.cast_to_static_shape(found) + 0

    np.testing.assert_array_equal(job(x), [[0, 1], [1, 0], [0, 0], [0, 0], [0, 0], [0, 0]])


def test_bad_arguments_are_named():
    @flow.global_function()
    def scalar(x: tp.Numpy.Placeholder((3,))) -> tp.Numpy:
        return flow.argwhere(flow.reshape(flow.math.reduce_sum(x), ()))

    with pytest.raises(ValueError, match=r"\[argwhere\] x must have 1 to 12 axes, got \(\)"):
        scalar(np.ones(3, np.float32))

    @flow.global_function()
    def float_indices(x: tp.Numpy.Placeholder((3,))) -> tp.Numpy:
        return flow.argwhere(x, dtype=flow.float32)

    with pytest.raises(ValueError, match=r"\[argwhere\] dtype must be i32 or i64, got f32"):
        float_indices(np.ones(3, np.float32))

    @flow.global_function()
    def wide_size(x: tp.Numpy.Placeholder((3,)), size: tp.Numpy.Placeholder((2,), dtype=flow.int32)) -> tp.Numpy:
        return flow.sync_dynamic_resize(x, size)

    with pytest.raises(ValueError, match=r"size must be an i32 or i64 tensor of shape \(k\), 1 <= k <= 1"):
        wide_size(np.ones(3, np.float32), np.ones(2, np.int32))


def test_eager_argwhere_numpy_is_cut():
    flow.enable_eager_execution(True)
    seen = []

    @flow.global_function()
    def job(x: tp.Numpy.Placeholder((5,))):
        seen.append(flow.argwhere(x).numpy())

    job(np.array([0, 1, 0, 2, 0], np.float32))
    np.testing.assert_array_equal(seen[0], [[1], [3]])


# --- tensor_buffers

def test_tensor_to_tensor_buffer_and_back():
    x = np.random.default_rng(6).random((16, 24, 32, 36), dtype=np.float32)

    @flow.global_function()
    def job(x: tp.Numpy.Placeholder(x.shape)) -> tp.Numpy:
        buffer = flow.tensor_to_tensor_buffer(x, instance_dims=2)
        assert buffer.shape == (16, 24) and buffer.dtype == flow.tensor_buffer
        return flow.tensor_buffer_to_tensor(buffer, dtype=flow.float32, instance_shape=[32, 36])

    np.testing.assert_array_equal(job(x), x)


def test_tensor_buffer_to_tensor_names_an_item_that_does_not_fit():
    @flow.global_function()
    def job(x: tp.Numpy.Placeholder((4, 6), dtype=flow.int32)) -> tp.Numpy:
        buffer = flow.tensor_to_tensor_buffer(x, instance_dims=1)
        return flow.tensor_buffer_to_tensor(buffer, dtype=flow.int32, instance_shape=[5])

    with pytest.raises(RuntimeError, match=r"item 0 is i32\(6\), but dtype and instance_shape ask for i32\(5\)"):
        job(np.zeros((4, 6), np.int32))

    @flow.global_function()
    def too_many(x: tp.Numpy.Placeholder((4, 6))) -> tp.Numpy:
        return flow.tensor_buffer_to_tensor(flow.tensor_to_tensor_buffer(x, instance_dims=2), flow.float32, [4, 6])

    with pytest.raises(ValueError, match=r"x must have more than instance_dims = 2 axes, got \(4,6\)"):
        too_many(np.zeros((4, 6), np.float32))


@pytest.mark.parametrize("shape", [(2, 2), (4,)])
@pytest.mark.parametrize("dtype", [flow.float32, flow.float64, flow.int32, flow.int64])
def test_gen_tensor_buffer_to_a_list_of_dynamic_tensors(shape, dtype):
    shapes = [(10, 10), (50, 50), (20, 80), (100, 100)]

    @flow.global_function()
    def job():
        with flow.scope.placement("cpu", "0:0"):
            buffer = flow.gen_tensor_buffer(shape, shapes, [0.0, 1.0, 2.0, 3.0], dtype)
            return flow.tensor_buffer_to_list_of_tensors(buffer, (100, 100), dtype, True)

    outs = job().get()
    for i, (out, item) in enumerate(zip(outs, shapes)):
        np.testing.assert_array_equal(out.numpy_list()[0], np.full(item, i, dtype.numpy_dtype))


def test_list_of_static_tensors_and_the_static_shape_of_a_dynamic_one():
    @flow.global_function()
    def job() -> Tuple[tp.Numpy, tp.Numpy, tp.Numpy]:
        buffer = flow.gen_tensor_buffer((2,), [(2, 3), (2, 3)], [1.5, -2.0], flow.float32)
        a, b = flow.tensor_buffer_to_list_of_tensors(buffer, (2, 3), flow.float32)
        small = flow.tensor_buffer_to_list_of_tensors(
            flow.gen_tensor_buffer((1,), [(1, 2)], [4.0], flow.float32), (2, 3), flow.float32, dynamic_out=True)[0]
        return a, b * 2, flow.cast_to_static_shape(small) + 0

    a, b, padded = job()
    np.testing.assert_array_equal(a, np.full((2, 3), 1.5, np.float32))
    np.testing.assert_array_equal(b, np.full((2, 3), -4.0, np.float32))
    np.testing.assert_array_equal(padded, [[4, 4, 0], [0, 0, 0]])

    @flow.global_function()
    def too_big() -> tp.Numpy:
        buffer = flow.gen_tensor_buffer((1,), [(3, 3)], [1.0], flow.float32)
        return flow.tensor_buffer_to_list_of_tensors(buffer, (2, 3), flow.float32, dynamic_out=True)[0]

    with pytest.raises(RuntimeError, match=r"item 0 is f32\(3,3\), but the outputs are f32\(2,3\) \(an item may be "
                                           r"smaller on any axis\)"):
        too_big()


# --- tensor lists of several tensors

def _tensor_list_config():
    config = flow.FunctionConfig()
    config.default_logical_view(flow.scope.mirrored_view())
    return config


def test_tensor_list_split_gives_each_tensor_without_its_row_axis():
    @flow.global_function(function_config=_tensor_list_config())
    def job(x: tp.ListListNumpy.Placeholder((3, 5, 4))) -> Tuple[tp.ListNumpy, tp.ListNumpy]:
        first, second = flow.tensor_list_split(x)
        return first, second * 2

    rng = np.random.default_rng(7)
    a, b = rng.random((1, 5, 4), dtype=np.float32), rng.random((1, 2, 4), dtype=np.float32)
    first, second = job([[a, b]])
    np.testing.assert_array_equal(first[0], a[0])
    np.testing.assert_array_equal(second[0], b[0] * 2)
    c = rng.random((1, 3, 3), dtype=np.float32)  # another pair of shapes: compiled again
    first, second = job([[c, a]])
    np.testing.assert_array_equal(first[0], c[0])
    np.testing.assert_array_equal(second[0], a[0] * 2)


def test_a_tensor_list_through_a_tensor_buffer_and_back_on_two_devices():
    flow.config.cpu_device_num(2)

    @flow.global_function(function_config=_tensor_list_config())
    def job(x: tp.ListListNumpy.Placeholder((2, 5, 4))) -> tp.ListListNumpy:
        buffer = flow.tensor_list_to_tensor_buffer(x)
        return flow.tensor_buffer_to_tensor_list(buffer, shape=(5, 4), dtype=flow.float)

    rng = np.random.default_rng(8)
    lists = [[rng.random((1, 5, 4), dtype=np.float32), rng.random((1, 3, 4), dtype=np.float32)],
             [rng.random((1, 2, 2), dtype=np.float32), rng.random((1, 5, 1), dtype=np.float32)]]
    with pytest.raises(NotImplementedError, match="different shapes"):
        job(lists)
    lists[1] = [rng.random((1, 5, 4), dtype=np.float32), rng.random((1, 3, 4), dtype=np.float32)]
    out = job(lists)
    for got, want in zip(out, lists):
        assert len(got) == 2
        for g, w in zip(got, want):
            np.testing.assert_array_equal(g, w)


def test_legacy_futures_give_tensor_lists_and_eager_mode_splits_them():
    @flow.global_function(function_config=_tensor_list_config())
    def job(x: tp.ListListNumpy.Placeholder((2, 5, 4))):
        return flow.tensor_buffer_to_tensor_list(flow.tensor_list_to_tensor_buffer(x), shape=(5, 4), dtype=flow.float)

    a, b = np.ones((1, 5, 4), np.float32), np.full((1, 4, 4), 2, np.float32)
    lists = job([[a, b]]).get().numpy_lists()
    assert len(lists) == 1 and len(lists[0]) == 2
    np.testing.assert_array_equal(lists[0][0], a)
    np.testing.assert_array_equal(lists[0][1], b)

    flow.clear_default_session()
    flow.enable_eager_execution(True)
    seen = []

    @flow.global_function(function_config=_tensor_list_config())
    def eager(x: tp.ListListNumpy.Placeholder((2, 5, 4))):
        first, second = flow.tensor_list_split(x)
        seen.extend([first.numpy(), second.numpy()])

    eager([[a, b]])
    np.testing.assert_array_equal(seen[0], a[0])
    np.testing.assert_array_equal(seen[1], b[0])


def test_a_tensor_list_is_refused_where_a_blob_is_expected():
    @flow.global_function(function_config=_tensor_list_config())
    def job(x: tp.ListListNumpy.Placeholder((2, 3))) -> tp.ListListNumpy:
        return flow.math.relu(x)

    (out,) = job([[np.full((1, 3), -1, np.float32)]])  # one tensor: the list is that tensor's blob
    np.testing.assert_array_equal(out[0], np.zeros((1, 3)))
    with pytest.raises(TypeError, match=r"flow.math.relu: argument 'x' is a tensor list of 2 tensors"):
        job([[np.ones((1, 3), np.float32), np.ones((1, 2), np.float32)]])
    with pytest.raises(ValueError, match=r"holds 3 tensors, more than its placeholder's 2"):
        job([[np.ones((1, 3), np.float32)] * 3])
