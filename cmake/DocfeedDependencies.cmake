# Third-party libraries, all from Debian 12 packages (see README "Dependencies").
find_package(PkgConfig REQUIRED)
find_package(Threads REQUIRED)
find_package(JPEG REQUIRED)                                    # libjpeg62-turbo-dev
pkg_check_modules(SPNG REQUIRED IMPORTED_TARGET spng)          # libspng-dev
# PNG rows inflated in one call (src/codec/png_inflate.cc): several times zlib on document pages.
pkg_check_modules(LIBDEFLATE REQUIRED IMPORTED_TARGET libdeflate) # libdeflate-dev
pkg_check_modules(WEBP REQUIRED IMPORTED_TARGET libwebp)       # libwebp-dev
pkg_check_modules(WEBPDEMUX REQUIRED IMPORTED_TARGET libwebpdemux) # libwebp-dev (animated WebP)
pkg_check_modules(GIF REQUIRED IMPORTED_TARGET libgif)         # libgif-dev
pkg_check_modules(TIFF REQUIRED IMPORTED_TARGET libtiff-4>=4.5) # libtiff-dev (TIFFOpenOptions)
pkg_check_modules(ZSTD REQUIRED IMPORTED_TARGET libzstd)       # libzstd-dev
pkg_check_modules(LZ4 REQUIRED IMPORTED_TARGET liblz4)         # liblz4-dev
# Parquet pages' codecs (src/format/parquet): SNAPPY, GZIP, BROTLI (ZSTD and LZ4_RAW above).
pkg_check_modules(SNAPPY REQUIRED IMPORTED_TARGET snappy)      # libsnappy-dev
pkg_check_modules(ZLIB REQUIRED IMPORTED_TARGET zlib)          # zlib1g-dev
pkg_check_modules(BROTLIDEC REQUIRED IMPORTED_TARGET libbrotlidec) # libbrotli-dev
pkg_check_modules(XXHASH REQUIRED IMPORTED_TARGET libxxhash)   # libxxhash-dev
# Remote datasets (src/remote): HTTP(S), connection reuse and SigV4 signing (CURLOPT_AWS_SIGV4).
pkg_check_modules(CURL REQUIRED IMPORTED_TARGET libcurl>=7.75) # libcurl4-openssl-dev
# The MD5 and SHA-256 of what pack -o s3:// uploads (Content-MD5, x-amz-content-sha256, checked
# by the server): OpenSSL's libcrypto, the one libcurl4-openssl already loads.
pkg_check_modules(LIBCRYPTO REQUIRED IMPORTED_TARGET libcrypto) # libssl-dev
pkg_check_modules(LIBARCHIVE REQUIRED IMPORTED_TARGET libarchive) # libarchive-dev
find_package(nlohmann_json 3.10 REQUIRED)                      # nlohmann-json3-dev
# PDF input of docfeed pack: poppler's core API (PDFDoc, SplashOutputDev), the calls pdftoppm
# (poppler-utils) makes, so pages come out identical to its output (src/pdf/README.md).
pkg_check_modules(POPPLER REQUIRED IMPORTED_TARGET poppler)    # libpoppler-private-dev
# docfeed synth: text layout and rendering of synthetic documents.
pkg_check_modules(PANGOCAIRO REQUIRED IMPORTED_TARGET pangocairo) # libpango1.0-dev, libcairo2-dev
pkg_check_modules(PANGOFT2 REQUIRED IMPORTED_TARGET pangoft2)     # libpango1.0-dev
pkg_check_modules(FONTCONFIG REQUIRED IMPORTED_TARGET fontconfig) # libfontconfig-dev
# libsentencepiece-dev: XLM-R tokenization of Donut labels (and training test models).
pkg_check_modules(SENTENCEPIECE QUIET IMPORTED_TARGET sentencepiece)
add_library(docfeed_sentencepiece INTERFACE)
if(SENTENCEPIECE_FOUND)
  target_link_libraries(docfeed_sentencepiece INTERFACE PkgConfig::SENTENCEPIECE)
else()
  find_path(SENTENCEPIECE_INCLUDE_DIR sentencepiece_processor.h REQUIRED)
  find_library(SENTENCEPIECE_LIBRARY sentencepiece REQUIRED)
  find_library(SENTENCEPIECE_TRAIN_LIBRARY sentencepiece_train REQUIRED)
  target_include_directories(docfeed_sentencepiece INTERFACE ${SENTENCEPIECE_INCLUDE_DIR})
  target_link_libraries(docfeed_sentencepiece INTERFACE ${SENTENCEPIECE_LIBRARY}
                        ${SENTENCEPIECE_TRAIN_LIBRARY})
endif()
# libicu-dev: extended grapheme clusters and Unicode properties for tokenizer.json's pipeline.
pkg_check_modules(ICU REQUIRED IMPORTED_TARGET icu-uc)            # libicu-dev
if(DOCFEED_BUILD_TESTS)
  find_package(GTest REQUIRED)                                 # libgtest-dev
endif()
if(DOCFEED_BUILD_BENCHMARKS)
  find_package(benchmark REQUIRED)                             # libbenchmark-dev
endif()
