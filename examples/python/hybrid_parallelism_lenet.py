# Weir: OneFlow's docs program extended_topics/hybrid_parallelism_lenet.py (model_mixed_parallel.md,
# "Pipelining example"): LeNet whose dense layers run as a two-stage pipeline, "hidden" on device 0
# and "outlayer" on device 1 (flow.scope.placement). Prints the mean loss every 20 steps. Written for
# 2 GPUs; without CUDA kernels Weir runs it on 2 CPU devices. Unchanged but for its imports and the
# lines marked "Weir:" (flags for shorter runs; their defaults are the docs' program).
# hybrid_parallelism_lenet.py
import argparse  # Weir: --epochs, --max-steps
import weir as flow
import weir.typing as tp

BATCH_SIZE = 100


def lenet(data, train=False):
    initializer = flow.truncated_normal(0.1)
    conv1 = flow.layers.conv2d(
        data,
        32,
        5,
        padding="SAME",
        activation=flow.nn.relu,
        kernel_initializer=initializer,
        name="conv1",
    )
    pool1 = flow.nn.max_pool2d(conv1, ksize=2, strides=2, padding="SAME", name="pool1")
    conv2 = flow.layers.conv2d(
        pool1,
        64,
        5,
        padding="SAME",
        activation=flow.nn.relu,
        kernel_initializer=initializer,
        name="conv2",
    )
    pool2 = flow.nn.max_pool2d(conv2, ksize=2, strides=2, padding="SAME", name="pool2")
    reshape = flow.reshape(pool2, [pool2.shape[0], -1])
    with flow.scope.placement("gpu", "0:0"):
        hidden = flow.layers.dense(
            reshape,
            512,
            activation=flow.nn.relu,
            kernel_initializer=initializer,
            name="hidden",
        )
    if train:
        hidden = flow.nn.dropout(hidden, rate=0.5)

    with flow.scope.placement("gpu", "0:1"):
        output = flow.layers.dense(
            hidden, 10, kernel_initializer=initializer, name="outlayer"
        )
    return output


def get_train_config():
    config = flow.function_config()
    config.default_data_type(flow.float)
    return config


@flow.global_function(type="train", function_config=get_train_config())
def train_job(
    images: tp.Numpy.Placeholder((BATCH_SIZE, 1, 28, 28), dtype=flow.float),
    labels: tp.Numpy.Placeholder((BATCH_SIZE,), dtype=flow.int32),
) -> tp.Numpy:
    logits = lenet(images, train=True)
    loss = flow.nn.sparse_softmax_cross_entropy_with_logits(
        labels, logits, name="softmax_loss"
    )

    lr_scheduler = flow.optimizer.PiecewiseConstantScheduler([], [0.1])
    flow.optimizer.SGD(lr_scheduler, momentum=0).minimize(loss)
    return loss


if __name__ == "__main__":
    # Weir: flags for shorter runs (tests); the defaults give the docs' program
    parser = argparse.ArgumentParser(description="Weir: the docs' hybrid_parallelism_lenet.py")
    parser.add_argument("--epochs", type=int, default=50, help="training epochs (the docs: 50)")
    parser.add_argument("--max-steps", type=int, default=None, help="batches per epoch (default: all 600)")
    args = parser.parse_args()
    flow.config.gpu_device_num(2)
    check_point = flow.train.CheckPoint()
    check_point.init()
    (train_images, train_labels), (test_images, test_labels) = flow.data.load_mnist(
        BATCH_SIZE
    )
    train_images, train_labels = train_images[: args.max_steps], train_labels[: args.max_steps]  # Weir

    for epoch in range(args.epochs):  # Weir: the docs' range(50)
        for i, (images, labels) in enumerate(zip(train_images, train_labels)):
            loss = train_job(images, labels)
            if i % 20 == 0:
                print(loss.mean())
