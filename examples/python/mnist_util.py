"""The docs' helper module for the extended-topics programs: load_data(batch) returns MNIST in
batches, ((train_images, train_labels), (test_images, test_labels)), as flow.data.load_mnist."""

import weir as flow


def load_data(batch_size):
    return flow.data.load_mnist(batch_size, batch_size)
