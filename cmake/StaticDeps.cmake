# STAGELOAD_STATIC_DEPS: libuv, cJSON and sqlite linked statically, so a
# root program (stageloadd) loads no library that its installer's user
# could replace: a Homebrew keg is the Homebrew user's (docs/macos.md,
# "Libraries a root program loads"). Defines the targets sl_uv, sl_cjson
# and sl_sqlite3, which the rest of the build links instead of the
# pkg-config ones.
#
# Each comes from its static library where one is installed (Homebrew's
# kegs; Debian's libuv_a.a and libsqlite3.a). Debian 12 ships no static
# cJSON: then it is built here from cJSON.c of the Debian source package,
# which scripts/deps.sh fetches (apt-get source cjson) into
# STAGELOAD_DEPS_SRC, a cache outside the clone shared with the macOS
# cross build (tests/cross-macos.sh); nothing is copied into the tree.

if(DEFINED ENV{STAGELOAD_CROSS_CACHE})
  set(SL_DEPS_SRC_DEFAULT "$ENV{STAGELOAD_CROSS_CACHE}/src")
else()
  set(SL_DEPS_SRC_DEFAULT "/var/cache/stageload-cross/src")
endif()
set(STAGELOAD_DEPS_SRC "${SL_DEPS_SRC_DEFAULT}" CACHE PATH
  "Unpacked source packages of the dependencies (scripts/deps.sh --static-src)")

# sl_static_dep(TARGET PREFIX NAME FILE...): TARGET links the first FILE
# found in pkg-config's library directories of PREFIX, with the libraries
# it needs itself (pkg-config --static, less NAME); FALSE in
# SL_<TARGET>_FOUND when there is none.
function(sl_static_dep target prefix name)
  find_library(SL_${target}_A NAMES ${ARGN}
    HINTS ${${prefix}_LIBRARY_DIRS} ${${prefix}_STATIC_LIBRARY_DIRS}
    NO_CACHE)
  if(NOT SL_${target}_A)
    set(SL_${target}_FOUND FALSE PARENT_SCOPE)
    return()
  endif()
  set(needs ${${prefix}_STATIC_LIBRARIES})
  list(REMOVE_ITEM needs ${name})
  add_library(${target} INTERFACE)
  target_include_directories(${target} INTERFACE ${${prefix}_INCLUDE_DIRS})
  target_link_directories(${target} INTERFACE ${${prefix}_STATIC_LIBRARY_DIRS})
  target_link_libraries(${target} INTERFACE ${SL_${target}_A} ${needs})
  message(STATUS "stageload: ${name} linked statically: ${SL_${target}_A}")
  set(SL_${target}_FOUND TRUE PARENT_SCOPE)
endfunction()

sl_static_dep(sl_uv LIBUV uv libuv.a libuv_a.a)
sl_static_dep(sl_sqlite3 SQLITE3 sqlite3 libsqlite3.a)
sl_static_dep(sl_cjson CJSON cjson libcjson.a)

if(NOT SL_sl_cjson_FOUND)
  # The newest unpacked cjson source package in the cache.
  file(GLOB sl_cjson_dirs LIST_DIRECTORIES true "${STAGELOAD_DEPS_SRC}/cjson-[0-9]*")
  list(SORT sl_cjson_dirs)
  list(REVERSE sl_cjson_dirs)
  set(sl_cjson_src "")
  foreach(dir ${sl_cjson_dirs})
    if(EXISTS "${dir}/cJSON.c" AND EXISTS "${dir}/cJSON.h")
      set(sl_cjson_src "${dir}")
      break()
    endif()
  endforeach()
  if(sl_cjson_src STREQUAL "")
    message(FATAL_ERROR "STAGELOAD_STATIC_DEPS: there is no static cJSON "
      "library (libcjson.a), and no cJSON source in ${STAGELOAD_DEPS_SRC}: "
      "run scripts/deps.sh --static-src (apt-get source cjson into that "
      "cache), set STAGELOAD_DEPS_SRC to where it is unpacked, or "
      "configure with -DSTAGELOAD_STATIC_DEPS=OFF")
  endif()
  # <cjson/cJSON.h>, as the installed header is included.
  set(sl_cjson_inc "${CMAKE_BINARY_DIR}/static-deps/include")
  file(MAKE_DIRECTORY "${sl_cjson_inc}/cjson")
  configure_file("${sl_cjson_src}/cJSON.h" "${sl_cjson_inc}/cjson/cJSON.h" COPYONLY)
  add_library(sl_cjson_built STATIC "${sl_cjson_src}/cJSON.c")
  # Not our code: none of our warnings, nor -Werror; PIC and its symbols
  # hidden, as it goes into libstageload too (not part of its ABI).
  set_target_properties(sl_cjson_built PROPERTIES
    POSITION_INDEPENDENT_CODE ON C_VISIBILITY_PRESET hidden C_STANDARD 90
    COMPILE_OPTIONS "-w")
  target_include_directories(sl_cjson_built PUBLIC "${sl_cjson_inc}")
  target_link_libraries(sl_cjson_built PUBLIC m)
  add_library(sl_cjson INTERFACE)
  target_link_libraries(sl_cjson INTERFACE sl_cjson_built)
  message(STATUS "stageload: cJSON built statically from ${sl_cjson_src}")
endif()

foreach(dep sl_uv sl_sqlite3)
  if(NOT SL_${dep}_FOUND)
    message(FATAL_ERROR "STAGELOAD_STATIC_DEPS: no static library for "
      "${dep} (${dep}.a) where pkg-config finds it: install the package "
      "with its static library (Debian: libuv1-dev, libsqlite3-dev; "
      "Homebrew: libuv, sqlite), or configure with -DSTAGELOAD_STATIC_DEPS=OFF")
  endif()
endforeach()
