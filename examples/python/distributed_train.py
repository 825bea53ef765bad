# Weir: OneFlow's docs program basics_topics/distributed_train.py (distributed_train.md, "Distributed
# training"): the MLP trained data parallel on two machines, one device each; the same script is
# started on every machine, machine 0 (the first address) is the master. Written for one GPU per
# machine; without CUDA kernels Weir runs it on one CPU device per machine. The docs' job is in the
# consistent view: every machine passes the same batch and computes on its half (docs/distributed.md).
# Unchanged but for its imports and the lines marked "Weir:" (flags; their defaults are the docs').
import argparse  # Weir: --machines, --ctrl-port, --max-steps
import numpy as np
import weir as flow
import weir.typing as tp

BATCH_SIZE = 100


def mlp(data):
    initializer = flow.truncated_normal(0.1)
    reshape = flow.reshape(data, [data.shape[0], -1])
    hidden = flow.layers.dense(
        reshape,
        512,
        activation=flow.nn.relu,
        kernel_initializer=initializer,
        name="hidden",
    )
    return flow.layers.dense(
        hidden, 10, kernel_initializer=initializer, name="output-weight"
    )


def config_distributed(machines, ctrl_port):  # Weir: the docs' addresses and port come as arguments
    print("distributed config")
    # number of GPU used in each node
    flow.config.gpu_device_num(1)
    flow.env.ctrl_port(ctrl_port)

    # ip addresses of all nodes
    nodes = [{"addr": addr} for addr in machines]
    flow.env.machine(nodes)

    flow.config.enable_debug_mode(True)


@flow.global_function(type="train")
def train_job(
    images: tp.Numpy.Placeholder((BATCH_SIZE, 1, 28, 28), dtype=flow.float),
    labels: tp.Numpy.Placeholder((BATCH_SIZE,), dtype=flow.int32),
) -> tp.Numpy:
    logits = mlp(images)
    loss = flow.nn.sparse_softmax_cross_entropy_with_logits(
        labels, logits, name="softmax_loss"
    )

    lr_scheduler = flow.optimizer.PiecewiseConstantScheduler([], [0.1])
    flow.optimizer.SGD(lr_scheduler, momentum=0).minimize(loss)
    return loss


if __name__ == "__main__":
    # Weir: flags; the defaults give the docs' program (its two addresses, port 9988, one epoch)
    parser = argparse.ArgumentParser(description="Weir: the docs' distributed_train.py")
    parser.add_argument("--machines", default="192.168.1.12,192.168.1.11", help="comma-separated node addresses")
    parser.add_argument("--ctrl-port", type=int, default=9988)
    parser.add_argument("--max-steps", type=int, default=None, help="batches (default: all 600)")
    args = parser.parse_args()
    config_distributed(args.machines.split(","), args.ctrl_port)
    check_point = flow.train.CheckPoint()
    check_point.init()
    (train_images, train_labels), (test_images, test_labels) = flow.data.load_mnist(
        BATCH_SIZE, BATCH_SIZE
    )
    train_images, train_labels = train_images[: args.max_steps], train_labels[: args.max_steps]  # Weir
    for epoch in range(1):
        for i, (images, labels) in enumerate(zip(train_images, train_labels)):
            loss = train_job(images, labels)
            if i % 20 == 0:
                print(loss.mean())
