# docfeed_add_library / docfeed_add_test / docfeed_add_benchmark: one place for warnings,
# sanitizers and include paths, so targets never touch global flags.

set(docfeed_warnings -Wall -Wextra -Wpedantic -Wshadow -Wconversion -Wnon-virtual-dtor)
# clang's -Wconversion also warns on signedness, which g++'s (the release compiler) leaves out
# in C++; the clang tree (TSan) keeps the same set as g++.
if(CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
  list(APPEND docfeed_warnings -Wno-sign-conversion)
endif()
if(DOCFEED_WERROR)
  list(APPEND docfeed_warnings -Werror)
endif()
# Clang's thread-safety analysis (base/thread_annotations.h); `make test-thread-safety`.
if(DOCFEED_THREAD_SAFETY)
  list(APPEND docfeed_warnings -Wthread-safety -Werror=thread-safety)
endif()

add_library(docfeed_options INTERFACE)
target_compile_options(docfeed_options INTERFACE ${docfeed_warnings})
target_include_directories(docfeed_options INTERFACE
  ${PROJECT_SOURCE_DIR}/include ${PROJECT_SOURCE_DIR}/src)
if(DOCFEED_SANITIZE)
  target_compile_options(docfeed_options INTERFACE
    -fsanitize=${DOCFEED_SANITIZE} -fno-sanitize-recover=all -fno-omit-frame-pointer)
  target_link_options(docfeed_options INTERFACE -fsanitize=${DOCFEED_SANITIZE})
endif()

function(docfeed_add_library name)
  cmake_parse_arguments(ARG "" "" "SRCS;DEPS" ${ARGN})
  add_library(${name} STATIC ${ARG_SRCS})
  target_link_libraries(${name} PUBLIC docfeed_options ${ARG_DEPS})
endfunction()

function(docfeed_add_test name)
  cmake_parse_arguments(ARG "" "" "SRCS;DEPS" ${ARGN})
  add_executable(${name} ${ARG_SRCS})
  target_link_libraries(${name} PRIVATE docfeed_options ${ARG_DEPS} GTest::gtest GTest::gtest_main)
  target_compile_definitions(${name} PRIVATE
    DOCFEED_TEST_DATA_DIR="${PROJECT_SOURCE_DIR}/tests/data")
  gtest_discover_tests(${name} DISCOVERY_TIMEOUT 60)
endfunction()

function(docfeed_add_benchmark name)
  cmake_parse_arguments(ARG "" "" "SRCS;DEPS" ${ARGN})
  add_executable(${name} ${ARG_SRCS})
  target_link_libraries(${name} PRIVATE docfeed_options ${ARG_DEPS} benchmark::benchmark)
  target_compile_definitions(${name} PRIVATE
    DOCFEED_TEST_DATA_DIR="${PROJECT_SOURCE_DIR}/tests/data")
endfunction()

# The pixel libraries' loops (decode, resample, normalize) run tens of times slower at -O0, and
# under a sanitizer (a Debug tree) the tests that push whole pages through them dominate the run;
# -O1 keeps every check a sanitizer makes and the frame pointers of its reports.
function(docfeed_optimize_when_sanitized name)
  if(DOCFEED_SANITIZE)
    target_compile_options(${name} PRIVATE -O1)
  endif()
endfunction()
