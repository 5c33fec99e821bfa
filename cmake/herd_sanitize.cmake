# HERD_SANITIZE=address,undefined  -> ASan + UBSan over everything
# HERD_SANITIZE=thread             -> TSan (runtime and actor tests at small scale)
# The choice is recorded in HERD_SANITIZE_MODE so code (plain malloc instead of
# mimalloc, bigger stacks and guards, mutex-guarded injection queue) can follow it.
set(HERD_SANITIZE_FLAGS "")
if(HERD_SANITIZE STREQUAL "")
  set(HERD_SANITIZE_MODE none)
elseif(HERD_SANITIZE MATCHES "^(address,undefined|undefined,address|address)$")
  set(HERD_SANITIZE_MODE address)
  set(HERD_SANITIZE_FLAGS -fsanitize=address,undefined -fno-omit-frame-pointer
      -fno-sanitize-recover=undefined)
elseif(HERD_SANITIZE STREQUAL "thread")
  set(HERD_SANITIZE_MODE thread)
  set(HERD_SANITIZE_FLAGS -fsanitize=thread -fno-omit-frame-pointer)
else()
  message(FATAL_ERROR "HERD_SANITIZE must be 'address,undefined' or 'thread', not '${HERD_SANITIZE}'")
endif()
if(HERD_SANITIZE_FLAGS)
  add_compile_options(${HERD_SANITIZE_FLAGS})
  add_link_options(${HERD_SANITIZE_FLAGS})
  if(CMAKE_BUILD_TYPE STREQUAL "Release")
    # Keep sanitizer builds debuggable but fast enough for the full suite.
    add_compile_options(-g)
  endif()
endif()
