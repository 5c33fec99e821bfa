# erl_interface's ei (Debian's erlang-dev) as the imported target herd::ei.
# herd::dist links it; so that the installed package names no path of the
# machine it was built on, this file is installed with it and run again by
# herdConfig.cmake, finding ei where the consuming project is configured.
# Looks in /usr/lib/erlang/lib/erl_interface-<version>/{include,lib} (and
# /usr/local), or under HERD_EI_ROOT when set. Sets HERD_EI_INCLUDE and
# HERD_EI_LIB (cache) too.
if(NOT TARGET herd::ei)
  file(GLOB _herd_ei_dirs /usr/lib/erlang/lib/erl_interface-* /usr/local/lib/erlang/lib/erl_interface-*)
  find_path(HERD_EI_INCLUDE ei.h PATHS ${HERD_EI_ROOT} ${_herd_ei_dirs} /usr/lib/erlang/usr
            PATH_SUFFIXES include NO_DEFAULT_PATH)
  find_library(HERD_EI_LIB NAMES ei PATHS ${HERD_EI_ROOT} ${_herd_ei_dirs} /usr/lib/erlang/usr
               PATH_SUFFIXES lib NO_DEFAULT_PATH)
  unset(_herd_ei_dirs)
  if(HERD_EI_INCLUDE AND HERD_EI_LIB)
    if(NOT TARGET Threads::Threads)
      find_package(Threads REQUIRED)
    endif()
    # GLOBAL: targets of other directories (tests, tools) link it too.
    add_library(herd::ei UNKNOWN IMPORTED GLOBAL)
    set_target_properties(herd::ei PROPERTIES
      IMPORTED_LOCATION "${HERD_EI_LIB}"
      INTERFACE_INCLUDE_DIRECTORIES "${HERD_EI_INCLUDE}"
      INTERFACE_LINK_LIBRARIES Threads::Threads)
  endif()
endif()
