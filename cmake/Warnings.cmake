# Warnings are on everywhere; they become errors only when CI=true in the
# environment or TAU_WERROR=ON, so a user's newer or older compiler still builds.
option(TAU_WERROR "Treat compiler warnings as errors" OFF)
if("$ENV{CI}" STREQUAL "true")
  set(TAU_WERROR ON CACHE BOOL "Treat compiler warnings as errors" FORCE)
endif()

add_library(tau_warnings INTERFACE)
target_compile_options(tau_warnings INTERFACE -Wall -Wextra)
# Aggregates are often initialised partly on purpose ({nominal} for a Quota
# whose limits stay unset); -Wextra's missing-field-initializers objects.
target_compile_options(tau_warnings INTERFACE -Wno-missing-field-initializers)
# GCC 12 reports -Wrestrict for plain `"literal" + std::string` once inlined
# (GCC bug 105651); the warning is noise there.
if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU" AND CMAKE_CXX_COMPILER_VERSION VERSION_LESS 13)
  target_compile_options(tau_warnings INTERFACE -Wno-restrict)
endif()
if(TAU_WERROR)
  target_compile_options(tau_warnings INTERFACE -Werror)
endif()

# lld links noticeably faster than bfd on two cores; use it when present.
include(CheckCXXSourceCompiles)
find_program(TAU_LLD ld.lld)
if(TAU_LLD AND NOT TAU_NO_LLD)
  add_link_options(-fuse-ld=lld)
endif()
