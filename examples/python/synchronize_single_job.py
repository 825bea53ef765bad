# Weir: OneFlow's docs program basics_topics/synchronize_single_job.py (async_get.md, "Get single
# result synchronously"): LeNet trained with sync calls, the mean loss printed every 20 steps, the
# model saved to ./lenet_models_1 (which must not exist yet, as in OneFlow). Unchanged but for its
# imports and the lines marked "Weir:" (flags for shorter runs; their defaults are the docs' program).
# lenet_train.py
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
        name="conv1",
        kernel_initializer=initializer,
    )
    pool1 = flow.nn.max_pool2d(conv1, ksize=2, strides=2, padding="SAME", name="pool1")
    conv2 = flow.layers.conv2d(
        pool1,
        64,
        5,
        padding="SAME",
        activation=flow.nn.relu,
        name="conv2",
        kernel_initializer=initializer,
    )
    pool2 = flow.nn.max_pool2d(conv2, ksize=2, strides=2, padding="SAME", name="pool2")
    reshape = flow.reshape(pool2, [pool2.shape[0], -1])
    hidden = flow.layers.dense(
        reshape,
        512,
        activation=flow.nn.relu,
        kernel_initializer=initializer,
        name="dense1",
    )
    if train:
        hidden = flow.nn.dropout(hidden, rate=0.5, name="dropout")
    return flow.layers.dense(hidden, 10, kernel_initializer=initializer, name="dense2")


@flow.global_function(type="train")
def train_job(
    images: tp.Numpy.Placeholder((BATCH_SIZE, 1, 28, 28), dtype=flow.float),
    labels: tp.Numpy.Placeholder((BATCH_SIZE,), dtype=flow.int32),
) -> tp.Numpy:
    with flow.scope.placement("gpu", "0:0"):
        logits = lenet(images, train=True)
        loss = flow.nn.sparse_softmax_cross_entropy_with_logits(
            labels, logits, name="softmax_loss"
        )
    lr_scheduler = flow.optimizer.PiecewiseConstantScheduler([], [0.1])
    flow.optimizer.SGD(lr_scheduler, momentum=0).minimize(loss)
    return loss


if __name__ == "__main__":
    # Weir: flags for shorter runs (tests); the defaults give the docs' program
    parser = argparse.ArgumentParser(description="Weir: the docs' synchronize_single_job.py")
    parser.add_argument("--epochs", type=int, default=20, help="training epochs (the docs: 20)")
    parser.add_argument("--max-steps", type=int, default=None, help="batches per epoch (default: all 600)")
    args = parser.parse_args()
    flow.config.gpu_device_num(1)
    check_point = flow.train.CheckPoint()
    check_point.init()

    (train_images, train_labels), (test_images, test_labels) = flow.data.load_mnist(
        BATCH_SIZE
    )
    train_images, train_labels = train_images[: args.max_steps], train_labels[: args.max_steps]  # Weir

    for epoch in range(args.epochs):  # Weir: the docs' range(20)
        for i, (images, labels) in enumerate(zip(train_images, train_labels)):
            loss = train_job(images, labels)
            if i % 20 == 0:
                print(loss.mean())
    check_point.save("./lenet_models_1")  # need remove the existed folder
    print("model saved")
