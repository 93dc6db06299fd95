# libdocfeed.so, the library others build against: every component's static library linked in
# whole, third-party libraries linked privately, so a consumer needs only the headers of
# include/docfeed/ (std types only) and this package:
#
#   find_package(docfeed REQUIRED)
#   target_link_libraries(app PRIVATE docfeed::docfeed)
#
# `cmake --install build --prefix P` installs P/lib/libdocfeed.so, P/include/docfeed/*.h,
# P/lib/cmake/docfeed/ (the package config) and, with the tools, P/bin/docfeed
# (tools/docfeed/CMakeLists.txt).
# tests/install/ builds examples/loader against such an install in `make test`.
include(CMakePackageConfigHelpers)
include(GNUInstallDirs)

set(docfeed_components docfeed_base docfeed_remote docfeed_codec docfeed_pdf docfeed_format docfeed_kernels docfeed_imaging
    docfeed_preset docfeed_labels docfeed_pack docfeed_migrate docfeed_pipeline docfeed_synth)
add_library(docfeed_shared SHARED ${PROJECT_SOURCE_DIR}/cmake/docfeed_shared.cc)
add_library(docfeed::docfeed ALIAS docfeed_shared)
set_target_properties(docfeed_shared PROPERTIES OUTPUT_NAME docfeed EXPORT_NAME docfeed VERSION ${PROJECT_VERSION}
                                                SOVERSION ${PROJECT_VERSION_MAJOR})
# Every object of every component goes in; linking the components' archives too brings their
# third-party libraries (no archive member is pulled again: the objects define all of ours).
foreach(component IN LISTS docfeed_components)
  target_sources(docfeed_shared PRIVATE $<TARGET_OBJECTS:${component}>)
endforeach()
target_link_libraries(docfeed_shared PRIVATE docfeed_options ${docfeed_components})
# Only the public API is exported (docfeed.map: docfeed::, not docfeed::internal::, nor the
# third-party code linked in); tests/install/install_test.sh checks it with nm.
set(docfeed_version_script ${PROJECT_SOURCE_DIR}/cmake/docfeed.map)
target_link_options(docfeed_shared PRIVATE "LINKER:--version-script=${docfeed_version_script}")
set_target_properties(docfeed_shared PROPERTIES LINK_DEPENDS ${docfeed_version_script})
target_include_directories(docfeed_shared INTERFACE
  $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}/include>
  $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>)
target_compile_features(docfeed_shared INTERFACE cxx_std_20)

install(TARGETS docfeed_shared EXPORT docfeedTargets
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/docfeed
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(EXPORT docfeedTargets NAMESPACE docfeed:: FILE docfeedTargets.cmake
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/docfeed)
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/docfeedConfig.cmake.in
  ${PROJECT_BINARY_DIR}/docfeedConfig.cmake
  INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/docfeed)
write_basic_package_version_file(${PROJECT_BINARY_DIR}/docfeedConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/docfeedConfig.cmake
              ${PROJECT_BINARY_DIR}/docfeedConfigVersion.cmake
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/docfeed)
