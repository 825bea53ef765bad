"""``flow.keras``: OneFlow's Keras-flavoured aliases (``flow.keras.activations``), which its model code
(Inception-v3 in OneFlow's CNN trainer) calls."""

from weir.keras import activations

__all__ = ["activations"]
