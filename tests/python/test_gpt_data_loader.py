"""flow.data.megatron_gpt_mmap_data_loader (OneFlow's GPT reader) on datasets weir.data.megatron
writes: the samples against a numpy model of the format, the shuffles' invariants, the batch over
devices in both views, resuming from a checkpoint, and the errors of bad datasets and arguments."""

import collections
import os
import struct
import subprocess
import sys

import numpy as np
import pytest

import weir as flow
import weir.typing as tp
from weir.data import megatron


def _documents(lengths):
    """Document j holds 1000 * j + [0, length): every token says which document it is and where."""
    return [1000 * j + np.arange(n, dtype=np.int64) for j, n in enumerate(lengths)]


LENGTHS = [7, 3, 12, 1, 9, 5, 0, 8, 4, 11]  # 60 tokens, one empty document


def _loader_job(prefix, seq, num_samples, batch, shuffle=False, seed=7, devices=1, mirrored=False, dtype=flow.int64,
                **kwargs):
    flow.clear_default_session()
    flow.config.cpu_device_num(devices)
    config = flow.FunctionConfig()
    if mirrored:
        config.default_logical_view(flow.scope.mirrored_view())

    @flow.global_function(type="predict", function_config=config)
    def tokens() -> (tp.ListNumpy if mirrored else tp.Numpy):
        return flow.data.megatron_gpt_mmap_data_loader(
            str(prefix), seq_length=seq, num_samples=num_samples, batch_size=batch, dtype=dtype, shuffle=shuffle,
            random_seed=seed, **kwargs)

    flow.train.CheckPoint().init()
    return tokens


def _stream(documents, epochs):
    return np.concatenate([d for _ in range(epochs) for d in documents])


def _check_walk(sample):
    """Consecutive tokens either follow each other in a document or pass from a document's end to
    another's start."""
    ends = {1000 * j + n - 1 for j, n in enumerate(LENGTHS) if n}
    for a, b in zip(sample[:-1], sample[1:]):
        assert b == a + 1 or (a in ends and b % 1000 == 0), (a, b, sample)


def test_writer_and_reader_round_trip_and_the_index_layout(tmp_path):
    prefix = tmp_path / "data"
    assert megatron.write(prefix, _documents(LENGTHS)) == 60
    back = megatron.read(prefix)
    assert [d.tolist() for d in back] == [d.tolist() for d in _documents(LENGTHS)]
    assert back[0].dtype == np.uint16  # every id < 65500
    index = (tmp_path / "data.idx").read_bytes()
    assert index[:9] == b"MMIDIDX\x00\x00"
    assert struct.unpack_from("<QBQQ", index, 9) == (1, 8, 10, 11)
    assert os.path.getsize(tmp_path / "data.bin") == 2 * 60
    megatron.write(tmp_path / "wide", [np.array([70000, 1])])
    assert megatron.read(tmp_path / "wide")[0].dtype == np.int32
    with pytest.raises(ValueError, match=r"document 0 has token ids in \[-1, 3\], outside uint16"):
        megatron.write(tmp_path / "bad", [np.array([-1, 3])], dtype="uint16")
    with pytest.raises(ValueError, match="1-D array of integer token ids"):
        megatron.write(tmp_path / "bad", [np.zeros((2, 2))])

    (tmp_path / "tokens.txt").write_text("5 6 7\n\n8 9\n")
    result = subprocess.run([sys.executable, "-m", "weir.data.megatron", str(tmp_path / "cli"), "--text",
                             str(tmp_path / "tokens.txt"), "--dtype", "int32"], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert "2 documents, 5 tokens" in result.stdout
    assert [d.tolist() for d in megatron.read(tmp_path / "cli")] == [[5, 6, 7], [8, 9]]


@pytest.mark.parametrize("dtype", [flow.int64, flow.int32])
def test_unshuffled_samples_are_the_documents_end_to_end_over_the_epochs(tmp_path, dtype):
    prefix = tmp_path / "data"
    megatron.write(prefix, _documents(LENGTHS), dtype="int32")
    seq, batch = 10, 3
    # 20 samples of 10 need 201 tokens: 4 epochs of 60.
    tokens = _loader_job(prefix, seq, num_samples=20, batch=batch, dtype=dtype)
    stream = _stream(_documents(LENGTHS), 4)
    for call in range(6):
        got = tokens()
        assert got.shape == (batch, seq + 1) and got.dtype == flow.convert_oneflow_dtype_to_numpy_dtype(dtype)
        for row in range(batch):
            start = (call * batch + row) * seq
            np.testing.assert_array_equal(got[row], stream[start:start + seq + 1])


def test_splits_take_their_share_of_the_documents(tmp_path):
    prefix = tmp_path / "data"
    megatron.write(prefix, _documents(LENGTHS))
    # [6, 2, 2] of 10 documents: 0-5 train, 6-7 validation, 8-9 test.
    tokens = _loader_job(prefix, 4, num_samples=3, batch=3, split_sizes=[6, 2, 2], split_index=1)
    stream = _stream(_documents(LENGTHS)[6:8], 2)  # 8 tokens: 13 needed, two epochs
    got = tokens()
    np.testing.assert_array_equal(got, [stream[0:5], stream[4:9], stream[8:13]])
    with pytest.raises(ValueError, match=r"split index 3 is out of range, split_sizes \[6, 2, 2\]"):
        _loader_job(prefix, 4, num_samples=3, batch=3, split_sizes=[6, 2, 2], split_index=3)()
    with pytest.raises(Exception, match="split 1 of .* holds no tokens"):
        _loader_job(prefix, 4, num_samples=3, batch=1, split_sizes=[6, 1, 3], split_index=1)()  # document 6, empty
    with pytest.raises(Exception, match="too few documents for these splits"):
        _loader_job(prefix, 4, num_samples=3, batch=1, split_sizes=[1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1], split_index=11)()


def test_shuffled_samples_are_a_permutation_of_walks_through_shuffled_documents(tmp_path):
    prefix = tmp_path / "data"
    megatron.write(prefix, _documents(LENGTHS))
    seq, samples = 5, 11  # 56 tokens: one epoch of 60
    tokens = _loader_job(prefix, seq, num_samples=samples, batch=samples, shuffle=True, seed=1234)
    got = tokens()
    for sample in got:
        _check_walk(sample)
    # The 11 samples' first 5 tokens each cover the epoch's first 55 tokens: all but 5 of the 60.
    seen = collections.Counter(got[:, :seq].ravel().tolist())
    every = collections.Counter(np.concatenate(_documents(LENGTHS)).tolist())
    assert max(seen.values()) == 1 and not seen - every and sum((every - seen).values()) == 5
    unshuffled = _loader_job(prefix, seq, num_samples=samples, batch=samples, shuffle=False)()
    assert not np.array_equal(got, unshuffled)
    # The same seed gives the same samples; another seed others.
    np.testing.assert_array_equal(_loader_job(prefix, seq, samples, samples, shuffle=True, seed=1234)(), got)
    assert not np.array_equal(_loader_job(prefix, seq, samples, samples, shuffle=True, seed=99)(), got)
    # Several epochs: every sample is still a walk, and the calls go on through them.
    tokens = _loader_job(prefix, 7, num_samples=40, batch=8, shuffle=True, seed=5)
    batches = np.concatenate([tokens() for _ in range(5)])
    for sample in batches:
        _check_walk(sample)
    assert len({tuple(s) for s in batches.tolist()}) > 30


def test_the_batch_is_the_same_on_one_device_and_split_over_two(tmp_path):
    prefix = tmp_path / "data"
    megatron.write(prefix, _documents(LENGTHS))
    args = dict(seq=6, num_samples=24, batch=4, shuffle=True, seed=12345)
    one = _loader_job(prefix, **args)
    expected = [one() for _ in range(3)]
    split = _loader_job(prefix, devices=2, **args)
    for batch in expected:
        np.testing.assert_array_equal(split(), batch)
    # nd_sbp ["B"]: one reader reads the whole batch for every device.
    whole = _loader_job(prefix, devices=2, parallel_distribution=["B"], **args)
    np.testing.assert_array_equal(whole(), expected[0])
    with pytest.raises(NotImplementedError, match="2-D layout"):
        _loader_job(prefix, devices=2, nd_sbp=["S(0)", "B"], **args)()
    with pytest.raises(Exception, match="batch_size 3 does not split evenly over the 2 devices"):
        _loader_job(prefix, devices=2, **dict(args, batch=3))()
    # The mirrored view: each device reads a batch of its own; together they are one device's batch
    # of twice the size.
    mirrored = _loader_job(prefix, devices=2, mirrored=True, **dict(args, batch=2))
    for batch in expected:
        pieces = mirrored()
        np.testing.assert_array_equal(np.concatenate(pieces), batch)


def test_start_from_saved_progress_resumes_from_a_checkpoint(tmp_path):
    prefix = tmp_path / "data"
    megatron.write(prefix, _documents(LENGTHS))
    args = dict(seq=5, num_samples=30, batch=2, shuffle=True, seed=3)
    straight = _loader_job(prefix, **args)
    expected = [straight() for _ in range(5)]

    resumable = _loader_job(prefix, start_from_saved_progress=True, **args)
    for batch in expected[:3]:
        np.testing.assert_array_equal(resumable(), batch)
    flow.checkpoint.save(str(tmp_path / "ckpt"))
    saved = flow.checkpoint.get(str(tmp_path / "ckpt"))
    name = "gpt_data_loader-iteration-sq5-sa30-bs2-sd3-sp1-spi0-"  # OneFlow's name for the count
    assert list(saved) == [name] and saved[name].numpy().tolist() == [3]

    resumed = _loader_job(prefix, start_from_saved_progress=True, **args)
    flow.load_variables(flow.checkpoint.get(str(tmp_path / "ckpt")))
    np.testing.assert_array_equal(resumed(), expected[3])
    np.testing.assert_array_equal(resumed(), expected[4])


def test_a_loader_past_its_samples_fails_the_call_saying_so(tmp_path):
    prefix = tmp_path / "data"
    megatron.write(prefix, _documents(LENGTHS))
    tokens = _loader_job(prefix, 10, num_samples=5, batch=3)  # one epoch: 5 samples of 10 (60 tokens)
    tokens()
    with pytest.raises(Exception, match=r"batch 1 would read samples \[3, 6\), but the dataset gives 5 samples"):
        tokens()


def test_bad_datasets_and_arguments_are_errors_naming_them(tmp_path):
    prefix = tmp_path / "data"
    megatron.write(prefix, _documents(LENGTHS), dtype="int32")
    good = (tmp_path / "data.idx").read_bytes()

    def first_batch(**kwargs):
        args = dict(seq=4, num_samples=2, batch=1)
        args.update(kwargs)
        return _loader_job(args.pop("prefix", prefix), **args)()

    with pytest.raises(ValueError, match=f"there is no file '{tmp_path}/missing.idx'"):
        first_batch(prefix=tmp_path / "missing")
    corruptions = {
        "magic": (b"XMIDIDX" + good[7:], 'does not start with "MMIDIDX'),
        "version": (good[:9] + struct.pack("<Q", 2) + good[17:], "version 2, where this reader knows version 1"),
        "dtype": (good[:17] + bytes([6]) + good[18:], "token dtype code 6"),
        "truncated": (good[:-5], "take 208 bytes after the header, but the file has 203"),
        "count": (good[:18] + struct.pack("<Q", 2**62) + good[26:], "more than that"),
        "header": (good[:20], "shorter than the 34-byte header"),
        "offset": (good[:34 + 40] + struct.pack("<q", 10**6) + good[34 + 48:], "sequence 0 has 7 tokens of 4 bytes at byte 1000000"),
        "size": (good[:34] + struct.pack("<i", -3) + good[38:], "sequence 0 has -3 tokens"),
    }
    for what, (data, message) in corruptions.items():
        (tmp_path / "data.idx").write_bytes(data)
        with pytest.raises(ValueError, match=message):
            first_batch()
    (tmp_path / "data.idx").write_bytes(good)
    with pytest.raises(ValueError, match="dtype must be int32 or int64"):
        first_batch(dtype=flow.float32)
    with pytest.raises(ValueError, match="seq_length, num_samples and batch_size must be >= 1, got 0, 2, 1"):
        first_batch(seq=0)
    with pytest.raises(ValueError, match=r"parallel_distribution must be \['S\(0\)'\] or \['B'\]"):
        first_batch(parallel_distribution=["S(1)"])
    # The distribute objects OneFlow's GPT program passes are read as their strings.
    np.testing.assert_array_equal(first_batch(nd_sbp=[flow.distribute.split(0)]), first_batch())
