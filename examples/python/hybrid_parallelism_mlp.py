# Weir: OneFlow's docs program extended_topics/hybrid_parallelism_mlp.py (model_mixed_parallel.md,
# "Hybrid parallelism example"): the MLP in the consistent view on 2 devices, "dense1" data parallel,
# "dense2" model parallel (model_distribute=flow.distribute.split(axis=0): each device holds and
# updates its rows of the (10, 512) weight). Prints the mean loss every 20 steps. Written for 2 GPUs;
# without CUDA kernels Weir runs it on 2 CPU devices. Unchanged but for its imports and the lines
# marked "Weir:" (flags for shorter runs; their defaults are the docs' program).
# hybrid_parallelism_mlp.py
import argparse  # Weir: --epochs, --max-steps
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
        name="dense1",
    )
    return flow.layers.dense(
        hidden,
        10,
        kernel_initializer=initializer,
        # dense is stored as a column and split on axis=0
        model_distribute=flow.distribute.split(axis=0),
        name="dense2",
    )


def get_train_config():
    config = flow.function_config()
    config.default_data_type(flow.float)
    return config


@flow.global_function(type="train", function_config=get_train_config())
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
    # Weir: flags for shorter runs (tests); the defaults give the docs' program
    parser = argparse.ArgumentParser(description="Weir: the docs' hybrid_parallelism_mlp.py")
    parser.add_argument("--epochs", type=int, default=3, help="training epochs (the docs: 3)")
    parser.add_argument("--max-steps", type=int, default=None, help="batches per epoch (default: all 600)")
    args = parser.parse_args()
    flow.config.gpu_device_num(2)
    check_point = flow.train.CheckPoint()
    check_point.init()

    (train_images, train_labels), (test_images, test_labels) = flow.data.load_mnist(
        BATCH_SIZE
    )
    train_images, train_labels = train_images[: args.max_steps], train_labels[: args.max_steps]  # Weir

    for epoch in range(args.epochs):  # Weir: the docs' range(3)
        for i, (images, labels) in enumerate(zip(train_images, train_labels)):
            loss = train_job(images, labels)
            if i % 20 == 0:
                print(loss.mean())
