# Third-party libraries, all from Debian 12 packages (see README "Dependencies").
find_package(PkgConfig REQUIRED)
find_package(Threads REQUIRED)
find_package(JPEG REQUIRED)                                    # libjpeg62-turbo-dev
pkg_check_modules(SPNG REQUIRED IMPORTED_TARGET spng)          # libspng-dev
pkg_check_modules(WEBP REQUIRED IMPORTED_TARGET libwebp)       # libwebp-dev
pkg_check_modules(ZSTD REQUIRED IMPORTED_TARGET libzstd)       # libzstd-dev
pkg_check_modules(LZ4 REQUIRED IMPORTED_TARGET liblz4)         # liblz4-dev
pkg_check_modules(XXHASH REQUIRED IMPORTED_TARGET libxxhash)   # libxxhash-dev
find_package(nlohmann_json 3.10 REQUIRED)                      # nlohmann-json3-dev
if(DOCFEED_BUILD_TESTS)
  find_package(GTest REQUIRED)                                 # libgtest-dev
endif()
if(DOCFEED_BUILD_BENCHMARKS)
  find_package(benchmark REQUIRED)                             # libbenchmark-dev
endif()
