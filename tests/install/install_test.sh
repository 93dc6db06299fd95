#!/usr/bin/env bash
# The installed package works from outside the tree: install BUILD into a temporary prefix,
# build examples/loader against it with find_package (only the installed headers on its include
# path), pack a dataset with the installed CLI and run the example on it.
#   install_test.sh SOURCE_DIR BUILD_DIR
set -euo pipefail
src=$1
build=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cmake --install "$build" --prefix "$tmp/prefix" > /dev/null
test -f "$tmp/prefix/include/docfeed/loader.h"
test -f "$tmp/prefix/lib/cmake/docfeed/docfeedConfig.cmake"
# Nothing but include/docfeed is installed as headers.
test "$(ls "$tmp/prefix/include")" = docfeed
# The library exports the public API (docfeed::) and no symbol of docfeed::internal (functions,
# variables, vtables, type_info; cmake/docfeed.map). Public members may still name internal
# types in their parameters (the pImpl constructors).
lib=$(find "$tmp/prefix" -name 'libdocfeed.so' | head -1)
exported=$(nm -DC --defined-only "$lib")
grep -q ' docfeed::Loader::Create(' <<< "$exported"
if grep -E '^[0-9a-f]+ [A-Za-z] (((vtable|typeinfo|typeinfo name|VTT|guard variable) for )|(non-virtual |virtual )?thunk to )?docfeed::internal::' <<< "$exported"; then
  echo "libdocfeed.so exports docfeed::internal symbols (above)" >&2
  exit 1
fi
cmake -S "$src/examples/loader" -B "$tmp/example" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_PREFIX_PATH="$tmp/prefix" > /dev/null
cmake --build "$tmp/example" > /dev/null
images=$src/tests/data/sample-docs/invoices
"$tmp/prefix/bin/docfeed" pack "$images" -o "$tmp/ds" > /dev/null
n=$(find "$images" -maxdepth 1 -type f \( -name '*.png' -o -name '*.jpg' \) | wc -l)
out=$("$tmp/example/loader_example" "$tmp/ds" "$images/simple-invoice.png")
echo "$out"
grep -qx "samples: $n" <<< "$out"
grep -qx "delivered: $(( n / 2 * 2 ))" <<< "$out"
grep -q '"samples":' <<< "$out"
grep -q '^prepared: ' <<< "$out"
