# Hot-swappable handler modules.
#
#   herd_add_module(<name> <sources>...)   a shared object loadable by herd::modules::load
#   herd_module_host(<target> [LIBS <herd libraries>...])
#                                          an executable that loads modules; LIBS: which of
#                                          herd's libraries modules may call (default: every
#                                          layer: herd_runtime herd_actors herd_supervisors
#                                          herd_net herd_tables herd_http herd_ws, and herd_dist
#                                          where it was built; herd::net is accepted for herd_net)
#
# Installed with herd (find_package(herd) provides both); also used in herd's own build.
#
# herd_add_module compiles with
#   -fno-gnu-unique       (g++) g++ otherwise makes inline variables and function-local statics of
#                         default visibility (std::make_shared's type tag, anything in std::)
#                         STB_GNU_UNIQUE, and the dynamic linker never unloads an object that
#                         defines one. herd's loader refuses such a module.
#   -fvisibility=hidden -fvisibility-inlines-hidden
#                         the module's templates and inline functions (make_message<T>, its
#                         message types' ops tables) are its own copies, so they point at its own
#                         anchor and its own code; only the descriptor is exported.
#   -fstack-clash-protection  a large frame must not jump over an actor's stack guard.
#   -fPIC
# and links with -Wl,-Bsymbolic (the module's own references bind inside it even for symbols
# left at default visibility) and WITHOUT herd's libraries: herd's symbols come from the host
# executable, so there is one runtime, one process table and one set of thread_locals. The
# host must export them: herd_module_host(<target>).
#
# HERD_TEST_KEEP_GNU_UNIQUE (an option, for herd's tests only) leaves -fno-gnu-unique out.

function(herd_add_module name)
  cmake_parse_arguments(M "HERD_TEST_KEEP_GNU_UNIQUE" "" "" ${ARGN})
  add_library(${name} MODULE ${M_UNPARSED_ARGUMENTS})
  set_target_properties(${name} PROPERTIES PREFIX "" POSITION_INDEPENDENT_CODE ON
    CXX_VISIBILITY_PRESET hidden VISIBILITY_INLINES_HIDDEN ON)
  # Usage requirements of herd's headers only (include directories, -fstack-clash-protection,
  # C++20), never its libraries.
  if(TARGET herd_module_api)
    target_link_libraries(${name} PRIVATE herd_module_api)
  else()
    target_link_libraries(${name} PRIVATE herd::module_api)
  endif()
  target_compile_options(${name} PRIVATE -fvisibility=hidden -fvisibility-inlines-hidden
    -fstack-clash-protection -fPIC)
  if(NOT M_HERD_TEST_KEEP_GNU_UNIQUE)
    # g++ only: clang makes no STB_GNU_UNIQUE symbols, and refuses the option.
    target_compile_options(${name} PRIVATE $<$<CXX_COMPILER_ID:GNU>:-fno-gnu-unique>)
  endif()
  target_link_options(${name} PRIVATE -Wl,-Bsymbolic)
endfunction()

# An executable that loads modules: exports its symbols (-rdynamic) so modules resolve herd's
# functions from it, and links herd's archives whole, so that a function a module uses is there
# even if the host itself never calls it (send_after, stop_server, a supervisor, a listener).
# Each archive is one option, -Wl,--whole-archive,FILE,--no-whole-archive: CMake de-duplicates
# repeated options, so separate "LINKER:--whole-archive" FILE "LINKER:--no-whole-archive" items
# whole-archived only the first library. $<LINK_LIBRARY:WHOLE_ARCHIVE,...> is no way out: CMake
# refuses a library named with a feature and also without one (herd::net brings herd::actors
# plainly). The archives come before the host's objects on the link line; their own usage
# requirements (Threads, Boost.Context, dl) come with the herd targets the host links.
function(herd_module_host target)
  cmake_parse_arguments(H "" "" "LIBS" ${ARGN})
  if(NOT H_LIBS)
    set(H_LIBS herd_runtime herd_actors herd_supervisors herd_net herd_tables herd_http herd_ws)
    # herd::dist is optional (it needs erl_interface): in the default set where it exists.
    if(TARGET herd_dist OR TARGET herd::dist)
      list(APPEND H_LIBS herd_dist)
    endif()
  endif()
  set_target_properties(${target} PROPERTIES ENABLE_EXPORTS ON)
  foreach(lib ${H_LIBS})
    string(REPLACE "herd::" "herd_" lib ${lib})
    if(TARGET ${lib})
      set(file $<TARGET_FILE:${lib}>)
      # A link option is no dependency: build the archive first even if the host links
      # only herd::actors.
      add_dependencies(${target} ${lib})
    else()
      string(REPLACE "herd_" "herd::" imported ${lib})
      if(NOT TARGET ${imported})
        message(FATAL_ERROR "herd_module_host(${target}): no herd library ${lib} (nor ${imported})")
      endif()
      set(file $<TARGET_FILE:${imported}>)
      set(lib ${imported})
    endif()
    # And its usage requirements: herd_tables brings Abseil, which the whole
    # archive's objects reference.
    target_link_libraries(${target} PRIVATE ${lib})
    target_link_options(${target} PRIVATE "LINKER:--whole-archive,${file},--no-whole-archive")
    # Relink when the archive changes.
    set_property(TARGET ${target} APPEND PROPERTY LINK_DEPENDS ${file})
  endforeach()
endfunction()

# herd's own build: writes module_abi_config.hpp (herd's version and a hash of every public
# header) into <out_dir>/herd/actors/. The hash is taken at configure time; the headers are
# configure dependencies, so editing one re-runs CMake and changes the hash.
function(herd_generate_module_abi out_dir)
  file(GLOB_RECURSE headers LIST_DIRECTORIES false CONFIGURE_DEPENDS
    ${PROJECT_SOURCE_DIR}/runtime/include/*.hpp
    ${PROJECT_SOURCE_DIR}/actors/include/*.hpp
    ${PROJECT_SOURCE_DIR}/supervisors/include/*.hpp
    ${PROJECT_SOURCE_DIR}/net/include/*.hpp
    ${PROJECT_SOURCE_DIR}/tables/include/*.hpp
    # A WebSocket handler module compiles herd_http's and herd_ws's inline code and layouts.
    ${PROJECT_SOURCE_DIR}/http/include/*.hpp
    ${PROJECT_SOURCE_DIR}/websocket/include/*.hpp
    # herd::term's inline code and layout (a module that sends terms to other nodes).
    ${PROJECT_SOURCE_DIR}/dist/include/*.hpp)
  list(SORT headers)
  set(all "")
  foreach(h ${headers})
    file(SHA256 ${h} one)
    file(RELATIVE_PATH rel ${PROJECT_SOURCE_DIR} ${h})
    string(APPEND all "${rel}=${one}\n")
  endforeach()
  string(SHA256 digest "${all}")
  string(SUBSTRING ${digest} 0 16 HERD_HEADERS_HASH)
  set(HERD_VERSION_STRING ${PROJECT_VERSION})
  set_property(DIRECTORY ${PROJECT_SOURCE_DIR} APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${headers})
  file(CONFIGURE OUTPUT ${out_dir}/herd/actors/module_abi_config.hpp CONTENT
"// Generated by CMake (cmake/herd_module.cmake): do not edit.
// What herd's ABI hash covers besides the compiler (herd/actors/module_abi.hpp).
#pragma once
#define HERD_VERSION_STRING \"@HERD_VERSION_STRING@\"
#define HERD_HEADERS_HASH \"@HERD_HEADERS_HASH@\"
" @ONLY)
endfunction()
