# check_generated.py must fail on a changed figure: takes the NcclAgreement passage of
# docs/validation.md, changes one time in it (5123.6 -> 5123.7 us) and expects exit status 1
# naming that line; the passage as it stands must pass. Inputs: CHECKER, PYTHON, SOURCE (the
# repository), BUILD (the build tree), WORK (a scratch folder of this test's own).
set(begin_marker "<!-- generated: build/tests/sim/sim_test --gtest_filter=NcclAgreement.* -->")
file(READ ${SOURCE}/docs/validation.md text)
string(FIND "${text}" "${begin_marker}" begin)
if(begin EQUAL -1)
  message(FATAL_ERROR "docs/validation.md has no passage '${begin_marker}'")
endif()
string(SUBSTRING "${text}" ${begin} -1 rest)
string(FIND "${rest}" "<!-- end generated -->" length)
string(SUBSTRING "${rest}" 0 ${length} passage)
set(passage "${passage}<!-- end generated -->\n")
string(FIND "${passage}" "| 5275.6 | 5123.6 |" at)
if(at EQUAL -1)
  message(FATAL_ERROR "the passage no longer quotes '| 5275.6 | 5123.6 |': choose another figure")
endif()
file(REMOVE_RECURSE ${WORK})
file(MAKE_DIRECTORY ${WORK})

file(WRITE ${WORK}/as-is.md "${passage}")
execute_process(COMMAND ${PYTHON} ${CHECKER} --root ${WORK} --build ${BUILD} as-is.md
                RESULT_VARIABLE status OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT status EQUAL 0)
  message(FATAL_ERROR "the passage as it stands should pass, got ${status}\n${out}${err}")
endif()

string(REPLACE "| 5275.6 | 5123.6 |" "| 5275.6 | 5123.7 |" changed "${passage}")
file(WRITE ${WORK}/changed.md "${changed}")
execute_process(COMMAND ${PYTHON} ${CHECKER} --root ${WORK} --build ${BUILD} changed.md
                RESULT_VARIABLE status OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT status EQUAL 1)
  message(FATAL_ERROR "expected exit status 1 on the changed figure, got ${status}\n${out}${err}")
endif()
foreach(want "FAIL changed.md:4: not printed by" "5123.7" "1 line(s) differ")
  string(FIND "${out}" "${want}" found)
  if(found EQUAL -1)
    message(FATAL_ERROR "the checker's output lacks '${want}'\n--- output:\n${out}${err}")
  endif()
endforeach()
file(REMOVE_RECURSE ${WORK})
