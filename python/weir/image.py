"""``flow.image``: the data pipeline's image ops (OneFlow's), run on the host by the job itself:
``Resize`` of decoded images and ``CropMirrorNormalize``."""

from __future__ import annotations

from weir import _C
from weir._blob import to_c_dtype
from weir._ops_util import check_blob, op_name, wrap
from weir.data import CropMirrorNormalize, crop_mirror_normalize

__all__ = ["Resize", "resize", "CropMirrorNormalize", "crop_mirror_normalize"]


def Resize(image, target_size=None, min_size=None, max_size=None, keep_aspect_ratio=False, resize_side="shorter",
           channels=3, dtype=None, interpolation_type="auto", name=None, color_space=None, interp_type=None,
           resize_shorter=0, resize_x=0, resize_y=0):  # noqa: N802 - OneFlow's name
    """Decoded images (a tensor_buffer) resized, OneFlow's way. Without `keep_aspect_ratio`, each to
    `target_size` = (width, height): returns (images, scale, None), images a (batch, height, width,
    channels) blob of `dtype` (uint8 by default, or float32) and scale each image's (width, height)
    scale (batch, 2) float32. With it, the `resize_side` ("shorter" or "longer") to `target_size` (an
    int), the other side then kept within `max_size` (shorter) or at least `min_size` (longer): returns
    (images, scale, new_size), images still a tensor_buffer, new_size (batch, 2) int32 (width, height).
    `interpolation_type`: "auto" or "bilinear", "nearest_neighbor", "bicubic" or "area" (OpenCV's
    resize, which OneFlow runs: bicubic with a = -0.75, area weighing source pixels by the share of
    them each output pixel covers). The deprecated arguments
    (color_space, interp_type, resize_shorter, resize_x/resize_y) work as in OneFlow and make it return
    the images alone."""
    check_blob(image, "flow.image.Resize", "image")
    deprecated = False
    if color_space is not None:
        deprecated = True
        channels = 1 if str(color_space).upper() == "GRAY" else 3
    if interp_type is not None:
        deprecated = True
        known = {"Linear": "bilinear", "NN": "nearest_neighbor", "Cubic": "bicubic", "Area": "area"}
        if interp_type not in known:
            raise ValueError(f"flow.image.Resize: interp_type must be 'Linear', 'NN', 'Cubic' or 'Area', got {interp_type!r}")
        interpolation_type = known[interp_type]
    if resize_x > 0 and resize_y > 0:
        deprecated, target_size, keep_aspect_ratio = True, (resize_x, resize_y), False
    if resize_shorter > 0:
        deprecated, target_size, keep_aspect_ratio, resize_side = True, resize_shorter, True, "shorter"
    attrs = {"channels": int(channels), "interpolation_type": str(interpolation_type), "keep_aspect_ratio": bool(keep_aspect_ratio)}
    if keep_aspect_ratio:
        if not isinstance(target_size, int) or isinstance(target_size, bool):
            raise ValueError(f"flow.image.Resize: target_size must be an int when keep_aspect_ratio is True, got {target_size!r}")
        if resize_side not in ("shorter", "longer"):
            raise ValueError(f"flow.image.Resize: resize_side must be 'shorter' or 'longer', got {resize_side!r}")
        attrs.update(target_size=target_size, min_size=int(min_size or 0), max_size=int(max_size or 0),
                     resize_longer=resize_side == "longer")
    else:
        if (not isinstance(target_size, (list, tuple)) or len(target_size) != 2
                or not all(isinstance(v, int) and not isinstance(v, bool) for v in target_size)):
            raise ValueError(f"flow.image.Resize: target_size must be (width, height) when keep_aspect_ratio is False, "
                             f"got {target_size!r}")
        attrs.update(target_width=target_size[0], target_height=target_size[1],
                     dtype=to_c_dtype(dtype if dtype is not None else "uint8"))
    outputs = [wrap(c, image) for c in _C.add_op("image_resize", [image._c], attrs, op_name(name))]
    if keep_aspect_ratio:
        images, new_size, scale = outputs
    else:
        (images, scale), new_size = outputs, None
    if deprecated:
        return images
    return images, scale, new_size


resize = Resize
