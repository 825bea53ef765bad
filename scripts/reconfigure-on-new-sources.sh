#!/bin/sh
# Readies the Meson build in $1 for ninja (make runs it first):
# - reconfigures it when a source file under src/ or python/weir/ was added or removed since it was last
#   configured: those folders are globbed at configure time (scripts/list-sources.sh), so a new op's files
#   are built without editing any build file;
# - removes each CUDA object older than a header it includes (the X.cu.d file nvcc wrote beside it, -MD):
#   Meson 1.0 gives ninja no header dependencies for nvcc, so ninja alone would keep a stale object.
set -eu
build=$1
[ -f "$build/build.ninja" ] || exit 0
list="$build/.weir-sources"
current=$(find src python/weir -name '*.cpp' -o -name '*.cu' -o -name '*.py' | LC_ALL=C sort)
if [ -f "$list" ] && [ "$(cat "$list")" != "$current" ]; then
  echo "source files were added or removed: reconfiguring $build"
  meson setup --reconfigure "$build" > /dev/null
fi
printf '%s\n' "$current" > "$list"
/usr/bin/python3 - "$build" <<'PY'
import os, sys
build = sys.argv[1]
for folder, _, names in os.walk(build):
    for name in names:
        if not name.endswith(".cu.d"):
            continue
        depfile = os.path.join(folder, name)
        obj = depfile[:-2] + ".o"
        if not os.path.exists(obj):
            continue
        built = os.path.getmtime(obj)
        text = open(depfile, encoding="utf-8").read().replace("\\\n", " ")
        deps = text.split(":", 1)[1].split() if ":" in text else []
        # Paths are relative to the build folder, where nvcc ran.
        if any(os.path.getmtime(p) > built for p in (os.path.join(build, d) if not os.path.isabs(d) else d for d in deps)
               if os.path.exists(p)):
            os.remove(obj)
PY
