#!/usr/bin/env python3
"""The public API's boundary (include/docfeed/, docs/architecture.md).

* Public headers include only the C++ standard library and each other: no third-party or
  internal type can leak into them.
* Nothing outside src/ includes a src/ header, except the white-box tests under tests/ (the
  fuzz targets among them), which read the internals they test. So the CLI (tools/), the
  benchmark programs (bench/), the Python extension (python/src/) and the examples use
  include/docfeed/ only; white-box benchmarks live beside their component as
  src/<component>/*_bench.cc.

    check_boundary.py SOURCE_DIR
"""
import pathlib
import re
import sys

# Top-level directories that may include internal headers (or are not source).
INSIDE = {"src", "tests", "include"}
INCLUDE = re.compile(r'^\s*#\s*include\s*([<"])([^>"]+)[>"]', re.M)


def internal_headers(src: pathlib.Path) -> set:
    return {str(p.relative_to(src)) for p in src.rglob("*.h")}


def outside_sources(root: pathlib.Path):
    """Every .h/.cc file of the tree outside INSIDE, build directories and hidden ones."""
    for top in sorted(root.iterdir()):
        if not top.is_dir() or top.name in INSIDE or top.name.startswith((".", "build")):
            continue
        for path in sorted(top.rglob("*")):
            if path.suffix in (".h", ".cc") and path.is_file():
                yield path


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
    for path in outside_sources(root):
        rel = str(path.relative_to(root))
        local = {str(p.relative_to(path.parent)) for p in path.parent.glob("*.h")}
        uses = [n for k, n in INCLUDE.findall(path.read_text())
                if k == '"' and n in internal and n not in local]
        checked += 1
        if uses:
            errors.append(f"{rel} includes internal headers {uses}; use include/docfeed/")
    for e in errors:
        print(e)
    print(f"checked {checked} files outside src/ and tests/ and the public headers: "
          f"{len(errors)} problems")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
