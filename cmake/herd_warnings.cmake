# Warnings for herd's own targets only (not passed on to users).
add_library(herd_warnings INTERFACE)
target_compile_options(herd_warnings INTERFACE -Wall -Wextra -Wno-missing-field-initializers)
