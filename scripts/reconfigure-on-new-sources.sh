#!/bin/sh
# Reconfigures the Meson build in $1 when a source file under src/ or python/weir/ was added or removed
# since it was last configured: those folders are globbed at configure time (scripts/list-sources.sh), so
# a new op's files are built without editing any build file. Run before ninja (make does).
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
