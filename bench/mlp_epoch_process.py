"""One whole MNIST MLP run, for timing as a process (start the interpreter, load MNIST, train 1
epoch of 600 steps, evaluate on the test set, exit): the seeds' MLP (784 -> 512 relu -> 10,
truncated_normal(0.1) kernels, SGD lr 0.1 momentum 0, batch 100, file order) with Weir's Python API
or PyTorch. bench/compare_pytorch.py times each process from outside (wall time, peak RSS).

    .venv/bin/python bench/mlp_epoch_process.py weir
    /usr/bin/python3 bench/mlp_epoch_process.py torch [--torch-threads 1 --blas-threads 2]

Data: the IDX files of `make data` ($WEIR_DATA_DIR, else ~/.cache/weir/mnist). Last line: JSON.
"""
import argparse
import json
import os
import sys
import time

BATCH = 100


def data_dir():
    return os.environ.get("WEIR_DATA_DIR") or os.path.expanduser("~/.cache/weir/mnist")


def run_weir():
    import numpy as np

    import weir as flow
    import weir.typing as tp

    def mlp(images):
        initializer = flow.truncated_normal(0.1)
        reshape = flow.reshape(images, [images.shape[0], -1])
        hidden = flow.layers.dense(reshape, 512, activation=flow.nn.relu, kernel_initializer=initializer,
                                   name="hidden")
        return flow.layers.dense(hidden, 10, kernel_initializer=initializer, name="output")

    @flow.global_function(type="train")
    def train_job(images: tp.Numpy.Placeholder((BATCH, 1, 28, 28), dtype=flow.float),
                  labels: tp.Numpy.Placeholder((BATCH,), dtype=flow.int32)) -> tp.Numpy:
        loss = flow.nn.sparse_softmax_cross_entropy_with_logits(labels, mlp(images), name="softmax_loss")
        flow.optimizer.SGD(flow.optimizer.PiecewiseConstantScheduler([], [0.1]), momentum=0).minimize(loss)
        return loss

    @flow.global_function(type="predict")
    def eval_job(images: tp.Numpy.Placeholder((BATCH, 1, 28, 28), dtype=flow.float)) -> tp.Numpy:
        return flow.math.argmax(mlp(images))

    (train_images, train_labels), (test_images, test_labels) = flow.data.load_mnist(BATCH, BATCH, out_dir=data_dir())
    for images, labels in zip(train_images, train_labels):
        loss = train_job(images, labels)
    correct = sum(int(np.sum(eval_job(images) == labels)) for images, labels in zip(test_images, test_labels))
    return float(loss.mean()), correct / (len(test_labels) * BATCH)


def read_idx(path):
    import numpy as np

    with open(path, "rb") as file:
        raw = file.read()
    dims = raw[3]
    shape = [int.from_bytes(raw[4 + 4 * i:8 + 4 * i], "big") for i in range(dims)]
    return np.frombuffer(raw, dtype=np.uint8, offset=4 + 4 * dims).reshape(shape)


def run_torch(args):
    os.environ["OMP_NUM_THREADS"] = str(args.torch_threads)
    os.environ["OPENBLAS_NUM_THREADS"] = str(args.blas_threads)
    if args.omp_wait_policy:
        os.environ["OMP_WAIT_POLICY"] = args.omp_wait_policy
    import torch
    from torch import nn

    torch.set_num_threads(args.torch_threads)
    torch.manual_seed(0)

    def load(images_name, labels_name):
        images = torch.from_numpy(read_idx(os.path.join(data_dir(), images_name)).copy()).float().div_(255.0)
        labels = torch.from_numpy(read_idx(os.path.join(data_dir(), labels_name)).astype("int64"))
        return images.reshape(-1, BATCH, 1, 28, 28), labels.reshape(-1, BATCH)

    train_images, train_labels = load("train-images-idx3-ubyte", "train-labels-idx1-ubyte")
    test_images, test_labels = load("t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte")
    model = nn.Sequential(nn.Flatten(), nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 10))
    with torch.no_grad():
        for layer in (model[1], model[3]):
            nn.init.trunc_normal_(layer.weight, std=0.1, a=-0.2, b=0.2)
            layer.bias.zero_()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.0)
    loss_fn = nn.CrossEntropyLoss()
    for images, labels in zip(train_images, train_labels):
        optimizer.zero_grad(set_to_none=True)
        loss = loss_fn(model(images), labels)
        loss.backward()
        optimizer.step()
    with torch.no_grad():
        correct = sum(int((model(images).argmax(1) == labels).sum()) for images, labels in zip(test_images, test_labels))
    return float(loss), correct / test_labels.numel()


def main():
    start = time.perf_counter()
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("impl", choices=["weir", "torch"])
    parser.add_argument("--torch-threads", type=int, default=1)
    parser.add_argument("--blas-threads", type=int, default=2)
    parser.add_argument("--omp-wait-policy", choices=["PASSIVE", "ACTIVE"], default=None)
    args = parser.parse_args()
    loss, accuracy = run_weir() if args.impl == "weir" else run_torch(args)
    if not accuracy > 0.5:
        sys.exit(f"mlp_epoch_process: {args.impl} reached only {100 * accuracy:.2f}% test accuracy")
    seconds = time.perf_counter() - start
    print(f"{args.impl}: 1 epoch, last loss {loss:.4f}, test accuracy {100 * accuracy:.2f}% ({seconds:.2f} s after main)")
    print(json.dumps({"bench": "mlp_epoch_process", "impl": args.impl, "final_loss": round(loss, 4),
                      "test_accuracy": round(accuracy, 4), "seconds_in_main": round(seconds, 3)}))


if __name__ == "__main__":
    main()
