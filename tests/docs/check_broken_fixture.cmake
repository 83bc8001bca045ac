# Runs run_doc_commands.py on fixtures/broken.md and checks that it fails, naming every problem
# by file and line. Inputs: CHECKER, PYTHON, FIXTURES, DTSIM.
execute_process(COMMAND ${PYTHON} ${CHECKER} --root ${FIXTURES} --dtsim ${DTSIM} broken.md
                RESULT_VARIABLE status OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT status EQUAL 1)
  message(FATAL_ERROR "expected exit status 1 from the checker, got ${status}\n${out}${err}")
endif()
foreach(want
    "broken.md:5: false\n    exit status 1, the doc expects 0"
    "broken.md:7: true\n    exit status 0, the doc expects 3"
    "broken.md:9: echo printed\n    output lacks the text the doc expects: \"not printed\""
    "broken.md:10: '# doc-test: skip' needs a reason"
    "broken.md:12: unknown doc-test marker 'frobnicate'"
    "broken.md:17: a dtsim command in a block not marked as shell"
    "broken.md:23: a doc-test marker with no command after it"
    "broken.md:34: the quoted output line \"step time 1.465 s\" is not in the output (it prints \"step time 1.727 s\")"
    "doc commands: 6 run, 2 skipped")
  string(FIND "${out}" "${want}" at)
  if(at EQUAL -1)
    message(FATAL_ERROR "the checker's output lacks:\n${want}\n--- output:\n${out}${err}")
  endif()
endforeach()
