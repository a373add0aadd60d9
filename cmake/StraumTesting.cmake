# Test registration helpers shared by every layer, so each layer's tests get
# the same runner (Criterion), timeouts and fuzzing policy.
#
#   straum_add_test(NAME <name> SOURCES <files...> [LIBS <targets...>]
#                   [LABELS <labels...>] [TIMEOUT <seconds>])
#   straum_add_fuzz(NAME <name> SOURCES <files...> [LIBS <targets...>]
#                   CORPUS <dir> [RUNS <n>])
include_guard(GLOBAL)

set(STRAUM_TEST_DEFAULT_TIMEOUT 300)
set(STRAUM_FUZZ_DEFAULT_RUNS 200000)
set(STRAUM_FUZZ_MAX_TOTAL_TIME 120)
set(_STRAUM_RUN_FUZZ_SCRIPT ${CMAKE_CURRENT_LIST_DIR}/RunFuzz.cmake)
set(_STRAUM_CRITERION_LSAN ${PROJECT_SOURCE_DIR}/tests/support/criterion_lsan.c)

# A Criterion executable run by ctest. Criterion picks its own worker count;
# the ctest TIMEOUT only guards against hangs (e.g. a PostgreSQL that never
# answers). A no-op when BUILD_TESTING is off, so libraries under tests/
# (straum_pgtmp) still build for benchmarks without Criterion installed.
function(straum_add_test)
  cmake_parse_arguments(PARSE_ARGV 0 T "" "NAME;TIMEOUT" "SOURCES;LIBS;LABELS")
  if(NOT T_NAME OR NOT T_SOURCES)
    message(FATAL_ERROR "straum_add_test needs NAME and SOURCES")
  endif()
  if(T_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "straum_add_test(${T_NAME}): unknown arguments ${T_UNPARSED_ARGUMENTS}")
  endif()
  if(NOT BUILD_TESTING)
    return()
  endif()
  if(NOT T_TIMEOUT)
    set(T_TIMEOUT ${STRAUM_TEST_DEFAULT_TIMEOUT})
  endif()
  add_executable(${T_NAME} ${T_SOURCES} ${_STRAUM_CRITERION_LSAN})
  target_link_libraries(${T_NAME} PRIVATE ${T_LIBS} PkgConfig::CRITERION)
  add_test(NAME ${T_NAME} COMMAND ${T_NAME})
  set_tests_properties(${T_NAME} PROPERTIES TIMEOUT ${T_TIMEOUT})
  if(T_LABELS)
    set_tests_properties(${T_NAME} PROPERTIES LABELS "${T_LABELS}")
  endif()
endfunction()

# A libFuzzer target run by ctest for a bounded number of inputs. New inputs
# go to a scratch corpus under the build dir (libFuzzer writes into the FIRST
# corpus dir), so the checked-in corpus is only read. Crashing inputs land in
# <build>/fuzz/<name>/artifacts/. A no-op unless STRAUM_FUZZ is on.
function(straum_add_fuzz)
  cmake_parse_arguments(PARSE_ARGV 0 F "" "NAME;CORPUS;RUNS" "SOURCES;LIBS")
  if(NOT F_NAME OR NOT F_SOURCES OR NOT F_CORPUS)
    message(FATAL_ERROR "straum_add_fuzz needs NAME, SOURCES and CORPUS")
  endif()
  if(F_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "straum_add_fuzz(${F_NAME}): unknown arguments ${F_UNPARSED_ARGUMENTS}")
  endif()
  if(NOT STRAUM_FUZZ OR NOT BUILD_TESTING)
    return()
  endif()
  if(NOT F_RUNS)
    set(F_RUNS ${STRAUM_FUZZ_DEFAULT_RUNS})
  endif()
  cmake_path(ABSOLUTE_PATH F_CORPUS BASE_DIRECTORY ${CMAKE_CURRENT_SOURCE_DIR}
             NORMALIZE OUTPUT_VARIABLE corpus)
  if(NOT IS_DIRECTORY ${corpus})
    message(FATAL_ERROR
      "straum_add_fuzz(${F_NAME}): corpus dir ${corpus} does not exist; "
      "create it with at least one seed input")
  endif()

  add_executable(${F_NAME} ${F_SOURCES})
  target_compile_options(${F_NAME} PRIVATE -fsanitize=fuzzer,address,undefined)
  target_link_options(${F_NAME} PRIVATE -fsanitize=fuzzer,address,undefined)
  target_link_libraries(${F_NAME} PRIVATE ${F_LIBS})

  add_test(NAME ${F_NAME}
    COMMAND ${CMAKE_COMMAND}
      -DEXE=$<TARGET_FILE:${F_NAME}>
      -DCORPUS=${corpus}
      -DWORK=${PROJECT_BINARY_DIR}/fuzz/${F_NAME}
      -DRUNS=${F_RUNS}
      -DMAX_TOTAL_TIME=${STRAUM_FUZZ_MAX_TOTAL_TIME}
      -P ${_STRAUM_RUN_FUZZ_SCRIPT})
  set_tests_properties(${F_NAME} PROPERTIES
    LABELS fuzz TIMEOUT ${STRAUM_TEST_DEFAULT_TIMEOUT})
endfunction()
