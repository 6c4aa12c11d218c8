# `cmake --install <build> --prefix <dir>` lays out a relocatable package:
#   include/tgemm/*.h                      the public headers (nothing from src/ or kernels/)
#   lib/libtgemm.so                        the shared library (every kernel of this build)
#   lib/cmake/tgemm/tgemm{Config,ConfigVersion,Targets}.cmake
#   share/tgemm/configs/*.csv              the shipped tables, found by the library at
#                                          <dir of libtgemm.so>/../share/tgemm/configs
#   bin/tgemm                              the command (tune, bench, show, ...), with TGEMM_BUILD_CLI
# A C++ project then uses `find_package(tgemm CONFIG)` and `target_link_libraries(app tgemm::tgemm)`
# (tests/consumer/ is such a project; the package.consumer test builds it against an install).
# Every path in the package is relative to the prefix, so the directory can be moved. The library
# goes to lib/ (not GNUInstallDirs' lib64 or lib/<triplet>) because the runtime finds the tables
# one level above it.
include(CMakePackageConfigHelpers)

set(TGEMM_INSTALL_CMAKEDIR lib/cmake/tgemm)

add_library(tgemm::tgemm ALIAS tgemm)
# The public headers use C++17 (std::optional, std::string_view): users compile as C++17 at least.
target_compile_features(tgemm PUBLIC cxx_std_17)
# The CUDA toolkit's libraries are outside the prefix: keep the directories they were linked from.
set_target_properties(tgemm PROPERTIES INSTALL_RPATH_USE_LINK_PATH TRUE)
install(TARGETS tgemm EXPORT tgemmTargets LIBRARY DESTINATION lib)
install(DIRECTORY include/tgemm DESTINATION include)
install(DIRECTORY configs/ DESTINATION share/tgemm/configs FILES_MATCHING PATTERN "*.csv")
if(TARGET tgemm_cli)
  set_target_properties(tgemm_cli PROPERTIES INSTALL_RPATH_USE_LINK_PATH TRUE)
  install(TARGETS tgemm_cli RUNTIME DESTINATION bin)
endif()

install(EXPORT tgemmTargets NAMESPACE tgemm:: DESTINATION ${TGEMM_INSTALL_CMAKEDIR})
configure_package_config_file(
  "${PROJECT_SOURCE_DIR}/cmake/tgemmConfig.cmake.in" "${PROJECT_BINARY_DIR}/tgemmConfig.cmake"
  INSTALL_DESTINATION ${TGEMM_INSTALL_CMAKEDIR})
# 0.x: a minor release may change the API, so only the same major.minor is compatible.
write_basic_package_version_file("${PROJECT_BINARY_DIR}/tgemmConfigVersion.cmake"
  COMPATIBILITY SameMinorVersion)
install(FILES "${PROJECT_BINARY_DIR}/tgemmConfig.cmake" "${PROJECT_BINARY_DIR}/tgemmConfigVersion.cmake"
  DESTINATION ${TGEMM_INSTALL_CMAKEDIR})
