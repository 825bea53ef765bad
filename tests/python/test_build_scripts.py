"""The build's own scripts: scripts/reconfigure-on-new-sources.sh, run before every ninja, removes a CUDA
object older than a header it includes (Meson 1.0 gives ninja no header dependencies for nvcc, so a
.cu file was not rebuilt after a header it includes changed: a GPU test then ran a stale kernel)."""

import os
import subprocess
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _prepare(tmp_path, header_newer):
    build = tmp_path / "build"
    objects = build / "src" / "libweir_cuda.so.p"
    objects.mkdir(parents=True)
    (build / "build.ninja").write_text("")
    header = tmp_path / "shared.hpp"
    header.write_text("// a header\n")
    obj = objects / "kernels_cuda_update.cu.o"
    obj.write_bytes(b"object")
    # As nvcc -MD writes it: the object, then its inputs, paths relative to the build folder or absolute.
    (objects / "kernels_cuda_update.cu.d").write_text(
        f"src/libweir_cuda.so.p/kernels_cuda_update.cu.o : ../src/kernels/cuda/update.cu \\\n    {header}\n")
    now = time.time()
    older, newer = now - 100, now
    os.utime(obj, (newer, newer) if not header_newer else (older, older))
    os.utime(header, (older, older) if not header_newer else (newer, newer))
    return build, obj


def _run(build):
    subprocess.run(["sh", os.path.join(ROOT, "scripts", "reconfigure-on-new-sources.sh"), str(build)], cwd=ROOT,
                   check=True, timeout=60)


def test_a_cuda_object_older_than_a_header_it_includes_is_removed(tmp_path):
    build, obj = _prepare(tmp_path, header_newer=True)
    _run(build)
    assert not obj.exists()


def test_an_up_to_date_cuda_object_stays(tmp_path):
    build, obj = _prepare(tmp_path, header_newer=False)
    _run(build)
    assert obj.exists()
