"""The data pipeline a job runs itself (OneFlow's flow.data / flow.image / flow.random): OFRecord
datasets written by weir.data.ofrecord and read back by ofrecord_reader, the raw, bytes and image
decoders, resizing, crop-mirror-normalize, coin flips and decode_random; how readers split over
devices; the errors bad data gives; and a model trained from OFRecord files with no placeholders."""

import os
import struct
import subprocess
import sys
import zlib
from typing import Tuple

import numpy as np
import pytest

import weir as flow
import weir.typing as tp
from weir.data import ofrecord


def _write_numbers(folder, count=10, parts=1, suffix_length=-1):
    """Records {"x": float32 [i, 2i, 3i], "label": int32 i, "big": int64 -i * 2**40} for i < count."""
    index = np.arange(count)
    features = {
        "x": (index[:, None] * np.array([1, 2, 3])).astype(np.float32),
        "label": index.astype(np.int32),
        "big": (-index * 2**40).astype(np.int64),
    }
    return ofrecord.write(folder, features, parts=parts, suffix_length=suffix_length)


def _smooth_images(count, height, width, seed=0):
    """RGB images of smooth gradients (JPEG keeps them within a few levels)."""
    rng = np.random.default_rng(seed)
    y, x = np.mgrid[0:height, 0:width]
    images = []
    for _ in range(count):
        a, b, c = rng.uniform(0.2, 1.0, 3)
        image = np.stack([x * 255.0 * a / width, y * 255.0 * b / height, (x + y) * 127.0 * c / (width + height)], -1)
        images.append(image.astype(np.uint8))
    return np.stack(images)


def test_records_round_trip_through_the_writer_and_weirs_decoder(tmp_path):
    record = ofrecord.encode_record({
        "f": np.array([1.5, -2.0], np.float32), "d": np.array([0.1], np.float64), "i": np.array([-7, 2**31 - 1], np.int32),
        "l": np.array([-(2**62), 5], np.int64), "b": [b"abc", b""], "u": np.arange(4, dtype=np.uint8)})
    parsed = ofrecord.parse_record(record)
    assert parsed["f"][0] == "float_list" and parsed["f"][1].tolist() == [1.5, -2.0]
    assert parsed["d"][0] == "double_list" and parsed["d"][1].tolist() == [0.1]
    assert parsed["i"][0] == "int32_list" and parsed["i"][1].tolist() == [-7, 2**31 - 1]
    assert parsed["l"][0] == "int64_list" and parsed["l"][1].tolist() == [-(2**62), 5]
    assert parsed["b"] == ("bytes_list", [b"abc", b""])
    assert parsed["u"] == ("bytes_list", [bytes(range(4))])
    with pytest.raises(ValueError, match="malformed OFRecord"):
        ofrecord.parse_record(record[:-3])

    paths = _write_numbers(tmp_path / "data", count=5, parts=2, suffix_length=3)
    assert [os.path.basename(p) for p in paths] == ["part-000", "part-001"]
    labels = [r["label"][1].tolist() for p in paths for r in ofrecord.read(p)]
    assert labels == [[0], [1], [2], [3], [4]]


def test_the_reader_and_raw_decoder_give_the_records_in_order_call_after_call_and_epoch_after_epoch(tmp_path):
    _write_numbers(tmp_path, count=10, parts=2)

    @flow.global_function()
    def job() -> Tuple[tp.Numpy, tp.Numpy, tp.Numpy]:
        records = flow.data.ofrecord_reader(str(tmp_path), batch_size=4, data_part_num=2)
        x = flow.data.OFRecordRawDecoder(records, "x", shape=(3,), dtype=flow.float)
        label = flow.data.OFRecordRawDecoder(records, "label", shape=(), dtype=flow.int32)
        big = flow.data.ofrecord_raw_decoder(records, "big", shape=(1,), dtype=flow.int64)
        return x, label, big

    seen = []
    for _ in range(5):
        x, label, big = job()
        assert x.dtype == np.float32 and x.shape == (4, 3) and label.shape == (4,) and big.shape == (4, 1)
        np.testing.assert_array_equal(x, label[:, None] * np.array([1, 2, 3], np.float32))
        np.testing.assert_array_equal(big[:, 0], -label.astype(np.int64) * 2**40)
        seen += label.tolist()
    assert seen == [i % 10 for i in range(20)]  # part-0 then part-1, then again


def test_shuffled_reading_is_a_different_order_repeatable_by_seed_and_fair(tmp_path):
    _write_numbers(tmp_path, count=20, parts=4)

    def labels(seed, calls=10, **options):
        flow.clear_default_session()

        @flow.global_function()
        def job() -> tp.Numpy:
            records = flow.data.ofrecord_reader(str(tmp_path), batch_size=8, data_part_num=4, seed=seed, **options)
            return flow.data.OFRecordRawDecoder(records, "label", shape=(), dtype=flow.int32)

        return np.concatenate([job() for _ in range(calls)]).tolist()

    shuffled = labels(1, random_shuffle=True, shuffle_buffer_size=8)
    assert shuffled != [i % 20 for i in range(80)]
    assert shuffled == labels(1, random_shuffle=True, shuffle_buffer_size=8)
    assert shuffled != labels(2, random_shuffle=True, shuffle_buffer_size=8)
    counts = np.bincount(shuffled, minlength=20)
    assert counts.min() >= 2 and counts.max() <= 6  # 80 draws of 20 records, 4 each give or take the buffer
    # Shuffling the files after each epoch: each epoch is whole part files (5 records each) in some order.
    epochs = labels(3, calls=10, shuffle_after_epoch=True)
    files = [[label // 5 for label in epochs[start:start + 5]] for start in range(0, 80, 5)]
    assert all(len(set(run)) == 1 for run in files)  # each run of 5 is one whole file
    orders = [tuple(run[0] for run in files[e * 4:e * 4 + 4]) for e in range(4)]
    assert all(sorted(order) == [0, 1, 2, 3] for order in orders)
    assert len(set(orders)) > 1


def test_reader_errors_name_the_file_the_feature_and_the_fix(tmp_path):
    _write_numbers(tmp_path, count=4)
    with pytest.raises(ValueError, match=r"part file '.*part-1' does not exist"):
        @flow.global_function()
        def too_many_parts() -> tp.Numpy:
            records = flow.data.ofrecord_reader(str(tmp_path), batch_size=2, data_part_num=2)
            return flow.data.OFRecordRawDecoder(records, "label", shape=(), dtype=flow.int32)

        too_many_parts()
    flow.clear_default_session()

    @flow.global_function()
    def missing_feature() -> tp.Numpy:
        records = flow.data.ofrecord_reader(str(tmp_path), batch_size=2)
        return flow.data.OFRecordRawDecoder(records, "nope", shape=(), dtype=flow.int32)

    with pytest.raises(Exception, match=r"no feature 'nope' \(it has: x, label, big\)"):
        missing_feature()
    flow.clear_default_session()

    @flow.global_function()
    def wrong_shape() -> tp.Numpy:
        records = flow.data.ofrecord_reader(str(tmp_path), batch_size=2)
        return flow.data.OFRecordRawDecoder(records, "x", shape=(5,), dtype=flow.float)

    with pytest.raises(Exception, match="holds 3 values, shape .* takes 5 .*auto_zero_padding"):
        wrong_shape()
    flow.clear_default_session()

    @flow.global_function()
    def padded() -> tp.Numpy:
        records = flow.data.ofrecord_reader(str(tmp_path), batch_size=2)
        return flow.data.OFRecordRawDecoder(records, "x", shape=(5,), dtype=flow.float, auto_zero_padding=True)

    np.testing.assert_array_equal(padded(), [[0, 0, 0, 0, 0], [1, 2, 3, 0, 0]])
    flow.clear_default_session()

    with pytest.raises(ValueError, match="tensor_buffer .* cannot leave the job"):
        @flow.global_function()
        def raw_records() -> tp.Numpy:
            return flow.data.ofrecord_reader(str(tmp_path), batch_size=2)

        raw_records()


def test_a_corrupt_part_file_fails_the_call_naming_it_and_the_session_goes_on(tmp_path):
    good = tmp_path / "good"
    _write_numbers(good, count=4)
    corrupt = tmp_path / "corrupt"
    corrupt.mkdir()
    data = (good / "part-0").read_bytes()
    (corrupt / "part-0").write_bytes(data[:-5])  # the last record cut short

    @flow.global_function()
    def job() -> tp.Numpy:
        records = flow.data.ofrecord_reader(str(corrupt), batch_size=4)
        return flow.data.OFRecordRawDecoder(records, "label", shape=(), dtype=flow.int32)

    with pytest.raises(Exception, match=r"part file '.*corrupt/part-0' is corrupt at byte \d+: a record says it has"):
        job()
    # Garbage that is not even a record length.
    (corrupt / "part-0").write_bytes(struct.pack("<q", 3) + b"\xff\xff\xff")
    flow.clear_default_session()
    with pytest.raises(Exception, match="is corrupt at byte 0: malformed OFRecord"):
        job()


def test_images_decode_resize_crop_mirror_and_normalize_as_the_reference_does(tmp_path):
    images = _smooth_images(6, 20, 30)
    ofrecord.write(tmp_path, {"encoded": images, "class/label": np.arange(6, dtype=np.int32)}, jpeg=["encoded"])
    mean, std = [120.0, 110.0, 100.0], [60.0, 50.0, 40.0]

    @flow.global_function()
    def job() -> Tuple[tp.Numpy, tp.Numpy, tp.Numpy, tp.Numpy, tp.Numpy]:
        records = flow.data.ofrecord_reader(str(tmp_path), batch_size=6)
        decoded = flow.data.OFRecordImageDecoder(records, "encoded", color_space="RGB")
        resized, scale, new_size = flow.image.Resize(decoded, target_size=(16, 12))
        assert new_size is None
        mirror = flow.random.CoinFlip(batch_size=6, seed=4)
        normal = flow.image.CropMirrorNormalize(resized, mirror_blob=mirror, color_space="RGB", crop_h=10, crop_w=8,
                                                crop_pos_y=0.5, crop_pos_x=0.0, mean=mean, std=std)
        nhwc = flow.image.crop_mirror_normalize(resized, color_space="RGB", output_layout="NHWC")
        return resized, scale, mirror, normal, nhwc

    resized, scale, mirror, normal, nhwc = job()
    assert resized.dtype == np.uint8 and resized.shape == (6, 12, 16, 3)
    np.testing.assert_allclose(scale, np.tile([16 / 30, 12 / 20], (6, 1)), rtol=1e-6)
    assert set(mirror.tolist()) <= {0, 1} and mirror.dtype == np.int8
    for i, record in enumerate(ofrecord.read(str(tmp_path / "part-0"))):
        jpeg = record["encoded"][1][0]
        decoded = flow._C.decode_jpeg(jpeg, "RGB")
        assert np.abs(decoded.astype(int) - images[i]).max() <= 12  # JPEG at quality 95
        expected = flow._C.resize_image(decoded, 12, 16)
        np.testing.assert_array_equal(resized[i], expected)
        window = expected[1:11, 0:8].astype(np.float32)  # y0 = int(0.5 * (12 - 10)), x0 = 0
        if mirror[i]:
            window = window[:, ::-1]
        reference = ((window - np.array(mean, np.float32)) / np.array(std, np.float32)).transpose(2, 0, 1)
        np.testing.assert_allclose(normal[i], reference, rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(nhwc[i], expected.astype(np.float32), rtol=1e-6)


def test_random_crops_keep_aspect_ratio_resizes_and_center_crops(tmp_path):
    images = _smooth_images(8, 48, 64, seed=3)
    ofrecord.write(tmp_path, {"encoded": images}, jpeg=["encoded"])

    def run(seed):
        flow.clear_default_session()

        @flow.global_function()
        def job() -> Tuple[tp.Numpy, tp.Numpy, tp.Numpy, tp.Numpy, tp.Numpy]:
            records = flow.data.ofrecord_reader(str(tmp_path), batch_size=8)
            encoded = flow.data.OFRecordBytesDecoder(records, "encoded")
            fixed = flow.data.ImageDecoderRandomCropResize(encoded, target_width=12, target_height=10, seed=seed)
            cropped = flow.data.OFRecordImageDecoderRandomCrop(records, "encoded", color_space="RGB", seed=seed,
                                                               random_area=[0.25, 0.5])
            crops, _, crop_size = flow.image.Resize(cropped, target_size=20, keep_aspect_ratio=True, resize_side="longer")
            whole = flow.data.OFRecordImageDecoder(records, "encoded", color_space="BGR")
            shorter, scale, size = flow.image.Resize(whole, target_size=24, keep_aspect_ratio=True, max_size=30)
            center = flow.image.CropMirrorNormalize(shorter, color_space="BGR", crop_h=20, crop_w=20)
            return crop_size, size, scale, center, fixed

        return job()

    crop_size, size, scale, center, fixed = run(7)
    assert fixed.shape == (8, 10, 12, 3) and fixed.dtype == np.uint8
    # The crops' longer side is 20; their areas were a quarter to a half of 48 x 64, ratio 3/4 to 4/3.
    assert crop_size.dtype == np.int32 and (crop_size.max(axis=1) == 20).all()
    # The shorter side (48) to 24 makes the longer 32 > max_size 30: the longer is held at 30.
    np.testing.assert_array_equal(size, np.tile([30, 23], (8, 1)))  # 48 * 30 / 64 = 22.5, rounded
    np.testing.assert_allclose(scale, np.tile([30 / 64, 23 / 48], (8, 1)), rtol=1e-6)
    assert center.shape == (8, 3, 20, 20) and center.dtype == np.float32
    again, *_ = run(7)
    np.testing.assert_array_equal(again, crop_size)
    other, *_ = run(8)
    assert not np.array_equal(other, crop_size)


def test_decode_random_draws_fresh_synthetic_batches(tmp_path):
    @flow.global_function()
    def job() -> Tuple[tp.Numpy, tp.Numpy, tp.Numpy]:
        images = flow.data.decode_random(shape=(3, 4, 4), dtype=flow.float, batch_size=5,
                                         initializer=flow.random_uniform_initializer(-2, 2))
        labels = flow.data.decode_random(shape=(), dtype=flow.int32, batch_size=5,
                                         initializer=flow.zeros_initializer(flow.int32))
        default = flow.data.decode_random(shape=(2,), dtype=flow.float, batch_size=5)
        return images, labels, default

    first, labels, default = job()
    second, _, _ = job()
    assert first.shape == (5, 3, 4, 4) and labels.shape == (5,) and labels.dtype == np.int32
    assert (labels == 0).all() and -2 <= first.min() and first.max() < 2 and 0 <= default.min() and default.max() < 1
    assert not np.array_equal(first, second)
    with pytest.raises(TypeError, match="initializer must be"):
        flow.data.decode_random(shape=(2,), dtype=flow.float, initializer=flow.glorot_uniform_initializer())


def test_readers_split_the_part_files_over_devices_in_both_views(tmp_path):
    _write_numbers(tmp_path, count=12, parts=3)  # part-0: 0..3, part-1: 4..7, part-2: 8..11
    flow.config.cpu_device_num(3)

    @flow.global_function()
    def consistent() -> tp.Numpy:
        records = flow.data.ofrecord_reader(str(tmp_path), batch_size=6, data_part_num=3)
        return flow.data.OFRecordRawDecoder(records, "label", shape=(), dtype=flow.int32)

    # Each device reads its own part file; the batch is their pieces, in device order.
    np.testing.assert_array_equal(consistent(), [0, 1, 4, 5, 8, 9])
    np.testing.assert_array_equal(consistent(), [2, 3, 6, 7, 10, 11])

    config = flow.FunctionConfig()
    config.default_logical_view(flow.scope.mirrored_view())

    @flow.global_function(function_config=config)
    def mirrored() -> tp.ListNumpy:
        records = flow.data.ofrecord_reader(str(tmp_path), batch_size=2, data_part_num=3)
        return flow.data.OFRecordRawDecoder(records, "label", shape=(), dtype=flow.int32)

    pieces = mirrored()
    assert [p.tolist() for p in pieces] == [[0, 1], [4, 5], [8, 9]]

    @flow.global_function()
    def too_few_parts() -> tp.Numpy:
        records = flow.data.ofrecord_reader(str(tmp_path), batch_size=6, data_part_num=2)
        return flow.data.OFRecordRawDecoder(records, "label", shape=(), dtype=flow.int32)

    with pytest.raises(Exception, match="data_part_num is 2, fewer than the 3 readers"):
        too_few_parts()


def test_the_tool_writes_datasets_from_the_command_line(tmp_path):
    np.savez(tmp_path / "arrays.npz", x=np.arange(6, dtype=np.float32).reshape(3, 2),
             image=_smooth_images(3, 8, 8))
    env = dict(os.environ)
    result = subprocess.run([sys.executable, "-m", "weir.data.ofrecord", "arrays", str(tmp_path / "out"), "--npz",
                             str(tmp_path / "arrays.npz"), "--jpeg", "image", "--parts", "3", "--suffix-length", "5"],
                            capture_output=True, text=True, env=env, timeout=120)
    assert result.returncode == 0, result.stderr
    assert sorted(os.listdir(tmp_path / "out")) == ["part-00000", "part-00001", "part-00002"]
    record = next(ofrecord.read(str(tmp_path / "out" / "part-00001")))
    assert record["x"][1].tolist() == [2.0, 3.0] and flow._C.decode_jpeg(record["image"][1][0]).shape == (8, 8, 3)
    folder = tmp_path / "folder"
    for label, name in enumerate(["cat", "dog"]):
        (folder / name).mkdir(parents=True)
        image = _smooth_images(1, 6, 6, seed=label)[0]
        if name == "cat":
            (folder / name / "a.jpg").write_bytes(flow._C.encode_jpeg(image))
        else:  # PNGs are taken too
            (folder / name / "a.png").write_bytes(_png(image))
    result = subprocess.run([sys.executable, "-m", "weir.data.ofrecord", "images", str(tmp_path / "imgs"), "--folder",
                             str(folder)], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0 and "2 classes: cat, dog" in result.stdout, result.stderr
    labels = [r["class/label"][1].tolist() for r in ofrecord.read(str(tmp_path / "imgs" / "part-0"))]
    assert labels == [[0], [1]]


def _png(image):
    """A minimal PNG (8-bit RGB, no filtering) of a (height, width, 3) uint8 array."""
    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    height, width, _ = image.shape
    rows = b"".join(b"\x00" + np.ascontiguousarray(image[y], dtype=np.uint8).tobytes() for y in range(height))
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b""))


def test_a_convolutional_net_trains_from_mnist_jpeg_records_with_no_placeholders(tmp_path):
    """MNIST written as JPEG OFRecords by the tool, then a job that reads, decodes, normalizes, mirrors
    nothing and trains LeNet-style, as OneFlow's CNN trainer does; the test set's accuracy after one
    pass over 6000 digits."""
    ofrecord.write_mnist(tmp_path / "train", "train", size=28, parts=2, limit=6000)
    ofrecord.write_mnist(tmp_path / "test", "test", size=28, parts=1, limit=1000)

    def pipeline(folder, batch, train):
        records = flow.data.ofrecord_reader(folder, batch_size=batch, data_part_num=2 if train else 1,
                                            random_shuffle=train, seed=0)
        images = flow.data.OFRecordImageDecoder(records, "encoded", color_space="GRAY")
        images = flow.image.CropMirrorNormalize(images, color_space="GRAY", crop_h=28, crop_w=28, mean=[0.0],
                                                std=[255.0])
        labels = flow.data.OFRecordRawDecoder(records, "class/label", shape=(), dtype=flow.int32)
        return images, labels

    def lenet(images):
        init = flow.variance_scaling_initializer(2.0, "fan_in", "random_normal")
        conv = flow.layers.conv2d(images, 16, 5, padding="SAME", activation=flow.nn.relu, kernel_initializer=init,
                                  name="conv1")
        pool = flow.nn.max_pool2d(conv, 2, 2, "VALID")
        conv = flow.layers.conv2d(pool, 32, 5, padding="SAME", activation=flow.nn.relu, kernel_initializer=init,
                                  name="conv2")
        pool = flow.nn.max_pool2d(conv, 2, 2, "VALID")
        hidden = flow.layers.dense(flow.reshape(pool, (pool.shape[0], -1)), 100, activation=flow.nn.relu,
                                   kernel_initializer=init, name="fc1")
        return flow.layers.dense(hidden, 10, kernel_initializer=init, name="fc2")

    @flow.global_function(type="train")
    def train() -> tp.Numpy:
        images, labels = pipeline(str(tmp_path / "train"), 50, True)
        loss = flow.nn.sparse_softmax_cross_entropy_with_logits(labels, lenet(images))
        flow.optimizer.SGD(flow.optimizer.PiecewiseConstantScheduler([], [0.05]), momentum=0.9).minimize(loss)
        return loss

    @flow.global_function()
    def evaluate() -> Tuple[tp.Numpy, tp.Numpy]:
        images, labels = pipeline(str(tmp_path / "test"), 100, False)
        return flow.math.argmax(lenet(images), 1), labels

    losses = [train().mean() for _ in range(120)]
    correct = sum(int((predicted == labels).sum()) for predicted, labels in (evaluate() for _ in range(10)))
    assert np.mean(losses[-10:]) < 0.5 * np.mean(losses[:10])
    assert correct / 1000 > 0.9, correct
