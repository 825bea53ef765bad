#!/bin/sh
# The files of folder $1 matching pattern $2 (e.g. '*.cpp'), one name per line, sorted: the source lists
# of the folders Meson globs (src/graph/ops, src/kernels/cpu, ...). Meson reads them when it configures;
# scripts/reconfigure-on-new-sources.sh reconfigures a build when a file is added or removed.
set -eu
cd "$1"
for file in $2; do
  [ -f "$file" ] && printf '%s\n' "$file"
done | LC_ALL=C sort
