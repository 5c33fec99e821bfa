# install/export so another CMake project can find_package(herd) and link
# herd::runtime / herd::actors / herd::supervisors / herd::net (which carry
# -fstack-clash-protection) and herd::observer (a server's --observer and
# --metrics), and run bin/herd-observer against it.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)
install(TARGETS herd_runtime herd_actors herd_supervisors herd_net herd_tables herd_http herd_ws herd_module_api herd_observer
  EXPORT herdTargets
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(TARGETS herd-observer RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(DIRECTORY runtime/include/herd actors/include/herd supervisors/include/herd net/include/herd
  tables/include/herd http/include/herd websocket/include/herd
  tools/observer/include/herd DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
# The module ABI header is generated (cmake/herd_module.cmake); herd_add_module for users.
install(FILES ${PROJECT_BINARY_DIR}/actors/generated/herd/actors/module_abi_config.hpp
  DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/herd/actors)
install(FILES cmake/herd_module.cmake DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/herd)
# herd::dist (an Erlang cluster member) only where it was built: it needs
# erl_interface (erlang-dev). Its usage requirements name the imported
# targets herd::ei and ZLIB::ZLIB, which herdConfig.cmake makes where the
# package is used (herd_find_ei.cmake, find_dependency(ZLIB)): no path of
# this machine goes into the package.
if(TARGET herd_dist)
  set(HERD_PACKAGE_HAS_DIST ON)
  install(TARGETS herd_dist EXPORT herdTargets
    ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
    INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
  install(DIRECTORY dist/include/herd DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
  install(FILES cmake/herd_find_ei.cmake DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/herd)
else()
  set(HERD_PACKAGE_HAS_DIST OFF)
endif()
install(EXPORT herdTargets NAMESPACE herd:: DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/herd)
configure_package_config_file(cmake/herdConfig.cmake.in
  ${CMAKE_CURRENT_BINARY_DIR}/herdConfig.cmake
  INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/herd)
write_basic_package_version_file(${CMAKE_CURRENT_BINARY_DIR}/herdConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/herdConfig.cmake ${CMAKE_CURRENT_BINARY_DIR}/herdConfigVersion.cmake
  DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/herd)
