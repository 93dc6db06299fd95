#!/usr/bin/env bash
# Installs the Debian 12 packages docfeed builds and tests with, only those missing.
# Uses sudo when not root. Every package is named, with its reason, in README.md.
set -euo pipefail

packages=(
  build-essential cmake ninja-build pkg-config git   # toolchain
  clang libclang-rt-14-dev xxd                       # TSan tree, libFuzzer targets (xxd sorts seeds)
  libjpeg62-turbo-dev                                # JPEG decode/encode (libjpeg-turbo)
  libspng-dev                                        # PNG decode/encode
  libdeflate-dev                                     # PNG decode: the IDAT stream inflated in one call
  libwebp-dev                                        # WebP decode/encode (+ libwebpdemux: animated)
  libgif-dev                                         # GIF decode (giflib)
  libtiff-dev libtiff-tools                          # TIFF decode (libtiff, as Pillow); tiffcp for the test corpus
  libzstd-dev liblz4-dev                             # Arrow IPC buffer compression (and Parquet's ZSTD, LZ4_RAW)
  libsnappy-dev zlib1g-dev libbrotli-dev             # Parquet pages: SNAPPY, GZIP, BROTLI
  libxxhash-dev                                      # XXH3-64 checksums
  libcurl4-openssl-dev                               # remote datasets: HTTP(S), SigV4 signing (src/remote)
  libssl-dev                                         # pack -o s3://: MD5, SHA-256 of uploaded bodies (libcrypto)
  nginx openssl                                      # tests: a static HTTP(S) server with Range requests, its test CA (tests/remote)
  libarchive-dev                                     # WebDataset tar shards (tar, tar.gz)
  nlohmann-json3-dev                                 # JSON (metadata.jsonl, manifests)
  libhwy-dev                                         # Google Highway SIMD kernels
  libcairo2-dev libpango1.0-dev libfontconfig-dev    # docfeed synth: rendering and text layout
  fonts-liberation2 fonts-dejavu-core fonts-crosextra-carlito  # docfeed synth: the fonts
  libsentencepiece-dev sentencepiece                 # XLM-R tokenization of Donut labels
  libicu-dev                                         # tokenizer.json: grapheme clusters, Unicode properties
  libpoppler-private-dev                             # PDF input of pack: poppler's core API, as pdftoppm uses it
  poppler-utils                                      # pdftoppm/pdfinfo: the reference the PDF tests compare with
  libgtest-dev libgmock-dev libbenchmark-dev         # tests and benchmarks
  python3 python3-venv python3-dev                   # .venv for the interop tests
)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi

sudo=""
if [ "$(id -u)" -ne 0 ]; then
  sudo="sudo"
fi
echo "docfeed: installing Debian packages: ${missing[*]}"
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
