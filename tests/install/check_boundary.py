#!/usr/bin/env python3
"""The public API's boundary (include/docfeed/, docs/architecture.md).

* Public headers include only the C++ standard library and each other: no third-party or
  internal type can leak into them.
* Code outside src/ that is not a white-box test (tests/, including tests/fuzz/, read the internals they test)
  includes no src/ header, except the files listed in STILL_INTERNAL, which are being moved to the
  public API. The list only shrinks: a file on it that no longer needs src/ is an error too.

    check_boundary.py SOURCE_DIR
"""
import pathlib
import re
import sys

# Files outside src/ that still include internal headers (to be moved to the public API).
STILL_INTERNAL = {
    "bench/format/codec_table.cc",
    "bench/format/preprocessed_storage.cc",
    "bench/kernels/resize_bench.cc",
    "bench/pipeline/first_batch.cc",
    "python/src/docfeed_ext.cc",
    "tools/docfeed/bench_command.cc",
    "tools/docfeed/migrate_command.cc",
    "tools/docfeed/preprocess_command.cc",
    "tools/docfeed/synth_command.cc",
}
OUTSIDE = ("bench", "examples", "python/src", "tools")
INCLUDE = re.compile(r'^\s*#\s*include\s*([<"])([^>"]+)[>"]', re.M)


def internal_headers(src: pathlib.Path) -> set:
    return {str(p.relative_to(src)) for p in src.rglob("*.h")}


def main() -> int:
    root = pathlib.Path(sys.argv[1])
    internal = internal_headers(root / "src")
    errors = []
    for header in sorted((root / "include" / "docfeed").glob("*.h")):
        for kind, name in INCLUDE.findall(header.read_text()):
            if kind == '"' and not name.startswith("docfeed/"):
                errors.append(f"{header.relative_to(root)} includes \"{name}\"")
            if kind == "<" and ("/" in name or name.endswith(".h")):
                errors.append(f"{header.relative_to(root)} includes <{name}> (not the standard "
                              "library)")
    checked = 0
    for top in OUTSIDE:
        for path in sorted((root / top).rglob("*")):
            if path.suffix not in (".h", ".cc") or not path.is_file():
                continue
            rel = str(path.relative_to(root))
            local = {str(p.relative_to(path.parent)) for p in path.parent.glob("*.h")}
            uses = [n for k, n in INCLUDE.findall(path.read_text())
                    if k == '"' and n in internal and n not in local]
            checked += 1
            if uses and rel not in STILL_INTERNAL:
                errors.append(f"{rel} includes internal headers {uses}; use include/docfeed/")
            if not uses and rel in STILL_INTERNAL:
                errors.append(f"{rel} no longer includes src/ headers: remove it from "
                              "STILL_INTERNAL in tests/install/check_boundary.py")
    for e in errors:
        print(e)
    print(f"checked {checked} files outside src/ and the public headers: "
          f"{len(errors)} problems, {len(STILL_INTERNAL)} files still on the internal list")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
