#!/usr/bin/python3
"""The data reader: Weir's pipeline (ofrecord_reader -> OFRecordImageDecoderRandomCrop -> image.Resize
-> CoinFlip -> CropMirrorNormalize, ops of a job) against PyTorch's DataLoader doing the same work
(torchvision's decode_jpeg, RandomResizedCrop, RandomHorizontalFlip, Normalize) on the same JPEGs,
in images per second, 1 thread (both pinned to one core) and 2 threads, side by side in one run.

Work per image on both sides: decode an RGB JPEG (libjpeg-turbo on both), a random crop of 8-100 %
of its area with an aspect ratio in [3/4, 4/3], a bilinear resize to 224 x 224, a random left-right
flip, and per-channel normalization into float32 CHW; batches of 32. The images are synthetic
photographs' stand-ins (smooth shading plus texture, 500 x 375, quality 90, ~50 KB, near ImageNet's
typical size), written once as OFRecord part files (Weir) and as .jpg files (PyTorch's Dataset reads
a file per image, as torchvision's ImageFolder does). Weir's job is called asynchronously, so the reader
runs ahead of the caller as in OneFlow's trainers. The limit printed beside each side is libjpeg-turbo's
own decode rate for these images on one core (decoding alone, no crop or resize).

Each configuration runs --rounds times as its own process, alternated; prints medians and the ratio
(> 1: Weir faster); last line JSON.

  /usr/bin/python3 bench/data_reader.py            # ~4 min
  /usr/bin/python3 bench/data_reader.py --quick    # ~1 min
Workers (run by the driver): .venv/bin/python bench/data_reader.py weir|prepare|decode-limit ...,
/usr/bin/python3 bench/data_reader.py torch ...
"""
import argparse
import json
import os
import statistics
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from benchlib import ROOT, QuietRunner, one_core, rounded  # noqa: E402

BATCH = 32
SIZE = 224
MEAN = [123.68, 116.779, 103.939]
STD = [58.393, 57.12, 57.375]


def prepare(folder, count):
    """Writes `count` synthetic JPEGs as OFRecord part files (folder/ofrecord) and .jpg files (folder/jpg)."""
    import numpy as np

    import weir
    from weir.data import ofrecord

    rng = np.random.default_rng(0)
    y, x = np.mgrid[0:375, 0:500].astype(np.float32)
    jpegs = []
    for i in range(count):
        a, b, c = rng.uniform(0.3, 1.0, 3)
        shade = np.stack([x / 500 * 200 * a, y / 375 * 200 * b, (x + y) / 875 * 200 * c], -1)
        texture = rng.normal(0, 5, (375, 500, 3))
        image = np.clip(shade + texture + 25, 0, 255).astype(np.uint8)
        jpegs.append(weir._C.encode_jpeg(image, 90))
    os.makedirs(os.path.join(folder, "jpg"), exist_ok=True)
    for i, jpeg in enumerate(jpegs):
        with open(os.path.join(folder, "jpg", f"{i:05d}.jpg"), "wb") as f:
            f.write(jpeg)
    records = [ofrecord.encode_record({"encoded": ("bytes_list", [j]), "class/label": ("int32_list", [i % 10])})
               for i, j in enumerate(jpegs)]
    out = os.path.join(folder, "ofrecord")
    os.makedirs(out, exist_ok=True)
    for part in range(4):
        with open(ofrecord.part_path(out, part), "wb") as f:
            for record in records[part::4]:
                f.write(len(record).to_bytes(8, "little"))
                f.write(record)
    print(json.dumps({"images": count, "mean_jpeg_kb": sum(map(len, jpegs)) / count / 1024}))


def weir_worker(folder, batches, repeats):
    import weir as flow
    import weir.typing as tp

    @flow.global_function()
    def read() -> tp.Callback[tp.Numpy]:
        records = flow.data.ofrecord_reader(os.path.join(folder, "ofrecord"), batch_size=BATCH, data_part_num=4,
                                            random_shuffle=True, shuffle_after_epoch=True, seed=1)
        images = flow.data.OFRecordImageDecoderRandomCrop(records, "encoded", color_space="RGB", seed=2)
        images, _, _ = flow.image.Resize(images, target_size=(SIZE, SIZE))
        mirror = flow.random.CoinFlip(batch_size=BATCH, seed=3)
        return flow.image.CropMirrorNormalize(images, mirror_blob=mirror, color_space="RGB", mean=MEAN, std=STD)

    shapes = []
    read()(lambda images: shapes.append(images.shape))  # compiles; warms the pipeline
    flow.sync_default_session()
    rates = []
    for _ in range(repeats):
        start = time.perf_counter()
        for _ in range(batches):
            read()(lambda images: shapes.append(images.shape))
        flow.sync_default_session()
        rates.append(batches * BATCH / (time.perf_counter() - start))
    assert all(shape == (BATCH, 3, SIZE, SIZE) for shape in shapes), set(shapes)
    print(json.dumps({"images_per_s": statistics.median(rates), "rates": rates}))


def torch_worker(folder, batches, repeats, workers):
    import torch
    import torchvision
    from torchvision import transforms

    torch.set_num_threads(1)

    class Jpegs(torch.utils.data.Dataset):
        def __init__(self, root):
            self.files = sorted(os.path.join(root, name) for name in os.listdir(root))
            self.transform = transforms.Compose([
                transforms.RandomResizedCrop(SIZE, scale=(0.08, 1.0), ratio=(3 / 4, 4 / 3)),
                transforms.RandomHorizontalFlip(),
                transforms.ConvertImageDtype(torch.float32),
                transforms.Normalize([m / 255 for m in MEAN], [s / 255 for s in STD]),
            ])

        def __len__(self):
            return len(self.files)

        def __getitem__(self, index):
            image = torchvision.io.decode_jpeg(torchvision.io.read_file(self.files[index]))
            return self.transform(image), index % 10

    loader = torch.utils.data.DataLoader(Jpegs(os.path.join(folder, "jpg")), batch_size=BATCH, shuffle=True,
                                         num_workers=workers, drop_last=True, persistent_workers=workers > 0)

    def batches_forever():
        while True:
            yield from loader

    stream = batches_forever()
    images, _ = next(stream)  # starts the workers
    assert tuple(images.shape) == (BATCH, 3, SIZE, SIZE)
    rates = []
    for _ in range(repeats):
        start = time.perf_counter()
        for _ in range(batches):
            images, _ = next(stream)
        rates.append(batches * BATCH / (time.perf_counter() - start))
    print(json.dumps({"images_per_s": statistics.median(rates), "rates": rates, "torch": torch.__version__,
                      "torchvision": torchvision.__version__}))


def decode_limit(folder, batches=20):
    """Reading and decoding alone (Weir's reader and libjpeg-turbo, each image then shrunk to one pixel,
    which costs nothing): images/s on the cores the process has. What the full pipelines add to it is
    the crop, resize and normalization."""
    import weir as flow
    import weir.typing as tp

    @flow.global_function()
    def decode() -> tp.Numpy:
        records = flow.data.ofrecord_reader(os.path.join(folder, "ofrecord"), batch_size=BATCH, data_part_num=4)
        images = flow.data.OFRecordImageDecoder(records, "encoded", color_space="RGB")
        return flow.image.Resize(images, target_size=(1, 1), interpolation_type="nearest_neighbor")[0]

    decode()
    start = time.perf_counter()
    for _ in range(batches):
        decode()
    print(json.dumps({"images_per_s": batches * BATCH / (time.perf_counter() - start)}))


def main():
    if len(sys.argv) > 1 and sys.argv[1] in ("prepare", "weir", "torch", "decode-limit"):
        worker = argparse.ArgumentParser()
        worker.add_argument("mode")
        worker.add_argument("--folder", required=True)
        worker.add_argument("--images", type=int, default=640)
        worker.add_argument("--batches", type=int, default=20)
        worker.add_argument("--repeats", type=int, default=3)
        worker.add_argument("--workers", type=int, default=0, help="torch: DataLoader worker processes")
        w = worker.parse_args()
        if w.mode == "prepare":
            prepare(w.folder, w.images)
        elif w.mode == "weir":
            weir_worker(w.folder, w.batches, w.repeats)
        elif w.mode == "torch":
            torch_worker(w.folder, w.batches, w.repeats, w.workers)
        else:
            decode_limit(w.folder)
        return

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="1 round, fewer batches")
    parser.add_argument("--rounds", type=int, default=None)
    parser.add_argument("--python", default="/usr/bin/python3", help="the interpreter with torch (Debian's)")
    parser.add_argument("--weir-python", default=os.path.join(ROOT, ".venv", "bin", "python"))
    args = parser.parse_args()
    rounds = args.rounds or (1 if args.quick else 3)
    batches = 8 if args.quick else 20
    me = os.path.abspath(__file__)
    runner = QuietRunner(max_foreign=0.3, retries=1, quiet_budget=300, timeout=600)
    with tempfile.TemporaryDirectory(prefix="weir-data-bench-") as folder:
        made = runner.run([args.weir_python, me, "prepare", "--folder", folder, "--images", "640"])
        limit = runner.run([args.weir_python, me, "decode-limit", "--folder", folder], cpus=one_core())["images_per_s"]
        print(f"{made['images']} JPEGs of 500 x 375, {made['mean_jpeg_kb']:.0f} KB on average; batches of {BATCH}; "
              f"reading and decoding alone (libjpeg-turbo): {limit:.0f} images/s on one core")
        result = {"decode_limit_images_per_s_1_core": limit}
        for threads in (1, 2):
            cpus = one_core() if threads == 1 else None
            env = {"OMP_NUM_THREADS": str(threads)}
            # The peer at its best: on one core the main process loads (no worker); on two, one or two
            # worker processes feed the main one, whichever is faster.
            candidates = (0,) if threads == 1 else (1, 2)
            samples = {"weir": [], **{workers: [] for workers in candidates}}
            for _ in range(rounds):
                common = ["--folder", folder, "--batches", str(batches)]
                samples["weir"].append(runner.run([args.weir_python, me, "weir"] + common, env, cpus=cpus))
                for workers in candidates:
                    samples[workers].append(runner.run([args.python, me, "torch", "--workers", str(workers)] + common, env,
                                                       cpus=cpus, unset=("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")))
            weir_rate = statistics.median(s["images_per_s"] for s in samples["weir"])
            best = max(candidates, key=lambda w: statistics.median(s["images_per_s"] for s in samples[w]))
            torch_rate = statistics.median(s["images_per_s"] for s in samples[best])
            label = "1 thread (one core)" if threads == 1 else "2 threads"
            print(f"{label:<20} Weir {weir_rate:7.1f} images/s ({weir_rate / (limit * threads):5.1%} of the decode "
                  f"limit)   PyTorch DataLoader ({best} workers) {torch_rate:7.1f} images/s "
                  f"({torch_rate / (limit * threads):5.1%})   ratio {weir_rate / torch_rate:.2f}")
            result[f"weir_images_per_s_{threads}t"] = weir_rate
            result[f"torch_images_per_s_{threads}t"] = torch_rate
            result[f"weir_vs_torch_{threads}t"] = weir_rate / torch_rate
            result[f"torch_workers_{threads}t"] = best
            result["torch_version"] = samples[best][0].get("torch")
        note = runner.noise_note()
        if note:
            print(note)
        print(json.dumps(rounded(result)))


if __name__ == "__main__":
    main()
