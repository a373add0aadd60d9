# ctest driver for one libFuzzer target (see straum_add_fuzz): gives it a
# fresh scratch corpus each run so results do not depend on earlier runs and
# the checked-in corpus (second dir, read-only to libFuzzer) stays untouched.
foreach(var EXE CORPUS WORK RUNS MAX_TOTAL_TIME)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "RunFuzz.cmake: -D${var}=... missing")
  endif()
endforeach()

file(REMOVE_RECURSE ${WORK})
file(MAKE_DIRECTORY ${WORK}/corpus ${WORK}/artifacts)

execute_process(
  COMMAND ${EXE}
    -runs=${RUNS}
    -max_total_time=${MAX_TOTAL_TIME}
    -timeout=10
    -rss_limit_mb=2048
    -print_final_stats=1
    -artifact_prefix=${WORK}/artifacts/
    ${WORK}/corpus
    ${CORPUS}
  RESULT_VARIABLE rc)

if(NOT rc EQUAL 0)
  message(FATAL_ERROR
    "fuzz target ${EXE} failed (${rc}). Crashing input is in ${WORK}/artifacts/; "
    "reproduce with: ${EXE} <that file>")
endif()
