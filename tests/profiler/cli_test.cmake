# Runs tandem-trace on a trace written by profiler_tests' sibling program and checks its output.
# The trace is made here from a tiny hand-written file so this test depends on nothing else.
set(trace ${WORK_DIR}/cli_trace.json)
file(WRITE ${trace} [=[
{"traceEvents": [
 {"ph": "X", "name": "kernel", "cat": "compute", "pid": 1, "tid": 1, "ts": 0, "dur": 10,
  "args": {"id": 1, "device": "cpu(0)", "queue": "compute", "lane": "cpu worker 0",
           "push_ns": 0, "ready_ns": 0, "start_ns": 0, "end_ns": 10000}},
 {"ph": "X", "name": "upload", "cat": "copy_h2d", "pid": 1, "tid": 2, "ts": 0, "dur": 10,
  "args": {"id": 2, "device": "cpu(0)", "queue": "copy_h2d", "lane": "cpu priority 0",
           "push_ns": 0, "ready_ns": 0, "start_ns": 0, "end_ns": 10000}}
]}
]=])
execute_process(COMMAND ${TRACE_TOOL} summary ${trace} OUTPUT_VARIABLE out RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "tandem-trace summary failed (${rc}): ${out}")
endif()
foreach(expected "2 ops" "kernel" "upload" "cpu(0)" "1.000" "kern/op" "alloc/op")
  string(FIND "${out}" "${expected}" at)
  if(at EQUAL -1)
    message(FATAL_ERROR "tandem-trace summary output lacks '${expected}':\n${out}")
  endif()
endforeach()
execute_process(COMMAND ${TRACE_TOOL} timeline ${trace} ${WORK_DIR}/cli_timeline.svg
                RESULT_VARIABLE rc)
file(READ ${WORK_DIR}/cli_timeline.svg svg)
string(FIND "${svg}" "</svg>" at)
if(NOT rc EQUAL 0 OR at EQUAL -1)
  message(FATAL_ERROR "tandem-trace timeline did not write an SVG")
endif()
execute_process(COMMAND ${TRACE_TOOL} summary ${WORK_DIR}/missing.json RESULT_VARIABLE rc
                ERROR_VARIABLE err)
if(rc EQUAL 0 OR NOT err MATCHES "cannot open")
  message(FATAL_ERROR "tandem-trace should fail clearly on a missing file: ${err}")
endif()
