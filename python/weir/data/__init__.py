"""``flow.data``: datasets as numpy batches (``load_mnist``), and the data pipeline that a job runs
itself (OneFlow's readers and decoders): ``ofrecord_reader`` reads batches of OFRecords from part
files, the decoders turn them into tensors, ``decode_random`` draws synthetic batches,
``megatron_gpt_mmap_data_loader`` reads token samples from a Megatron-LM dataset. Each is an op of
the job, run on the host; a job built from them needs no placeholders. ``weir.data.ofrecord`` writes
OFRecord datasets (``python -m weir.data.ofrecord --help``), ``weir.data.megatron`` Megatron-LM ones
(``python -m weir.data.megatron --help``)."""

from __future__ import annotations

import os
import random as _random

import numpy as np

from weir import _C, _context, dtypes
from weir import initializers as _init
from weir._blob import Blob, to_c_dtype
from weir._ops_util import add_op, check_blob, op_name
from weir.ops import get_variable

__all__ = [
    "load_mnist",
    "ofrecord_reader",
    "OFRecordRawDecoder",
    "ofrecord_raw_decoder",
    "OFRecordBytesDecoder",
    "ofrecord_bytes_decoder",
    "OFRecordImageDecoder",
    "ofrecord_image_decoder",
    "OFRecordImageDecoderRandomCrop",
    "ofrecord_image_decoder_random_crop",
    "ImageDecoderRandomCropResize",
    "image_decoder_random_crop_resize",
    "decode_random",
    "CropMirrorNormalize",
    "crop_mirror_normalize",
    "megatron_gpt_mmap_data_loader",
    "MegatronGPTMMapDataLoader",
]


def _data_dir(out_dir):
    if out_dir:
        return out_dir
    return os.environ.get("WEIR_DATA_DIR") or os.path.join(os.path.expanduser("~"), ".cache", "weir", "mnist")


_announced = set()  # the folders load_mnist has named


def load_mnist(train_batch_size=100, test_batch_size=100, data_format="NCHW", url=None, hash_check=None,
               out_dir=None):
    """MNIST in batches, as OneFlow's load_mnist: images float32 / 255 shaped (batches, batch, 1, 28, 28)
    (NCHW) or (batches, batch, 28, 28, 1) (NHWC), labels int32 (batches, batch); file order, unshuffled.

    The data comes from `out_dir` (a folder with the four IDX files or a mnist.npz, or an .npz path),
    else $WEIR_DATA_DIR, else ~/.cache/weir/mnist, where `make data` puts it. Weir never downloads:
    `url` and `hash_check` are accepted for compatibility (`make data` checks sha256 sums)."""
    if data_format not in ("NCHW", "NHWC"):
        raise ValueError(f"flow.data.load_mnist: data_format must be 'NCHW' or 'NHWC', got {data_format!r}")
    path = _data_dir(out_dir)
    (train_images, train_labels), (test_images, test_labels) = _C.load_mnist(int(train_batch_size), path)
    if test_batch_size != train_batch_size:
        _, (test_images, test_labels) = _C.load_mnist(int(test_batch_size), path)
    if path not in _announced:  # OneFlow's line, once per folder rather than at every call
        _announced.add(path)
        print(f"File mnist already exist, path: {path}")
    if data_format == "NHWC":
        train_images = np.ascontiguousarray(np.moveaxis(train_images, 2, -1))
        test_images = np.ascontiguousarray(np.moveaxis(test_images, 2, -1))
    return (train_images, train_labels), (test_images, test_labels)


def _source(op_type: str, api: str, name, **attrs) -> Blob:
    """An op without inputs (a reader, random draws) of the job being traced."""
    context = _context.current(api)
    return Blob(_C.add_source_op(context.builder, op_type, attrs, op_name(name))[0], context.builder)


def _seed(seed) -> int:
    """OneFlow draws an op's seed when the job is traced: `random.seed(n)` first makes a run repeat."""
    if seed is None:
        return _random.getrandbits(63)
    if not isinstance(seed, int) or isinstance(seed, bool) or seed < 0:
        raise TypeError(f"seed must be an int >= 0 or None, got {seed!r}")
    return seed


def ofrecord_reader(ofrecord_dir, batch_size=1, data_part_num=1, part_name_prefix="part-", part_name_suffix_length=-1,
                    random_shuffle=False, shuffle_buffer_size=1024, shuffle_after_epoch=False, name=None, seed=None):
    """Each call of the job, `batch_size` serialized OFRecords (a tensor_buffer blob, for the decoders)
    from the part files ``<ofrecord_dir>/<part_name_prefix><i>``, i < data_part_num, the index
    zero-padded to `part_name_suffix_length` digits (-1: not padded). The devices splitting the batch
    (and the processes) each read a contiguous share of the part files, so data_part_num must be at
    least their number. At the end of its files a reader starts the next epoch. `random_shuffle` draws
    each record from a buffer of the next `shuffle_buffer_size`; `shuffle_after_epoch` reads the files
    in a new order each epoch. The reader runs ahead of the job's compute through its registers."""
    return _source("ofrecord_reader", "flow.data.ofrecord_reader", name, data_dir=os.fspath(ofrecord_dir),
                   batch_size=int(batch_size), data_part_num=int(data_part_num), part_name_prefix=str(part_name_prefix),
                   part_name_suffix_length=int(part_name_suffix_length), random_shuffle=bool(random_shuffle),
                   shuffle_buffer_size=int(shuffle_buffer_size), shuffle_after_epoch=bool(shuffle_after_epoch),
                   seed=_seed(seed))


def OFRecordRawDecoder(input_blob, blob_name, shape, dtype, dim1_varying_length=False, auto_zero_padding=False,
                       name=None):  # noqa: N802 - OneFlow's name
    """Feature `blob_name` of each record as a (batch, *shape) blob of `dtype` (float32, float64, int32,
    int64, uint8 or int8), converted from whatever list the feature holds (a bytes_list as its bytes).
    A record with fewer values fails the call unless `auto_zero_padding` (zeros fill the rest)."""
    check_blob(input_blob, "flow.data.OFRecordRawDecoder", "input_blob")
    return add_op("ofrecord_raw_decoder", [input_blob], op_name(name), feature=str(blob_name),
                  shape=[int(d) for d in shape], dtype=to_c_dtype(dtype), dim1_varying_length=bool(dim1_varying_length),
                  auto_zero_padding=bool(auto_zero_padding))


ofrecord_raw_decoder = OFRecordRawDecoder


def OFRecordBytesDecoder(input_blob, blob_name, name=None):  # noqa: N802 - OneFlow's name
    """The first value of bytes feature `blob_name` of each record (a tensor_buffer blob)."""
    check_blob(input_blob, "flow.data.OFRecordBytesDecoder", "input_blob")
    return add_op("ofrecord_bytes_decoder", [input_blob], op_name(name), feature=str(blob_name))


ofrecord_bytes_decoder = OFRecordBytesDecoder


def OFRecordImageDecoder(input_blob, blob_name, color_space="BGR", name=None):  # noqa: N802 - OneFlow's name
    """The JPEG in bytes feature `blob_name` of each record, decoded to (height, width, channels) uint8
    in `color_space` ("RGB", "BGR" or "GRAY"): a tensor_buffer blob of images, for flow.image.Resize or
    flow.image.CropMirrorNormalize."""
    check_blob(input_blob, "flow.data.OFRecordImageDecoder", "input_blob")
    return add_op("ofrecord_image_decoder", [input_blob], op_name(name), feature=str(blob_name), color_space=str(color_space))


ofrecord_image_decoder = OFRecordImageDecoder


def OFRecordImageDecoderRandomCrop(input_blob, blob_name, color_space="BGR", num_attempts=10, seed=None,
                                   random_area=(0.08, 1.0), random_aspect_ratio=(0.75, 1.333333),
                                   name=None):  # noqa: N802 - OneFlow's name
    """OFRecordImageDecoder, each image then cut to a random window (Inception's crop): up to
    `num_attempts` draws of an area fraction in `random_area` and an aspect ratio (width / height) in
    `random_aspect_ratio`, the first that fits; else the largest centred window within the ratios."""
    check_blob(input_blob, "flow.data.OFRecordImageDecoderRandomCrop", "input_blob")
    return add_op("ofrecord_image_decoder", [input_blob], op_name(name), feature=str(blob_name),
                  color_space=str(color_space), random_crop=True, num_attempts=int(num_attempts),
                  random_area=[float(v) for v in random_area], random_aspect_ratio=[float(v) for v in random_aspect_ratio],
                  seed=_seed(seed))


ofrecord_image_decoder_random_crop = OFRecordImageDecoderRandomCrop


def ImageDecoderRandomCropResize(input_blob, target_width, target_height, num_attempts=None, seed=None,
                                 random_area=None, random_aspect_ratio=None, num_workers=None, warmup_size=None,
                                 max_num_pixels=None, name=None):  # noqa: N802 - OneFlow's name
    """JPEG bytes (OFRecordBytesDecoder's items) decoded in RGB, cut to a random window as
    OFRecordImageDecoderRandomCrop does, and resized to target_width x target_height: a (batch, height,
    width, 3) uint8 blob (OneFlow's GPU decoder; here on the host). `num_workers`, `warmup_size` and
    `max_num_pixels` tune OneFlow's GPU decoder and are ignored."""
    check_blob(input_blob, "flow.data.ImageDecoderRandomCropResize", "input_blob")
    del num_workers, warmup_size, max_num_pixels
    decoded = add_op("ofrecord_image_decoder", [input_blob], op_name(name), feature="", color_space="RGB",
                     random_crop=True, num_attempts=int(num_attempts or 10),
                     random_area=[float(v) for v in (random_area or (0.08, 1.0))],
                     random_aspect_ratio=[float(v) for v in (random_aspect_ratio or (0.75, 1.333333))],
                     seed=_seed(seed))
    resized = _C.add_op("image_resize", [decoded._c], {"target_width": int(target_width),
                                                       "target_height": int(target_height)}, "")
    return Blob(resized[0], decoded._job)


image_decoder_random_crop_resize = ImageDecoderRandomCropResize


def decode_random(shape, dtype, batch_size=1, initializer=None, tick=None, name=None):
    """Each call, a fresh (batch_size, *shape) blob of `dtype` drawn as `initializer` draws (a constant,
    random uniform, random normal or truncated normal initializer; default uniform in [0, 1)):
    synthetic data in place of a reader. `tick` (OneFlow's) is not needed: the op runs every call."""
    if tick is not None:
        raise NotImplementedError("flow.data.decode_random: tick= is not supported; the op draws once per call already")
    init = initializer if initializer is not None else _C.random_uniform_initializer(0.0, 1.0)
    if not isinstance(init, _C.Initializer) or not init.distribution:
        raise TypeError(f"flow.data.decode_random: initializer must be a constant, random_uniform, random_normal or "
                        f"truncated_normal initializer, got {init!r}")
    return _random_draws(shape, dtype, batch_size, init, None, "flow.data.decode_random", name)


def _random_draws(shape, dtype, batch_size, init, seed, api, name):
    """decode_random's op: each call, (batch_size, *shape) drawn as `init` draws, seeded by `seed`
    (None: drawn when traced)."""
    return _source("decode_random", api, name, shape=[int(d) for d in shape], dtype=to_c_dtype(dtype),
                   batch_size=int(batch_size), distribution=init.distribution, minval=init.minval, maxval=init.maxval,
                   mean=init.mean, stddev=init.stddev, value=init.value, seed=_seed(seed))


def CropMirrorNormalize(input_blob, mirror_blob=None, color_space="BGR", output_layout="NCHW", crop_h=0, crop_w=0,
                        crop_pos_y=0.5, crop_pos_x=0.5, mean=(0.0,), std=(1.0,), output_dtype=dtypes.float32,
                        name=None):  # noqa: N802 - OneFlow's name
    """Each image's `crop_h` x `crop_w` window at (crop_pos_y, crop_pos_x) of the room left around it
    (0 and 0: the whole image), flipped left-right where `mirror_blob` (int8, flow.random.CoinFlip) is
    non-zero, normalized as (x - mean[c]) / std[c], as `output_dtype` (float32 or float16) in
    `output_layout` ("NCHW" or "NHWC"). The images are a tensor_buffer (decoded; then a crop size is
    needed) or a (batch, height, width, channels) uint8 blob."""
    check_blob(input_blob, "flow.image.CropMirrorNormalize", "input_blob")
    inputs = [input_blob]
    if mirror_blob is not None:
        inputs.append(check_blob(mirror_blob, "flow.image.CropMirrorNormalize", "mirror_blob"))
    return add_op("crop_mirror_normalize", inputs, op_name(name), color_space=str(color_space),
                  output_layout=str(output_layout), crop_h=int(crop_h), crop_w=int(crop_w), crop_pos_y=float(crop_pos_y),
                  crop_pos_x=float(crop_pos_x), mean=[float(v) for v in mean], std=[float(v) for v in std],
                  output_dtype=to_c_dtype(output_dtype))


crop_mirror_normalize = CropMirrorNormalize


def megatron_gpt_mmap_data_loader(data_file_prefix, seq_length, num_samples, batch_size, dtype=dtypes.int64,
                                  shuffle=True, random_seed=None, split_sizes=None, split_index=None,
                                  parallel_distribution=None, start_from_saved_progress=False, name=None, nd_sbp=None):
    """Each call, a (batch_size, seq_length + 1) blob of token ids (`dtype` int64 or int32) from the
    Megatron-LM dataset ``<data_file_prefix>.idx`` / ``.bin`` (memory-mapped; ``weir.data.megatron``
    writes one). The documents of split `split_index` (the dataset cut in parts proportional to
    `split_sizes`, default one part) are laid end to end for as many epochs as `num_samples` samples
    need and cut every `seq_length` tokens; a sample's last token (the label of its last position) is
    the next sample's first. With `shuffle`, documents and samples are shuffled per epoch under
    `random_seed` (None: drawn when traced) as OneFlow shuffles them. Call n reads samples
    [n * batch, (n + 1) * batch): the devices splitting the batch read their rows, so the tokens do
    not depend on the number of devices. `parallel_distribution` (or `nd_sbp`): ["S(0)"] (the
    default) or ["B"] (every device reads the whole batch). `start_from_saved_progress`: the batch
    count is a variable (int64, saved in checkpoints, named after the loader and its attributes),
    so a job restored from a checkpoint reads on from where it stopped."""
    api = "flow.data.megatron_gpt_mmap_data_loader"
    if not isinstance(data_file_prefix, (str, os.PathLike)):
        raise TypeError(f"{api}: data_file_prefix must be a path, got {data_file_prefix!r}")
    split_sizes = (1,) if split_sizes is None else tuple(int(size) for size in split_sizes)
    split_index = 0 if split_index is None else int(split_index)
    if not 0 <= split_index < len(split_sizes):
        raise ValueError(f"{api}: split index {split_index} is out of range, split_sizes {list(split_sizes)}")
    layout = nd_sbp if parallel_distribution is None else parallel_distribution
    layout = [] if layout is None else [_layout_entry(entry, api) for entry in layout]
    if len(layout) > 1:
        raise NotImplementedError(f"{api}: parallel_distribution {layout!r} is a 2-D layout; Weir places a job over a "
                                  "flat list of devices")
    if layout not in ([], ["S(0)"], ["B"]):
        raise ValueError(f"{api}: parallel_distribution must be ['S(0)'] or ['B'], got {layout!r}")
    seed = _seed(random_seed)
    attrs = dict(data_file_prefix=os.fspath(data_file_prefix), seq_length=int(seq_length), label_length=1,
                 num_samples=int(num_samples), batch_size=int(batch_size), dtype=to_c_dtype(dtype, f"{api}: dtype"),
                 shuffle=bool(shuffle), random_seed=seed, split_sizes=list(split_sizes), split_index=split_index,
                 split_batch=layout != ["B"])
    if not start_from_saved_progress:
        return _source("megatron_gpt_mmap_data_loader", api, name, **attrs)
    # OneFlow's name for the batch count, so that its checkpoints and ours name the same variable.
    name = "gpt_data_loader" if name is None else name
    iteration = get_variable(
        f"{name}-iteration-sq{seq_length}-sa{num_samples}-bs{batch_size}-sd{seed}-sp{'_'.join(map(str, split_sizes))}"
        f"-spi{split_index}-{'_'.join('S' + entry[2:-1] if entry.startswith('S') else entry for entry in layout)}",
        shape=(1,), dtype=dtypes.int64, initializer=_init.constant_initializer(0, dtypes.int64), trainable=False,
        model_name="iteration", reuse=False)
    _context.current(api).writes += 1  # the loader's increment of its count
    return add_op("megatron_gpt_mmap_data_loader", [iteration], op_name(name), **attrs)


MegatronGPTMMapDataLoader = megatron_gpt_mmap_data_loader


def _layout_entry(entry, api):
    """"B" / "S(axis)" of a layout entry given as a string or a flow.distribute object."""
    kind = getattr(entry, "kind", None)
    if kind == "broadcast":
        return "B"
    if kind == "split":
        return f"S({entry.axis})"
    if isinstance(entry, str):
        return entry
    raise TypeError(f"{api}: parallel_distribution entries must be 'B', 'S(0)' or flow.distribute objects, got {entry!r}")
