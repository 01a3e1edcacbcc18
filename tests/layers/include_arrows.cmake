# No include arrow runs upward between the folders of a layer's private sources.
#
# Run as `cmake -DSOURCE_DIR=<repository root> -P include_arrows.cmake` (ctest: layers_include_arrows).
# The layers themselves are kept apart by the build (frontend -> ops -> engine: each target sees
# only the include directories of the targets below it). Inside a layer the folders are one
# include directory, so this script keeps their order instead.
#
# Each tree lists its folders bottom to top. A file may include a file of its own folder or of a
# folder listed before it. Every file of the tree must sit in a listed folder ("." stands for the
# tree's root), so a new folder is placed in the order when it is made. An include is resolved as
# the compiler does for "...": beside the including file first, then from the tree's root (the
# layer's private include directory). Public headers count as the folder that implements them
# where PUBLIC lists them (the rest of tandem/nd/ is the array core and its ops).
#
# ALLOWED lists the upward arrows that exist today, each with its reason. Any other upward arrow
# fails, and so does an entry that no longer matches an include: the list only shrinks.

cmake_minimum_required(VERSION 3.25)

set(TREES "frontend/src")
# Bottom to top: the array core (storage, views, the push path, copies), the op families, the
# autograd tape, graphs (capture, hybridize, export trace, JSON, import), io (array files, IDX,
# data sets, the loader), collectives across devices, and the layers, trainer and pipeline.
set(LEVELS_frontend/src core ops autograd graph io distributed nn)
# src/include/ is not a folder of the layer's code: it holds headers shared with the layer's own
# tests but not installed (the host-allocation counter), spelled like public ones.
set(SKIP_frontend/src include)
set(PUBLIC_frontend/src
    "tandem/nd/autograd.h=autograd"
    "tandem/nd/hybridize.h=graph"
    "tandem/nd/save_load.h=io"
    "tandem/nd/idx.h=io"
    "tandem/data/=io"
    "tandem/nd/multi_device.h=distributed"
    "tandem/dist/=distributed"
    "tandem/nn/=nn")
# engine/src, bottom to top: base (logging, internal assertions, thread-local and lock helpers,
# the device table), the accelerator backends, the profiler, capture, and the dependency engine
# itself at the root, which uses all of them.
list(APPEND TREES engine/src)
set(LEVELS_engine/src base accel profiler capture .)
set(PUBLIC_engine/src "")

# Upward arrows allowed, each with its reason. None in frontend/src: the modes (autograd
# recording, the export trace, the capture window) reach the core and the op files through the
# one mode stack of core/modes.h, so no op asks a mode's own header.
set(ALLOWED
    # engine/src: the profiler's recorder and wait report, and capture, read the engine core's
    # state (var states, EngineCore) that sits at the root beside the engines using them. They
    # go once the core's own files move into a folder below profiler/ and capture/.
    "profiler/profiler_recorder.h -> var_state.h"
    "profiler/wait_report.cc -> engine_core.h"
    "capture/auto_capture_state.h -> engine_core.h"
    "capture/captured_graph.cc -> engine_core.h"
    "capture/graph_recorder.cc -> engine_core.h"
    "capture/graph_replay.cc -> engine_core.h")

if(NOT SOURCE_DIR)
  message(FATAL_ERROR "include_arrows.cmake: pass -DSOURCE_DIR=<repository root>")
endif()

set(failures "")
set(used "")
foreach(tree IN LISTS TREES)
  set(root "${SOURCE_DIR}/${tree}")
  set(levels ${LEVELS_${tree}})
  list(JOIN levels " < " order)
  file(GLOB_RECURSE files RELATIVE "${root}" "${root}/*.h" "${root}/*.cc" "${root}/*.cu"
       "${root}/*.cuh")
  list(SORT files)
  foreach(file IN LISTS files)
    string(REGEX MATCH "^[^/]+/" from_level "${file}")
    if(from_level STREQUAL "")
      set(from_level ".")
    else()
      string(REGEX REPLACE "/$" "" from_level "${from_level}")
    endif()
    set(skip ${SKIP_${tree}})
    if(from_level IN_LIST skip)
      continue()
    endif()
    list(FIND levels "${from_level}" from_index)
    if(from_index EQUAL -1)
      list(APPEND failures "${tree}/${file}: folder '${from_level}' is not in the order of ${tree} (${order})")
      continue()
    endif()
    get_filename_component(dir "${file}" DIRECTORY)
    file(STRINGS "${root}/${file}" lines REGEX "^[ \t]*#[ \t]*include[ \t]*\"")
    foreach(line IN LISTS lines)
      string(REGEX REPLACE "^[ \t]*#[ \t]*include[ \t]*\"([^\"]+)\".*$" "\\1" included "${line}")
      # The included file's folder: beside the file, then from the root, then a public header.
      set(to_level "")
      set(shown "${included}")
      if(dir STREQUAL "")
        set(beside "${included}")
      else()
        set(beside "${dir}/${included}")
      endif()
      cmake_path(NORMAL_PATH beside)
      if(EXISTS "${root}/${beside}" AND NOT beside MATCHES "^\\.\\./")
        set(target "${beside}")
      elseif(EXISTS "${root}/${included}")
        set(target "${included}")
      else()
        set(target "")
        foreach(entry IN LISTS PUBLIC_${tree})
          string(REGEX REPLACE "=.*$" "" prefix "${entry}")
          string(REGEX REPLACE "^.*=" "" level "${entry}")
          string(FIND "${included}" "${prefix}" at)
          if(at EQUAL 0)
            set(to_level "${level}")
          endif()
        endforeach()
      endif()
      if(NOT target STREQUAL "")
        set(shown "${target}")
        string(REGEX MATCH "^[^/]+/" to_level "${target}")
        if(to_level STREQUAL "")
          set(to_level ".")
        else()
          string(REGEX REPLACE "/$" "" to_level "${to_level}")
        endif()
      endif()
      if(to_level STREQUAL "")
        continue()  # a system header, or a public header of the core or of a layer below
      endif()
      list(FIND levels "${to_level}" to_index)
      if(to_index GREATER from_index)
        set(arrow "${file} -> ${shown}")
        list(FIND ALLOWED "${arrow}" allowed_at)
        if(allowed_at EQUAL -1)
          list(APPEND failures "${tree}/${arrow}: '${from_level}' may not include '${to_level}' (bottom to top: ${order})")
        else()
          list(APPEND used "${arrow}")
        endif()
      endif()
    endforeach()
  endforeach()
endforeach()

foreach(arrow IN LISTS ALLOWED)
  list(FIND used "${arrow}" at)
  if(at EQUAL -1)
    list(APPEND failures "ALLOWED lists '${arrow}', which no longer exists: remove it from tests/layers/include_arrows.cmake")
  endif()
endforeach()

list(LENGTH ALLOWED allowed_count)
if(failures)
  list(JOIN failures "\n  " text)
  message(FATAL_ERROR "upward include arrows between folders:\n  ${text}")
endif()
message(STATUS "no upward include arrow between folders (${allowed_count} allowed)")
